//! Tensor maps (TMA descriptors): [`TensorMap<'buf, A>`], the 128-byte, 64-byte-aligned
//! descriptor through which a kernel's Tensor Memory Accelerator loads and stores tiles
//! of a tensor in device memory — tiled ([`TensorMap::tiled`]), im2col
//! ([`TensorMap::im2col`]) and im2col-wide ([`TensorMap::im2col_wide`]) — built by
//! [`TensorMapBuilder`] and encoded by `cuTensorMapEncode*`.
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
//! types), strides (multiples of 16 — 32 with 32-byte interleave or `ALIGN16B` types —
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
//! # The map addresses only the memory it borrows
//!
//! A map is made from this crate's device memory — `&buffer` or a [`DeviceSlice`] for a
//! [`ReadOnly`] map, `&mut buffer` or a [`DeviceSliceMut`] for a [`ReadWrite`] map —
//! and keeps that borrow for `'buf`: the map cannot outlive the memory (CF28), and a
//! read-write map holds it exclusively, like `&mut`. The tensor the map describes must
//! lie inside that memory: its span, `inner + Σ (globalDim[i] - 1) × globalStrides[i-1]`
//! bytes (the inner dimension's bytes rounded up to the interleave's 16 or 32 bytes),
//! must not exceed the memory's bytes — the TMA unit clips every access to the
//! tensor's bounds, so a kernel using the map cannot reach past the allocation.
//!
//! ```compile_fail
//! # use oxicuda_driver::{CurrentContext, sys::CUtensorMapDataType as Dt, tensor_map::TensorMap};
//! # fn f(cur: &CurrentContext<'_>) {
//! // CF28: the map outlives the buffer it describes.
//! let map = {
//!     let mut buf = cur.alloc::<f32>(1024).unwrap();
//!     TensorMap::tiled(Dt::CU_TENSOR_MAP_DATA_TYPE_FLOAT32, &mut buf, &[64, 16], &[256], &[16, 16], &[1, 1])
//!         .encode(cur)
//! };
//! # drop(map);
//! # }
//! ```
//!
//! # Passing a map to a kernel
//!
//! A kernel declares a tensor-map parameter as [`TensorMapIn`] (the kernel only loads
//! through it) or [`TensorMapOut`] (it may also store through it). In CUDA C++ it is a
//! `const __grid_constant__ CUtensorMap` parameter; in PTX `.param .align 64 .b8
//! name[128]` — 128 bytes at an offset aligned to 64, which the signature check at
//! lookup compares. A launch passes `&map` for `TensorMapIn` (any map) and `&mut map`
//! for `TensorMapOut` (only a [`ReadWrite`] map): the argument's bytes are the encoded
//! descriptor, and only an encoded map can be passed. A graph kernel node takes `&map`
//! for both (for `TensorMapOut`, a [`ReadWrite`] one).
//!
//! What the types do not ensure: a kernel declared with a `TensorMapIn` parameter that
//! stores through it breaks its declaration's contract (the declaration is the `unsafe`
//! step, as for `In<T>`).

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
        /// (driver, address, bytes) of the memory.
        fn extent(&self) -> (&'static Driver, CUdeviceptr, u64);
    }
}

macro_rules! tensor_memory {
    ($($ty:ty => $access:ty),*) => {$(
        impl<'buf, T: DeviceCopy> memory_sealed::Sealed for $ty {
            fn extent(&self) -> (&'static Driver, CUdeviceptr, u64) {
                let bytes = (self.len() as u64).saturating_mul(size_of::<T>() as u64);
                (self.driver(), self.device_ptr(), bytes)
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

/// An encoded tensor map describing device memory borrowed for `'buf`; `A` says what
/// a kernel may do through it. Pass it to a kernel parameter declared [`TensorMapIn`]
/// or [`TensorMapOut`].
pub struct TensorMap<'buf, A: Access = ReadWrite> {
    raw: CUtensorMap,
    driver: &'static Driver,
    layout: Layout,
    _buf: PhantomData<(&'buf (), A, *const ())>,
}

impl<A: Access> core::fmt::Debug for TensorMap<'_, A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TensorMap")
            .field("dtype", &self.layout.dtype)
            .field("dims", &self.layout.dims)
            .field("strides", &self.layout.strides)
            .finish_non_exhaustive()
    }
}

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

/// A tensor map being described; [`encode`](Self::encode) checks and encodes it.
/// Interleave, swizzle, L2 promotion and out-of-bounds fill default to `NONE` (and the
/// im2col-wide mode to `W`).
#[must_use = "a builder does nothing until `encode` is called"]
pub struct TensorMapBuilder<'buf, A: Access> {
    driver: &'static Driver,
    address: CUdeviceptr,
    bytes: u64,
    layout: Layout,
    shape: Shape,
    _buf: PhantomData<(&'buf (), A, *const ())>,
}

impl<'buf, A: Access> TensorMap<'buf, A> {
    /// A tiled map of `memory`: `dims` elements per dimension (innermost first),
    /// `strides` bytes between consecutive indices of dimensions 1.. (one fewer than
    /// `dims`), `box_dims` elements per dimension copied per access, `element_strides`
    /// the traversal step per dimension (`cuTensorMapEncodeTiled`).
    pub fn tiled<M: TensorMemory<'buf, Access = A>>(
        dtype: Dt,
        memory: M,
        dims: &[u64],
        strides: &[u64],
        box_dims: &[u32],
        element_strides: &[u32],
    ) -> TensorMapBuilder<'buf, A> {
        TensorMapBuilder::new(
            memory,
            dtype,
            dims,
            strides,
            element_strides,
            Shape::Tiled {
                box_dims: box_dims.to_vec(),
            },
        )
    }

    /// An im2col map of `memory` (`cuTensorMapEncodeIm2col`): rank 3 to 5, layout NWC,
    /// NHWC or NDHWC; `lower`/`upper` the pixel-box corner offsets (rank − 2 of each,
    /// see the module docs), `channels_per_pixel` elements along C and
    /// `pixels_per_column` pixels per access.
    #[allow(clippy::too_many_arguments)]
    pub fn im2col<M: TensorMemory<'buf, Access = A>>(
        dtype: Dt,
        memory: M,
        dims: &[u64],
        strides: &[u64],
        lower: &[i32],
        upper: &[i32],
        channels_per_pixel: u32,
        pixels_per_column: u32,
        element_strides: &[u32],
    ) -> TensorMapBuilder<'buf, A> {
        TensorMapBuilder::new(
            memory,
            dtype,
            dims,
            strides,
            element_strides,
            Shape::Im2col {
                lower: lower.to_vec(),
                upper: upper.to_vec(),
                channels: channels_per_pixel,
                pixels: pixels_per_column,
            },
        )
    }

    /// An im2col-wide map of `memory` (`cuTensorMapEncodeIm2colWide`, compute
    /// capability 10.0 or higher): like [`im2col`](Self::im2col) with one corner offset
    /// each, along W. Its swizzle must be set (64 or 128 bytes).
    #[allow(clippy::too_many_arguments)]
    pub fn im2col_wide<M: TensorMemory<'buf, Access = A>>(
        dtype: Dt,
        memory: M,
        dims: &[u64],
        strides: &[u64],
        lower_width: i32,
        upper_width: i32,
        channels_per_pixel: u32,
        pixels_per_column: u32,
        element_strides: &[u32],
    ) -> TensorMapBuilder<'buf, A> {
        TensorMapBuilder::new(
            memory,
            dtype,
            dims,
            strides,
            element_strides,
            Shape::Im2colWide {
                lower: lower_width,
                upper: upper_width,
                channels: channels_per_pixel,
                pixels: pixels_per_column,
                mode: CUtensorMapIm2ColWideMode::CU_TENSOR_MAP_IM2COL_WIDE_MODE_W,
            },
        )
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
        let (driver, address, bytes) = memory_sealed::Sealed::extent(&memory);
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
        Ok(())
    }
}

impl<'buf, A: Access> TensorMapBuilder<'buf, A> {
    fn new<M: TensorMemory<'buf, Access = A>>(
        memory: M,
        dtype: Dt,
        dims: &[u64],
        strides: &[u64],
        element_strides: &[u32],
        shape: Shape,
    ) -> Self {
        let (driver, address, bytes) = memory_sealed::Sealed::extent(&memory);
        Self {
            driver,
            address,
            bytes,
            layout: Layout {
                dtype,
                dims: dims.to_vec(),
                strides: strides.to_vec(),
                element_strides: element_strides.to_vec(),
                interleave: Il::CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle: Sw::CU_TENSOR_MAP_SWIZZLE_NONE,
                l2: CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_NONE,
                oob: CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            },
            shape,
            _buf: PhantomData,
        }
    }

    /// The interleaved layout.
    pub fn interleave(mut self, interleave: Il) -> Self {
        self.layout.interleave = interleave;
        self
    }

    /// The shared-memory swizzle.
    pub fn swizzle(mut self, swizzle: Sw) -> Self {
        self.layout.swizzle = swizzle;
        self
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

    /// The im2col-wide mode (ignored by the other kinds, which have none).
    pub fn wide_mode(mut self, mode: CUtensorMapIm2ColWideMode) -> Self {
        if let Shape::Im2colWide { mode: m, .. } = &mut self.shape {
            *m = mode;
        }
        self
    }

    /// Checks every rule (see the module docs) and encodes the map under `ctx`.
    pub fn encode(self, ctx: &CurrentContext<'_>) -> Result<TensorMap<'buf, A>, CudaError> {
        if !core::ptr::eq(ctx.driver(), self.driver) {
            return Err(CudaError::ForeignDriver);
        }
        let (major, minor) = ctx.device()?.compute_capability()?;
        let needs = match self.shape {
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
        check_layout(&self.layout, &self.shape)?;
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
            match &self.shape {
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

/// The bytes the tensor spans from its address: the inner dimension (rounded up to
/// the interleave's chunk) plus `(globalDim[i] - 1) × globalStrides[i-1]` for the rest.
fn span(l: &Layout) -> u128 {
    let dim0 = l.dims.first().copied().unwrap_or(0);
    let chunk: u64 = match l.interleave {
        Il::CU_TENSOR_MAP_INTERLEAVE_16B => 16,
        Il::CU_TENSOR_MAP_INTERLEAVE_32B => 32,
        _ => 1,
    };
    let inner = u128::from(inner_bytes(l.dtype, dim0).div_ceil(chunk) * chunk);
    l.dims
        .iter()
        .skip(1)
        .zip(&l.strides)
        .map(|(&d, &s)| u128::from(d.saturating_sub(1)) * u128::from(s))
        .sum::<u128>()
        + inner
}

/// A kernel parameter holding a tensor map the kernel only loads through: a
/// `const __grid_constant__ CUtensorMap` (PTX `.param .align 64 .b8 name[128]`).
/// Takes `&map` of any [`TensorMap`].
pub struct TensorMapIn(());
/// A kernel parameter holding a tensor map the kernel may also store through (same
/// C++ and PTX form as [`TensorMapIn`]). Takes `&mut map` of a [`ReadWrite`] map.
pub struct TensorMapOut(());

impl sealed::Param for TensorMapIn {}
impl sealed::Param for TensorMapOut {}
impl KernelParam for TensorMapIn {
    const SIZE: usize = size_of::<CUtensorMap>();
    const ALIGN: usize = align_of::<CUtensorMap>();
}
impl KernelParam for TensorMapOut {
    const SIZE: usize = size_of::<CUtensorMap>();
    const ALIGN: usize = align_of::<CUtensorMap>();
}

/// The descriptor's bytes, for the driver to copy into the parameter buffer (it only
/// reads them).
fn descriptor(raw: &CUtensorMap) -> *mut c_void {
    (raw as *const CUtensorMap).cast_mut().cast()
}

impl<A: Access> crate::launch::Arg<TensorMapIn> for &TensorMap<'_, A> {}
impl<A: Access> sealed::ArgBytes<TensorMapIn> for &TensorMap<'_, A> {
    fn param(&mut self, _scratch: &mut [u64; 2]) -> *mut c_void {
        descriptor(&self.raw)
    }
}
impl crate::launch::Arg<TensorMapOut> for &mut TensorMap<'_, ReadWrite> {}
impl sealed::ArgBytes<TensorMapOut> for &mut TensorMap<'_, ReadWrite> {
    fn param(&mut self, _scratch: &mut [u64; 2]) -> *mut c_void {
        descriptor(&self.raw)
    }
}
impl<A: Access> GraphArg<TensorMapIn> for &TensorMap<'_, A> {}
impl GraphArg<TensorMapOut> for &TensorMap<'_, ReadWrite> {}
impl sealed::ArgBytes<TensorMapOut> for &TensorMap<'_, ReadWrite> {
    fn param(&mut self, _scratch: &mut [u64; 2]) -> *mut c_void {
        descriptor(&self.raw)
    }
}

static_assertions::assert_not_impl_any!(TensorMap<'static, ReadWrite>: Send, Sync, Clone);
static_assertions::const_assert_eq!(size_of::<CUtensorMap>(), 128);
static_assertions::const_assert_eq!(align_of::<CUtensorMap>(), 64);
