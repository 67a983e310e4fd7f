//! Texture and surface objects as a kernel sees them ([`TexView`], built by the
//! driver's `crate::texture` and handed out by [`super::DeviceMemory::texture`] /
//! [`super::DeviceMemory::surface`]), and the pure arithmetic of a texture fetch:
//! decoding texels of each format, the read modes, addressing (wrap, mirror,
//! clamp, border), point and linear filtering, and mipmap level selection. Where
//! the bytes come from (an array's storage, device memory) is the caller's: every
//! texel is read through a closure (`exec::texture` supplies it).
//!
//! Linear filtering follows the CUDA Programming Guide's "Texture Fetching"
//! appendix: the texel centres are at `i + 0.5`; the fraction `α` of `x - 0.5` is
//! stored in 9-bit fixed point with 8 fractional bits (rounded to the nearest
//! multiple of 1/256, so 1.0 is representable); the weights of the 2, 4 or 8
//! texels are products of `α` or `1 - α` per dimension (exact in f32), and the
//! result is `Σ w·T` summed in f32 in corner order (corner bit `j` set: the upper
//! texel along dimension `j`), each product and sum rounded to nearest.

use std::sync::Arc;

use super::arith::f16_to_f64;

/// `CU_TRSF_READ_AS_INTEGER`.
pub const READ_AS_INTEGER: u32 = 0x01;
/// `CU_TRSF_NORMALIZED_COORDINATES`.
pub const NORMALIZED: u32 = 0x02;

/// Bytes a texture reads from that the driver owns (an array's storage).
pub trait TexelStore: Send + Sync {
    /// Whether the array still lives (a fetch from a destroyed array faults).
    fn alive(&self) -> bool;
    /// The first byte; valid (and accessed only atomically) while `self` lives.
    fn base(&self) -> *mut u8;
    /// Bytes of storage.
    fn bytes(&self) -> usize;
}

/// Where a level's texels are.
#[derive(Clone)]
pub enum TexData {
    /// Host memory the driver owns (an array), row-major, rows `pitch` bytes apart.
    Host(Arc<dyn TexelStore>),
    /// Device memory at this address (a linear or pitch-2-D resource), read through
    /// the launch's checked device-memory path.
    Device(u64),
}

/// One level of a texture (the only one unless mipmapped).
#[derive(Clone)]
pub struct TexLevel {
    /// Texels per row (≥ 1).
    pub width: u64,
    /// Rows per slice (≥ 1).
    pub height: u64,
    /// Slices: the depth of a 3-D texture, the layers of a layered one (≥ 1).
    pub slices: u64,
    /// Bytes from one row to the next.
    pub pitch: u64,
    /// Where the texels are.
    pub data: TexData,
}

/// The shape of a texture: how many coordinates address it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TexShape {
    /// 1, 2 or 3 dimensions of an array (or pitch-2-D memory), `layered` or not.
    Array {
        /// Dimensions (not counting the layer).
        dims: u8,
        /// Layered (or a cubemap, whose faces count as layers).
        layered: bool,
    },
    /// Linear memory (`CU_RESOURCE_TYPE_LINEAR`): one dimension, out of range reads 0.
    Linear,
}

/// How a texture samples (from `CUDA_TEXTURE_DESC`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sampling {
    /// `CUaddress_mode` per dimension.
    pub address: [u32; 3],
    /// `CUfilter_mode`.
    pub filter: u32,
    /// `CU_TRSF_*` flags.
    pub flags: u32,
    /// The mipmap filter mode.
    pub mip_filter: u32,
    /// Added to a fetch's level of detail.
    pub mip_bias: f32,
    /// The lowest level of detail.
    pub min_lod: f32,
    /// The highest level of detail.
    pub max_lod: f32,
    /// The border colour (`CU_TR_ADDRESS_MODE_BORDER`).
    pub border: [f32; 4],
}

/// A texture or surface object.
#[derive(Clone)]
pub struct TexView {
    /// `CUarray_format`.
    pub format: u32,
    /// Channels per texel (1, 2 or 4).
    pub channels: u32,
    /// How coordinates address it.
    pub shape: TexShape,
    /// Base level first.
    pub levels: Vec<TexLevel>,
    /// Made from a mipmapped array.
    pub mipmapped: bool,
    /// How it samples (a surface's: the default).
    pub sampling: Sampling,
}

/// The kind of a channel's stored value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChanKind {
    /// Unsigned integer.
    Unsigned,
    /// Signed integer.
    Signed,
    /// f16.
    Half,
    /// f32.
    Float,
    /// Unsigned, always read normalized.
    Unorm,
    /// Signed, always read normalized.
    Snorm,
}

/// Bytes per channel and kind of `format`, if a texture can have it.
pub fn chan_info(format: u32) -> Option<(u32, ChanKind)> {
    Some(match format {
        0x01 => (1, ChanKind::Unsigned),
        0x02 => (2, ChanKind::Unsigned),
        0x03 => (4, ChanKind::Unsigned),
        0x08 => (1, ChanKind::Signed),
        0x09 => (2, ChanKind::Signed),
        0x0a => (4, ChanKind::Signed),
        0x10 => (2, ChanKind::Half),
        0x20 => (4, ChanKind::Float),
        f @ 0xc0..=0xcb => {
            let k = (f - 0xc0) / 3;
            let bytes = if k % 2 == 0 { 1 } else { 2 };
            (
                bytes,
                if k < 2 {
                    ChanKind::Unorm
                } else {
                    ChanKind::Snorm
                },
            )
        }
        _ => return None,
    })
}

/// A fetched value: four float or four integer channels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Texel {
    /// Float channels.
    F([f32; 4]),
    /// Integer channels (signed ones as their two's-complement bits).
    I([u32; 4]),
}

impl Texel {
    /// The four channels as register bits (f32 bits or the 32-bit integer).
    pub fn bits(self) -> [u32; 4] {
        match self {
            Texel::F(v) => v.map(f32::to_bits),
            Texel::I(v) => v,
        }
    }
}

impl TexView {
    /// Bytes per channel, the channel kind, and whether fetches return floats.
    pub fn class(&self) -> (u32, ChanKind, bool) {
        let (bytes, kind) = chan_info(self.format).unwrap_or((4, ChanKind::Float));
        let float = match kind {
            ChanKind::Half | ChanKind::Float | ChanKind::Unorm | ChanKind::Snorm => true,
            ChanKind::Unsigned | ChanKind::Signed => {
                bytes < 4 && self.sampling.flags & READ_AS_INTEGER == 0
            }
        };
        (bytes, kind, float)
    }

    /// Bytes per element (all channels).
    pub fn elem(&self) -> u64 {
        u64::from(self.class().0 * self.channels)
    }

    /// The texel from the raw channel values (`raw[c]`, the channel's bytes
    /// zero-extended), in the texture's read mode. Missing channels read as 0, and
    /// a missing fourth channel as 1.
    pub fn decode(&self, raw: [u32; 4]) -> Texel {
        let (bytes, kind, float) = self.class();
        let bits = bytes * 8;
        let sext = |v: u32| ((v << (32 - bits)) as i32) >> (32 - bits);
        let n = self.channels as usize;
        if float {
            let mut out = [0.0, 0.0, 0.0, 1.0];
            for (c, o) in out.iter_mut().enumerate().take(n) {
                let v = raw[c];
                *o = match kind {
                    ChanKind::Float => f32::from_bits(v),
                    ChanKind::Half => f16_to_f64(v as u16) as f32,
                    ChanKind::Unsigned | ChanKind::Unorm => v as f32 / ((1u64 << bits) - 1) as f32,
                    ChanKind::Signed | ChanKind::Snorm => {
                        (sext(v) as f32 / ((1u64 << (bits - 1)) - 1) as f32).max(-1.0)
                    }
                };
            }
            Texel::F(out)
        } else {
            let mut out = [0, 0, 0, 1];
            for (c, o) in out.iter_mut().enumerate().take(n) {
                *o = match kind {
                    ChanKind::Signed => sext(raw[c]) as u32,
                    _ => raw[c],
                };
            }
            Texel::I(out)
        }
    }

    /// The border colour in the texture's result class (integer results: the
    /// colour converted, saturating).
    fn border(&self) -> Texel {
        let b = self.sampling.border;
        match self.class() {
            (_, _, true) => Texel::F(b),
            (_, ChanKind::Signed, false) => Texel::I(b.map(|v| v as i32 as u32)),
            _ => Texel::I(b.map(|v| v as u32)),
        }
    }

    /// The address mode of dimension `d`, as applied: wrap and mirror need
    /// normalized coordinates (clamp otherwise, as on NVIDIA hardware).
    fn mode(&self, d: usize) -> u32 {
        let m = self.sampling.address[d.min(2)];
        if matches!(self.shape, TexShape::Linear) {
            return 3; // out of range reads 0 (the border colour of a linear fetch)
        }
        if (m == 0 || m == 2) && self.sampling.flags & NORMALIZED == 0 {
            1
        } else {
            m
        }
    }
}

/// Texel index `i` along a dimension of `n` texels under address mode `mode`
/// (`None`: outside, the border colour).
pub fn address(i: i64, n: u64, mode: u32) -> Option<u64> {
    let n = i64::try_from(n.max(1)).unwrap_or(i64::MAX);
    Some(match mode {
        0 => i.rem_euclid(n),
        2 => {
            let m = i.rem_euclid(2 * n);
            if m >= n { 2 * n - 1 - m } else { m }
        }
        1 => i.clamp(0, n - 1),
        _ => {
            if (0..n).contains(&i) {
                i
            } else {
                return None;
            }
        }
    } as u64)
}

/// Floor of a coordinate as a texel index (NaN: 0; saturating).
fn floor_index(u: f32) -> i64 {
    if u.is_nan() {
        0
    } else {
        let lim = (1u64 << 40) as f32;
        u.floor().clamp(-lim, lim) as i64
    }
}

/// The coordinates of a fetch: float (`tex ... .f32`) or integer texel indices.
#[derive(Clone, Copy, Debug)]
pub enum Coords {
    /// Float coordinates (normalized or not, per the texture).
    F([f32; 3]),
    /// Integer texel indices.
    I([i32; 3]),
}

/// Fetches from `level` of `view` at `c` (in `dims` dimensions) of slice `layer`
/// (already clamped), reading each in-range texel's raw channels with `texel(level,
/// x, y, slice)`.
pub fn fetch_level<E>(
    view: &TexView,
    level: usize,
    dims: usize,
    c: Coords,
    layer: u64,
    texel: &mut impl FnMut(usize, u64, u64, u64) -> Result<[u32; 4], E>,
) -> Result<Texel, E> {
    let Some(lv) = view.levels.get(level) else {
        return Ok(view.border());
    };
    let sizes = [lv.width, lv.height, lv.slices];
    let (_, _, float) = view.class();
    let linear = float && view.sampling.filter == 1 && matches!(c, Coords::F(_));
    // Per dimension: the lower texel index and, filtering, the 8-bit weight of the
    // upper one.
    let mut base = [0i64; 3];
    let mut frac = [0u32; 3];
    for d in 0..dims {
        match c {
            Coords::I(v) => base[d] = i64::from(v[d]),
            Coords::F(v) => {
                let u = if view.sampling.flags & NORMALIZED != 0 {
                    v[d] * sizes[d] as f32
                } else {
                    v[d]
                };
                if linear {
                    let ub = u - 0.5;
                    let i = floor_index(ub);
                    base[d] = i;
                    let f = if ub.is_finite() { ub - ub.floor() } else { 0.0 };
                    frac[d] = ((f * 256.0).round() as u32).min(256);
                } else {
                    base[d] = floor_index(u);
                }
            }
        }
    }
    let mut one = |idx: [i64; 3]| -> Result<Texel, E> {
        let mut at = [0u64, 0, layer];
        for d in 0..dims {
            match address(idx[d], sizes[d], view.mode(d)) {
                Some(i) => at[d] = i,
                None if view.shape == TexShape::Linear => {
                    return Ok(if float {
                        Texel::F([0.0; 4])
                    } else {
                        Texel::I([0; 4])
                    });
                }
                None => return Ok(view.border()),
            }
        }
        texel(level, at[0], at[1], at[2]).map(|raw| view.decode(raw))
    };
    if !linear {
        return one(base);
    }
    let mut acc = [0.0f32; 4];
    for corner in 0..(1usize << dims) {
        let mut idx = base;
        let mut w: u32 = 1;
        for d in 0..dims {
            if corner >> d & 1 == 1 {
                idx[d] += 1;
                w *= frac[d];
            } else {
                w *= 256 - frac[d];
            }
        }
        let wf = w as f32 / (1u32 << (8 * dims)) as f32;
        let Texel::F(t) = one(idx)? else {
            continue;
        };
        for k in 0..4 {
            acc[k] += wf * t[k];
        }
    }
    Ok(Texel::F(acc))
}

/// The level(s) a fetch at level of detail `lod` reads, with the 8-bit weight of
/// the second: point mipmap filtering picks the nearest level, linear blends the
/// two around `lod`. The lod is biased and clamped by the texture's settings and
/// to the levels it has.
pub fn pick_levels(view: &TexView, lod: f32) -> (usize, usize, u32) {
    let s = &view.sampling;
    let last = view.levels.len().saturating_sub(1) as f32;
    let mut l = lod + s.mip_bias;
    if l.is_nan() {
        l = 0.0;
    }
    if s.min_lod <= s.max_lod {
        l = l.clamp(s.min_lod, s.max_lod);
    }
    l = l.clamp(0.0, last);
    if s.mip_filter == 1 {
        let lo = l.floor();
        let w = (((l - lo) * 256.0).round() as u32).min(256);
        let a = lo as usize;
        (a, (a + 1).min(last as usize), w)
    } else {
        let a = (l + 0.5).floor() as usize;
        (a, a, 0)
    }
}

/// Blends two float texels with the 8-bit weight `w` of the second.
pub fn blend(a: Texel, b: Texel, w: u32) -> Texel {
    match (a, b) {
        (Texel::F(x), Texel::F(y)) if w != 0 => {
            let (wa, wb) = ((256 - w) as f32 / 256.0, w as f32 / 256.0);
            let mut out = [0.0; 4];
            for k in 0..4 {
                out[k] = wa * x[k] + wb * y[k];
            }
            Texel::F(out)
        }
        _ => a,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_modes() {
        assert_eq!(address(-1, 4, 0), Some(3));
        assert_eq!(address(5, 4, 0), Some(1));
        assert_eq!(address(-1, 4, 2), Some(0));
        assert_eq!(address(4, 4, 2), Some(3));
        assert_eq!(address(9, 4, 2), Some(1));
        assert_eq!(address(-3, 4, 1), Some(0));
        assert_eq!(address(7, 4, 1), Some(3));
        assert_eq!(address(4, 4, 3), None);
        assert_eq!(address(3, 4, 3), Some(3));
    }

    #[test]
    fn formats() {
        assert_eq!(chan_info(0xc4), Some((2, ChanKind::Unorm)));
        assert_eq!(chan_info(0xc6), Some((1, ChanKind::Snorm)));
        assert_eq!(chan_info(0x77), None);
    }
}
