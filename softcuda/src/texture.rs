//! Texture and surface objects: the checks `cuTexObjectCreate` and
//! `cuSurfObjectCreate` make of their descriptors, the table of live objects and
//! their handles, the descriptors the queries return, and the view of an object a
//! kernel reads through (`crate::ptx::sampler::TexView`, handed to the interpreter
//! by `KernelMemory`). The C entry points are `crate::api::texture`; the fetch
//! arithmetic is `crate::ptx::sampler`, its execution `crate::ptx::exec`.
//!
//! - **Handles** are `TEX_TAG | id` and `SURF_TAG | id` (`u64`, never 0, never a
//!   small integer or another softcuda handle); ids are never reused, so a stale
//!   handle names nothing.
//! - **Lifetime.** An object holds its array's storage (an `Arc` of
//!   `crate::array::Store`), so a destroyed array never dangles: a fetch through
//!   it sees the array dead and faults (`CUDA_ERROR_ILLEGAL_ADDRESS`).
//! - **Ownership.** An object belongs to the context current at its creation (a
//!   green context's to its primary context) and goes with it; a kernel of
//!   another context (other than one sharing memory with it) cannot use it.
//!
//! **Lock order.** The table's lock is a leaf: taken under the state lock or alone.

use crate::ptx::sampler::{Sampling, TexData, TexLevel, TexShape, TexView, chan_info};
use crate::state::{self, R, State};
use crate::types::*;
use core::ffi::c_uint;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

const TEX_TAG: u64 = 0x5458 << 48;
const SURF_TAG: u64 = 0x5346 << 48;
const ID_MASK: u64 = (1 << 48) - 1;

/// The resource an object reads, as given (handles as numbers).
#[derive(Clone, Copy, Debug)]
enum Res {
    Array(u64),
    Mipmapped(u64),
    Linear(CUDA_RESOURCE_DESC_linear),
    Pitch2D(CUDA_RESOURCE_DESC_pitch2D),
}

/// A live texture or surface object.
struct Obj {
    ctx: u64,
    res: Res,
    /// The texture descriptor (textures only).
    tex: Option<CUDA_TEXTURE_DESC>,
    view: Arc<TexView>,
}

#[derive(Default)]
struct Table {
    objs: BTreeMap<u64, Obj>,
    next: u64,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

fn table() -> MutexGuard<'static, Option<Table>> {
    TABLE.lock().unwrap_or_else(PoisonError::into_inner)
}

fn with_table<T>(f: impl FnOnce(&mut Table) -> T) -> T {
    f(table().get_or_insert_with(Table::default))
}

/// The device's limit `attr`, as a size.
fn limit(s: &State, device: usize, attr: u32) -> u64 {
    s.config.devices[device]
        .attribute(attr)
        .map_or(0, |v| u64::try_from(v).unwrap_or(0))
}

/// Bytes per element of `format` × `channels` for a linear or pitch-2-D resource.
fn linear_elem(format: CUarray_format, channels: c_uint) -> R<u64> {
    chan_info(format).ok_or(code::INVALID_VALUE)?;
    crate::array::element_size(format, channels).map(|e| e as u64)
}

/// One level of an array as the interpreter sees it.
fn level_of(shape: &crate::array::Shape, store: Arc<crate::array::Store>) -> TexLevel {
    TexLevel {
        width: shape.desc.Width as u64,
        height: shape.rows() as u64,
        slices: shape.slices() as u64,
        pitch: shape.row_bytes() as u64,
        data: TexData::Host(store),
    }
}

/// The shape of an array described by `d`.
fn array_shape(d: &CUDA_ARRAY3D_DESCRIPTOR) -> TexShape {
    let layered = d.Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP) != 0;
    let dims = if d.Height == 0 {
        1
    } else if d.Depth == 0 || layered {
        2
    } else {
        3
    };
    TexShape::Array { dims, layered }
}

/// Checks resource descriptor `r` on `device` and builds the view (without its
/// sampling) and the resource as kept.
fn resource(s: &State, device: usize, r: &CUDA_RESOURCE_DESC) -> R<(TexView, Res)> {
    if r.flags != 0 {
        return Err(code::INVALID_VALUE);
    }
    let lim = |a: u32| limit(s, device, a);
    let view = |format, channels, shape, levels, mipmapped| TexView {
        format,
        channels,
        shape,
        levels,
        mipmapped,
        sampling: Sampling::default(),
    };
    match r.resType {
        CU_RESOURCE_TYPE_ARRAY => {
            // SAFETY: the caller says the union holds `array` (`resType`); a
            // handle is plain data whatever its value.
            let h = unsafe { r.res.array.hArray };
            let (shape, store) = crate::array::storage(h)?;
            let d = shape.desc;
            let v = view(
                d.Format,
                d.NumChannels,
                array_shape(&d),
                vec![level_of(&shape, store)],
                false,
            );
            Ok((v, Res::Array(h as usize as u64)))
        }
        CU_RESOURCE_TYPE_MIPMAPPED_ARRAY => {
            // SAFETY: as above, for `mipmap`.
            let h = unsafe { r.res.mipmap.hMipmappedArray };
            let (d, levels) = crate::array::mipmapped_storage(h)?;
            let levels = levels
                .into_iter()
                .map(|(sh, st)| level_of(&sh, st))
                .collect();
            let v = view(d.Format, d.NumChannels, array_shape(&d), levels, true);
            Ok((v, Res::Mipmapped(h as usize as u64)))
        }
        CU_RESOURCE_TYPE_LINEAR => {
            // SAFETY: as above, for `linear` (plain data).
            let l = unsafe { r.res.linear };
            let elem = linear_elem(l.format, l.numChannels)?;
            let width = l.sizeInBytes as u64 / elem;
            if l.devPtr == 0
                || !l.devPtr.is_multiple_of(lim(14).max(1))
                || width == 0
                || width > lim(69)
            {
                return Err(code::INVALID_VALUE);
            }
            let level = TexLevel {
                width,
                height: 1,
                slices: 1,
                pitch: width * elem,
                data: TexData::Device(l.devPtr),
            };
            let v = view(
                l.format,
                l.numChannels,
                TexShape::Linear,
                vec![level],
                false,
            );
            Ok((v, Res::Linear(l)))
        }
        CU_RESOURCE_TYPE_PITCH2D => {
            // SAFETY: as above, for `pitch2D` (plain data).
            let p = unsafe { r.res.pitch2D };
            let elem = linear_elem(p.format, p.numChannels)?;
            let (w, h, pitch) = (p.width as u64, p.height as u64, p.pitchInBytes as u64);
            if p.devPtr == 0
                || !p.devPtr.is_multiple_of(lim(14).max(1))
                || !pitch.is_multiple_of(lim(51).max(1))
                || !(1..=lim(70)).contains(&w)
                || !(1..=lim(71)).contains(&h)
                || pitch > lim(72)
                || w * elem > pitch
            {
                return Err(code::INVALID_VALUE);
            }
            let level = TexLevel {
                width: w,
                height: h,
                slices: 1,
                pitch,
                data: TexData::Device(p.devPtr),
            };
            let shape = TexShape::Array {
                dims: 2,
                layered: false,
            };
            Ok((
                view(p.format, p.numChannels, shape, vec![level], false),
                Res::Pitch2D(p),
            ))
        }
        _ => Err(code::INVALID_VALUE),
    }
}

/// Checks texture descriptor `t` and returns its sampling.
fn sampling(t: &CUDA_TEXTURE_DESC) -> R<Sampling> {
    let known = CU_TRSF_READ_AS_INTEGER
        | CU_TRSF_NORMALIZED_COORDINATES
        | CU_TRSF_SRGB
        | CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION
        | CU_TRSF_SEAMLESS_CUBEMAP;
    if t.addressMode.iter().any(|m| *m > CU_TR_ADDRESS_MODE_BORDER)
        || t.filterMode > CU_TR_FILTER_MODE_LINEAR
        || t.mipmapFilterMode > CU_TR_FILTER_MODE_LINEAR
        || t.flags & !known != 0
    {
        return Err(code::INVALID_VALUE);
    }
    if t.flags & CU_TRSF_SRGB != 0 {
        return Err(code::NOT_SUPPORTED); // sRGB conversion: not implemented
    }
    Ok(Sampling {
        address: t.addressMode,
        filter: t.filterMode,
        flags: t.flags,
        mip_filter: t.mipmapFilterMode,
        mip_bias: t.mipmapLevelBias,
        min_lod: t.minMipmapLevelClamp,
        max_lod: t.maxMipmapLevelClamp,
        border: t.borderColor,
    })
}

/// Adds an object owned by the current context; returns its handle.
fn insert(s: &State, tag: u64, res: Res, tex: Option<CUDA_TEXTURE_DESC>, view: TexView) -> R<u64> {
    let ctx = crate::green::memory_owner(s, state::current_ctx(s)?);
    Ok(with_table(|t| {
        t.next += 1;
        let id = t.next;
        t.objs.insert(
            id | tag,
            Obj {
                ctx,
                res,
                tex,
                view: Arc::new(view),
            },
        );
        id | tag
    }))
}

/// The device of the current context.
fn current_device(s: &State) -> R<usize> {
    let ctx = state::current_ctx(s)?;
    Ok(s.context(ctx)?.device)
}

/// `cuTexObjectCreate` (the view descriptor is refused by the caller).
pub(crate) fn create_texture(
    s: &State,
    r: &CUDA_RESOURCE_DESC,
    t: &CUDA_TEXTURE_DESC,
) -> R<CUtexObject> {
    let device = current_device(s)?;
    let (mut view, res) = resource(s, device, r)?;
    view.sampling = sampling(t)?;
    insert(s, TEX_TAG, res, Some(*t), view)
}

/// `cuSurfObjectCreate`: an array made with `CUDA_ARRAY3D_SURFACE_LDST` only.
pub(crate) fn create_surface(s: &State, r: &CUDA_RESOURCE_DESC) -> R<CUsurfObject> {
    let device = current_device(s)?;
    if r.resType != CU_RESOURCE_TYPE_ARRAY {
        return Err(code::INVALID_VALUE);
    }
    let (mut view, res) = resource(s, device, r)?;
    // A surface reads its elements' bits: `suq.channel_data_type` reports the
    // stored integer format, not a normalized one.
    view.sampling.flags = crate::ptx::sampler::READ_AS_INTEGER;
    let Res::Array(h) = res else {
        return Err(code::INVALID_VALUE);
    };
    let (shape, _) = crate::array::storage(h as usize as CUarray)?;
    if shape.desc.Flags & CUDA_ARRAY3D_SURFACE_LDST == 0 {
        return Err(code::INVALID_VALUE);
    }
    insert(s, SURF_TAG, res, None, view)
}

/// Whether `h` has the shape of a handle of kind `tag`.
fn tagged(h: u64, tag: u64) -> bool {
    h & !ID_MASK == tag && h & ID_MASK != 0
}

/// Destroys object `h` of kind `tag` (`INVALID_VALUE` if it names none).
fn destroy(h: u64, tag: u64) -> R {
    if !tagged(h, tag) {
        return Err(code::INVALID_VALUE);
    }
    with_table(|t| t.objs.remove(&h))
        .map(|_| ())
        .ok_or(code::INVALID_VALUE)
}

/// `cuTexObjectDestroy`.
pub(crate) fn destroy_texture(h: CUtexObject) -> R {
    destroy(h, TEX_TAG)
}

/// `cuSurfObjectDestroy`.
pub(crate) fn destroy_surface(h: CUsurfObject) -> R {
    destroy(h, SURF_TAG)
}

/// The resource descriptor object `h` of kind `tag` was created with.
fn resource_desc(h: u64, tag: u64) -> R<CUDA_RESOURCE_DESC> {
    if !tagged(h, tag) {
        return Err(code::INVALID_VALUE);
    }
    let res = with_table(|t| t.objs.get(&h).map(|o| o.res)).ok_or(code::INVALID_VALUE)?;
    let mut d = CUDA_RESOURCE_DESC::default();
    match res {
        Res::Array(a) => {
            d.resType = CU_RESOURCE_TYPE_ARRAY;
            d.res.array = CUDA_RESOURCE_DESC_array {
                hArray: a as usize as CUarray,
            };
        }
        Res::Mipmapped(m) => {
            d.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
            d.res.mipmap = CUDA_RESOURCE_DESC_mipmap {
                hMipmappedArray: m as usize as CUmipmappedArray,
            };
        }
        Res::Linear(l) => {
            d.resType = CU_RESOURCE_TYPE_LINEAR;
            d.res.linear = l;
        }
        Res::Pitch2D(p) => {
            d.resType = CU_RESOURCE_TYPE_PITCH2D;
            d.res.pitch2D = p;
        }
    }
    Ok(d)
}

/// `cuTexObjectGetResourceDesc`.
pub(crate) fn texture_resource(h: CUtexObject) -> R<CUDA_RESOURCE_DESC> {
    resource_desc(h, TEX_TAG)
}

/// `cuSurfObjectGetResourceDesc`.
pub(crate) fn surface_resource(h: CUsurfObject) -> R<CUDA_RESOURCE_DESC> {
    resource_desc(h, SURF_TAG)
}

/// `cuTexObjectGetTextureDesc`.
pub(crate) fn texture_desc(h: CUtexObject) -> R<CUDA_TEXTURE_DESC> {
    if !tagged(h, TEX_TAG) {
        return Err(code::INVALID_VALUE);
    }
    with_table(|t| t.objs.get(&h).and_then(|o| o.tex)).ok_or(code::INVALID_VALUE)
}

/// Whether `h` is a live texture object (`cuTexObjectGetResourceViewDesc`: none
/// has a view).
pub(crate) fn texture_exists(h: CUtexObject) -> bool {
    tagged(h, TEX_TAG) && with_table(|t| t.objs.contains_key(&h))
}

/// The view of object `h` (a surface if `surface`) for a kernel whose context
/// `reaches` the object's.
pub(crate) fn view(h: u64, surface: bool, reaches: impl Fn(u64) -> bool) -> Option<Arc<TexView>> {
    let tag = if surface { SURF_TAG } else { TEX_TAG };
    if !tagged(h, tag) {
        return None;
    }
    with_table(|t| {
        t.objs
            .get(&h)
            .filter(|o| reaches(o.ctx))
            .map(|o| Arc::clone(&o.view))
    })
}

/// What a kernel's fault at handle `h` (of a surface if `surface`) was, for the
/// sanitizer's report.
pub(crate) fn describe_fault(h: u64, surface: bool) -> String {
    let (tag, what) = if surface {
        (SURF_TAG, "surface")
    } else {
        (TEX_TAG, "texture")
    };
    let live = tagged(h, tag)
        .then(|| with_table(|t| t.objs.get(&h).map(|o| Arc::clone(&o.view))))
        .flatten();
    match live {
        None => format!("Handle {h:#x} names no live {what} object (of this context)"),
        Some(v) => {
            let dead = v.levels.iter().any(|l| match &l.data {
                TexData::Host(s) => !s.alive(),
                TexData::Device(_) => false,
            });
            if dead {
                format!("The {what} object {h:#x} reads a CUDA array that was destroyed")
            } else {
                format!("The {what} access through {h:#x} is out of range (.trap)")
            }
        }
    }
}

/// At the destruction or reset of context `ctx`: its objects go.
pub(crate) fn context_destroyed(ctx: u64) {
    with_table(|t| t.objs.retain(|_, o| o.ctx != ctx));
}

/// Live texture objects and surface objects.
pub(crate) fn live_counts() -> (usize, usize) {
    with_table(|t| {
        let tex = t.objs.keys().filter(|h| tagged(**h, TEX_TAG)).count();
        (tex, t.objs.len() - tex)
    })
}
