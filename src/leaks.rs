//! The opt-in leak tracker: which driver handles this crate created and has not
//! destroyed yet, by [`Kind`], with where each was created.
//!
//! ```no_run
//! use oxicuda_driver::leaks;
//! leaks::enable(true); // with creation backtraces
//! // ... create and drop contexts, streams, buffers ...
//! let report = leaks::live();
//! if report.total() > 0 {
//!     eprintln!("{report}"); // kinds, counts, and where each live handle was made
//! }
//! ```
//!
//! # What it counts
//!
//! Every handle an owning value of this crate creates and destroys when dropped:
//! contexts ([`Context`](crate::Context)), primary-context retains, streams, events,
//! modules, JIT linkers, libraries, device buffers, managed buffers, page-locked host
//! buffers, host registrations, memory pools, stream-ordered allocations, graphs and
//! executable graphs (see [`Kind`]). A handle enters the report when its owner is
//! made — after the driver's create call succeeded, so a failed create leaves no
//! entry — and leaves it when the owner's destroy call succeeds. A handle whose
//! owner was forgotten (`mem::forget`), or whose destroy call failed or was skipped
//! (a context dropped inside a host callback), stays: that is a leak. Handles the
//! crate does not own (the default streams, a conditional node's body graph) are not
//! counted. Counting is process-wide and thread-agnostic: a handle created on one
//! thread and dropped on another leaves the report.
//!
//! It counts from the binding's side, on any driver; it cannot see handles made
//! outside this crate, nor what the driver reclaims on its own (the objects of a
//! context destroyed with them still live in Rust are listed — they leaked from the
//! program's point of view).
//!
//! # Why a run-time switch, and what it costs
//!
//! A cargo feature would make a tracking build a different build; a switch lets a
//! user turn it on in the binary that leaks. Off (the default), creating or
//! destroying a handle costs one relaxed atomic load; the launch, copy and
//! synchronisation paths never touch the tracker. On, each create or destroy takes a
//! process-wide lock, and with backtraces captures one
//! ([`Backtrace::force_capture`](std::backtrace::Backtrace::force_capture), whatever
//! `RUST_BACKTRACE` says) — slow, meant for debugging.
//!
//! Entries are keyed by (kind, handle value). A handle value reused by the driver
//! while an earlier owner of it is still listed (after a leak, or in the moment
//! between another thread's destroy call and its removal of the entry) is listed
//! twice; destroying it removes the most recent entry — the counts stay right, but
//! the entry left may then show the other owner's thread and backtrace.

use std::backtrace::Backtrace;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The kinds of handle the tracker counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Kind {
    /// A context created with [`Context::new`](crate::Context::new) or owned through
    /// `Context::from_raw`.
    Contexts,
    /// A retain of a device's primary context ([`PrimaryContext`](crate::PrimaryContext)).
    PrimaryRetains,
    /// A stream the crate created (not the default streams).
    Streams,
    /// An event.
    Events,
    /// A loaded module.
    Modules,
    /// A JIT linker state (`cuLinkCreate`).
    Linkers,
    /// A loaded library (`cuLibraryLoad*`).
    Libraries,
    /// A device allocation (`cuMemAlloc`).
    DeviceAllocations,
    /// A managed allocation (`cuMemAllocManaged`).
    ManagedAllocations,
    /// Page-locked host memory (`cuMemHostAlloc`).
    PinnedHost,
    /// Host memory registered with the driver (`cuMemHostRegister`).
    RegisteredHost,
    /// A memory pool (`cuMemPoolCreate`).
    MemoryPools,
    /// A stream-ordered allocation (`cuMemAllocAsync`, `cuMemAllocFromPoolAsync`).
    PoolAllocations,
    /// A graph (`cuGraphCreate`, a capture, a clone).
    Graphs,
    /// An executable graph (`cuGraphInstantiate`).
    GraphExecs,
    /// Physical memory (`cuMemCreate`, `cuMemImportFromShareableHandle`).
    PhysicalMemory,
    /// A reserved range of device addresses (`cuMemAddressReserve`).
    AddressRanges,
    /// Imported external memory (`cuImportExternalMemory`).
    ExternalMemory,
    /// An imported external semaphore (`cuImportExternalSemaphore`).
    ExternalSemaphores,
    /// A green context (`cuGreenCtxCreate`).
    GreenContexts,
    /// Another process's memory opened here (`cuIpcOpenMemHandle`).
    IpcMemory,
    /// Another process's pool allocation imported here (`cuMemPoolImportPointer`).
    PoolImports,
    /// A CUDA array (`cuArray3DCreate`).
    Arrays,
    /// A mipmapped array (`cuMipmappedArrayCreate`).
    MipmappedArrays,
    /// A texture object (`cuTexObjectCreate`).
    Textures,
    /// A surface object (`cuSurfObjectCreate`).
    Surfaces,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 26] = [
        Kind::Contexts,
        Kind::PrimaryRetains,
        Kind::Streams,
        Kind::Events,
        Kind::Modules,
        Kind::Linkers,
        Kind::Libraries,
        Kind::DeviceAllocations,
        Kind::ManagedAllocations,
        Kind::PinnedHost,
        Kind::RegisteredHost,
        Kind::MemoryPools,
        Kind::PoolAllocations,
        Kind::Graphs,
        Kind::GraphExecs,
        Kind::PhysicalMemory,
        Kind::AddressRanges,
        Kind::ExternalMemory,
        Kind::ExternalSemaphores,
        Kind::GreenContexts,
        Kind::IpcMemory,
        Kind::PoolImports,
        Kind::Arrays,
        Kind::MipmappedArrays,
        Kind::Textures,
        Kind::Surfaces,
    ];

    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Contexts => "context",
            Kind::PrimaryRetains => "primary context retain",
            Kind::Streams => "stream",
            Kind::Events => "event",
            Kind::Modules => "module",
            Kind::Linkers => "linker",
            Kind::Libraries => "library",
            Kind::DeviceAllocations => "device buffer",
            Kind::ManagedAllocations => "managed buffer",
            Kind::PinnedHost => "pinned host buffer",
            Kind::RegisteredHost => "registered host memory",
            Kind::MemoryPools => "memory pool",
            Kind::PoolAllocations => "pool allocation",
            Kind::Graphs => "graph",
            Kind::GraphExecs => "executable graph",
            Kind::PhysicalMemory => "physical memory",
            Kind::AddressRanges => "address range",
            Kind::ExternalMemory => "external memory",
            Kind::ExternalSemaphores => "external semaphore",
            Kind::GreenContexts => "green context",
            Kind::IpcMemory => "opened IPC memory",
            Kind::PoolImports => "imported pool allocation",
            Kind::Arrays => "array",
            Kind::MipmappedArrays => "mipmapped array",
            Kind::Textures => "texture object",
            Kind::Surfaces => "surface object",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether new handles are recorded.
static ENABLED: AtomicBool = AtomicBool::new(false);
/// Whether creation backtraces are captured.
static BACKTRACES: AtomicBool = AtomicBool::new(false);
/// Set by the first [`enable`] and never cleared: from then on destroys are looked
/// up, so that a handle recorded before [`disable`] still leaves when destroyed.
static ARMED: AtomicBool = AtomicBool::new(false);

/// One recorded handle.
struct Entry {
    seq: u64,
    thread: String,
    backtrace: Option<Backtrace>,
}

#[derive(Default)]
struct Table {
    next_seq: u64,
    live: HashMap<(Kind, u64), Vec<Entry>>,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

fn table() -> MutexGuard<'static, Option<Table>> {
    // A panic while the lock was held (none can happen inside: no code here panics)
    // leaves consistent data: recover it rather than lose the report.
    TABLE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts recording handles created from now on, with their creation backtrace when
/// `with_backtraces`. Calling it again changes only the backtrace setting.
pub fn enable(with_backtraces: bool) {
    BACKTRACES.store(with_backtraces, Ordering::Relaxed);
    ARMED.store(true, Ordering::Relaxed);
    ENABLED.store(true, Ordering::Release);
}

/// Stops recording new handles. Those already recorded stay in the report until
/// destroyed (or [`clear`]ed).
pub fn disable() {
    ENABLED.store(false, Ordering::Release);
}

/// Whether the tracker records new handles.
pub fn is_enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Forgets every recorded handle (for instance between the phases of a test).
pub fn clear() {
    if let Some(t) = table().as_mut() {
        t.live.clear();
    }
}

/// How many handles of `kind` are recorded and not destroyed.
pub fn live_count(kind: Kind) -> usize {
    table().as_ref().map_or(0, |t| {
        t.live
            .iter()
            .filter(|((k, _), _)| *k == kind)
            .map(|(_, v)| v.len())
            .sum()
    })
}

/// The handles recorded and not destroyed, oldest first.
pub fn live() -> Report {
    let guard = table();
    let mut handles: Vec<(u64, LiveHandle)> = guard
        .as_ref()
        .map(|t| {
            t.live
                .iter()
                .flat_map(|(&(kind, handle), entries)| {
                    entries.iter().map(move |e| {
                        (
                            e.seq,
                            LiveHandle {
                                kind,
                                handle,
                                thread: e.thread.clone(),
                                backtrace: e.backtrace.as_ref().map(from_caller),
                            },
                        )
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    drop(guard);
    handles.sort_by_key(|(seq, _)| *seq);
    Report {
        handles: handles.into_iter().map(|(_, h)| h).collect(),
    }
}

/// `bt` as text, from the frame that called the crate's create function: the
/// tracker's own frames (`leaks::record`, `leaks::created` and the closure that
/// captured it) are left out when they can be found by name.
fn from_caller(bt: &Backtrace) -> String {
    let text = bt.to_string();
    let lines: Vec<&str> = text.lines().collect();
    let Some(last) = lines
        .iter()
        .rposition(|l| l.contains("oxicuda_driver::leaks::"))
    else {
        return text;
    };
    // The frame's `at file:line` follows its name, more indented.
    let skip = match lines.get(last + 1) {
        Some(next) if next.trim_start().starts_with("at ") => last + 2,
        _ => last + 1,
    };
    lines.get(skip..).unwrap_or_default().join("\n")
}

/// A handle the tracker saw created and not destroyed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveHandle {
    /// What it is.
    pub kind: Kind,
    /// The handle's value (a pointer or device address).
    pub handle: u64,
    /// The name (or id) of the thread that created it.
    pub thread: String,
    /// Where it was created, when backtraces were enabled at the time: from the
    /// frame of the crate's function that created it (the tracker's own frames are
    /// left out).
    pub backtrace: Option<String>,
}

/// A snapshot of the live handles ([`live`]); `Display` lists the count of each kind
/// that has any, then every handle with its creation thread and backtrace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    handles: Vec<LiveHandle>,
}

impl Report {
    /// Every live handle, oldest first.
    pub fn handles(&self) -> &[LiveHandle] {
        &self.handles
    }

    /// How many live handles of `kind`.
    pub fn count(&self, kind: Kind) -> usize {
        self.handles.iter().filter(|h| h.kind == kind).count()
    }

    /// How many live handles in all.
    pub fn total(&self) -> usize {
        self.handles.len()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.handles.is_empty() {
            return writeln!(f, "no live driver handles recorded");
        }
        writeln!(f, "{} live driver handle(s):", self.handles.len())?;
        for kind in Kind::ALL {
            let n = self.count(kind);
            if n > 0 {
                writeln!(f, "  {kind}: {n}")?;
            }
        }
        for h in &self.handles {
            writeln!(
                f,
                "{} {:#x}, created on thread {}",
                h.kind, h.handle, h.thread
            )?;
            match &h.backtrace {
                Some(bt) => {
                    for line in bt.lines() {
                        writeln!(f, "    {line}")?;
                    }
                }
                None => writeln!(f, "    (no backtrace: enable(true) to capture them)")?,
            }
        }
        Ok(())
    }
}

/// A driver handle as the tracker keys it.
pub(crate) trait Handle: Copy {
    /// Its value.
    fn key(self) -> u64;
}

macro_rules! handles {
    ($($t:ty),*) => {$(
        impl Handle for $t {
            #[inline(always)]
            fn key(self) -> u64 {
                self.0 as usize as u64
            }
        }
    )*};
}
handles!(
    crate::sys::CUcontext,
    crate::sys::CUstream,
    crate::sys::CUevent,
    crate::sys::CUmodule,
    crate::sys::CUlinkState,
    crate::sys::CUlibrary,
    crate::sys::CUmemoryPool,
    crate::sys::CUgraph,
    crate::sys::CUgraphExec,
    crate::sys::CUexternalMemory,
    crate::sys::CUexternalSemaphore,
    crate::sys::CUgreenCtx,
    crate::sys::CUarray,
    crate::sys::CUmipmappedArray
);

impl Handle for u64 {
    #[inline(always)]
    fn key(self) -> u64 {
        self
    }
}

impl<T> Handle for *mut T {
    #[inline(always)]
    fn key(self) -> u64 {
        self as usize as u64
    }
}

/// Records that an owner of `handle` was made (its create call succeeded). One
/// relaxed load when the tracker is off.
#[inline(always)]
pub(crate) fn created(kind: Kind, handle: impl Handle) {
    if ENABLED.load(Ordering::Relaxed) {
        record(kind, handle.key());
    }
}

/// Records that `handle`'s owner destroyed it. One relaxed load when the tracker was
/// never enabled.
#[inline(always)]
pub(crate) fn destroyed(kind: Kind, handle: impl Handle) {
    if ARMED.load(Ordering::Relaxed) {
        forget(kind, handle.key());
    }
}

#[cold]
#[inline(never)]
fn record(kind: Kind, handle: u64) {
    let backtrace = BACKTRACES
        .load(Ordering::Relaxed)
        .then(Backtrace::force_capture);
    let current = std::thread::current();
    let thread = match current.name() {
        Some(name) => name.to_owned(),
        None => format!("{:?}", current.id()),
    };
    let mut guard = table();
    let t = guard.get_or_insert_with(Table::default);
    let seq = t.next_seq;
    t.next_seq += 1;
    t.live.entry((kind, handle)).or_default().push(Entry {
        seq,
        thread,
        backtrace,
    });
}

#[cold]
#[inline(never)]
fn forget(kind: Kind, handle: u64) {
    let mut guard = table();
    if let Some(t) = guard.as_mut()
        && let Some(entries) = t.live.get_mut(&(kind, handle))
    {
        entries.pop();
        if entries.is_empty() {
            t.live.remove(&(kind, handle));
        }
    }
}
