//! [`TensorMapBuilder`]: a map being described — the memory, the free parameters, the
//! constructor's pixel box — and [`encode`](TensorMapBuilder::encode), which checks it
//! (see `checks`) and calls `cuTensorMapEncode*`.

use super::checks::{check_layout, check_memory, refuse};
use super::layout::{Layout, Shape};
use super::{Access, TensorKind, TensorLayout, TensorMap, TensorMemory, Tied, memory_sealed};
use crate::context::CurrentContext;
use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::sys::{CUdeviceptr, CUtensorMap, CUtensorMapFloatOOBfill, CUtensorMapL2promotion};
use core::ffi::c_void;
use core::marker::PhantomData;

/// The free parameters of each kind: the constructor called, with the pixel box.
#[derive(Debug, Clone)]
pub(super) enum Corners {
    Tiled,
    Im2col { lower: Vec<i32>, upper: Vec<i32> },
    Im2colWide { lower: i32, upper: i32 },
}

/// A tensor map of layout `L` being described; [`encode`](Self::encode) checks and
/// encodes it. L2 promotion and out-of-bounds fill default to `NONE`.
#[must_use = "a builder does nothing until `encode` is called"]
pub struct TensorMapBuilder<'buf, A: Access, L: TensorLayout> {
    driver: &'static Driver,
    address: CUdeviceptr,
    bytes: u64,
    order: Option<crate::sys::CUstream>,
    mark: Option<&'buf crate::order::Mark>,
    layout: Layout,
    corners: Corners,
    _buf: Tied<'buf, A, L>,
}

impl<A: Access, L: TensorLayout> core::fmt::Debug for TensorMapBuilder<'_, A, L> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TensorMapBuilder")
            .field("layout", &crate::memory::short_type_name::<L>())
            .field("address", &format_args!("{:#x}", self.address))
            .field("bytes", &self.bytes)
            .field("dtype", &self.layout.dtype)
            .field("dims", &self.layout.dims)
            .field("strides", &self.layout.strides)
            .finish_non_exhaustive()
    }
}

impl<'buf, A: Access, L: TensorLayout> TensorMapBuilder<'buf, A, L> {
    pub(super) fn new<M: TensorMemory<'buf, Access = A>>(
        memory: M,
        dims: &[u64],
        strides: &[u64],
        corners: Corners,
    ) -> Self {
        let (driver, address, bytes, order, mark) = memory_sealed::Sealed::extent(memory);
        Self {
            driver,
            address,
            bytes,
            order,
            mark,
            layout: Layout {
                dtype: L::DATA_TYPE,
                dims: dims.to_vec(),
                strides: strides.to_vec(),
                element_strides: L::ELEMENT_STRIDES.to_vec(),
                interleave: L::INTERLEAVE,
                swizzle: L::SWIZZLE,
                l2: CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_NONE,
                oob: CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            },
            corners,
            _buf: PhantomData,
        }
    }

    /// The L2 promotion.
    pub fn l2_promotion(mut self, l2: CUtensorMapL2promotion) -> Self {
        self.layout.l2 = l2;
        self
    }

    /// The out-of-bounds fill.
    pub fn oob_fill(mut self, oob: CUtensorMapFloatOOBfill) -> Self {
        self.layout.oob = oob;
        self
    }

    /// The layout's kind with this constructor's pixel box, or the refusal of a
    /// constructor of another kind.
    fn shape(&self) -> Result<Shape, CudaError> {
        Ok(match (L::KIND, &self.corners) {
            (TensorKind::Tiled { box_dims }, Corners::Tiled) => Shape::Tiled {
                box_dims: box_dims.to_vec(),
            },
            (
                TensorKind::Im2col {
                    channels_per_pixel,
                    pixels_per_column,
                },
                Corners::Im2col { lower, upper },
            ) => Shape::Im2col {
                lower: lower.clone(),
                upper: upper.clone(),
                channels: channels_per_pixel,
                pixels: pixels_per_column,
            },
            (
                TensorKind::Im2colWide {
                    channels_per_pixel,
                    pixels_per_column,
                    mode,
                },
                Corners::Im2colWide { lower, upper },
            ) => Shape::Im2colWide {
                lower: *lower,
                upper: *upper,
                channels: channels_per_pixel,
                pixels: pixels_per_column,
                mode,
            },
            (kind, corners) => {
                let constructor = match corners {
                    Corners::Tiled => "tiled",
                    Corners::Im2col { .. } => "im2col",
                    Corners::Im2colWide { .. } => "im2col_wide",
                };
                return Err(refuse(
                    "TensorLayout::KIND",
                    format!(
                        "the layout {} is {kind:?}, which TensorMap::{constructor} does not build",
                        core::any::type_name::<L>()
                    ),
                ));
            }
        })
    }

    /// Checks every rule (see the module docs) and encodes the map under `ctx`.
    pub fn encode(self, ctx: &CurrentContext<'_>) -> Result<TensorMap<'buf, A, L>, CudaError> {
        if !core::ptr::eq(ctx.driver(), self.driver) {
            return Err(CudaError::ForeignDriver);
        }
        let shape = self.shape()?;
        let (major, minor) = ctx.device()?.compute_capability()?;
        let needs = match shape {
            Shape::Im2colWide { .. } => (10, 0),
            _ => (9, 0),
        };
        if (major, minor) < needs {
            return Err(refuse(
                "device",
                format!(
                    "this kind of tensor map needs compute capability {}.{} or higher; the device has {major}.{minor}",
                    needs.0, needs.1
                ),
            ));
        }
        check_layout(&self.layout, &shape)?;
        check_memory(&self.layout, self.address, self.bytes)?;
        let l = &self.layout;
        let rank = l.dims.len() as u32;
        let mut raw = CUtensorMap { opaque: [0; 16] };
        let t = self.driver.table();
        let address = self.address as *mut c_void;
        // SAFETY: `raw` is 64-byte aligned (its type's alignment); every array holds the
        // count the rank asks for (checked); the address is of live memory borrowed for
        // `'buf` in which the tensor fits (checked); the context is current.
        let r = unsafe {
            match &shape {
                Shape::Tiled { box_dims } => t.cuTensorMapEncodeTiled()?(
                    &mut raw,
                    l.dtype,
                    rank,
                    address,
                    l.dims.as_ptr(),
                    l.strides.as_ptr(),
                    box_dims.as_ptr(),
                    l.element_strides.as_ptr(),
                    l.interleave,
                    l.swizzle,
                    l.l2,
                    l.oob,
                ),
                Shape::Im2col {
                    lower,
                    upper,
                    channels,
                    pixels,
                } => t.cuTensorMapEncodeIm2col()?(
                    &mut raw,
                    l.dtype,
                    rank,
                    address,
                    l.dims.as_ptr(),
                    l.strides.as_ptr(),
                    lower.as_ptr(),
                    upper.as_ptr(),
                    *channels,
                    *pixels,
                    l.element_strides.as_ptr(),
                    l.interleave,
                    l.swizzle,
                    l.l2,
                    l.oob,
                ),
                Shape::Im2colWide {
                    lower,
                    upper,
                    channels,
                    pixels,
                    mode,
                } => t.cuTensorMapEncodeIm2colWide()?(
                    &mut raw,
                    l.dtype,
                    rank,
                    address,
                    l.dims.as_ptr(),
                    l.strides.as_ptr(),
                    *lower,
                    *upper,
                    *channels,
                    *pixels,
                    l.element_strides.as_ptr(),
                    l.interleave,
                    *mode,
                    l.swizzle,
                    l.l2,
                    l.oob,
                ),
            }
        };
        check(r)?;
        Ok(TensorMap {
            raw,
            driver: self.driver,
            order: self.order,
            mark: self.mark,
            layout: self.layout,
            _buf: PhantomData,
        })
    }
}
