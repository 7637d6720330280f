//! Exchanging contexts, streams and device memory with other libraries, without copies:
//! [`cudarc`] (its `CudaContext`, `CudaStream` and `CudaSlice`) and, with the `dlpack`
//! feature (on by default), [`dlpack`] tensors (PyTorch, JAX, CuPy, NumPy, ...).
//!
//! Both are thin layers over [`crate::foreign`] (raw streams and foreign memory with an
//! owner), whose docs state the ordering rules across the boundary.

pub mod cudarc;
#[cfg(feature = "dlpack")]
pub mod dlpack;
