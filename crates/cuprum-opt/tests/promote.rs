//! Promotion of local arrays to variables: which arrays move to registers, which must stay
//! in memory, and that the kernel still does exactly the same on the emulator.

mod common;

use common::{K, has, passes, same_behaviour, same_outcome};
use cuprum_ir::*;

use ScalarType as S;

const T: u32 = 96;

fn array(k: &mut K, elem: ScalarType, len: u32) -> Value {
    let i = k.b.local_array(ArrayDecl {
        name: "a".into(),
        elem,
        len,
    });
    k.op(Op::LocalAddr(i))
}

fn at(k: &mut K, base: Value, offset: u32) -> Value {
    let o = k.u32(offset);
    k.add(base, o)
}

fn local_store(k: &mut K, addr: Value, value: Value) {
    k.b.push(Stmt::Store {
        space: AddressSpace::Local,
        addr,
        value,
    });
}

fn local_load(k: &mut K, ty: ScalarType, addr: Value) -> Value {
    k.op(Op::Load {
        space: AddressSpace::Local,
        ty,
        addr,
        eviction: cuprum_ir::Eviction::Normal,
    })
}

#[test]
fn an_array_accessed_at_constant_positions_becomes_variables() {
    // a = [x[i], 2x[i], 3x[i], 4x[i]]; y[i] = a[3] - a[0] + a[2] * a[1] (as fragments are).
    let mut k = K::new("k");
    let x = k.slice("x", S::F32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::F32, SliceAccess::Disjoint);
    let i = k.global_id();
    let v = k.load(x, S::F32, i);
    let a = array(&mut k, S::F32, 4);
    for e in 0..4u32 {
        let f = k.f32((e + 1) as f32);
        let m = k.mul(v, f);
        let addr = at(&mut k, a, 4 * e);
        local_store(&mut k, addr, m);
    }
    let mut r = Vec::new();
    for e in [3u32, 0, 2, 1] {
        let addr = at(&mut k, a, 4 * e);
        r.push(local_load(&mut k, S::F32, addr));
    }
    let d = k.bin(BinaryOp::Sub, r[0], r[1]);
    let p = k.mul(r[2], r[3]);
    let s = k.add(d, p);
    k.store(y, i, s);
    let kernel = k.finish();
    let opt = same_behaviour(&kernel, &passes(&["promote"]), T, 32, T as u64);
    let text = print_kernel(&opt);
    assert!(!text.contains("Local"), "{text}");
    assert!(!text.contains("local "), "the declaration goes too: {text}");
    assert_eq!(text.matches("var $a_").count(), 4, "{text}");
}

#[test]
fn a_dynamically_indexed_array_stays_in_memory() {
    let mut k = K::new("k");
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let t = k.tid();
    let a = array(&mut k, S::U32, 4);
    for e in 0..4u32 {
        let c = k.u32(e * 10);
        let addr = at(&mut k, a, 4 * e);
        local_store(&mut k, addr, c);
    }
    let three = k.u32(3);
    let j = k.bin(BinaryOp::And, t, three);
    let four = k.u32(4);
    let off = k.mul(j, four);
    let addr = k.add(a, off);
    let v = local_load(&mut k, S::U32, addr);
    k.store(y, i, v);
    let kernel = k.finish();
    let opt = same_behaviour(&kernel, &passes(&["promote"]), T, 32, T as u64);
    assert!(has(&opt, "load.Local"), "{}", print_kernel(&opt));
    assert!(has(&opt, "local a"));
}

#[test]
fn an_access_anywhere_keeps_every_array() {
    // b[v ^ v]: always b[0], but neither the address analysis (linear forms, which see
    // through `v - v`) nor the range analysis sees it, so it could reach `a` too.
    let mut k = K::new("k");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let v = k.load(x, S::U32, i);
    let a = array(&mut k, S::U32, 2);
    let b = array(&mut k, S::U32, 2);
    let a0 = at(&mut k, a, 0);
    local_store(&mut k, a0, v);
    let b0 = at(&mut k, b, 0);
    local_store(&mut k, b0, v);
    let z = k.bin(BinaryOp::Xor, v, v);
    let four = k.u32(4);
    let off = k.mul(z, four);
    let addr = k.add(b, off);
    let r = local_load(&mut k, S::U32, addr);
    let a0 = at(&mut k, a, 0);
    let q = local_load(&mut k, S::U32, a0);
    let s = k.add(r, q);
    k.store(y, i, s);
    let kernel = k.finish();
    let opt = same_behaviour(&kernel, &passes(&["promote"]), T, 32, T as u64);
    assert_eq!(print_kernel(&opt).matches("load.Local").count(), 2);
}

#[test]
fn a_bounded_access_to_one_array_leaves_the_others_free() {
    // a: constant accesses only; b[j] with `j < 4` known from the branch around it.
    let mut k = K::new("k");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let v = k.load(x, S::U32, i);
    let a = array(&mut k, S::U32, 2);
    let b = array(&mut k, S::U32, 4);
    let a1 = at(&mut k, a, 4);
    local_store(&mut k, a1, v);
    for e in 0..4u32 {
        let c = k.u32(e + 100);
        let addr = at(&mut k, b, 4 * e);
        local_store(&mut k, addr, c);
    }
    let seven = k.u32(7);
    let j = k.bin(BinaryOp::Rem, v, seven);
    let four = k.u32(4);
    let inside = k.cmp(CmpOp::Lt, j, four);
    k.if_else(
        inside,
        |k| {
            let four = k.u32(4);
            let off = k.mul(j, four);
            let addr = k.add(b, off);
            let r = local_load(k, S::U32, addr);
            let a1 = at(k, a, 4);
            let q = local_load(k, S::U32, a1);
            let s = k.add(r, q);
            k.store(y, i, s);
        },
        |k| {
            let a1 = at(k, a, 4);
            let q = local_load(k, S::U32, a1);
            k.store(y, i, q);
        },
    );
    let kernel = k.finish();
    let opt = same_behaviour(&kernel, &passes(&["promote"]), T, 32, T as u64);
    let text = print_kernel(&opt);
    assert_eq!(text.matches("load.Local").count(), 1, "{text}");
    assert!(text.contains("var $a_1"), "{text}");
}

#[test]
fn addresses_are_resolved_through_the_layout() {
    // `a` holds 2 u32 (bytes 0..8), `b` starts at byte 16: a store through `a`'s address at
    // offset 16 writes b[0]. Both arrays promote, and the store lands in b[0]'s variable.
    let mut k = K::new("k");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let v = k.load(x, S::U32, i);
    let a = array(&mut k, S::U32, 2);
    let b = array(&mut k, S::U32, 1);
    let through_a = at(&mut k, a, 16);
    local_store(&mut k, through_a, v);
    let b0 = at(&mut k, b, 0);
    let r = local_load(&mut k, S::U32, b0);
    k.store(y, i, r);
    let kernel = k.finish();
    let opt = same_behaviour(&kernel, &passes(&["promote", "dce"]), T, 32, T as u64);
    assert!(!has(&opt, "Local"), "{}", print_kernel(&opt));
}

#[test]
fn partial_or_retyped_accesses_keep_the_array() {
    // A u16 store into the first half of a u32 element, and an f32 load of a u32 element.
    let mut k = K::new("k");
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let f = k.slice("f", S::F32, SliceAccess::Disjoint);
    let i = k.global_id();
    let t = k.tid();
    let a = array(&mut k, S::U32, 2);
    let b = array(&mut k, S::U32, 1);
    for e in 0..2u32 {
        let addr = at(&mut k, a, 4 * e);
        local_store(&mut k, addr, t);
    }
    let b0 = at(&mut k, b, 0);
    local_store(&mut k, b0, t);
    let h = k.c(Constant::new(S::U16, 0xbeef));
    let a0 = at(&mut k, a, 0);
    local_store(&mut k, a0, h);
    let r = local_load(&mut k, S::U32, a0);
    k.store(y, i, r);
    let fb = local_load(&mut k, S::F32, b0);
    k.store(f, i, fb);
    let kernel = k.finish();
    let opt = same_outcome(&kernel, &passes(&["promote"]), T, 32, T as u64);
    assert_eq!(print_kernel(&opt).matches("load.Local").count(), 2);
}

#[test]
fn an_array_read_by_a_vector_load_stays_in_memory() {
    // a = [x, x+1, x+2, x+3] stored element by element, read back as one vector: the four
    // scalar stores must still reach memory; a second array, only scalar, still moves.
    let mut k = K::new("k");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let v = k.load(x, S::U32, i);
    let a = array(&mut k, S::U32, 4);
    let b = array(&mut k, S::U32, 1);
    for e in 0..4u32 {
        let c = k.u32(e);
        let m = k.add(v, c);
        let addr = at(&mut k, a, 4 * e);
        local_store(&mut k, addr, m);
    }
    local_store(&mut k, b, v);
    let d = k.b.vector_load(AddressSpace::Local, S::U32, a, 4).unwrap();
    let s01 = k.mul(d[0], d[1]);
    let s23 = k.bin(BinaryOp::Xor, d[2], d[3]);
    let s = k.add(s01, s23);
    let w = local_load(&mut k, S::U32, b);
    let s = k.add(s, w);
    k.store(y, i, s);
    let kernel = k.finish();
    let opt = same_behaviour(&kernel, &passes(&["promote"]), T, 32, T as u64);
    let text = print_kernel(&opt);
    assert_eq!(text.matches("store.Local").count(), 4, "{text}");
    assert!(text.contains("load.Local.v4.u32"), "{text}");
    assert!(
        text.contains("var $a_"),
        "the scalar-only array moves: {text}"
    );
}
