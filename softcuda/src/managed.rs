//! Managed memory's records: per allocation, its attachment and the advice and
//! prefetch location given for each byte range. softcuda has one address space, so
//! a managed allocation is an ordinary device allocation (`crate::devalloc`); what
//! the program says about it is recorded here and answered by `crate::api::managed`.

use crate::state::{self, R};
use crate::types::*;
use core::ffi::{c_int, c_uint};
use std::collections::BTreeMap;
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

pub(crate) const ATTACH_GLOBAL: c_uint = 1;

pub(crate) const ATTACH_HOST: c_uint = 2;

pub(crate) const ATTACH_SINGLE: c_uint = 4;

/// `CU_DEVICE_CPU`.
pub(crate) const CPU: c_int = -1;

/// `CU_DEVICE_INVALID`.
pub(crate) const INVALID: c_int = -2;

pub(crate) const LOC_HOST: c_uint = 2;

/// A location as the v1 functions name it: a device ordinal, [`CPU`] or [`INVALID`].
pub(crate) type Loc = c_int;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Attrs {
    pub(crate) read_mostly: bool,
    pub(crate) preferred: Loc,
    pub(crate) accessed_by: Vec<c_int>,
    pub(crate) last_prefetch: Loc,
}

impl Default for Attrs {
    fn default() -> Self {
        Attrs {
            read_mostly: false,
            preferred: INVALID,
            accessed_by: Vec::new(),
            last_prefetch: INVALID,
        }
    }
}

#[derive(Debug)]
pub(crate) struct Managed {
    /// The buffer id of its mapping (a stale entry never matches a new allocation).
    pub(crate) id: u64,
    pub(crate) size: u64,
    /// The attach flags in force, and the stream of `CU_MEM_ATTACH_SINGLE`.
    pub(crate) attach: (c_uint, usize),
    /// Attributes by byte range: `(start, end, attrs)`, offsets from the base,
    /// covering the allocation.
    pub(crate) segments: Vec<(u64, u64, Attrs)>,
}

impl Managed {
    /// Applies `f` to the attributes of `[off, off + len)`.
    pub(crate) fn apply(&mut self, off: u64, len: u64, f: impl Fn(&mut Attrs)) {
        let end = off + len;
        let mut next = Vec::with_capacity(self.segments.len() + 2);
        for (a, b, attrs) in self.segments.drain(..) {
            if b <= off || a >= end {
                next.push((a, b, attrs));
                continue;
            }
            let (m0, m1) = (a.max(off), b.min(end));
            if a < m0 {
                next.push((a, m0, attrs.clone()));
            }
            let mut mid = attrs.clone();
            f(&mut mid);
            next.push((m0, m1, mid));
            if m1 < b {
                next.push((m1, b, attrs));
            }
        }
        self.segments = next;
    }

    /// The attributes of the segments that overlap `[off, off + len)`.
    pub(crate) fn over(&self, off: u64, len: u64) -> impl Iterator<Item = &Attrs> {
        let end = off + len;
        self.segments
            .iter()
            .filter(move |(a, b, _)| *b > off && *a < end)
            .map(|(_, _, attrs)| attrs)
    }
}

static MANAGED: LazyLock<Mutex<BTreeMap<u64, Managed>>> =
    LazyLock::new(|| Mutex::new(BTreeMap::new()));

pub(crate) fn table() -> MutexGuard<'static, BTreeMap<u64, Managed>> {
    MANAGED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether the allocation `id` at `base` is managed memory.
pub(crate) fn is_managed(base: u64, id: u64) -> bool {
    table().get(&base).is_some_and(|m| m.id == id)
}

/// Forgets the managed allocation at `base` (freed).
pub(crate) fn forget(base: u64) {
    table().remove(&base);
}

/// Forgets every managed allocation (`control::reset`).
pub(crate) fn reset() {
    table().clear();
}

/// The attach flags of the managed allocation at `base` and the stream handle of a
/// single-stream attachment (0 otherwise); `None` if `base` is not managed memory.
pub fn attachment(base: u64) -> Option<(c_uint, usize)> {
    let id = state::memory().get(&base)?.id;
    table().get(&base).filter(|m| m.id == id).map(|m| m.attach)
}

/// The managed allocation holding `[addr, addr + len)`: its base and offset.
pub(crate) fn locate(addr: u64, len: u64) -> R<(u64, u64)> {
    if len == 0 {
        return Err(code::INVALID_VALUE);
    }
    let (base, a) = state::find_alloc(&state::memory(), addr, len).ok_or(code::INVALID_VALUE)?;
    if !is_managed(base, a.id) {
        return Err(code::INVALID_VALUE);
    }
    Ok((base, addr - base))
}
