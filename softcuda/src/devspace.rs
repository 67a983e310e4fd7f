//! The device address space: where device memory lives, apart from host memory.
//!
//! On a GPU a device virtual address is never a host one: a stale or wild device
//! pointer reaches other device memory or faults, but never the host's heap. softcuda
//! keeps the same rule. At first use it reserves one large range of address space
//! (`mmap` of inaccessible, unbacked pages: `PROT_NONE`, `MAP_NORESERVE`) and takes
//! every kind of device memory from it — `cuMemAlloc`/`cuMemAllocPitch`, module
//! variables, managed memory, pool blocks (`cuMemAllocAsync`, `cuMemPoolCreate`),
//! graph memory, and virtual-memory reservations (`cuMemAddressReserve`: blocks handed
//! out inaccessible by [`alloc_reserved`], into which `crate::vmm` maps shared memory
//! files and makes them accessible itself). Pinned (`cuMemHostAlloc`) and registered
//! (`cuMemHostRegister`) host memory stay host memory and never lie inside the range.
//!
//! - A block is made accessible (`PROT_READ | PROT_WRITE`) when it is handed out; its
//!   pages are zero (fresh, or discarded when last freed).
//! - A freed block is replaced in place by fresh inaccessible pages (`mmap` with
//!   `MAP_FIXED` over it, one atomic step: the address space never has a hole another
//!   mapping could fill), its contents discarded. The range is never unmapped and
//!   never given to the host allocator, so no `Box`, `Vec` or pinned buffer can ever
//!   land at a device address, live or freed; a host access through a stale device
//!   pointer faults instead of corrupting host memory.
//! - Freed blocks are reused by later device allocations only once the range has
//!   never-used room left for none (a bump pointer first, then first fit among the
//!   freed blocks), so a stale device address stays unmapped — an illegal address to
//!   kernels and copies, through the memory map — for as long as possible.
//!
//! Blocks are whole pages (at least 256-byte aligned, as `cuMemAlloc` promises). The
//! reservation is as large as the system allows up to [`WANT`] (halving down to
//! [`LEAST`]: valgrind, for one, refuses 64 GiB); allocations past it fail with
//! `CUDA_ERROR_OUT_OF_MEMORY`. The allocator's lock is a leaf: nothing is taken while
//! it is held.

use core::ffi::{c_int, c_long, c_void};
use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock, PoisonError};

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
compile_error!("softcuda reserves its device address space with mmap: Linux or macOS only");

unsafe extern "C" {
    fn mmap(
        addr: *mut c_void,
        len: usize,
        prot: c_int,
        flags: c_int,
        fd: c_int,
        off: c_long,
    ) -> *mut c_void;
    fn mprotect(addr: *mut c_void, len: usize, prot: c_int) -> c_int;
    fn sysconf(name: c_int) -> c_long;
}

const PROT_NONE: c_int = 0;
const PROT_READ: c_int = 1;
const PROT_WRITE: c_int = 2;
#[cfg(target_os = "linux")]
const MAP_SHARED: c_int = 0x01;
const MAP_PRIVATE: c_int = 0x02;
const MAP_FIXED: c_int = 0x10;
#[cfg(all(target_os = "linux", any(target_arch = "mips", target_arch = "mips64")))]
const MAP_ANONYMOUS: c_int = 0x800;
#[cfg(all(
    target_os = "linux",
    not(any(target_arch = "mips", target_arch = "mips64"))
))]
const MAP_ANONYMOUS: c_int = 0x20;
#[cfg(target_os = "macos")]
const MAP_ANONYMOUS: c_int = 0x1000;
#[cfg(all(target_os = "linux", any(target_arch = "mips", target_arch = "mips64")))]
const MAP_NORESERVE: c_int = 0x400;
#[cfg(all(
    target_os = "linux",
    any(
        target_arch = "powerpc",
        target_arch = "powerpc64",
        target_arch = "sparc",
        target_arch = "sparc64"
    )
))]
const MAP_NORESERVE: c_int = 0x40;
#[cfg(all(
    target_os = "linux",
    not(any(
        target_arch = "mips",
        target_arch = "mips64",
        target_arch = "powerpc",
        target_arch = "powerpc64",
        target_arch = "sparc",
        target_arch = "sparc64"
    ))
))]
const MAP_NORESERVE: c_int = 0x4000;
#[cfg(target_os = "macos")]
const MAP_NORESERVE: c_int = 0x40;
#[cfg(target_os = "linux")]
const SC_PAGESIZE: c_int = 30;
#[cfg(target_os = "macos")]
const SC_PAGESIZE: c_int = 29;
const MAP_FAILED: *mut c_void = !0usize as *mut c_void;

/// The reservation softcuda asks for first: 256 GiB of address space (no memory).
pub const WANT: u64 = 256 << 30;
/// The smallest reservation it settles for: 1 GiB.
pub const LEAST: u64 = 1 << 30;

/// The reserved range and its block size.
#[derive(Debug, Clone, Copy)]
struct Range {
    base: u64,
    len: u64,
    page: u64,
}

/// What the allocator knows: the never-used room and the freed blocks.
struct Space {
    /// Offset of the never-used tail of the range.
    next: u64,
    /// Freed blocks, by address → length, coalesced (no two adjacent).
    free: BTreeMap<u64, u64>,
}

static RANGE: OnceLock<Option<Range>> = OnceLock::new();
static SPACE: Mutex<Space> = Mutex::new(Space {
    next: 0,
    free: BTreeMap::new(),
});

fn range() -> Option<Range> {
    *RANGE.get_or_init(reserve)
}

/// Reserves the range: the largest of `WANT`, `WANT / 2`, ... down to `LEAST` that
/// the system grants.
fn reserve() -> Option<Range> {
    // SAFETY: `sysconf` reads a system value.
    let page = u64::try_from(unsafe { sysconf(SC_PAGESIZE) })
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(4096)
        .max(256);
    let mut len = WANT;
    while len >= LEAST {
        let Ok(size) = usize::try_from(len) else {
            len /= 2;
            continue;
        };
        // SAFETY: a fresh, inaccessible, unbacked anonymous mapping at an address the
        // system chooses: it touches no existing memory.
        let p = unsafe {
            mmap(
                core::ptr::null_mut(),
                size,
                PROT_NONE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p != MAP_FAILED && !p.is_null() {
            return Some(Range {
                base: p as u64,
                len,
                page,
            });
        }
        len /= 2;
    }
    None
}

fn space() -> std::sync::MutexGuard<'static, Space> {
    SPACE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `[start, end)` of the device address space (reserved at the first call, or at the
/// first device allocation); `None` if the system granted none.
pub fn bounds() -> Option<(u64, u64)> {
    range().map(|r| (r.base, r.base + r.len))
}

/// Whether `[addr, addr + len)` (`len` ≥ 1) touches the device address space.
pub fn overlaps(addr: u64, len: u64) -> bool {
    let Some(r) = RANGE.get().copied().flatten() else {
        return false; // nothing reserved: no device address exists yet
    };
    let end = addr.saturating_add(len.max(1));
    addr < r.base + r.len && end > r.base
}

/// The bytes a block of `size` takes: whole pages.
fn block_len(r: &Range, size: u64) -> Option<u64> {
    size.max(1).checked_next_multiple_of(r.page)
}

/// Hands out a block of at least `size` bytes of zeroed, accessible device memory;
/// `None` when the range has no room left (out of memory).
pub fn alloc(size: u64) -> Option<u64> {
    let r = range()?;
    let len = block_len(&r, size)?;
    let mut sp = space();
    let addr = if r.len - sp.next >= len {
        sp.next += len;
        r.base + sp.next - len
    } else {
        let (&start, &flen) = sp.free.iter().find(|&(_, &l)| l >= len)?;
        sp.free.remove(&start);
        if flen > len {
            sp.free.insert(start + len, flen - len);
        }
        start
    };
    // SAFETY: `[addr, addr + len)` lies inside the reservation and is no block's: the
    // allocator just took it from the never-used room or the freed blocks.
    let ok = unsafe { mprotect(addr as *mut c_void, len as usize, PROT_READ | PROT_WRITE) } == 0;
    if ok {
        Some(addr)
    } else {
        // (Out of mappings, say: it stays inaccessible, and free.)
        give_back(&mut sp, addr, len);
        None
    }
}

/// Takes back the block at `addr` that [`alloc`] handed out for `size` bytes: its
/// pages are discarded and made inaccessible; the addresses stay device addresses.
///
/// # Safety
/// `addr` came from `alloc(size)` and is freed once; nothing accesses the block any
/// more (every operation that could has ended: see `crate::devmem`).
pub unsafe fn free(addr: u64, size: u64) {
    let Some(r) = range() else {
        return;
    };
    let Some(len) = block_len(&r, size) else {
        return;
    };
    let mut sp = space();
    // SAFETY: the block is ours (the caller's promise) and lies inside the
    // reservation; nothing accesses it.
    if !unsafe { discard(addr, len) } {
        // The pages could not be replaced: the block keeps its contents and stays
        // accessible; it is never handed out again (a leak of address space only).
        return;
    }
    give_back(&mut sp, addr, len);
}

/// Replaces the pages of `[addr, addr + len)` with fresh inaccessible, unbacked ones
/// (`mmap` with `MAP_FIXED` over them: one atomic step, never a hole another mapping
/// could fill); whatever was mapped there (anonymous pages, a shared file) is
/// unmapped. `false` if the system refused (the old pages stay).
///
/// # Safety
/// `[addr, addr + len)` is a page-aligned part of a block of the device address
/// space that the caller owns, and nothing accesses it any more.
pub unsafe fn discard(addr: u64, len: u64) -> bool {
    let Ok(size) = usize::try_from(len) else {
        return false;
    };
    // SAFETY: the range is the caller's and lies inside the reservation (the
    // caller's promise); replacing its pages touches nothing else.
    let p = unsafe {
        mmap(
            addr as *mut c_void,
            size,
            PROT_NONE,
            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
            -1,
            0,
        )
    };
    p as u64 == addr
}

/// Hands out an inaccessible block of `size` bytes (whole pages) whose address is a
/// multiple of `align` (a power of two, at least a page): the address space of a
/// virtual-memory reservation (`crate::vmm`), which the caller maps pages into. What
/// the alignment leaves over before and after the block goes back to the freed
/// blocks. Give it back with [`free`]`(addr, size)`. `None` when the range has no
/// room left.
pub fn alloc_reserved(size: u64, align: u64) -> Option<u64> {
    let r = range()?;
    let len = block_len(&r, size)?;
    let align = align.max(r.page);
    if !align.is_power_of_two() {
        return None;
    }
    let mut sp = space();
    let start = r.base + sp.next;
    let end = r.base + r.len;
    // The never-used room first, then the first freed block with room for it.
    let (from, flen, fresh) = match start
        .checked_next_multiple_of(align)
        .and_then(|a| a.checked_add(len))
        .filter(|&e| e <= end)
    {
        Some(_) => (start, end - start, true),
        None => {
            let (&b, &l) = sp.free.iter().find(|&(&b, &l)| {
                b.checked_next_multiple_of(align)
                    .and_then(|a| a.checked_add(len))
                    .is_some_and(|e| e <= b + l)
            })?;
            (b, l, false)
        }
    };
    let addr = from.checked_next_multiple_of(align)?;
    if fresh {
        sp.next = addr + len - r.base;
    } else {
        sp.free.remove(&from);
        let tail = from + flen - (addr + len);
        if tail > 0 {
            give_back(&mut sp, addr + len, tail);
        }
    }
    if addr > from {
        give_back(&mut sp, from, addr - from);
    }
    Some(addr)
}

/// Maps `[addr, addr + len)` of the shared memory object `fd` (from offset 0) over
/// those addresses, inaccessible (`PROT_NONE`) until [`protect`]ed, replacing what
/// was there in one step. Two mappings of one object alias its bytes. `false` if
/// the system refused (the old pages stay).
///
/// # Safety
/// `[addr, addr + len)` is a page-aligned part of a block from [`alloc_reserved`]
/// that the caller owns and nothing accesses; `fd` is an open file at least `len`
/// bytes long that is never shrunk.
#[cfg(target_os = "linux")]
pub unsafe fn map_shared(addr: u64, len: u64, fd: c_int) -> bool {
    // SAFETY: the caller's promise, passed on (offset 0).
    unsafe { map_shared_at(addr, len, fd, 0) }
}

/// [`map_shared`] of the object's bytes from `offset` (a multiple of the page
/// size): `[addr, addr + len)` then shows `[offset, offset + len)` of `fd`.
///
/// # Safety
/// As [`map_shared`], with `fd` at least `offset` plus `len` rounded down to a page
/// (plus at least one byte) long — every page of the range holds some of the file.
#[cfg(target_os = "linux")]
pub unsafe fn map_shared_at(addr: u64, len: u64, fd: c_int, offset: u64) -> bool {
    let (Ok(size), Ok(off)) = (usize::try_from(len), c_long::try_from(offset)) else {
        return false;
    };
    // SAFETY: the range is the caller's and lies inside the reservation (the
    // caller's promise); mapping over it touches nothing else.
    let p = unsafe {
        mmap(
            addr as *mut c_void,
            size,
            PROT_NONE,
            MAP_SHARED | MAP_FIXED,
            fd,
            off,
        )
    };
    p as u64 == addr
}

/// The size of a block's pages (the system's page size, at least 256 bytes); `None`
/// if no device address space could be reserved.
pub fn page_size() -> Option<u64> {
    range().map(|r| r.page)
}

/// Makes `[addr, addr + len)` readable and writable (`rw`) or inaccessible.
///
/// # Safety
/// `[addr, addr + len)` is a page-aligned part of a block of the device address
/// space that the caller owns; when made inaccessible, nothing accesses it any more.
pub unsafe fn protect(addr: u64, len: u64, rw: bool) -> bool {
    let Ok(size) = usize::try_from(len) else {
        return false;
    };
    let prot = if rw {
        PROT_READ | PROT_WRITE
    } else {
        PROT_NONE
    };
    // SAFETY: the range is the caller's (the caller's promise); changing its
    // protection touches nothing else.
    unsafe { mprotect(addr as *mut c_void, size, prot) == 0 }
}

/// Enters `[addr, addr + len)` among the freed blocks, joined with its neighbours.
fn give_back(sp: &mut Space, mut addr: u64, mut len: u64) {
    if let Some((&b, &l)) = sp.free.range(..addr).next_back()
        && b + l == addr
    {
        sp.free.remove(&b);
        addr = b;
        len += l;
    }
    if let Some(&l) = sp.free.get(&(addr + len)) {
        sp.free.remove(&(addr + len));
        len += l;
    }
    sp.free.insert(addr, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_aligned_zeroed_inside_and_never_overlap_host_memory() {
        let (lo, hi) = bounds().unwrap();
        let a = alloc(100).unwrap();
        let b = alloc(5000).unwrap();
        assert!(a >= lo && a + 100 <= hi && b >= lo && b + 5000 <= hi);
        assert_eq!(a % 256, 0);
        assert_eq!(b % 256, 0);
        assert!(a + 100 <= b || b + 5000 <= a);
        // SAFETY: `a` is an accessible block of at least 100 bytes.
        unsafe {
            assert_eq!(*(a as *const u8).add(99), 0);
            *(a as *mut u8) = 7;
        }
        // SAFETY: freed once; nothing uses it.
        unsafe { free(a, 100) };
        let boxes: Vec<Box<[u8; 64]>> = (0..1000).map(|_| Box::new([0; 64])).collect();
        for x in &boxes {
            assert!(!overlaps(x.as_ptr() as u64, 64));
        }
        // SAFETY: freed once; nothing uses it.
        unsafe { free(b, 5000) };
    }

    #[test]
    fn reserved_blocks_are_aligned_inaccessible_and_apart() {
        const ALIGN: u64 = 2 << 20;
        let a = alloc_reserved(3 * ALIGN, ALIGN).unwrap();
        let b = alloc_reserved(ALIGN, 4 * ALIGN).unwrap();
        assert_eq!(a % ALIGN, 0);
        assert_eq!(b % (4 * ALIGN), 0);
        assert!(a + 3 * ALIGN <= b || b + ALIGN <= a);
        assert!(overlaps(a, 3 * ALIGN) && overlaps(b, ALIGN));
        assert!(
            alloc_reserved(ALIGN, 3 * ALIGN).is_none(),
            "not a power of two"
        );
        #[cfg(target_os = "linux")]
        {
            // Inaccessible: the mapping holding `a` has no permission at all.
            let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
            let perms = maps.lines().find_map(|l| {
                let (range, rest) = l.split_once(' ')?;
                let (lo, hi) = range.split_once('-')?;
                let (lo, hi) = (
                    u64::from_str_radix(lo, 16).ok()?,
                    u64::from_str_radix(hi, 16).ok()?,
                );
                (lo <= a && a < hi).then(|| rest[..4].to_string())
            });
            assert_eq!(perms.as_deref(), Some("---p"));
        }
        // Neither is among the freed blocks or the never-used room.
        {
            let r = range().unwrap();
            let sp = space();
            for (&f, &l) in &sp.free {
                assert!(f + l <= a || a + 3 * ALIGN <= f);
                assert!(f + l <= b || b + ALIGN <= f);
            }
            assert!(r.base + sp.next >= b + ALIGN);
        }
        // SAFETY: both came from `alloc_reserved`, are freed once, and nothing
        // accesses them (nothing can: they are inaccessible).
        unsafe {
            free(a, 3 * ALIGN);
            free(b, ALIGN);
        }
    }

    #[test]
    fn freed_blocks_join_their_neighbours() {
        let mut sp = Space {
            next: 0,
            free: BTreeMap::new(),
        };
        give_back(&mut sp, 0x1000, 0x1000);
        give_back(&mut sp, 0x3000, 0x1000);
        give_back(&mut sp, 0x2000, 0x1000);
        assert_eq!(
            sp.free.into_iter().collect::<Vec<_>>(),
            vec![(0x1000, 0x3000)]
        );
    }
}
