//! softcuda: a software implementation of the CUDA Driver API.
//!
//! Built as `libsoftcuda.so` (loaded through `dlopen` like the real driver) and as an
//! rlib (in-process, through `cuGetProcAddress_v2`). Device memory lives in host
//! memory; kernels are PTX, run by the interpreter in [`ptx`].
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod ptx;
