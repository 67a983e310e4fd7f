//! External resources: memory and semaphores imported from file descriptors
//! (`cuImportExternalMemory`, `cuImportExternalSemaphore`), the buffers mapped from
//! imported memory (`cuExternalMemoryGetMappedBuffer`), and the semaphores'
//! signal and wait operations. The C entry points are `crate::api::external`. Linux
//! only: elsewhere every entry point is `CUDA_ERROR_NOT_SUPPORTED` ([`SUPPORTED`]).
//!
//! - **Memory.** softcuda's stand-in for an allocation exported by Vulkan, OpenGL or
//!   another process is one of its own memory files (`softcuda-vmm-dev<N>`, see
//!   `crate::vmm`): one exported by `cuMemExportToShareableHandle`, or one made by
//!   `crate::control::external_memory_fd`. Importing takes the caller's descriptor
//!   (ownership passes to softcuda, as CUDA documents for opaque file descriptors):
//!   it is kept, not duplicated, and closed when the memory object is destroyed and
//!   no buffer mapped from it is left (the object and each buffer hold the file).
//! - **Buffers.** A buffer lays the file's pages `[offset, offset + size)` (`offset`
//!   page-aligned) over a fresh block of softcuda's device address space
//!   (`crate::devspace::alloc_reserved`, `map_shared_at`), readable and writable, and
//!   enters the memory map as `AllocKind::External`, device memory of the current
//!   context. Two buffers of one file, or a buffer and a VMM mapping of it, alias
//!   the same bytes. `cuMemFree` (or the destruction of its context) frees it in the
//!   order of `crate::devalloc::Removed::finish`: out of the map, `devmem::quiesce`,
//!   then [`unmap_buffer`] gives the block back (its pages replaced by fresh
//!   inaccessible ones) and drops the buffer's hold on the file.
//! - **Semaphores.** A semaphore file (`softcuda-semaphore`, made by
//!   `crate::control::external_semaphore_fd`) holds a `u64` counter in 8 bytes of
//!   shared memory; an import maps it (host memory, `MAP_SHARED`), so that two
//!   imports, in one process or in two, share the counter, which they change with
//!   atomic operations. A binary semaphore's signal stores 1 and its wait takes a
//!   non-zero count back to 0; a timeline semaphore's signal raises the counter to
//!   the value (never lowers it) and its wait waits until it is at least the value.
//!   A queued operation holds the semaphore (an `Arc`): destroying the handle lets
//!   it finish; the mapping and the file go with the last holder.
//!
//! **Lock order.** The lock of this module ([`lock`]) is taken before the memory
//! map's lock and never while the state lock or the memory map's lock is held; the
//! device address space's lock is a leaf. Nothing waits while holding it.

use crate::state::{self, Alloc, AllocKind, R};
use crate::types::code;
use core::ffi::c_int;
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Whether softcuda implements external resources here (Linux: memory files).
pub(crate) const SUPPORTED: bool = cfg!(target_os = "linux");

/// Memory handles are `MEMORY_TAG | id`, semaphore handles `SEMAPHORE_TAG | id`:
/// numbers that are never small integers, pointers or each other.
const MEMORY_TAG: u64 = 0x4558 << 48;
const SEMAPHORE_TAG: u64 = 0x4553 << 48;

/// The name of a softcuda semaphore file.
pub(crate) const SEMAPHORE_NAME: &str = "softcuda-semaphore";

/// The bytes of a semaphore file: one `u64` counter.
pub(crate) const SEMAPHORE_SIZE: u64 = 8;

/// An imported memory object.
struct Memory {
    /// Its file (owned; closed with its last holder).
    file: Arc<OwnedFd>,
    /// The size imported (`CUDA_EXTERNAL_MEMORY_HANDLE_DESC::size`).
    size: u64,
}

/// A buffer mapped from an imported memory object.
struct Buffer {
    /// The object's file, held while the buffer is mapped.
    file: Arc<OwnedFd>,
    /// The length of its block of device addresses (whole pages).
    len: u64,
}

/// An imported semaphore.
pub(crate) struct Semaphore {
    /// A timeline semaphore (else binary).
    timeline: bool,
    /// The mapping of its counter.
    page: Page,
}

/// A shared mapping of the first page of a small memory file of `u64` counters (a
/// semaphore file's counter; an interprocess event's state, `crate::ipc::event`);
/// unmapped, and the file closed, when dropped. Every process that maps the file
/// sees the same counters, which they change only atomically.
pub(crate) struct Page {
    addr: usize,
    len: usize,
    _file: OwnedFd,
}

impl Page {
    /// Maps the first page of `file` (a memory file at least `8 * words` bytes long,
    /// sealed against shrinking: `crate::vmm::named` checks both), taking the
    /// descriptor; `None` (the descriptor closed) if the system refused.
    pub(crate) fn map(file: OwnedFd, words: usize) -> Option<Page> {
        let (addr, len) = os::map_counter(file.as_raw_fd())?;
        if words.checked_mul(8).is_none_or(|b| b > len) {
            // SAFETY: the mapping just made, ours, unmapped once.
            unsafe { os::unmap(addr, len) };
            return None;
        }
        Some(Page {
            addr,
            len,
            _file: file,
        })
    }

    /// Counter `i` of the page (`i` below the `words` it was mapped with).
    pub(crate) fn word(&self, i: usize) -> &AtomicU64 {
        let i = i.min(self.len / 8 - 1);
        // SAFETY: `addr + 8 i` lies in a live, page-aligned (so 8-byte aligned),
        // readable and writable shared mapping that lives as long as `self`, backed
        // by the file (sealed against shrinking, at least that long); other
        // processes change it only atomically.
        unsafe { &*((self.addr + 8 * i) as *const AtomicU64) }
    }

    /// The descriptor of the file (kept open while the page lives).
    pub(crate) fn fd(&self) -> c_int {
        self._file.as_raw_fd()
    }
}

/// The first and the longest pause of [`poll_until`].
const NAP: std::time::Duration = std::time::Duration::from_micros(100);
const LONGEST_NAP: std::time::Duration = std::time::Duration::from_millis(1);

/// Waits until `done()` holds, polling with short sleeps (100 µs doubling to 1 ms,
/// no busy spin) and holding no lock: how a counter in shared memory, which another
/// process may change, is waited for. Gives up (false) once `give_up()` holds.
pub(crate) fn poll_until(mut done: impl FnMut() -> bool, give_up: impl Fn() -> bool) -> bool {
    let mut nap = NAP;
    while !done() {
        if give_up() {
            return false;
        }
        std::thread::sleep(nap);
        nap = (nap * 2).min(LONGEST_NAP);
    }
    true
}

impl Drop for Page {
    fn drop(&mut self) {
        // SAFETY: the mapping is this page's own (made by `os::map_counter`), and no
        // reference to its counter outlives the page (`Semaphore::counter` borrows
        // it).
        unsafe { os::unmap(self.addr, self.len) };
    }
}

impl Semaphore {
    fn counter(&self) -> &AtomicU64 {
        self.page.word(0)
    }

    /// Signals: a binary semaphore's counter becomes 1, a timeline semaphore's
    /// becomes at least `value`.
    pub(crate) fn signal(&self, value: u64) {
        if self.timeline {
            self.counter().fetch_max(value, Ordering::SeqCst);
        } else {
            self.counter().store(1, Ordering::SeqCst);
        }
    }

    /// Tries to complete a wait: a binary semaphore's non-zero counter is taken back
    /// to 0 (true); a timeline semaphore's wait is complete once its counter is at
    /// least `value`.
    pub(crate) fn try_wait(&self, value: u64) -> bool {
        let c = self.counter();
        if self.timeline {
            return c.load(Ordering::SeqCst) >= value;
        }
        let mut v = c.load(Ordering::SeqCst);
        while v != 0 {
            match c.compare_exchange(v, 0, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return true,
                Err(now) => v = now,
            }
        }
        false
    }
}

/// Every external resource.
struct External {
    next: u64,
    /// By handle.
    memories: BTreeMap<u64, Memory>,
    /// By base address.
    buffers: BTreeMap<u64, Buffer>,
    /// By handle.
    semaphores: BTreeMap<u64, Arc<Semaphore>>,
}

static EXTERNAL: Mutex<External> = Mutex::new(External {
    next: 0,
    memories: BTreeMap::new(),
    buffers: BTreeMap::new(),
    semaphores: BTreeMap::new(),
});

/// The external resources, locked (see the module's lock order).
fn lock() -> MutexGuard<'static, External> {
    EXTERNAL.lock().unwrap_or_else(PoisonError::into_inner)
}

impl External {
    fn fresh(&mut self, tag: u64) -> u64 {
        self.next += 1;
        tag | self.next
    }

    /// Whether softcuda already owns descriptor `fd` (imported before and not yet
    /// closed): a second import of the same number would close it twice.
    fn owns(&self, fd: c_int) -> bool {
        self.memories.values().any(|m| m.file.as_raw_fd() == fd)
            || self.buffers.values().any(|b| b.file.as_raw_fd() == fd)
            || self
                .semaphores
                .values()
                .any(|s| s.page._file.as_raw_fd() == fd)
    }
}

/// Imports the memory file `fd` (a softcuda memory file at least `size` bytes long,
/// `size` > 0) and takes ownership of the descriptor; `INVALID_VALUE` (the caller
/// keeps it) otherwise.
pub(crate) fn import_memory(fd: c_int, size: u64) -> R<u64> {
    let (_, file_size) = crate::vmm::identify(fd).ok_or(code::INVALID_VALUE)?;
    if size == 0 || size > file_size {
        return Err(code::INVALID_VALUE);
    }
    let mut e = lock();
    if e.owns(fd) {
        return Err(code::INVALID_VALUE);
    }
    // SAFETY: `fd` is open (identified above) and the caller hands it over (the C
    // contract of an opaque-descriptor import); softcuda owns it nowhere else
    // (checked above), so it is closed once, by this owner.
    let file = Arc::new(unsafe { OwnedFd::from_raw_fd(fd) });
    let h = e.fresh(MEMORY_TAG);
    e.memories.insert(h, Memory { file, size });
    Ok(h)
}

/// Destroys memory object `handle` (`INVALID_VALUE` if unknown): the handle is
/// invalid at once; the file stays open while buffers mapped from it live.
pub(crate) fn destroy_memory(handle: u64) -> R {
    let m = lock().memories.remove(&handle);
    m.map(drop).ok_or(code::INVALID_VALUE)
}

/// Maps `[offset, offset + size)` of memory object `handle` as a buffer of context
/// `ctx` (on `device`): a fresh block of device addresses, entered in the memory map.
/// `offset` must be a multiple of the page size and the range inside the object.
pub(crate) fn map_buffer(handle: u64, offset: u64, size: u64, ctx: u64, device: usize) -> R<u64> {
    let page = crate::devspace::page_size().ok_or(code::OUT_OF_MEMORY)?;
    let mut e = lock();
    let m = e.memories.get(&handle).ok_or(code::INVALID_VALUE)?;
    let end = offset.checked_add(size).ok_or(code::INVALID_VALUE)?;
    if size == 0 || end > m.size || !offset.is_multiple_of(page) {
        return Err(code::INVALID_VALUE);
    }
    let file = Arc::clone(&m.file);
    let len = size
        .checked_next_multiple_of(page)
        .ok_or(code::INVALID_VALUE)?;
    let base = crate::devspace::alloc_reserved(len, page).ok_or(code::OUT_OF_MEMORY)?;
    // SAFETY: `[base, base + len)` is the block just reserved, ours, that nothing
    // accesses; the file is at least `end` bytes long (checked at import) and sealed
    // against shrinking, so each page of the range holds some of it.
    let mapped = unsafe { os::map(base, len, file.as_raw_fd(), offset) }
        // SAFETY: as above: the block is ours and not yet in the memory map.
        && unsafe { crate::devspace::protect(base, len, true) };
    if !mapped {
        // SAFETY: the block came from `alloc_reserved(len, _)`, is given back once,
        // and nothing can access it (it never entered the memory map).
        unsafe { crate::devspace::free(base, len) };
        return Err(code::OUT_OF_MEMORY);
    }
    crate::sanitize::memcheck::reused(base, size);
    crate::sanitize::initcheck::forget(base, size);
    e.buffers.insert(base, Buffer { file, len });
    state::memory_mut().insert(
        base,
        Alloc {
            size,
            ctx,
            device,
            kind: AllocKind::External,
            id: crate::devalloc::new_buffer_id(),
            reach: state::Reach::Context,
        },
    );
    Ok(base)
}

/// Unmaps the buffer at `base` (its block of device addresses given back, its pages
/// replaced by fresh inaccessible ones) and drops its hold on the file.
///
/// # Safety
/// The buffer left the memory map once (this is its one unmapping) and every
/// operation that could have found it there has ended.
pub(crate) unsafe fn unmap_buffer(base: u64) {
    let b = lock().buffers.remove(&base);
    if let Some(b) = b {
        // SAFETY: the block came from `alloc_reserved(b.len, _)` (the buffer's
        // record, removed just now, once); nothing accesses it (the caller's
        // promise).
        unsafe { crate::devspace::free(base, b.len) };
    }
}

/// Imports the semaphore file `fd` (see [`SEMAPHORE_NAME`]) as a binary or
/// (`timeline`) a timeline semaphore and takes ownership of the descriptor;
/// `INVALID_VALUE` (the caller keeps it) if it is no semaphore file.
pub(crate) fn import_semaphore(fd: c_int, timeline: bool) -> R<u64> {
    let (name, size) = crate::vmm::named(fd).ok_or(code::INVALID_VALUE)?;
    if name != SEMAPHORE_NAME || size < SEMAPHORE_SIZE {
        return Err(code::INVALID_VALUE);
    }
    let mut e = lock();
    if e.owns(fd) {
        return Err(code::INVALID_VALUE);
    }
    let (addr, len) = os::map_counter(fd).ok_or(code::OUT_OF_MEMORY)?;
    // SAFETY: as in `import_memory`: an open descriptor handed over, owned nowhere
    // else in softcuda.
    let file = unsafe { OwnedFd::from_raw_fd(fd) };
    let h = e.fresh(SEMAPHORE_TAG);
    e.semaphores.insert(
        h,
        Arc::new(Semaphore {
            timeline,
            page: Page {
                addr,
                len,
                _file: file,
            },
        }),
    );
    Ok(h)
}

/// The semaphore `handle` (`INVALID_HANDLE` if unknown or destroyed).
pub(crate) fn semaphore(handle: u64) -> R<Arc<Semaphore>> {
    lock()
        .semaphores
        .get(&handle)
        .cloned()
        .ok_or(code::INVALID_HANDLE)
}

/// Destroys semaphore `handle` (`INVALID_HANDLE` if unknown): the handle is invalid
/// at once; queued operations holding it finish.
pub(crate) fn destroy_semaphore(handle: u64) -> R {
    let s = lock().semaphores.remove(&handle);
    s.map(drop).ok_or(code::INVALID_HANDLE)
}

/// Live external objects: (memory objects, semaphores). Takes this module's lock:
/// call it before the state lock.
pub(crate) fn live_counts() -> (usize, usize) {
    let e = lock();
    (e.memories.len(), e.semaphores.len())
}

/// Forgets every external object (`control::reset`, after the contexts, and with
/// them every buffer, are gone): handles invalid, files closed once no queued
/// operation holds them. A buffer still recorded (none should be) leaves the map
/// and is unmapped once no operation that may have found it runs.
pub(crate) fn reset() {
    let (memories, semaphores, buffers) = {
        let mut e = lock();
        (
            std::mem::take(&mut e.memories),
            std::mem::take(&mut e.semaphores),
            e.buffers.keys().copied().collect::<Vec<_>>(),
        )
    };
    drop(memories);
    drop(semaphores);
    if buffers.is_empty() {
        return;
    }
    {
        let mut map = state::memory_mut();
        for b in &buffers {
            if map.get(b).is_some_and(|a| a.kind == AllocKind::External) {
                map.remove(b);
            }
        }
    }
    crate::devmem::quiesce();
    for b in buffers {
        // SAFETY: the buffer left the memory map (above, or when it was freed, in
        // which case its own unmapping finds no record and does nothing) and every
        // operation that may have found it there has ended.
        unsafe { unmap_buffer(b) };
    }
}

/// A fresh softcuda memory file of `size` bytes (`crate::control::external_memory_fd`).
pub(crate) fn memory_file(size: u64) -> Option<OwnedFd> {
    if size == 0 || !SUPPORTED {
        return None;
    }
    let fd = crate::vmm::memory_file(size)?;
    // SAFETY: `fd` was just created and is owned by nothing else.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A fresh semaphore file, counter 0 (`crate::control::external_semaphore_fd`).
pub(crate) fn semaphore_file() -> Option<OwnedFd> {
    if !SUPPORTED {
        return None;
    }
    let fd = crate::vmm::create_named(SEMAPHORE_NAME, SEMAPHORE_SIZE)?;
    // SAFETY: `fd` was just created and is owned by nothing else.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Mappings of files (Linux).
#[cfg(target_os = "linux")]
mod os {
    use core::ffi::{c_int, c_long, c_void};

    unsafe extern "C" {
        fn mmap(
            addr: *mut c_void,
            len: usize,
            prot: c_int,
            flags: c_int,
            fd: c_int,
            off: c_long,
        ) -> *mut c_void;
        fn munmap(addr: *mut c_void, len: usize) -> c_int;
        fn sysconf(name: c_int) -> c_long;
    }

    const PROT_READ: c_int = 1;
    const PROT_WRITE: c_int = 2;
    const MAP_SHARED: c_int = 1;
    const SC_PAGESIZE: c_int = 30;
    const MAP_FAILED: *mut c_void = !0usize as *mut c_void;

    /// Maps `len` bytes of `fd` from `offset` at `addr`, inaccessible.
    ///
    /// # Safety
    /// As `crate::devspace::map_shared_at`.
    pub(super) unsafe fn map(addr: u64, len: u64, fd: c_int, offset: u64) -> bool {
        // SAFETY: the caller's promise, passed on.
        unsafe { crate::devspace::map_shared_at(addr, len, fd, offset) }
    }

    /// A shared, readable and writable mapping of the first page of `fd` (a file
    /// of at least 8 bytes, sealed against shrinking) at an address the system
    /// chooses: its address and length.
    pub(super) fn map_counter(fd: c_int) -> Option<(usize, usize)> {
        // SAFETY: `sysconf` reads a system value.
        let page = usize::try_from(unsafe { sysconf(SC_PAGESIZE) })
            .ok()
            .filter(|&p| p >= 8)
            .unwrap_or(4096);
        // SAFETY: a fresh mapping at an address the system chooses: it touches no
        // existing memory.
        let p = unsafe {
            mmap(
                core::ptr::null_mut(),
                page,
                PROT_READ | PROT_WRITE,
                MAP_SHARED,
                fd,
                0,
            )
        };
        (p != MAP_FAILED && !p.is_null()).then_some((p as usize, page))
    }

    /// Unmaps `[addr, addr + len)`.
    ///
    /// # Safety
    /// A mapping made by [`map_counter`], unmapped once, that nothing accesses any
    /// more.
    pub(super) unsafe fn unmap(addr: usize, len: usize) {
        // SAFETY: the caller's promise.
        unsafe { munmap(addr as *mut c_void, len) };
    }
}

/// Elsewhere: nothing is ever mapped (every entry point refuses first:
/// [`SUPPORTED`]).
#[cfg(not(target_os = "linux"))]
mod os {
    use core::ffi::c_int;

    /// # Safety
    /// Never maps anything.
    pub(super) unsafe fn map(_addr: u64, _len: u64, _fd: c_int, _offset: u64) -> bool {
        false
    }

    pub(super) fn map_counter(_fd: c_int) -> Option<(usize, usize)> {
        None
    }

    /// # Safety
    /// Does nothing.
    pub(super) unsafe fn unmap(_addr: usize, _len: usize) {}
}
