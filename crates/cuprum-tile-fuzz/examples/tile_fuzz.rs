//! A campaign of random tile programs, three ways: the interpreter against the lowered
//! kernel on the device `CudaContext::new(0)` picks (`CUPRUM_DEVICE=cuda` on a GPU machine;
//! the emulator here, which also runs each kernel before the optimizer).
//!
//! `cargo run --release -p cuprum-tile-fuzz --example tile_fuzz -- [--seed S] [--count N]
//! [--batch B] [--large] [--shrink] [--print] [--dry]`: seeds `S..S+N` in modules of `B` kernels; every
//! failure is printed with its seed, tile IR and arguments (shrunk with `--shrink`); the
//! exit status is 1 when any case failed. `--print` prints the cases that pass too, `--dry` only prints the cases, without running them.

use cuprum_runtime::CudaContext;
use cuprum_tile_fuzz::{Case, Config, check_batch, generate, shrink::shrink};

struct Options {
    seed: u64,
    count: u64,
    batch: usize,
    large: bool,
    shrink: bool,
    print: bool,
    dry: bool,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        seed: 1,
        count: 1000,
        batch: 100,
        large: false,
        shrink: false,
        print: false,
        dry: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut number = |what: &str| -> Result<u64, String> {
            args.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{what} takes a number"))
        };
        match a.as_str() {
            "--seed" => o.seed = number("--seed")?,
            "--count" => o.count = number("--count")?,
            "--batch" => o.batch = number("--batch")?.max(1) as usize,
            "--large" => o.large = true,
            "--shrink" => o.shrink = true,
            "--print" => o.print = true,
            "--dry" => o.dry = true,
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(o)
}

fn main() {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("tile_fuzz: {e}");
            std::process::exit(2);
        }
    };
    let ctx = match CudaContext::new(0) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tile_fuzz: no device: {e}");
            std::process::exit(2);
        }
    };
    let cfg = if o.large {
        Config::large(cuprum_testkit::poison::BYTE)
    } else {
        Config::ci(cuprum_testkit::poison::BYTE)
    };
    println!(
        "tile_fuzz on {}: seeds {}..{}",
        ctx.backend(),
        o.seed,
        o.seed + o.count
    );
    let mut failed = 0u64;
    let seeds: Vec<u64> = (o.seed..o.seed + o.count).collect();
    for chunk in seeds.chunks(o.batch) {
        let mut cases: Vec<Case> = Vec::with_capacity(chunk.len());
        for &seed in chunk {
            match generate(seed, &cfg) {
                Ok(c) => cases.push(c),
                Err(e) => {
                    failed += 1;
                    println!("{e}");
                }
            }
        }
        if o.dry {
            for case in &cases {
                println!("{}\n", case.report(&"not run"));
            }
            continue;
        }
        for (case, result) in cases.iter().zip(check_batch(&ctx, &cases)) {
            let Err(f) = result else {
                if o.print {
                    println!("{}\n", case.report(&"passed"));
                }
                continue;
            };
            failed += 1;
            let case = if o.shrink {
                let what = f.what.clone();
                shrink(case, |c| {
                    c.check(&ctx).err().is_some_and(|g| g.what == what)
                })
            } else {
                case.clone()
            };
            let f = case.check(&ctx).err().unwrap_or(f);
            println!("{}\n", case.report(&f));
        }
        println!(
            "{} cases, {failed} failed",
            chunk.last().map_or(0, |l| l + 1 - o.seed)
        );
    }
    if failed > 0 {
        std::process::exit(1);
    }
}
