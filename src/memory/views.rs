//! The views' own operations: slicing and splitting them, and the synchronous copies
//! and memsets through them (each in host order, [`crate::order`]).

use super::{
    DeviceCopy, DeviceRead, DeviceSlice, DeviceSliceMut, MemsetValue, bounds, bytes, check_stream,
    common_order, default_stream_done, element, exclusive, in_stream_order, memset, same_len,
};
use crate::error::{CudaError, check};
use crate::sys::CUstream;
use core::ops::RangeBounds;

impl<'b, T: DeviceCopy> DeviceSlice<'b, T> {
    /// The elements in `range`, or [`CudaError::OutOfRange`].
    pub fn slice(self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'b, T>, CudaError> {
        let (start, end) = bounds(range, self.len)?;
        Ok(DeviceSlice {
            ptr: element::<T>(self.ptr, start),
            len: end - start,
            ..self
        })
    }

    /// The elements before `mid` and from `mid` on, or [`CudaError::OutOfRange`].
    pub fn split_at(
        self,
        mid: usize,
    ) -> Result<(DeviceSlice<'b, T>, DeviceSlice<'b, T>), CudaError> {
        Ok((self.slice(..mid)?, self.slice(mid..)?))
    }

    /// Copies the elements into `dst` (same length); returns when done.
    #[inline]
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<(), CudaError> {
        same_len(dst.len(), self.len)?;
        // SAFETY: `dst` holds `len` writable elements.
        unsafe { self.copy_to(dst.as_mut_ptr()) }
    }

    /// The elements, copied to the host.
    pub fn to_vec(&self) -> Result<Vec<T>, CudaError> {
        let mut v = Vec::<T>::with_capacity(self.len);
        // SAFETY: the spare capacity holds `len` writable elements; on error nothing is
        // exposed.
        unsafe { self.copy_to(v.as_mut_ptr())? };
        // SAFETY: the copy wrote `len` valid elements (`T: DeviceCopy`).
        unsafe { v.set_len(self.len) };
        Ok(v)
    }

    /// Element `index`, copied to the host (see `get`).
    pub(crate) fn read_one(&self, index: usize) -> Result<T, CudaError> {
        if index >= self.len {
            return Err(CudaError::OutOfRange {
                start: index,
                end: index.saturating_add(1),
                len: self.len,
            });
        }
        let one = DeviceSlice {
            ptr: element::<T>(self.ptr, index),
            len: 1,
            ..*self
        };
        let mut v = core::mem::MaybeUninit::<T>::uninit();
        // SAFETY: room for one element, the view's length.
        unsafe { one.copy_to(v.as_mut_ptr())? };
        // SAFETY: the copy wrote the element (none for a zero-sized `T`, which has no
        // bytes to write); `T: DeviceCopy` makes any bytes valid.
        Ok(unsafe { v.assume_init() })
    }

    /// Copies the elements to `dst` and returns when done.
    ///
    /// # Safety
    /// `dst` must be valid for writes of `len` elements.
    #[inline]
    unsafe fn copy_to(&self, dst: *mut T) -> Result<(), CudaError> {
        if self.is_empty_bytes() {
            return Ok(()); // nothing to copy: no driver call (the address may be 0)
        }
        in_stream_order(self.driver, self.order, self.mark, || {
            // SAFETY: the caller's promise for `dst`; `T: DeviceCopy` makes any bytes
            // valid.
            check(unsafe {
                self.driver.table().cuMemcpyDtoH()?(dst.cast(), self.ptr, bytes::<T>(self.len)?)
            })
        })
    }
}

impl<'b, T: DeviceCopy> DeviceSliceMut<'b, T> {
    /// A shorter-lived exclusive view of the same elements (to pass to a launch and
    /// keep this one).
    pub fn reborrow(&mut self) -> DeviceSliceMut<'_, T> {
        exclusive(self.driver, self.ptr, self.len)
            .in_order_of(self.order)
            .marked(self.mark)
    }

    /// The elements in `range`, or [`CudaError::OutOfRange`].
    pub fn slice(self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'b, T>, CudaError> {
        let (start, end) = bounds(range, self.len)?;
        Ok(DeviceSliceMut {
            ptr: element::<T>(self.ptr, start),
            len: end - start,
            ..self
        })
    }

    /// Two exclusive views: the elements before `mid` and from `mid` on (they do not
    /// overlap, so both may be written at once), or [`CudaError::OutOfRange`].
    pub fn split_at(
        self,
        mid: usize,
    ) -> Result<(DeviceSliceMut<'b, T>, DeviceSliceMut<'b, T>), CudaError> {
        if mid > self.len {
            return Err(CudaError::OutOfRange {
                start: mid,
                end: self.len,
                len: self.len,
            });
        }
        let tail = DeviceSliceMut {
            ptr: element::<T>(self.ptr, mid),
            len: self.len - mid,
            ..self
        };
        Ok((DeviceSliceMut { len: mid, ..self }, tail))
    }

    /// Copies `src` (same length) in; returns when done.
    #[inline]
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<(), CudaError> {
        same_len(self.len, src.len())?;
        if self.is_empty_bytes() {
            return Ok(());
        }
        in_stream_order(self.driver, self.order, self.mark, || {
            // SAFETY: both ranges hold `len` elements; the copy is synchronous.
            check(unsafe {
                self.driver.table().cuMemcpyHtoD()?(
                    self.ptr,
                    src.as_ptr().cast(),
                    bytes::<T>(self.len)?,
                )
            })
        })
    }

    /// Copies the elements into `dst` (same length); returns when done.
    #[inline]
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<(), CudaError> {
        self.as_slice().copy_to_host(dst)
    }

    /// The elements, copied to the host.
    pub fn to_vec(&self) -> Result<Vec<T>, CudaError> {
        self.as_slice().to_vec()
    }

    /// Copies device memory of the same element type and length (CF12); returns when
    /// done (the driver queues a device-to-device copy on the default stream, which
    /// work on a non-blocking stream would not wait for: the call waits for it).
    pub fn copy_from(&mut self, src: &impl DeviceRead<T>) -> Result<(), CudaError> {
        let src = src.view();
        same_len(self.len, src.len)?;
        let order = common_order(self.order, src.order)?;
        if self.is_empty_bytes() {
            return Ok(());
        }
        if let Some(mark) = src.mark {
            mark.wait(self.driver)?; // the source's writers first
        }
        in_stream_order(self.driver, order, self.mark, || {
            // SAFETY: two live ranges of `len` elements (the source borrowed, so it is
            // not this one).
            check(unsafe {
                self.driver.table().cuMemcpyDtoD()?(self.ptr, src.ptr, bytes::<T>(self.len)?)
            })?;
            default_stream_done(self.driver)
        })
    }

    /// Sets every element to `value`; returns when done (as
    /// [`copy_from`](Self::copy_from)).
    pub fn fill(&mut self, value: T) -> Result<(), CudaError>
    where
        T: MemsetValue,
    {
        self.set(value, None)
    }

    /// `cuMemsetD8/16/32` for the element size, or their `Async` forms on `stream`.
    pub(crate) fn set(&mut self, value: T, stream: Option<CUstream>) -> Result<(), CudaError>
    where
        T: MemsetValue,
    {
        match stream {
            Some(s) => check_stream(self.order, Some(s), None)?,
            None => {
                let set = || {
                    // SAFETY: `len` elements of `size_of::<T>()` bytes at `ptr` are
                    // this view's.
                    unsafe { memset(self.driver, self.ptr, self.len, value, None) }?;
                    default_stream_done(self.driver)
                };
                return in_stream_order(self.driver, self.order, self.mark, set);
            }
        }
        // SAFETY: `len` elements of `size_of::<T>()` bytes at `ptr` are this view's.
        unsafe { memset(self.driver, self.ptr, self.len, value, stream) }
    }

    /// Sets every byte to zero; returns when done (as [`copy_from`](Self::copy_from)).
    pub fn zero(&mut self) -> Result<(), CudaError> {
        if self.is_empty_bytes() {
            return Ok(());
        }
        in_stream_order(self.driver, self.order, self.mark, || {
            // SAFETY: the view's bytes.
            check(unsafe {
                self.driver.table().cuMemsetD8()?(self.ptr, 0, bytes::<T>(self.len)?)
            })?;
            default_stream_done(self.driver)
        })
    }
}
