//! How softcuda itself touches device memory, and why that is sound.
//!
//! Mapped memory — device memory (`cuMemAlloc` allocations, module variables, pool
//! blocks, graph and managed memory) and pinned (`cuMemHostAlloc`) and registered
//! (`cuMemHostRegister`) host memory — is memory of this process that several host
//! threads may touch at once: kernels and copies on stream workers, work on the
//! default streams on the calling threads. A program may race on it (two streams
//! writing one buffer is a device-side race, harmless on a GPU), so that must not
//! become a data race in this process:
//!
//! - **Device addresses are never host addresses** ([`crate::devspace`]). Device
//!   memory lives in a range of address space softcuda reserves for itself, apart
//!   from the host allocator's; freed device memory is made inaccessible and never
//!   returned to the host allocator (only a later device allocation may reuse it).
//!   So a stale or wild device address — in a kernel, a copy or a memset — finds a
//!   live device allocation (a device-side bug, as on a GPU) or nothing (an illegal
//!   address, or `CUDA_ERROR_INVALID_VALUE` for a copy's host side there), never a
//!   `Box`, a `Vec` or a pinned buffer the host owns. Pinned and registered host
//!   memory, which kernels may also reach (mapped pinned memory), lie outside it.
//!
//! - **Every access softcuda makes to device memory is a relaxed atomic** — the
//!   interpreter's loads, stores and read-modify-writes (`ptx::exec`), and the device
//!   side of every copy and memset here ([`copy`], [`fill`], [`store`]): aligned
//!   8-byte words in the middle, single bytes at the ends. The host side of a copy
//!   (memory the caller owns and softcuda does not map) is accessed plainly: a race
//!   on it is the caller's own. One caveat: racing atomic accesses of different
//!   sizes to the same bytes (an 8-byte store here and a 4-byte load in a kernel,
//!   or two kernels accessing one word as `u32` and `u64`, which PTX allows) have no
//!   meaning in the C++ memory model that Rust's documentation borrows, which has no
//!   mixed-size atomics; Rust calls them unsupported rather than a data race. Each
//!   is a single, untorn, relaxed hardware access on the targets softcuda runs on,
//!   and LLVM gives them byte-wise semantics; no plain (non-atomic) access races.
//! - **Memory is never freed under an access.** Every operation that touches device
//!   memory ([`Work`], held for the whole operation: a copy, a memset, a kernel)
//!   first checks its ranges against the memory map and then accesses them, without
//!   holding the map's lock in between (kernels check each access). What frees or
//!   unregisters memory (`crate::devalloc`'s release) first removes the range
//!   from the map, so that no later check passes, then waits with [`quiesce`] until
//!   every operation running anywhere (any context, any thread) has ended, and only
//!   then deallocates it (`crate::vmm` does the same when it unmaps virtual memory or
//!   takes the last access to it away). So an access whose check passed always completes before
//!   the memory goes; a check made after the removal fails, which the operation
//!   reports as `CUDA_ERROR_ILLEGAL_ADDRESS` (sticky). Queued operations check their
//!   ranges again when they run (the allocation must be the same one, by its buffer
//!   id), not only when they are queued.
//! - The implicit synchronisation of the frees (`crate::stream::drain`: every
//!   stream of the context, destroyed ones with work left included, and every
//!   operation running) comes first, so that in a correct program the work that uses
//!   the memory has finished and the checks above never fail.
//!
//! A thread that holds [`Work`] takes no lock but the memory map's read lock (and
//! standard output, for `printf`), and [`quiesce`] is never called while holding the
//! map's lock, so waiting for it cannot deadlock. Host functions and callbacks do not
//! hold [`Work`]: they may call the driver (CUDA forbids it; softcuda tolerates it).

use crate::state::{self, Alloc, R};
use crate::types::code;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering::Relaxed};
use std::sync::{PoisonError, RwLock, RwLockReadGuard};

static RUNNING: RwLock<()> = RwLock::new(());

/// Held by every operation that touches device memory, while it runs.
pub struct Work {
    _running: RwLockReadGuard<'static, ()>,
}

/// Marks the calling thread as running an operation on device memory until the
/// guard is dropped. Never nested (a waiting [`quiesce`] would block the inner one).
pub fn work() -> Work {
    Work {
        _running: RUNNING.read().unwrap_or_else(PoisonError::into_inner),
    }
}

/// Waits until no operation that was running when it was called still runs.
/// Never call it while holding [`Work`] or the memory map's lock.
pub fn quiesce() {
    drop(RUNNING.write().unwrap_or_else(PoisonError::into_inner));
}

/// Like [`quiesce`], but keeps every new operation on device memory from starting
/// until the guard is dropped: while it is held, nothing but its holder touches
/// device memory (`crate::ipc::memory` moves an allocation's bytes into a shared
/// file under it). Same rules as [`quiesce`]; hold it briefly.
pub fn exclusive() -> std::sync::RwLockWriteGuard<'static, ()> {
    RUNNING.write().unwrap_or_else(PoisonError::into_inner)
}

/// A range of mapped memory, as checked when an operation was queued: the base and
/// the buffer id of the allocation holding it, and the end of the range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    base: u64,
    id: u64,
    end: u64,
}

impl Span {
    /// Whether the allocation is still the one that was checked (not freed, not
    /// replaced by another at the same address) and still holds the range (only
    /// virtual-memory stretches change size under one id: `crate::vmm`).
    pub fn alive(&self, map: &BTreeMap<u64, Alloc>) -> bool {
        map.get(&self.base)
            .is_some_and(|a| a.id == self.id && self.end <= self.base + a.size.max(1))
    }
}

/// The span of `[.., end)` inside the allocation `id` at `base` (pool blocks and
/// graph memory, checked before they are mapped: see `crate::pool`,
/// `crate::graph::mem`).
pub fn span(base: u64, id: u64, end: u64) -> Span {
    Span { base, id, end }
}

/// What `[addr, addr + len)` is: `Some` if it lies inside one mapped range (device
/// memory, pinned or registered host memory), `None` if it touches none (plain host
/// memory), `INVALID_VALUE` if it straddles a mapped range's edge. `len` > 0.
pub fn classify(map: &BTreeMap<u64, Alloc>, addr: u64, len: u64) -> R<Option<Span>> {
    let end = addr.checked_add(len).ok_or(code::INVALID_VALUE)?;
    if let Some((base, a)) = state::find_alloc(map, addr, len) {
        return Ok(Some(Span {
            base,
            id: a.id,
            end,
        }));
    }
    match map.range(..end).next_back() {
        Some((&b, a)) if b.saturating_add(a.size.max(1)) > addr => Err(code::INVALID_VALUE),
        _ => Ok(None),
    }
}

/// Checks, when an operation runs, that each of `spans` is still alive;
/// `ILLEGAL_ADDRESS` (the operation then touches nothing) if one was freed.
/// Call it holding [`Work`].
pub fn recheck(spans: &[Option<Span>]) -> R {
    let map = state::memory();
    if spans.iter().flatten().all(|s| s.alive(&map)) {
        Ok(())
    } else {
        Err(code::ILLEGAL_ADDRESS)
    }
}

const W: usize = 8;

/// # Safety
/// `p` is valid for an atomic byte access.
#[inline(always)]
unsafe fn ld8(p: *const u8) -> u8 {
    // SAFETY: the caller's promise.
    unsafe { AtomicU8::from_ptr(p.cast_mut()) }.load(Relaxed)
}

/// # Safety
/// `p` is valid for an atomic byte access.
#[inline(always)]
unsafe fn st8(p: *mut u8, v: u8) {
    // SAFETY: the caller's promise.
    unsafe { AtomicU8::from_ptr(p) }.store(v, Relaxed)
}

/// # Safety
/// `p` is 8-aligned and valid for an atomic word access.
#[inline(always)]
unsafe fn ld64(p: *const u8) -> u64 {
    // SAFETY: the caller's promise.
    unsafe { AtomicU64::from_ptr(p.cast_mut().cast()) }.load(Relaxed)
}

/// # Safety
/// `p` is 8-aligned and valid for an atomic word access.
#[inline(always)]
unsafe fn st64(p: *mut u8, v: u64) {
    // SAFETY: the caller's promise.
    unsafe { AtomicU64::from_ptr(p.cast()) }.store(v, Relaxed)
}

/// Bytes from `p` to the next multiple of 8 (at most `n`).
fn head(p: usize, n: usize) -> usize {
    (p.wrapping_neg() % W).min(n)
}

/// Reads `n` bytes of device memory at `src` into host memory at `dst`.
///
/// # Safety
/// `src` is device memory valid for `n` bytes (accessed atomically), `dst` host
/// memory valid for `n` byte writes that no one else accesses meanwhile; they do
/// not overlap.
unsafe fn load(dst: *mut u8, src: *const u8, n: usize) {
    let h = head(src as usize, n);
    // SAFETY (all below): inside the two ranges; words of `src` are 8-aligned.
    unsafe {
        for i in 0..h {
            *dst.add(i) = ld8(src.add(i));
        }
        let mut i = h;
        while i + W <= n {
            dst.add(i).cast::<u64>().write_unaligned(ld64(src.add(i)));
            i += W;
        }
        for j in i..n {
            *dst.add(j) = ld8(src.add(j));
        }
    }
}

/// Writes `n` bytes of host memory at `src` into device memory at `dst`.
///
/// # Safety
/// `dst` is device memory valid for `n` bytes (accessed atomically), `src` host
/// memory valid for `n` byte reads; they do not overlap.
pub unsafe fn store(dst: *mut u8, src: *const u8, n: usize) {
    let h = head(dst as usize, n);
    // SAFETY (all below): inside the two ranges; words of `dst` are 8-aligned.
    unsafe {
        for i in 0..h {
            st8(dst.add(i), *src.add(i));
        }
        let mut i = h;
        while i + W <= n {
            st64(dst.add(i), src.add(i).cast::<u64>().read_unaligned());
            i += W;
        }
        for j in i..n {
            st8(dst.add(j), *src.add(j));
        }
    }
}

/// Copies `n` bytes of device memory from `src` to `dst`; the ranges may overlap
/// (the result is that of `memmove`).
///
/// # Safety
/// Both are device memory valid for `n` bytes (accessed atomically).
unsafe fn move_device(dst: *mut u8, src: *const u8, n: usize) {
    let (d, s) = (dst as usize, src as usize);
    if d == s || n == 0 {
        return;
    }
    // Forwards when the destination is below the source (or they are disjoint),
    // backwards otherwise: a byte is always read before it is overwritten.
    let forward = d < s || d >= s + n;
    if d % W == s % W {
        // Word to word.
        let h = head(d, n);
        let body = (n - h) / W * W;
        // SAFETY (all below): inside both ranges; the words of both are 8-aligned.
        unsafe {
            if forward {
                for i in 0..h {
                    st8(dst.add(i), ld8(src.add(i)));
                }
                let mut i = h;
                while i < h + body {
                    st64(dst.add(i), ld64(src.add(i)));
                    i += W;
                }
                for j in h + body..n {
                    st8(dst.add(j), ld8(src.add(j)));
                }
            } else {
                for j in (h + body..n).rev() {
                    st8(dst.add(j), ld8(src.add(j)));
                }
                let mut i = h + body;
                while i > h {
                    i -= W;
                    st64(dst.add(i), ld64(src.add(i)));
                }
                for i in (0..h).rev() {
                    st8(dst.add(i), ld8(src.add(i)));
                }
            }
        }
        return;
    }
    // Differently aligned: through a buffer, a chunk at a time, in the same order.
    const CHUNK: usize = 4096;
    let mut buf = [0u8; CHUNK];
    let chunks = n.div_ceil(CHUNK);
    for k in 0..chunks {
        let k = if forward { k } else { chunks - 1 - k };
        let at = k * CHUNK;
        let len = CHUNK.min(n - at);
        // SAFETY: a chunk inside both ranges; `buf` is ours. The whole source chunk
        // is read before any of the destination chunk is written.
        unsafe {
            load(buf.as_mut_ptr(), src.add(at), len);
            store(dst.add(at), buf.as_ptr(), len);
        }
    }
}

/// Copies `n` bytes from `src` to `dst`; `*_dev` says which side is mapped memory
/// (accessed atomically). Two host sides may overlap (`memmove`); a host side never
/// overlaps a mapped one (see [`classify`]).
///
/// # Safety
/// Both ranges are valid for `n` bytes: mapped ones checked and alive (the caller
/// holds [`Work`]), host ones the caller's.
pub unsafe fn copy(dst: *mut u8, dst_dev: bool, src: *const u8, src_dev: bool, n: usize) {
    if dst_dev {
        crate::sanitize::initcheck::written(dst as u64, n as u64);
    }
    if crate::sanitize::streamcheck::Touches::wanted() {
        if src_dev {
            order_touch(src as u64, n as u64, false);
        }
        if dst_dev {
            order_touch(dst as u64, n as u64, true);
        }
    }
    // SAFETY: the caller's promise, passed on.
    unsafe {
        match (dst_dev, src_dev) {
            (false, false) => core::ptr::copy(src, dst, n),
            (false, true) => load(dst, src, n),
            (true, false) => store(dst, src, n),
            (true, true) => move_device(dst, src, n),
        }
    }
}

/// Tells streamcheck of the running copy's or memset's access to `n` bytes of
/// mapped memory at `addr`.
#[cold]
fn order_touch(addr: u64, n: u64, write: bool) {
    let found = state::find_alloc(&state::memory(), addr, n);
    if let Some((base, a)) = found {
        let block = crate::sanitize::streamcheck::Block {
            base,
            size: a.size,
            id: a.id,
        };
        crate::sanitize::streamcheck::touch(block, addr, addr + n, write, None);
    }
}

/// Fills `n` bytes of device memory at `dst` with copies of `unit` (1, 2 or 4 bytes,
/// in memory order), the first copy starting at `dst`.
///
/// # Safety
/// `dst` is device memory valid for `n` bytes (accessed atomically).
pub unsafe fn fill(dst: *mut u8, unit: &[u8], n: usize) {
    crate::sanitize::initcheck::written(dst as u64, n as u64);
    if crate::sanitize::streamcheck::Touches::wanted() {
        order_touch(dst as u64, n as u64, true);
    }
    let e = unit.len();
    debug_assert!(matches!(e, 1 | 2 | 4));
    // The byte at address a is unit[(a - dst) mod e]; as e divides 8 that depends
    // only on a mod 8: pattern[a % 8].
    let r = dst as usize % e;
    let mut pattern = [0u8; W];
    for (j, b) in pattern.iter_mut().enumerate() {
        *b = unit[(j + e - r) % e];
    }
    let word = u64::from_ne_bytes(pattern);
    let h = head(dst as usize, n);
    // SAFETY (all below): inside the range; words are 8-aligned.
    unsafe {
        for i in 0..h {
            let p = dst.add(i);
            st8(p, pattern[p as usize % W]);
        }
        let mut i = h;
        while i + W <= n {
            st64(dst.add(i), word);
            i += W;
        }
        for j in i..n {
            let p = dst.add(j);
            st8(p, pattern[p as usize % W]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An 8-aligned scratch area (so offsets give every alignment).
    fn area(n: usize) -> Vec<u64> {
        (0..n.div_ceil(8) as u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect()
    }

    fn bytes(v: &mut [u64]) -> *mut u8 {
        v.as_mut_ptr().cast()
    }

    #[test]
    fn every_copy_direction_alignment_and_overlap_matches_memmove() {
        for n in [
            0usize, 1, 3, 7, 8, 9, 15, 16, 31, 100, 4095, 4096, 4097, 9000,
        ] {
            for so in 0..9 {
                for d_off in [0usize, 1, 5, 8, 13] {
                    for kind in 0..4 {
                        let total = n + 64;
                        let mut a = area(total + 16);
                        let mut expect = a.clone();
                        let (src, dst) = (so, so + d_off); // overlapping when d_off < n
                        let (src, dst) = if kind % 2 == 0 {
                            (src, dst)
                        } else {
                            (dst, src)
                        };
                        // SAFETY: both ranges lie inside the area.
                        unsafe {
                            core::ptr::copy(
                                bytes(&mut expect).add(src),
                                bytes(&mut expect).add(dst),
                                n,
                            );
                            if kind < 2 {
                                move_device(bytes(&mut a).add(dst), bytes(&mut a).add(src), n);
                            } else {
                                let mut other = area(n + 16);
                                let o = so % 8;
                                copy(
                                    bytes(&mut other).add(o),
                                    false,
                                    bytes(&mut a).add(src),
                                    true,
                                    n,
                                );
                                copy(
                                    bytes(&mut a).add(dst),
                                    true,
                                    bytes(&mut other).add(o),
                                    false,
                                    n,
                                );
                            }
                        }
                        assert_eq!(a, expect, "n {n} src {src} dst {dst} kind {kind}");
                    }
                }
            }
        }
    }

    #[test]
    fn fills_follow_the_unit_from_the_start_at_any_alignment() {
        for unit in [&[0xAB][..], &[1, 2][..], &[1, 2, 3, 4][..]] {
            for off in 0..9 {
                for n in [0usize, 1, 2, 4, 7, 8, 12, 33, 1000] {
                    let n = n / unit.len() * unit.len();
                    let mut a = area(n + 32);
                    let mut expect = a.clone();
                    // SAFETY: inside the area.
                    unsafe {
                        let e = bytes(&mut expect).add(off);
                        for i in 0..n {
                            *e.add(i) = unit[i % unit.len()];
                        }
                        fill(bytes(&mut a).add(off), unit, n);
                    }
                    assert_eq!(a, expect, "unit {unit:?} off {off} n {n}");
                }
            }
        }
    }
}
