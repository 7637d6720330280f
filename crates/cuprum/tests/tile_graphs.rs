//! cuTile Rust's CUDA graphs on tile kernels (`CudaGraph::scope`, `capture`/`graph_on`,
//! `update`, `launch`, `api::memcpy`), in the shape of its `cuda_graphs` example at small
//! sizes, on every backend: each replay compared element by element with a plain-Rust
//! reference on fresh random inputs, outputs poisoned first; what a graph cannot record is
//! an error; tensors dropped while a graph uses them stay alive.

use cuprum::tile::cuda_async::cuda_graph::CudaGraph;
use cuprum::tile::cuda_core::Device;
use cuprum::tile::prelude::*;
use cuprum_testkit::compare::{assert_same, ok};
use cuprum_testkit::random::{random, rng};

#[cuprum::tile::module]
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn add<const B: i32>(
        out: &mut Tensor<f32, { [B] }>,
        a: &Tensor<f32, { [-1] }>,
        b: &Tensor<f32, { [-1] }>,
    ) {
        let ta: Tile<f32, { [B] }> = load_tile_like(a, out);
        let tb: Tile<f32, { [B] }> = load_tile_like(b, out);
        out.store(ta + tb);
    }

    #[cuprum::tile::entry()]
    fn scale<const B: i32>(out: &mut Tensor<f32, { [B] }>, k: f32, x: &Tensor<f32, { [-1] }>) {
        out.store(load_tile_like(x, out) * k);
    }
}

const POISON: f32 = f32::from_bits(0x7FC0_0BAD);

/// Layers of `residual = input + 0.5 * input; input = residual`, as the graph records them.
fn layers(input: &[f32], n_layers: usize) -> Vec<f32> {
    let mut h = input.to_vec();
    for _ in 0..n_layers {
        h = h.iter().map(|v| v + 0.5 * v).collect();
    }
    h
}

#[test]
fn a_scoped_graph_replays_its_layers_on_new_inputs() {
    let device = ok(Device::new(0));
    let stream = ok(device.new_stream());
    let (d, n_layers, block) = (1000usize, 3usize, 128usize);
    let mut input: Tensor<f32> = ok(api::full(POISON, &[d]).sync_on(&stream));
    let mut halves: Vec<Tensor<f32>> = (0..n_layers)
        .map(|_| ok(api::full(POISON, &[d]).sync_on(&stream)))
        .collect();
    let mut residuals: Vec<Tensor<f32>> = (0..n_layers)
        .map(|_| ok(api::full(POISON, &[d]).sync_on(&stream)))
        .collect();
    let graph = ok(CudaGraph::scope(&stream, |s| {
        for (half, residual) in halves.iter_mut().zip(residuals.iter_mut()) {
            s.record(kernels::scale(half.partition([block]), 0.5, &input))?;
            s.record(kernels::add(residual.partition([block]), &input, &*half))?;
            s.record(api::memcpy(&mut input, residual))?;
        }
        Ok(())
    }));
    assert_eq!(graph.num_nodes(), 3 * n_layers);
    // Recorded, not run.
    let last = residuals.last().expect("a layer");
    assert_same(
        "before",
        &ok(last.dup().to_host_vec().sync_on(&stream)),
        &vec![POISON; d],
    );
    let mut r = rng("tile_graphs");
    let mut model_input = input;
    for replay in 0..3 {
        let embedding: Vec<f32> = random(&mut r, d, -2.0f32, 2.0);
        let new = ok(api::from_host(&embedding, &[d]).sync_on(&stream));
        ok(graph.update(api::memcpy(&mut model_input, &new)));
        ok(graph.launch().sync_on(graph.stream()));
        let got = ok(last.dup().to_host_vec().sync_on(&stream));
        assert_same(
            &format!("replay {replay}"),
            &got,
            &layers(&embedding, n_layers),
        );
    }
}

#[test]
fn a_captured_operation_keeps_its_tensors() {
    let device = ok(Device::new(0));
    let stream = ok(device.new_stream());
    let d = 777usize;
    let mut r = rng("tile_graphs_capture");
    let x_host: Vec<f32> = random(&mut r, d, -4.0f32, 4.0);
    let x = ok(api::from_host(&x_host, &[d]).sync_on(&stream));
    let out = ok(api::full(POISON, &[d]).sync_on(&stream));
    let op = kernels::scale(out.partition([64]), 3.0, x);
    let mut graph = ok(op.graph_on(stream.clone()));
    let (out, _, x) = graph.take_output().expect("the output");
    assert!(graph.take_output().is_none());
    // The input goes; the graph still has its memory.
    drop(x);
    ok(graph.launch().sync_on(&stream));
    let want: Vec<f32> = x_host.iter().map(|v| v * 3.0).collect();
    let out = out.unpartition();
    assert_same(
        "scaled",
        &ok(out.dup().to_host_vec().sync_on(&stream)),
        &want,
    );
}

#[test]
fn a_graph_records_no_allocation() {
    let device = ok(Device::new(0));
    let stream = ok(device.new_stream());
    let made = CudaGraph::scope(&stream, |s| {
        s.record(api::zeros::<f32>(&[16]))?;
        Ok(())
    });
    match made {
        Err(e) => assert!(e.to_string().contains("recording"), "{e}"),
        Ok(_) => panic!("an allocation inside a graph must be refused"),
    }
}
