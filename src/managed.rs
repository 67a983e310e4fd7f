//! Managed memory: [`ManagedBuffer<T>`], one allocation that the host and the devices
//! address alike, migrated by the driver. Attach flags ([`Attach`]: global, host,
//! single stream), prefetch to a device or the host ([`Location`]), advice
//! ([`Advice`]: read-mostly, preferred location, accessed-by, and their unsets) and the
//! range attributes that answer them; host access through [`ManagedBuffer::host`].
//!
//! # Host access only when no kernel can use the memory
//!
//! [`ManagedBuffer::host`] borrows the buffer *exclusively* for the life of the host
//! slice, and first waits for all work of the context (`cuCtxSynchronize`). So:
//! - work queued earlier that uses the buffer (kernels, queued copies and memsets) is
//!   finished before the slice exists — every such use borrows the buffer, and a
//!   buffer is tied to its context's token, so its work is work of that context;
//! - while the slice lives, nothing can queue new work on the buffer: a launch takes
//!   `&buffer` or `&mut buffer`, which the exclusive borrow forbids (CF23); and a graph
//!   holds `&buffer` for its whole life (its kernel nodes may write through it), so
//!   `host` cannot be called while a graph that uses the buffer exists.
//!
//! Unrelated kernels may still run meanwhile, on this device or another. That is safe
//! only where every device has `CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS`: a
//! device without it owns all managed memory while any of its kernels runs (the host
//! touching it faults), which no borrow can rule out — so
//! [`CurrentContext::alloc_managed`] refuses to allocate unless every device of the
//! driver has it ([`CudaError::DeviceLacks`]). There is no shared host view: a `&[T]` could coexist
//! with a graph that writes the buffer through its `&buffer`.
//!
//! ```compile_fail
//! # use oxicuda_driver::{launch::Out, managed::ManagedBuffer, module::Function, stream::Stream};
//! # fn f(k: &Function<'_, (Out<u32>,)>, s: &Stream<'_>, m: &mut ManagedBuffer<'_, u32>) -> Result<(), oxicuda_driver::CudaError> {
//! // CF23: no launch may use the buffer while its host slice lives.
//! let host = m.host()?;
//! k.launch(s, 1, 32, 0, (&mut *m,))?;
//! host[0] = 1;
//! # Ok(()) }
//! ```
//!
//! Zero-length managed allocations are refused ([`CudaError::InvalidArgument`]): the
//! driver refuses them too, and a buffer always has an address.

use crate::context::CurrentContext;
use crate::context::Tied;
use crate::device::Device;
use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::memory::{self, DeviceCopy, DeviceRead, DeviceSlice, DeviceSliceMut, DeviceWrite};
use crate::pool::same_driver;
use crate::stream::Stream;
use crate::sys::{
    CUcontext, CUdevice_attribute, CUdeviceptr, CUmem_advise, CUmem_range_attribute,
    CUmemAttach_flags, CUmemLocation_v1, CUmemLocationType,
};
use core::ffi::{c_int, c_void};
use core::marker::PhantomData;

/// `CU_DEVICE_CPU`.
const CPU: c_int = -1;

/// Which streams may access managed memory (`CUmemAttach_flags`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attach {
    /// Any stream of any device (`CU_MEM_ATTACH_GLOBAL`).
    Global,
    /// The host; devices only through streams it is attached to
    /// (`CU_MEM_ATTACH_HOST`).
    Host,
    /// One stream ([`ManagedBuffer::attach`] only: `CU_MEM_ATTACH_SINGLE`).
    Single,
}

impl Attach {
    fn flags(self) -> CUmemAttach_flags {
        match self {
            Self::Global => CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL,
            Self::Host => CUmemAttach_flags::CU_MEM_ATTACH_HOST,
            Self::Single => CUmemAttach_flags::CU_MEM_ATTACH_SINGLE,
        }
    }
}

/// Where managed memory may live: a device or the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// The host (`CU_DEVICE_CPU`, `CU_MEM_LOCATION_TYPE_HOST`).
    Host,
    /// A device.
    Device(Device),
}

impl Location {
    /// As the v1 functions name it: a device ordinal, or `CU_DEVICE_CPU`.
    fn ordinal(self) -> c_int {
        match self {
            Self::Host => CPU,
            Self::Device(d) => d.raw(),
        }
    }

    /// As the v2 functions name it.
    fn location(self) -> CUmemLocation_v1 {
        match self {
            Self::Host => CUmemLocation_v1 {
                type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST,
                id: 0,
            },
            Self::Device(d) => CUmemLocation_v1 {
                type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                id: d.raw(),
            },
        }
    }

    fn check(self, driver: &'static Driver) -> Result<(), CudaError> {
        match self {
            Self::Host => Ok(()),
            Self::Device(d) => same_driver(driver, &d),
        }
    }
}

/// Advice about how managed memory is used (`CUmem_advise`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advice {
    /// Mostly read: the driver may keep read-only copies where it is read.
    SetReadMostly,
    /// Undoes [`SetReadMostly`](Self::SetReadMostly).
    UnsetReadMostly,
    /// Prefer to keep the memory here.
    SetPreferredLocation(Location),
    /// Undoes [`SetPreferredLocation`](Self::SetPreferredLocation).
    UnsetPreferredLocation,
    /// This location accesses the memory: keep it mapped there.
    SetAccessedBy(Location),
    /// Undoes [`SetAccessedBy`](Self::SetAccessedBy) for this location.
    UnsetAccessedBy(Location),
}

impl Advice {
    /// The advice and the location it names (the host where it names none).
    fn raw(self) -> (CUmem_advise, Location) {
        use CUmem_advise as A;
        match self {
            Self::SetReadMostly => (A::CU_MEM_ADVISE_SET_READ_MOSTLY, Location::Host),
            Self::UnsetReadMostly => (A::CU_MEM_ADVISE_UNSET_READ_MOSTLY, Location::Host),
            Self::SetPreferredLocation(l) => (A::CU_MEM_ADVISE_SET_PREFERRED_LOCATION, l),
            Self::UnsetPreferredLocation => {
                (A::CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, Location::Host)
            }
            Self::SetAccessedBy(l) => (A::CU_MEM_ADVISE_SET_ACCESSED_BY, l),
            Self::UnsetAccessedBy(l) => (A::CU_MEM_ADVISE_UNSET_ACCESSED_BY, l),
        }
    }
}

/// `len` elements of `T` of managed memory, tied to the token it was allocated under,
/// freed when dropped. Never empty (zero-length allocations are refused); its
/// address is the same for the host and every device.
pub struct ManagedBuffer<'a, T: DeviceCopy> {
    driver: &'static Driver,
    /// The context it was allocated in (whose work `host` waits for).
    ctx: CUcontext,
    ptr: CUdeviceptr,
    len: usize,
    /// The stream last queued work that uses it ([`crate::order`]).
    mark: crate::order::Mark,
    _tied: Tied<'a>,
    _t: PhantomData<T>,
}

impl<'ctx> CurrentContext<'ctx> {
    /// Allocates `len` elements (`len` > 0) of managed memory, zeroed, attached
    /// [`Attach::Global`] or [`Attach::Host`] ([`Attach::Single`] needs a stream: see
    /// [`ManagedBuffer::attach`]; here it is [`CudaError::InvalidArgument`]).
    /// [`CudaError::DeviceLacks`] on a device without managed memory or without
    /// concurrent managed access (see the [module docs](self)).
    pub fn alloc_managed<T: DeviceCopy>(
        &self,
        len: usize,
        attach: Attach,
    ) -> Result<ManagedBuffer<'_, T>, CudaError> {
        if attach == Attach::Single {
            return Err(CudaError::InvalidArgument {
                parameter: "attach",
                rule: "an allocation attaches globally or to the host; attach it to one stream with ManagedBuffer::attach",
            });
        }
        if len == 0 || size_of::<T>() == 0 {
            return Err(CudaError::InvalidArgument {
                parameter: "len",
                rule: "a managed allocation holds at least one byte",
            });
        }
        let device = self.device()?;
        if device.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)? == 0 {
            return Err(CudaError::DeviceLacks {
                feature: "managed memory (CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)",
            });
        }
        // Managed memory attached globally is visible to every device, and a device
        // without concurrent managed access owns all managed memory while any of its
        // kernels runs: the host touching it then faults, whichever device the buffer
        // was made on. So every device of the driver must have it.
        for ordinal in 0..self.driver().device_count()? {
            let dev = self.driver().device(ordinal)?;
            if dev.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)?
                == 0
            {
                return Err(CudaError::DeviceLacks {
                    feature: "concurrent managed access on every device (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)",
                });
            }
        }
        let bytes = memory::bytes::<T>(len)?;
        let mut ptr = 0;
        // SAFETY: a valid out-pointer; the context is current.
        check(unsafe {
            self.driver().table().cuMemAllocManaged()?(&mut ptr, bytes, attach.flags().bits())
        })?;
        crate::leaks::created(crate::leaks::Kind::ManagedAllocations, ptr);
        let mut b = ManagedBuffer {
            driver: self.driver(),
            ctx: self.raw(),
            ptr,
            len,
            mark: crate::order::Mark::new(),
            _tied: PhantomData,
            _t: PhantomData,
        };
        if !(ptr as usize).is_multiple_of(align_of::<T>()) {
            return Err(CudaError::InvalidArgument {
                parameter: "T",
                rule: "the element type's alignment exceeds the driver's allocation alignment",
            });
        }
        // Managed memory is zeroed on first touch on a GPU; say so for every driver.
        b.as_mut_slice().zero()?;
        Ok(b)
    }
}

memory::extent!(owned ManagedBuffer);

impl<T: DeviceCopy> ManagedBuffer<'_, T> {
    /// Any stream may use it (`cuMemFree` waits for all of them).
    pub(crate) fn stream_order(&self) -> Option<crate::sys::CUstream> {
        None
    }

    /// Its mark: work queued on a stream marks it, copies through its views wait for
    /// that ([`crate::order`]; `host` waits for the whole context).
    pub(crate) fn host_mark(&self) -> Option<&crate::order::Mark> {
        Some(&self.mark)
    }
}

impl<T: DeviceCopy> ManagedBuffer<'_, T> {
    /// The elements, for the host to read and write: first waits for all work of the
    /// context, then lends them for as long as the buffer is borrowed — no launch or
    /// graph can use the buffer meanwhile (see the [module docs](self)). A failed wait
    /// (the context failed) is returned, and no slice; so is
    /// [`CudaError::ContextMismatch`] if code outside this crate made another context
    /// current (the wait would be for the wrong context's work).
    ///
    /// Inside a stream capture of this context (any mode) the wait is illegal, as in
    /// CUDA: the driver refuses it (`CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`) and
    /// invalidates the capture, which then ends with an error. Call it outside.
    pub fn host(&mut self) -> Result<&mut [T], CudaError> {
        let t = self.driver().table();
        let mut found = CUcontext::NULL;
        // SAFETY: a valid out-pointer.
        check(unsafe { t.cuCtxGetCurrent()?(&mut found) })?;
        if found != self.ctx {
            return Err(CudaError::ContextMismatch {
                expected: self.ctx.0 as usize,
                found: found.0 as usize,
            });
        }
        // SAFETY: the buffer's context is current (checked above).
        check(unsafe { t.cuCtxSynchronize_v2000()?() })?;
        // SAFETY: `len` elements of `T` at `ptr` (aligned for `T`: checked at
        // allocation), host-accessible (managed memory, on a
        // device with concurrent managed access: `alloc_managed` checked), initialised
        // (zeroed at allocation; device writes are valid `T`s: `DeviceCopy`). No device
        // work of this context runs (synchronized above) and none can start on this
        // buffer while it is borrowed exclusively; device work of other contexts cannot
        // name it (the buffer is tied to this token and thread, and a context pushed on
        // top needs the token mutably).
        Ok(unsafe { core::slice::from_raw_parts_mut(self.ptr as usize as *mut T, self.len) })
    }

    /// Attaches the memory to `stream` with `attach` (`cuStreamAttachMemAsync`, in the
    /// stream's order): [`Attach::Single`] makes it the stream's, [`Attach::Host`]
    /// the host's, [`Attach::Global`] every stream's. Single needs a created stream
    /// (the driver refuses a default stream).
    pub fn attach(&mut self, stream: &Stream<'_>, attach: Attach) -> Result<(), CudaError> {
        if !core::ptr::eq(stream.driver(), self.driver) {
            return Err(CudaError::ForeignDriver);
        }
        // SAFETY: a live stream and this allocation (length 0: all of it).
        check(unsafe {
            self.driver.table().cuStreamAttachMemAsync()?(
                stream.raw(),
                self.ptr,
                0,
                attach.flags().bits(),
            )
        })
    }

    /// Prefetches the memory to `to`, in `stream`'s order (`cuMemPrefetchAsync`, the
    /// 12.2 form where the driver has it).
    pub fn prefetch(&self, stream: &Stream<'_>, to: Location) -> Result<(), CudaError> {
        if !core::ptr::eq(stream.driver(), self.driver) {
            return Err(CudaError::ForeignDriver);
        }
        to.check(self.driver)?;
        let t = self.driver.table();
        let bytes = memory::bytes::<T>(self.len)?;
        match t.cuMemPrefetchAsync() {
            // SAFETY: this allocation, a valid location, a live stream; flags 0.
            Ok(f) => check(unsafe { f(self.ptr, bytes, to.location(), 0, stream.raw()) }),
            // SAFETY: as above, in the 8.0 form.
            Err(_) => check(unsafe {
                t.cuMemPrefetchAsync_v8000()?(self.ptr, bytes, to.ordinal(), stream.raw())
            }),
        }
    }

    /// Gives the driver `advice` about all of the memory (`cuMemAdvise`, the 12.2 form
    /// where the driver has it).
    pub fn advise(&self, advice: Advice) -> Result<(), CudaError> {
        let (a, at) = advice.raw();
        at.check(self.driver)?;
        let t = self.driver.table();
        let bytes = memory::bytes::<T>(self.len)?;
        match t.cuMemAdvise() {
            // SAFETY: this allocation and a valid location.
            Ok(f) => check(unsafe { f(self.ptr, bytes, a, at.location()) }),
            // SAFETY: as above, in the 8.0 form.
            Err(_) => check(unsafe { t.cuMemAdvise_v8000()?(self.ptr, bytes, a, at.ordinal()) }),
        }
    }

    /// `cuMemRangeGetAttribute` of all of the memory into `out`.
    fn range_attribute(
        &self,
        attr: CUmem_range_attribute,
        out: &mut [c_int],
    ) -> Result<(), CudaError> {
        let bytes = memory::bytes::<T>(self.len)?;
        // SAFETY: `out` holds `size_of_val(out)` writable bytes; this allocation.
        check(unsafe {
            self.driver.table().cuMemRangeGetAttribute()?(
                out.as_mut_ptr().cast::<c_void>(),
                size_of_val(out),
                attr,
                self.ptr,
                bytes,
            )
        })
    }

    /// `cuMemRangeGetAttribute` of all of the memory, for an attribute of one value.
    fn range_value(&self, attr: CUmem_range_attribute) -> Result<c_int, CudaError> {
        let mut v = [0];
        self.range_attribute(attr, &mut v)?;
        Ok(v[0])
    }

    /// A v1 location as the driver answers it: a device ordinal, `CU_DEVICE_CPU`, or
    /// `CU_DEVICE_INVALID` (none, or not the same for all of the memory).
    fn location_of(&self, v: c_int) -> Result<Option<Location>, CudaError> {
        match v {
            CPU => Ok(Some(Location::Host)),
            d if d >= 0 => Ok(Some(Location::Device(self.driver.device(d as usize)?))),
            _ => Ok(None),
        }
    }

    /// Whether all of the memory is advised read-mostly.
    pub fn read_mostly(&self) -> Result<bool, CudaError> {
        Ok(self.range_value(CUmem_range_attribute::CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY)? != 0)
    }

    /// The preferred location of all of the memory (`None`: none, or not one for all).
    pub fn preferred_location(&self) -> Result<Option<Location>, CudaError> {
        self.location_of(
            self.range_value(CUmem_range_attribute::CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION)?,
        )
    }

    /// The locations advised to access all of the memory (at most one per device,
    /// plus the host).
    pub fn accessed_by(&self) -> Result<Vec<Location>, CudaError> {
        let n = self.driver.device_count()? + 1;
        let mut v = vec![-2; n];
        self.range_attribute(
            CUmem_range_attribute::CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY,
            &mut v,
        )?;
        let mut out = Vec::new();
        for x in v {
            if let Some(l) = self.location_of(x)? {
                out.push(l);
            }
        }
        Ok(out)
    }

    /// Where all of the memory was last prefetched to (`None`: nowhere, or not the
    /// same place for all).
    pub fn last_prefetch_location(&self) -> Result<Option<Location>, CudaError> {
        self.location_of(
            self.range_value(CUmem_range_attribute::CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION)?,
        )
    }
}

impl<T: DeviceCopy> crate::memory::sealed::Memory for ManagedBuffer<'_, T> {}
impl<T: DeviceCopy> DeviceRead<T> for ManagedBuffer<'_, T> {
    fn view(&self) -> DeviceSlice<'_, T> {
        self.as_slice()
    }
}

impl<T: DeviceCopy> DeviceWrite<T> for ManagedBuffer<'_, T> {
    fn view_mut(&mut self) -> DeviceSliceMut<'_, T> {
        self.as_mut_slice()
    }
}

impl<T: DeviceCopy> Drop for ManagedBuffer<'_, T> {
    fn drop(&mut self) {
        // SAFETY: this value owns the allocation.
        unsafe {
            memory::free(
                self.driver,
                self.ptr,
                crate::leaks::Kind::ManagedAllocations,
            )
        };
    }
}

static_assertions::assert_not_impl_any!(ManagedBuffer<'static, f32>: Send, Sync);
