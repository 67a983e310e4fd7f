//! # oxicuda-driver
//!
//! Safe, zero-cost bindings to the NVIDIA CUDA Driver API, loaded at run time: no
//! `cuda.h`, no link-time `libcuda`, no `nvcc`.
//!
//! ## Quick look
//!
//! A context bound to this thread, a module loaded from PTX, a kernel declared with
//! its typed signature, device buffers, a launch (the README's quick look):
//!
//! ```no_run
//! use oxicuda_driver::launch::{In, Out};
//! use oxicuda_driver::module::JitOptions;
//! use oxicuda_driver::sys::{CUctx_flags, CUstream_flags};
//! use oxicuda_driver::{Context, CudaError};
//!
//! fn main() -> Result<(), CudaError> {
//!     let driver = oxicuda_driver::init()?; // libcuda.so.1 + cuInit(0); 12020 reads as 12.2
//!     let ctx = Context::new(&driver.best_device()?, CUctx_flags::empty())?;
//!     let c = ctx.bind(|cur| -> Result<Vec<f32>, CudaError> {
//!         // `cur` proves the context is current on this thread; nothing made with it
//!         // can leave this closure or this thread.
//!         let module = cur.load_ptx(include_str!("../kernels/slices.ptx"), &JitOptions::default())?;
//!         // The one unsafe step: declaring what the kernel does with its parameters.
//!         // Checked at once against the kernel's real parameter list.
//!         // SAFETY: kernels/slices.cu's vector_add reads `a` and `b` and writes `c`, each
//!         // only below the length the launch passes with it, for any views it is given.
//!         let add = unsafe { module.function::<(In<f32>, In<f32>, Out<f32>)>("vector_add")? };
//!         let a = cur.alloc_from(&[1.0f32; 1024])?;
//!         let b = cur.alloc_from(&[2.0f32; 1024])?;
//!         let mut c = cur.alloc::<f32>(1024)?;
//!         let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
//!         add.launch(&stream, 4, 256, 0, (&a, &b, &mut c))?; // types checked by rustc
//!         stream.synchronize()?;
//!         c.to_vec()
//!     })??;
//!     assert!(c.iter().all(|v| *v == 3.0));
//!     Ok(())
//! }
//! ```
//!
//! The kernel's side of the parameters — a buffer arrives as a pointer and its length
//! — is in the [`launch`] docs; the CUDA C++ header kernel authors include for it is
//! `kernels/include/oxicuda.cuh` in the repository, and the README's "Getting kernels
//! in" says how to make PTX from CUDA C++.
//!
//! ## Without a GPU
//!
//! With the `soft` feature the same code runs on softcuda, the software driver, chosen
//! with `DriverOptions::software()` (or `OXICUDA_DRIVER=soft` in the environment, read
//! by [`driver`] and [`init`]). This example runs in `cargo test --doc`, and shows
//! [`Module::function`](module::Module::function) (declaring a kernel's signature) and
//! [`Function::launch`](module::Function::launch) (launching it with typed arguments)
//! at work:
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use oxicuda_driver::launch::{In, Out};
//! use oxicuda_driver::module::JitOptions;
//! use oxicuda_driver::sys::{CUctx_flags, CUstream_flags};
//! use oxicuda_driver::{Context, CudaError, DriverOptions};
//!
//! let driver = oxicuda_driver::driver_with(DriverOptions::software())?;
//! driver.init()?;
//! let ctx = Context::new(&driver.best_device()?, CUctx_flags::empty())?;
//! let y = ctx.bind(|cur| -> Result<Vec<f32>, CudaError> {
//!     let module = cur.load_ptx(include_str!("../kernels/slices.ptx"), &JitOptions::default())?;
//!     // `Module::function`: the signature, checked against the kernel's parameter list
//!     // (a wrong one is `CudaError::SignatureMismatch`, before any launch).
//!     // SAFETY: kernels/slices.cu's saxpy reads `x` and reads and writes `y`, each only
//!     // below the length the launch passes with it.
//!     let saxpy = unsafe { module.function::<(f32, In<f32>, Out<f32>)>("saxpy")? };
//!     let x = cur.alloc_from(&[1.0f32, 2.0, 3.0, 4.0])?;
//!     let mut y = cur.alloc_from(&[10.0f32; 4])?;
//!     let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
//!     // `Function::launch`: grid, block, dynamic shared bytes, then one argument per
//!     // parameter — a value for `f32`, `&buffer` for `In`, `&mut buffer` for `Out`.
//!     saxpy.launch(&stream, 1, 32, 0, (2.0f32, &x, &mut y))?;
//!     stream.synchronize()?;
//!     y.to_vec()
//! })??;
//! assert_eq!(y, [12.0, 14.0, 16.0, 18.0]);
//! # Ok(())
//! # }
//! ```
//!
//! ## Features
//!
//! - `soft`: softcuda, the software driver (`DriverOptions::software()`,
//!   `OXICUDA_DRIVER=soft`; or the GPU if there is one, else softcuda:
//!   `DriverOptions::auto()`, `OXICUDA_DRIVER=auto`), for running GPU code's tests in
//!   CI without a GPU.
//!   softcuda is compiled with your profile, and a debug build runs kernels about 8x
//!   slower: add `[profile.dev.package.softcuda] opt-level = 3` to your `Cargo.toml`.
//! - `multi-gpu`: `peer`, `device_pool`, `topology` and `nvml` (below).
//! - `derive`: `#[derive(DeviceCopy)]` for `#[repr(C)]` structs of `DeviceCopy`
//!   fields, checked at compile time (`memory::DeviceCopy`).
//!
//! ## Layers
//!
//! Layers, from the C ABI up (`docs/architecture.md` draws them; each module uses
//! only its own row and those below, which `tests/layers.rs` checks):
//!
//! - [`sys`] — the raw C ABI: handles, enums, flag sets and structs of CUDA 12.9, and
//!   what 13.5 adds (its layouts that differ from 12.9's in `sys::cuda13`);
//!   [`version`] ([`DriverVersion`]);
//! - `activity` — what this thread and process are doing: inside a host callback,
//!   the innermost binding and its sticky error, live peer groups; `jit_log` (the
//!   JIT's parsed log, public as [`jit::JitLog`]); [`leaks`] (below);
//! - [`error`] — [`CudaError`], covering every `CUresult` of the 12.9 and 13.x headers;
//! - [`table`] — the driver functions, declared once in one list, resolved into a
//!   [`DriverTable`] of typed function pointers;
//! - [`loader`] — finds the driver library, resolves the table with version gating,
//!   and reports every failure with its cause;
//! - `wait` — waiting for queued work while a capture elsewhere may forbid it;
//!   `signature` — the kernel parameter kinds and signatures (public in [`launch`]);
//! - the safe layer: [`device`] (typed attributes, grouped views), [`context`] (owned
//!   contexts and the [`CurrentContext`] token every other object borrows),
//!   [`stream`] (streams, scoped asynchronous copies), [`event`] (events),
//!   [`memory`] (device buffers and views), [`pinned`] (page-locked host memory),
//!   [`module`] (modules, kernel lookup, globals, occupancy), [`jit`] (JIT options and
//!   the structured log), [`link`] (the JIT linker: inputs checked, linked, loaded as
//!   a module), [`library`] (context-independent libraries and their kernels),
//!   [`launch`] (typed kernel arguments, which reach the kernel as slices),
//!   [`launch_config`] (extended launch: clusters, cooperative launch and the other
//!   launch attributes, checked before the driver call), [`graph`] (CUDA graphs:
//!   capture or build, instantiate, launch — each state a type), [`pool`] (memory
//!   pools and stream-ordered allocation), [`managed`] (managed memory: attach,
//!   prefetch, advice, host access), [`tensor_map`] (TMA descriptors, every
//!   documented rule checked before the driver sees them).
//! - multi-GPU, with the `multi-gpu` feature: `peer` (several contexts bound at once:
//!   one device's buffers used from another through checked views, peer copies),
//!   `device_pool` (one context per device, shared by threads: binding, device
//!   selection, a batch split across devices), `topology` (the peer matrix from
//!   `cuDeviceGetP2PAttribute`, PCI bus ids, NUMA nodes, NVLinks; text table and
//!   Graphviz DOT) and `nvml` (NVML loaded at run time on the driver loader's
//!   principles, for the NVLinks). Without the feature, peer access itself
//!   (`Context::enable_peer_access`, `cuMemcpyPeer` copies) is still there.
//! - debugging: [`leaks`] (the opt-in leak tracker: live handles by kind, creation
//!   backtraces), [`trace`] (a `tracing` span per kernel launch, free when nobody
//!   listens) and [`snapshot`] (the current context's and device's state, printable).
//!
//! Soundness: without `unsafe`, misuse fails to compile or is a typed error. The
//! `unsafe` a user writes, and its contract, is listed in `docs/architecture.md`
//! ("Soundness: the trust boundary").

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod activity;
pub mod array;
pub mod context;
pub mod device;
#[cfg(feature = "multi-gpu")]
pub mod device_pool;
pub mod error;
pub mod event;
pub mod external;
pub mod graph;
pub mod green;
pub mod ipc;
pub mod jit;
mod jit_log;
pub mod launch;
pub mod launch_config;
pub mod leaks;
pub mod library;
pub mod link;
pub mod loader;
pub mod managed;
pub mod memory;
pub mod module;
#[cfg(feature = "multi-gpu")]
pub mod nvml;
mod order;
#[cfg(feature = "multi-gpu")]
pub mod peer;
pub mod pinned;
pub mod pool;
mod ptx_params;
mod signature;
pub mod snapshot;
pub mod stream;
pub mod sys;
pub mod table;
pub mod tensor_map;
pub mod texture;
#[cfg(feature = "multi-gpu")]
pub mod topology;
pub mod trace;
pub mod version;
pub mod vmm;
mod wait;

/// Entry points for the fuzz targets in `fuzz/` (built with `--cfg fuzzing`, as
/// `cargo fuzz` does): the crate's private parsers, reachable from outside only
/// there. Not part of the public API.
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod __fuzz {
    /// The module-image sniffing and binary-header checks of `Module` loading:
    /// `"ptx"`, `"cubin"` or `"fatbin"`, or the typed refusal.
    pub fn image_kind(image: &[u8]) -> Result<&'static str, crate::CudaError> {
        Ok(match crate::module::image::image_kind(image)? {
            crate::module::image::Image::Ptx => "ptx",
            crate::module::image::Image::Cubin => "cubin",
            crate::module::image::Image::Fatbin => "fatbin",
        })
    }
}

pub use context::{Context, CurrentContext, PrimaryContext, PrimaryState};
pub use device::Device;
pub use error::{CudaError, LoadAttempt, LoadError};
pub use loader::{Driver, DriverOptions, Resolver, driver, driver_with, init};
pub use table::DriverTable;
pub use version::DriverVersion;

/// The README's code, compiled as doctests so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
