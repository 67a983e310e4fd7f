//! Page-locked ("pinned") host memory, which the device reads and writes directly —
//! asynchronous copies from and to it overlap with other work, and run at full bus
//! speed:
//!
//! - [`HostBuffer<'a, T>`]: allocated by the driver (`cuMemHostAlloc`), zeroed, freed
//!   when dropped; it dereferences to `[T]`.
//! - [`Registered<'a, T>`]: an existing host slice page-locked for as long as the
//!   value lives (`cuMemHostRegister`); it borrows the slice mutably and dereferences
//!   to it. Forgetting it (`mem::forget`) leaves the pages locked — a resource leak
//!   that the driver cleans up with the context, never unsoundness.
//!
//! Both are tied to the token they were made under, like device buffers. Pass them
//! to [`AsyncScope`](crate::stream::AsyncScope) copies as `&buf[..]` / `&mut buf[..]`.

use crate::context::CurrentContext;
use crate::context::Tied;
use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::memory::{DeviceCopy, bytes};
use crate::sys::{CUmemhostalloc_flags, CUmemhostregister_flags};
use core::ffi::c_void;
use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};

/// `len` elements of `T` in page-locked host memory.
pub struct HostBuffer<'a, T: DeviceCopy> {
    driver: &'static Driver,
    ptr: *mut T,
    len: usize,
    _tied: Tied<'a>,
}

/// Its address, length and element type; not its contents (which a copy in flight
/// may be writing, and which may be long).
impl<T: DeviceCopy> core::fmt::Debug for HostBuffer<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let name = format!("HostBuffer<{}>", crate::memory::short_type_name::<T>());
        f.debug_struct(&name)
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .finish()
    }
}

/// A host slice page-locked while this value lives.
pub struct Registered<'a, T: DeviceCopy> {
    driver: &'static Driver,
    data: &'a mut [T],
    _tied: Tied<'a>,
}

/// Its address, length and element type, as [`HostBuffer`]'s.
impl<T: DeviceCopy> core::fmt::Debug for Registered<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let name = format!("Registered<{}>", crate::memory::short_type_name::<T>());
        f.debug_struct(&name)
            .field("ptr", &self.data.as_ptr())
            .field("len", &self.data.len())
            .finish()
    }
}

impl<'ctx> CurrentContext<'ctx> {
    /// Allocates `len` zeroed elements of page-locked host memory (`flags`:
    /// `CU_MEMHOSTALLOC_PORTABLE` for every context, `..._WRITECOMBINED` for memory
    /// the host only writes). No bytes (`len == 0`, or a zero-sized `T`) allocate
    /// nothing. [`CudaError::ContextMismatch`] if code outside the crate has made
    /// another context current during the binding.
    pub fn alloc_host<T: DeviceCopy>(
        &self,
        len: usize,
        flags: CUmemhostalloc_flags,
    ) -> Result<HostBuffer<'_, T>, CudaError> {
        let n = bytes::<T>(len)?;
        self.ensure_current()?;
        let mut buf = HostBuffer {
            driver: self.driver(),
            ptr: core::ptr::null_mut(),
            len,
            _tied: PhantomData,
        };
        if n == 0 {
            // No bytes to lock (no elements, or a zero-sized `T`): the driver refuses
            // an empty allocation, and none is needed.
            return Ok(buf);
        }
        let mut p: *mut c_void = core::ptr::null_mut();
        // SAFETY: a valid out-pointer; the context is current (checked above).
        check(unsafe { self.driver().table().cuMemHostAlloc()?(&mut p, n, flags.bits()) })?;
        buf.ptr = p.cast::<T>();
        if !p.is_null() {
            crate::leaks::created(crate::leaks::Kind::PinnedHost, p);
        }
        if p.is_null() || !buf.ptr.is_aligned() {
            return Err(CudaError::Driver(
                crate::sys::CUresult::CUDA_ERROR_INVALID_VALUE,
            ));
        }
        // SAFETY: `n` bytes at `p` (checked non-null above) were just allocated for us;
        // zeroing makes them initialised `T`s (`T: DeviceCopy`: any bit pattern is
        // valid).
        unsafe { core::ptr::write_bytes(p.cast::<u8>(), 0, n) };
        Ok(buf)
    }

    /// Page-locks `data` until the returned value is dropped (`flags`:
    /// `CU_MEMHOSTREGISTER_PORTABLE`, ...). [`CudaError::ContextMismatch`] if code
    /// outside the crate has made another context current during the binding. An
    /// empty slice is refused by the driver
    /// (`CUDA_ERROR_INVALID_VALUE`); memory already registered is
    /// `CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED`.
    pub fn register_host<'a, T: DeviceCopy>(
        &'a self,
        data: &'a mut [T],
        flags: CUmemhostregister_flags,
    ) -> Result<Registered<'a, T>, CudaError> {
        self.ensure_current()?;
        // SAFETY: the slice's bytes, borrowed exclusively for as long as they stay
        // registered.
        check(unsafe {
            self.driver().table().cuMemHostRegister()?(
                data.as_mut_ptr().cast(),
                size_of_val(data),
                flags.bits(),
            )
        })?;
        crate::leaks::created(crate::leaks::Kind::RegisteredHost, data.as_mut_ptr());
        Ok(Registered {
            driver: self.driver(),
            data,
            _tied: PhantomData,
        })
    }
}

impl<T: DeviceCopy> HostBuffer<'_, T> {
    /// Where the elements start: the allocation, or — when it holds no bytes (no
    /// elements, or a zero-sized `T`), where the driver may have returned null — a
    /// dangling aligned pointer, which is what a slice of no bytes needs.
    fn elements(&self) -> *mut T {
        if self.len == 0 || size_of::<T>() == 0 {
            core::ptr::NonNull::dangling().as_ptr()
        } else {
            self.ptr
        }
    }
}

impl<T: DeviceCopy> Deref for HostBuffer<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `len` initialised elements, owned by this value (checked non-null and
        // aligned at allocation), or no bytes at a dangling aligned pointer.
        unsafe { core::slice::from_raw_parts(self.elements(), self.len) }
    }
}

impl<T: DeviceCopy> DerefMut for HostBuffer<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as above, borrowed exclusively.
        unsafe { core::slice::from_raw_parts_mut(self.elements(), self.len) }
    }
}

impl<T: DeviceCopy> Drop for HostBuffer<'_, T> {
    fn drop(&mut self) {
        if self.ptr.is_null() {
            return;
        }
        if let Ok(free) = self.driver.table().cuMemFreeHost() {
            // SAFETY: this value owns the allocation.
            let r = crate::wait::retry_relaxed(self.driver, || unsafe { free(self.ptr.cast()) });
            if check(r).is_err() {
                tracing::warn!(?r, "cuMemFreeHost failed");
            } else {
                crate::leaks::destroyed(crate::leaks::Kind::PinnedHost, self.ptr);
            }
        }
    }
}

impl<T: DeviceCopy> Deref for Registered<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.data
    }
}

impl<T: DeviceCopy> DerefMut for Registered<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.data
    }
}

impl<T: DeviceCopy> Drop for Registered<'_, T> {
    fn drop(&mut self) {
        if let Ok(unregister) = self.driver.table().cuMemHostUnregister() {
            let p = self.data.as_mut_ptr().cast();
            // SAFETY: registered by `register_host` and not since unregistered.
            let r = crate::wait::retry_relaxed(self.driver, || unsafe { unregister(p) });
            if check(r).is_err() {
                tracing::warn!(?r, "cuMemHostUnregister failed");
            } else {
                crate::leaks::destroyed(crate::leaks::Kind::RegisteredHost, p);
            }
        }
    }
}

static_assertions::assert_not_impl_any!(HostBuffer<'static, f32>: Send, Sync);
static_assertions::assert_not_impl_any!(Registered<'static, f32>: Send, Sync);
