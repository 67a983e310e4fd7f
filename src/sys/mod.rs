//! The raw C ABI of the CUDA Driver API, and nothing else.
//!
//! Every handle, typedef, enum, flag set and struct that the driver functions of
//! [`crate::table`] use, mirrored from the CUDA 12.9 `cuda.h` by `scripts/gen_sys.py`:
//!
//! - handles are `#[repr(transparent)]` pointer newtypes ([`CUcontext`], [`CUstream`], ...);
//! - every C enum is a `#[repr(transparent)]` integer newtype whose enumerators are
//!   associated constants with their C names ([`CUresult::CUDA_ERROR_INVALID_VALUE`]),
//!   so a value that a newer driver returns is still representable — a Rust `enum`
//!   across FFI would make it undefined behaviour;
//! - flag sets are `bitflags` 2 types ([`CUctx_flags`], [`CUstream_flags`],
//!   [`CUmemhostalloc_flags`], ...), `#[repr(transparent)]` over the C integer, with one
//!   constant per flag and the whole `bitflags` API; the known bits are the header's
//!   flags (`all`, `!`, `from_bits`, `from_bits_truncate`), and bits a newer driver
//!   sets are kept by `from_bits_retain` and the binary operations;
//! - structs and unions are `#[repr(C)]`, with their size and alignment asserted at
//!   compile time and every field offset checked against the real header by
//!   `tests/abi.rs`.
//!
//! Names are the C names, so the NVIDIA documentation applies word for word.
//! `nvml` (the `multi-gpu` feature) mirrors, the same way, the parts of NVML that
//! `crate::nvml` calls.
//! Nothing here is safe to use on its own; the rest of the crate is the safe layer.

mod generated;
pub(crate) mod macros;

pub use generated::*;

#[cfg(feature = "multi-gpu")]
pub mod nvml;

/// The ABI manifest that `tests/abi.rs` compares with C. Not part of the API.
#[cfg(feature = "abi-manifest")]
#[doc(hidden)]
pub mod manifest;

/// Support types of the ABI manifest. Not part of the API.
#[cfg(feature = "abi-manifest")]
#[doc(hidden)]
pub mod manifest_support;

// Raw handles are plain values that do not cross threads on their own: a safe wrapper
// must opt in, with its reason.
static_assertions::assert_not_impl_any!(CUcontext: Send, Sync);
static_assertions::assert_not_impl_any!(CUstream: Send, Sync);
static_assertions::assert_not_impl_any!(CUmodule: Send, Sync);
static_assertions::assert_impl_all!(CUresult: Send, Sync, Copy, Eq, core::hash::Hash);
