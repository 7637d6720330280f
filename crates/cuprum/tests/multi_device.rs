//! Data-parallel steps over several devices with `cuprum::collective`, on three emulated
//! devices opened here (whatever `CUPRUM_DEVICE` says: a GPU machine may have one GPU):
//! a sum in the iterator track (each device sums its part of a vector, an all-reduce adds
//! the partial sums) and a GEMM in the tile track split by rows (each device multiplies its
//! rows, an all-gather gives every device the whole product), each checked against plain
//! Rust on fresh random data, outputs poisoned first, every element compared.

use std::sync::Arc;

use cuprum::collective::{Communicator, ReduceOp, group};
use cuprum::iter::{GpuDevice, GpuIter};
use cuprum::tile::cuda_core::Device;
use cuprum::tile::prelude::*;
use cuprum::{CudaContext, DeviceBuffer};
use cuprum_testkit::compare::{assert_bits_eq, ok};
use cuprum_testkit::random::{random, rng};

#[cuprum::tile::module]
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn gemm<const BM: i32, const BN: i32, const BK: i32>(
        z: &mut Tensor<f32, { [BM, BN] }>,
        x: &Tensor<f32, { [-1, -1] }>,
        y: &Tensor<f32, { [-1, -1] }>,
    ) {
        let part_x = x.partition(const_shape![BM, BK]);
        let part_y = y.partition(const_shape![BK, BN]);
        let pid: (i32, i32, i32) = get_tile_block_id();
        let k: i32 = x.shape()[1];
        let mut acc: Tile<f32, { [BM, BN] }> = constant(0.0f32, const_shape![BM, BN]);
        for i in 0i32..ceil_div(k, BK) {
            acc = mma(part_x.load([pid.0, i]), part_y.load([i, pid.1]), acc);
        }
        z.store(acc);
    }
}

const DEVICES: usize = 3;

fn contexts() -> Vec<CudaContext> {
    (0..DEVICES).map(|_| CudaContext::emulator()).collect()
}

#[test]
fn a_sum_split_over_devices_is_all_reduced() {
    let ctxs = contexts();
    let devices: Vec<GpuDevice> = ctxs.iter().cloned().map(GpuDevice::from_context).collect();
    let streams: Vec<_> = devices.iter().map(|d| d.stream().clone()).collect();
    let comms = ok(Communicator::from_streams(&streams));
    let mut r = rng("multi_device_sum");
    let n = 10_007;
    let data: Vec<i32> = random(&mut r, n, -1_000_000, 1_000_000);
    let chunk = n.div_ceil(DEVICES);
    // Each device's partial sum, on the device.
    let mut partials: Vec<DeviceBuffer<i32>> = devices
        .iter()
        .zip(data.chunks(chunk))
        .map(|(d, part)| {
            let v = ok(d.upload(part));
            ok(v.iter().sum_on_device::<i32>()).into_buffer()
        })
        .collect();
    let mut totals: Vec<DeviceBuffer<i32>> = streams
        .iter()
        .map(|s| ok(DeviceBuffer::from_host(s, &[i32::MIN])))
        .collect();
    ok(group(|| {
        for ((c, p), t) in comms.iter().zip(&mut partials).zip(&mut totals) {
            c.all_reduce(p, t, ReduceOp::Sum)?;
        }
        Ok(())
    }));
    let want = data.iter().fold(0i32, |a, &b| a.wrapping_add(b));
    for (s, t) in streams.iter().zip(&totals) {
        assert_eq!(ok(t.to_host_vec(s)), vec![want]);
    }
}

#[test]
fn a_gemm_split_by_rows_is_all_gathered() {
    let ctxs = contexts();
    let devices: Vec<Arc<Device>> = ctxs.iter().cloned().map(Device::from_context).collect();
    let streams: Vec<Arc<Stream>> = devices.iter().map(|d| ok(d.new_stream())).collect();
    let plain: Vec<cuprum::Stream> = streams.iter().map(|s| (**s).clone()).collect();
    let comms = ok(Communicator::from_streams(&plain));
    // 40 rows per device (two 16-row tiles and a ragged one), K and N ragged too.
    let (rows, n, k) = (40usize, 44usize, 50usize);
    let m = rows * DEVICES;
    let mut r = rng("multi_device_gemm");
    let hx: Vec<f32> = random(&mut r, m * k, -2.0, 2.0);
    let hy: Vec<f32> = random(&mut r, k * n, -2.0, 2.0);
    let mut blocks = Vec::new();
    for (d, s) in streams.iter().enumerate() {
        let x = ok(api::from_host(&hx[d * rows * k..(d + 1) * rows * k], &[rows, k]).sync_on(s));
        let y = ok(api::from_host(&hy, &[k, n]).sync_on(s));
        let mut z = ok(api::full(f32::NAN, &[rows, n]).sync_on(s));
        ok(kernels::gemm((&mut z).partition([16, 16]), &x, &y)
            .generics(["16", "16", "8"])
            .sync_on(s));
        blocks.push(z.try_into_device_buffer().expect("a tensor of its own"));
    }
    let mut gathered: Vec<DeviceBuffer<f32>> = plain
        .iter()
        .map(|s| ok(DeviceBuffer::from_host(s, &vec![f32::NAN; m * n])))
        .collect();
    ok(group(|| {
        for ((c, b), g) in comms.iter().zip(&blocks).zip(&mut gathered) {
            c.all_gather(b, g)?;
        }
        Ok(())
    }));
    let mut want = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0f32;
            for q in 0..k {
                acc = hx[i * k + q].mul_add(hy[q * n + j], acc);
            }
            want[i * n + j] = acc;
        }
    }
    for (d, (s, g)) in plain.iter().zip(&gathered).enumerate() {
        assert_bits_eq(&format!("device {d}"), &ok(g.to_host_vec(s)), &want);
    }
    // The buffer a tensor gave up is a tensor again, and back, without a copy.
    let buffer = blocks.remove(0);
    let address = buffer.device_address();
    let back = Tensor::from_device_buffer(buffer, &[rows, n]).expect("a tensor");
    assert_eq!(back.shape(), &[rows, n]);
    let again = back.try_into_device_buffer().expect("the whole buffer");
    assert_eq!(again.device_address(), address);
    // A length that is not the shape's is refused.
    assert!(Tensor::from_device_buffer(again, &[rows + 1, n]).is_err());
}
