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

mod builder;
mod checks;
mod layout;
mod params;

pub use builder::TensorMapBuilder;
pub use layout::{MAX_RANK, TensorKind, TensorLayout};
pub use params::{TensorMapIn, TensorMapOut};

use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::memory::{DeviceBuffer, DeviceCopy, DeviceSlice, DeviceSliceMut};
use crate::sys::{CUtensorMap, CUtensorMapDataType as Dt};
use builder::Corners;
use checks::check_memory;
use core::ffi::c_void;
use core::marker::PhantomData;
use layout::Layout;

/// A map whose kernels may only load through it (made from shared device memory).
#[derive(Debug)]
pub struct ReadOnly(());
/// A map whose kernels may load and store through it (made from exclusive device
/// memory).
#[derive(Debug)]
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

/// Device memory a tensor map may describe, borrowed for `'buf`: `&DeviceBuffer` and
/// [`DeviceSlice`] (a [`ReadOnly`] map), `&mut DeviceBuffer` and [`DeviceSliceMut`] (a
/// [`ReadWrite`] map). Sealed: the address and size reach the driver.
pub trait TensorMemory<'buf>: memory_sealed::Sealed<'buf> {
    /// What a kernel may do through a map of this memory.
    type Access: Access;
}

mod memory_sealed {
    use crate::loader::Driver;
    use crate::sys::CUdeviceptr;

    /// (driver, address, bytes, the one stream it may be used on, its mark) of
    /// memory borrowed for `'buf`.
    pub type Extent<'buf> = (
        &'static Driver,
        CUdeviceptr,
        u64,
        Option<crate::sys::CUstream>,
        Option<&'buf crate::order::Mark>,
    );

    pub trait Sealed<'buf> {
        /// The memory's [`Extent`].
        fn extent(self) -> Extent<'buf>;
    }
}

macro_rules! tensor_memory {
    ($($ty:ty => $access:ty),*) => {$(
        impl<'buf, T: DeviceCopy> memory_sealed::Sealed<'buf> for $ty {
            fn extent(self) -> memory_sealed::Extent<'buf> {
                let bytes = (self.len() as u64).saturating_mul(size_of::<T>() as u64);
                (self.driver(), self.device_ptr(), bytes, self.stream_order(), self.host_mark())
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
    /// The mark of its memory, if it has one ([`crate::order`]).
    mark: Option<&'buf crate::order::Mark>,
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
        let (driver, address, bytes, order, mark) = memory_sealed::Sealed::extent(memory);
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
        self.mark = mark;
        Ok(())
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
