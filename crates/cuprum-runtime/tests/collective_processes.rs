//! A clique whose ranks are separate processes (`UniqueId`, `Communicator::init_rank`), on
//! emulated devices: this test starts two more copies of its own binary as ranks 1 and 2
//! and is rank 0; every rank all-reduces, all-gathers, reduce-scatters and broadcasts
//! seeded random data (the seed fresh per run, handed to the children with the id), checks
//! every element it receives against plain Rust reducing in rank order, and a child that
//! finds a wrong element fails its process, which fails the test.

use std::process::Command;

use cuprum_runtime::collective::{Communicator, ReduceOp, UniqueId};
use cuprum_runtime::{CudaContext, DeviceBuffer, Stream};
use cuprum_testkit::random::{random, rng, seeded};
use rand::Rng;

const SIZE: usize = 3;
const LEN: usize = 3 * 331;
const TEST: &str = "ranks_in_separate_processes_agree";

/// What rank `rank` sends, from the run's seed.
fn sends(seed: u64, rank: usize) -> Vec<i64> {
    random(
        &mut seeded(seed ^ (rank as u64 * 0x9E37_79B9)),
        LEN,
        -1_000_000,
        1_000_000,
    )
}

fn upload(s: &Stream, v: &[i64]) -> DeviceBuffer<i64> {
    DeviceBuffer::from_host(s, v).expect("upload")
}

/// Rank `rank`'s side of every collective, checked.
fn run_rank(id: &UniqueId, rank: usize, seed: u64) {
    let ctx = CudaContext::emulator();
    let s = ctx.new_stream().expect("a stream");
    let comm = Communicator::init_rank(&s, SIZE, id, rank).expect("init_rank");
    let all: Vec<Vec<i64>> = (0..SIZE).map(|r| sends(seed, r)).collect();
    let mine = upload(&s, &all[rank]);

    let mut recv = upload(&s, &vec![i64::MIN; LEN]);
    comm.all_reduce(&mine, &mut recv, ReduceOp::Sum)
        .expect("all_reduce");
    let want: Vec<i64> = (0..LEN).map(|i| all.iter().map(|d| d[i]).sum()).collect();
    assert_eq!(
        recv.to_host_vec(&s).expect("download"),
        want,
        "rank {rank} all_reduce"
    );

    let mut gathered = upload(&s, &vec![i64::MIN; LEN * SIZE]);
    comm.all_gather(&mine, &mut gathered).expect("all_gather");
    assert_eq!(
        gathered.to_host_vec(&s).expect("download"),
        all.concat(),
        "all_gather"
    );

    let part = LEN / SIZE;
    let mut scattered = upload(&s, &vec![i64::MIN; part]);
    comm.reduce_scatter(&mine, &mut scattered, ReduceOp::Max)
        .expect("reduce_scatter");
    let want: Vec<i64> = (rank * part..(rank + 1) * part)
        .map(|i| all.iter().map(|d| d[i]).max().unwrap_or(i64::MIN))
        .collect();
    assert_eq!(
        scattered.to_host_vec(&s).expect("download"),
        want,
        "reduce_scatter"
    );

    let mut buffer = upload(&s, &all[rank]);
    comm.broadcast(&mut buffer, 1).expect("broadcast");
    assert_eq!(
        buffer.to_host_vec(&s).expect("download"),
        all[1],
        "broadcast"
    );
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> [u8; 128] {
    let mut out = [0u8; 128];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).expect("hex");
    }
    out
}

#[test]
fn ranks_in_separate_processes_agree() {
    // A child: its rank, the id and the seed come from the parent.
    if let Ok(spec) = std::env::var("CUPRUM_TEST_CLIQUE") {
        let fields: Vec<&str> = spec.split(':').collect();
        let (rank, seed, id) = (
            fields[0].parse().expect("rank"),
            fields[1].parse().expect("seed"),
            UniqueId::from_bytes(unhex(fields[2])),
        );
        run_rank(&id, rank, seed);
        return;
    }
    let ctx = CudaContext::emulator();
    let id = UniqueId::new(&ctx).expect("an id");
    let seed: u64 = rng(TEST).random();
    let exe = std::env::current_exe().expect("the test binary");
    let children: Vec<_> = (1..SIZE)
        .map(|rank| {
            Command::new(&exe)
                .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
                .env(
                    "CUPRUM_TEST_CLIQUE",
                    format!("{rank}:{seed}:{}", hex(&id.to_bytes())),
                )
                .spawn()
                .expect("a child rank")
        })
        .collect();
    run_rank(&id, 0, seed);
    for (i, mut child) in children.into_iter().enumerate() {
        let status = child.wait().expect("the child's end");
        assert!(status.success(), "rank {} failed: {status}", i + 1);
    }
    // Every rank was dropped: the rendezvous folder is gone.
    let id_text = String::from_utf8_lossy(&id.to_bytes()).into_owned();
    let folder = id_text
        .trim_end_matches('\0')
        .split_once(':')
        .map(|(_, path)| std::path::PathBuf::from(path))
        .expect("an emulated clique's folder");
    assert!(!folder.exists(), "{} is left", folder.display());
}

#[test]
fn init_rank_refuses_what_cannot_be_a_clique() {
    let ctx = CudaContext::emulator();
    let s = ctx.new_stream().expect("a stream");
    let id = UniqueId::new(&ctx).expect("an id");
    assert!(
        Communicator::init_rank(&s, 2, &id, 2).is_err(),
        "rank past the size"
    );
    let not_emulated = UniqueId::from_bytes([7u8; 128]);
    assert!(
        Communicator::init_rank(&s, 2, &not_emulated, 0).is_err(),
        "an id that names no rendezvous folder"
    );
}
