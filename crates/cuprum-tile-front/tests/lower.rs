//! What the front end builds is what the tile lowering takes: the example kernels,
//! specialized, lower to kernel IR that validates (running them is the lowering's tests'
//! job), sub-tile stores (`partition_mut(..).store(t, index)`) included.

mod common;

use common::sources::*;
use common::*;
use cuprum_tile_ir::ScalarType;
use cuprum_tile_lower::lower;

#[test]
fn the_example_kernels_lower_to_valid_kernel_ir() {
    let cases: [(&str, &str, &[i64], &[ScalarType]); 5] = [
        (ADD, "scale", &[256], &[]),
        (ADD, "add", &[128], &[]),
        (HELLO_WORLD, "hello_world_kernel", &[], &[]),
        (SAXPY, "saxpy", &[16, 32], &[]),
        (SOFTMAX, "softmax", &[4, 64], &[]),
    ];
    for (src, name, consts, types) in cases {
        let m = compile(src);
        let k = specialized(&m, name, consts, types);
        let lowered = lower(&k).unwrap_or_else(|e| panic!("lowering `{name}`: {e}"));
        cuprum_ir::validate_kernel(&lowered.kernel)
            .unwrap_or_else(|e| panic!("the kernel IR of `{name}`: {e}"));
        assert_eq!(lowered.kernel.name, name);
    }
}

#[test]
fn kernels_with_sub_tile_stores_lower_to_valid_kernel_ir() {
    for (src, name, consts) in [
        (RMS_NORM, "rms_norm", [64i64, 16]),
        (LAYER_NORM, "layer_norm", [100, 32]),
    ] {
        let m = compile(src);
        let k = specialized(&m, name, &consts, &[]);
        let lowered = lower(&k).unwrap_or_else(|e| panic!("lowering `{name}`: {e}"));
        cuprum_ir::validate_kernel(&lowered.kernel)
            .unwrap_or_else(|e| panic!("the kernel IR of `{name}`: {e}"));
        let stores = {
            let mut n = 0;
            lowered.kernel.body.visit(&mut |s| {
                if matches!(
                    s,
                    cuprum_ir::Stmt::Store { .. } | cuprum_ir::Stmt::VectorStore { .. }
                ) {
                    n += 1;
                }
            });
            n
        };
        assert!(stores > 0, "`{name}` lowered without a store");
    }
}
