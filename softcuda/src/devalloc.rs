//! Device allocation and release: the bookkeeping every kind of device memory
//! shares (`cuMemAlloc` memory, module variables, pool blocks, graph memory, managed
//! memory), its budget, and the order in which freed memory goes back (see
//! [`Removed::finish`]). Placement in the address space is `crate::devspace`.

use crate::devmem;
use crate::graph;
use crate::state::{self, Alloc, AllocKind, R, State};
use crate::types::*;
use std::alloc::Layout;
use std::sync::atomic::{AtomicU64, Ordering};

/// Device allocations are aligned like the driver's.
pub(crate) const ALIGN: usize = 256;

pub(crate) static NEXT_BUFFER_ID: AtomicU64 = AtomicU64::new(1);

pub(crate) fn layout(size: u64) -> R<Layout> {
    Layout::from_size_align(
        usize::try_from(size.max(1)).map_err(|_| code::OUT_OF_MEMORY)?,
        ALIGN,
    )
    .map_err(|_| code::OUT_OF_MEMORY)
}

/// Allocates `size` bytes while context `ctx` is current and enters them in the
/// memory map: memory of `ctx`, or of its primary context if `ctx` is a green
/// context's (`crate::green::memory_owner`).
pub(crate) fn allocate(s: &mut State, ctx: u64, size: u64, kind: AllocKind) -> R<u64> {
    let owner = crate::green::memory_owner(s, ctx);
    allocate_for(s, owner, size, kind)
}

/// Allocates `size` bytes owned by context `ctx` and enters them in the memory map.
fn allocate_for(s: &mut State, ctx: u64, size: u64, kind: AllocKind) -> R<u64> {
    if size == 0 {
        return Err(code::INVALID_VALUE);
    }
    let device = s.context(ctx)?.device;
    if kind == AllocKind::Device
        && s.used[device].saturating_add(size) > s.config.devices[device].total_mem
    {
        return Err(code::OUT_OF_MEMORY);
    }
    let limit = state::ALLOC_LIMIT.load(Ordering::Relaxed);
    if state::ALLOCATED
        .load(Ordering::Relaxed)
        .saturating_add(size)
        > limit
    {
        return Err(code::OUT_OF_MEMORY);
    }
    let p = if kind == AllocKind::Device {
        crate::devspace::alloc(size).ok_or(code::OUT_OF_MEMORY)? as *mut u8
    } else {
        // Pinned host memory: host memory, from the host allocator.
        // SAFETY: the layout has a non-zero size.
        unsafe { std::alloc::alloc_zeroed(layout(size)?) }
    };
    if p.is_null() {
        return Err(code::OUT_OF_MEMORY);
    }
    if kind == AllocKind::Device {
        s.used[device] += size;
        crate::sanitize::memcheck::reused(p as u64, size);
        crate::sanitize::initcheck::forget(p as u64, size);
    }
    state::ALLOCATED.fetch_add(size, Ordering::Relaxed);
    let id = NEXT_BUFFER_ID.fetch_add(1, Ordering::Relaxed);
    state::memory_mut().insert(
        p as u64,
        Alloc {
            size,
            ctx,
            device,
            kind,
            id,
            reach: if kind == AllocKind::Device {
                state::Reach::Context
            } else {
                state::Reach::Everywhere
            },
        },
    );
    Ok(p as u64)
}

/// Reserves `size` bytes of zeroed device memory (in the device address space,
/// `crate::devspace`) for a pool block or graph memory (not entered in the map: see
/// `crate::pool` and `crate::graph::mem`).
pub(crate) fn reserve(size: u64) -> R<u64> {
    if size == 0 {
        return Err(code::INVALID_VALUE);
    }
    let base = crate::devspace::alloc(size).ok_or(code::OUT_OF_MEMORY)?;
    crate::sanitize::initcheck::forget(base, size);
    Ok(base)
}

/// Gives back memory [`reserve`] returned (its addresses stay device addresses).
///
/// # Safety
/// `base` came from `reserve(size)`, is given back once, and nothing accesses it
/// any more.
pub(crate) unsafe fn unreserve(base: u64, size: u64) {
    // SAFETY: the caller's promise, passed on.
    unsafe { crate::devspace::free(base, size) };
}

/// A fresh buffer id.
pub(crate) fn new_buffer_id() -> u64 {
    NEXT_BUFFER_ID.fetch_add(1, Ordering::Relaxed)
}

/// Memory taken out of the map, not yet deallocated: see [`Removed::finish`].
#[must_use = "removed memory is deallocated by `finish`"]
#[derive(Default)]
pub(crate) struct Removed {
    /// Whether anything was removed (registered ranges have nothing to deallocate).
    any: bool,
    /// Allocations softcuda owns: base, size, and whether it is device memory (from
    /// `crate::devspace`; otherwise pinned host memory, from the host allocator).
    owned: Vec<(u64, u64, bool)>,
    /// Bases of buffers mapped from external memory, unmapped by
    /// `crate::external::unmap_buffer`.
    external: Vec<u64>,
    /// Bases of other processes' memory opened through IPC, unmapped by
    /// `crate::ipc::memory::unmap`.
    ipc: Vec<u64>,
}

impl Removed {
    /// Adds `other`'s memory to this.
    pub(crate) fn merge(&mut self, other: Removed) {
        self.any |= other.any;
        self.owned.extend(other.owned);
        self.external.extend(other.external);
        self.ipc.extend(other.ipc);
    }

    /// Waits until no operation that may have checked the memory before it left the
    /// map still runs (`devmem::quiesce`), then deallocates what softcuda owns. Call
    /// it without holding the state or memory-map lock. Only then may a registered
    /// range go back to its owner, or a pinned or device allocation be reused.
    pub(crate) fn finish(self) {
        if !self.any {
            return;
        }
        devmem::quiesce();
        for (base, size, device) in self.owned {
            if device {
                // SAFETY: `base` came from `devspace::alloc(size)` and left the map
                // once (so it is freed once); every operation that could still touch
                // it has ended (above), and no later one can find it.
                unsafe { crate::devspace::free(base, size) };
            } else if let Ok(l) = layout(size) {
                // SAFETY: `base` came from `alloc_zeroed` with this layout and left the
                // map once (so it is deallocated once); every operation that could
                // still touch it has ended (above), and no later one can find it.
                unsafe { std::alloc::dealloc(base as *mut u8, l) };
            }
        }
        for base in self.external {
            // SAFETY: the buffer left the map once (so it is unmapped once); every
            // operation that could still touch it has ended (above), and no later one
            // can find it.
            unsafe { crate::external::unmap_buffer(base) };
        }
        for base in self.ipc {
            // SAFETY: as for the buffers above: out of the map once, every operation
            // that could still touch it ended.
            unsafe { crate::ipc::memory::unmap(base) };
        }
    }
}

/// Removes the allocation at `base` (which must be of a kind `accept` admits) from the
/// map and the accounting. The memory itself goes with [`Removed::finish`].
pub(crate) fn release(s: &mut State, base: u64, accept: fn(&AllocKind) -> bool) -> R<Removed> {
    if crate::pool::owns(base) {
        return Err(code::INVALID_VALUE); // pool memory goes back to its pool
    }
    let mut map = state::memory_mut();
    // Virtual-memory mappings are never freed here, whatever `accept` admits: only
    // `cuMemUnmap` takes them away (`crate::vmm`).
    let a = *map
        .get(&base)
        .filter(|a| a.kind != AllocKind::Mapped && accept(&a.kind))
        .ok_or(code::INVALID_VALUE)?;
    map.remove(&base);
    drop(map);
    crate::sanitize::initcheck::forget(base, a.size);
    if a.kind == AllocKind::External {
        // Imported memory: counted against no budget; its pages go back with its
        // file (`crate::external`).
        return Ok(Removed {
            any: true,
            external: vec![base],
            ..Removed::default()
        });
    }
    if a.kind == AllocKind::IpcImported {
        // Another process's memory: counted against no budget here; unmapped
        // (`crate::ipc::memory`).
        return Ok(Removed {
            any: true,
            ipc: vec![base],
            ..Removed::default()
        });
    }
    if a.kind == AllocKind::Device {
        // Exported through IPC: the shared file is closed (importers keep their
        // mappings); the pages here go as any allocation's.
        crate::ipc::memory::freed(base, a.id);
    }
    if graph::mem::is_reserved(base) {
        // Graph memory: unmapped only; it stays reserved (`crate::graph::mem`).
        return Ok(Removed {
            any: true,
            ..Removed::default()
        });
    }
    if a.kind == AllocKind::Device {
        s.used[a.device] = s.used[a.device].saturating_sub(a.size);
    }
    let mut removed = Removed {
        any: true,
        ..Removed::default()
    };
    if !matches!(a.kind, AllocKind::Registered(_)) {
        state::ALLOCATED.fetch_sub(
            a.size.min(state::ALLOCATED.load(Ordering::Relaxed)),
            Ordering::Relaxed,
        );
        removed
            .owned
            .push((base, a.size, a.kind == AllocKind::Device));
    }
    Ok(removed)
}

/// Removes everything context `ctx` owns (at context destruction), buffers mapped
/// from external memory included. Virtual-memory mappings belong to no context: they
/// stay.
pub(crate) fn free_all_of(s: &mut State, ctx: u64) -> Removed {
    let bases: Vec<u64> = state::memory()
        .iter()
        .filter(|(_, a)| a.ctx == ctx && a.kind != AllocKind::Mapped)
        .map(|(b, _)| *b)
        .collect();
    let mut removed = Removed::default();
    for b in bases {
        if let Ok(r) = release(s, b, |_| true) {
            removed.merge(r);
        }
    }
    removed
}

/// Allocates device memory for a module variable of context `ctx`.
pub(crate) fn allocate_global(s: &mut State, ctx: u64, size: u64) -> R<u64> {
    // The module's own context: its variables go with the module.
    allocate_for(s, ctx, size.max(1), AllocKind::Device)
}

/// Removes a module variable (deallocated by [`Removed::finish`]).
pub(crate) fn free_global(s: &mut State, base: u64) -> Removed {
    release(s, base, |k| *k == AllocKind::Device).unwrap_or_default()
}
