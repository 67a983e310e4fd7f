//! Physical device memory with no address of its own ([`PhysicalMemory`],
//! `cuMemCreate`/`cuMemRelease`), and sharing it through a POSIX file descriptor
//! (`cuMemExportToShareableHandle`/`cuMemImportFromShareableHandle`).

use super::{properties, whole};
use crate::context::{CurrentContext, Tied};
use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::sys::{CUmemAllocationHandleType, CUmemGenericAllocationHandle};
use core::marker::PhantomData;

/// `size` bytes of memory on a device, not mapped anywhere: map it into an
/// [`AddressRange`](super::AddressRange) to use it. Released when dropped.
pub struct PhysicalMemory<'a> {
    pub(super) driver: &'static Driver,
    pub(super) handle: CUmemGenericAllocationHandle,
    pub(super) size: usize,
    pub(super) device: i32,
    /// Whether it may be exported as a POSIX file descriptor.
    shareable: bool,
    _tied: Tied<'a>,
}

/// Its handle, size and device; never its contents.
impl core::fmt::Debug for PhysicalMemory<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PhysicalMemory")
            .field("handle", &format_args!("{:#x}", self.handle))
            .field("size", &self.size)
            .field("device", &self.device)
            .finish()
    }
}

impl PhysicalMemory<'_> {
    /// Bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The raw allocation handle, for calls this crate does not wrap. Releasing it,
    /// or mapping it anywhere, is the caller's `unsafe` business.
    pub fn raw(&self) -> CUmemGenericAllocationHandle {
        self.handle
    }

    /// A POSIX file descriptor for the memory (`cuMemExportToShareableHandle`), which
    /// another process may import (see [`CurrentContext::import_physical`]). Only
    /// memory created with [`CurrentContext::create_physical_shareable`] can be
    /// exported ([`CudaError::InvalidArgument`] otherwise). What the other process
    /// then does with the memory is outside this crate's proof.
    #[cfg(unix)]
    pub fn export_fd(&self) -> Result<std::os::fd::OwnedFd, CudaError> {
        use std::os::fd::FromRawFd;
        if !self.shareable {
            return Err(CudaError::InvalidArgument {
                parameter: "self",
                rule: "only memory created with create_physical_shareable can be exported",
            });
        }
        let mut fd: core::ffi::c_int = -1;
        // SAFETY: for a POSIX file descriptor the out-pointer is an `int`; a live handle.
        check(unsafe {
            self.driver.table().cuMemExportToShareableHandle()?(
                (&mut fd as *mut core::ffi::c_int).cast(),
                self.handle,
                CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                0,
            )
        })?;
        if fd < 0 {
            return Err(CudaError::Driver(
                crate::sys::CUresult::CUDA_ERROR_INVALID_VALUE,
            ));
        }
        // SAFETY: the driver made a new descriptor for the caller, who now owns it.
        Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
    }
}

impl Drop for PhysicalMemory<'_> {
    fn drop(&mut self) {
        if let Ok(release) = self.driver.table().cuMemRelease() {
            let handle = self.handle;
            // SAFETY: this value owns the handle; once released, nothing uses it. If the
            // memory is still mapped somewhere (imported memory the exporter maps, or
            // memory a range could not unmap), the driver keeps it until it is
            // unmapped.
            let r = crate::wait::retry_relaxed(self.driver, || unsafe { release(handle) });
            if check(r).is_err() {
                tracing::warn!(?r, "cuMemRelease failed");
            } else {
                crate::leaks::destroyed(crate::leaks::Kind::PhysicalMemory, handle);
            }
        }
    }
}

impl<'ctx> CurrentContext<'ctx> {
    /// `size` bytes of physical memory on this context's device (`cuMemCreate`);
    /// `size` must be a non-zero multiple of the [`granularity`](Self::granularity)
    /// ([`CudaError::InvalidArgument`] naming `size`). Its contents are unspecified
    /// until written.
    pub fn create_physical(&self, size: usize) -> Result<PhysicalMemory<'_>, CudaError> {
        self.create(size, false)
    }

    /// As [`create_physical`](Self::create_physical), exportable as a POSIX file
    /// descriptor ([`PhysicalMemory::export_fd`]).
    #[cfg(unix)]
    pub fn create_physical_shareable(&self, size: usize) -> Result<PhysicalMemory<'_>, CudaError> {
        self.create(size, true)
    }

    fn create(&self, size: usize, shareable: bool) -> Result<PhysicalMemory<'_>, CudaError> {
        let granularity = self.granularity()?.minimum();
        let size = whole(size, granularity, "size")?;
        let device = self.device()?.raw();
        let handles = if shareable {
            CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
        } else {
            CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE
        };
        let prop = properties(device, handles);
        let mut handle: CUmemGenericAllocationHandle = 0;
        // SAFETY: valid out- and in-pointers; flags must be 0.
        check(unsafe { self.driver().table().cuMemCreate()?(&mut handle, size, &prop, 0) })?;
        crate::leaks::created(crate::leaks::Kind::PhysicalMemory, handle);
        Ok(PhysicalMemory {
            driver: self.driver(),
            handle,
            size,
            device,
            shareable,
            _tied: PhantomData,
        })
    }

    /// Physical memory another allocation exported as a POSIX file descriptor
    /// (`cuMemImportFromShareableHandle`), of `size` bytes (the exporter's size,
    /// passed along out of band: the handle does not carry it; the driver refuses to
    /// map more than the allocation holds). The descriptor stays the caller's.
    ///
    /// # Safety
    ///
    /// The imported memory is the exporter's memory: the crate cannot see other
    /// mappings of it, and each range's host-order marks (the README's "Ordered host
    /// access") order only the accesses through that range. The caller ensures that no access
    /// through another mapping of the same allocation — the exporter's own range,
    /// another import, in this process (safe code included) or another one —
    /// overlaps in time an access to the same bytes through memory mapped from the
    /// returned value, unless both only read, or the two are ordered by
    /// synchronization the caller provides (events, stream waits, host waits).
    /// Exclusive views ([`DeviceSliceMut`](crate::memory::DeviceSliceMut)) otherwise
    /// lose the exclusivity they promise.
    #[cfg(unix)]
    pub unsafe fn import_physical(
        &self,
        fd: std::os::fd::BorrowedFd<'_>,
        size: usize,
    ) -> Result<PhysicalMemory<'_>, CudaError> {
        use std::os::fd::AsRawFd;
        let granularity = self.granularity()?.minimum();
        let size = whole(size, granularity, "size")?;
        let mut handle: CUmemGenericAllocationHandle = 0;
        // SAFETY: a POSIX descriptor travels as the pointer-sized integer itself, as
        // cuda.h documents; the driver duplicates what it keeps.
        check(unsafe {
            self.driver().table().cuMemImportFromShareableHandle()?(
                &mut handle,
                fd.as_raw_fd() as isize as *mut core::ffi::c_void,
                CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            )
        })?;
        crate::leaks::created(crate::leaks::Kind::PhysicalMemory, handle);
        let mut memory = PhysicalMemory {
            driver: self.driver(),
            handle,
            size,
            device: -1,
            shareable: false,
            _tied: PhantomData,
        };
        // The device the exporter allocated on (a range maps memory of its own device
        // only); released by `memory`'s drop if the question fails.
        let mut prop = properties(-1, CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE);
        // SAFETY: a valid out-pointer; a live handle.
        check(unsafe {
            self.driver()
                .table()
                .cuMemGetAllocationPropertiesFromHandle()?(&mut prop, handle)
        })?;
        memory.device = prop.location.id;
        Ok(memory)
    }
}
