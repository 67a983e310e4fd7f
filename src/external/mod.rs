//! External resources: memory and semaphores that another API (Vulkan, another
//! process, another CUDA allocation's export) made, imported by POSIX file
//! descriptor (`cuImportExternalMemory`, `cuImportExternalSemaphore`).
//!
//! - [`ExternalMemory`]: an imported memory object. Its bytes become device memory
//!   through [`ExternalMemory::buffer`] (`cuExternalMemoryGetMappedBuffer`): an
//!   [`ExternalBuffer`] that borrows the object, is used like any device buffer
//!   (views, kernel arguments, copies, memsets, host order) and is freed when dropped
//!   (`cuMemFree`). The object is destroyed when dropped (`cuDestroyExternalMemory`),
//!   which the borrow makes happen after every buffer of it is gone.
//! - [`ExternalSemaphore`]: an imported semaphore, binary or timeline (the kind is its
//!   type parameter: [`Binary`], [`Timeline`]), signalled and waited for in a
//!   stream's order (`cuSignalExternalSemaphoresAsync`,
//!   `cuWaitExternalSemaphoresAsync`). A timeline semaphore's operations take a value;
//!   a binary one's take none — a value it would ignore does not compile.
//!
//! Importing is `unsafe`: the descriptor names memory or a semaphore that code outside
//! this process's view may use, and the crate cannot check what it refers to beyond
//! what the driver checks. The contracts say what the caller promises. On success the
//! driver owns the descriptor (CUDA's rule for opaque descriptors); on failure it is
//! handed back in the [`ImportError`] — nothing is lost.
//!
//! A semaphore that was signalled or waited for is destroyed only after its
//! context's work is done (`cuCtxSynchronize`): the driver must not be left with a
//! queued operation on a destroyed semaphore. If that wait cannot be made, the
//! semaphore is left alive (a logged leak), as an `AddressRange` is.

mod memory;
mod semaphore;

pub use memory::{ExternalBuffer, ExternalMemory};
pub use semaphore::{Binary, ExternalSemaphore, SemaphoreKind, Timeline};

use crate::error::CudaError;

/// A failed import: why, and the descriptor, still the caller's.
#[cfg(unix)]
#[derive(Debug, thiserror::Error)]
#[error("could not import the descriptor: {error}")]
pub struct ImportError {
    /// Why.
    pub error: CudaError,
    /// The descriptor passed in, not taken by the driver.
    pub fd: std::os::fd::OwnedFd,
}

/// The error alone (the descriptor is closed): for `?` in functions returning
/// [`CudaError`].
#[cfg(unix)]
impl From<Box<ImportError>> for CudaError {
    fn from(e: Box<ImportError>) -> CudaError {
        e.error
    }
}

static_assertions::assert_not_impl_any!(ExternalMemory<'static>: Send, Sync);
static_assertions::assert_not_impl_any!(ExternalBuffer<'static, f32>: Send, Sync);
static_assertions::assert_not_impl_any!(ExternalSemaphore<'static, Binary>: Send, Sync);
