//! A stand-in for a profiler's NVTX injection library (what `nsys` and `ncu` name in
//! `NVTX_INJECTION64_PATH`), for cuprum's NVTX tests: compiled by `cuprum_testkit::nvtx_probe`
//! as a `cdylib` with plain `rustc`, loaded by the process under test through the variable.
//!
//! It attaches as a tool does (`InitializeInjectionNvtx2`: the callbacks export table, each
//! module's function table, the version table) and writes one line per event to the file
//! named by `NVTX_PROBE_LOG`:
//!
//! * `init <core> <cuda> <opencl> <cudart> <core2> <sync>`: the size each module's table
//!   reported (0 where it was refused);
//! * `push <depth> <color> <payload> <name>` (`nvtxRangePushEx`; `-` for a missing color or
//!   payload), `pusha <depth> <name>` (`nvtxRangePushA`);
//! * `pop <depth>`; `mark <name>`.
//!
//! `<depth>` is the calling thread's stack depth after the event, so nesting can be checked.

use std::cell::Cell;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::fs::OpenOptions;
use std::io::Write;
use std::sync::Mutex;

type GetExportTable = unsafe extern "system" fn(u32) -> *const c_void;

#[repr(C)]
struct Callbacks {
    struct_size: usize,
    get_module_function_table:
        unsafe extern "system" fn(u32, *mut *const *mut c_void, *mut u32) -> c_int,
}

#[repr(C)]
struct VersionInfo {
    struct_size: usize,
    version: u32,
    reserved0: u32,
    set_injection_nvtx_version: unsafe extern "system" fn(u32),
}

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

static LOG: Mutex<()> = Mutex::new(());

thread_local! {
    static DEPTH: Cell<i32> = const { Cell::new(0) };
}

fn log(line: &str) {
    let _guard = LOG.lock().unwrap_or_else(|e| e.into_inner());
    let Some(path) = std::env::var_os("NVTX_PROBE_LOG") else {
        return;
    };
    if let Ok(mut file) = OpenOptions::new().create(true).append(true).open(path) {
        let _ = writeln!(file, "{line}");
    }
}

unsafe fn text(message: *const c_char) -> String {
    if message.is_null() {
        return "<null>".to_owned();
    }
    unsafe { CStr::from_ptr(message) }
        .to_string_lossy()
        .into_owned()
}

fn step(by: i32) -> i32 {
    DEPTH.with(|d| {
        d.set(d.get() + by);
        d.get()
    })
}

unsafe extern "system" fn push_ex(attributes: *const EventAttributes) -> c_int {
    let a = unsafe { &*attributes };
    let ok =
        a.version == 3 && a.size as usize == size_of::<EventAttributes>() && a.message_type == 1;
    let name = if ok {
        unsafe { text(a.message) }
    } else {
        "<bad attributes>".to_owned()
    };
    let color = if a.color_type == 1 {
        format!("{:08x}", a.color)
    } else {
        "-".to_owned()
    };
    let payload = if a.payload_type == 1 {
        a.payload.to_string()
    } else {
        "-".to_owned()
    };
    let depth = step(1);
    log(&format!("push {depth} {color} {payload} {name}"));
    depth - 1
}

unsafe extern "system" fn push_a(message: *const c_char) -> c_int {
    let depth = step(1);
    log(&format!("pusha {depth} {}", unsafe { text(message) }));
    depth - 1
}

unsafe extern "system" fn pop() -> c_int {
    let depth = step(-1);
    log(&format!("pop {depth}"));
    depth
}

unsafe extern "system" fn mark_ex(attributes: *const EventAttributes) {
    let a = unsafe { &*attributes };
    log(&format!("mark {}", unsafe { text(a.message) }));
}

/// The tool's entry point.
///
/// # Safety
/// `get_export_table` is an NVTX client's export-table function.
#[unsafe(no_mangle)]
pub unsafe extern "system" fn InitializeInjectionNvtx2(get_export_table: GetExportTable) -> c_int {
    let callbacks = unsafe { get_export_table(1) }.cast::<Callbacks>();
    if callbacks.is_null() {
        log("init refused: no callbacks table");
        return 0;
    }
    let callbacks = unsafe { &*callbacks };
    if callbacks.struct_size < size_of::<Callbacks>() {
        log("init refused: callbacks table too small");
        return 0;
    }
    let version = unsafe { get_export_table(3) }.cast::<VersionInfo>();
    if !version.is_null() {
        let version = unsafe { &*version };
        if version.struct_size >= size_of::<VersionInfo>() {
            unsafe { (version.set_injection_nvtx_version)(3) };
        }
    }
    let mut sizes = Vec::new();
    let mut core: *const *mut c_void = std::ptr::null();
    for module in 1..=6 {
        let mut table: *const *mut c_void = std::ptr::null();
        let mut size = 0u32;
        let found = unsafe { (callbacks.get_module_function_table)(module, &mut table, &mut size) };
        sizes.push(if found == 0 { 0 } else { size });
        if module == 1 && found != 0 {
            core = table;
        }
    }
    if core.is_null() || sizes[0] < 12 {
        log("init refused: no core table");
        return 0;
    }
    let fill = |slot: usize, function: *mut c_void| {
        let target = unsafe { *core.add(slot) }.cast::<*mut c_void>();
        if !target.is_null() {
            unsafe { target.write(function) };
        }
    };
    // As a tool does: only the functions it implements (here not `nvtxMarkA`).
    fill(1, mark_ex as *mut c_void);
    fill(8, push_ex as *mut c_void);
    fill(9, push_a as *mut c_void);
    fill(11, pop as *mut c_void);
    let sizes: Vec<String> = sizes.iter().map(u32::to_string).collect();
    log(&format!("init {}", sizes.join(" ")));
    1
}
