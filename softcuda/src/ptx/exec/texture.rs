//! Running the texture and surface instructions (`Op::Tex`, reference interpreter
//! only: the lane engine refuses kernels that have them): the handle's object
//! from the driver ([`DeviceMemory::texture`] / [`DeviceMemory::surface`], kept
//! for the launch in the `RegionCache`), texels read from an array's storage
//! (atomically, like copies) or from device memory through the checked global
//! path (so the sanitizer sees those reads), the fetch arithmetic of
//! `ptx::sampler`, surface loads and stores with `.trap`/`.clamp`/`.zero`, and the
//! `txq`/`suq` queries.
//!
//! A handle that names no live object of the right kind, a texture or surface
//! whose array was destroyed, and a `.trap` surface access out of range stop the
//! thread with [`LaunchError::IllegalAddress`] at the handle (NVIDIA leaves the
//! first two undefined; its `.trap` is an illegal-address error).

use std::sync::Arc;

use super::*;
use crate::ptx::ir::{SurfClamp, TexOp, TexQuery, TexSite};
use crate::ptx::sampler::{
    self, ChanKind, Coords, TexData, TexShape, TexView, blend, chan_info, fetch_level, pick_levels,
};

/// The object `handle` names (a surface if `surface`), cached for the launch.
fn object(
    cx: &Ctx,
    cache: &mut RegionCache,
    handle: u64,
    surface: bool,
) -> Result<Arc<TexView>, LaunchError> {
    if let Some((_, _, v)) = cache
        .tex
        .iter()
        .find(|(h, s, _)| *h == handle && *s == surface)
    {
        return Ok(Arc::clone(v));
    }
    let v = if surface {
        cx.mem.surface(handle)
    } else {
        cx.mem.texture(handle)
    }
    .ok_or(LaunchError::IllegalAddress {
        addr: handle,
        len: 0,
    })?;
    if cache.tex.len() >= 16 {
        cache.tex.remove(0);
    }
    cache.tex.push((handle, surface, Arc::clone(&v)));
    Ok(v)
}

/// Reads `len` bytes (≤ 8) at host address `a`: one atomic access if aligned,
/// else byte by byte.
fn host_bytes(a: u64, len: u32) -> u64 {
    if a.is_multiple_of(u64::from(len)) && matches!(len, 1 | 2 | 4 | 8) {
        return host_read(a, len);
    }
    (0..len).fold(0, |v, k| v | host_read(a + u64::from(k), 1) << (8 * k))
}

/// Writes the low `len` bytes (≤ 8) of `v` at host address `a`, likewise.
fn host_put(a: u64, len: u32, v: u64) {
    if a.is_multiple_of(u64::from(len)) && matches!(len, 1 | 2 | 4 | 8) {
        host_write(a, len, v);
        return;
    }
    for k in 0..len {
        host_write(a + u64::from(k), 1, v >> (8 * k) & 0xff);
    }
}

/// The raw channels of texel (`x`, `y`, `slice`) of `level` of `view`.
#[allow(clippy::too_many_arguments)]
fn texel(
    cx: &Ctx,
    cache: &mut RegionCache,
    t: &Thread,
    pc: usize,
    view: &TexView,
    handle: u64,
    (level, x, y, slice): (usize, u64, u64, u64),
) -> Result<[u32; 4], LaunchError> {
    let Some(lv) = view.levels.get(level) else {
        return Ok([0; 4]);
    };
    let (chb, _) = chan_info(view.format).unwrap_or((4, ChanKind::Float));
    let elem = view.elem();
    let off = (slice * lv.height + y) * lv.pitch + x * elem;
    let mut raw = [0u32; 4];
    match &lv.data {
        TexData::Host(store) => {
            if !store.alive() || off + elem > store.bytes() as u64 {
                return Err(LaunchError::IllegalAddress {
                    addr: handle,
                    len: elem,
                });
            }
            let a = store.base() as u64 + off;
            for (c, r) in raw.iter_mut().enumerate().take(view.channels as usize) {
                // The store lives (held by `view`) and is only accessed atomically;
                // `off + elem` is inside it (checked above).
                *r = host_bytes(a + c as u64 * u64::from(chb), chb) as u32;
            }
        }
        &TexData::Device(base) => {
            let a = base.wrapping_add(off);
            if !cache.check(cx.mem, a, elem) {
                return Err(LaunchError::IllegalAddress { addr: a, len: elem });
            }
            if cx.checks & (CHECK_INIT | CHECK_GLOBAL) != 0 && !cx.mem.initialized(a, elem) {
                report_uninit(cx, t, pc, a, elem as u32);
            }
            for (c, r) in raw.iter_mut().enumerate().take(view.channels as usize) {
                // Checked accessible above (`locate`'s contract for `host_read`).
                *r = host_bytes(a + c as u64 * u64::from(chb), chb) as u32;
            }
        }
    }
    Ok(raw)
}

/// Runs texture or surface operation `site` for thread `t` (registers at `base`,
/// at operation `pc`).
pub(super) fn run(
    cx: &Ctx,
    cache: &mut RegionCache,
    t: &mut Thread,
    base: usize,
    pc: usize,
    site: &TexSite,
) -> Result<(), LaunchError> {
    let reg = |t: &Thread, r: Reg| {
        if r == NO_REG {
            0
        } else {
            t.regs.get(base + r as usize).copied().unwrap_or(0)
        }
    };
    let handle = reg(t, site.handle);
    let surface = matches!(site.op, TexOp::Suld | TexOp::Sust | TexOp::Suq(_));
    let view = object(cx, cache, handle, surface)?;
    let set = |t: &mut Thread, r: Reg, v: u64| {
        if r != NO_REG
            && let Some(x) = t.regs.get_mut(base + r as usize)
        {
            *x = v;
        }
    };
    match site.op {
        TexOp::Txq(q) | TexOp::Suq(q) => {
            let v = query(&view, q);
            set(t, site.vals[0], u64::from(v));
        }
        TexOp::Fetch => {
            let lay = usize::from(site.layered);
            let dims = usize::from(site.dims);
            let c = if site.fcoords {
                let mut v = [0.0f32; 3];
                for (d, x) in v.iter_mut().enumerate().take(dims) {
                    *x = f32::from_bits(reg(t, site.coords[lay + d]) as u32);
                }
                Coords::F(v)
            } else {
                let mut v = [0i32; 3];
                for (d, x) in v.iter_mut().enumerate().take(dims) {
                    *x = reg(t, site.coords[lay + d]) as u32 as i32;
                }
                Coords::I(v)
            };
            let slices = view.levels.first().map_or(1, |l| l.slices);
            let layered = matches!(view.shape, TexShape::Array { layered: true, .. });
            let layer = if site.layered && layered {
                (i64::from(reg(t, site.coords[0]) as u32 as i32)).clamp(0, slices as i64 - 1) as u64
            } else {
                0
            };
            let tr: &Thread = t;
            let mut f = |l: usize, x: u64, y: u64, z: u64| {
                texel(cx, cache, tr, pc, &view, handle, (l, x, y, z))
            };
            let out = if site.lod != NO_REG && view.mipmapped {
                let lod = f32::from_bits(reg(t, site.lod) as u32);
                let (a, b, w) = pick_levels(&view, lod);
                let ta = fetch_level(&view, a, dims, c, layer, &mut f)?;
                if w == 0 || a == b {
                    ta
                } else {
                    blend(ta, fetch_level(&view, b, dims, c, layer, &mut f)?, w)
                }
            } else {
                fetch_level(&view, 0, dims, c, layer, &mut f)?
            };
            let bits = out.bits();
            for (k, &r) in site.vals.iter().enumerate() {
                set(t, r, u64::from(bits[k]));
            }
        }
        TexOp::Suld | TexOp::Sust => surface_access(t, base, site, &view, handle, &reg)?,
    }
    Ok(())
}

/// `suld.b` / `sust.b`: `x` in bytes; the access is the vector's bytes.
fn surface_access(
    t: &mut Thread,
    base: usize,
    site: &TexSite,
    view: &TexView,
    handle: u64,
    reg: &impl Fn(&Thread, Reg) -> u64,
) -> Result<(), LaunchError> {
    let n = site.vals.iter().filter(|r| **r != NO_REG).count() as u32;
    let tyb = site.ty.bytes();
    let size = i64::from(tyb * n);
    let Some(lv) = view.levels.first() else {
        return Err(LaunchError::IllegalAddress {
            addr: handle,
            len: 0,
        });
    };
    let TexData::Host(store) = &lv.data else {
        return Err(LaunchError::IllegalAddress {
            addr: handle,
            len: 0,
        });
    };
    if !store.alive() {
        return Err(LaunchError::IllegalAddress {
            addr: handle,
            len: size as u64,
        });
    }
    let lay = usize::from(site.layered);
    let c = |k: usize| i64::from(reg(t, site.coords[k]) as u32 as i32);
    let x = c(lay);
    let y = if site.dims >= 2 { c(lay + 1) } else { 0 };
    let slice = if site.layered {
        c(0)
    } else if site.dims == 3 {
        c(2)
    } else {
        0
    };
    let row = (lv.width * view.elem()) as i64;
    let (rows, slices) = (lv.height as i64, lv.slices as i64);
    let inside =
        x >= 0 && x + size <= row && (0..rows).contains(&y) && (0..slices).contains(&slice);
    let (x, y, slice) = if inside {
        (x, y, slice)
    } else {
        match site.clamp {
            SurfClamp::Trap => {
                return Err(LaunchError::IllegalAddress {
                    addr: handle,
                    len: size as u64,
                });
            }
            SurfClamp::Zero => {
                if site.op == TexOp::Suld {
                    for &r in &site.vals {
                        if r != NO_REG
                            && let Some(v) = t.regs.get_mut(base + r as usize)
                        {
                            *v = 0;
                        }
                    }
                }
                return Ok(());
            }
            SurfClamp::Clamp => {
                if size > row {
                    return Ok(());
                }
                let cx = x.clamp(0, row - size);
                (
                    cx - cx % size,
                    y.clamp(0, rows - 1),
                    slice.clamp(0, slices - 1),
                )
            }
        }
    };
    let off = ((slice * rows + y) * lv.pitch as i64 + x) as u64;
    if off + size as u64 > store.bytes() as u64 {
        return Err(LaunchError::IllegalAddress {
            addr: handle,
            len: size as u64,
        });
    }
    let a = store.base() as u64 + off;
    for (k, &r) in site.vals.iter().enumerate().take(n as usize) {
        let at = a + k as u64 * u64::from(tyb);
        // The store lives (held by `view`), is only accessed atomically, and
        // [off, off + size) is inside it (checked above).
        if site.op == TexOp::Suld {
            let v = host_bytes(at, tyb);
            if let Some(x) = t.regs.get_mut(base + r as usize) {
                *x = v;
            }
        } else {
            host_put(at, tyb, reg(t, r));
        }
    }
    Ok(())
}

/// OpenCL's channel data type of a texture (`txq`/`suq.channel_data_type`): the
/// `CL_*` value of the stored format, in the texture's read mode.
fn cl_data_type(view: &TexView) -> u32 {
    let (bytes, kind, float) = view.class();
    match (kind, bytes, float) {
        (ChanKind::Snorm, 1, _) | (ChanKind::Signed, 1, true) => 0x10D0,
        (ChanKind::Snorm, _, _) | (ChanKind::Signed, 2, true) => 0x10D1,
        (ChanKind::Unorm, 1, _) | (ChanKind::Unsigned, 1, true) => 0x10D2,
        (ChanKind::Unorm, _, _) | (ChanKind::Unsigned, 2, true) => 0x10D3,
        (ChanKind::Signed, 1, _) => 0x10D7,
        (ChanKind::Signed, 2, _) => 0x10D8,
        (ChanKind::Signed, _, _) => 0x10D9,
        (ChanKind::Unsigned, 1, _) => 0x10DA,
        (ChanKind::Unsigned, 2, _) => 0x10DB,
        (ChanKind::Unsigned, _, _) => 0x10DC,
        (ChanKind::Half, _, _) => 0x10DD,
        (ChanKind::Float, _, _) => 0x10DE,
    }
}

/// The value of query `q` of `view`.
fn query(view: &TexView, q: TexQuery) -> u32 {
    let l0 = view.levels.first();
    let dim = |f: fn(&sampler::TexLevel) -> u64| l0.map_or(0, |l| f(l) as u32);
    let layered = matches!(view.shape, TexShape::Array { layered: true, .. });
    let s = &view.sampling;
    match q {
        TexQuery::Width => dim(|l| l.width),
        TexQuery::Height => dim(|l| l.height),
        TexQuery::Depth => {
            if layered {
                1
            } else {
                dim(|l| l.slices)
            }
        }
        TexQuery::ArraySize => {
            if layered {
                dim(|l| l.slices)
            } else {
                0
            }
        }
        TexQuery::ChannelDataType => cl_data_type(view),
        // CL_R, CL_RG, CL_RGBA.
        TexQuery::ChannelOrder => match view.channels {
            1 => 0x10B0,
            2 => 0x10B2,
            _ => 0x10B5,
        },
        TexQuery::NormalizedCoords => u32::from(s.flags & sampler::NORMALIZED != 0),
        TexQuery::FilterMode => s.filter,
        TexQuery::AddrMode(d) => s.address[usize::from(d.min(2))],
        TexQuery::NumMipmapLevels => {
            if view.mipmapped {
                view.levels.len() as u32
            } else {
                0
            }
        }
        TexQuery::NumSamples => 0,
    }
}

/// The fault of a texture or surface operation that stopped with `e` at `addr`:
/// an access to the object (`addr` is its handle) or, for a linear or pitch-2-D
/// texture, to device memory.
pub(super) fn fault_kind(
    cx: &Ctx,
    t: &Thread,
    site: u32,
    addr: u64,
) -> Option<(AccessKind, AccessSpace, u32)> {
    let s = cx.prog.tex.get(site as usize)?;
    let kind = if s.op == TexOp::Sust {
        AccessKind::Write
    } else {
        AccessKind::Read
    };
    let surface = matches!(s.op, TexOp::Suld | TexOp::Sust | TexOp::Suq(_));
    let len = if matches!(s.op, TexOp::Suld | TexOp::Sust) {
        s.ty.bytes() * s.vals.iter().filter(|r| **r != NO_REG).count() as u32
    } else {
        4
    };
    if t.reg(s.handle) != addr {
        return Some((AccessKind::Read, AccessSpace::Global, len));
    }
    let space = if surface {
        AccessSpace::Surface
    } else {
        AccessSpace::Texture
    };
    Some((kind, space, len))
}
