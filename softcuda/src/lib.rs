//! softcuda: a software implementation of the CUDA Driver API.
//!
//! Built as `libsoftcuda.so` (loaded through `dlopen` like the real driver: it exports
//! the driver's symbol names, `cuMemAlloc_v2` and so on) and as an rlib (in-process,
//! through [`cuGetProcAddress_v2`]). Device memory lives in a range of address space
//! softcuda reserves for it, apart from host memory ([`control::device_range`]);
//! streams are worker threads; kernels are PTX, run by the interpreter in [`ptx`].
//! [`control`] is the test surface: live-handle counts, fault injection,
//! allocation budgets and a call log.
//!
//! Configuration (before `cuInit`): `SOFTCUDA_VERSION` (default 12090) and
//! `SOFTCUDA_DEVICES` (default `9.0:8192,8.0:4096`: compute capability and MiB per
//! device), or [`control::configure`]. `docs/softcuda.md` lists every function and
//! every deviation from the driver.
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]
#![allow(non_snake_case, clippy::missing_safety_doc)]

mod abi_versions;
pub mod api;
pub mod control;
mod copy;
mod devalloc;
pub mod device;
mod devmem;
mod devspace;
mod ffi;
pub mod graph;
mod image;
mod launch;
mod managed;
mod pool;
pub mod ptx;
mod result_codes;
pub mod state;
pub mod stream;
pub mod types;

pub use api::proc::{cuGetProcAddress, cuGetProcAddress_v2};
