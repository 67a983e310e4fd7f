//! IPC memory handles: allocations this process exports (`cuIpcGetMemHandle`) and
//! other processes' allocations it has opened (`cuIpcOpenMemHandle`), with their
//! reference counts. See `crate::ipc` for the handle and how a peer's file is
//! reached.
//!
//! - **Export.** The first `cuIpcGetMemHandle` of a `cuMemAlloc` allocation moves
//!   it into a shared memory file (`softcuda-ipc-<pid>-<buffer id>`, its size in
//!   whole pages, sealed): the file is filled with the allocation's bytes and laid
//!   over the same device addresses (`mmap(MAP_SHARED | MAP_FIXED)`), while no
//!   operation on device memory runs (`crate::devmem::exclusive`). The address, the
//!   bytes, the memory-map entry (kind `Device`, same buffer id) and everything
//!   keyed by the address (the sanitizer's records) stay as they were. The file
//!   stays open, for importers to reach, until the allocation is freed
//!   ([`freed`], from `crate::devalloc::release`); later handles of it name the
//!   same file.
//! - **Import.** Another process maps the file into a fresh block of its device
//!   address space: device memory of the opening context (`AllocKind::IpcImported`,
//!   a fresh buffer id, kernels of that context reach it), counted in
//!   `live_counts().ipc_memory`, not against any budget. Opening the same handle
//!   again in the same context returns the same address and counts one more open;
//!   the mapping goes with the last `cuIpcCloseMemHandle` (or with the context).
//!   Its pages are the file's: they live while mapped, even once the exporter has
//!   freed the allocation or exited.
//! - **Same process.** A handle opened in the process that exported it names the
//!   allocation itself: its own address, with the opening context allowed to reach
//!   it until closed (`State::ipc_opened`, counted per context).
//!
//! **Lock order.** This module's lock ([`lock`]) may be taken while the state lock
//! is held (never the other way round); under it only the memory map's lock, the
//! device address space's and `crate::devmem::exclusive` are taken.

use super::{Handle, MEMORY, SUPPORTED, memory_name, open_peer, pid};
use crate::state::{self, Alloc, AllocKind, R};
use crate::types::code;
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// An exported allocation's shared file.
struct Export {
    file: OwnedFd,
    /// The allocation's buffer id.
    id: u64,
}

/// Another process's allocation, mapped here.
struct Import {
    /// (opening context, exporter's pid, allocation's buffer id there).
    key: (u64, u32, u64),
    /// The length of the block of device addresses (whole pages).
    len: u64,
    /// Opens not yet closed.
    refs: u32,
}

struct Ipc {
    /// By the allocation's base.
    exports: BTreeMap<u64, Export>,
    /// By the base of the mapping here.
    imports: BTreeMap<u64, Import>,
}

static IPC: Mutex<Ipc> = Mutex::new(Ipc {
    exports: BTreeMap::new(),
    imports: BTreeMap::new(),
});

/// The IPC records, locked (see the module's lock order).
fn lock() -> MutexGuard<'static, Ipc> {
    IPC.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The allocation at `ptr` if it may be exported: the base of `cuMemAlloc` memory
/// (not pool, graph or managed memory); `INVALID_VALUE` otherwise.
fn exportable(ptr: u64) -> R<Alloc> {
    let a = state::memory()
        .get(&ptr)
        .copied()
        .filter(|a| a.kind == AllocKind::Device)
        .ok_or(code::INVALID_VALUE)?;
    if crate::pool::owns(ptr)
        || crate::graph::mem::is_reserved(ptr)
        || crate::managed::is_managed(ptr, a.id)
    {
        return Err(code::INVALID_VALUE);
    }
    Ok(a)
}

/// `cuIpcGetMemHandle` of the allocation at `ptr` (see the module).
pub(crate) fn export(ptr: u64) -> R<Handle> {
    let a = exportable(ptr)?;
    let handle = |fd: i32| Handle {
        kind: MEMORY,
        pid: pid(),
        fd,
        size: a.size,
        id: a.id,
        base: ptr,
    };
    if !SUPPORTED {
        return Ok(handle(-1)); // good in this process only (no file to share)
    }
    let page = crate::devspace::page_size().ok_or(code::OUT_OF_MEMORY)?;
    let len = a
        .size
        .max(1)
        .checked_next_multiple_of(page)
        .ok_or(code::INVALID_VALUE)?;
    let mut ipc = lock();
    match ipc.exports.get(&ptr) {
        Some(e) if e.id == a.id => return Ok(handle(e.file.as_raw_fd())),
        _ => drop(ipc.exports.remove(&ptr)), // (an earlier life of the address)
    }
    let fd = crate::vmm::create_named(&memory_name(pid(), a.id), len).ok_or(code::OUT_OF_MEMORY)?;
    // SAFETY: `fd` was just created and is owned by nothing else.
    let file = unsafe { OwnedFd::from_raw_fd(fd) };
    {
        let _only_us = crate::devmem::exclusive();
        // Still the same allocation (a free may have taken it out of the map; its
        // pages go only after this guard is dropped).
        if state::memory().get(&ptr).is_none_or(|b| b.id != a.id) {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: `[ptr, ptr + len)` is the allocation's block (whole pages, from
        // `devspace::alloc`), readable, and nothing else touches device memory now.
        if !unsafe { os::fill(fd, ptr, len) } {
            return Err(code::OUT_OF_MEMORY);
        }
        // SAFETY: the block is the allocation's, which stays in the map and owned by
        // its context: laying the file (holding the same bytes, `len` long, sealed)
        // over it changes no byte any operation could see, and none runs now.
        let moved = unsafe { os::map(ptr, len, fd) }
            // SAFETY: as above.
            && unsafe { crate::devspace::protect(ptr, len, true) };
        if !moved {
            return Err(code::OUT_OF_MEMORY);
        }
    }
    ipc.exports.insert(ptr, Export { file, id: a.id });
    Ok(handle(fd))
}

/// The allocation at `base` (buffer id `id`) was freed: its shared file, if it was
/// exported, is closed. Importers keep their mappings (and so the pages).
pub(crate) fn freed(base: u64, id: u64) {
    let mut ipc = lock();
    if ipc.exports.get(&base).is_some_and(|e| e.id == id) {
        ipc.exports.remove(&base);
    }
}

/// `cuIpcOpenMemHandle` of `h` (another process's, `h.pid` is not ours) in context
/// `ctx` on `device`: the address of the mapping.
pub(crate) fn open(h: &Handle, ctx: u64, device: usize) -> R<u64> {
    if !SUPPORTED {
        return Err(code::NOT_SUPPORTED);
    }
    if h.size == 0 {
        return Err(code::INVALID_VALUE);
    }
    let key = (ctx, h.pid, h.id);
    let mut ipc = lock();
    if let Some((&base, imp)) = ipc.imports.iter_mut().find(|(_, i)| i.key == key) {
        imp.refs += 1;
        return Ok(base);
    }
    let page = crate::devspace::page_size().ok_or(code::OUT_OF_MEMORY)?;
    let len = h
        .size
        .checked_next_multiple_of(page)
        .ok_or(code::INVALID_VALUE)?;
    let file = open_peer(h.pid, h.fd, &memory_name(h.pid, h.id), len)?;
    let base = crate::devspace::alloc_reserved(len, page).ok_or(code::OUT_OF_MEMORY)?;
    // SAFETY: `[base, base + len)` is the block just reserved, ours, that nothing
    // accesses; the file is at least `len` bytes long (checked) and sealed against
    // shrinking.
    let mapped = unsafe { os::map(base, len, file.as_raw_fd()) }
        // SAFETY: as above: the block is ours and not yet in the memory map.
        && unsafe { crate::devspace::protect(base, len, true) };
    if !mapped {
        // SAFETY: the block came from `alloc_reserved(len, _)`, is given back once,
        // and nothing can access it (it never entered the memory map).
        unsafe { crate::devspace::free(base, len) };
        return Err(code::OUT_OF_MEMORY);
    }
    drop(file); // the mapping holds the pages
    crate::sanitize::memcheck::reused(base, h.size);
    crate::sanitize::initcheck::forget(base, h.size);
    ipc.imports.insert(base, Import { key, len, refs: 1 });
    state::memory_mut().insert(
        base,
        Alloc {
            size: h.size,
            ctx,
            device,
            kind: AllocKind::IpcImported,
            id: crate::devalloc::new_buffer_id(),
            reach: state::Reach::Context,
        },
    );
    Ok(base)
}

/// `cuIpcCloseMemHandle` of a mapping of another process's allocation at `base`:
/// `None` if there is none there; else one open fewer, and at the last the mapping
/// leaves the memory map and (once no operation that may have found it runs) its
/// addresses are given back.
pub(crate) fn close(base: u64) -> Option<()> {
    let len = {
        let mut ipc = lock();
        let imp = ipc.imports.get_mut(&base)?;
        imp.refs -= 1;
        if imp.refs > 0 {
            return Some(());
        }
        let len = imp.len;
        ipc.imports.remove(&base);
        let mut map = state::memory_mut();
        if map
            .get(&base)
            .is_some_and(|a| a.kind == AllocKind::IpcImported)
        {
            map.remove(&base);
        }
        len
    };
    crate::devmem::quiesce();
    // SAFETY: the block came from `alloc_reserved(len, _)` (its record, removed just
    // now, once); it left the memory map and every operation that may have found it
    // there has ended.
    unsafe { crate::devspace::free(base, len) };
    Some(())
}

/// Unmaps the mapping at `base` (its context is being destroyed) whatever its opens
/// (or, if it is no opened handle's, the pool pointer imported there).
///
/// # Safety
/// The mapping left the memory map once (this is its one unmapping) and every
/// operation that could have found it there has ended.
pub(crate) unsafe fn unmap(base: u64) {
    let imp = lock().imports.remove(&base);
    if let Some(imp) = imp {
        // SAFETY: the block came from `alloc_reserved(imp.len, _)` (its record,
        // removed just now, once); nothing accesses it (the caller's promise).
        unsafe { crate::devspace::free(base, imp.len) };
    } else {
        // A pointer imported from a pool (`crate::ipc::pool`), also `IpcImported`.
        // SAFETY: the caller's promise, passed on.
        unsafe { super::pool::unmap(base) };
    }
}

/// Live mappings of other processes' allocations. Takes this module's lock: call it
/// without the state lock.
pub(crate) fn live_count() -> usize {
    lock().imports.len()
}

/// Closes every exported file and unmaps any mapping still recorded (none should
/// be: they go with their contexts).
pub(crate) fn reset() {
    let (exports, imports) = {
        let mut ipc = lock();
        (
            std::mem::take(&mut ipc.exports),
            std::mem::take(&mut ipc.imports),
        )
    };
    drop(exports);
    if imports.is_empty() {
        return;
    }
    {
        let mut map = state::memory_mut();
        for b in imports.keys() {
            if map.get(b).is_some_and(|a| a.kind == AllocKind::IpcImported) {
                map.remove(b);
            }
        }
    }
    crate::devmem::quiesce();
    for (base, imp) in imports {
        // SAFETY: the record was taken out once (above); the mapping left the memory
        // map and every operation that may have found it there has ended.
        unsafe { crate::devspace::free(base, imp.len) };
    }
}

/// Copying an allocation's bytes into its shared file and mapping files (Linux).
#[cfg(target_os = "linux")]
mod os {
    use core::ffi::{c_int, c_long, c_void};

    unsafe extern "C" {
        fn pwrite(fd: c_int, buf: *const c_void, n: usize, off: c_long) -> isize;
    }

    /// Writes `[addr, addr + len)` to the start of `fd`.
    ///
    /// # Safety
    /// `[addr, addr + len)` is readable memory that nothing writes meanwhile.
    pub(super) unsafe fn fill(fd: c_int, addr: u64, len: u64) -> bool {
        let mut done: u64 = 0;
        while done < len {
            let (Ok(n), Ok(off)) = (usize::try_from(len - done), c_long::try_from(done)) else {
                return false;
            };
            // SAFETY: reads `n` bytes of the caller's readable range; writes the file.
            let w = unsafe { pwrite(fd, (addr + done) as *const c_void, n, off) };
            match u64::try_from(w) {
                Ok(w) if w > 0 => done += w,
                _ => return false,
            }
        }
        true
    }

    /// Lays `len` bytes of `fd` over `addr`, inaccessible.
    ///
    /// # Safety
    /// As `crate::devspace::map_shared`.
    pub(super) unsafe fn map(addr: u64, len: u64, fd: c_int) -> bool {
        // SAFETY: the caller's promise, passed on.
        unsafe { crate::devspace::map_shared(addr, len, fd) }
    }
}

/// Elsewhere: never called (every entry point refuses first: [`SUPPORTED`]).
#[cfg(not(target_os = "linux"))]
mod os {
    use core::ffi::c_int;

    /// # Safety
    /// Does nothing.
    pub(super) unsafe fn fill(_fd: c_int, _addr: u64, _len: u64) -> bool {
        false
    }

    /// # Safety
    /// Never maps anything.
    pub(super) unsafe fn map(_addr: u64, _len: u64, _fd: c_int) -> bool {
        false
    }
}
