//! Stream-ordered memory: memory pools ([`MemoryPool`]: the device's default pool, or
//! pools made with [`CurrentContext::create_memory_pool`]) with their typed attributes,
//! trim and peer access; and allocations ordered on a stream ([`StreamBuffer`], from
//! [`Stream::alloc_async`] or [`Stream::alloc_from_pool`]), freed in the same order.
//!
//! A [`StreamBuffer`] is usable by the work queued on its stream after the allocation
//! — on that stream only: work queued with it on any other stream is refused
//! ([`CudaError::WrongStream`]), because its free is ordered after its own stream's
//! work alone (see [`StreamBuffer`]). [`StreamBuffer::free_async`] consumes it (CF22:
//! nothing can use it after its asynchronous free), and dropping it frees it the same
//! way.
//!
//! ```compile_fail
//! # fn f(s: &oxicuda_driver::stream::Stream<'_>) -> Result<(), oxicuda_driver::CudaError> {
//! // CF22: a stream-ordered buffer cannot be used after its asynchronous free.
//! let b = s.alloc_async::<f32>(16)?;
//! b.free_async()?;
//! let _ = b.len();
//! # Ok(()) }
//! ```

use crate::context::CurrentContext;
use crate::context::Tied;
use crate::device::Device;
use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::memory::{self, DeviceCopy, DeviceRead, DeviceSlice, DeviceSliceMut, DeviceWrite};
use crate::stream::Stream;
use crate::sys::{
    CUdeviceptr, CUmemAccess_flags, CUmemAccessDesc_v1, CUmemAllocationHandleType,
    CUmemAllocationType, CUmemLocation_v1, CUmemLocationType, CUmemPool_attribute,
    CUmemPoolProps_v1, CUmemoryPool, CUstream,
};
use core::ffi::{c_int, c_void};
use core::marker::PhantomData;
use core::mem::ManuallyDrop;

/// A memory pool of a device: its default pool (never destroyed) or one this crate
/// made (destroyed when dropped; allocations from it borrow it, so it outlives them).
pub struct MemoryPool<'ctx> {
    driver: &'static Driver,
    raw: CUmemoryPool,
    device: Device,
    owned: bool,
    /// Made with a POSIX file descriptor as its shareable handle type.
    shareable: bool,
    _tied: Tied<'ctx>,
}

impl core::fmt::Debug for MemoryPool<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MemoryPool")
            .field("raw", &self.raw)
            .field("device", &self.device)
            .field("owned", &self.owned)
            .finish()
    }
}

/// One of a pool's three reuse policies (`CU_MEMPOOL_ATTR_REUSE_*`): when memory freed
/// on one stream may serve an allocation on another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReusePolicy {
    /// Reuse when the allocating stream already waits (through events) for the free.
    FollowEventDependencies,
    /// Reuse when the free is known complete, whatever the streams.
    AllowOpportunistic,
    /// Let the driver insert the dependencies that make reuse safe.
    AllowInternalDependencies,
}

impl ReusePolicy {
    fn attribute(self) -> CUmemPool_attribute {
        match self {
            Self::FollowEventDependencies => {
                CUmemPool_attribute::CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES
            }
            Self::AllowOpportunistic => {
                CUmemPool_attribute::CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC
            }
            Self::AllowInternalDependencies => {
                CUmemPool_attribute::CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES
            }
        }
    }
}

/// Access of a device to a pool's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No access.
    None,
    /// Read only.
    Read,
    /// Read and write.
    ReadWrite,
}

impl Access {
    fn flags(self) -> CUmemAccess_flags {
        match self {
            Self::None => CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE,
            Self::Read => CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READ,
            Self::ReadWrite => CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        }
    }
}

/// A device's location, as the pool functions name it.
fn location(device: &Device) -> CUmemLocation_v1 {
    CUmemLocation_v1 {
        type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
        id: device.raw(),
    }
}

/// [`CudaError::ForeignDriver`] unless `device` belongs to `driver`.
pub(crate) fn same_driver(driver: &'static Driver, device: &Device) -> Result<(), CudaError> {
    if core::ptr::eq(driver, device.driver()) {
        Ok(())
    } else {
        Err(CudaError::ForeignDriver)
    }
}

impl<'ctx> CurrentContext<'ctx> {
    /// The default memory pool of the context's device (never destroyed; what
    /// [`Stream::alloc_async`] allocates from unless the device's current pool was
    /// changed). [`CudaError::DeviceLacks`] on a device without memory pools.
    pub fn default_memory_pool(&self) -> Result<MemoryPool<'_>, CudaError> {
        let device = self.pool_device()?;
        let mut raw = CUmemoryPool::NULL;
        // SAFETY: a valid out-pointer and a device of this driver.
        check(unsafe {
            self.driver().table().cuDeviceGetDefaultMemPool()?(&mut raw, device.raw())
        })?;
        Ok(MemoryPool {
            driver: self.driver(),
            raw,
            device,
            owned: false,
            shareable: false,
            _tied: PhantomData,
        })
    }

    /// Creates a pool of pinned memory on the context's device, with no shareable
    /// handle types. `max_size`: the most it may reserve, in bytes (`None`: no limit
    /// but the device's memory; `Some(0)` is [`CudaError::InvalidArgument`]).
    /// Destroyed when dropped. [`CudaError::DeviceLacks`] on a device without memory
    /// pools.
    pub fn create_memory_pool(&self, max_size: Option<usize>) -> Result<MemoryPool<'_>, CudaError> {
        self.make_pool(max_size, false)
    }

    /// [`create_memory_pool`](Self::create_memory_pool) for a pool another process may
    /// import: its shareable handle type is a POSIX file descriptor
    /// ([`MemoryPool::export_fd`], and [`StreamBuffer::pool_pointer`] for each
    /// allocation; see [`crate::ipc`]).
    pub fn create_shareable_memory_pool(
        &self,
        max_size: Option<usize>,
    ) -> Result<MemoryPool<'_>, CudaError> {
        self.make_pool(max_size, true)
    }

    fn make_pool(
        &self,
        max_size: Option<usize>,
        shareable: bool,
    ) -> Result<MemoryPool<'_>, CudaError> {
        if max_size == Some(0) {
            return Err(CudaError::InvalidArgument {
                parameter: "max_size",
                rule: "a pool's maximum size must be non-zero (None: no limit)",
            });
        }
        let device = self.pool_device()?;
        let props = CUmemPoolProps_v1 {
            allocType: CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
            handleTypes: if shareable {
                CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
            } else {
                CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE
            },
            location: location(&device),
            win32SecurityAttributes: core::ptr::null_mut(),
            maxSize: max_size.unwrap_or(0),
            usage: 0,
            reserved: [0; 54],
        };
        let mut raw = CUmemoryPool::NULL;
        // SAFETY: a valid out-pointer and pool properties; the context is current.
        check(unsafe { self.driver().table().cuMemPoolCreate()?(&mut raw, &props) })?;
        crate::leaks::created(crate::leaks::Kind::MemoryPools, raw);
        Ok(MemoryPool {
            driver: self.driver(),
            raw,
            device,
            owned: true,
            shareable,
            _tied: PhantomData,
        })
    }

    /// The context's device, if it supports memory pools.
    fn pool_device(&self) -> Result<Device, CudaError> {
        let device = self.device()?;
        let supported = device.attribute(
            crate::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
        )?;
        if supported == 0 {
            return Err(CudaError::DeviceLacks {
                feature: "memory pools (CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)",
            });
        }
        Ok(device)
    }
}

impl MemoryPool<'_> {
    /// The driver's handle.
    pub fn raw(&self) -> CUmemoryPool {
        self.raw
    }

    /// The device the pool's memory is on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Whether this is a pool this crate made (destroyed when dropped), not a default
    /// pool.
    pub fn is_owned(&self) -> bool {
        self.owned
    }

    /// Whether another process may import it (made with
    /// [`CurrentContext::create_shareable_memory_pool`]).
    pub fn is_shareable(&self) -> bool {
        self.shareable
    }

    /// Its driver.
    pub(crate) fn driver(&self) -> &'static Driver {
        self.driver
    }

    fn get_u64(&self, attr: CUmemPool_attribute) -> Result<u64, CudaError> {
        let mut v = 0u64;
        // SAFETY: a live pool; these attributes are `cuuint64_t`.
        check(unsafe {
            self.driver.table().cuMemPoolGetAttribute()?(
                self.raw,
                attr,
                (&raw mut v).cast::<c_void>(),
            )
        })?;
        Ok(v)
    }

    fn set_u64(&self, attr: CUmemPool_attribute, mut v: u64) -> Result<(), CudaError> {
        // SAFETY: a live pool; these attributes are `cuuint64_t`.
        check(unsafe {
            self.driver.table().cuMemPoolSetAttribute()?(
                self.raw,
                attr,
                (&raw mut v).cast::<c_void>(),
            )
        })
    }

    /// Bytes of freed memory the pool keeps reserved rather than give back
    /// (`CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`).
    pub fn release_threshold(&self) -> Result<u64, CudaError> {
        self.get_u64(CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
    }

    /// Sets the release threshold (`u64::MAX`: keep everything).
    pub fn set_release_threshold(&self, bytes: u64) -> Result<(), CudaError> {
        self.set_u64(
            CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            bytes,
        )
    }

    /// Whether a reuse policy is enabled.
    pub fn reuse(&self, policy: ReusePolicy) -> Result<bool, CudaError> {
        let mut v: c_int = 0;
        // SAFETY: a live pool; the reuse attributes are `int`.
        check(unsafe {
            self.driver.table().cuMemPoolGetAttribute()?(
                self.raw,
                policy.attribute(),
                (&raw mut v).cast::<c_void>(),
            )
        })?;
        Ok(v != 0)
    }

    /// Enables or disables a reuse policy.
    pub fn set_reuse(&self, policy: ReusePolicy, enabled: bool) -> Result<(), CudaError> {
        let mut v = c_int::from(enabled);
        // SAFETY: a live pool; the reuse attributes are `int`.
        check(unsafe {
            self.driver.table().cuMemPoolSetAttribute()?(
                self.raw,
                policy.attribute(),
                (&raw mut v).cast::<c_void>(),
            )
        })
    }

    /// Bytes the pool has reserved now (`CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT`).
    pub fn reserved_current(&self) -> Result<u64, CudaError> {
        self.get_u64(CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
    }

    /// The most bytes reserved since the last [`reset_high_watermarks`](Self::reset_high_watermarks).
    pub fn reserved_high(&self) -> Result<u64, CudaError> {
        self.get_u64(CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
    }

    /// Bytes allocated from the pool and not yet freed (`CU_MEMPOOL_ATTR_USED_MEM_CURRENT`).
    pub fn used_current(&self) -> Result<u64, CudaError> {
        self.get_u64(CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
    }

    /// The most bytes in use since the last [`reset_high_watermarks`](Self::reset_high_watermarks).
    pub fn used_high(&self) -> Result<u64, CudaError> {
        self.get_u64(CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH)
    }

    /// Resets both high watermarks to zero (the only value the driver accepts).
    pub fn reset_high_watermarks(&self) -> Result<(), CudaError> {
        self.set_u64(CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 0)?;
        self.set_u64(CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0)
    }

    /// Gives unused reserved memory back until the pool holds at most `keep` bytes
    /// (memory in use stays).
    pub fn trim_to(&self, keep: usize) -> Result<(), CudaError> {
        // SAFETY: a live pool.
        check(unsafe { self.driver.table().cuMemPoolTrimTo()?(self.raw, keep) })
    }

    /// Sets `device`'s access to the pool's memory. The pool's own device always has
    /// read-write access ([`CudaError::InvalidArgument`] for anything else); a peer
    /// needs a peer link to the pool's device (the driver's
    /// `CUDA_ERROR_INVALID_DEVICE` otherwise); a device of another driver is
    /// [`CudaError::ForeignDriver`].
    pub fn set_access(&self, device: &Device, access: Access) -> Result<(), CudaError> {
        same_driver(self.driver, device)?;
        if *device == self.device && access != Access::ReadWrite {
            return Err(CudaError::InvalidArgument {
                parameter: "access",
                rule: "a pool's own device always has read-write access",
            });
        }
        let desc = CUmemAccessDesc_v1 {
            location: location(device),
            flags: access.flags(),
        };
        // SAFETY: a live pool and one valid descriptor.
        check(unsafe { self.driver.table().cuMemPoolSetAccess()?(self.raw, &desc, 1) })
    }

    /// `device`'s access to the pool's memory.
    pub fn access(&self, device: &Device) -> Result<Access, CudaError> {
        same_driver(self.driver, device)?;
        let mut flags = CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE;
        let mut loc = location(device);
        // SAFETY: a live pool, a valid location and out-pointer.
        check(unsafe {
            self.driver.table().cuMemPoolGetAccess()?(&mut flags, self.raw, &mut loc)
        })?;
        Ok(match flags {
            CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE => Access::ReadWrite,
            CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READ => Access::Read,
            _ => Access::None,
        })
    }
}

impl Drop for MemoryPool<'_> {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        if let Ok(destroy) = self.driver.table().cuMemPoolDestroy() {
            // SAFETY: this value owns the pool; every allocation from it borrowed it and
            // is freed (in stream order: the driver lets the pool go once those frees
            // have run).
            let r = unsafe { destroy(self.raw) };
            if check(r).is_err() {
                tracing::warn!(?r, "cuMemPoolDestroy failed");
            } else {
                crate::leaks::destroyed(crate::leaks::Kind::MemoryPools, self.raw);
            }
        }
    }
}

/// `len` elements of `T` allocated in stream order on a stream, from a memory pool; it
/// borrows the stream (and the pool) for its life.
///
/// The memory is usable by work queued on its stream after the allocation; it is
/// freed, again in the stream's order, by [`free_async`](Self::free_async) — which
/// consumes it, so nothing can use it afterwards (CF22) — or when dropped (a failure
/// is logged, never a panic). A synchronous copy ([`DeviceSlice::copy_to_host`] and
/// the like) runs on the legacy default stream, which waits for blocking streams only:
/// on a non-blocking stream synchronize it (or copy in its order, with
/// [`Stream::scope`]) before touching the memory from elsewhere. Before the stream
/// reaches the allocation the memory is not the buffer's yet: CUDA leaves such an
/// access undefined, and softcuda reports it as the sticky
/// `CUDA_ERROR_ILLEGAL_ADDRESS` (the context is lost), so tests catch it.
///
/// **Its own stream only.** Its free is ordered after its stream's work and nothing
/// else's, so the crate lets no other stream's work hold its address: a launch
/// ([`Function::launch`](crate::module::Function::launch), `launch_with`), a memset
/// ([`Stream::fill`]) or a scope's copy queued on another stream with the buffer, a
/// view of it, a part of a view or a tensor map of it is refused with
/// [`CudaError::WrongStream`] (naming the launch argument). Otherwise a kernel queued
/// on a busy second stream would still write the memory after the free had handed it
/// to the next allocation — a buffer safe code owns. The synchronous operations on its
/// views (`to_vec`, `copy_to_host`, `copy_from_host`, `copy_from`, `fill`, `zero`) run
/// in its stream's order: after the stream's earlier work (a read sees what the
/// stream's kernels wrote) and finished before they return. Graphs refuse it too
/// (kernel, copy and memset nodes, and captured work — a capture is never of its own
/// stream, which the buffer borrows): a graph may run on any stream, and could reach
/// the memory before its stream reaches the allocation, while the memory still serves
/// the work of an earlier buffer. Graphs allocate with their own memory nodes
/// ([`crate::graph`]). To share data with other streams, copy it into a
/// [`DeviceBuffer`](crate::memory::DeviceBuffer).
///
/// A stream a `StreamBuffer` borrows cannot be captured: capture needs the stream
/// borrowed mutably ([`Stream::capture`]), so the borrow rules refuse it while the
/// buffer lives. Allocation inside a capture (a graph memory node) is not offered
/// here; graphs allocate through [`graph`](crate::graph)'s own memory nodes.
pub struct StreamBuffer<'s, T: DeviceCopy> {
    driver: &'static Driver,
    ptr: CUdeviceptr,
    len: usize,
    stream: CUstream,
    _b: PhantomData<(&'s (), *const (), T)>,
}

impl<'a> Stream<'a> {
    /// Allocates `len` elements (`len` > 0, else [`CudaError::InvalidArgument`]) from
    /// the current pool of the context's device, in this stream's order. The contents
    /// are unspecified (not zeroed).
    pub fn alloc_async<T: DeviceCopy>(&self, len: usize) -> Result<StreamBuffer<'_, T>, CudaError> {
        let bytes = stream_bytes::<T>(len)?;
        let mut ptr = 0;
        // SAFETY: a valid out-pointer; a live stream of the current context.
        check(unsafe { self.driver().table().cuMemAllocAsync()?(&mut ptr, bytes, self.raw()) })?;
        self.buffer(ptr, len)
    }

    /// Allocates `len` elements (`len` > 0) from `pool`, in this stream's order. The
    /// buffer borrows the pool too. A pool of another driver is
    /// [`CudaError::ForeignDriver`]; one the stream's device may not use, the
    /// driver's `CUDA_ERROR_INVALID_VALUE`.
    pub fn alloc_from_pool<'s, T: DeviceCopy>(
        &'s self,
        pool: &'s MemoryPool<'_>,
        len: usize,
    ) -> Result<StreamBuffer<'s, T>, CudaError> {
        if !core::ptr::eq(pool.driver, self.driver()) {
            return Err(CudaError::ForeignDriver);
        }
        let bytes = stream_bytes::<T>(len)?;
        let mut ptr = 0;
        // SAFETY: a valid out-pointer, a live pool (borrowed) and stream.
        check(unsafe {
            self.driver().table().cuMemAllocFromPoolAsync()?(&mut ptr, bytes, pool.raw, self.raw())
        })?;
        self.buffer(ptr, len)
    }

    /// The buffer owning a fresh allocation; one whose address does not suit `T`'s
    /// alignment is freed again and refused.
    fn buffer<T: DeviceCopy>(
        &self,
        ptr: CUdeviceptr,
        len: usize,
    ) -> Result<StreamBuffer<'_, T>, CudaError> {
        let b = StreamBuffer {
            driver: self.driver(),
            ptr,
            len,
            stream: self.raw(),
            _b: PhantomData,
        };
        crate::leaks::created(crate::leaks::Kind::PoolAllocations, ptr);
        if !(ptr as usize).is_multiple_of(align_of::<T>()) {
            drop(b); // freed in stream order
            return Err(CudaError::InvalidArgument {
                parameter: "T",
                rule: "the element type's alignment exceeds the driver's allocation alignment",
            });
        }
        Ok(b)
    }
}

/// The bytes of `len` elements; zero elements is [`CudaError::InvalidArgument`].
fn stream_bytes<T>(len: usize) -> Result<usize, CudaError> {
    if len == 0 || size_of::<T>() == 0 {
        return Err(CudaError::InvalidArgument {
            parameter: "len",
            rule: "a stream-ordered allocation holds at least one byte",
        });
    }
    memory::bytes::<T>(len)
}

memory::extent!(owned StreamBuffer);

impl<T: DeviceCopy> StreamBuffer<'_, T> {
    /// The stream it was allocated on (and will be freed on).
    pub fn stream(&self) -> CUstream {
        self.stream
    }

    /// Its views are usable on its own stream only (the module's rule).
    pub(crate) fn stream_order(&self) -> Option<CUstream> {
        Some(self.stream)
    }

    /// No mark: its stream orders every use of it, host accesses included.
    pub(crate) fn host_mark(&self) -> Option<&crate::order::Mark> {
        None
    }

    /// Frees the memory in its stream's order (the buffer is consumed: CF22). If the
    /// driver refuses the free, the error is returned and the allocation stays with
    /// the pool until the context is destroyed (a leak, never a double free).
    pub fn free_async(self) -> Result<(), CudaError> {
        let this = ManuallyDrop::new(self);
        this.free()
    }

    fn free(&self) -> Result<(), CudaError> {
        // SAFETY: this value owns the allocation and frees it once (`free_async` keeps
        // `Drop` from running); the stream is borrowed, so alive.
        check(unsafe { self.driver().table().cuMemFreeAsync()?(self.ptr, self.stream) })?;
        crate::leaks::destroyed(crate::leaks::Kind::PoolAllocations, self.ptr);
        Ok(())
    }
}

impl<T: DeviceCopy> crate::memory::sealed::Memory for StreamBuffer<'_, T> {}
impl<T: DeviceCopy> DeviceRead<T> for StreamBuffer<'_, T> {
    fn view(&self) -> DeviceSlice<'_, T> {
        self.as_slice()
    }
}

impl<T: DeviceCopy> DeviceWrite<T> for StreamBuffer<'_, T> {
    fn view_mut(&mut self) -> DeviceSliceMut<'_, T> {
        self.as_mut_slice()
    }
}

impl<T: DeviceCopy> Drop for StreamBuffer<'_, T> {
    fn drop(&mut self) {
        if let Err(e) = self.free() {
            tracing::warn!(%e, "cuMemFreeAsync failed");
        }
    }
}

static_assertions::assert_not_impl_any!(MemoryPool<'static>: Send, Sync);
static_assertions::assert_not_impl_any!(StreamBuffer<'static, f32>: Send, Sync);
