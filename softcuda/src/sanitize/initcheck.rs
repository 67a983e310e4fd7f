//! initcheck: which bytes of device memory something has written, and the report
//! of a kernel's read of bytes nothing has.
//!
//! A shadow of one bit per byte is kept for each `cuMemAlloc`/`cuMemAllocPitch`
//! allocation made while initcheck is on ([`track`]); copies and memsets into it
//! (`crate::devmem::copy`, `fill`) and kernel stores and atomics ([`written`]) set
//! bits; a kernel load ([`read`]) of a byte whose bit is clear is reported, and
//! the kernel goes on. Memory not tracked — made before initcheck was on, managed,
//! pool, graph or module memory, pinned or registered host memory — is never
//! reported. A copy out of device memory does not check its source.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use crate::ptx::Fault;

use super::report;

/// The written bits of one allocation.
struct Shadow {
    size: u64,
    bits: Box<[AtomicU64]>,
}

static SHADOWS: RwLock<BTreeMap<u64, Arc<Shadow>>> = RwLock::new(BTreeMap::new());

/// The shadow covering `addr`, with its base.
fn shadow_at(addr: u64) -> Option<(u64, Arc<Shadow>)> {
    let m = SHADOWS.read().unwrap_or_else(PoisonError::into_inner);
    let (&base, s) = m.range(..=addr).next_back()?;
    (addr - base < s.size).then(|| (base, Arc::clone(s)))
}

/// Starts tracking a fresh allocation (nothing written), while initcheck is on.
pub fn track(base: u64, size: u64) {
    forget(base, size);
    if !super::on(super::INITCHECK) {
        return;
    }
    let words = usize::try_from(size.div_ceil(64)).unwrap_or(0);
    let bits = (0..words).map(|_| AtomicU64::new(0)).collect();
    SHADOWS
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(base, Arc::new(Shadow { size, bits }));
}

/// Stops tracking every allocation overlapping `[base, base + size)` (freed, or its
/// addresses handed out again).
pub fn forget(base: u64, size: u64) {
    let mut m = SHADOWS.write().unwrap_or_else(PoisonError::into_inner);
    if m.is_empty() {
        return;
    }
    let end = base.saturating_add(size.max(1));
    m.retain(|&b, s| b.saturating_add(s.size) <= base || b >= end);
}

/// Applies `f` to each (shadow, word index, bit mask) covering `[addr, addr + len)`.
fn each_word(addr: u64, len: u64, mut f: impl FnMut(&AtomicU64, u64) -> bool) -> bool {
    let Some((base, s)) = shadow_at(addr) else {
        return true;
    };
    let from = addr - base;
    let to = from.saturating_add(len).min(s.size);
    let mut i = from;
    while i < to {
        let word = i / 64;
        let lo = i % 64;
        let hi = (to - word * 64).min(64);
        let mask = if hi - lo == 64 {
            u64::MAX
        } else {
            ((1u64 << (hi - lo)) - 1) << lo
        };
        let Some(w) = usize::try_from(word).ok().and_then(|w| s.bits.get(w)) else {
            return true;
        };
        if !f(w, mask) {
            return false;
        }
        i = (word + 1) * 64;
    }
    true
}

/// Marks `[addr, addr + len)` written (a copy, memset, kernel store or atomic).
pub fn written(addr: u64, len: u64) {
    if !super::on(super::INITCHECK) {
        return;
    }
    each_word(addr, len, |w, mask| {
        w.fetch_or(mask, Ordering::Relaxed);
        true
    });
}

/// Whether every byte of `[addr, addr + len)` has been written (untracked memory
/// counts as written).
pub fn read(addr: u64, len: u64) -> bool {
    each_word(addr, len, |w, mask| {
        w.load(Ordering::Relaxed) & mask == mask
    })
}

/// Reports a kernel's read of memory nothing has written.
pub fn uninit_read(f: &Fault<'_>) {
    if !super::on(super::INITCHECK) {
        return;
    }
    let [tx, ty, tz] = f.tid;
    let [bx, by, bz] = f.ctaid;
    let mut lines = vec![
        format!(
            "Uninitialized __global__ memory read of size {} bytes",
            f.size
        ),
        format!(
            "    at {}{} (PTX line {})",
            super::memcheck::site(f),
            f.loc
                .map(|(file, line)| format!(" in {file}:{line}"))
                .unwrap_or_default(),
            f.line
        ),
    ];
    if f.function != f.kernel {
        lines.push(format!("    in kernel {}", f.kernel));
    }
    lines.push(format!(
        "    by thread ({tx},{ty},{tz}) in block ({bx},{by},{bz})"
    ));
    match shadow_at(f.addr) {
        Some((base, s)) => lines.push(format!(
            "    Address {:#x} is {} bytes inside the allocation at {base:#x} of size {} bytes, not written since it was allocated",
            f.addr,
            f.addr - base,
            s.size
        )),
        None => lines.push(format!("    Address {:#x}", f.addr)),
    }
    report::finding(&super::memcheck::site(f), &lines);
}
