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
//! device), or [`control::configure`]. `SOFTCUDA_SANITIZE=memcheck` (or
//! [`control::set_sanitize`]) turns softcuda into a sanitizer that reports invalid
//! accesses and frees (memcheck), divergent barriers and bad warp masks
//! (synccheck), reads of never-written memory (initcheck) and races between
//! streams (streamcheck) in compute-sanitizer's format; `delay` runs queued work
//! later, so that a missing synchronisation shows. `docs/softcuda.md` lists every
//! function and every deviation from the driver, and has the "Sanitizer" section.
//!
//! Layers (an arrow points at what a module may import; nothing imports upwards
//! except where noted):
//!
//! ```text
//! api/* (the cu* exports)   control (test surface)       top: C ABI
//!        │
//! graph::exec (run graphs)  launch/ image copy            launch, modules, copies
//!        │
//! graph (model, capture, mem, cond)  pool managed devalloc vmm external  graphs, device memory
//! green (SM partitions, green contexts)
//!        │
//! stream (workers, events, drain)                         ordering
//!        │
//! state/ (handles, contexts, config)  devmem devspace ffi  core
//!        │
//! ptx/ (interpreter)  sanitize/  device  types  result_codes  leaves
//! ```
//!
//! `api/*` files import the layers below, not each other, except `api::proc` (the
//! `cuGetProcAddress` table names every export) and `api::launch_ex`, which records
//! a launch's completion event through `cuEventRecordWithFlags` itself (so that its
//! call log and fault injection apply), and `api::green`, which reaches
//! `api::context` for a green context's context entry and its primary context. Arrows that still point up inside the lower
//! layers: `state` ↔ `stream` (the state holds the streams and events; a stream
//! reports into its context's sticky error), `state` → `pool`, `graph`, `vmm` and `green` (what a
//! kernel may touch, conditional handles, live counts), `stream` and `devalloc` →
//! `green` (a green context's waits and detached streams; its memory's owner), `stream` → `graph::capture`
//! (the legacy stream refuses to wait for a capturing stream), and `devalloc` ↔
//! `pool`, `graph::mem` (a free checks the other owners of device memory, which
//! reserve through `devalloc`), `devalloc` → `external` (a free of a buffer mapped
//! from external memory gives its pages back there), `external` → `vmm` (its memory
//! files). `control` reaches `api::context` for context
//! teardown.
//!
//! `sanitize` (the sanitizer, `SOFTCUDA_SANITIZE`) is a leaf every layer may report
//! to; it imports only its row neighbour `ptx`'s description of a faulting access
//! (`ptx::Fault`, plain data). The interpreter does not import `sanitize`: its
//! faults reach it through `ptx::DeviceMemory::fault`, which `state` implements,
//! and the layers above hand it what they know (the nearest allocation, a free's
//! address).
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]
#![allow(non_snake_case, clippy::missing_safety_doc)]

mod abi_versions;
pub mod api;
mod array;
pub mod control;
mod copy;
mod devalloc;
pub mod device;
mod devmem;
mod devspace;
mod external;
mod ffi;
pub mod graph;
mod green;
mod image;
mod ipc;
mod launch;
mod managed;
mod pool;
pub mod ptx;
mod result_codes;
mod sanitize;
pub mod state;
pub mod stream;
mod texture;
pub mod types;
mod vmm;

pub use api::proc::{cuGetProcAddress, cuGetProcAddress_v2};
