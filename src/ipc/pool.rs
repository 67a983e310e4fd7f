//! Memory pools shared between processes: a shareable pool's file descriptor
//! (`cuMemPoolExportToShareableHandle`) and its allocations' export data
//! (`cuMemPoolExportPointer`, [`PoolPointer`]); on the other side, the imported pool
//! ([`ImportedPool`]: `cuMemPoolImportFromShareableHandle`) and the allocations
//! imported from it ([`ImportedBuffer`]: `cuMemPoolImportPointer`, freed with
//! `cuMemFree`).

use super::{Entry, enter, leave, refuse_open};

use crate::context::{CurrentContext, Tied};
use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::memory::{self, DeviceCopy, DeviceRead, DeviceSlice, DeviceSliceMut, DeviceWrite};
use crate::order::Mark;
use crate::pool::{MemoryPool, StreamBuffer};
use crate::sys::{
    CUcontext, CUdeviceptr, CUmemAllocationHandleType, CUmemPoolPtrExportData, CUmemoryPool,
};
use core::marker::PhantomData;

/// What names one allocation of a shareable pool to another process that imported
/// the pool (`CUmemPoolPtrExportData`): 64 opaque bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PoolPointer([u8; 64]);

handle_bytes!(PoolPointer);

impl MemoryPool<'_> {
    /// A POSIX file descriptor naming the pool, for another process to import
    /// ([`CurrentContext::import_memory_pool`]). Only a pool made with
    /// [`CurrentContext::create_shareable_memory_pool`] can be exported
    /// ([`CudaError::InvalidArgument`] otherwise). The allocations stay this
    /// process's: each is shared only through its [`PoolPointer`].
    pub fn export_fd(&self) -> Result<std::os::fd::OwnedFd, CudaError> {
        use std::os::fd::FromRawFd;
        if !self.is_shareable() {
            return Err(CudaError::InvalidArgument {
                parameter: "self",
                rule: "only a pool made with create_shareable_memory_pool can be exported",
            });
        }
        let mut fd: core::ffi::c_int = -1;
        // SAFETY: for a POSIX file descriptor the out-pointer is an `int`; a live pool.
        check(unsafe {
            self.driver().table().cuMemPoolExportToShareableHandle()?(
                (&mut fd as *mut core::ffi::c_int).cast(),
                self.raw(),
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

impl<T: DeviceCopy> StreamBuffer<'_, T> {
    /// The export data of this allocation (`cuMemPoolExportPointer`), for a process
    /// that imported its pool. Its pool must be shareable (the driver refuses
    /// others). The buffer stays this process's: freeing it (its drop, or
    /// `free_async`) is the importers' deadline, as their contract says. Send it once
    /// the stream has passed the allocation (synchronize it first): the importer may
    /// not touch the memory before.
    pub fn pool_pointer(&self) -> Result<PoolPointer, CudaError> {
        let mut data = CUmemPoolPtrExportData { reserved: [0; 64] };
        // SAFETY: a valid out-pointer; the start of a live pool allocation.
        check(unsafe {
            self.driver().table().cuMemPoolExportPointer()?(&mut data, self.device_ptr())
        })?;
        Ok(PoolPointer(data.reserved))
    }
}

/// A pool of another process, imported here: it only imports that process's
/// allocations ([`import`](Self::import)), never allocates. Released when dropped.
pub struct ImportedPool<'a> {
    driver: &'static Driver,
    raw: CUmemoryPool,
    /// The context it was imported in: what its imports are mapped into, and whose
    /// work their drop waits for.
    ctx: CUcontext,
    _tied: Tied<'a>,
}

impl core::fmt::Debug for ImportedPool<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ImportedPool")
            .field("raw", &self.raw)
            .finish()
    }
}

impl<'ctx> CurrentContext<'ctx> {
    /// Imports another process's shareable pool from its file descriptor
    /// (`cuMemPoolImportFromShareableHandle`; the descriptor stays the caller's).
    ///
    /// # Safety
    /// `fd` is a descriptor [`MemoryPool::export_fd`] (or `cuMemPoolExportToShareableHandle`)
    /// made in another process, whose pool stays alive — not destroyed, the process
    /// not exited — until the returned pool and everything imported from it are
    /// dropped here; and the pool is imported at most once at a time in this process
    /// (the driver may hand a second import the same handle, which the first one's
    /// drop would destroy).
    pub unsafe fn import_memory_pool(
        &self,
        fd: std::os::fd::BorrowedFd<'_>,
    ) -> Result<ImportedPool<'_>, CudaError> {
        use std::os::fd::AsRawFd;
        let mut raw = CUmemoryPool::NULL;
        // SAFETY: for a POSIX file descriptor the handle is the `int` itself, passed as
        // a pointer-sized value; a valid out-pointer; the caller vouches for the fd.
        check(unsafe {
            self.driver().table().cuMemPoolImportFromShareableHandle()?(
                &mut raw,
                fd.as_raw_fd() as isize as *mut core::ffi::c_void,
                CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                0,
            )
        })?;
        crate::leaks::created(crate::leaks::Kind::MemoryPools, raw);
        Ok(ImportedPool {
            driver: self.driver(),
            raw,
            ctx: self.raw(),
            _tied: PhantomData,
        })
    }
}

impl Drop for ImportedPool<'_> {
    fn drop(&mut self) {
        if let Ok(destroy) = self.driver.table().cuMemPoolDestroy() {
            // SAFETY: this value owns the imported pool; what was imported from it
            // borrows it, so is gone.
            let r = crate::wait::retry_relaxed(self.driver, || unsafe { destroy(self.raw) });
            if check(r).is_err() {
                tracing::warn!(?r, "cuMemPoolDestroy failed for an imported pool");
            } else {
                crate::leaks::destroyed(crate::leaks::Kind::MemoryPools, self.raw);
            }
        }
    }
}

/// `len` elements of `T` of another process's pool allocation, imported here; used
/// like a [`DeviceBuffer`](crate::memory::DeviceBuffer), unmapped when dropped
/// (`cuMemFree`, after the context's work: for pool memory NVIDIA's `cuMemFree` does
/// not wait by itself).
pub struct ImportedBuffer<'p, T: DeviceCopy> {
    driver: &'static Driver,
    /// The context it is mapped into: its work is what the drop waits for.
    ctx: CUcontext,
    ptr: CUdeviceptr,
    len: usize,
    /// Its entry in the process's list of open imports.
    key: super::Key,
    /// The stream last queued work that uses it ([`crate::order`]).
    mark: Mark,
    _b: PhantomData<(&'p (), *const (), T)>,
}

memory::extent!(owned ImportedBuffer);

impl<T: DeviceCopy> ImportedBuffer<'_, T> {
    /// Any stream of its context may use it (the drop waits for all of them).
    pub(crate) fn stream_order(&self) -> Option<crate::sys::CUstream> {
        None
    }

    /// Its mark: work queued on a stream marks it, host accesses wait for that.
    pub(crate) fn host_mark(&self) -> Option<&Mark> {
        Some(&self.mark)
    }
}

impl<T: DeviceCopy> crate::memory::sealed::Memory for ImportedBuffer<'_, T> {}
impl<T: DeviceCopy> DeviceRead<T> for ImportedBuffer<'_, T> {
    fn view(&self) -> DeviceSlice<'_, T> {
        self.as_slice()
    }
}
impl<T: DeviceCopy> DeviceWrite<T> for ImportedBuffer<'_, T> {
    fn view_mut(&mut self) -> DeviceSliceMut<'_, T> {
        self.as_mut_slice()
    }
}

impl ImportedPool<'_> {
    /// The driver's handle.
    pub fn raw(&self) -> CUmemoryPool {
        self.raw
    }

    /// Imports the allocation `pointer` names as `len` elements of `T`
    /// (`cuMemPoolImportPointer`). `len` must be at least one element of a type with
    /// a size, and the address aligned for `T` ([`CudaError::InvalidArgument`]); the
    /// allocation must hold it (`cuMemGetAddressRange`; [`CudaError::BytesOutOfRange`]).
    /// An allocation imported here already and not yet dropped is
    /// [`CudaError::AlreadyMapped`] — the same bytes before the driver is asked, or
    /// the same address after (its reference is freed again): two imports would
    /// lend two exclusive views of the same bytes.
    ///
    /// # Safety
    /// `pointer` holds exactly the bytes the exporter's
    /// [`pool_pointer`](StreamBuffer::pool_pointer) (`cuMemPoolExportPointer`) gave for
    /// an allocation of the pool this was imported from, sent after the exporter's
    /// stream passed the allocation (NVIDIA: the memory must not be accessed before
    /// the allocation completes — synchronize the stream before sending). Its process
    /// keeps the allocation — not freed, the process not exited — until the returned
    /// buffer is dropped here, and no opening of it this copy of the crate cannot see
    /// (another copy, another library) accesses the same bytes at an overlapping time
    /// unless the caller orders them.
    pub unsafe fn import<T: DeviceCopy>(
        &self,
        pointer: &PoolPointer,
        len: usize,
    ) -> Result<ImportedBuffer<'_, T>, CudaError> {
        let bytes = memory::bytes::<T>(len)?;
        if bytes == 0 {
            return Err(CudaError::InvalidArgument {
                parameter: "len",
                rule: "must be at least one element of a type with a size",
            });
        }
        let t = self.driver.table();
        // Resolved first: an import that could not be freed would leak it.
        let (import, free, range) = (
            t.cuMemPoolImportPointer()?,
            t.cuMemFree()?,
            t.cuMemGetAddressRange()?,
        );
        let key = (import as usize, pointer.0);
        refuse_open(&key)?;
        let mut data = CUmemPoolPtrExportData {
            reserved: pointer.0,
        };
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: a valid out-pointer; a live imported pool; the driver checks the
        // data; the caller vouches for the allocation's lifetime.
        check(unsafe { import(&mut ptr, self.raw, &mut data) })?;
        let (mut base, mut size): (CUdeviceptr, usize) = (0, 0);
        // SAFETY: valid out-pointers; an address the driver just mapped.
        let r = unsafe { range(&mut base, &mut size, ptr) };
        let fits = match check(r) {
            Ok(()) if !(ptr as usize).is_multiple_of(align_of::<T>()) => {
                Err(CudaError::InvalidArgument {
                    parameter: "T",
                    rule: "the imported address is not aligned for the element type",
                })
            }
            Ok(()) if base == ptr && bytes <= size => Ok(()),
            Ok(()) => Err(CudaError::BytesOutOfRange {
                start: ptr.saturating_sub(base),
                end: ptr.saturating_sub(base).saturating_add(bytes as u64),
                len: size as u64,
            }),
            Err(e) => Err(e),
        };
        if let Err(e) = fits.and_then(|()| enter(Entry { key, ptr, size })) {
            // SAFETY: the reference this import took, used by nothing (an import of the
            // same allocation that is in use holds its own).
            let r = unsafe { free(ptr) };
            if check(r).is_err() {
                tracing::warn!(?r, "cuMemFree failed for a refused pool import");
            }
            return Err(e);
        }
        crate::leaks::created(crate::leaks::Kind::PoolImports, ptr);
        Ok(ImportedBuffer {
            driver: self.driver,
            ctx: self.ctx,
            ptr,
            len,
            key,
            mark: Mark::new(),
            _b: PhantomData,
        })
    }
}

impl<T: DeviceCopy> Drop for ImportedBuffer<'_, T> {
    fn drop(&mut self) {
        let driver = self.driver();
        // NVIDIA's `cuMemFree` of pool memory does not wait for the work that uses it:
        // wait for the context's first, as an opening's close does.
        if !crate::wait::context_settled(driver, self.ctx) {
            tracing::error!(
                ptr = self.ptr,
                "could not wait for the work of an imported pool allocation's context; leaving it mapped"
            );
            return;
        }
        let Ok(free) = driver.table().cuMemFree() else {
            return;
        };
        // SAFETY: this value owns the import; its context's work is done (settled
        // above); no view exists (it is being dropped).
        let r = crate::wait::retry_relaxed(driver, || unsafe { free(self.ptr) });
        if check(r).is_err() {
            tracing::warn!(?r, "cuMemFree failed for an imported pool allocation");
            return;
        }
        crate::leaks::destroyed(crate::leaks::Kind::PoolImports, self.ptr);
        leave(&self.key);
    }
}
