//! The layout of a map: [`TensorLayout`], the type that fixes a map's data type, kind
//! and box, element strides, interleave and swizzle; [`TensorKind`]; the descriptor's
//! layout and shape as the builder holds them; and what the data types, interleaves
//! and swizzles measure in bytes.

use crate::sys::{
    CUtensorMapDataType as Dt, CUtensorMapFloatOOBfill, CUtensorMapIm2ColWideMode,
    CUtensorMapInterleave as Il, CUtensorMapL2promotion, CUtensorMapSwizzle as Sw,
};

/// The largest rank a tensor map has.
pub const MAX_RANK: usize = 5;

/// The layout of a tensor map, fixed by a type: what one TMA access through a map of
/// this layout writes into (or reads from) a kernel's shared memory, and the rank and
/// kind of coordinates it takes. A [`TensorMap<'_, A, L>`](super::TensorMap) is
/// encoded with exactly these values; a kernel parameter
/// [`TensorMapIn<L>`](super::TensorMapIn) or [`TensorMapOut<L>`](super::TensorMapOut)
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
/// [`encode`](super::TensorMapBuilder::encode) checks like any other parameter (a
/// layout the header forbids is refused); nothing of it reaches the driver unchecked,
/// and two layout types are two layouts even where their values agree.
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
    /// A tiled map (`cuTensorMapEncodeTiled`, [`TensorMap::tiled`](super::TensorMap::tiled)): `boxDim`, the
    /// elements per dimension one access copies, innermost first (one per dimension).
    Tiled {
        /// `boxDim`.
        box_dims: &'static [u32],
    },
    /// An im2col map (`cuTensorMapEncodeIm2col`, [`TensorMap::im2col`](super::TensorMap::im2col); rank 3 to 5,
    /// NWC, NHWC or NDHWC).
    Im2col {
        /// `channelsPerPixel`: elements along C per pixel.
        channels_per_pixel: u32,
        /// `pixelsPerColumn`: pixels per access.
        pixels_per_column: u32,
    },
    /// An im2col-wide map (`cuTensorMapEncodeIm2colWide`, [`TensorMap::im2col_wide`](super::TensorMap::im2col_wide),
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

/// The layout part of a descriptor (what every kind shares).
#[derive(Debug, Clone)]
pub(super) struct Layout {
    pub(super) dtype: Dt,
    pub(super) dims: Vec<u64>,
    pub(super) strides: Vec<u64>,
    pub(super) element_strides: Vec<u32>,
    pub(super) interleave: Il,
    pub(super) swizzle: Sw,
    pub(super) l2: CUtensorMapL2promotion,
    pub(super) oob: CUtensorMapFloatOOBfill,
}

/// What kind of descriptor, with its own parameters.
#[derive(Debug, Clone)]
pub(super) enum Shape {
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

/// Whether `dtype` is one of the packed `16U4_ALIGN16B`/`16U6_ALIGN16B` types.
pub(super) fn align16b(dtype: Dt) -> bool {
    matches!(
        dtype,
        Dt::CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B | Dt::CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B
    )
}

/// Whether `dtype` is one of the packed sub-byte types.
pub(super) fn packed(dtype: Dt) -> bool {
    align16b(dtype) || dtype == Dt::CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B
}

/// Bytes of `n` elements of `dtype` along dimension 0: `16U4_ALIGN8B` packs two in a
/// byte (rounded up); the `ALIGN16B` types take 16 bytes per 16 values, gaps included.
pub(super) fn inner_bytes(dtype: Dt, n: u64) -> u64 {
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
pub(super) fn swizzle_bytes(s: Sw) -> u64 {
    match s {
        Sw::CU_TENSOR_MAP_SWIZZLE_32B => 32,
        Sw::CU_TENSOR_MAP_SWIZZLE_64B => 64,
        Sw::CU_TENSOR_MAP_SWIZZLE_NONE => 0,
        _ => 128,
    }
}

/// The bytes of one interleave chunk (1 without interleave).
pub(super) fn interleave_chunk(il: Il) -> u64 {
    match il {
        Il::CU_TENSOR_MAP_INTERLEAVE_16B => 16,
        Il::CU_TENSOR_MAP_INTERLEAVE_32B => 32,
        _ => 1,
    }
}
