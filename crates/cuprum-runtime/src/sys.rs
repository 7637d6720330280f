//! cuda-oxide's `cuda_core::sys` names for encoding a tensor map by hand (`CUtensorMap`,
//! `cuTensorMapEncodeTiled` and its enum constants, `CUresult`), so that its TMA programs run
//! with only their paths changed.
//!
//! The call is not the driver's: it builds a [`TensorMapDesc`], checks it with
//! [`TensorMapDesc::check`] (against the live buffer at the address, when the address is in
//! one) exactly as [`crate::TensorMap`] does, and encodes it for the backend in use (the
//! driver's `cuTensorMapEncodeTiled` once a CUDA context exists, else the emulator's
//! description; [`crate::tensor_map::default_backend`]). A map the checks refuse is
//! `CUDA_ERROR_INVALID_VALUE`, as the driver would answer, without touching the output.
//! New code should prefer [`crate::TensorMap`], which says which requirement failed and
//! borrows its buffer.
//!
//! The L2 promotion argument is a cache hint, not honoured here; the interleaved layouts are
//! not supported (`CUDA_ERROR_NOT_SUPPORTED`).

#![allow(non_camel_case_types, non_upper_case_globals, non_snake_case)]

use std::ffi::c_void;

use cuprum_ir::tma::{MAX_RANK, data_type_from_code, tensor_map_data_type};
use cuprum_ir::{OobFill, ScalarType, Swizzle, TensorMapDesc};

/// A driver status code (`CUresult`).
pub type CUresult = u32;
/// The enum type of [`CUresult`]'s constants, as bindgen names it.
pub type cudaError_enum = u32;
/// Success.
pub const cudaError_enum_CUDA_SUCCESS: cudaError_enum = 0;
/// An argument the call refuses.
pub const cudaError_enum_CUDA_ERROR_INVALID_VALUE: cudaError_enum = 1;
/// A feature cuprum does not support.
pub const cudaError_enum_CUDA_ERROR_NOT_SUPPORTED: cudaError_enum = 801;

/// 128 opaque bytes, 64-byte aligned: an encoded tensor map.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CUtensorMap {
    /// The encoding (the driver's, or the emulator's description).
    pub opaque: [u64; 16],
}

/// The element type of a tensor map.
pub type CUtensorMapDataType_enum = u32;
/// bindgen's alias of [`CUtensorMapDataType_enum`].
pub type CUtensorMapDataType = CUtensorMapDataType_enum;
/// How a box is laid out in shared memory.
pub type CUtensorMapSwizzle_enum = u32;
/// bindgen's alias of [`CUtensorMapSwizzle_enum`].
pub type CUtensorMapSwizzle = CUtensorMapSwizzle_enum;
/// Interleaved layouts.
pub type CUtensorMapInterleave_enum = u32;
/// bindgen's alias of [`CUtensorMapInterleave_enum`].
pub type CUtensorMapInterleave = CUtensorMapInterleave_enum;
/// The L2 promotion hint.
pub type CUtensorMapL2promotion_enum = u32;
/// bindgen's alias of [`CUtensorMapL2promotion_enum`].
pub type CUtensorMapL2promotion = CUtensorMapL2promotion_enum;
/// What out-of-bounds elements read as.
pub type CUtensorMapFloatOOBfill_enum = u32;
/// bindgen's alias of [`CUtensorMapFloatOOBfill_enum`].
pub type CUtensorMapFloatOOBfill = CUtensorMapFloatOOBfill_enum;

macro_rules! constants {
    ($ty:ident: $($name:ident = $v:expr),* $(,)?) => {
        $(#[doc = concat!("`", stringify!($name), "`.")]
        pub const $name: $ty = $v;)*
    };
}

/// The code of a data type (every one named below has one; `cuprum_ir::tma` defines them).
const fn data_type(t: ScalarType) -> u32 {
    match tensor_map_data_type(t) {
        Some(code) => code,
        None => u32::MAX,
    }
}

constants! { CUtensorMapDataType_enum:
    CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_UINT8 = data_type(ScalarType::U8),
    CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_UINT16 = data_type(ScalarType::U16),
    CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_UINT32 = data_type(ScalarType::U32),
    CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_INT32 = data_type(ScalarType::I32),
    CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_UINT64 = data_type(ScalarType::U64),
    CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_INT64 = data_type(ScalarType::I64),
    CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = data_type(ScalarType::F16),
    CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = data_type(ScalarType::F32),
    CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_FLOAT64 = data_type(ScalarType::F64),
    CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = data_type(ScalarType::BF16),
}
constants! { CUtensorMapSwizzle_enum:
    CUtensorMapSwizzle_enum_CU_TENSOR_MAP_SWIZZLE_NONE = Swizzle::None.tensor_map_code(),
    CUtensorMapSwizzle_enum_CU_TENSOR_MAP_SWIZZLE_32B = Swizzle::B32.tensor_map_code(),
    CUtensorMapSwizzle_enum_CU_TENSOR_MAP_SWIZZLE_64B = Swizzle::B64.tensor_map_code(),
    CUtensorMapSwizzle_enum_CU_TENSOR_MAP_SWIZZLE_128B = Swizzle::B128.tensor_map_code(),
}
constants! { CUtensorMapInterleave_enum:
    CUtensorMapInterleave_enum_CU_TENSOR_MAP_INTERLEAVE_NONE = 0,
    CUtensorMapInterleave_enum_CU_TENSOR_MAP_INTERLEAVE_16B = 1,
    CUtensorMapInterleave_enum_CU_TENSOR_MAP_INTERLEAVE_32B = 2,
}
constants! { CUtensorMapL2promotion_enum:
    CUtensorMapL2promotion_enum_CU_TENSOR_MAP_L2_PROMOTION_NONE = 0,
    CUtensorMapL2promotion_enum_CU_TENSOR_MAP_L2_PROMOTION_L2_64B = 1,
    CUtensorMapL2promotion_enum_CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2,
    CUtensorMapL2promotion_enum_CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3,
}
constants! { CUtensorMapFloatOOBfill_enum:
    CUtensorMapFloatOOBfill_enum_CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = OobFill::Zero.code(),
    CUtensorMapFloatOOBfill_enum_CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA = OobFill::Nan.code(),
}

/// The description the arguments of [`cuTensorMapEncodeTiled`] give, or the status that
/// refuses them.
///
/// # Safety
///
/// As [`cuTensorMapEncodeTiled`] (the arrays' lengths).
#[allow(clippy::too_many_arguments)]
unsafe fn describe(
    data_type: CUtensorMapDataType,
    rank: u32,
    address: *mut c_void,
    global_dim: *const u64,
    global_strides: *const u64,
    box_dim: *const u32,
    element_strides: *const u32,
    interleave: CUtensorMapInterleave,
    swizzle: CUtensorMapSwizzle,
    oob_fill: CUtensorMapFloatOOBfill,
) -> Result<TensorMapDesc, CUresult> {
    let invalid = cudaError_enum_CUDA_ERROR_INVALID_VALUE;
    if interleave != CUtensorMapInterleave_enum_CU_TENSOR_MAP_INTERLEAVE_NONE {
        return Err(cudaError_enum_CUDA_ERROR_NOT_SUPPORTED);
    }
    let elem = data_type_from_code(data_type).ok_or(invalid)?;
    let rank = rank as usize;
    if !(1..=MAX_RANK).contains(&rank)
        || global_dim.is_null()
        || box_dim.is_null()
        || element_strides.is_null()
        || (rank > 1 && global_strides.is_null())
    {
        return Err(invalid);
    }
    let mut desc = TensorMapDesc::new(elem, rank, address as u64);
    // SAFETY: the caller passes arrays of `rank` entries (`rank - 1` strides), non-null.
    unsafe {
        desc.dims[..rank].copy_from_slice(std::slice::from_raw_parts(global_dim, rank));
        if rank > 1 {
            desc.strides[..rank - 1]
                .copy_from_slice(std::slice::from_raw_parts(global_strides, rank - 1));
        }
        desc.box_dims[..rank].copy_from_slice(std::slice::from_raw_parts(box_dim, rank));
        desc.element_strides[..rank]
            .copy_from_slice(std::slice::from_raw_parts(element_strides, rank));
    }
    desc.swizzle = Swizzle::ALL
        .into_iter()
        .find(|s| s.tensor_map_code() == swizzle)
        .ok_or(invalid)?;
    desc.oob_fill = [OobFill::Zero, OobFill::Nan]
        .into_iter()
        .find(|f| f.code() == oob_fill)
        .ok_or(invalid)?;
    Ok(desc)
}

/// Encodes a tiled tensor map (the driver's `cuTensorMapEncodeTiled`, checked first: see the
/// [module docs](self)). Dimensions are innermost first; `globalStrides` has `tensorRank - 1`
/// entries, the byte strides of dimensions 1 and up.
///
/// # Safety
///
/// `tensorMap` points to 128 writable bytes; `globalDim`, `boxDim` and `elementStrides` to
/// `tensorRank` readable entries, `globalStrides` to `tensorRank - 1`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn cuTensorMapEncodeTiled(
    tensorMap: *mut CUtensorMap,
    tensorDataType: CUtensorMapDataType,
    tensorRank: u32,
    globalAddress: *mut c_void,
    globalDim: *const u64,
    globalStrides: *const u64,
    boxDim: *const u32,
    elementStrides: *const u32,
    interleave: CUtensorMapInterleave,
    swizzle: CUtensorMapSwizzle,
    l2Promotion: CUtensorMapL2promotion,
    oobFill: CUtensorMapFloatOOBfill,
) -> CUresult {
    let _ = l2Promotion;
    if tensorMap.is_null() {
        return cudaError_enum_CUDA_ERROR_INVALID_VALUE;
    }
    // SAFETY: the caller's promise on the arrays.
    let desc = match unsafe {
        describe(
            tensorDataType,
            tensorRank,
            globalAddress,
            globalDim,
            globalStrides,
            boxDim,
            elementStrides,
            interleave,
            swizzle,
            oobFill,
        )
    } {
        Ok(d) => d,
        Err(status) => return status,
    };
    let have = crate::ordering::bytes_from(desc.address);
    match crate::tensor_map::encode(crate::tensor_map::default_backend(), &desc, have) {
        Ok(opaque) => {
            // SAFETY: the caller's promise on `tensorMap`.
            unsafe { tensorMap.write(CUtensorMap { opaque }) };
            cudaError_enum_CUDA_SUCCESS
        }
        Err(crate::Error::TensorMap { .. }) => cudaError_enum_CUDA_ERROR_INVALID_VALUE,
        Err(crate::Error::Driver { status, .. }) => status.0 as CUresult,
        Err(_) => cudaError_enum_CUDA_ERROR_NOT_SUPPORTED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The driver's values (cuda.h), which these names must keep whatever `cuprum_ir` does.
    #[test]
    fn constants_have_the_drivers_values() {
        let types = [
            CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_UINT8,
            CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_UINT16,
            CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_UINT32,
            CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_INT32,
            CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_UINT64,
            CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_INT64,
            CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
            CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        ];
        assert_eq!(types, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        let swizzles = [
            CUtensorMapSwizzle_enum_CU_TENSOR_MAP_SWIZZLE_NONE,
            CUtensorMapSwizzle_enum_CU_TENSOR_MAP_SWIZZLE_32B,
            CUtensorMapSwizzle_enum_CU_TENSOR_MAP_SWIZZLE_64B,
            CUtensorMapSwizzle_enum_CU_TENSOR_MAP_SWIZZLE_128B,
        ];
        assert_eq!(swizzles, [0, 1, 2, 3]);
        assert_eq!(
            [
                CUtensorMapFloatOOBfill_enum_CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
                CUtensorMapFloatOOBfill_enum_CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
            ],
            [0, 1]
        );
        assert_eq!(std::mem::size_of::<CUtensorMap>(), 128);
        assert_eq!(std::mem::align_of::<CUtensorMap>(), 64);
    }

    #[test]
    fn interleaved_layouts_are_not_supported() {
        let mut map = std::mem::MaybeUninit::<CUtensorMap>::uninit();
        let (dims, boxes, ones) = ([64u64], [16u32], [1u32]);
        // SAFETY: rank 1: one entry each, no strides; `map` is 128 writable bytes.
        let status = unsafe {
            cuTensorMapEncodeTiled(
                map.as_mut_ptr(),
                CUtensorMapDataType_enum_CU_TENSOR_MAP_DATA_TYPE_UINT32,
                1,
                std::ptr::null_mut::<c_void>().wrapping_add(256),
                dims.as_ptr(),
                std::ptr::null(),
                boxes.as_ptr(),
                ones.as_ptr(),
                CUtensorMapInterleave_enum_CU_TENSOR_MAP_INTERLEAVE_32B,
                CUtensorMapSwizzle_enum_CU_TENSOR_MAP_SWIZZLE_NONE,
                CUtensorMapL2promotion_enum_CU_TENSOR_MAP_L2_PROMOTION_NONE,
                CUtensorMapFloatOOBfill_enum_CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        assert_eq!(status, cudaError_enum_CUDA_ERROR_NOT_SUPPORTED);
    }
}
