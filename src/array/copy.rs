//! Copies between an array (or a mipmap level) and host or device memory of its
//! element type: [`Region`], the part of an array a copy moves (all of it), and the
//! `cuMemcpy3D` calls; the public methods are made by [`array_copies!`] for each
//! array-like type.

use super::ArrayShape;
use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::order::Mark;
use crate::sys::{CUDA_MEMCPY3D, CUarray, CUdeviceptr, CUmemorytype};

/// An array's whole extent as a copy addresses it, with its host-order mark.
pub(crate) struct Region<'a> {
    pub(crate) driver: &'static Driver,
    pub(crate) raw: CUarray,
    pub(crate) shape: ArrayShape,
    pub(crate) element_size: usize,
    pub(crate) mark: &'a Mark,
}

/// The other side of a copy with an array.
#[derive(Clone, Copy)]
pub(crate) enum Linear {
    /// Host memory of the array's size.
    Host(*mut u8),
    /// Device memory of the array's size.
    Device(CUdeviceptr),
}

impl Region<'_> {
    /// The array's elements (never 0: a live array's shape was checked).
    pub(crate) fn elements(&self) -> usize {
        self.shape.elements().unwrap_or(0)
    }

    /// Copies the whole array to (`to_array`) or from `other`, which holds as many
    /// elements in row-major order with no padding, after the kernels the array's
    /// mark names; returns when done.
    ///
    /// # Safety
    ///
    /// `other` holds `elements() × element_size` bytes, readable (into the array) or
    /// writable (out of it), not aliased by the array, and stays so for the call;
    /// device memory is of this driver and in host order (its mark waited for).
    pub(crate) unsafe fn copy(&self, other: Linear, to_array: bool) -> Result<(), CudaError> {
        let row = self.shape.width().checked_mul(self.element_size).ok_or(
            CudaError::InvalidArgument {
                parameter: "shape",
                rule: "the array's bytes must fit in a usize",
            },
        )?;
        let rows = self.shape.height().max(1);
        let mut p = CUDA_MEMCPY3D {
            WidthInBytes: row,
            Height: rows,
            Depth: self.shape.depth().max(1),
            ..Default::default()
        };
        let (kind, host, dptr) = match other {
            Linear::Host(h) => (CUmemorytype::CU_MEMORYTYPE_HOST, h, 0),
            Linear::Device(d) => (CUmemorytype::CU_MEMORYTYPE_DEVICE, core::ptr::null_mut(), d),
        };
        if to_array {
            p.srcMemoryType = kind;
            p.srcHost = host.cast_const().cast();
            p.srcDevice = dptr;
            p.srcPitch = row;
            p.srcHeight = rows;
            p.dstMemoryType = CUmemorytype::CU_MEMORYTYPE_ARRAY;
            p.dstArray = self.raw;
        } else {
            p.srcMemoryType = CUmemorytype::CU_MEMORYTYPE_ARRAY;
            p.srcArray = self.raw;
            p.dstMemoryType = kind;
            p.dstHost = host.cast();
            p.dstDevice = dptr;
            p.dstPitch = row;
            p.dstHeight = rows;
        }
        self.mark.wait(self.driver)?;
        // SAFETY: a live array of this shape and the caller's memory of its size.
        check(unsafe { self.driver.table().cuMemcpy3D()?(&p) })?;
        // Device-to-device copies are left queued on the default stream, and a copy
        // from pageable host memory may return with its last DMA in flight: wait, so
        // that work queued on any stream after the call sees the whole copy.
        crate::memory::default_stream_done(self.driver)
    }
}

/// The copies of an array-like type `$t` (one with `region()`, `driver()` and an
/// element type `E`): `reads` for every one, `writes` for the exclusive ones.
macro_rules! array_copies {
    (reads $t:ty, [$($g:tt)*]) => {
        impl<$($g)*> $t {
            /// Copies every element into `dst` (its length: [`len`](Self::len)), in
            /// order, x fastest; returns when done.
            pub fn copy_to_host(&self, dst: &mut [E]) -> Result<(), $crate::CudaError> {
                let region = self.region();
                $crate::memory::same_len(dst.len(), region.elements())?;
                // SAFETY: `dst` holds the array's elements, writable, and is host
                // memory the array cannot alias.
                unsafe {
                    region.copy($crate::array::copy::Linear::Host(dst.as_mut_ptr().cast()), false)
                }
            }

            /// Its elements, copied to the host in order, x fastest.
            pub fn to_vec(&self) -> Result<Vec<E>, $crate::CudaError> {
                let region = self.region();
                let n = region.elements();
                let mut v = Vec::<E>::with_capacity(n);
                // SAFETY: the spare capacity holds `n` writable elements.
                unsafe {
                    region.copy($crate::array::copy::Linear::Host(v.as_mut_ptr().cast()), false)?;
                    // The copy wrote `n` valid elements (`E: DeviceCopy`).
                    v.set_len(n);
                }
                Ok(v)
            }

            /// Copies every element into device memory of the same element type and
            /// length (CF38); returns when done.
            pub fn copy_to(
                &self,
                dst: &mut impl $crate::memory::DeviceWrite<E>,
            ) -> Result<(), $crate::CudaError> {
                let region = self.region();
                let dst = dst.view_mut();
                $crate::context::same_driver(region.driver, dst.driver())?;
                $crate::memory::same_len(dst.len(), region.elements())?;
                let ptr = dst.device_ptr();
                $crate::memory::in_stream_order(
                    region.driver,
                    dst.stream_order(),
                    dst.host_mark(),
                    // SAFETY: an exclusive view of the array's size of this driver,
                    // in host order (`in_stream_order`); an array is no linear memory.
                    || unsafe { region.copy($crate::array::copy::Linear::Device(ptr), false) },
                )
            }
        }
    };
    (writes $t:ty, [$($g:tt)*]) => {
        impl<$($g)*> $t {
            /// Copies `src` (its length: [`len`](Self::len)) into the array, in
            /// order, x fastest; returns when done.
            pub fn copy_from_host(&mut self, src: &[E]) -> Result<(), $crate::CudaError> {
                let region = self.region();
                $crate::memory::same_len(region.elements(), src.len())?;
                // SAFETY: `src` holds the array's elements, readable; the copy only
                // reads it.
                unsafe {
                    region.copy(
                        $crate::array::copy::Linear::Host(src.as_ptr().cast_mut().cast()),
                        true,
                    )
                }
            }

            /// Copies device memory of the same element type and length into the
            /// array (CF38); returns when done.
            pub fn copy_from(
                &mut self,
                src: &impl $crate::memory::DeviceRead<E>,
            ) -> Result<(), $crate::CudaError> {
                let region = self.region();
                let src = src.view();
                $crate::context::same_driver(region.driver, src.driver())?;
                $crate::memory::same_len(region.elements(), src.len())?;
                let ptr = src.device_ptr();
                $crate::memory::in_stream_order(
                    region.driver,
                    src.stream_order(),
                    src.host_mark(),
                    // SAFETY: a view of the array's size of this driver, in host order
                    // (`in_stream_order`); the copy only reads it.
                    || unsafe { region.copy($crate::array::copy::Linear::Device(ptr), true) },
                )
            }
        }
    };
}
pub(crate) use array_copies;
