//! The device address space: where device memory lives, apart from host memory.
//!
//! On a GPU a device virtual address is never a host one: a stale or wild device
//! pointer reaches other device memory or faults, but never the host's heap. softcuda
//! keeps the same rule. At first use it reserves one large range of address space
//! (`mmap` of inaccessible, unbacked pages: `PROT_NONE`, `MAP_NORESERVE`) and takes
//! every kind of device memory from it — `cuMemAlloc`/`cuMemAllocPitch`, module
//! variables, managed memory, pool blocks (`cuMemAllocAsync`, `cuMemPoolCreate`) and
//! graph memory. Pinned (`cuMemHostAlloc`) and registered (`cuMemHostRegister`) host
//! memory stay host memory and never lie inside the range.
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
    // reservation; replacing its pages with fresh inaccessible ones touches nothing
    // else, and leaves no hole in the reservation at any moment.
    let p = unsafe {
        mmap(
            addr as *mut c_void,
            len as usize,
            PROT_NONE,
            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
            -1,
            0,
        )
    };
    if p as u64 != addr {
        // The pages could not be replaced: the block keeps its contents and stays
        // accessible; it is never handed out again (a leak of address space only).
        return;
    }
    give_back(&mut sp, addr, len);
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
