//! What the front end builds is what the tile lowering takes: the example kernels,
//! specialized, lower to kernel IR that validates (running them is the lowering's tests'
//! job); a sub-tile store, which the lowering does not have yet, is refused by it with a
//! message.

mod common;

use common::sources::*;
use common::*;
use cuprum_tile_ir::ScalarType;
use cuprum_tile_lower::{LowerError, lower};

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
fn sub_tile_stores_are_refused_by_the_lowering_for_now() {
    for (src, name, consts) in [
        (RMS_NORM, "rms_norm", [64i64, 16]),
        (LAYER_NORM, "layer_norm", [100, 32]),
    ] {
        let m = compile(src);
        let k = specialized(&m, name, &consts, &[]);
        match lower(&k) {
            Err(LowerError::Unsupported { message, .. }) => {
                assert!(message.contains("partition_mut"), "{message}")
            }
            other => panic!(
                "`{name}`: expected the lowering to refuse the sub-tile store, got {other:?}"
            ),
        }
    }
}
