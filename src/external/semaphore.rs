//! Imported external semaphores ([`ExternalSemaphore`]), binary or timeline, signalled
//! and waited for in a stream's order.

use crate::context::{CurrentContext, Tied};
use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::stream::Stream;
use crate::sys::{
    CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC, CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS,
    CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, CUcontext, CUexternalSemaphore,
    CUexternalSemaphoreHandleType,
};
use core::cell::Cell;
use core::marker::PhantomData;

/// What kind of semaphore an [`ExternalSemaphore`] is: [`Binary`] or [`Timeline`].
/// Sealed: the kind decides which handle type the driver is told.
pub trait SemaphoreKind: sealed::Sealed {
    /// The handle type of its opaque POSIX descriptor.
    const HANDLE_TYPE: CUexternalSemaphoreHandleType;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Binary {}
    impl Sealed for super::Timeline {}
}

/// A binary semaphore (`CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD`): signalled or
/// not; a wait consumes the signal.
#[derive(Debug)]
pub enum Binary {}

/// A timeline semaphore (`CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD`): a
/// 64-bit value that only grows; a wait for `v` ends once the value is at least `v`.
#[derive(Debug)]
pub enum Timeline {}

impl SemaphoreKind for Binary {
    const HANDLE_TYPE: CUexternalSemaphoreHandleType =
        CUexternalSemaphoreHandleType::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD;
}
impl SemaphoreKind for Timeline {
    const HANDLE_TYPE: CUexternalSemaphoreHandleType =
        CUexternalSemaphoreHandleType::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD;
}

/// An imported semaphore of kind `K`; destroyed when dropped, after the work of its
/// context (see the [module docs](super)).
pub struct ExternalSemaphore<'a, K: SemaphoreKind> {
    driver: &'static Driver,
    raw: CUexternalSemaphore,
    /// The context it was imported under: its work is what the drop waits for.
    ctx: CUcontext,
    /// Whether an operation was ever queued on it.
    used: Cell<bool>,
    /// The last value this handle signalled (a timeline semaphore's values only grow).
    signalled: Cell<u64>,
    _tied: Tied<'a>,
    _k: PhantomData<K>,
}

/// Its handle and kind.
impl<K: SemaphoreKind> core::fmt::Debug for ExternalSemaphore<'_, K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ExternalSemaphore")
            .field("raw", &self.raw)
            .field("kind", &crate::memory::short_type_name::<K>())
            .finish()
    }
}

impl<K: SemaphoreKind> ExternalSemaphore<'_, K> {
    /// Queues a signal on `stream` with `value` (a binary semaphore's is 0).
    fn queue_signal(&self, stream: &Stream<'_>, value: u64) -> Result<(), CudaError> {
        if !core::ptr::eq(stream.driver(), self.driver) {
            return Err(CudaError::ForeignDriver);
        }
        // SAFETY: every field is an integer or a raw pointer (in a union): all-zero
        // bytes are a valid value.
        let mut params: CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS = unsafe { core::mem::zeroed() };
        params.params.fence.value = value;
        self.used.set(true);
        // SAFETY: one live semaphore and one parameter block; a live stream.
        check(unsafe {
            self.driver.table().cuSignalExternalSemaphoresAsync()?(
                &self.raw,
                &params,
                1,
                stream.raw(),
            )
        })
    }

    /// Queues a wait on `stream` for `value` (a binary semaphore's is 0).
    fn queue_wait(&self, stream: &Stream<'_>, value: u64) -> Result<(), CudaError> {
        if !core::ptr::eq(stream.driver(), self.driver) {
            return Err(CudaError::ForeignDriver);
        }
        // SAFETY: as in `queue_signal`.
        let mut params: CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS = unsafe { core::mem::zeroed() };
        params.params.fence.value = value;
        self.used.set(true);
        // SAFETY: one live semaphore and one parameter block; a live stream.
        check(unsafe {
            self.driver.table().cuWaitExternalSemaphoresAsync()?(
                &self.raw,
                &params,
                1,
                stream.raw(),
            )
        })
    }
}

impl ExternalSemaphore<'_, Binary> {
    /// Queues a signal on `stream` (`cuSignalExternalSemaphoresAsync`): once the work
    /// queued before it is done, the semaphore is signalled.
    pub fn signal(&self, stream: &Stream<'_>) -> Result<(), CudaError> {
        self.queue_signal(stream, 0)
    }

    /// Queues a wait on `stream` (`cuWaitExternalSemaphoresAsync`): the stream's later
    /// work starts once the semaphore is signalled, and the wait consumes the signal.
    /// A semaphore nobody signals stalls the stream — and whatever waits for it: the
    /// stream's drop, the semaphore's drop (it waits for its context's work) and the
    /// context's.
    pub fn wait(&self, stream: &Stream<'_>) -> Result<(), CudaError> {
        self.queue_wait(stream, 0)
    }
}

impl ExternalSemaphore<'_, Timeline> {
    /// Queues a signal of `value` on `stream`: once the work queued before it is done,
    /// the semaphore's value becomes `value`. A timeline's values only grow: a value
    /// not above the last one this handle signalled is refused
    /// ([`CudaError::InvalidArgument`]); signals from elsewhere are the import
    /// contract's business.
    pub fn signal(&self, stream: &Stream<'_>, value: u64) -> Result<(), CudaError> {
        if value <= self.signalled.get() {
            return Err(CudaError::InvalidArgument {
                parameter: "value",
                rule: "must be greater than the last value this semaphore signalled",
            });
        }
        self.queue_signal(stream, value)?;
        self.signalled.set(value);
        Ok(())
    }

    /// Queues a wait on `stream` until the semaphore's value is at least `value`. A
    /// value never reached stalls the stream, and what waits for it (as for a binary
    /// semaphore's `wait`).
    pub fn wait(&self, stream: &Stream<'_>, value: u64) -> Result<(), CudaError> {
        self.queue_wait(stream, value)
    }
}

impl<K: SemaphoreKind> Drop for ExternalSemaphore<'_, K> {
    fn drop(&mut self) {
        // Only streams of its own context reach it (a stream of a pushed context
        // needs the token mutably, which the semaphore borrows): waiting for that
        // context's work covers every operation queued on it.
        if self.used.get() && !crate::wait::context_settled(self.driver, self.ctx) {
            tracing::error!(
                "could not wait for the work of an external semaphore's context; leaving it alive"
            );
            return;
        }
        let Ok(destroy) = self.driver.table().cuDestroyExternalSemaphore() else {
            tracing::warn!("cuDestroyExternalSemaphore is not available; the semaphore leaks");
            return;
        };
        {
            let raw = self.raw;
            // SAFETY: this value owns the semaphore; no queued operation uses it any
            // more (its context's work is done, above).
            let r = crate::wait::retry_relaxed(self.driver, || unsafe { destroy(raw) });
            if check(r).is_err() {
                tracing::warn!(?r, "cuDestroyExternalSemaphore failed");
            } else {
                crate::leaks::destroyed(crate::leaks::Kind::ExternalSemaphores, raw);
            }
        }
    }
}

impl<'ctx> CurrentContext<'ctx> {
    /// Imports a semaphore another API exported as an opaque POSIX file descriptor
    /// (`cuImportExternalSemaphore`), as kind `K` ([`Binary`] or [`Timeline`]: the
    /// exporter's kind). On success the driver owns `fd`; on failure it comes back in
    /// the [`ImportError`](super::ImportError).
    ///
    /// # Safety
    ///
    /// `fd` refers to a semaphore of kind `K` that CUDA may import (a Vulkan export of
    /// an opaque descriptor, ...). What the semaphore orders is the caller's to keep:
    /// where the crate's views rely on it (external memory that another API writes
    /// between a wait and a signal, say), the caller ensures the other side keeps
    /// the protocol — signals only once its writes are done, and writes only after
    /// waiting for this side's signal — and that this side keeps the exporter's
    /// rules too (a binary semaphore is not signalled twice without a wait between,
    /// nor waited for with no signal to come; a timeline's value, which every handle
    /// of it may signal, only grows: this handle checks only its own signals).
    #[cfg(unix)]
    pub unsafe fn import_external_semaphore<K: SemaphoreKind>(
        &self,
        fd: std::os::fd::OwnedFd,
    ) -> Result<ExternalSemaphore<'_, K>, Box<super::ImportError>> {
        use std::os::fd::{AsRawFd, IntoRawFd};
        let fail = |error, fd| Box::new(super::ImportError { error, fd });
        let import = match self.driver().table().cuImportExternalSemaphore() {
            Ok(f) => f,
            Err(e) => return Err(fail(e, fd)),
        };
        // SAFETY: every field is an integer or a raw pointer (in a union): all-zero
        // bytes are a valid value.
        let mut desc: CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC = unsafe { core::mem::zeroed() };
        desc.type_ = K::HANDLE_TYPE;
        desc.handle.fd = fd.as_raw_fd();
        let mut raw = CUexternalSemaphore::NULL;
        // SAFETY: valid out- and in-pointers; the descriptor is open (owned by `fd`).
        match check(unsafe { import(&mut raw, &desc) }) {
            Ok(()) => {
                // The driver owns the descriptor now.
                let _ = fd.into_raw_fd();
                crate::leaks::created(crate::leaks::Kind::ExternalSemaphores, raw);
                Ok(ExternalSemaphore {
                    driver: self.driver(),
                    raw,
                    ctx: self.raw(),
                    used: Cell::new(false),
                    signalled: Cell::new(0),
                    _tied: PhantomData,
                    _k: PhantomData,
                })
            }
            Err(error) => Err(fail(error, fd)),
        }
    }
}
