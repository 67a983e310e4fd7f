//! Tensor maps (TMA descriptors): [`TensorMap<'buf, A>`], the 128-byte, 64-byte-aligned
//! descriptor through which a kernel's Tensor Memory Accelerator loads and stores tiles
//! of a tensor in device memory — tiled ([`TensorMap::tiled`]), im2col
//! ([`TensorMap::im2col`]) and im2col-wide ([`TensorMap::im2col_wide`]) — of a layout
//! fixed by its type ([`TensorLayout`]), built by [`TensorMapBuilder`] and encoded by
//! `cuTensorMapEncode*`.
//!
//! # Every documented rule is checked first
//!
//! [`TensorMapBuilder::encode`] checks each requirement the CUDA 12.9 header lists for
//! `cuTensorMapEncodeTiled`, `cuTensorMapEncodeIm2col` and `cuTensorMapEncodeIm2colWide`
//! before it calls the driver, and refuses a violation with
//! [`CudaError::InvalidTensorMap`], naming the C parameter (`boxDim`, `globalStrides`,
//! ...) and the rule: rank (1 to 5; 3 to 5 with interleave or im2col), the global
//! address's alignment (16 bytes; 32 with 32-byte interleave or the `ALIGN16B` packed
//! types), dimensions (1 to 2³²; multiples of 128 or 2 along dimension 0 for the packed
//! types; with interleave, dimension 0 at most one 16- or 32-byte chunk — this crate's
//! rule, see below), strides (multiples of 16 — 32 with 32-byte interleave or `ALIGN16B` types —
//! below 2⁴⁰, each holding the dimensions below it:
//! `globalStrides[0] ≥ globalDim[0] × element size`,
//! `globalStrides[i] ≥ globalStrides[i-1] × globalDim[i]`), box sizes (1 to 256; the inner
//! one a multiple of 16 bytes without interleave; 128 for the `ALIGN16B` types), element
//! strides (1 to 8), the swizzle span (the inner box dimension in bytes at most the
//! swizzle's 32, 64 or 128 bytes without interleave), interleave/swizzle combinations
//! (32-byte interleave needs the 32-byte swizzle; `16U6_ALIGN16B` needs no interleave;
//! the packed types allow only some swizzles; im2col-wide only the 64- and 128-byte
//! ones), the NaN out-of-bounds fill (floating-point types only), the im2col pixel-box
//! corners (one offset in `[-32768, 32767]` for rank 3, two in `[-128, 127]` for rank 4,
//! three in `[-16, 15]` for rank 5; a box of non-zero size in each spatial dimension),
//! channels per pixel (1 to 256; 128 for the `ALIGN16B` types) and pixels per column (1
//! to 1024), enumerators the header does not define, and the device (compute
//! capability 9.0 or higher; 10.0 for im2col-wide).
//!
//! Corner offsets: `pixelBoxLowerCorner[i]` and `pixelBoxUpperCorner[i]` offset
//! spatial dimension `globalDim[i + 1]` (dimension 0 is the channels); the box along it
//! spans `globalDim[i + 1] - lower + upper` pixels, which must be positive.
//!
//! # The layout is in the type
//!
//! What a TMA access writes into a kernel's shared memory — how many bytes, in what
//! arrangement — and the rank and kind of coordinates the instruction takes are fixed
//! by the descriptor, whose layout is undocumented: a kernel cannot inspect it. So
//! they are part of the map's type: a [`TensorLayout`] `L` names the data type, the
//! kind (tiled, im2col, im2col-wide) with its box (`boxDim`, or channels per pixel ×
//! pixels per column, and the im2col-wide mode), the element strides (whose length is
//! the rank), the interleave and the swizzle. A [`TensorMap<'buf, A, L>`] is built
//! with exactly those; what stays free is what the TMA unit clips each access to —
//! the dimensions, the global strides, the address (within the borrowed memory), the
//! im2col pixel box — and the L2 promotion and out-of-bounds fill. A kernel declares
//! its parameter [`TensorMapIn<L>`] or [`TensorMapOut<L>`] and receives only maps of
//! layout `L` (CF28): its declaration's contract
//! ([`Module::function`](crate::module::Module::function)) is "correct for every map
//! of layout `L`", which a kernel with a shared-memory tile sized for `L` can keep.
//!
//! ```
//! use oxicuda_driver::sys::CUtensorMapDataType as Dt;
//! use oxicuda_driver::tensor_map::{TensorKind, TensorLayout};
//!
//! /// 64 × 16 tiles of `f32`, as the kernel's `__shared__ float tile[16][64]` holds.
//! struct F32Tile64x16;
//! impl TensorLayout for F32Tile64x16 {
//!     const DATA_TYPE: Dt = Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
//!     const KIND: TensorKind = TensorKind::Tiled { box_dims: &[64, 16] };
//!     const ELEMENT_STRIDES: &'static [u32] = &[1, 1];
//!     // INTERLEAVE and SWIZZLE default to NONE.
//! }
//! ```
//!
//! A layout's constants are checked at [`encode`](TensorMapBuilder::encode) like every
//! other parameter; a constructor of another kind than `L::KIND` is refused
//! (`TensorLayout::KIND`).
//!
//! # The map addresses only the memory it borrows
//!
//! A map is made from this crate's device memory — `&buffer` or a [`DeviceSlice`] for a
//! [`ReadOnly`] map, `&mut buffer` or a [`DeviceSliceMut`] for a [`ReadWrite`] map —
//! and keeps that borrow for `'buf`: the map cannot outlive the memory (CF28), and a
//! read-write map holds it exclusively, like `&mut`. The tensor the map describes must
//! lie inside that memory: its span, `inner + Σ (globalDim[i] - 1) × globalStrides[i-1]`
//! bytes, must not exceed the memory's bytes — the TMA unit clips every access to the
//! tensor's bounds, so a kernel using the map cannot reach past the allocation. `inner`
//! is dimension 0's bytes; with interleave it is the interleave's 16- or 32-byte chunk,
//! and dimension 0 may not hold more than one chunk (`globalDim`: the documented
//! interleaved layouts, `NC/8HWC8` and `NC/16HWC16`, hold exactly one; what the unit
//! does with more is undocumented, so the span would not be exact).
//!
//! ```compile_fail
//! # use oxicuda_driver::{CurrentContext, sys::CUtensorMapDataType as Dt};
//! # use oxicuda_driver::tensor_map::{TensorKind, TensorLayout, TensorMap};
//! # struct Tile;
//! # impl TensorLayout for Tile {
//! #     const DATA_TYPE: Dt = Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
//! #     const KIND: TensorKind = TensorKind::Tiled { box_dims: &[16, 16] };
//! #     const ELEMENT_STRIDES: &'static [u32] = &[1, 1];
//! # }
//! # fn f(cur: &CurrentContext<'_>) {
//! // CF28: the map outlives the buffer it describes.
//! let map = {
//!     let mut buf = cur.alloc::<f32>(1024).unwrap();
//!     TensorMap::<_, Tile>::tiled(&mut buf, &[64, 16], &[256]).encode(cur)
//! };
//! # drop(map);
//! # }
//! ```
//!
//! # Passing a map to a kernel
//!
//! A kernel declares a tensor-map parameter as [`TensorMapIn<L>`] (the kernel only
//! loads through it) or [`TensorMapOut<L>`] (it may also store through it). In CUDA C++
//! it is a `const __grid_constant__ CUtensorMap` parameter; in PTX `.param .align 64
//! .b8 name[128]` — 128 bytes at an offset aligned to 64, which the signature check at
//! lookup compares. A launch passes `&map` for `TensorMapIn<L>` (a map of layout `L`)
//! and `&mut map` for `TensorMapOut<L>` (a [`ReadWrite`] map of layout `L`): the
//! argument's bytes are the encoded descriptor, and only an encoded map can be passed.
//! A graph kernel node takes `&map` for both (for `TensorMapOut<L>`, a [`ReadWrite`]
//! one).
//!
//! What the types do not ensure: a kernel declared with a `TensorMapIn<L>` parameter
//! that stores through it, or that stages an access of `L` in less shared memory than
//! it writes, breaks its declaration's contract (the declaration is the `unsafe` step,
//! as for `In<T>`).

use crate::context::CurrentContext;
use crate::error::{CudaError, check};
use crate::launch::{GraphArg, KernelParam, sealed};
use crate::loader::Driver;
use crate::memory::{DeviceBuffer, DeviceCopy, DeviceSlice, DeviceSliceMut};
use crate::sys::{
    CUdeviceptr, CUtensorMap, CUtensorMapDataType as Dt, CUtensorMapFloatOOBfill,
    CUtensorMapIm2ColWideMode, CUtensorMapInterleave as Il, CUtensorMapL2promotion,
    CUtensorMapSwizzle as Sw,
};
use core::ffi::c_void;
use core::marker::PhantomData;

/// The largest rank a tensor map has.
pub const MAX_RANK: usize = 5;

/// A map whose kernels may only load through it (made from shared device memory).
pub struct ReadOnly(());
/// A map whose kernels may load and store through it (made from exclusive device
/// memory).
pub struct ReadWrite(());

mod access {
    /// [`ReadOnly`](super::ReadOnly) or [`ReadWrite`](super::ReadWrite).
    pub trait Sealed {}
    impl Sealed for super::ReadOnly {}
    impl Sealed for super::ReadWrite {}
}

/// What a kernel may do through a map: [`ReadOnly`] or [`ReadWrite`]. Sealed.
pub trait Access: access::Sealed {}
impl Access for ReadOnly {}
impl Access for ReadWrite {}

/// The layout of a tensor map, fixed by a type: what one TMA access through a map of
/// this layout writes into (or reads from) a kernel's shared memory, and the rank and
/// kind of coordinates it takes. A [`TensorMap<'_, A, L>`](TensorMap) is encoded with
/// exactly these values; a kernel parameter [`TensorMapIn<L>`] or [`TensorMapOut<L>`]
/// takes only maps of layout `L`.
///
/// # The kernel's contract
///
/// Declaring a kernel with a `TensorMapIn<L>` or `TensorMapOut<L>` parameter
/// ([`Module::function`](crate::module::Module::function), the `unsafe` step) promises
/// that the kernel is correct for **every** map of layout `L` the builder accepts —
/// any dimensions, global strides, address within the borrowed memory, im2col pixel
/// box, L2 promotion and out-of-bounds fill: it issues TMA operations of `L`'s kind
/// and rank, stages each access in shared memory that holds what one access of `L`
/// writes (the box, or channels per pixel × pixels per column, of `DATA_TYPE`
/// elements, after `ELEMENT_STRIDES`, `INTERLEAVE` and `SWIZZLE`) at the alignment the
/// swizzle needs, and stores through the map only when declared `TensorMapOut<L>`.
///
/// Implementing the trait is safe: its items are constants, which
/// [`encode`](TensorMapBuilder::encode) checks like any other parameter (a layout the
/// header forbids is refused); nothing of it reaches the driver unchecked, and two
/// layout types are two layouts even where their values agree.
pub trait TensorLayout {
    /// `tensorDataType`.
    const DATA_TYPE: Dt;
    /// The kind of map, with its box.
    const KIND: TensorKind;
    /// `elementStrides`, innermost first; its length is the map's rank
    /// (`tensorRank`), which `globalDim` must match.
    const ELEMENT_STRIDES: &'static [u32];
    /// `interleave`.
    const INTERLEAVE: Il = Il::CU_TENSOR_MAP_INTERLEAVE_NONE;
    /// `swizzle`.
    const SWIZZLE: Sw = Sw::CU_TENSOR_MAP_SWIZZLE_NONE;
}

/// The kind of a [`TensorLayout`], with what fixes the size of one access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TensorKind {
    /// A tiled map (`cuTensorMapEncodeTiled`, [`TensorMap::tiled`]): `boxDim`, the
    /// elements per dimension one access copies, innermost first (one per dimension).
    Tiled {
        /// `boxDim`.
        box_dims: &'static [u32],
    },
    /// An im2col map (`cuTensorMapEncodeIm2col`, [`TensorMap::im2col`]; rank 3 to 5,
    /// NWC, NHWC or NDHWC).
    Im2col {
        /// `channelsPerPixel`: elements along C per pixel.
        channels_per_pixel: u32,
        /// `pixelsPerColumn`: pixels per access.
        pixels_per_column: u32,
    },
    /// An im2col-wide map (`cuTensorMapEncodeIm2colWide`, [`TensorMap::im2col_wide`],
    /// compute capability 10.0 or higher; its swizzle must be 64 or 128 bytes).
    Im2colWide {
        /// `channelsPerPixel`.
        channels_per_pixel: u32,
        /// `pixelsPerColumn` (ignored in `W128` mode).
        pixels_per_column: u32,
        /// `mode`.
        mode: CUtensorMapIm2ColWideMode,
    },
}

/// Device memory a tensor map may describe, borrowed for `'buf`: `&DeviceBuffer` and
/// [`DeviceSlice`] (a [`ReadOnly`] map), `&mut DeviceBuffer` and [`DeviceSliceMut`] (a
/// [`ReadWrite`] map). Sealed: the address and size reach the driver.
pub trait TensorMemory<'buf>: memory_sealed::Sealed {
    /// What a kernel may do through a map of this memory.
    type Access: Access;
}

mod memory_sealed {
    use crate::loader::Driver;
    use crate::sys::CUdeviceptr;

    pub trait Sealed {
        /// (driver, address, bytes, the one stream it may be used on) of the memory.
        fn extent(
            &self,
        ) -> (
            &'static Driver,
            CUdeviceptr,
            u64,
            Option<crate::sys::CUstream>,
        );
    }
}

macro_rules! tensor_memory {
    ($($ty:ty => $access:ty),*) => {$(
        impl<'buf, T: DeviceCopy> memory_sealed::Sealed for $ty {
            fn extent(&self) -> (&'static Driver, CUdeviceptr, u64, Option<crate::sys::CUstream>) {
                let bytes = (self.len() as u64).saturating_mul(size_of::<T>() as u64);
                (self.driver(), self.device_ptr(), bytes, self.stream_order())
            }
        }
        impl<'buf, T: DeviceCopy> TensorMemory<'buf> for $ty {
            type Access = $access;
        }
    )*};
}
tensor_memory!(
    &'buf DeviceBuffer<'_, T> => ReadOnly,
    DeviceSlice<'buf, T> => ReadOnly,
    &'buf mut DeviceBuffer<'_, T> => ReadWrite,
    DeviceSliceMut<'buf, T> => ReadWrite
);

/// An encoded tensor map of layout `L` describing device memory borrowed for `'buf`;
/// `A` says what a kernel may do through it. Pass it to a kernel parameter declared
/// [`TensorMapIn<L>`] or [`TensorMapOut<L>`].
pub struct TensorMap<'buf, A: Access, L: TensorLayout> {
    raw: CUtensorMap,
    driver: &'static Driver,
    /// The one stream a launch with the map may be queued on (its memory's, if it is a
    /// stream-ordered buffer's).
    order: Option<crate::sys::CUstream>,
    layout: Layout,
    _buf: Tied<'buf, A, L>,
}

impl<A: Access, L: TensorLayout> core::fmt::Debug for TensorMap<'_, A, L> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TensorMap")
            .field("layout", &core::any::type_name::<L>())
            .field("dtype", &self.layout.dtype)
            .field("dims", &self.layout.dims)
            .field("strides", &self.layout.strides)
            .finish_non_exhaustive()
    }
}

/// What a map and its builder hold without storing: the memory's borrow, the access,
/// the layout; `*const ()` keeps them neither `Send` nor `Sync`.
type Tied<'buf, A, L> = PhantomData<(&'buf (), A, fn() -> L, *const ())>;

/// The layout part of a descriptor (what every kind shares).
#[derive(Debug, Clone)]
struct Layout {
    dtype: Dt,
    dims: Vec<u64>,
    strides: Vec<u64>,
    element_strides: Vec<u32>,
    interleave: Il,
    swizzle: Sw,
    l2: CUtensorMapL2promotion,
    oob: CUtensorMapFloatOOBfill,
}

/// What kind of descriptor, with its own parameters.
#[derive(Debug, Clone)]
enum Shape {
    Tiled {
        box_dims: Vec<u32>,
    },
    Im2col {
        lower: Vec<i32>,
        upper: Vec<i32>,
        channels: u32,
        pixels: u32,
    },
    Im2colWide {
        lower: i32,
        upper: i32,
        channels: u32,
        pixels: u32,
        mode: CUtensorMapIm2ColWideMode,
    },
}

/// The free parameters of each kind: the constructor called, with the pixel box.
#[derive(Debug, Clone)]
enum Corners {
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
    layout: Layout,
    corners: Corners,
    _buf: Tied<'buf, A, L>,
}

impl<'buf, A: Access, L: TensorLayout> TensorMap<'buf, A, L> {
    /// A tiled map of layout `L` (whose [`KIND`](TensorLayout::KIND) must be
    /// [`TensorKind::Tiled`]) of `memory`: `dims` elements per dimension (innermost
    /// first), `strides` bytes between consecutive indices of dimensions 1.. (one fewer
    /// than `dims`) (`cuTensorMapEncodeTiled`).
    pub fn tiled<M: TensorMemory<'buf, Access = A>>(
        memory: M,
        dims: &[u64],
        strides: &[u64],
    ) -> TensorMapBuilder<'buf, A, L> {
        TensorMapBuilder::new(memory, dims, strides, Corners::Tiled)
    }

    /// An im2col map of layout `L` (whose kind must be [`TensorKind::Im2col`]) of
    /// `memory` (`cuTensorMapEncodeIm2col`): rank 3 to 5, layout NWC, NHWC or NDHWC;
    /// `lower`/`upper` the pixel-box corner offsets (rank − 2 of each, see the module
    /// docs).
    pub fn im2col<M: TensorMemory<'buf, Access = A>>(
        memory: M,
        dims: &[u64],
        strides: &[u64],
        lower: &[i32],
        upper: &[i32],
    ) -> TensorMapBuilder<'buf, A, L> {
        let corners = Corners::Im2col {
            lower: lower.to_vec(),
            upper: upper.to_vec(),
        };
        TensorMapBuilder::new(memory, dims, strides, corners)
    }

    /// An im2col-wide map of layout `L` (whose kind must be
    /// [`TensorKind::Im2colWide`]) of `memory` (`cuTensorMapEncodeIm2colWide`, compute
    /// capability 10.0 or higher): like [`im2col`](Self::im2col) with one corner offset
    /// each, along W.
    pub fn im2col_wide<M: TensorMemory<'buf, Access = A>>(
        memory: M,
        dims: &[u64],
        strides: &[u64],
        lower_width: i32,
        upper_width: i32,
    ) -> TensorMapBuilder<'buf, A, L> {
        let corners = Corners::Im2colWide {
            lower: lower_width,
            upper: upper_width,
        };
        TensorMapBuilder::new(memory, dims, strides, corners)
    }

    /// The encoded descriptor (its layout is the driver's and undocumented).
    pub fn as_raw(&self) -> &CUtensorMap {
        &self.raw
    }

    /// Points the map at other memory of the same access, borrowed for as long
    /// (`cuTensorMapReplaceAddress`), after the same checks of the address's alignment
    /// and the tensor's span as [`TensorMapBuilder::encode`]. On error the map is
    /// unchanged.
    pub fn replace_address<M: TensorMemory<'buf, Access = A>>(
        &mut self,
        memory: M,
    ) -> Result<(), CudaError> {
        let (driver, address, bytes, order) = memory_sealed::Sealed::extent(&memory);
        if !core::ptr::eq(driver, self.driver) {
            return Err(CudaError::ForeignDriver);
        }
        check_memory(&self.layout, address, bytes)?;
        let mut raw = self.raw;
        // SAFETY: `raw` is a 64-byte-aligned descriptor this driver encoded; the address
        // is of live memory borrowed for `'buf`, and the tensor fits in it (checked).
        check(unsafe {
            self.driver.table().cuTensorMapReplaceAddress()?(&mut raw, address as *mut c_void)
        })?;
        self.raw = raw;
        self.order = order;
        Ok(())
    }
}

impl<'buf, A: Access, L: TensorLayout> TensorMapBuilder<'buf, A, L> {
    fn new<M: TensorMemory<'buf, Access = A>>(
        memory: M,
        dims: &[u64],
        strides: &[u64],
        corners: Corners,
    ) -> Self {
        let (driver, address, bytes, order) = memory_sealed::Sealed::extent(&memory);
        Self {
            driver,
            address,
            bytes,
            order,
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
            layout: self.layout,
            _buf: PhantomData,
        })
    }
}

fn refuse(parameter: &'static str, rule: impl Into<String>) -> CudaError {
    CudaError::InvalidTensorMap {
        parameter,
        rule: rule.into(),
    }
}

/// Whether `dtype` is one of the packed `16U4_ALIGN16B`/`16U6_ALIGN16B` types.
fn align16b(dtype: Dt) -> bool {
    matches!(
        dtype,
        Dt::CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B | Dt::CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B
    )
}

/// Whether `dtype` is one of the packed sub-byte types.
fn packed(dtype: Dt) -> bool {
    align16b(dtype) || dtype == Dt::CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B
}

/// Bytes of `n` elements of `dtype` along dimension 0: `16U4_ALIGN8B` packs two in a
/// byte (rounded up); the `ALIGN16B` types take 16 bytes per 16 values, gaps included.
fn inner_bytes(dtype: Dt, n: u64) -> u64 {
    let size: u64 = match dtype {
        Dt::CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B => return n.div_ceil(2),
        Dt::CU_TENSOR_MAP_DATA_TYPE_UINT8
        | Dt::CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B
        | Dt::CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B => 1,
        Dt::CU_TENSOR_MAP_DATA_TYPE_UINT16
        | Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT16
        | Dt::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 => 2,
        Dt::CU_TENSOR_MAP_DATA_TYPE_UINT64
        | Dt::CU_TENSOR_MAP_DATA_TYPE_INT64
        | Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT64 => 8,
        _ => 4,
    };
    n.saturating_mul(size)
}

/// The swizzle span in bytes (0 for none).
fn swizzle_bytes(s: Sw) -> u64 {
    match s {
        Sw::CU_TENSOR_MAP_SWIZZLE_32B => 32,
        Sw::CU_TENSOR_MAP_SWIZZLE_64B => 64,
        Sw::CU_TENSOR_MAP_SWIZZLE_NONE => 0,
        _ => 128,
    }
}

/// Every rule of the header on the descriptor's parameters (not its address).
fn check_layout(l: &Layout, shape: &Shape) -> Result<(), CudaError> {
    let known = |name: Option<&str>, parameter, what: &str| {
        name.map(|_| ()).ok_or_else(|| {
            refuse(
                parameter,
                format!("not a {what} the CUDA 12.9 header defines"),
            )
        })
    };
    known(l.dtype.name(), "tensorDataType", "CUtensorMapDataType")?;
    known(l.interleave.name(), "interleave", "CUtensorMapInterleave")?;
    known(l.swizzle.name(), "swizzle", "CUtensorMapSwizzle")?;
    known(l.l2.name(), "l2Promotion", "CUtensorMapL2promotion")?;
    known(l.oob.name(), "oobFill", "CUtensorMapFloatOOBfill")?;
    if let Shape::Im2colWide { mode, .. } = shape {
        known(mode.name(), "mode", "CUtensorMapIm2ColWideMode")?;
    }

    let rank = l.dims.len();
    let interleaved = l.interleave != Il::CU_TENSOR_MAP_INTERLEAVE_NONE;
    match shape {
        Shape::Tiled { .. } if !(1..=MAX_RANK).contains(&rank) => {
            return Err(refuse(
                "tensorRank",
                format!("must be 1 to 5 (the length of globalDim); got {rank}"),
            ));
        }
        Shape::Tiled { .. } if interleaved && rank < 3 => {
            return Err(refuse(
                "tensorRank",
                format!("must be at least 3 when interleave is not NONE; got {rank}"),
            ));
        }
        Shape::Im2col { .. } | Shape::Im2colWide { .. } if !(3..=MAX_RANK).contains(&rank) => {
            return Err(refuse(
                "tensorRank",
                format!("must be 3, 4 or 5 for an im2col map; got {rank}"),
            ));
        }
        _ => {}
    }

    // globalDim
    for &d in &l.dims {
        if d == 0 || d > 1 << 32 {
            return Err(refuse(
                "globalDim",
                format!("each dimension must be 1 to 2^32; got {d}"),
            ));
        }
    }
    let dim0 = l.dims.first().copied().unwrap_or(1);
    if align16b(l.dtype) && dim0 % 128 != 0 {
        return Err(refuse(
            "globalDim",
            format!(
                "globalDim[0] must be a multiple of 128 for {:?}; got {dim0}",
                l.dtype
            ),
        ));
    }
    if l.dtype == Dt::CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B && dim0 % 2 != 0 {
        return Err(refuse(
            "globalDim",
            format!("globalDim[0] must be a multiple of 2 for 16U4_ALIGN8B; got {dim0}"),
        ));
    }

    // globalStrides
    if l.strides.len() + 1 != rank {
        return Err(refuse(
            "globalStrides",
            format!(
                "must hold tensorRank - 1 = {} strides; got {}",
                rank - 1,
                l.strides.len()
            ),
        ));
    }
    let stride_align: u64 = if l.interleave == Il::CU_TENSOR_MAP_INTERLEAVE_32B || align16b(l.dtype)
    {
        32
    } else {
        16
    };
    let mut below = inner_bytes(l.dtype, dim0);
    for (i, (&s, &d)) in l.strides.iter().zip(l.dims.iter().skip(1)).enumerate() {
        if s % stride_align != 0 {
            return Err(refuse(
                "globalStrides",
                format!("globalStrides[{i}] = {s} is not a multiple of {stride_align}"),
            ));
        }
        if s >= 1 << 40 {
            return Err(refuse(
                "globalStrides",
                format!("globalStrides[{i}] = {s} is not below 2^40"),
            ));
        }
        if s < below {
            return Err(refuse(
                "globalStrides",
                format!(
                    "globalStrides[{i}] = {s} is smaller than the {below} bytes of the dimensions below it"
                ),
            ));
        }
        below = s.saturating_mul(d);
    }

    // elementStrides
    if l.element_strides.len() != rank {
        return Err(refuse(
            "elementStrides",
            format!(
                "must hold tensorRank = {rank} strides; got {}",
                l.element_strides.len()
            ),
        ));
    }
    if let Some(e) = l.element_strides.iter().find(|e| !(1..=8).contains(*e)) {
        return Err(refuse(
            "elementStrides",
            format!("each must be 1 to 8; got {e}"),
        ));
    }

    // interleave and swizzle
    if l.interleave == Il::CU_TENSOR_MAP_INTERLEAVE_32B
        && l.swizzle != Sw::CU_TENSOR_MAP_SWIZZLE_32B
    {
        return Err(refuse(
            "swizzle",
            "must be CU_TENSOR_MAP_SWIZZLE_32B when interleave is CU_TENSOR_MAP_INTERLEAVE_32B",
        ));
    }
    if l.dtype == Dt::CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B && interleaved {
        return Err(refuse(
            "interleave",
            "must be CU_TENSOR_MAP_INTERLEAVE_NONE for 16U6_ALIGN16B",
        ));
    }
    // This crate's rule, which makes the span exact: an interleaved dimension 0 holds
    // at most one chunk, as in the documented layouts (NC/8HWC8, NC/16HWC16).
    let chunk = interleave_chunk(l.interleave);
    if interleaved && inner_bytes(l.dtype, dim0) > chunk {
        return Err(refuse(
            "globalDim",
            format!(
                "with {:?}, globalDim[0] × element size must be at most the {chunk}-byte chunk; got {} bytes",
                l.interleave,
                inner_bytes(l.dtype, dim0)
            ),
        ));
    }
    let wide = matches!(shape, Shape::Im2colWide { .. });
    let allowed: Option<&[Sw]> = match (wide, l.dtype) {
        (true, d) if align16b(d) => Some(&[
            Sw::CU_TENSOR_MAP_SWIZZLE_128B,
            Sw::CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B,
        ]),
        (true, _) => Some(&[
            Sw::CU_TENSOR_MAP_SWIZZLE_64B,
            Sw::CU_TENSOR_MAP_SWIZZLE_128B,
            Sw::CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B,
        ]),
        (false, Dt::CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B) => Some(&[
            Sw::CU_TENSOR_MAP_SWIZZLE_NONE,
            Sw::CU_TENSOR_MAP_SWIZZLE_128B,
            Sw::CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B,
            Sw::CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B,
        ]),
        (false, Dt::CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B) => Some(&[
            Sw::CU_TENSOR_MAP_SWIZZLE_NONE,
            Sw::CU_TENSOR_MAP_SWIZZLE_128B,
            Sw::CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B,
        ]),
        _ => None,
    };
    if let Some(allowed) = allowed
        && !allowed.contains(&l.swizzle)
    {
        return Err(refuse(
            "swizzle",
            format!(
                "{:?} is not allowed here (with {:?}{}); allowed: {allowed:?}",
                l.swizzle,
                l.dtype,
                if wide { " in an im2col-wide map" } else { "" }
            ),
        ));
    }

    // oobFill
    let float = matches!(
        l.dtype,
        Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT16
            | Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT32
            | Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT64
            | Dt::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
            | Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ
            | Dt::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32
            | Dt::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ
    );
    if l.oob != CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE && !float {
        return Err(refuse(
            "oobFill",
            format!(
                "the NaN fill needs a floating-point data type; got {:?}",
                l.dtype
            ),
        ));
    }
    debug_assert!(!(float && packed(l.dtype)));

    // The inner box dimension: boxDim[0] or channelsPerPixel.
    let inner = match shape {
        Shape::Tiled { box_dims } => {
            if box_dims.len() != rank {
                return Err(refuse(
                    "boxDim",
                    format!(
                        "must hold tensorRank = {rank} sizes; got {}",
                        box_dims.len()
                    ),
                ));
            }
            if let Some(b) = box_dims.iter().find(|b| !(1..=256).contains(*b)) {
                return Err(refuse("boxDim", format!("each must be 1 to 256; got {b}")));
            }
            let b0 = box_dims.first().copied().unwrap_or(1);
            if align16b(l.dtype) && b0 != 128 {
                return Err(refuse(
                    "boxDim",
                    format!("boxDim[0] must be 128 for {:?}; got {b0}", l.dtype),
                ));
            }
            let bytes = inner_bytes(l.dtype, u64::from(b0));
            if !interleaved && !bytes.is_multiple_of(16) {
                return Err(refuse(
                    "boxDim",
                    format!(
                        "boxDim[0] × element size must be a multiple of 16 bytes without interleave; got {bytes}"
                    ),
                ));
            }
            ("boxDim", bytes)
        }
        Shape::Im2col {
            lower,
            upper,
            channels,
            pixels,
        } => {
            let (n, limit) = match rank {
                3 => (1, 32768),
                4 => (2, 128),
                _ => (3, 16),
            };
            for (parameter, corner) in [
                ("pixelBoxLowerCorner", lower),
                ("pixelBoxUpperCorner", upper),
            ] {
                if corner.len() != n {
                    return Err(refuse(
                        parameter,
                        format!(
                            "must hold tensorRank - 2 = {n} offsets; got {}",
                            corner.len()
                        ),
                    ));
                }
                if let Some(c) = corner.iter().find(|c| !(-limit..limit).contains(*c)) {
                    return Err(refuse(
                        parameter,
                        format!(
                            "each offset must be in [{}, {}] for rank {rank}; got {c}",
                            -limit,
                            limit - 1
                        ),
                    ));
                }
            }
            for ((&lo, &up), &d) in lower.iter().zip(upper).zip(l.dims.iter().skip(1)) {
                box_size(d, lo, up, "pixelBoxUpperCorner")?;
            }
            check_pixels(l.dtype, *channels, *pixels, Some(1024))?;
            (
                "channelsPerPixel",
                inner_bytes(l.dtype, u64::from(*channels)),
            )
        }
        Shape::Im2colWide {
            lower,
            upper,
            channels,
            pixels,
            mode,
        } => {
            for (parameter, c) in [
                ("pixelBoxLowerCornerWidth", lower),
                ("pixelBoxUpperCornerWidth", upper),
            ] {
                if !(-32768..32768).contains(c) {
                    return Err(refuse(
                        parameter,
                        format!("must be in [-32768, 32767]; got {c}"),
                    ));
                }
            }
            box_size(
                l.dims.get(1).copied().unwrap_or(1),
                *lower,
                *upper,
                "pixelBoxUpperCornerWidth",
            )?;
            // pixelsPerColumn is ignored in W128 mode.
            let limit = (*mode != CUtensorMapIm2ColWideMode::CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128)
                .then_some(1024);
            check_pixels(l.dtype, *channels, *pixels, limit)?;
            (
                "channelsPerPixel",
                inner_bytes(l.dtype, u64::from(*channels)),
            )
        }
    };
    let span = swizzle_bytes(l.swizzle);
    if !interleaved && span != 0 && inner.1 > span {
        return Err(refuse(
            inner.0,
            format!(
                "the inner box dimension ({} bytes) must not exceed the {span}-byte span of {:?}",
                inner.1, l.swizzle
            ),
        ));
    }
    Ok(())
}

/// The pixel box along a spatial dimension of `dim` pixels must hold at least one.
fn box_size(dim: u64, lower: i32, upper: i32, parameter: &'static str) -> Result<(), CudaError> {
    let size = dim as i64 - i64::from(lower) + i64::from(upper);
    if size <= 0 {
        return Err(refuse(
            parameter,
            format!(
                "the pixel box must have non-zero size: {dim} - ({lower}) + ({upper}) = {size} pixels"
            ),
        ));
    }
    Ok(())
}

/// `channelsPerPixel` (1 to 256; 128 for the `ALIGN16B` types) and `pixelsPerColumn`
/// (1 to `limit`; not checked without a limit).
fn check_pixels(
    dtype: Dt,
    channels: u32,
    pixels: u32,
    limit: Option<u32>,
) -> Result<(), CudaError> {
    if !(1..=256).contains(&channels) {
        return Err(refuse(
            "channelsPerPixel",
            format!("must be 1 to 256; got {channels}"),
        ));
    }
    if align16b(dtype) && channels != 128 {
        return Err(refuse(
            "channelsPerPixel",
            format!("must be 128 for {dtype:?}; got {channels}"),
        ));
    }
    if let Some(limit) = limit
        && !(1..=limit).contains(&pixels)
    {
        return Err(refuse(
            "pixelsPerColumn",
            format!("must be 1 to {limit}; got {pixels}"),
        ));
    }
    Ok(())
}

/// The address's alignment and the tensor's span within the memory's `bytes`.
fn check_memory(l: &Layout, address: CUdeviceptr, bytes: u64) -> Result<(), CudaError> {
    let align = if l.interleave == Il::CU_TENSOR_MAP_INTERLEAVE_32B || align16b(l.dtype) {
        32
    } else {
        16
    };
    if !address.is_multiple_of(align) {
        return Err(refuse(
            "globalAddress",
            format!("must be {align}-byte aligned; got {address:#x}"),
        ));
    }
    let span = span(l);
    if span > u128::from(bytes) {
        return Err(refuse(
            "globalAddress",
            format!("the tensor spans {span} bytes from it, but the memory holds {bytes}"),
        ));
    }
    Ok(())
}

/// The bytes of one interleave chunk (1 without interleave).
fn interleave_chunk(il: Il) -> u64 {
    match il {
        Il::CU_TENSOR_MAP_INTERLEAVE_16B => 16,
        Il::CU_TENSOR_MAP_INTERLEAVE_32B => 32,
        _ => 1,
    }
}

/// The bytes the tensor spans from its address: the inner dimension (with interleave,
/// the one chunk it may hold: see `check_layout`) plus
/// `(globalDim[i] - 1) × globalStrides[i-1]` for the rest.
fn span(l: &Layout) -> u128 {
    let dim0 = l.dims.first().copied().unwrap_or(0);
    let chunk = interleave_chunk(l.interleave);
    let inner = u128::from(inner_bytes(l.dtype, dim0).div_ceil(chunk) * chunk);
    l.dims
        .iter()
        .skip(1)
        .zip(&l.strides)
        .map(|(&d, &s)| u128::from(d.saturating_sub(1)) * u128::from(s))
        .sum::<u128>()
        + inner
}

/// A kernel parameter holding a tensor map of layout `L` the kernel only loads
/// through: a `const __grid_constant__ CUtensorMap` (PTX `.param .align 64 .b8
/// name[128]`). Takes `&map` of a [`TensorMap`] of layout `L`. Declaring it promises
/// what [`TensorLayout`]'s contract says.
pub struct TensorMapIn<L: TensorLayout>(PhantomData<fn() -> L>);
/// A kernel parameter holding a tensor map of layout `L` the kernel may also store
/// through (same C++ and PTX form as [`TensorMapIn`]). Takes `&mut map` of a
/// [`ReadWrite`] map of layout `L`.
pub struct TensorMapOut<L: TensorLayout>(PhantomData<fn() -> L>);

impl<L: TensorLayout> sealed::Param for TensorMapIn<L> {
    type Class = sealed::Free;
}
impl<L: TensorLayout> sealed::Param for TensorMapOut<L> {
    type Class = sealed::Free;
}
impl<L: TensorLayout> KernelParam for TensorMapIn<L> {
    const SIZE: usize = size_of::<CUtensorMap>();
    const ALIGN: usize = align_of::<CUtensorMap>();
}
impl<L: TensorLayout> KernelParam for TensorMapOut<L> {
    const SIZE: usize = size_of::<CUtensorMap>();
    const ALIGN: usize = align_of::<CUtensorMap>();
}

/// The descriptor's bytes, for the driver to copy into the parameter buffer (it only
/// reads them).
fn descriptor(raw: &CUtensorMap) -> *mut c_void {
    (raw as *const CUtensorMap).cast_mut().cast()
}

impl<A: Access, L: TensorLayout> crate::launch::Arg<TensorMapIn<L>> for &TensorMap<'_, A, L> {}
impl<A: Access, L: TensorLayout> sealed::ArgBytes<TensorMapIn<L>> for &TensorMap<'_, A, L> {
    fn param(&mut self, _scratch: &mut [u64; 2]) -> *mut c_void {
        descriptor(&self.raw)
    }
    fn stream_order(&self) -> Option<crate::sys::CUstream> {
        self.order
    }
}
impl<L: TensorLayout> crate::launch::Arg<TensorMapOut<L>> for &mut TensorMap<'_, ReadWrite, L> {}
impl<L: TensorLayout> sealed::ArgBytes<TensorMapOut<L>> for &mut TensorMap<'_, ReadWrite, L> {
    fn param(&mut self, _scratch: &mut [u64; 2]) -> *mut c_void {
        descriptor(&self.raw)
    }
    fn stream_order(&self) -> Option<crate::sys::CUstream> {
        self.order
    }
}
impl<A: Access, L: TensorLayout> GraphArg<TensorMapIn<L>> for &TensorMap<'_, A, L> {}
impl<L: TensorLayout> GraphArg<TensorMapOut<L>> for &TensorMap<'_, ReadWrite, L> {}
impl<L: TensorLayout> sealed::ArgBytes<TensorMapOut<L>> for &TensorMap<'_, ReadWrite, L> {
    fn param(&mut self, _scratch: &mut [u64; 2]) -> *mut c_void {
        descriptor(&self.raw)
    }
}

/// A layout for the assertions below.
struct AnyLayout;
impl TensorLayout for AnyLayout {
    const DATA_TYPE: Dt = Dt::CU_TENSOR_MAP_DATA_TYPE_UINT8;
    const KIND: TensorKind = TensorKind::Tiled { box_dims: &[16] };
    const ELEMENT_STRIDES: &'static [u32] = &[1];
}

static_assertions::assert_not_impl_any!(TensorMap<'static, ReadWrite, AnyLayout>: Send, Sync, Clone);
static_assertions::const_assert_eq!(size_of::<CUtensorMap>(), 128);
static_assertions::const_assert_eq!(align_of::<CUtensorMap>(), 64);
