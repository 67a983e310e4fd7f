//! [`DeviceBox<T>`]: one value on the device.

use super::{DeviceBuffer, DeviceCopy, DeviceSlice, DeviceSliceMut, short_type_name};
use crate::context::CurrentContext;
use crate::error::CudaError;
use crate::sys::CUdeviceptr;

/// One value of `T` in device memory, tied to the token it was allocated under, freed
/// when dropped: a [`DeviceBuffer`] of one element
/// ([`alloc_box`](CurrentContext::alloc_box)). It reaches a kernel as a view of one
/// element: [`as_slice`](Self::as_slice) for an `In<T>` or `Ptr<T>` parameter,
/// [`as_mut_slice`](Self::as_mut_slice) for an `Out<T>` or `PtrMut<T>` one.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let driver = oxicuda_driver::driver_with(oxicuda_driver::DriverOptions::software())?;
/// # driver.init()?;
/// # let ctx = oxicuda_driver::Context::new(&driver.best_device()?, oxicuda_driver::sys::CUctx_flags::empty())?;
/// ctx.bind(|cur| -> Result<(), oxicuda_driver::CudaError> {
///     let mut total = cur.alloc_box(0u64)?;
///     total.set(41)?;
///     assert_eq!(total.get()?, 41);
///     assert_eq!(total.as_slice().len(), 1);
///     Ok(())
/// })??;
/// # Ok(())
/// # }
/// ```
pub struct DeviceBox<'a, T: DeviceCopy> {
    buf: DeviceBuffer<'a, T>,
}

impl<'ctx> CurrentContext<'ctx> {
    /// Allocates one `T` on the device holding `value`.
    pub fn alloc_box<T: DeviceCopy>(&self, value: T) -> Result<DeviceBox<'_, T>, CudaError> {
        Ok(DeviceBox {
            buf: self.alloc_from(core::slice::from_ref(&value))?,
        })
    }
}

impl<'a, T: DeviceCopy> DeviceBox<'a, T> {
    /// The value, copied to the host; returns when done.
    pub fn get(&self) -> Result<T, CudaError> {
        self.buf.get(0)
    }

    /// Writes `value`; returns when done.
    pub fn set(&mut self, value: T) -> Result<(), CudaError> {
        self.buf.copy_from_host(core::slice::from_ref(&value))
    }

    /// The device address of the value.
    pub fn device_ptr(&self) -> CUdeviceptr {
        self.buf.device_ptr()
    }

    /// A shared view of the value (one element), for a kernel that reads it.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        self.buf.as_slice()
    }

    /// An exclusive view of the value (one element), for a kernel that writes it.
    pub fn as_mut_slice(&mut self) -> DeviceSliceMut<'_, T> {
        self.buf.as_mut_slice()
    }

    /// The buffer of one element that holds the value.
    pub fn into_buffer(self) -> DeviceBuffer<'a, T> {
        self.buf
    }
}

/// Its address and element type; never the value (that would read device memory).
impl<T: DeviceCopy> core::fmt::Debug for DeviceBox<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "DeviceBox<{}>({:#x})",
            short_type_name::<T>(),
            self.buf.ptr
        )
    }
}

static_assertions::assert_not_impl_any!(DeviceBox<'static, f32>: Send, Sync);
