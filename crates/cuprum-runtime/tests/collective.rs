//! Collectives on emulated devices (`cuprum_runtime::collective`): every operation on fresh
//! random data across cliques of 1 to 4 devices, receive buffers poisoned first and checked
//! element by element against plain Rust reducing in rank order; one thread driving every
//! rank through `group`, and one thread per rank without it; and the refusals (lengths,
//! element types or operations that differ between ranks, two ranks on one device, a
//! buffer of another device, a root that is not a rank).

use cuprum_runtime::collective::{Communicator, ReduceOp, group};
use cuprum_runtime::{CudaContext, DeviceBuffer, Error, Stream};
use cuprum_testkit::random::{random, rng};

fn streams(n: usize) -> Vec<Stream> {
    (0..n)
        .map(|_| CudaContext::emulator().new_stream().expect("a stream"))
        .collect()
}

fn upload<T: cuprum_runtime::DeviceCopy>(s: &Stream, v: &[T]) -> DeviceBuffer<T> {
    DeviceBuffer::from_host(s, v).expect("upload")
}

/// `op` over `values` in rank order, as `i32`s wrap.
fn reduce_i32(op: ReduceOp, values: &[i32]) -> i32 {
    let acc = values[1..].iter().fold(values[0], |a, &b| match op {
        ReduceOp::Sum | ReduceOp::Avg => a.wrapping_add(b),
        ReduceOp::Prod => a.wrapping_mul(b),
        ReduceOp::Max => a.max(b),
        ReduceOp::Min => a.min(b),
    });
    if op == ReduceOp::Avg {
        acc / values.len() as i32
    } else {
        acc
    }
}

#[test]
fn all_reduce_of_every_operator_in_a_group() {
    let mut r = rng("collective_all_reduce");
    for n in 1..=4 {
        let ss = streams(n);
        let comms = Communicator::from_streams(&ss).expect("clique");
        let len = 1000 + n;
        for op in [
            ReduceOp::Sum,
            ReduceOp::Prod,
            ReduceOp::Max,
            ReduceOp::Min,
            ReduceOp::Avg,
        ] {
            let data: Vec<Vec<i32>> = (0..n).map(|_| random(&mut r, len, -1000, 1000)).collect();
            let sends: Vec<_> = ss.iter().zip(&data).map(|(s, d)| upload(s, d)).collect();
            let mut recvs: Vec<_> = ss.iter().map(|s| upload(s, &vec![i32::MIN; len])).collect();
            group(|| {
                for ((c, send), recv) in comms.iter().zip(&sends).zip(&mut recvs) {
                    c.all_reduce(send, recv, op)?;
                }
                Ok(())
            })
            .expect("all_reduce");
            let want: Vec<i32> = (0..len)
                .map(|i| reduce_i32(op, &data.iter().map(|d| d[i]).collect::<Vec<_>>()))
                .collect();
            for (rank, (s, recv)) in ss.iter().zip(&recvs).enumerate() {
                assert_eq!(
                    recv.to_host_vec(s).expect("download"),
                    want,
                    "{op:?} on {n} ranks, rank {rank}"
                );
            }
        }
    }
}

#[test]
fn float_sums_are_in_rank_order_and_threads_need_no_group() {
    let n = 3;
    let ss = streams(n);
    let comms = Communicator::from_streams(&ss).expect("clique");
    let mut r = rng("collective_threads");
    let len = 4097;
    let data: Vec<Vec<f32>> = (0..n).map(|_| random(&mut r, len, -1e3f32, 1e3)).collect();
    let results: Vec<Vec<f32>> = std::thread::scope(|scope| {
        let handles: Vec<_> = comms
            .iter()
            .zip(&ss)
            .zip(&data)
            .map(|((c, s), d)| {
                scope.spawn(move || {
                    let send = upload(s, d);
                    let mut recv = upload(s, &vec![f32::NAN; len]);
                    c.all_reduce(&send, &mut recv, ReduceOp::Sum)
                        .expect("all_reduce");
                    recv.to_host_vec(s).expect("download")
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a rank"))
            .collect()
    });
    let want: Vec<u32> = (0..len)
        .map(|i| ((data[0][i] + data[1][i]) + data[2][i]).to_bits())
        .collect();
    for (rank, got) in results.iter().enumerate() {
        let got: Vec<u32> = got.iter().map(|x| x.to_bits()).collect();
        assert_eq!(got, want, "rank {rank}");
    }
}

#[test]
fn gather_scatter_and_broadcast() {
    let n = 4;
    let ss = streams(n);
    let comms = Communicator::from_streams(&ss).expect("clique");
    let mut r = rng("collective_gather");
    let part = 257;
    let data: Vec<Vec<i64>> = (0..n).map(|_| random(&mut r, part * n, -50, 50)).collect();

    // all_gather of each rank's first `part` elements.
    let sends: Vec<_> = ss
        .iter()
        .zip(&data)
        .map(|(s, d)| upload(s, &d[..part]))
        .collect();
    let mut recvs: Vec<_> = ss
        .iter()
        .map(|s| upload(s, &vec![i64::MIN; part * n]))
        .collect();
    group(|| {
        for ((c, send), recv) in comms.iter().zip(&sends).zip(&mut recvs) {
            c.all_gather(send, recv)?;
        }
        Ok(())
    })
    .expect("all_gather");
    let want: Vec<i64> = data.iter().flat_map(|d| d[..part].to_vec()).collect();
    for (s, recv) in ss.iter().zip(&recvs) {
        assert_eq!(recv.to_host_vec(s).expect("download"), want, "all_gather");
    }

    // reduce_scatter of the whole buffers.
    let sends: Vec<_> = ss.iter().zip(&data).map(|(s, d)| upload(s, d)).collect();
    let mut recvs: Vec<_> = ss
        .iter()
        .map(|s| upload(s, &vec![i64::MIN; part]))
        .collect();
    group(|| {
        for ((c, send), recv) in comms.iter().zip(&sends).zip(&mut recvs) {
            c.reduce_scatter(send, recv, ReduceOp::Sum)?;
        }
        Ok(())
    })
    .expect("reduce_scatter");
    for (rank, (s, recv)) in ss.iter().zip(&recvs).enumerate() {
        let want: Vec<i64> = (0..part)
            .map(|i| data.iter().map(|d| d[rank * part + i]).sum())
            .collect();
        assert_eq!(recv.to_host_vec(s).expect("download"), want, "rank {rank}");
    }

    // broadcast from rank 2.
    let mut bufs: Vec<_> = ss.iter().zip(&data).map(|(s, d)| upload(s, d)).collect();
    group(|| {
        for (c, b) in comms.iter().zip(&mut bufs) {
            c.broadcast(b, 2)?;
        }
        Ok(())
    })
    .expect("broadcast");
    for (s, b) in ss.iter().zip(&bufs) {
        assert_eq!(b.to_host_vec(s).expect("download"), data[2], "broadcast");
    }
}

#[test]
fn what_the_ranks_disagree_on_is_an_error_for_every_rank() {
    let ss = streams(2);
    let comms = Communicator::from_streams(&ss).expect("clique");
    let a = upload(&ss[0], &[1i32; 10]);
    let mut ra = upload(&ss[0], &[0i32; 10]);
    let b = upload(&ss[1], &[1i32; 12]);
    let mut rb = upload(&ss[1], &[0i32; 12]);
    let failed = group(|| {
        comms[0].all_reduce(&a, &mut ra, ReduceOp::Sum)?;
        comms[1].all_reduce(&b, &mut rb, ReduceOp::Sum)?;
        Ok(())
    });
    match failed {
        Err(Error::Collective { what }) => assert!(what.contains("one length"), "{what}"),
        other => panic!("lengths that differ: {other:?}"),
    }
    assert_eq!(ra.to_host_vec(&ss[0]).expect("download"), vec![0; 10]);

    // A buffer of the other device.
    assert!(matches!(
        comms[0].all_reduce(&b, &mut ra, ReduceOp::Sum),
        Err(Error::ContextMismatch)
    ));
    // A root that is not a rank.
    assert!(matches!(
        comms[0].broadcast(&mut ra, 2),
        Err(Error::Collective { .. })
    ));
    // Two ranks on one device.
    let ctx = CudaContext::emulator();
    let same = [ctx.new_stream().expect("s"), ctx.new_stream().expect("s")];
    assert!(matches!(
        Communicator::from_streams(&same),
        Err(Error::Collective { .. })
    ));
    assert!(matches!(
        Communicator::from_streams(&[]),
        Err(Error::Collective { .. })
    ));
}

/// A clique of one on the device `CudaContext::new(0)` opens (NCCL with one rank on a GPU):
/// each collective is a copy. Where the GPU's process finds no NCCL library, the typed
/// refusal is checked instead.
#[test]
fn a_clique_of_one_on_the_default_device() {
    let ctx = CudaContext::new(0).expect("a device");
    let s = ctx.new_stream().expect("a stream");
    let comms = match Communicator::from_streams(std::slice::from_ref(&s)) {
        Ok(c) => c,
        Err(Error::Unsupported { what }) => {
            assert!(what.contains("NCCL"), "{what}");
            eprintln!("skipped: {what}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert_eq!((comms[0].rank(), comms[0].size()), (0, 1));
    let mut r = rng("collective_one");
    let data: Vec<f32> = random(&mut r, 3001, -5.0f32, 5.0);
    let send = upload(&s, &data);
    let mut recv = upload(&s, &vec![f32::NAN; data.len()]);
    comms[0]
        .all_reduce(&send, &mut recv, ReduceOp::Sum)
        .expect("all_reduce");
    assert_eq!(recv.to_host_vec(&s).expect("download"), data);
    let mut gathered = upload(&s, &vec![f32::NAN; data.len()]);
    group(|| comms[0].all_gather(&send, &mut gathered)).expect("all_gather");
    assert_eq!(gathered.to_host_vec(&s).expect("download"), data);
    let mut buffer = upload(&s, &data);
    comms[0].broadcast(&mut buffer, 0).expect("broadcast");
    assert_eq!(buffer.to_host_vec(&s).expect("download"), data);
    // Types NCCL has no element type for move as bytes (NCCL's path on a GPU).
    let halves: Vec<i16> = random(&mut r, 1001, -3000i16, 3000);
    let send = upload(&s, &halves);
    let mut gathered = upload(&s, &vec![i16::MIN; halves.len()]);
    comms[0]
        .all_gather(&send, &mut gathered)
        .expect("all_gather of i16");
    assert_eq!(gathered.to_host_vec(&s).expect("download"), halves);
    let flags: Vec<bool> = halves.iter().map(|&h| h > 0).collect();
    let mut buffer = upload(&s, &flags);
    comms[0]
        .broadcast(&mut buffer, 0)
        .expect("broadcast of bool");
    assert_eq!(buffer.to_host_vec(&s).expect("download"), flags);
}

/// Reductions take NCCL's element types on every backend (the emulator could add `i16`s,
/// but a program it passed would then fail on GPUs); gathers and broadcasts move any type.
#[test]
fn reductions_refuse_the_types_nccl_does_not_reduce_and_moves_take_any() {
    let mut r = rng("collective_types");
    let ss = streams(3);
    let comms = Communicator::from_streams(&ss).expect("clique");
    let halves: Vec<Vec<i16>> = (0..3).map(|_| random(&mut r, 257, -100i16, 100)).collect();
    let sends: Vec<_> = ss.iter().zip(&halves).map(|(s, d)| upload(s, d)).collect();
    let mut recvs: Vec<_> = ss.iter().map(|s| upload(s, &[i16::MIN; 257])).collect();
    for op in [ReduceOp::Sum, ReduceOp::Max] {
        match comms[0].all_reduce(&sends[0], &mut recvs[0], op) {
            Err(Error::Collective { what }) => {
                assert!(
                    what.contains("`i16`") && what.contains("NCCL's types"),
                    "{what}"
                )
            }
            other => panic!("an all_reduce of i16 gave {other:?}"),
        }
    }
    let mut scattered = upload(&ss[0], &[true; 1]);
    let flags = upload(&ss[0], &[true, false, true]);
    assert!(matches!(
        comms[0].reduce_scatter(&flags, &mut scattered, ReduceOp::Sum),
        Err(Error::Collective { .. })
    ));
    // Gathers of i16 in rank order, and a broadcast of bools from rank 2.
    let mut gathered: Vec<_> = ss.iter().map(|s| upload(s, &[i16::MIN; 3 * 257])).collect();
    group(|| {
        for ((c, send), recv) in comms.iter().zip(&sends).zip(&mut gathered) {
            c.all_gather(send, recv)?;
        }
        Ok(())
    })
    .expect("all_gather of i16");
    let want = halves.concat();
    for (s, g) in ss.iter().zip(&gathered) {
        assert_eq!(g.to_host_vec(s).expect("download"), want);
    }
    let flags: Vec<Vec<bool>> = (0..3)
        .map(|_| random(&mut r, 99, 0u8, 2).iter().map(|&b| b == 1).collect())
        .collect();
    let mut buffers: Vec<_> = ss.iter().zip(&flags).map(|(s, f)| upload(s, f)).collect();
    group(|| {
        for (c, b) in comms.iter().zip(&mut buffers) {
            c.broadcast(b, 2)?;
        }
        Ok(())
    })
    .expect("broadcast of bool");
    for (s, b) in ss.iter().zip(&buffers) {
        assert_eq!(b.to_host_vec(s).expect("download"), flags[2]);
    }
}

/// A receive buffer dropped inside a group, before the group performs its collective, stays
/// allocated until then: a buffer allocated after the drop is never written by it.
#[test]
fn a_buffer_dropped_inside_a_group_is_not_reused_before_the_group_ends() {
    let ss = streams(2);
    let comms = Communicator::from_streams(&ss).expect("clique");
    let n = 512;
    let sends: Vec<_> = ss.iter().map(|s| upload(s, &vec![3u32; n])).collect();
    let mut r0 = upload(&ss[0], &vec![0u32; n]);
    let mut r1 = upload(&ss[1], &vec![0u32; n]);
    let fresh = group(|| {
        comms[0].all_reduce(&sends[0], &mut r0, ReduceOp::Sum)?;
        comms[1].all_reduce(&sends[1], &mut r1, ReduceOp::Sum)?;
        drop(r0);
        DeviceBuffer::from_host(&ss[0], &vec![7u32; n])
    })
    .expect("the group");
    assert_eq!(fresh.to_host_vec(&ss[0]).expect("download"), vec![7; n]);
    assert_eq!(r1.to_host_vec(&ss[1]).expect("download"), vec![6; n]);
}
