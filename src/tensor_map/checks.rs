//! The documented rules: every requirement the CUDA 12.9 header lists for
//! `cuTensorMapEncodeTiled`, `cuTensorMapEncodeIm2col` and `cuTensorMapEncodeIm2colWide`
//! (see the module docs), checked before the driver is called, and the span of the
//! tensor within the memory it borrows. A violation is
//! [`CudaError::InvalidTensorMap`], naming the C parameter and the rule.

use super::layout::{
    Layout, MAX_RANK, Shape, align16b, inner_bytes, interleave_chunk, packed, swizzle_bytes,
};
use crate::error::CudaError;
use crate::sys::{
    CUdeviceptr, CUtensorMapDataType as Dt, CUtensorMapFloatOOBfill, CUtensorMapIm2ColWideMode,
    CUtensorMapInterleave as Il, CUtensorMapSwizzle as Sw,
};

pub(super) fn refuse(parameter: &'static str, rule: impl Into<String>) -> CudaError {
    CudaError::InvalidTensorMap {
        parameter,
        rule: rule.into(),
    }
}

/// Every rule of the header on the descriptor's parameters (not its address).
pub(super) fn check_layout(l: &Layout, shape: &Shape) -> Result<(), CudaError> {
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
pub(super) fn check_memory(l: &Layout, address: CUdeviceptr, bytes: u64) -> Result<(), CudaError> {
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
