//! Device memory shared between processes: a buffer's handle
//! (`cuIpcGetMemHandle`), and another process's memory opened here ([`IpcMemory`]:
//! `cuIpcOpenMemHandle`, `cuIpcCloseMemHandle`) with the views it lends.

use super::{Entry, IpcMemHandle, Key, enter, leave, refuse_open};
use crate::context::{CurrentContext, Tied};
use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::memory::{
    DeviceBuffer, DeviceCopy, DeviceSlice, DeviceSliceMut, bounds, exclusive, shared,
};
use crate::order::Mark;
use crate::sys::{CUcontext, CUdeviceptr, CUipcMem_flags, CUipcMemHandle};
use core::marker::PhantomData;
use core::ops::RangeBounds;

impl<T: DeviceCopy> DeviceBuffer<'_, T> {
    /// A handle another process may open to reach this buffer's memory
    /// (`cuIpcGetMemHandle`; see the [module docs](crate::ipc) for what that lets it
    /// do). The buffer stays this process's: dropping it frees the memory, and the
    /// other process's promise — the contract of
    /// [`open_ipc_memory`](CurrentContext::open_ipc_memory) — is to have closed it by
    /// then. [`CudaError::InvalidArgument`] for an empty buffer (it has no memory).
    pub fn ipc_handle(&self) -> Result<IpcMemHandle, CudaError> {
        if self.is_empty() || self.device_ptr() == 0 {
            return Err(CudaError::InvalidArgument {
                parameter: "self",
                rule: "an empty buffer has no memory to share",
            });
        }
        let mut h = CUipcMemHandle { reserved: [0; 64] };
        // SAFETY: a valid out-pointer; the buffer's base address, from `cuMemAlloc`.
        check(unsafe { self.driver().table().cuIpcGetMemHandle()?(&mut h, self.device_ptr()) })?;
        Ok(IpcMemHandle(h.reserved.map(|b| b as u8)))
    }
}

/// Device memory of another process, opened in this context: `size` bytes at
/// [`device_ptr`](Self::device_ptr). Closed when dropped, after this context's work.
pub struct IpcMemory<'a> {
    driver: &'static Driver,
    /// The context it was opened in: its work is what the close waits for.
    ctx: CUcontext,
    /// Its entry in the process's list of open handles.
    key: Key,
    ptr: CUdeviceptr,
    size: usize,
    /// The stream last queued work that uses it ([`crate::order`]).
    mark: Mark,
    _tied: Tied<'a>,
}

/// Its address and size; never its contents.
impl core::fmt::Debug for IpcMemory<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("IpcMemory")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("size", &self.size)
            .finish()
    }
}

impl<'ctx> CurrentContext<'ctx> {
    /// Opens another process's device memory in this context
    /// (`cuIpcOpenMemHandle`, with `CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS`), sized by
    /// the driver (`cuMemGetAddressRange`: the whole allocation the handle names).
    /// Opening a handle of this process is refused by the driver (NVIDIA:
    /// `CUDA_ERROR_INVALID_CONTEXT`; softcuda gives back the buffer's own address).
    ///
    /// A handle open here already — in any context, through any [`Driver`] value of
    /// the same driver library — is refused with [`CudaError::AlreadyMapped`] (the
    /// first opening's device addresses), before the driver is called: two openings
    /// would lend two exclusive views of the same bytes. So is an opening the driver
    /// maps at an address open here already (other bytes naming the same
    /// allocation): its reference is closed again. An opening that could not be
    /// closed (a failed wait in its drop, or a `mem::forget`) keeps its handle
    /// refused.
    ///
    /// The size is the mapping's as the driver reports it, which may exceed the
    /// exporter's buffer (NVIDIA may map a whole allocation granule): send the
    /// length with the handle, and view only that.
    ///
    /// # Safety
    /// The handle must come from another process (a driver that lets a process open
    /// its own handle, as softcuda does, gives back a buffer's own address: a second
    /// owner of memory a [`DeviceBuffer`] owns). The process that made it must keep
    /// the allocation alive — not free it, not exit — until the returned
    /// [`IpcMemory`] is dropped here. No other opening of the same allocation in this
    /// process that this copy of the crate cannot see (another copy of the crate,
    /// another library) may access the same bytes at a time that overlaps an access
    /// through this one, unless the caller orders them. The usual way to keep this:
    /// open each handle in one place, and have the exporter free the buffer only
    /// after this process said (through the program's own channel) that it closed
    /// it. What the other process writes while this one reads is not undefined
    /// behaviour here (see the [module docs](crate::ipc)), only wrong values.
    ///
    /// [`Driver`]: crate::Driver
    pub unsafe fn open_ipc_memory(
        &self,
        handle: &IpcMemHandle,
    ) -> Result<IpcMemory<'_>, CudaError> {
        let t = self.driver().table();
        // Resolved first: an opening that could not be closed would leak it.
        let (open, close, range) = (
            t.cuIpcOpenMemHandle()?,
            t.cuIpcCloseMemHandle()?,
            t.cuMemGetAddressRange()?,
        );
        let key = (open as usize, handle.0);
        refuse_open(&key)?;
        let h = CUipcMemHandle {
            reserved: handle.0.map(|b| b as core::ffi::c_char),
        };
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: a valid out-pointer; the driver checks the handle's bytes; the
        // caller promises the memory stays alive while it is open.
        check(unsafe {
            open(
                &mut ptr,
                h,
                CUipcMem_flags::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS.bits(),
            )
        })?;
        let (mut base, mut size): (CUdeviceptr, usize) = (0, 0);
        // SAFETY: valid out-pointers; an address the driver just mapped.
        let r = unsafe { range(&mut base, &mut size, ptr) };
        let sized = match check(r) {
            Ok(()) if base == ptr && size > 0 => Ok(size),
            // Not the start of an allocation: not what an opening maps.
            Ok(()) => Err(CudaError::Driver(
                crate::sys::CUresult::CUDA_ERROR_INVALID_VALUE,
            )),
            Err(e) => Err(e),
        };
        let entered = sized.and_then(|size| enter(Entry { key, ptr, size }).map(|()| size));
        let size = match entered {
            Ok(size) => size,
            Err(e) => {
                // SAFETY: the reference this opening took, used by nothing (an opening
                // of the same allocation that is in use holds its own).
                let r = unsafe { close(ptr) };
                if check(r).is_err() {
                    tracing::warn!(?r, "cuIpcCloseMemHandle failed for a refused opening");
                }
                return Err(e);
            }
        };
        crate::leaks::created(crate::leaks::Kind::IpcMemory, ptr);
        Ok(IpcMemory {
            driver: self.driver(),
            ctx: self.raw(),
            key,
            ptr,
            size,
            mark: Mark::new(),
            _tied: PhantomData,
        })
    }
}

impl IpcMemory<'_> {
    /// Bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Its address in this process (not the exporter's).
    pub fn device_ptr(&self) -> CUdeviceptr {
        self.ptr
    }

    /// The address and length of elements `range` of the memory seen as `T`s.
    fn elements<T>(
        &self,
        range: impl RangeBounds<usize>,
    ) -> Result<(CUdeviceptr, usize), CudaError> {
        let elem = core::mem::size_of::<T>();
        let capacity = self.size.checked_div(elem).unwrap_or(0);
        let (start, end) = bounds(range, capacity)?;
        Ok((self.ptr + (start * elem) as u64, end - start))
    }

    /// A shared view of elements `range` of the memory seen as `T`s (element `i` at
    /// byte `i * size_of::<T>()`); [`CudaError::OutOfRange`] past its size.
    pub fn slice<T: DeviceCopy>(
        &self,
        range: impl RangeBounds<usize>,
    ) -> Result<DeviceSlice<'_, T>, CudaError> {
        let (ptr, len) = self.elements::<T>(range)?;
        Ok(shared(self.driver, ptr, len).marked(Some(&self.mark)))
    }

    /// An exclusive view of elements `range`, as [`slice`](Self::slice).
    pub fn slice_mut<T: DeviceCopy>(
        &mut self,
        range: impl RangeBounds<usize>,
    ) -> Result<DeviceSliceMut<'_, T>, CudaError> {
        let (ptr, len) = self.elements::<T>(range)?;
        Ok(exclusive(self.driver, ptr, len).marked(Some(&self.mark)))
    }
}

impl Drop for IpcMemory<'_> {
    fn drop(&mut self) {
        if !crate::wait::context_settled(self.driver, self.ctx) {
            // Work that may use the memory could not be waited for: closing now could
            // let it reach whatever is mapped here later. Leave it open.
            tracing::error!(
                ptr = self.ptr,
                "could not wait for the work of an IPC opening's context; leaving it open"
            );
            return;
        }
        if let Ok(close) = self.driver.table().cuIpcCloseMemHandle() {
            // SAFETY: this value owns the opening; its work has finished (settled
            // above) and no view exists (it is being dropped).
            let r = crate::wait::retry_relaxed(self.driver, || unsafe { close(self.ptr) });
            if check(r).is_err() {
                tracing::warn!(?r, "cuIpcCloseMemHandle failed");
            } else {
                crate::leaks::destroyed(crate::leaks::Kind::IpcMemory, self.ptr);
                // Only now may the handle be opened again: until the close, work
                // queued through this opening may still use the bytes.
                leave(&self.key);
            }
        }
    }
}
