//! Imported external memory ([`ExternalMemory`]) and the device buffers mapped from
//! it ([`ExternalBuffer`]).

use crate::context::{CurrentContext, Tied};
use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::memory::{self, DeviceCopy, DeviceRead, DeviceSlice, DeviceSliceMut, DeviceWrite};
use crate::order::Mark;
use crate::sys::{
    CUDA_EXTERNAL_MEMORY_BUFFER_DESC, CUDA_EXTERNAL_MEMORY_DEDICATED,
    CUDA_EXTERNAL_MEMORY_HANDLE_DESC, CUdeviceptr, CUexternalMemory, CUexternalMemoryHandleType,
};
use core::cell::RefCell;
use core::marker::PhantomData;

/// An imported memory object of `size` bytes; map buffers of it with
/// [`buffer`](Self::buffer). Destroyed when dropped.
pub struct ExternalMemory<'a> {
    driver: &'static Driver,
    raw: CUexternalMemory,
    size: u64,
    /// The byte ranges its live buffers map: no two overlap, so no two buffers (each
    /// with its own host-order mark) alias. A forgotten buffer keeps its range.
    mapped: RefCell<Vec<(u64, u64)>>,
    _tied: Tied<'a>,
}

/// Its handle and size.
impl core::fmt::Debug for ExternalMemory<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ExternalMemory")
            .field("raw", &self.raw)
            .field("size", &self.size)
            .finish()
    }
}

/// `len` elements of `T` of an [`ExternalMemory`], mapped as device memory; freed when
/// dropped. Used like a [`DeviceBuffer`](crate::memory::DeviceBuffer).
pub struct ExternalBuffer<'m, T: DeviceCopy> {
    driver: &'static Driver,
    ptr: CUdeviceptr,
    len: usize,
    /// The stream last queued work that uses it ([`crate::order`]).
    mark: Mark,
    /// Its object's list of mapped ranges, and its own entry there.
    mapped: &'m RefCell<Vec<(u64, u64)>>,
    range: (u64, u64),
    _t: PhantomData<(T, *const ())>,
}

memory::extent!(owned ExternalBuffer);

impl<T: DeviceCopy> ExternalBuffer<'_, T> {
    /// Any stream may use it (`cuMemFree` waits for all of them).
    pub(crate) fn stream_order(&self) -> Option<crate::sys::CUstream> {
        None
    }

    /// Its mark: work queued on a stream marks it, host accesses wait for that.
    pub(crate) fn host_mark(&self) -> Option<&Mark> {
        Some(&self.mark)
    }
}

impl<T: DeviceCopy> crate::memory::sealed::Memory for ExternalBuffer<'_, T> {}
impl<T: DeviceCopy> DeviceRead<T> for ExternalBuffer<'_, T> {
    fn view(&self) -> DeviceSlice<'_, T> {
        self.as_slice()
    }
}
impl<T: DeviceCopy> DeviceWrite<T> for ExternalBuffer<'_, T> {
    fn view_mut(&mut self) -> DeviceSliceMut<'_, T> {
        self.as_mut_slice()
    }
}

impl<T: DeviceCopy> Drop for ExternalBuffer<'_, T> {
    fn drop(&mut self) {
        // SAFETY: this value owns the mapping (`cuMemFree` is how a mapped buffer of
        // external memory is freed), and nothing uses it after this.
        unsafe {
            memory::free(
                self.driver(),
                self.ptr,
                crate::leaks::Kind::DeviceAllocations,
            )
        };
        if let Ok(mut mapped) = self.mapped.try_borrow_mut() {
            mapped.retain(|r| *r != self.range);
        }
    }
}

impl ExternalMemory<'_> {
    /// Bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// `len` elements of `T` from byte `offset` of the object, mapped as device
    /// memory (`cuExternalMemoryGetMappedBuffer`). Checked first: `len` is not 0,
    /// `offset` is aligned for `T` ([`CudaError::InvalidArgument`]), the bytes lie in
    /// the object ([`CudaError::BytesOutOfRange`]) and overlap no live buffer of it
    /// ([`CudaError::AlreadyMapped`]: two buffers of the same bytes would be two
    /// exclusive views of them). The driver may want a coarser alignment of `offset`
    /// (a page on softcuda) and says so.
    pub fn buffer<T: DeviceCopy>(
        &self,
        offset: u64,
        len: usize,
    ) -> Result<ExternalBuffer<'_, T>, CudaError> {
        let bytes = memory::bytes::<T>(len)?;
        if bytes == 0 {
            return Err(CudaError::InvalidArgument {
                parameter: "len",
                rule: "must be at least one element of a type with a size",
            });
        }
        if !offset.is_multiple_of(core::mem::align_of::<T>() as u64) {
            return Err(CudaError::InvalidArgument {
                parameter: "offset",
                rule: "must be aligned for the element type",
            });
        }
        let Some(end) = offset.checked_add(bytes as u64).filter(|&e| e <= self.size) else {
            return Err(CudaError::BytesOutOfRange {
                start: offset,
                end: offset.saturating_add(bytes as u64),
                len: self.size,
            });
        };
        let mut mapped = self
            .mapped
            .try_borrow_mut()
            .map_err(|_| CudaError::InvalidArgument {
                parameter: "self",
                rule: "a buffer cannot be made while a buffer of it is being dropped",
            })?;
        if let Some(&(start, stop)) = mapped.iter().find(|(s, e)| *s < end && offset < *e) {
            let to_usize = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
            return Err(CudaError::AlreadyMapped {
                start: to_usize(start),
                end: to_usize(stop),
            });
        }
        let desc = CUDA_EXTERNAL_MEMORY_BUFFER_DESC {
            offset,
            size: bytes as u64,
            flags: 0,
            reserved: [0; 16],
        };
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: valid out- and in-pointers; a live object.
        check(unsafe {
            self.driver.table().cuExternalMemoryGetMappedBuffer()?(&mut ptr, self.raw, &desc)
        })?;
        crate::leaks::created(crate::leaks::Kind::DeviceAllocations, ptr);
        mapped.push((offset, end));
        drop(mapped);
        let buffer = ExternalBuffer {
            driver: self.driver,
            ptr,
            len,
            mark: Mark::new(),
            mapped: &self.mapped,
            range: (offset, end),
            _t: PhantomData,
        };
        if ptr == 0 || !ptr.is_multiple_of(core::mem::align_of::<T>() as u64) {
            // Freed by the buffer's drop.
            return Err(CudaError::Driver(
                crate::sys::CUresult::CUDA_ERROR_INVALID_VALUE,
            ));
        }
        Ok(buffer)
    }
}

impl Drop for ExternalMemory<'_> {
    fn drop(&mut self) {
        let Ok(destroy) = self.driver.table().cuDestroyExternalMemory() else {
            tracing::warn!("cuDestroyExternalMemory is not available; the object leaks");
            return;
        };
        {
            let raw = self.raw;
            // SAFETY: this value owns the object; every buffer of it is gone (they
            // borrow it).
            let r = crate::wait::retry_relaxed(self.driver, || unsafe { destroy(raw) });
            if check(r).is_err() {
                tracing::warn!(?r, "cuDestroyExternalMemory failed");
            } else {
                crate::leaks::destroyed(crate::leaks::Kind::ExternalMemory, raw);
            }
        }
    }
}

impl<'ctx> CurrentContext<'ctx> {
    /// Imports `size` bytes of memory another API exported as an opaque POSIX file
    /// descriptor (`cuImportExternalMemory`, `CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD`;
    /// `dedicated`: the exporter made a dedicated allocation). On success the driver
    /// owns `fd`; on failure it comes back in the [`ImportError`](super::ImportError).
    ///
    /// # Safety
    ///
    /// `fd` refers to a memory object of at least `size` bytes that CUDA may import
    /// (a Vulkan export of an opaque descriptor, a CUDA allocation's
    /// `PhysicalMemory::export_fd`, ...). Other users of the object — the exporter
    /// (safe code of this process included), other imports, other processes — are
    /// outside the crate's sight, and a buffer's host-order marks order only the
    /// accesses through that buffer: the caller ensures that no access through them
    /// overlaps in time an access to the same bytes through a buffer of the returned
    /// object (a view, a kernel, a copy), unless both only read, or the two are
    /// ordered by synchronization the caller provides (an
    /// [`ExternalSemaphore`](super::ExternalSemaphore), events, host waits). Exclusive
    /// views otherwise lose the exclusivity they promise.
    #[cfg(unix)]
    pub unsafe fn import_external_memory(
        &self,
        fd: std::os::fd::OwnedFd,
        size: u64,
        dedicated: bool,
    ) -> Result<ExternalMemory<'_>, Box<super::ImportError>> {
        use std::os::fd::{AsRawFd, IntoRawFd};
        let fail = |error, fd| Box::new(super::ImportError { error, fd });
        if size == 0 {
            let error = CudaError::InvalidArgument {
                parameter: "size",
                rule: "must not be zero",
            };
            return Err(fail(error, fd));
        }
        let import = match self.driver().table().cuImportExternalMemory() {
            Ok(f) => f,
            Err(e) => return Err(fail(e, fd)),
        };
        // SAFETY: every field is an integer or a raw pointer (in a union): all-zero
        // bytes are a valid value.
        let mut desc: CUDA_EXTERNAL_MEMORY_HANDLE_DESC = unsafe { core::mem::zeroed() };
        desc.type_ = CUexternalMemoryHandleType::CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
        desc.handle.fd = fd.as_raw_fd();
        desc.size = size;
        desc.flags = if dedicated {
            CUDA_EXTERNAL_MEMORY_DEDICATED
        } else {
            0
        };
        let mut raw = CUexternalMemory::NULL;
        // SAFETY: valid out- and in-pointers; the descriptor is open (owned by `fd`).
        match check(unsafe { import(&mut raw, &desc) }) {
            Ok(()) => {
                // The driver owns the descriptor now.
                let _ = fd.into_raw_fd();
                crate::leaks::created(crate::leaks::Kind::ExternalMemory, raw);
                Ok(ExternalMemory {
                    driver: self.driver(),
                    raw,
                    size,
                    mapped: RefCell::new(Vec::new()),
                    _tied: PhantomData,
                })
            }
            Err(error) => Err(fail(error, fd)),
        }
    }
}
