//! Graph memory (`cuGraphAddMemAllocNode` / `cuGraphAddMemFreeNode`).
//!
//! An allocation node reserves its memory when it is added: the address is fixed
//! for the life of the graph (and of the executable graphs made from it). The memory
//! is *mapped* — entered in the memory map, so that kernels and copies may touch it
//! — only when the allocation node runs, and unmapped when a free node for it runs
//! (or `cuMemFree` frees it, for an allocation its own graph does not free). Outside
//! that window an access is what any access to unmapped memory is.
//!
//! Every mapping uses the reservation's buffer id, so a copy node checked against the
//! reservation (see [`reserved_span`]) finds it alive exactly while it is mapped.
//! Unmapping never deallocates: the memory goes back only once no graph, node,
//! executable graph or queued work holds the reservation and it is not mapped
//! ([`reap`], after waiting for every running operation, as frees do).
//!
//! The table of reservations has its own lock, innermost: nothing is taken while
//! holding it.

use crate::devmem::{self, Span};
use crate::state::{self, Alloc, AllocKind, R};
use crate::types::*;
use std::collections::BTreeMap;
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

/// What the table knows about a reservation.
#[derive(Debug, Clone, Copy)]
struct Info {
    size: u64,
    id: u64,
    /// The graph of the allocation node.
    graph: u64,
    /// Whether that graph has a free node for it.
    freed_in_graph: bool,
    /// Whether a launch mapped it and nothing unmapped it since (as of the calls
    /// made: launches, frees), for an allocation its graph does not free.
    outstanding: bool,
    /// Whether the [`Reservation`] is gone (memory to give back once unmapped).
    dead: bool,
}

static RESERVED: LazyLock<Mutex<BTreeMap<u64, Info>>> =
    LazyLock::new(|| Mutex::new(BTreeMap::new()));

fn table() -> MutexGuard<'static, BTreeMap<u64, Info>> {
    RESERVED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The memory of an allocation node, shared by the node, its clones in executable
/// graphs and the work that maps it.
#[derive(Debug)]
pub struct Reservation {
    /// The address.
    pub base: u64,
    /// Bytes.
    pub size: u64,
    /// The context it is mapped for.
    pub ctx: u64,
    /// The device (`poolProps.location.id`).
    pub device: usize,
    /// The buffer id of every mapping.
    pub id: u64,
    /// The pool properties given.
    pub props: super::Raw<CUmemPoolProps>,
    /// The access descriptors given (the array `cuGraphMemAllocNodeGetParams`
    /// hands back).
    pub access: Vec<CUmemAccessDesc>,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(i) = table().get_mut(&self.base) {
            i.dead = true;
        }
    }
}

impl Reservation {
    /// The devices whose kernels may access the memory, as a mask: its own and those
    /// its access descriptors open (any access but none).
    fn reach(&self) -> u64 {
        let bit = |d: usize| {
            1u64.checked_shl(u32::try_from(d).unwrap_or(u32::MAX))
                .unwrap_or(0)
        };
        self.access
            .iter()
            .filter(|d| d.location.type_ == CU_MEM_LOCATION_TYPE_DEVICE && d.flags != 0)
            .filter_map(|d| usize::try_from(d.location.id).ok())
            .fold(bit(self.device), |m, d| m | bit(d))
    }
}

/// Reserves `size` bytes for graph `graph`'s allocation node.
pub fn reserve(
    graph: u64,
    ctx: u64,
    device: usize,
    size: u64,
    props: CUmemPoolProps,
    access: Vec<CUmemAccessDesc>,
) -> R<Reservation> {
    let base = crate::devalloc::reserve(size)?;
    let id = crate::devalloc::new_buffer_id();
    table().insert(
        base,
        Info {
            size,
            id,
            graph,
            freed_in_graph: false,
            outstanding: false,
            dead: false,
        },
    );
    Ok(Reservation {
        base,
        size,
        ctx,
        device,
        id,
        props: super::Raw(props),
        access,
    })
}

/// Whether `base` is the address of graph memory (mapped or not).
pub fn is_reserved(base: u64) -> bool {
    table().contains_key(&base)
}

/// The span of `[addr, addr + len)` inside a live reservation, for the checks of
/// graph copy and memset nodes (alive, when the work runs, only while mapped).
pub fn reserved_span(addr: u64, len: u64) -> Option<Span> {
    let t = table();
    let (&base, i) = t.range(..=addr).next_back()?;
    let end = addr.checked_add(len)?;
    (!i.dead && end <= base + i.size).then(|| devmem::span(base, i.id, end))
}

/// Adding a free node of `base` to graph `graph`: `base` must be a live
/// reservation; a graph frees an allocation once, and one freed in its own graph
/// cannot be freed elsewhere (`INVALID_VALUE`).
pub fn add_free(graph: u64, base: u64, already_in_graph: bool) -> R {
    let mut t = table();
    let i = t
        .get_mut(&base)
        .filter(|i| !i.dead)
        .ok_or(code::INVALID_VALUE)?;
    if already_in_graph || i.freed_in_graph {
        return Err(code::INVALID_VALUE);
    }
    if i.graph == graph {
        i.freed_in_graph = true;
    }
    Ok(())
}

/// Whether the allocation at `base` is freed by its own graph.
pub fn freed_in_graph(base: u64) -> bool {
    table().get(&base).is_some_and(|i| i.freed_in_graph)
}

/// `cuMemFree` of graph memory: refused (`INVALID_VALUE`) for an allocation its
/// graph frees.
pub fn check_free(base: u64) -> R {
    if freed_in_graph(base) {
        Err(code::INVALID_VALUE)
    } else {
        Ok(())
    }
}

/// Marks the allocation at `base` as freed (by `cuMemFree` or another graph's
/// free node).
pub fn freed(base: u64) {
    if let Some(i) = table().get_mut(&base) {
        i.outstanding = false;
    }
}

/// A launch maps the allocation at `base`, which its graph does not free: `Ok(true)`
/// if it is still mapped from an earlier launch (then `auto_free` says to unmap it
/// first, else the launch is refused with `INVALID_VALUE`).
pub fn launch_maps(base: u64, auto_free: bool) -> R<bool> {
    let t = table();
    let outstanding = t.get(&base).is_some_and(|i| i.outstanding);
    if outstanding && !auto_free {
        return Err(code::INVALID_VALUE);
    }
    Ok(outstanding)
}

/// Records that a launch maps the allocation at `base` (one its graph does not
/// free).
pub fn mark_outstanding(base: u64) {
    if let Some(i) = table().get_mut(&base) {
        i.outstanding = true;
    }
}

/// Maps `r` (the work of an allocation node).
pub fn map(r: &Reservation) {
    state::memory_mut().insert(
        r.base,
        Alloc {
            size: r.size,
            ctx: r.ctx,
            device: r.device,
            kind: AllocKind::Device,
            id: r.id,
            reach: state::Reach::Devices(r.reach()),
        },
    );
}

/// Unmaps `r` if mapped (the work of a free node). The memory stays reserved.
pub fn unmap(base: u64) {
    let id = table().get(&base).map(|i| i.id);
    let mut m = state::memory_mut();
    if id.is_some() && m.get(&base).map(|a| a.id) == id {
        m.remove(&base);
    }
}

/// Gives back the memory of reservations no one holds that are not mapped. Call it
/// without holding any lock (it waits for running operations).
pub fn reap() {
    let dead: Vec<(u64, Info)> = table()
        .iter()
        .filter(|(_, i)| i.dead)
        .map(|(b, i)| (*b, *i))
        .collect();
    if dead.is_empty() {
        return;
    }
    let gone: Vec<(u64, u64)> = {
        let m = state::memory();
        dead.iter()
            .filter(|(b, i)| m.get(b).is_none_or(|a| a.id != i.id))
            .map(|(b, i)| (*b, i.size))
            .collect()
    };
    if gone.is_empty() {
        return;
    }
    {
        let mut t = table();
        for (b, _) in &gone {
            t.remove(b);
        }
    }
    devmem::quiesce();
    for (b, size) in gone {
        // SAFETY: reserved by `reserve` with this size, out of the table (no check
        // can find it) and of the memory map, and every operation that could have
        // checked it has ended.
        unsafe { crate::devalloc::unreserve(b, size) };
    }
}
