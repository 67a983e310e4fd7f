//! Device memory: [`DeviceBuffer<'a, T>`], typed by its element, tied to the token it
//! was allocated under, freed when dropped; synchronous copies between host slices and
//! buffers of the same element type (CF12).
//!
//! Element types opt in through the `unsafe` marker trait [`DeviceCopy`]: plain data
//! that any bit pattern the device writes leaves valid.
//!
//! ```compile_fail
//! # fn f(a: &mut oxicuda_driver::memory::DeviceBuffer<'_, f32>, b: &oxicuda_driver::memory::DeviceBuffer<'_, i32>) {
//! // CF12: no copies between buffers of different element types.
//! a.copy_from(b).unwrap();
//! # }
//! ```

use crate::context::CurrentContext;
use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::stream::Tied;
use crate::sys::{CUdeviceptr, CUresult};
use core::marker::PhantomData;

/// Plain data that may live in device memory and be copied bit for bit.
///
/// # Safety
/// Every bit pattern of `size_of::<T>()` bytes must be a valid `T` (the device may
/// write anything), and `T` must own no host resources (no pointers, references or
/// `Drop`).
pub unsafe trait DeviceCopy: Copy + 'static {}

macro_rules! device_copy {
    ($($t:ty),*) => {$(
        // SAFETY: a primitive: every bit pattern is valid, no host resources.
        unsafe impl DeviceCopy for $t {}
    )*};
}
device_copy!(
    u8, i8, u16, i16, u32, i32, u64, i64, u128, i128, usize, isize, f32, f64
);
// SAFETY: arrays of plain data are plain data.
unsafe impl<T: DeviceCopy, const N: usize> DeviceCopy for [T; N] {}

/// A device allocation of `len` elements of `T`.
pub struct DeviceBuffer<'a, T: DeviceCopy> {
    driver: &'static Driver,
    ptr: CUdeviceptr,
    len: usize,
    _tied: Tied<'a>,
    _t: PhantomData<T>,
}

fn bytes<T>(len: usize) -> Result<usize, CudaError> {
    len.checked_mul(size_of::<T>())
        .ok_or(CudaError::Driver(CUresult::CUDA_ERROR_INVALID_VALUE))
}

fn same_len(a: usize, b: usize) -> Result<(), CudaError> {
    if a == b {
        Ok(())
    } else {
        Err(CudaError::LengthMismatch {
            destination_len: a,
            source_len: b,
        })
    }
}

impl<'ctx> CurrentContext<'ctx> {
    /// Allocates `len` elements (zeroed memory is not promised: use
    /// [`DeviceBuffer::zero`]). `len` must be non-zero.
    pub fn alloc<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<'_, T>, CudaError> {
        let mut ptr = 0;
        // SAFETY: a valid out-pointer; the context is current.
        check(unsafe { self.driver().table().cuMemAlloc()?(&mut ptr, bytes::<T>(len)?) })?;
        Ok(DeviceBuffer {
            driver: self.driver(),
            ptr,
            len,
            _tied: PhantomData,
            _t: PhantomData,
        })
    }

    /// Allocates a buffer holding a copy of `data`.
    pub fn alloc_from<T: DeviceCopy>(&self, data: &[T]) -> Result<DeviceBuffer<'_, T>, CudaError> {
        let mut b = self.alloc(data.len())?;
        b.copy_from_host(data)?;
        Ok(b)
    }

    /// (free, total) bytes of the current device.
    pub fn memory_info(&self) -> Result<(usize, usize), CudaError> {
        let (mut free, mut total) = (0, 0);
        // SAFETY: valid out-pointers.
        check(unsafe { self.driver().table().cuMemGetInfo()?(&mut free, &mut total) })?;
        Ok((free, total))
    }
}

impl<T: DeviceCopy> DeviceBuffer<'_, T> {
    /// Elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address.
    pub fn device_ptr(&self) -> CUdeviceptr {
        self.ptr
    }

    /// Copies `src` (same length) into the buffer; returns when done.
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<(), CudaError> {
        same_len(self.len, src.len())?;
        // SAFETY: both ranges hold `len` elements; the copy is synchronous.
        check(unsafe {
            self.driver.table().cuMemcpyHtoD()?(
                self.ptr,
                src.as_ptr().cast(),
                bytes::<T>(self.len)?,
            )
        })
    }

    /// Copies the buffer into `dst` (same length); returns when done.
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<(), CudaError> {
        same_len(dst.len(), self.len)?;
        // SAFETY: both ranges hold `len` elements; `T: DeviceCopy` makes any bytes valid.
        check(unsafe {
            self.driver.table().cuMemcpyDtoH()?(
                dst.as_mut_ptr().cast(),
                self.ptr,
                bytes::<T>(self.len)?,
            )
        })
    }

    /// The buffer's contents.
    pub fn to_vec(&self) -> Result<Vec<T>, CudaError> {
        let mut v = Vec::<T>::with_capacity(self.len);
        // SAFETY: written in full by the copy below before `set_len` makes it visible;
        // on error nothing is exposed.
        check(unsafe {
            self.driver.table().cuMemcpyDtoH()?(
                v.as_mut_ptr().cast(),
                self.ptr,
                bytes::<T>(self.len)?,
            )
        })?;
        // SAFETY: the copy wrote `len` valid elements (`T: DeviceCopy`).
        unsafe { v.set_len(self.len) };
        Ok(v)
    }

    /// Copies another buffer of the same element type and length (CF12).
    pub fn copy_from(&mut self, src: &DeviceBuffer<'_, T>) -> Result<(), CudaError> {
        same_len(self.len, src.len)?;
        // SAFETY: two live allocations of `len` elements.
        check(unsafe {
            self.driver.table().cuMemcpyDtoD()?(self.ptr, src.ptr, bytes::<T>(self.len)?)
        })
    }

    /// Sets every byte to zero.
    pub fn zero(&mut self) -> Result<(), CudaError> {
        // SAFETY: a live allocation of this many bytes.
        check(unsafe { self.driver.table().cuMemsetD8()?(self.ptr, 0, bytes::<T>(self.len)?) })
    }
}

impl<T: DeviceCopy> Drop for DeviceBuffer<'_, T> {
    fn drop(&mut self) {
        if let Ok(free) = self.driver.table().cuMemFree() {
            // SAFETY: this value owns the allocation.
            let r = unsafe { free(self.ptr) };
            if check(r).is_err() {
                tracing::warn!(?r, "cuMemFree failed");
            }
        }
    }
}

static_assertions::assert_not_impl_any!(DeviceBuffer<'static, f32>: Send, Sync);
