//! CUDA arrays and mipmapped arrays: their descriptors and the checks NVIDIA makes
//! of them, their storage, the device-memory accounting, handles, and the window
//! of an array that a copy reads or writes. The C entry points are
//! `crate::api::array`; copies with arrays are `crate::copy`.
//!
//! - **Layout.** An array of `width × height × depth` elements (`height`/`depth` 0:
//!   absent, counted as 1; layers and cubemap faces count as the depth) is stored
//!   row-major: `(z · rows + y) · row_bytes + x_bytes`, `row_bytes` = width ×
//!   element size, no padding. The layout is softcuda's own ("opaque", as NVIDIA's
//!   tiled one is): only copies (`crate::copy`) address the bytes, through
//!   [`window`]; nothing else may depend on it.
//! - **Storage** is host memory softcuda owns ([`Store`], zeroed), outside the
//!   device address space and the memory map: no device pointer reaches it, so a
//!   kernel or a linear copy never touches it. Every access to it is atomic (it is
//!   treated as mapped memory by `crate::devmem::copy`), so copies racing on one
//!   array from two streams race on values, as on a GPU, never in the process.
//! - **Lifetime.** A queued copy holds the array's [`Store`] (an `Arc`) and checks
//!   when it runs that the array still lives ([`Store::alive`]), failing with the
//!   sticky `CUDA_ERROR_ILLEGAL_ADDRESS` otherwise, as a copy of freed device
//!   memory does: the bytes are freed with the last holder, never under a copy.
//! - **Accounting.** An array's bytes, rounded up to [`ALIGN`], count against its
//!   device's memory like `cuMemAlloc` memory (`cuMemGetInfo`) and against the test
//!   budget (`softcuda_fail_allocations_after`), until it is destroyed.
//! - **Ownership.** An array belongs to the context current at its creation (a
//!   green context's arrays to its primary context) and goes with it.
//!
//! **Lock order.** The table's lock ([`table`]) is a leaf: taken under the state
//! lock or alone, never while waiting.

use crate::state::{self, R, State};
use crate::types::*;
use core::ffi::c_uint;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Array handles are `ARRAY_TAG | id`, mipmapped-array handles `MIPMAP_TAG | id`:
/// never small integers, pointers or other softcuda handles; ids are never reused.
const ARRAY_TAG: u64 = 0x4152 << 48;
const MIPMAP_TAG: u64 = 0x4D4D << 48;
const ID_MASK: u64 = (1 << 48) - 1;

/// The size and alignment an array's storage is accounted in
/// (`cuArrayGetMemoryRequirements`): the device's `TEXTURE_ALIGNMENT`.
pub(crate) const ALIGN: u64 = 512;

/// The bytes of one array, zeroed at creation, freed with the last holder.
pub(crate) struct Store {
    ptr: *mut u8,
    len: usize,
    alive: AtomicBool,
}

// SAFETY: the bytes are only ever accessed atomically (`crate::devmem::copy` with
// the side marked mapped), through a pointer valid while the `Store` lives.
unsafe impl Send for Store {}
// SAFETY: as above: shared access is atomic access.
unsafe impl Sync for Store {}

impl Store {
    fn layout(len: usize) -> Option<std::alloc::Layout> {
        std::alloc::Layout::from_size_align(len.max(8).next_multiple_of(8), 64).ok()
    }

    /// `len` zeroed bytes, or `None` if the host refuses.
    fn new(len: usize) -> Option<Store> {
        let layout = Self::layout(len)?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        (!ptr.is_null()).then(|| Store {
            ptr,
            len,
            alive: AtomicBool::new(true),
        })
    }

    /// Whether the array still lives (a copy of a destroyed array fails).
    pub(crate) fn alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    /// The first byte.
    pub(crate) fn base(&self) -> *mut u8 {
        self.ptr
    }
}

impl crate::ptx::sampler::TexelStore for Store {
    fn alive(&self) -> bool {
        Store::alive(self)
    }
    fn base(&self) -> *mut u8 {
        self.ptr
    }
    fn bytes(&self) -> usize {
        self.len
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Some(layout) = Self::layout(self.len) {
            // SAFETY: allocated in `new` with this layout, deallocated once (the
            // last holder drops it; no access can follow).
            unsafe { std::alloc::dealloc(self.ptr, layout) };
        }
    }
}

/// The shape of an array: what a descriptor says, checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    /// The descriptor as created (a mipmap level's: its own dimensions).
    pub desc: CUDA_ARRAY3D_DESCRIPTOR,
    /// Bytes per element (all channels).
    pub elem: usize,
}

impl Shape {
    /// Bytes per row.
    pub(crate) fn row_bytes(&self) -> usize {
        self.desc.Width * self.elem
    }
    /// Rows per slice (height, at least 1).
    pub(crate) fn rows(&self) -> usize {
        self.desc.Height.max(1)
    }
    /// Slices: depth, layers or faces (at least 1).
    pub(crate) fn slices(&self) -> usize {
        self.desc.Depth.max(1)
    }
    /// Bytes of storage (checked against overflow at creation).
    fn bytes(&self) -> Option<usize> {
        self.row_bytes()
            .checked_mul(self.rows())?
            .checked_mul(self.slices())
    }
}

/// The bytes per element of `format` with `channels` channels: `INVALID_VALUE` for
/// a format cuda.h does not define or a bad channel count, `NOT_SUPPORTED` for the
/// block-compressed, video and packed formats.
pub(crate) fn element_size(format: c_uint, channels: c_uint) -> R<usize> {
    let per_channel = match format {
        CU_AD_FORMAT_UNSIGNED_INT8 | CU_AD_FORMAT_SIGNED_INT8 => 1,
        CU_AD_FORMAT_UNSIGNED_INT16 | CU_AD_FORMAT_SIGNED_INT16 | CU_AD_FORMAT_HALF => 2,
        CU_AD_FORMAT_UNSIGNED_INT32 | CU_AD_FORMAT_SIGNED_INT32 | CU_AD_FORMAT_FLOAT => 4,
        // UNORM/SNORM_INT8X1..INT16X4: the channel count is part of the format.
        f @ CU_AD_FORMAT_UNORM_INT8X1..=CU_AD_FORMAT_SNORM_INT16X4 => {
            let k = f - CU_AD_FORMAT_UNORM_INT8X1; // 0..=11
            let n = [1, 2, 4][(k % 3) as usize];
            if channels != n {
                return Err(code::INVALID_VALUE);
            }
            let bytes = if (k / 3).is_multiple_of(2) { 1 } else { 2 };
            return Ok(bytes * n as usize);
        }
        // Block-compressed (BC1..BC7), video (NV12, P010, ..., YUV) and packed or
        // planar formats: not implemented.
        0x50..=0x5e | CU_AD_FORMAT_BC1_UNORM..=0xa9 | CU_AD_FORMAT_NV12..=0xb5 => {
            return Err(code::NOT_SUPPORTED);
        }
        _ => return Err(code::INVALID_VALUE),
    };
    match channels {
        1 | 2 | 4 => Ok(per_channel * channels as usize),
        _ => Err(code::INVALID_VALUE),
    }
}

/// The device's limit `attr` (a `CUdevice_attribute`), as a size.
fn limit(s: &State, device: usize, attr: u32) -> usize {
    s.config.devices[device]
        .attribute(attr)
        .map_or(0, |v| usize::try_from(v).unwrap_or(0))
}

/// Checks `d` as `cuArray3DCreate` does on `device` (`mipmapped`: as
/// `cuMipmappedArrayCreate`'s base level): the format and channels, the flags, and
/// the dimensions of each kind of array against the device's texture limits.
pub(crate) fn check(
    s: &State,
    device: usize,
    d: &CUDA_ARRAY3D_DESCRIPTOR,
    mipmapped: bool,
) -> R<Shape> {
    let elem = element_size(d.Format, d.NumChannels)?;
    let known = CUDA_ARRAY3D_LAYERED
        | CUDA_ARRAY3D_SURFACE_LDST
        | CUDA_ARRAY3D_CUBEMAP
        | CUDA_ARRAY3D_TEXTURE_GATHER
        | CUDA_ARRAY3D_DEPTH_TEXTURE
        | CUDA_ARRAY3D_COLOR_ATTACHMENT
        | CUDA_ARRAY3D_SPARSE
        | CUDA_ARRAY3D_DEFERRED_MAPPING
        | CUDA_ARRAY3D_VIDEO_ENCODE_DECODE;
    if d.Flags & !known != 0 {
        return Err(code::INVALID_VALUE);
    }
    if d.Flags
        & (CUDA_ARRAY3D_DEPTH_TEXTURE
            | CUDA_ARRAY3D_SPARSE
            | CUDA_ARRAY3D_DEFERRED_MAPPING
            | CUDA_ARRAY3D_VIDEO_ENCODE_DECODE)
        != 0
    {
        return Err(code::NOT_SUPPORTED);
    }
    let (w, h, z) = (d.Width, d.Height, d.Depth);
    let lim = |a: u32| limit(s, device, a);
    let within = |v: usize, max: usize| (1..=max).contains(&v);
    let layered = d.Flags & CUDA_ARRAY3D_LAYERED != 0;
    let cubemap = d.Flags & CUDA_ARRAY3D_CUBEMAP != 0;
    let fits = if cubemap {
        // Six faces (layered: six per layer), square.
        let faces_ok = if layered {
            z.is_multiple_of(6) && within(z, lim(54))
        } else {
            z == 6
        };
        w == h && within(w, if layered { lim(53) } else { lim(52) }) && faces_ok
    } else if layered {
        if h == 0 {
            within(w, lim(42)) && within(z, lim(43)) // 1-D layered
        } else {
            within(w, lim(27)) && within(h, lim(28)) && within(z, lim(29)) // 2-D layered
        }
    } else if h == 0 {
        z == 0 && within(w, if mipmapped { lim(77) } else { lim(21) }) // 1-D
    } else if z == 0 {
        // 2-D
        let (mw, mh) = if mipmapped {
            (lim(73), lim(74))
        } else {
            (lim(22), lim(23))
        };
        within(w, mw) && within(h, mh)
    } else {
        // 3-D, or its alternate limits
        (within(w, lim(24)) && within(h, lim(25)) && within(z, lim(26)))
            || (within(w, lim(47)) && within(h, lim(48)) && within(z, lim(49)))
    };
    if !fits {
        return Err(code::INVALID_VALUE);
    }
    if d.Flags & CUDA_ARRAY3D_TEXTURE_GATHER != 0
        && (layered || cubemap || h == 0 || z != 0 || w > lim(45) || h > lim(46))
    {
        return Err(code::INVALID_VALUE); // gather: 2-D arrays only
    }
    let shape = Shape { desc: *d, elem };
    shape.bytes().ok_or(code::INVALID_VALUE)?;
    Ok(shape)
}

/// The dimensions of level `level` of a mipmapped array based on `d`: each halves
/// (floor, at least 1); absent dimensions stay 0, layers and faces stay.
pub(crate) fn level_desc(d: &CUDA_ARRAY3D_DESCRIPTOR, level: u32) -> CUDA_ARRAY3D_DESCRIPTOR {
    let half = |v: usize| if v == 0 { 0 } else { (v >> level).max(1) };
    let keeps_depth = d.Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP) != 0;
    CUDA_ARRAY3D_DESCRIPTOR {
        Width: half(d.Width),
        Height: half(d.Height),
        Depth: if keeps_depth { d.Depth } else { half(d.Depth) },
        ..*d
    }
}

/// The number of levels a full mipmap chain of `d` has: 1 + floor(log2 of the
/// largest halving dimension).
pub(crate) fn max_levels(d: &CUDA_ARRAY3D_DESCRIPTOR) -> u32 {
    let keeps_depth = d.Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP) != 0;
    let depth = if keeps_depth { 0 } else { d.Depth };
    let m = d.Width.max(d.Height).max(depth).max(1);
    usize::BITS - m.leading_zeros()
}

/// A live array.
struct Array {
    shape: Shape,
    ctx: u64,
    device: usize,
    /// The bytes accounted (storage rounded up to [`ALIGN`]).
    accounted: u64,
    /// The mipmapped array it is a level of, if any (destroyed with it only).
    parent: Option<u64>,
    store: Arc<Store>,
}

/// A live mipmapped array: its levels, base first.
struct Mipmapped {
    desc: CUDA_ARRAY3D_DESCRIPTOR,
    ctx: u64,
    levels: Vec<u64>,
}

#[derive(Default)]
struct Table {
    arrays: BTreeMap<u64, Array>,
    mipmaps: BTreeMap<u64, Mipmapped>,
    next: u64,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

/// The table (a leaf lock).
fn table() -> MutexGuard<'static, Option<Table>> {
    TABLE.lock().unwrap_or_else(PoisonError::into_inner)
}

fn with_table<T>(f: impl FnOnce(&mut Table) -> T) -> T {
    f(table().get_or_insert_with(Table::default))
}

/// The array id in handle `h`, if it has the shape of one.
fn array_id(h: CUarray) -> Option<u64> {
    let v = h as usize as u64;
    (v & !ID_MASK == ARRAY_TAG && v & ID_MASK != 0).then_some(v & ID_MASK)
}

fn mipmap_id(h: CUmipmappedArray) -> Option<u64> {
    let v = h as usize as u64;
    (v & !ID_MASK == MIPMAP_TAG && v & ID_MASK != 0).then_some(v & ID_MASK)
}

fn array_handle(id: u64) -> CUarray {
    (ARRAY_TAG | id) as usize as CUarray
}

/// Takes `bytes` from `device`'s memory and the test budget.
fn charge(s: &mut State, device: usize, bytes: u64) -> R {
    if s.used[device].saturating_add(bytes) > s.config.devices[device].total_mem {
        return Err(code::OUT_OF_MEMORY);
    }
    let limit = state::ALLOC_LIMIT.load(Ordering::Relaxed);
    if state::ALLOCATED
        .load(Ordering::Relaxed)
        .saturating_add(bytes)
        > limit
    {
        return Err(code::OUT_OF_MEMORY);
    }
    s.used[device] += bytes;
    state::ALLOCATED.fetch_add(bytes, Ordering::Relaxed);
    Ok(())
}

/// Gives `bytes` back to `device`'s memory and the test budget.
fn refund(s: &mut State, device: usize, bytes: u64) {
    s.used[device] = s.used[device].saturating_sub(bytes);
    let _ = state::ALLOCATED.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
        Some(v.saturating_sub(bytes))
    });
}

/// The bytes `shape` is accounted for (and `cuArrayGetMemoryRequirements` says).
pub(crate) fn accounted(shape: &Shape) -> u64 {
    shape
        .bytes()
        .map_or(u64::MAX, |b| (b as u64).next_multiple_of(ALIGN))
}

/// Makes an array of `shape` owned by context `ctx` (checked), level of `parent`.
fn make(s: &mut State, ctx: u64, shape: Shape, parent: Option<u64>) -> R<u64> {
    let device = s.context(ctx)?.device;
    let bytes = shape.bytes().ok_or(code::INVALID_VALUE)?;
    let accounted = accounted(&shape);
    charge(s, device, accounted)?;
    let Some(store) = Store::new(bytes) else {
        refund(s, device, accounted);
        return Err(code::OUT_OF_MEMORY);
    };
    Ok(with_table(|t| {
        t.next += 1;
        let id = t.next;
        t.arrays.insert(
            id,
            Array {
                shape,
                ctx,
                device,
                accounted,
                parent,
                store: Arc::new(store),
            },
        );
        id
    }))
}

/// Creates an array described by `d` in the current context.
pub(crate) fn create(s: &mut State, d: &CUDA_ARRAY3D_DESCRIPTOR) -> R<CUarray> {
    let ctx = crate::green::memory_owner(s, state::current_ctx(s)?);
    let device = s.context(ctx)?.device;
    let shape = check(s, device, d, false)?;
    make(s, ctx, shape, None).map(array_handle)
}

/// Creates a mipmapped array of `levels` levels (clamped to [1, a full chain])
/// based on `d` in the current context.
pub(crate) fn create_mipmapped(
    s: &mut State,
    d: &CUDA_ARRAY3D_DESCRIPTOR,
    levels: u32,
) -> R<CUmipmappedArray> {
    let ctx = crate::green::memory_owner(s, state::current_ctx(s)?);
    let device = s.context(ctx)?.device;
    check(s, device, d, true)?;
    let n = levels.clamp(1, max_levels(d));
    let mut made = Vec::new();
    for level in 0..n {
        let desc = level_desc(d, level);
        let shape = Shape {
            desc,
            elem: element_size(desc.Format, desc.NumChannels)?,
        };
        match make(s, ctx, shape, None) {
            Ok(id) => made.push(id),
            Err(e) => {
                release(s, |id, _| made.contains(&id));
                return Err(e);
            }
        }
    }
    Ok(with_table(|t| {
        t.next += 1;
        let id = t.next;
        for l in &made {
            if let Some(a) = t.arrays.get_mut(l) {
                a.parent = Some(id);
            }
        }
        t.mipmaps.insert(
            id,
            Mipmapped {
                desc: *d,
                ctx,
                levels: made,
            },
        );
        (MIPMAP_TAG | id) as usize as CUmipmappedArray
    }))
}

/// Removes the arrays `pick` selects (marked dead, their bytes refunded; the
/// storage goes with its last holder).
fn release(s: &mut State, pick: impl Fn(u64, &Array) -> bool) {
    let gone: Vec<Array> = with_table(|t| {
        let ids: Vec<u64> = t
            .arrays
            .iter()
            .filter(|(id, a)| pick(**id, a))
            .map(|(id, _)| *id)
            .collect();
        ids.iter().filter_map(|id| t.arrays.remove(id)).collect()
    });
    for a in gone {
        a.store.alive.store(false, Ordering::Release);
        refund(s, a.device, a.accounted);
    }
}

/// Destroys array `h` (`INVALID_HANDLE` if it is none, or a mipmapped array's
/// level, which goes only with its mipmapped array).
pub(crate) fn destroy(s: &mut State, h: CUarray) -> R {
    let id = array_id(h).ok_or(code::INVALID_HANDLE)?;
    let ok = with_table(|t| t.arrays.get(&id).map(|a| a.parent.is_none()));
    match ok {
        Some(true) => {
            release(s, |i, _| i == id);
            Ok(())
        }
        _ => Err(code::INVALID_HANDLE),
    }
}

/// Destroys mipmapped array `h` and its levels.
pub(crate) fn destroy_mipmapped(s: &mut State, h: CUmipmappedArray) -> R {
    let id = mipmap_id(h).ok_or(code::INVALID_HANDLE)?;
    with_table(|t| t.mipmaps.remove(&id)).ok_or(code::INVALID_HANDLE)?;
    release(s, |_, a| a.parent == Some(id));
    Ok(())
}

/// At the destruction or reset of context `ctx`: its arrays and mipmapped arrays go.
pub(crate) fn context_destroyed(s: &mut State, ctx: u64) {
    with_table(|t| t.mipmaps.retain(|_, m| m.ctx != ctx));
    release(s, |_, a| a.ctx == ctx);
}

/// The shape of array `h` (`INVALID_HANDLE` if it is none).
pub(crate) fn shape(h: CUarray) -> R<Shape> {
    let id = array_id(h).ok_or(code::INVALID_HANDLE)?;
    with_table(|t| t.arrays.get(&id).map(|a| a.shape)).ok_or(code::INVALID_HANDLE)
}

/// Level `level` of mipmapped array `h`: `INVALID_HANDLE` if `h` is none,
/// `INVALID_VALUE` past its last level.
pub(crate) fn level(h: CUmipmappedArray, level: c_uint) -> R<CUarray> {
    let id = mipmap_id(h).ok_or(code::INVALID_HANDLE)?;
    with_table(|t| {
        let m = t.mipmaps.get(&id).ok_or(code::INVALID_HANDLE)?;
        m.levels
            .get(level as usize)
            .map(|l| array_handle(*l))
            .ok_or(code::INVALID_VALUE)
    })
}

/// The base descriptor and the bytes accounted for all levels of mipmapped array
/// `h` (`INVALID_HANDLE` if it is none).
pub(crate) fn mipmapped_requirements(h: CUmipmappedArray) -> R<(CUDA_ARRAY3D_DESCRIPTOR, u64)> {
    let id = mipmap_id(h).ok_or(code::INVALID_HANDLE)?;
    with_table(|t| {
        let m = t.mipmaps.get(&id).ok_or(code::INVALID_HANDLE)?;
        let total = m
            .levels
            .iter()
            .filter_map(|l| t.arrays.get(l))
            .map(|a| a.accounted)
            .sum();
        Ok((m.desc, total))
    })
}

/// The shape and storage of live array `h` (`INVALID_VALUE` if it is none): what
/// a texture or surface object holds (`crate::texture`).
pub(crate) fn storage(h: CUarray) -> R<(Shape, Arc<Store>)> {
    let id = array_id(h).ok_or(code::INVALID_VALUE)?;
    with_table(|t| t.arrays.get(&id).map(|a| (a.shape, Arc::clone(&a.store))))
        .ok_or(code::INVALID_VALUE)
}

/// The shape and storage of each level of a mipmapped array, base first.
pub(crate) type Levels = Vec<(Shape, Arc<Store>)>;

/// The base descriptor and the levels (shape and storage, base first) of live
/// mipmapped array `h` (`INVALID_VALUE` if it is none).
pub(crate) fn mipmapped_storage(h: CUmipmappedArray) -> R<(CUDA_ARRAY3D_DESCRIPTOR, Levels)> {
    let id = mipmap_id(h).ok_or(code::INVALID_VALUE)?;
    with_table(|t| {
        let m = t.mipmaps.get(&id).ok_or(code::INVALID_VALUE)?;
        let levels = m
            .levels
            .iter()
            .filter_map(|l| t.arrays.get(l))
            .map(|a| (a.shape, Arc::clone(&a.store)))
            .collect();
        Ok((m.desc, levels))
    })
}

/// Live arrays made by `cuArrayCreate`/`cuArray3DCreate` (levels not counted) and
/// live mipmapped arrays.
pub(crate) fn live_counts() -> (usize, usize) {
    with_table(|t| {
        (
            t.arrays.values().filter(|a| a.parent.is_none()).count(),
            t.mipmaps.len(),
        )
    })
}

/// The part of an array a copy touches: its storage, the address of the first
/// byte, and the layout (bytes per row, rows per slice) of the rest.
pub(crate) struct Window {
    pub store: Arc<Store>,
    pub addr: u64,
    pub pitch: usize,
    pub rows: usize,
}

/// The window of array `h` at byte `x` of row `y` of slice `z`, checked to hold
/// `width` bytes × `height` rows × `depth` slices: `INVALID_VALUE` if `h` is no
/// live array or the box does not fit.
pub(crate) fn window(
    h: CUarray,
    (x, y, z): (usize, usize, usize),
    (width, height, depth): (usize, usize, usize),
) -> R<Window> {
    let id = array_id(h).ok_or(code::INVALID_VALUE)?;
    let (shape, store) = with_table(|t| t.arrays.get(&id).map(|a| (a.shape, Arc::clone(&a.store))))
        .ok_or(code::INVALID_VALUE)?;
    let fits = |at: usize, n: usize, max: usize| at.checked_add(n).is_some_and(|e| e <= max);
    if !fits(x, width, shape.row_bytes())
        || !fits(y, height, shape.rows())
        || !fits(z, depth, shape.slices())
    {
        return Err(code::INVALID_VALUE);
    }
    let (pitch, rows) = (shape.row_bytes(), shape.rows());
    // In bounds (checked above; the whole array's size did not overflow).
    let offset = (z * rows + y) * pitch + x;
    Ok(Window {
        addr: store.base() as u64 + offset as u64,
        store,
        pitch,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_sizes() {
        assert_eq!(element_size(CU_AD_FORMAT_FLOAT, 4), Ok(16));
        assert_eq!(element_size(CU_AD_FORMAT_HALF, 2), Ok(4));
        assert_eq!(
            element_size(CU_AD_FORMAT_UNSIGNED_INT8, 3),
            Err(code::INVALID_VALUE)
        );
        assert_eq!(element_size(0xc4, 2), Ok(4)); // UNORM_INT16X2
        assert_eq!(element_size(0xc8, 4), Ok(4)); // SNORM_INT8X4
        assert_eq!(element_size(0xc8, 1), Err(code::INVALID_VALUE));
        assert_eq!(element_size(CU_AD_FORMAT_NV12, 1), Err(code::NOT_SUPPORTED));
        assert_eq!(element_size(0x9d, 4), Err(code::NOT_SUPPORTED)); // BC7
        assert_eq!(element_size(0x77, 1), Err(code::INVALID_VALUE));
    }

    #[test]
    fn mip_levels_halve() {
        let d = CUDA_ARRAY3D_DESCRIPTOR {
            Width: 100,
            Height: 7,
            Depth: 0,
            Format: CU_AD_FORMAT_FLOAT,
            NumChannels: 1,
            Flags: 0,
        };
        assert_eq!(max_levels(&d), 7);
        let l3 = level_desc(&d, 3);
        assert_eq!((l3.Width, l3.Height, l3.Depth), (12, 1, 0));
    }
}
