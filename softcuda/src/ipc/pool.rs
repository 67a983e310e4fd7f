//! Memory pools shared between processes: exportable pools' memory files
//! ([`PoolFile`]), the 64-byte data naming one of their allocations
//! ([`PtrData`], `CUmemPoolPtrExportData`), and the pools and allocations this
//! process has imported. The C entry points are `crate::api::pool_ipc`; the pools
//! themselves `crate::pool`. Linux only ([`SUPPORTED`]).
//!
//! - **Exporter.** A pool created with `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`
//!   keeps all its memory in one memory file (`softcuda-pool-<pid>-<uid>`, `uid` an
//!   id the process never reuses), sealed against shrinking (and against new seals),
//!   which grows by each new block: a block is a fresh range of the file at the end
//!   (whole pages), laid over an inaccessible block of the device address space
//!   (`mmap(MAP_SHARED | MAP_FIXED)`) and then made accessible. Blocks are reused
//!   from the pool's free list as any pool's; a block given back to the system
//!   (release threshold, trim, destruction) leaves the address space and its range
//!   of the file is punched out (`fallocate(PUNCH_HOLE)`: the pages are freed; the
//!   range is never handed out again, so the file only ever grows, sparsely).
//!   `cuMemPoolExportToShareableHandle` hands out a duplicate of the file's
//!   descriptor: the pool's memory travels with it, no `/proc` access is needed.
//! - **Pointer data** ([`PtrData`], 64 bytes, little-endian): 0..8 the magic
//!   `softcuda`, 8..12 the kind ([`POOL_POINTER`], 3), 12..16 the exporter's pid,
//!   16..24 the pool file's uid, 24..32 the allocation's offset in the file (a
//!   multiple of the page size), 32..40 its size in bytes (as asked), 40..48 the
//!   allocation's id (the buffer id of its mapping in the exporter), 48..64 zero.
//! - **Importer.** `cuMemPoolImportFromShareableHandle` keeps its own duplicate of
//!   a descriptor whose file is a pool file (by name, seal and access mode) and
//!   records its pid and uid: an imported pool, with handles of its own tag
//!   ([`TAG`]), that nothing but `cuMemPoolImportPointer` and `cuMemPoolDestroy`
//!   accepts. `cuMemPoolImportPointer` checks that the data names that file and lies
//!   inside it, and maps the allocation's range of the file into a fresh block of
//!   this process's device address space: device memory of the importing context
//!   (`AllocKind::IpcImported`, reach of the context), a fresh buffer id, counted in
//!   `pool_imports`. The same data imported again in the same context returns the
//!   same address and counts one more import; each import is undone by one
//!   `cuMemFree` or `cuMemFreeAsync`, and the last unmaps (at once, or when the
//!   stream reaches the free).
//!
//! **Lock order.** This module's table lock may be taken before the memory map's,
//! never under it nor under the state lock's holders' memory-map guard; a
//! [`PoolFile`]'s own lock is a leaf (taken under the pools' lock).

use super::{MAGIC, SUPPORTED, pid};
use crate::state::{self, Alloc, AllocKind, R};
use crate::types::code;
use core::ffi::{c_int, c_void};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// The kind of a pool pointer's export data (after [`super::MEMORY`] and
/// [`super::EVENT`]).
pub(crate) const POOL_POINTER: u32 = 3;

/// The tag of imported pools' handles (`tag << 48 | id`), apart from created
/// pools' (`crate::pool::TAG`), so that every other pool call refuses them.
pub(crate) const TAG: u64 = 0x51;

/// What a pool file's name starts with (then `<pid>-<uid>`).
const PREFIX: &str = "softcuda-pool-";

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The page size of the device address space (blocks and file ranges are whole
/// pages).
fn page() -> R<u64> {
    crate::devspace::page_size().ok_or(code::OUT_OF_MEMORY)
}

/// The pid and uid a pool file's name carries.
fn parse_name(name: &str) -> Option<(u32, u64)> {
    let (p, u) = name.strip_prefix(PREFIX)?.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(p) || !digits(u) {
        return None;
    }
    Some((p.parse().ok()?, u.parse().ok()?))
}

/// An exportable pool's memory file (see the module).
#[derive(Debug)]
pub(crate) struct PoolFile {
    file: OwnedFd,
    uid: u64,
    ranges: Mutex<Ranges>,
}

#[derive(Debug, Default)]
struct Ranges {
    /// The file's size: where the next block's range starts.
    end: u64,
    /// The file offset of each block, by its base address.
    at: BTreeMap<u64, u64>,
}

impl PoolFile {
    /// A fresh, empty pool file (`NOT_SUPPORTED` off Linux).
    pub(crate) fn create() -> R<Arc<PoolFile>> {
        if !SUPPORTED {
            return Err(code::NOT_SUPPORTED);
        }
        let uid = crate::devalloc::new_buffer_id();
        let file = os::create(&format!("{PREFIX}{}-{uid}", pid())).ok_or(code::OUT_OF_MEMORY)?;
        Ok(Arc::new(PoolFile {
            file,
            uid,
            ranges: Mutex::default(),
        }))
    }

    /// A block of at least `size` bytes of zeroed device memory: a fresh range of
    /// the file mapped over fresh device addresses (the pool block's memory, as
    /// `crate::devalloc::reserve` gives other pools). Give it back with
    /// [`PoolFile::unreserve`].
    pub(crate) fn reserve(&self, size: u64) -> R<u64> {
        let page = page()?;
        let len = size
            .max(1)
            .checked_next_multiple_of(page)
            .ok_or(code::OUT_OF_MEMORY)?;
        let mut r = lock(&self.ranges);
        let offset = r.end;
        let end = offset.checked_add(len).ok_or(code::OUT_OF_MEMORY)?;
        if !os::grow(self.file.as_raw_fd(), end) {
            return Err(code::OUT_OF_MEMORY);
        }
        r.end = end;
        let base = crate::devspace::alloc_reserved(len, page).ok_or(code::OUT_OF_MEMORY)?;
        // SAFETY: `[base, base + len)` is the block just reserved, ours, that nothing
        // accesses; the file is `end` ≥ `offset + len` bytes long and never shrinks.
        let mapped = unsafe { os::map_at(base, len, self.file.as_raw_fd(), offset) }
            // SAFETY: as above: the block is ours and in no memory map yet.
            && unsafe { crate::devspace::protect(base, len, true) };
        if !mapped {
            // SAFETY: from `alloc_reserved(len, _)`, given back once, never reachable.
            unsafe { crate::devspace::free(base, len) };
            return Err(code::OUT_OF_MEMORY);
        }
        crate::sanitize::initcheck::forget(base, len);
        r.at.insert(base, offset);
        Ok(base)
    }

    /// Gives back the block at `base` ([`PoolFile::reserve`]`(size)`): its addresses
    /// to the device address space, its range of the file punched out (importers
    /// still mapping it read zeros from then on).
    ///
    /// # Safety
    /// `base` came from `self.reserve(size)`, is given back once, and nothing
    /// accesses it any more.
    pub(crate) unsafe fn unreserve(&self, base: u64, size: u64) {
        // SAFETY: the caller's promise: the block is ours (from `alloc_reserved`
        // through `reserve`), given back once, untouched.
        unsafe { crate::devspace::free(base, size) };
        let offset = lock(&self.ranges).at.remove(&base);
        if let (Some(off), Ok(page)) = (offset, page())
            && let Some(len) = size.max(1).checked_next_multiple_of(page)
        {
            os::punch(self.file.as_raw_fd(), off, len);
        }
    }

    /// The file offset of the block at `base`.
    fn offset_of(&self, base: u64) -> Option<u64> {
        lock(&self.ranges).at.get(&base).copied()
    }

    /// A new close-on-exec descriptor of the file, the caller's.
    pub(crate) fn export(&self) -> R<OwnedFd> {
        os::dup(self.file.as_raw_fd()).ok_or(code::OUT_OF_MEMORY)
    }
}

/// What `cuMemPoolExportPointer` writes (see the module's layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PtrData {
    pub(crate) pid: u32,
    pub(crate) uid: u64,
    pub(crate) offset: u64,
    pub(crate) size: u64,
    pub(crate) id: u64,
}

impl PtrData {
    /// The 64 bytes.
    pub(crate) fn encode(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        b[..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&POOL_POINTER.to_le_bytes());
        b[12..16].copy_from_slice(&self.pid.to_le_bytes());
        b[16..24].copy_from_slice(&self.uid.to_le_bytes());
        b[24..32].copy_from_slice(&self.offset.to_le_bytes());
        b[32..40].copy_from_slice(&self.size.to_le_bytes());
        b[40..48].copy_from_slice(&self.id.to_le_bytes());
        b
    }

    /// The data in `b`; `INVALID_VALUE` unless it is softcuda's pool-pointer data
    /// (magic, kind, zero padding, a non-zero size).
    pub(crate) fn decode(b: &[u8; 64]) -> R<PtrData> {
        let word = |r: core::ops::Range<usize>| {
            let mut w = [0u8; 8];
            w[..r.len()].copy_from_slice(&b[r]);
            u64::from_le_bytes(w)
        };
        let d = PtrData {
            pid: word(12..16) as u32,
            uid: word(16..24),
            offset: word(24..32),
            size: word(32..40),
            id: word(40..48),
        };
        if &b[..8] != MAGIC
            || word(8..12) != u64::from(POOL_POINTER)
            || b[48..].iter().any(|&x| x != 0)
            || d.size == 0
        {
            return Err(code::INVALID_VALUE);
        }
        Ok(d)
    }
}

/// `cuMemPoolExportPointer` of `ptr`: the base of a pool allocation not yet freed
/// (`cuMemFreeAsync` not called) from an exportable pool; else `INVALID_VALUE`.
pub(crate) fn export_pointer(ptr: u64) -> R<PtrData> {
    let p = crate::pool::pools();
    let b = p
        .blocks
        .get(&ptr)
        .filter(|b| !b.freeing)
        .ok_or(code::INVALID_VALUE)?;
    let file = p
        .pools
        .get(&b.pool)
        .and_then(|pl| pl.file.as_ref())
        .ok_or(code::INVALID_VALUE)?;
    Ok(PtrData {
        pid: pid(),
        uid: file.uid,
        offset: file.offset_of(ptr).ok_or(code::INVALID_VALUE)?,
        size: b.len,
        id: b.id,
    })
}

/// A pool imported from another process's (or this one's) pool file.
struct ImportedPool {
    file: OwnedFd,
    pid: u32,
    uid: u64,
}

/// An allocation imported with `cuMemPoolImportPointer`, mapped here.
struct Mapping {
    /// (importing context, exporter's pid, pool file uid, allocation id).
    key: (u64, u32, u64, u64),
    /// The length of the block of device addresses (whole pages).
    len: u64,
    /// Imports not yet freed (frees count when called).
    refs: u32,
}

struct Imports {
    pools: BTreeMap<u64, ImportedPool>,
    /// By base address.
    maps: BTreeMap<u64, Mapping>,
    next: u64,
}

static IMPORTS: Mutex<Imports> = Mutex::new(Imports {
    pools: BTreeMap::new(),
    maps: BTreeMap::new(),
    next: 0,
});

fn imports() -> MutexGuard<'static, Imports> {
    lock(&IMPORTS)
}

fn handle(id: u64) -> *mut c_void {
    ((TAG << 48) | id) as usize as *mut c_void
}

/// The id of an imported pool's handle, if `h` has the tag.
fn id_of(h: *mut c_void) -> Option<u64> {
    let v = h as usize as u64;
    (v >> 48 == TAG && v & 0xFFFF_FFFF_FFFF != 0).then_some(v & 0xFFFF_FFFF_FFFF)
}

/// `cuMemPoolImportFromShareableHandle` of descriptor `fd` (not taken: a duplicate
/// is kept): the imported pool's handle. `INVALID_VALUE` unless `fd` is an open pool
/// file (readable and writable, sealed against shrinking).
pub(crate) fn import_pool(fd: c_int) -> R<*mut c_void> {
    if !SUPPORTED {
        return Err(code::NOT_SUPPORTED);
    }
    let (name, _) = crate::vmm::named(fd).ok_or(code::INVALID_VALUE)?;
    let (pid, uid) = parse_name(&name).ok_or(code::INVALID_VALUE)?;
    let file = os::dup(fd).ok_or(code::OUT_OF_MEMORY)?;
    let mut im = imports();
    im.next += 1;
    let id = im.next;
    im.pools.insert(id, ImportedPool { file, pid, uid });
    Ok(handle(id))
}

/// Whether `h` has an imported pool's tag (live or not).
pub(crate) fn is_imported(h: *mut c_void) -> bool {
    id_of(h).is_some()
}

/// `cuMemPoolDestroy` of an imported pool: its handle is invalid from now on and
/// its descriptor closed; pointers imported from it stay mapped until freed.
/// `INVALID_VALUE` if `h` names no live imported pool.
pub(crate) fn destroy_pool(h: *mut c_void) -> R {
    let id = id_of(h).ok_or(code::INVALID_VALUE)?;
    let pool = imports().pools.remove(&id).ok_or(code::INVALID_VALUE)?;
    drop(pool);
    Ok(())
}

/// `cuMemPoolImportPointer` of `data` from imported pool `h` in context `ctx` on
/// `device`: the address of the mapping (see the module). `INVALID_VALUE` if `h`
/// is no live imported pool, the data is not pool-pointer data, names another pool
/// file, or a range that is not page-aligned or not inside the file.
pub(crate) fn import_pointer(h: *mut c_void, data: &[u8; 64], ctx: u64, device: usize) -> R<u64> {
    let id = id_of(h).ok_or(code::INVALID_VALUE)?;
    let d = PtrData::decode(data)?;
    let page = page()?;
    let len = d
        .size
        .checked_next_multiple_of(page)
        .ok_or(code::INVALID_VALUE)?;
    let end = d.offset.checked_add(len).ok_or(code::INVALID_VALUE)?;
    let mut im = imports();
    let pool = im.pools.get(&id).ok_or(code::INVALID_VALUE)?;
    if pool.pid != d.pid || pool.uid != d.uid || !d.offset.is_multiple_of(page) {
        return Err(code::INVALID_VALUE);
    }
    let fd = pool.file.as_raw_fd();
    let key = (ctx, d.pid, d.uid, d.id);
    if let Some((&base, m)) = im.maps.iter_mut().find(|(_, m)| m.key == key && m.refs > 0) {
        m.refs += 1;
        return Ok(base);
    }
    let (_, size) = crate::vmm::named(fd).ok_or(code::INVALID_VALUE)?;
    if end > size {
        return Err(code::INVALID_VALUE);
    }
    let base = crate::devspace::alloc_reserved(len, page).ok_or(code::OUT_OF_MEMORY)?;
    // SAFETY: `[base, base + len)` is the block just reserved, ours, that nothing
    // accesses; the file holds `[offset, offset + len)` (checked) and never shrinks
    // (sealed).
    let mapped = unsafe { os::map_at(base, len, fd, d.offset) }
        // SAFETY: as above: the block is ours and not yet in the memory map.
        && unsafe { crate::devspace::protect(base, len, true) };
    if !mapped {
        // SAFETY: from `alloc_reserved(len, _)`, given back once, never reachable.
        unsafe { crate::devspace::free(base, len) };
        return Err(code::OUT_OF_MEMORY);
    }
    crate::sanitize::memcheck::reused(base, d.size);
    crate::sanitize::initcheck::forget(base, d.size);
    im.maps.insert(base, Mapping { key, len, refs: 1 });
    state::memory_mut().insert(
        base,
        Alloc {
            size: d.size,
            ctx,
            device,
            kind: AllocKind::IpcImported,
            id: crate::devalloc::new_buffer_id(),
            reach: state::Reach::Context,
        },
    );
    Ok(base)
}

/// Whether `base` is a pointer imported from a pool here (freed or not).
pub(crate) fn is_pointer(base: u64) -> bool {
    imports().maps.contains_key(&base)
}

/// A free (`cuMemFree`, `cuMemFreeAsync`) of `base`, at the call: `None` if `base`
/// is no pointer imported from a pool here; `INVALID_VALUE` if it was freed as
/// often as imported; else one import fewer, and `true` if that was the last: the
/// caller then unmaps it with [`unmap_now`] (at once, or when its stream reaches
/// the free). A later import of the same data maps it afresh.
pub(crate) fn release(base: u64) -> Option<R<bool>> {
    let mut im = imports();
    let m = im.maps.get_mut(&base)?;
    if m.refs == 0 {
        return Some(Err(code::INVALID_VALUE));
    }
    m.refs -= 1;
    Some(Ok(m.refs == 0))
}

/// Unmaps the imported pointer at `base` after its last free: out of the memory map,
/// running work waited for, its addresses given back (the exporter's memory stays).
/// Nothing if it is gone already (its context was destroyed meanwhile).
pub(crate) fn unmap_now(base: u64) {
    let len = {
        let mut im = imports();
        if im.maps.get(&base).is_none_or(|m| m.refs > 0) {
            return;
        }
        let Some(m) = im.maps.remove(&base) else {
            return;
        };
        let mut map = state::memory_mut();
        if map
            .get(&base)
            .is_some_and(|a| a.kind == AllocKind::IpcImported)
        {
            map.remove(&base);
        }
        m.len
    };
    crate::devmem::quiesce();
    // SAFETY: the block came from `alloc_reserved(len, _)` (its record, removed just
    // now, once); it left the memory map and every operation that may have found it
    // there has ended.
    unsafe { crate::devspace::free(base, len) };
}

/// Unmaps the imported pointer at `base` whatever its imports (its context is being
/// destroyed); `false` if there is none.
///
/// # Safety
/// The mapping left the memory map once (this is its one unmapping) and every
/// operation that could have found it there has ended.
pub(crate) unsafe fn unmap(base: u64) -> bool {
    let m = imports().maps.remove(&base);
    let Some(m) = m else {
        return false;
    };
    // SAFETY: the block came from `alloc_reserved(m.len, _)` (its record, removed
    // just now, once); nothing accesses it (the caller's promise).
    unsafe { crate::devspace::free(base, m.len) };
    true
}

/// Live imported pools and imported pointers. Takes this module's lock: call it
/// without the state lock.
pub(crate) fn live_counts() -> (usize, usize) {
    let im = imports();
    (im.pools.len(), im.maps.len())
}

/// Forgets every imported pool and unmaps any imported pointer still recorded
/// (none should be: they go with their contexts).
pub(crate) fn reset() {
    let maps = {
        let mut im = imports();
        im.pools.clear();
        std::mem::take(&mut im.maps)
    };
    if maps.is_empty() {
        return;
    }
    {
        let mut map = state::memory_mut();
        for b in maps.keys() {
            if map.get(b).is_some_and(|a| a.kind == AllocKind::IpcImported) {
                map.remove(b);
            }
        }
    }
    crate::devmem::quiesce();
    for (base, m) in maps {
        // SAFETY: the record was taken out once (above); the mapping left the memory
        // map and every operation that may have found it there has ended.
        unsafe { crate::devspace::free(base, m.len) };
    }
}

/// The pool files (Linux).
#[cfg(target_os = "linux")]
mod os {
    use core::ffi::{c_char, c_int, c_long, c_uint};
    use std::os::fd::{FromRawFd, OwnedFd};

    unsafe extern "C" {
        fn memfd_create(name: *const c_char, flags: c_uint) -> c_int;
        fn ftruncate(fd: c_int, len: c_long) -> c_int;
        fn fcntl(fd: c_int, cmd: c_int, ...) -> c_int;
        fn fallocate(fd: c_int, mode: c_int, off: c_long, len: c_long) -> c_int;
    }

    const MFD_CLOEXEC: c_uint = 1;
    const MFD_ALLOW_SEALING: c_uint = 2;
    const F_DUPFD_CLOEXEC: c_int = 1030;
    const F_ADD_SEALS: c_int = 1033;
    const F_SEAL_SEAL: c_int = 1;
    const F_SEAL_SHRINK: c_int = 2;
    const FALLOC_FL_KEEP_SIZE: c_int = 1;
    const FALLOC_FL_PUNCH_HOLE: c_int = 2;

    /// An empty memory file named `name`, sealed against shrinking and new seals (it
    /// may grow), close-on-exec.
    pub(super) fn create(name: &str) -> Option<OwnedFd> {
        let name = std::ffi::CString::new(name).ok()?;
        // SAFETY: a NUL-terminated name; the call only creates a file.
        let fd = unsafe { memfd_create(name.as_ptr(), MFD_CLOEXEC | MFD_ALLOW_SEALING) };
        if fd < 0 {
            return None;
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        let file = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: sealing changes only the file's seals.
        let sealed = unsafe { fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL) } == 0;
        sealed.then_some(file)
    }

    /// Grows `fd` to `size` bytes (the new bytes zero).
    pub(super) fn grow(fd: c_int, size: u64) -> bool {
        let Ok(len) = c_long::try_from(size) else {
            return false;
        };
        // SAFETY: resizing a file touches no memory of ours.
        unsafe { ftruncate(fd, len) == 0 }
    }

    /// Frees the pages of `[off, off + len)` of `fd` (they read as zeros after).
    pub(super) fn punch(fd: c_int, off: u64, len: u64) {
        if let (Ok(o), Ok(l)) = (c_long::try_from(off), c_long::try_from(len)) {
            // SAFETY: punching a hole in a file touches no memory of ours (mappings
            // of the range stay valid and read zeros).
            unsafe { fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, o, l) };
        }
    }

    /// A close-on-exec duplicate of `fd`.
    pub(super) fn dup(fd: c_int) -> Option<OwnedFd> {
        if fd < 0 {
            return None;
        }
        // SAFETY: duplicating a descriptor touches no memory; a bad `fd` fails.
        let d = unsafe { fcntl(fd, F_DUPFD_CLOEXEC, 0 as c_int) };
        // SAFETY: `d` is the descriptor just made, owned by nothing else.
        (d >= 0).then(|| unsafe { OwnedFd::from_raw_fd(d) })
    }

    /// Lays `[off, off + len)` of `fd` over `[addr, addr + len)`, inaccessible.
    ///
    /// # Safety
    /// As `crate::devspace::map_shared_at`.
    pub(super) unsafe fn map_at(addr: u64, len: u64, fd: c_int, off: u64) -> bool {
        // SAFETY: the caller's promise, passed on.
        unsafe { crate::devspace::map_shared_at(addr, len, fd, off) }
    }
}

/// Elsewhere: no pool files (every entry point refuses first: [`SUPPORTED`]).
#[cfg(not(target_os = "linux"))]
mod os {
    use core::ffi::c_int;
    use std::os::fd::OwnedFd;

    pub(super) fn create(_name: &str) -> Option<OwnedFd> {
        None
    }

    pub(super) fn grow(_fd: c_int, _size: u64) -> bool {
        false
    }

    pub(super) fn punch(_fd: c_int, _off: u64, _len: u64) {}

    pub(super) fn dup(_fd: c_int) -> Option<OwnedFd> {
        None
    }

    /// # Safety
    /// Never maps anything.
    pub(super) unsafe fn map_at(_addr: u64, _len: u64, _fd: c_int, _off: u64) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_data_round_trips_and_foreign_bytes_are_refused() {
        let d = PtrData {
            pid: 77,
            uid: 5,
            offset: 8192,
            size: 1000,
            id: 42,
        };
        let b = d.encode();
        assert_eq!(PtrData::decode(&b), Ok(d));
        let mut bad = b;
        bad[8] = 1; // a memory handle's kind
        assert_eq!(PtrData::decode(&bad), Err(code::INVALID_VALUE));
        let mut bad = b;
        bad[60] = 1;
        assert_eq!(PtrData::decode(&bad), Err(code::INVALID_VALUE));
        let mut bad = b;
        bad[32..40].fill(0);
        assert_eq!(PtrData::decode(&bad), Err(code::INVALID_VALUE), "size 0");
        assert_eq!(PtrData::decode(&[0; 64]), Err(code::INVALID_VALUE));
    }

    #[test]
    fn pool_file_names_parse() {
        assert_eq!(parse_name("softcuda-pool-12-34"), Some((12, 34)));
        assert_eq!(parse_name("softcuda-pool-12-"), None);
        assert_eq!(parse_name("softcuda-pool-1x-3"), None);
        assert_eq!(parse_name("softcuda-vmm-dev0"), None);
    }
}
