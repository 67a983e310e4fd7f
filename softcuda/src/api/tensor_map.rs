//! Tensor map objects: `cuTensorMapEncodeTiled`, `cuTensorMapEncodeIm2col`,
//! `cuTensorMapEncodeIm2colWide` and `cuTensorMapReplaceAddress`.
//!
//! Every requirement the CUDA 12.9 header lists for these functions is checked, and a
//! violation is `CUDA_ERROR_INVALID_VALUE` with nothing written (see `docs/softcuda.md`,
//! "Tensor maps"). The rules are implemented here independently of the safe layer's
//! (`oxicuda_driver::tensor_map`), so that each checks the other.
//!
//! # The descriptor's layout (softcuda's own)
//!
//! NVIDIA does not document the 128 bytes of a `CUtensorMap`. softcuda writes its own
//! layout, all little-endian, which nothing but softcuda should read:
//!
//! | bytes    | field |
//! |----------|-------|
//! | 0..4     | magic `SCTM` |
//! | 4        | kind: 1 tiled, 2 im2col, 3 im2col-wide |
//! | 5        | rank |
//! | 6        | `CUtensorMapDataType` |
//! | 7        | `CUtensorMapInterleave` |
//! | 8        | `CUtensorMapSwizzle` |
//! | 9        | `CUtensorMapL2promotion` |
//! | 10       | `CUtensorMapFloatOOBfill` |
//! | 11       | `CUtensorMapIm2ColWideMode` (im2col-wide; else 0) |
//! | 12..14   | channelsPerPixel, u16 (im2col kinds; else 0) |
//! | 14..16   | pixelsPerColumn, u16 (im2col kinds, 0 in `W128` mode; else 0) |
//! | 16..24   | globalAddress |
//! | 24..64   | globalDim[0..5], u64 each (unused ones 0) |
//! | 64..96   | globalStrides[0..4], u64 each |
//! | 96..101  | `boxDim[i] − 1`, u8 each (tiled) |
//! | 101..106 | `elementStrides[i]`, u8 each |
//! | 106..112 | pixelBoxLowerCorner[0..3], i16 each (im2col-wide: the width offset first) |
//! | 112..118 | pixelBoxUpperCorner[0..3], i16 each |
//! | 118..128 | zero |
//!
//! The interpreter does not execute the TMA instructions (`cp.async.bulk.tensor`,
//! `cp.reduce.async.bulk.tensor`, `tensormap.replace`): a module using them fails to
//! load. A kernel can receive a descriptor as a `.param .align 64 .b8 name[128]`
//! parameter and read its bytes.

use crate::state::{self, R};
use crate::types::*;
use core::ffi::{c_int, c_uint, c_void};

const MAGIC: &[u8; 4] = b"SCTM";
const KIND_TILED: u8 = 1;
const KIND_IM2COL: u8 = 2;
const KIND_WIDE: u8 = 3;

// CUtensorMapDataType values.
const U4_ALIGN8B: c_uint = 0xd;
const U4_ALIGN16B: c_uint = 0xe;
const U6_ALIGN16B: c_uint = 0xf;
const LAST_DTYPE: c_uint = 0xf;
// CUtensorMapInterleave.
const INTERLEAVE_NONE: c_uint = 0;
const INTERLEAVE_32B: c_uint = 2;
// CUtensorMapSwizzle.
const SWIZZLE_NONE: c_uint = 0;
const SWIZZLE_32B: c_uint = 1;
const SWIZZLE_64B: c_uint = 2;
const SWIZZLE_128B: c_uint = 3;
const SWIZZLE_128B_ATOM_32B: c_uint = 4;
const SWIZZLE_128B_ATOM_64B: c_uint = 6;
// CUtensorMapIm2ColWideMode.
const MODE_W128: c_uint = 1;

/// `INVALID_VALUE` unless `ok`.
fn ensure(ok: bool) -> R {
    if ok { Ok(()) } else { Err(code::INVALID_VALUE) }
}

/// What the three encoders share.
struct Common {
    dtype: c_uint,
    rank: usize,
    address: u64,
    dims: Vec<u64>,
    strides: Vec<u64>,
    element_strides: Vec<u32>,
    interleave: c_uint,
    swizzle: c_uint,
    l2: c_uint,
    oob: c_uint,
}

/// Reads `n` values at `p`, which must not be null when `n > 0`.
///
/// # Safety
/// `p` is null or valid for reads of `n` values (the C contract).
unsafe fn read<T: Copy>(p: *const T, n: usize) -> R<Vec<T>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    ensure(!p.is_null())?;
    // SAFETY: the caller's contract.
    Ok(unsafe { core::slice::from_raw_parts(p, n) }.to_vec())
}

/// Bytes of `n` values of `dtype` along dimension 0 (packed types: see the module docs
/// of the safe layer — two U4 per byte with ALIGN8B, one byte per value with ALIGN16B).
fn inner_bytes(dtype: c_uint, n: u64) -> u64 {
    match dtype {
        U4_ALIGN8B => n.div_ceil(2),
        0 | U4_ALIGN16B | U6_ALIGN16B => n,
        1 | 6 | 9 => n * 2,
        4 | 5 | 8 => n * 8,
        _ => n * 4,
    }
}

fn is_align16b(dtype: c_uint) -> bool {
    dtype == U4_ALIGN16B || dtype == U6_ALIGN16B
}

/// The address alignment the descriptor needs.
fn address_align(dtype: c_uint, interleave: c_uint) -> u64 {
    if interleave == INTERLEAVE_32B || is_align16b(dtype) {
        32
    } else {
        16
    }
}

/// The swizzle span in bytes.
fn span(swizzle: c_uint) -> u64 {
    match swizzle {
        SWIZZLE_NONE => 0,
        SWIZZLE_32B => 32,
        SWIZZLE_64B => 64,
        _ => 128,
    }
}

impl Common {
    /// The rules every kind shares; `min_rank` is 1 (tiled) or 3 (im2col kinds).
    fn check(&self, min_rank: usize, wide: bool) -> R {
        ensure(self.dtype <= LAST_DTYPE)?;
        ensure(self.interleave <= INTERLEAVE_32B)?;
        ensure(self.swizzle <= SWIZZLE_128B_ATOM_64B)?;
        ensure(self.l2 <= 3)?;
        ensure(self.oob <= 1)?;
        ensure((min_rank..=5).contains(&self.rank))?;
        ensure(self.interleave == INTERLEAVE_NONE || self.rank >= 3)?;
        ensure(
            self.address
                .is_multiple_of(address_align(self.dtype, self.interleave)),
        )?;
        ensure(self.dims.iter().all(|&d| (1..=1u64 << 32).contains(&d)))?;
        let d0 = self.dims.first().copied().unwrap_or(0);
        if is_align16b(self.dtype) {
            ensure(d0 % 128 == 0)?;
        }
        if self.dtype == U4_ALIGN8B {
            ensure(d0 % 2 == 0)?;
        }
        let stride_unit = address_align(self.dtype, self.interleave);
        let mut need = inner_bytes(self.dtype, d0);
        for (s, d) in self.strides.iter().zip(self.dims.iter().skip(1)) {
            ensure(s % stride_unit == 0 && *s < 1 << 40 && *s >= need)?;
            need = s.saturating_mul(*d);
        }
        ensure(self.element_strides.iter().all(|e| (1..=8).contains(e)))?;
        if self.interleave == INTERLEAVE_32B {
            ensure(self.swizzle == SWIZZLE_32B)?;
        }
        if self.dtype == U6_ALIGN16B {
            ensure(self.interleave == INTERLEAVE_NONE)?;
        }
        let swizzles: &[c_uint] = match (wide, self.dtype) {
            (true, U4_ALIGN16B | U6_ALIGN16B) => &[SWIZZLE_128B, SWIZZLE_128B_ATOM_32B],
            (true, _) => &[SWIZZLE_64B, SWIZZLE_128B, SWIZZLE_128B_ATOM_32B],
            (false, U6_ALIGN16B) => &[
                SWIZZLE_NONE,
                SWIZZLE_128B,
                SWIZZLE_128B_ATOM_32B,
                SWIZZLE_128B_ATOM_64B,
            ],
            (false, U4_ALIGN16B) => &[SWIZZLE_NONE, SWIZZLE_128B, SWIZZLE_128B_ATOM_32B],
            _ => &[],
        };
        ensure(swizzles.is_empty() || swizzles.contains(&self.swizzle))?;
        // The NaN fill: floating-point types only (FLOAT16 = 6 .. TFLOAT32_FTZ = 12).
        if self.oob != 0 {
            ensure(matches!(self.dtype, 6..=12))?;
        }
        Ok(())
    }

    /// The inner box dimension (`bytes`) within the swizzle span, without interleave.
    fn check_inner(&self, bytes: u64) -> R {
        let s = span(self.swizzle);
        ensure(self.interleave != INTERLEAVE_NONE || s == 0 || bytes <= s)
    }

    /// The descriptor: the shared fields written; the caller adds its kind's.
    fn encode(&self, kind: u8) -> [u8; 128] {
        let mut b = [0u8; 128];
        b[0..4].copy_from_slice(MAGIC);
        b[4] = kind;
        b[5] = self.rank as u8;
        b[6] = self.dtype as u8;
        b[7] = self.interleave as u8;
        b[8] = self.swizzle as u8;
        b[9] = self.l2 as u8;
        b[10] = self.oob as u8;
        b[16..24].copy_from_slice(&self.address.to_le_bytes());
        for (i, d) in self.dims.iter().enumerate() {
            b[24 + 8 * i..32 + 8 * i].copy_from_slice(&d.to_le_bytes());
        }
        for (i, s) in self.strides.iter().enumerate() {
            b[64 + 8 * i..72 + 8 * i].copy_from_slice(&s.to_le_bytes());
        }
        for (i, e) in self.element_strides.iter().enumerate() {
            b[101 + i] = *e as u8;
        }
        b
    }
}

/// Reads the shared parameters (rank checked before any array is read).
///
/// # Safety
/// The arrays hold `rank` (`rank - 1` for the strides) values, as the C contract says.
#[allow(clippy::too_many_arguments)]
unsafe fn common(
    dtype: c_uint,
    rank: c_uint,
    address: *mut c_void,
    dims: *const u64,
    strides: *const u64,
    element_strides: *const u32,
    interleave: c_uint,
    swizzle: c_uint,
    l2: c_uint,
    oob: c_uint,
) -> R<Common> {
    state::current_ctx(&state::state())?;
    let rank = rank as usize;
    ensure((1..=5).contains(&rank) && !address.is_null())?;
    // SAFETY: the caller's contract.
    unsafe {
        Ok(Common {
            dtype,
            rank,
            address: address as u64,
            dims: read(dims, rank)?,
            strides: read(strides, rank - 1)?,
            element_strides: read(element_strides, rank)?,
            interleave,
            swizzle,
            l2,
            oob,
        })
    }
}

/// Writes `bytes` to the caller's descriptor, which must be 64-byte aligned.
fn store(map: *mut c_void, bytes: &[u8; 128]) -> R {
    ensure(!map.is_null() && (map as usize).is_multiple_of(64))?;
    // SAFETY: a non-null `CUtensorMap *` points to 128 writable bytes (the C contract).
    unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), map.cast::<u8>(), 128) };
    Ok(())
}

fn put_i16(b: &mut [u8; 128], at: usize, v: c_int) {
    b[at..at + 2].copy_from_slice(&(v as i16).to_le_bytes());
}

/// `cuTensorMapEncodeTiled`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuTensorMapEncodeTiled(
    tensor_map: *mut c_void,
    data_type: c_uint,
    rank: c_uint,
    address: *mut c_void,
    dims: *const u64,
    strides: *const u64,
    box_dim: *const u32,
    element_strides: *const u32,
    interleave: c_uint,
    swizzle: c_uint,
    l2: c_uint,
    oob: c_uint,
) -> CUresult {
    api!("cuTensorMapEncodeTiled", {
        // SAFETY: the C contract of the arrays, forwarded.
        let c = unsafe {
            common(
                data_type,
                rank,
                address,
                dims,
                strides,
                element_strides,
                interleave,
                swizzle,
                l2,
                oob,
            )?
        };
        // SAFETY: `boxDim` holds `rank` values.
        let boxes = unsafe { read(box_dim, c.rank)? };
        c.check(1, false)?;
        ensure(boxes.iter().all(|b| (1..=256).contains(b)))?;
        let b0 = u64::from(boxes[0]);
        if is_align16b(c.dtype) {
            ensure(b0 == 128)?;
        }
        let inner = inner_bytes(c.dtype, b0);
        ensure(c.interleave != INTERLEAVE_NONE || inner.is_multiple_of(16))?;
        c.check_inner(inner)?;
        let mut b = c.encode(KIND_TILED);
        for (i, x) in boxes.iter().enumerate() {
            b[96 + i] = (x - 1) as u8;
        }
        store(tensor_map, &b)
    })
}

/// The im2col rules on channels and pixels; `pixels_limit` 0 means "ignored".
fn check_pixels(c: &Common, channels: c_uint, pixels: c_uint, pixels_limit: c_uint) -> R {
    ensure((1..=256).contains(&channels))?;
    if is_align16b(c.dtype) {
        ensure(channels == 128)?;
    }
    ensure(pixels_limit == 0 || (1..=pixels_limit).contains(&pixels))?;
    c.check_inner(inner_bytes(c.dtype, u64::from(channels)))
}

/// The box along a spatial dimension of `dim` pixels holds at least one.
fn check_box(dim: u64, lower: c_int, upper: c_int) -> R {
    ensure(dim as i64 - i64::from(lower) + i64::from(upper) > 0)
}

/// `cuTensorMapEncodeIm2col`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuTensorMapEncodeIm2col(
    tensor_map: *mut c_void,
    data_type: c_uint,
    rank: c_uint,
    address: *mut c_void,
    dims: *const u64,
    strides: *const u64,
    lower: *const c_int,
    upper: *const c_int,
    channels: c_uint,
    pixels: c_uint,
    element_strides: *const u32,
    interleave: c_uint,
    swizzle: c_uint,
    l2: c_uint,
    oob: c_uint,
) -> CUresult {
    api!("cuTensorMapEncodeIm2col", {
        // SAFETY: the C contract of the arrays, forwarded.
        let c = unsafe {
            common(
                data_type,
                rank,
                address,
                dims,
                strides,
                element_strides,
                interleave,
                swizzle,
                l2,
                oob,
            )?
        };
        c.check(3, false)?;
        let spatial = c.rank - 2;
        // SAFETY: each corner array holds `rank - 2` offsets.
        let (lo, up) = unsafe { (read(lower, spatial)?, read(upper, spatial)?) };
        let bound: c_int = match c.rank {
            3 => 1 << 15,
            4 => 1 << 7,
            _ => 1 << 4,
        };
        ensure(lo.iter().chain(&up).all(|v| (-bound..bound).contains(v)))?;
        for i in 0..spatial {
            check_box(c.dims[i + 1], lo[i], up[i])?;
        }
        check_pixels(&c, channels, pixels, 1024)?;
        let mut b = c.encode(KIND_IM2COL);
        b[12..14].copy_from_slice(&(channels as u16).to_le_bytes());
        b[14..16].copy_from_slice(&(pixels as u16).to_le_bytes());
        for i in 0..spatial {
            put_i16(&mut b, 106 + 2 * i, lo[i]);
            put_i16(&mut b, 112 + 2 * i, up[i]);
        }
        store(tensor_map, &b)
    })
}

/// `cuTensorMapEncodeIm2colWide`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuTensorMapEncodeIm2colWide(
    tensor_map: *mut c_void,
    data_type: c_uint,
    rank: c_uint,
    address: *mut c_void,
    dims: *const u64,
    strides: *const u64,
    lower_width: c_int,
    upper_width: c_int,
    channels: c_uint,
    pixels: c_uint,
    element_strides: *const u32,
    interleave: c_uint,
    mode: c_uint,
    swizzle: c_uint,
    l2: c_uint,
    oob: c_uint,
) -> CUresult {
    api!("cuTensorMapEncodeIm2colWide", {
        // SAFETY: the C contract of the arrays, forwarded.
        let c = unsafe {
            common(
                data_type,
                rank,
                address,
                dims,
                strides,
                element_strides,
                interleave,
                swizzle,
                l2,
                oob,
            )?
        };
        c.check(3, true)?;
        ensure(mode <= MODE_W128)?;
        let bound: c_int = 1 << 15;
        ensure((-bound..bound).contains(&lower_width) && (-bound..bound).contains(&upper_width))?;
        check_box(c.dims[1], lower_width, upper_width)?;
        let w128 = mode == MODE_W128;
        check_pixels(&c, channels, pixels, if w128 { 0 } else { 1024 })?;
        let mut b = c.encode(KIND_WIDE);
        b[11] = mode as u8;
        b[12..14].copy_from_slice(&(channels as u16).to_le_bytes());
        let pixels = if w128 { 0 } else { pixels as u16 };
        b[14..16].copy_from_slice(&pixels.to_le_bytes());
        put_i16(&mut b, 106, lower_width);
        put_i16(&mut b, 112, upper_width);
        store(tensor_map, &b)
    })
}

/// `cuTensorMapReplaceAddress`: the descriptor must be one softcuda encoded; the new
/// address must have the alignment its data type and interleave need.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuTensorMapReplaceAddress(
    tensor_map: *mut c_void,
    address: *mut c_void,
) -> CUresult {
    api!("cuTensorMapReplaceAddress", {
        state::current_ctx(&state::state())?;
        ensure(
            !tensor_map.is_null() && (tensor_map as usize).is_multiple_of(64) && !address.is_null(),
        )?;
        let mut b = [0u8; 128];
        // SAFETY: a non-null, aligned `CUtensorMap *` points to 128 readable bytes.
        unsafe { core::ptr::copy_nonoverlapping(tensor_map.cast::<u8>(), b.as_mut_ptr(), 128) };
        ensure(&b[0..4] == MAGIC && (KIND_TILED..=KIND_WIDE).contains(&b[4]))?;
        let address = address as u64;
        ensure(address.is_multiple_of(address_align(c_uint::from(b[6]), c_uint::from(b[7]))))?;
        b[16..24].copy_from_slice(&address.to_le_bytes());
        store(tensor_map, &b)
    })
}
