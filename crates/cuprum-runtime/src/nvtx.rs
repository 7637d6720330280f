//! NVTX ranges, so that Nsight Systems timelines and Nsight Compute (`ncu --nvtx`) show
//! cuprum's work, and a program's own phases, by name.
//!
//! The runtime pushes a range around every kernel launch (named by the kernel), every copy
//! between host and device or within a device (`copy HtoD 4 KiB`, `copy DtoH ..`,
//! `copy DtoD ..`, the exact byte count as the range's payload) and every graph launch; the
//! facade's tile launches add one named by the entry and its specialization around their
//! compile and launch. Programs annotate their own host code with [`range`] and [`mark`].
//!
//! This is NVTX's injection protocol written in Rust, not a binding of NVIDIA's C headers:
//! nothing is compiled or linked at build time, and nothing changes when no tool is there.
//! The protocol, as NVTX v3 defines it: on the first call, the variable
//! `NVTX_INJECTION64_PATH` (set by `nsys` and `ncu`) names a shared library; it is loaded and
//! its `InitializeInjectionNvtx2` is called with a function that returns export tables. Through
//! the callbacks table the tool asks, per API module (core, CUDA, OpenCL, CUDA runtime,
//! core 2, sync), for an array of pointers to this client's function-pointer slots, and
//! stores its own functions in the slots it implements. Calls then go through the slots;
//! an empty slot is a no-op. Several clients in one process (the CUDA runtime, libraries,
//! cuprum) each attach on their own, so this needs no other NVTX library (`libnvToolsExt`,
//! which CUDA 13 no longer ships).
//!
//! Without the variable (no tool attached), with `CUPRUM_NVTX=0`, or when the library cannot
//! be loaded or refuses to attach, every call costs one atomic load and does nothing; names
//! are not even formatted. Nothing here fails or panics a launch or a copy.
//!
//! Push/pop ranges belong to the thread that pushed them, so [`Range`] is not `Send`, and a
//! range held across an `.await` may end on another thread's stack: hold them in synchronous
//! code.

use std::ffi::{c_char, c_int, c_void};
use std::fmt::{self, Display, Write as _};
use std::marker::PhantomData;
use std::ptr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, Ordering};

/// The variable in which a profiler names its NVTX injection library (`NVTX_INJECTION32_PATH`
/// in 32-bit processes).
pub const INJECTION_ENV_VAR: &str = if cfg!(target_pointer_width = "32") {
    "NVTX_INJECTION32_PATH"
} else {
    "NVTX_INJECTION64_PATH"
};

/// `CUPRUM_NVTX=0` (or `off`, `false`, `no`) keeps cuprum from attaching to a profiler's NVTX
/// library: no ranges from the runtime or from [`range`] and [`mark`].
pub const NVTX_ENV_VAR: &str = "CUPRUM_NVTX";

/// The NVTX API version this client speaks (what the headers' `NVTX_VERSION` is).
const NVTX_VERSION: u32 = 3;

/// Export table ids (`NvtxExportTableID`).
const ETID_CALLBACKS: u32 = 1;
const ETID_VERSIONINFO: u32 = 3;

/// Per callback module (`NvtxCallbackModule`, 1 to 6: core, CUDA, OpenCL, CUDA runtime,
/// core 2, sync), how many slots its table reports (`NVTX_CBID_<MODULE>_SIZE`; slot 0 is
/// never used).
const MODULE_SLOTS: [usize; 6] = [16, 9, 15, 7, 16, 7];

/// The core module's slots cuprum calls (`NvtxCallbackIdCore`).
const CORE: usize = 0;
const CORE_MARK_EX: usize = 1;
const CORE_MARK_A: usize = 2;
const CORE_RANGE_PUSH_EX: usize = 8;
const CORE_RANGE_PUSH_A: usize = 9;
const CORE_RANGE_POP: usize = 11;

/// Room per module: the largest table, plus a null after its last slot (as the headers keep,
/// so a tool that reads one too far finds null).
const TABLE_LEN: usize = 17;

/// The function-pointer slots a tool fills, per module; null is "not implemented".
static SLOTS: [[AtomicPtr<c_void>; TABLE_LEN]; 6] =
    [const { [const { AtomicPtr::new(ptr::null_mut()) }; TABLE_LEN] }; 6];

/// Per module, the array of pointers to its slots that `GetModuleFunctionTable` hands out
/// (`NvtxFunctionTable`): entry 0 and the entries past the module's size are null.
struct Tables([[*mut c_void; TABLE_LEN]; 6]);

// SAFETY: the tables are immutable after their constant initialization; the pointers they hold
// point at atomics, which any thread may write.
unsafe impl Sync for Tables {}

static TABLES: Tables = {
    let mut tables = [[ptr::null_mut::<c_void>(); TABLE_LEN]; 6];
    let mut module = 0;
    while module < 6 {
        let mut slot = 1;
        while slot < MODULE_SLOTS[module] {
            tables[module][slot] = SLOTS[module][slot].as_ptr().cast::<c_void>();
            slot += 1;
        }
        module += 1;
    }
    Tables(tables)
};

/// `NvtxExportTableCallbacks`.
#[repr(C)]
struct CallbacksTable {
    struct_size: usize,
    get_module_function_table:
        unsafe extern "system" fn(u32, *mut *const *mut c_void, *mut u32) -> c_int,
}

/// `NvtxExportTableVersionInfo`.
#[repr(C)]
struct VersionTable {
    struct_size: usize,
    version: u32,
    reserved0: u32,
    set_injection_nvtx_version: unsafe extern "system" fn(u32),
}

static CALLBACKS: CallbacksTable = CallbacksTable {
    struct_size: size_of::<CallbacksTable>(),
    get_module_function_table,
};

static VERSION_INFO: VersionTable = VersionTable {
    struct_size: size_of::<VersionTable>(),
    version: NVTX_VERSION,
    reserved0: 0,
    set_injection_nvtx_version,
};

/// What a tool calls to find this client's export tables (`NvtxGetExportTableFunc_t`).
unsafe extern "system" fn get_export_table(id: u32) -> *const c_void {
    match id {
        ETID_CALLBACKS => ptr::from_ref(&CALLBACKS).cast(),
        ETID_VERSIONINFO => ptr::from_ref(&VERSION_INFO).cast(),
        _ => ptr::null(),
    }
}

/// The callbacks table's one function: module `module`'s slot pointers and how many there are
/// (the module's size; 0 for a module this client does not know).
///
/// # Safety
/// Each out-pointer is null or writable.
unsafe extern "system" fn get_module_function_table(
    module: u32,
    out_table: *mut *const *mut c_void,
    out_size: *mut u32,
) -> c_int {
    let Some(index) = (module as usize)
        .checked_sub(1)
        .filter(|&i| i < MODULE_SLOTS.len())
    else {
        return 0;
    };
    if !out_size.is_null() {
        // SAFETY: the caller's contract.
        unsafe { out_size.write(MODULE_SLOTS[index] as u32) };
    }
    if !out_table.is_null() {
        // SAFETY: the caller's contract.
        unsafe { out_table.write(TABLES.0[index].as_ptr()) };
    }
    1
}

/// Where a tool reports its own version; NVTX reserves it and ignores it, and so does cuprum.
unsafe extern "system" fn set_injection_nvtx_version(_version: u32) {}

/// `nvtxEventAttributes_t` (version 3, 48 bytes on 64-bit targets).
#[repr(C)]
struct EventAttributes {
    version: u16,
    size: u16,
    category: u32,
    color_type: i32,
    color: u32,
    payload_type: i32,
    reserved0: i32,
    payload: u64,
    message_type: i32,
    message: *const c_char,
}

const COLOR_ARGB: i32 = 1;
const PAYLOAD_UNSIGNED_INT64: i32 = 1;
const MESSAGE_ASCII: i32 = 1;

type InitFn = unsafe extern "system" fn(unsafe extern "system" fn(u32) -> *const c_void) -> c_int;
type PushExFn = unsafe extern "system" fn(*const EventAttributes) -> c_int;
type PushAFn = unsafe extern "system" fn(*const c_char) -> c_int;
type PopFn = unsafe extern "system" fn() -> c_int;
type MarkExFn = unsafe extern "system" fn(*const EventAttributes);
type MarkAFn = unsafe extern "system" fn(*const c_char);

/// An attached tool: the core functions it implements.
struct Tool {
    push_ex: Option<PushExFn>,
    push_a: Option<PushAFn>,
    pop: Option<PopFn>,
    mark_ex: Option<MarkExFn>,
    mark_a: Option<MarkAFn>,
    /// Kept loaded for the rest of the process: the slots point into it.
    _library: libloading::Library,
}

/// The tool, once the first call has looked for one.
static TOOL: OnceLock<Option<Tool>> = OnceLock::new();

fn tool() -> Option<&'static Tool> {
    TOOL.get_or_init(attach).as_ref()
}

/// Whether `CUPRUM_NVTX` turns cuprum's NVTX off.
fn disabled_by_env() -> bool {
    std::env::var(NVTX_ENV_VAR).is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "0" | "off" | "false" | "no"
        )
    })
}

/// Loads the library the profiler named and lets it fill the slots; `None` (every call a
/// no-op) when there is none, it cannot be loaded, or it refuses.
fn attach() -> Option<Tool> {
    if disabled_by_env() {
        return None;
    }
    let path = std::env::var_os(INJECTION_ENV_VAR).filter(|p| !p.is_empty())?;
    // SAFETY: loading runs the library's initializers; the profiler put it there to be loaded
    // into this process (every NVTX client does the same).
    let library = unsafe { libloading::Library::new(&path) }.ok()?;
    // SAFETY: `InitializeInjectionNvtx2` has this signature in every NVTX injection library.
    let init: InitFn = *unsafe { library.get::<InitFn>(b"InitializeInjectionNvtx2\0") }.ok()?;
    // SAFETY: the protocol's entry point, given the protocol's export-table function.
    if unsafe { init(get_export_table) } == 0 {
        return None;
    }
    let slot = |index: usize| {
        let p = SLOTS[CORE][index].load(Ordering::Acquire);
        (!p.is_null()).then_some(p)
    };
    // SAFETY (each transmute): the tool stored a function of the slot's NVTX signature there.
    Some(Tool {
        push_ex: slot(CORE_RANGE_PUSH_EX)
            .map(|p| unsafe { std::mem::transmute::<*mut c_void, PushExFn>(p) }),
        push_a: slot(CORE_RANGE_PUSH_A)
            .map(|p| unsafe { std::mem::transmute::<*mut c_void, PushAFn>(p) }),
        pop: slot(CORE_RANGE_POP).map(|p| unsafe { std::mem::transmute::<*mut c_void, PopFn>(p) }),
        mark_ex: slot(CORE_MARK_EX)
            .map(|p| unsafe { std::mem::transmute::<*mut c_void, MarkExFn>(p) }),
        mark_a: slot(CORE_MARK_A)
            .map(|p| unsafe { std::mem::transmute::<*mut c_void, MarkAFn>(p) }),
        _library: library,
    })
}

/// Whether a profiler's NVTX library is attached (the first call looks for it), so that a
/// program can skip work that only feeds its ranges.
pub fn enabled() -> bool {
    tool().is_some()
}

/// What a range or mark is about: its color, and the byte count a copy carries.
#[derive(Clone, Copy)]
enum Kind {
    User,
    Kernel,
    Copy(u64),
    Graph,
}

impl Kind {
    /// ARGB, or none for the program's own ranges (the tool picks).
    fn color(self) -> Option<u32> {
        match self {
            Self::User => None,
            Self::Kernel => Some(0xFF76_B900),
            Self::Copy(_) => Some(0xFF1F_77B4),
            Self::Graph => Some(0xFF94_67BD),
        }
    }
}

/// `name` as a NUL-terminated string (cut at an interior NUL).
fn c_text(name: &dyn Display) -> Vec<u8> {
    let mut text = String::new();
    // Writing to a `String` fails only if `Display` does; the range keeps what was written.
    let _ = write!(text, "{name}");
    let mut bytes = text.into_bytes();
    if let Some(nul) = bytes.iter().position(|&b| b == 0) {
        bytes.truncate(nul);
    }
    bytes.push(0);
    bytes
}

/// The attributes of an event named by `text` (NUL-terminated, alive while they are used).
fn attributes(kind: Kind, text: &[u8]) -> EventAttributes {
    let (color_type, color) = kind.color().map_or((0, 0), |c| (COLOR_ARGB, c));
    let (payload_type, payload) = match kind {
        Kind::Copy(bytes) => (PAYLOAD_UNSIGNED_INT64, bytes),
        _ => (0, 0),
    };
    EventAttributes {
        version: NVTX_VERSION as u16,
        size: size_of::<EventAttributes>() as u16,
        category: 0,
        color_type,
        color,
        payload_type,
        reserved0: 0,
        payload,
        message_type: MESSAGE_ASCII,
        message: text.as_ptr().cast(),
    }
}

/// A push/pop range on this thread, ended when dropped (made by [`range`]).
#[must_use = "the range ends when this guard is dropped"]
pub struct Range {
    /// Whether a push reached a tool, so the drop pops.
    pushed: bool,
    /// Ranges are per thread.
    _thread: PhantomData<*const ()>,
}

impl Range {
    const IDLE: Self = Self {
        pushed: false,
        _thread: PhantomData,
    };
}

impl fmt::Debug for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Range")
            .field("pushed", &self.pushed)
            .finish()
    }
}

impl Drop for Range {
    fn drop(&mut self) {
        if !self.pushed {
            return;
        }
        if let Some(pop) = tool().and_then(|t| t.pop) {
            // SAFETY: the tool's `nvtxRangePop`.
            unsafe { pop() };
        }
    }
}

fn push(kind: Kind, name: &dyn Display) -> Range {
    let Some(tool) = tool() else {
        return Range::IDLE;
    };
    let text = c_text(name);
    let pushed = if let Some(push_ex) = tool.push_ex {
        let attributes = attributes(kind, &text);
        // SAFETY: the tool's `nvtxRangePushEx`, with attributes whose message outlives the call.
        unsafe { push_ex(&attributes) };
        true
    } else if let Some(push_a) = tool.push_a {
        // SAFETY: the tool's `nvtxRangePushA`, with a NUL-terminated message.
        unsafe { push_a(text.as_ptr().cast()) };
        true
    } else {
        false
    };
    Range {
        pushed,
        _thread: PhantomData,
    }
}

/// Starts a range named `name` on this thread, ended when the returned guard drops: in Nsight
/// Systems it is a bar on the thread's NVTX row, and the kernels launched inside it are
/// attributed to it (`ncu --nvtx --nvtx-include "name/"` profiles just those).
///
/// Without a profiler this costs one atomic load; `name` is not formatted, so
/// `range(format_args!("step {i}"))` is free too.
///
/// ```
/// let _step = cuprum_runtime::nvtx::range("prepare inputs");
/// // ... host work, copies and launches, all inside "prepare inputs" ...
/// ```
pub fn range(name: impl Display) -> Range {
    push(Kind::User, &name)
}

/// Marks an instant named `name` on this thread's timeline.
pub fn mark(name: impl Display) {
    let Some(tool) = tool() else {
        return;
    };
    let text = c_text(&name);
    if let Some(mark_ex) = tool.mark_ex {
        let attributes = attributes(Kind::User, &text);
        // SAFETY: the tool's `nvtxMarkEx`, with attributes whose message outlives the call.
        unsafe { mark_ex(&attributes) };
    } else if let Some(mark_a) = tool.mark_a {
        // SAFETY: the tool's `nvtxMarkA`, with a NUL-terminated message.
        unsafe { mark_a(text.as_ptr().cast()) };
    }
}

/// The range of a kernel launch: the kernel's name.
pub(crate) fn kernel(name: &str) -> Range {
    push(Kind::Kernel, &name)
}

/// Which way a copy goes, as CUDA names them.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Direction {
    HostToDevice,
    DeviceToHost,
    DeviceToDevice,
}

/// `4 KiB`, `3 MiB`: a byte count in the largest binary unit that divides it exactly.
struct Bytes(u64);

impl Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
            if n != 0 && n.trailing_zeros() >= shift {
                return write!(f, "{} {unit}", n >> shift);
            }
        }
        write!(f, "{n} B")
    }
}

/// The range of a copy: `copy HtoD 4 KiB`, the exact byte count as its payload.
pub(crate) fn copy(direction: Direction, bytes: usize) -> Range {
    let way = match direction {
        Direction::HostToDevice => "HtoD",
        Direction::DeviceToHost => "DtoH",
        Direction::DeviceToDevice => "DtoD",
    };
    let bytes = bytes as u64;
    push(
        Kind::Copy(bytes),
        &format_args!("copy {way} {}", Bytes(bytes)),
    )
}

/// The range of a graph launch: how many operations it replays.
pub(crate) fn graph(operations: usize) -> Range {
    push(
        Kind::Graph,
        &format_args!("graph of {operations} operations"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_attributes_have_the_c_layout() {
        if cfg!(target_pointer_width = "64") {
            assert_eq!(size_of::<EventAttributes>(), 48);
            assert_eq!(std::mem::offset_of!(EventAttributes, payload), 24);
            assert_eq!(std::mem::offset_of!(EventAttributes, message_type), 32);
            assert_eq!(std::mem::offset_of!(EventAttributes, message), 40);
            assert_eq!(size_of::<VersionTable>(), 24);
            assert_eq!(size_of::<CallbacksTable>(), 16);
        }
    }

    #[test]
    fn export_tables_answer_as_the_headers_do() {
        // SAFETY: the export-table function takes any id.
        let callbacks = unsafe { get_export_table(ETID_CALLBACKS) }.cast::<CallbacksTable>();
        assert!(!callbacks.is_null());
        // SAFETY: non-null, a `CallbacksTable`.
        let callbacks = unsafe { &*callbacks };
        assert_eq!(callbacks.struct_size, size_of::<CallbacksTable>());
        // SAFETY: as above.
        let version = unsafe { &*get_export_table(ETID_VERSIONINFO).cast::<VersionTable>() };
        assert_eq!(version.version, 3);
        // SAFETY: as above.
        assert!(unsafe { get_export_table(2) }.is_null());
        assert!(unsafe { get_export_table(0) }.is_null());
        for (module, &size) in (1..).zip(&MODULE_SLOTS) {
            let mut table = ptr::null();
            let mut len = 0;
            // SAFETY: both out-pointers are writable.
            let found =
                unsafe { (callbacks.get_module_function_table)(module, &mut table, &mut len) };
            assert_eq!((found, len as usize), (1, size), "module {module}");
            // SAFETY: the table has `TABLE_LEN` entries.
            let entries = unsafe { std::slice::from_raw_parts(table, TABLE_LEN) };
            assert!(entries[0].is_null() && entries[size..].iter().all(|p| p.is_null()));
            assert!(
                entries[1..size].iter().all(|p| !p.is_null()),
                "module {module}"
            );
        }
        for unknown in [0, 7, u32::MAX] {
            // SAFETY: null out-pointers are allowed.
            let found = unsafe {
                (callbacks.get_module_function_table)(unknown, ptr::null_mut(), ptr::null_mut())
            };
            assert_eq!(found, 0);
        }
    }

    #[test]
    fn byte_counts_read_in_exact_units() {
        let text = |n| Bytes(n).to_string();
        assert_eq!(text(0), "0 B");
        assert_eq!(text(1000), "1000 B");
        assert_eq!(text(4096), "4 KiB");
        assert_eq!(text(4100), "4100 B");
        assert_eq!(text(3 << 20), "3 MiB");
        assert_eq!(text(1536 << 10), "1536 KiB");
        assert_eq!(text(2 << 30), "2 GiB");
    }

    #[test]
    fn names_are_cut_at_an_interior_nul() {
        assert_eq!(c_text(&"add\0more"), b"add\0");
        assert_eq!(c_text(&format_args!("k{}", 2)), b"k2\0");
    }
}
