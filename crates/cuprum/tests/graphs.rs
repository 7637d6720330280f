//! Graphs (`Graph::capture`, `launch`, `update`): kernel launches and device copies recorded
//! once and replayed, on every backend (a CUDA graph on a GPU, the recorded operations in
//! order on the emulator). Each replay's results are compared element by element with a
//! plain-Rust reference on fresh random inputs, outputs poisoned first; the refusals of a
//! recording stream are typed errors; buffers dropped while a graph uses them stay alive.

mod common;

use common::{assert_same, blocks_for, ctx, random_f32};
use cuprum::simt::{DisjointSlice, kernel, launch_bounds, launch_contract, thread};
use cuprum::{
    BackendKind, DeviceBuffer, Error, Graph, LaunchConfig1D, Module, cuda_module, launch,
};

#[cuda_module]
mod kernels {
    use super::*;

    /// `y = a * x`.
    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn scale(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let raw = i.get();
        if let Some(out) = y.get_mut(i) {
            *out = a * x[raw];
        }
    }

    /// `y = a * x + y`.
    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let raw = i.get();
        if let Some(out) = y.get_mut(i) {
            *out = a * x[raw] + *out;
        }
    }
}

const POISON: f32 = f32::from_bits(0x7FC0_0BAD);

fn config(n: usize) -> LaunchConfig1D {
    LaunchConfig1D::new(blocks_for(n, 256), 256, 0)
}

/// What one replay of the three-step graph below computes: `y = a x`, `z += b y`, `w = z`.
fn three_steps(a: f32, b: f32, x: &[f32], z: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let y: Vec<f32> = x.iter().map(|v| a * v).collect();
    let z: Vec<f32> = z.iter().zip(&y).map(|(z, y)| b * y + z).collect();
    (y, z)
}

#[test]
fn recorded_launches_and_copies_replay_in_order() {
    let ctx = ctx();
    let module = kernels::load(ctx).expect("loads");
    let stream = ctx.new_stream().expect("stream");
    for n in [1usize, 1000, (1 << 20) + 3] {
        let (a, b) = (1.5f32, -0.25f32);
        let mut x = DeviceBuffer::from_host(&stream, &random_f32(n)).expect("x");
        let mut y = DeviceBuffer::from_host(&stream, &vec![POISON; n]).expect("y");
        let z0 = random_f32(n);
        let mut z = DeviceBuffer::from_host(&stream, &z0).expect("z");
        let mut w = DeviceBuffer::from_host(&stream, &vec![POISON; n]).expect("w");
        let prepared_scale = module.prepare_scale(config(n)).expect("prepared");
        let prepared_saxpy = module.prepare_saxpy(config(n)).expect("prepared");
        let graph = Graph::capture(ctx, |s| {
            assert!(s.is_recording());
            module.scale(s, &prepared_scale, a, &x, &mut y)?;
            module.saxpy(s, &prepared_saxpy, b, &y, &mut z)?;
            w.copy_from_device(s, &z)
        })
        .expect("captured");
        assert_eq!(graph.len(), 3);
        // Recorded, not run.
        assert_same(
            "w before",
            &w.to_host_vec(&stream).expect("w"),
            &vec![POISON; n],
        );
        assert_same("z before", &z.to_host_vec(&stream).expect("z"), &z0);
        // Each replay reads the input the host put there last; `z` accumulates.
        let mut want_z = z0;
        for replay in 0..3 {
            let input = random_f32(n);
            x.copy_from_host(&stream, &input).expect("new input");
            graph.launch(&stream).expect("replay");
            let (want_y, next_z) = three_steps(a, b, &input, &want_z);
            want_z = next_z;
            let what = format!("replay {replay} of n = {n}");
            assert_same(
                &format!("{what}: y"),
                &y.to_host_vec(&stream).expect("y"),
                &want_y,
            );
            assert_same(
                &format!("{what}: w"),
                &w.to_host_vec(&stream).expect("w"),
                &want_z,
            );
        }
    }
}

#[test]
fn a_graph_keeps_the_buffers_it_uses() {
    let ctx = ctx();
    let module = kernels::load(ctx).expect("loads");
    let stream = ctx.new_stream().expect("stream");
    let n = 4099;
    let input = random_f32(n);
    let x = DeviceBuffer::from_host(&stream, &input).expect("x");
    let mut y = DeviceBuffer::from_host(&stream, &vec![POISON; n]).expect("y");
    let mut out = DeviceBuffer::from_host(&stream, &vec![POISON; n]).expect("out");
    let prepared = module.prepare_scale(config(n)).expect("prepared");
    let graph = Graph::capture(ctx, |s| {
        module.scale(s, &prepared, 2.0, &x, &mut y)?;
        module.scale(s, &prepared, 0.5, &y, &mut out)
    })
    .expect("captured");
    // The input and the intermediate go; the graph still has their memory, and new buffers
    // cannot take it.
    drop(x);
    drop(y);
    let others: Vec<DeviceBuffer<f32>> = (0..4)
        .map(|_| DeviceBuffer::from_host(&stream, &vec![POISON; n]).expect("other"))
        .collect();
    graph.launch(&stream).expect("replay");
    let want: Vec<f32> = input.iter().map(|v| 0.5 * (2.0 * v)).collect();
    assert_same(
        "through dropped buffers",
        &out.to_host_vec(&stream).expect("out"),
        &want,
    );
    for o in &others {
        assert_same(
            "untouched",
            &o.to_host_vec(&stream).expect("o"),
            &vec![POISON; n],
        );
    }
    drop(graph);
    // Still readable after the graph is gone.
    assert_same(
        "after the graph",
        &out.to_host_vec(&stream).expect("out"),
        &want,
    );
}

#[test]
fn update_records_new_arguments() {
    let ctx = ctx();
    let module = kernels::load(ctx).expect("loads");
    let stream = ctx.new_stream().expect("stream");
    let n = 3000;
    let (in1, in2) = (random_f32(n), random_f32(n));
    let x1 = DeviceBuffer::from_host(&stream, &in1).expect("x1");
    let x2 = DeviceBuffer::from_host(&stream, &in2).expect("x2");
    let mut y1 = DeviceBuffer::from_host(&stream, &vec![POISON; n]).expect("y1");
    let mut y2 = DeviceBuffer::from_host(&stream, &vec![POISON; n]).expect("y2");
    let prepared = module.prepare_scale(config(n)).expect("prepared");
    let mut graph =
        Graph::capture(ctx, |s| module.scale(s, &prepared, 3.0, &x1, &mut y1)).expect("captured");
    graph.launch(&stream).expect("first");
    let want1: Vec<f32> = in1.iter().map(|v| 3.0 * v).collect();
    assert_same("first", &y1.to_host_vec(&stream).expect("y1"), &want1);
    // Same kernel, other scalar and buffers: updated in place.
    graph
        .update(|s| module.scale(s, &prepared, -7.0, &x2, &mut y2))
        .expect("updated");
    graph.launch(&stream).expect("second");
    let want2: Vec<f32> = in2.iter().map(|v| -7.0 * v).collect();
    assert_same("second", &y2.to_host_vec(&stream).expect("y2"), &want2);
    assert_same(
        "y1 untouched",
        &y1.to_host_vec(&stream).expect("y1"),
        &want1,
    );
    // Another topology: instantiated anew.
    let mut z = DeviceBuffer::from_host(&stream, &in1).expect("z");
    let saxpy = module.prepare_saxpy(config(n)).expect("prepared");
    graph
        .update(|s| {
            module.saxpy(s, &saxpy, 2.0, &x2, &mut z)?;
            module.scale(s, &prepared, 0.5, &z, &mut y1)
        })
        .expect("updated");
    assert_eq!(graph.len(), 2);
    graph.launch(&stream).expect("third");
    let want3: Vec<f32> = in1
        .iter()
        .zip(&in2)
        .map(|(z, x)| 0.5 * (2.0 * x + z))
        .collect();
    assert_same("third", &y1.to_host_vec(&stream).expect("y1"), &want3);
}

#[test]
fn graph_replays_are_ordered_with_other_streams() {
    let ctx = ctx();
    let module = kernels::load(ctx).expect("loads");
    let (first, second) = (ctx.new_stream().expect("a"), ctx.new_stream().expect("b"));
    let n = (1 << 22) + 1;
    let input = random_f32(n);
    let x = DeviceBuffer::from_host(&first, &input).expect("x");
    let mut y = DeviceBuffer::from_host(&first, &vec![POISON; n]).expect("y");
    let mut z = DeviceBuffer::from_host(&second, &vec![POISON; n]).expect("z");
    let prepared = module.prepare_scale(config(n)).expect("prepared");
    let graph = Graph::capture(ctx, |s| {
        for _ in 0..8 {
            module.scale(s, &prepared, 1.0, &x, &mut y)?;
        }
        module.scale(s, &prepared, 2.0, &x, &mut y)
    })
    .expect("captured");
    graph.launch(&first).expect("replay");
    // Reads what the replay on the other stream writes: waits for it.
    module
        .scale(&second, &prepared, 3.0, &y, &mut z)
        .expect("reader");
    let want: Vec<f32> = input.iter().map(|v| 3.0 * (2.0 * v)).collect();
    assert_same(
        "after the replay",
        &z.to_host_vec(&second).expect("z"),
        &want,
    );
}

#[test]
fn a_recording_stream_refuses_what_a_replay_cannot_repeat() {
    let ctx = ctx();
    let module = kernels::load(ctx).expect("loads");
    let stream = ctx.new_stream().expect("stream");
    let x = DeviceBuffer::from_host(&stream, &[1.0f32; 64]).expect("x");
    let mut y = DeviceBuffer::from_host(&stream, &[POISON; 64]).expect("y");
    let unsupported = |r: Result<(), Error>, what: &str| match r {
        Err(Error::Unsupported { what: message }) => {
            assert!(message.contains("recording"), "{what}: {message}");
        }
        other => panic!("{what} on a recording stream must be refused, got {other:?}"),
    };
    let mut kept = None;
    let graph = Graph::capture(ctx, |s| {
        unsupported(
            DeviceBuffer::from_host(s, &[1.0f32]).map(drop),
            "an allocation",
        );
        unsupported(x.to_host_vec(s).map(drop), "a read to the host");
        unsupported(y.copy_from_host(s, &[0.0; 64]), "a write from the host");
        unsupported(s.synchronize(), "a synchronize");
        unsupported(s.record_event().map(drop), "an event");
        kept = Some(s.clone());
        Ok(())
    })
    .expect("an empty graph");
    assert!(graph.is_empty());
    graph.launch(&stream).expect("an empty replay");
    // A recording stream kept past its capture records nothing more.
    let prepared = module.prepare_scale(config(64)).expect("prepared");
    let late = module.scale(kept.as_ref().expect("kept"), &prepared, 1.0, &x, &mut y);
    assert!(
        matches!(&late, Err(Error::Unsupported { what }) if what.contains("capture has ended")),
        "{late:?}"
    );
    // An invalid launch fails the capture as it would fail the launch.
    let bad = Graph::capture(ctx, |s| {
        let wrong = module.prepare_scale(LaunchConfig1D::new(1, 512, 0))?;
        module.scale(s, &wrong, 1.0, &x, &mut y)
    });
    assert!(
        bad.is_err(),
        "a block the contract does not declare must be refused"
    );
    // Nothing ran: y is as it was.
    assert_same("y", &y.to_host_vec(&stream).expect("y"), &[POISON; 64]);
    // A graph of another context is refused on this one's streams.
    let other = cuprum::CudaContext::emulator();
    if ctx.backend() == BackendKind::Emulator {
        let foreign = Graph::capture(&other, |_| Ok(())).expect("other graph");
        assert!(matches!(
            foreign.launch(&stream),
            Err(Error::ContextMismatch)
        ));
    }
}

/// A kernel cuprum did not compile (nvcc's PTX), launched raw inside a graph: GPU only.
#[test]
fn raw_launches_of_foreign_kernels_are_recorded() {
    let ctx = ctx();
    if ctx.backend() != BackendKind::Cuda {
        return;
    }
    let module = Module::from_ptx(ctx, include_str!("data/saxpy_nvcc.ptx")).expect("nvcc's PTX");
    let f = module.get_function("saxpy").expect("saxpy");
    let stream = ctx.new_stream().expect("stream");
    let n = 100_003usize;
    let (x0, y0) = (random_f32(n), random_f32(n));
    let x = DeviceBuffer::from_host(&stream, &x0).expect("x");
    let y = DeviceBuffer::from_host(&stream, &y0).expect("y");
    let blocks = n.div_ceil(256) as u32;
    let graph = Graph::capture(ctx, |s| {
        for _ in 0..2 {
            // SAFETY: saxpy reads x[i] and writes y[i] below n, the length of both.
            unsafe { launch!(f<<<blocks, 256, 0, s>>>(2.0f32, &x, &y, n as i32)) }?;
        }
        Ok(())
    })
    .expect("captured");
    graph.launch(&stream).expect("replay");
    graph.launch(&stream).expect("replay");
    let mut want = y0;
    for _ in 0..4 {
        for (y, x) in want.iter_mut().zip(&x0) {
            *y = 2.0f32.mul_add(*x, *y);
        }
    }
    assert_same("four saxpys", &y.to_host_vec(&stream).expect("y"), &want);
}
