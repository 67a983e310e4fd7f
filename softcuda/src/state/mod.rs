//! The driver's state: configuration, devices, contexts and the per-thread context
//! stack, handles, the device-memory map, and the test controls (live counts, fault
//! injection, the call log).
//!
//! Handles are not pointers to objects: each is `kind << 48 | id`, looked up in a
//! table, so a stale or forged handle is an error (`CUDA_ERROR_INVALID_HANDLE` /
//! `INVALID_CONTEXT`), never a dangling dereference. Ids are never reused.

use crate::stream::{Event, Stream};
use crate::types::{CUresult, code};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError, RwLock};

/// The result of an API function body.
pub type R<T = ()> = Result<T, CUresult>;

mod config;
mod controls;
pub(crate) mod entries;

pub use config::{Config, PeerPerf, PeerSpec, parse_links, parse_nvlinks, parse_p2p};
pub use controls::{
    ALLOC_LIMIT, ALLOCATED, call_log, clear_faults, enter, inject_fault, set_logging,
};
pub use entries::{FunctionEntry, ModuleEntry};

/// Handle kinds (the top 16 bits of a handle).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u64)]
pub enum Kind {
    /// `CUcontext`.
    Context = 1,
    /// `CUmodule`.
    Module = 2,
    /// `CUfunction`.
    Function = 3,
    /// `CUstream`.
    Stream = 4,
    /// `CUevent`.
    Event = 5,
    /// `CUgraph`.
    Graph = 6,
    /// `CUgraphNode`.
    GraphNode = 7,
    /// `CUgraphExec`.
    GraphExec = 8,
    /// `CUlibrary`.
    Library = 9,
    /// `CUkernel`.
    Kernel = 10,
    /// `CUlinkState`.
    LinkState = 11,
    /// `CUgreenCtx` (`crate::green`).
    GreenCtx = 20,
    /// `CUdevResourceDesc` (`crate::green`).
    DevResourceDesc = 21,
}

/// Makes the handle of object `id` of `kind`.
pub fn handle(kind: Kind, id: u64) -> *mut core::ffi::c_void {
    (((kind as u64) << 48) | id) as usize as *mut core::ffi::c_void
}

/// The id inside `h` if it is a handle of `kind`.
pub fn id_of(kind: Kind, h: *mut core::ffi::c_void) -> Option<u64> {
    let v = h as usize as u64;
    (v >> 48 == kind as u64 && v & 0xFFFF_FFFF_FFFF != 0).then_some(v & 0xFFFF_FFFF_FFFF)
}

/// A context.
#[derive(Debug)]
pub struct Context {
    /// The device ordinal.
    pub device: usize,
    /// `CUctx_flags` bits.
    pub flags: u32,
    /// Whether this is a device's primary context.
    pub primary: bool,
    /// The sticky error: once set, the context is unusable. Shared with the
    /// context's streams and events; a reset gives the context a fresh one, while
    /// the streams of before keep (and keep honouring) the old.
    pub sticky: Arc<Sticky>,
    /// `CUlimit` values, by limit id.
    pub limits: HashMap<u32, usize>,
    /// `CUfunc_cache` preference.
    pub cache_config: u32,
    /// Peer contexts this one may access.
    pub peers: Vec<u64>,
}

/// A context's sticky error (0: none), shared by the context, its streams and its
/// events. Stream workers read it before every operation they start (see
/// `crate::stream`); the first error set stays.
#[derive(Debug, Default)]
pub struct Sticky(AtomicU32);

impl Sticky {
    /// The error, if the context is poisoned.
    pub fn get(&self) -> Option<CUresult> {
        match self.0.load(Ordering::SeqCst) {
            0 => None,
            e => Some(e),
        }
    }

    /// Poisons the context with `err` unless it already is.
    pub fn set(&self, err: CUresult) {
        let _ = self
            .0
            .compare_exchange(0, err, Ordering::SeqCst, Ordering::SeqCst);
    }
}

/// A device's primary context.
#[derive(Debug, Default, Clone, Copy)]
pub struct Primary {
    /// The context id while it exists.
    pub ctx: Option<u64>,
    /// Retain count.
    pub refs: u32,
    /// Flags to create it with (`cuDevicePrimaryCtxSetFlags`).
    pub flags: u32,
}

/// What lives at a device address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocKind {
    /// `cuMemAlloc`.
    Device,
    /// `cuMemAllocHost` / `cuMemHostAlloc` (flags).
    PinnedHost(u32),
    /// `cuMemHostRegister` (flags); not owned.
    Registered(u32),
    /// A mapping of virtual-memory-managed physical memory that some device may
    /// access (`cuMemMap` + `cuMemSetAccess`): device memory owned by `crate::vmm`,
    /// not by a context; no free function but `cuMemUnmap` takes it away.
    Mapped,
    /// A buffer mapped from imported external memory
    /// (`cuExternalMemoryGetMappedBuffer`): device memory of a context, its pages
    /// those of the imported file (`crate::external`); `cuMemFree` frees it.
    External,
    /// Another process's allocation opened with `cuIpcOpenMemHandle`: device memory
    /// of the opening context, its pages those of the exporter's shared file
    /// (`crate::ipc::memory`); only `cuIpcCloseMemHandle` (or the context's
    /// destruction) takes it away.
    IpcImported,
}

/// One entry of the memory map.
#[derive(Debug, Clone, Copy)]
pub struct Alloc {
    /// Bytes.
    pub size: u64,
    /// The owning context id.
    pub ctx: u64,
    /// The device ordinal of that context.
    pub device: usize,
    /// What it is.
    pub kind: AllocKind,
    /// A unique id (`CU_POINTER_ATTRIBUTE_BUFFER_ID`), never reused.
    pub id: u64,
    /// Which kernels may touch it (see [`KernelMemory`]).
    pub reach: Reach,
}

/// Which kernels may access an allocation, as on a GPU. Copies and memsets are not
/// restricted: any context may copy from or to any device's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Kernels of the owning context, of contexts that have enabled peer access to
    /// it (`cuCtxEnablePeerAccess`) and of contexts that opened it through IPC
    /// (`cuIpcOpenMemHandle`, until closed): `cuMemAlloc` memory, module variables.
    /// Another context on the same device has its own address space: no access.
    Context,
    /// Kernels of every context: managed memory, pinned and registered host memory.
    Everywhere,
    /// Kernels on the devices pool `id` serves: its own, and those it grants access
    /// (`cuMemPoolSetAccess`); peer access between contexts plays no part.
    Pool(u64),
    /// Kernels on the devices of the mask (bit `d`: device `d`): graph memory, its
    /// device and those of its access descriptors.
    Devices(u64),
}

/// Everything behind the one lock.
pub struct State {
    /// Configuration; fixed at `cuInit`.
    pub config: Config,
    /// Whether `cuInit` succeeded.
    pub initialized: bool,
    /// Contexts by id.
    pub contexts: HashMap<u64, Context>,
    /// Primary context of each device.
    pub primaries: Vec<Primary>,
    /// Modules by id.
    pub modules: HashMap<u64, ModuleEntry>,
    /// Functions by id.
    pub functions: HashMap<u64, FunctionEntry>,
    /// Streams by id.
    pub streams: HashMap<u64, Arc<Stream>>,
    /// Streams destroyed (by `cuStreamDestroy` or with their context) while work was
    /// still queued on them: their handles are gone, their workers still run that
    /// work, and every synchronisation of their context (`cuCtxSynchronize`, the
    /// legacy stream, the implicit one of the frees: `crate::stream::drain`) waits
    /// for them. Each is forgotten once its queue is empty.
    pub retiring: Vec<Arc<Stream>>,
    /// Under the sanitizer's `delay` tool: each context's worker for its default
    /// streams' work, which then runs later, as on a GPU (see `crate::stream`).
    pub delayed: HashMap<u64, Arc<Stream>>,
    /// Events by id.
    pub events: HashMap<u64, Arc<Event>>,
    /// Device bytes in use, per device.
    pub used: Vec<u64>,
    /// Libraries by id (`cuLibrary*`).
    pub libraries: HashMap<u64, entries::LibraryEntry>,
    /// Kernels of the libraries, by id.
    pub kernels: HashMap<u64, entries::KernelEntry>,
    /// Link states by id (`cuLink*`).
    pub links: HashMap<u64, entries::LinkEntry>,
    /// (context, buffer id) of each allocation of this process a context opened with
    /// `cuIpcOpenMemHandle` and has not closed, with the number of opens not yet
    /// closed: its kernels may touch it.
    pub ipc_opened: HashMap<(u64, u64), u32>,
    /// Green contexts, resource descriptors and detached streams (`crate::green`).
    pub green: crate::green::Greens,
    next_id: u64,
}

impl State {
    /// A fresh id.
    pub fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// The context `id`, or `INVALID_CONTEXT`.
    pub fn context(&self, id: u64) -> R<&Context> {
        self.contexts.get(&id).ok_or(code::INVALID_CONTEXT)
    }
}

static STATE: LazyLock<Mutex<State>> = LazyLock::new(|| {
    let config = Config::from_env();
    crate::sanitize::init_from_env();
    Mutex::new(State {
        primaries: vec![Primary::default(); config.devices.len()],
        used: vec![0; config.devices.len()],
        config,
        initialized: false,
        contexts: HashMap::new(),
        modules: HashMap::new(),
        functions: HashMap::new(),
        streams: HashMap::new(),
        retiring: Vec::new(),
        delayed: HashMap::new(),
        events: HashMap::new(),
        libraries: HashMap::new(),
        kernels: HashMap::new(),
        links: HashMap::new(),
        ipc_opened: Default::default(),
        green: Default::default(),
        next_id: 0,
    })
});

/// The state, locked. A panic elsewhere never makes it unusable.
pub fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The memory map: base address → allocation. Kept apart from [`State`] so that
/// kernels can check their accesses without taking the main lock.
static MEMORY: LazyLock<RwLock<BTreeMap<u64, Alloc>>> =
    LazyLock::new(|| RwLock::new(BTreeMap::new()));

/// Reads the memory map.
pub fn memory() -> std::sync::RwLockReadGuard<'static, BTreeMap<u64, Alloc>> {
    MEMORY.read().unwrap_or_else(PoisonError::into_inner)
}

/// Writes the memory map.
pub fn memory_mut() -> std::sync::RwLockWriteGuard<'static, BTreeMap<u64, Alloc>> {
    MEMORY.write().unwrap_or_else(PoisonError::into_inner)
}

/// The allocation containing `[addr, addr + len)`, with its base.
pub fn find_alloc(map: &BTreeMap<u64, Alloc>, addr: u64, len: u64) -> Option<(u64, Alloc)> {
    let (&base, &a) = map.range(..=addr).next_back()?;
    let end = addr.checked_add(len)?;
    (end <= base + a.size.max(1) && (len > 0 || addr < base + a.size.max(1))).then_some((base, a))
}

/// What a kernel of one context may touch: the live allocations, pinned or
/// registered ranges whose [`Reach`] includes it. Anything else — memory of another
/// device without peer access, of another context on the same device — is an
/// illegal address, as on a GPU.
///
/// A kernel checks each access with it and then makes the access without holding the
/// map's lock: that is sound because the launch holds `crate::devmem::Work` while it
/// runs and no memory is deallocated or unregistered before every such operation
/// running at its removal from the map has ended (see `crate::devmem`).
///
/// The context's peers and the pools open to its device are taken when the kernel
/// starts ([`KernelMemory::of`]): enabling or disabling peer access, or changing a
/// pool's access, while a kernel runs does not change what that kernel may touch.
pub struct KernelMemory {
    ctx: u64,
    device: usize,
    peers: Vec<u64>,
    pools: Vec<u64>,
    /// Buffer ids of the allocations the context opened through IPC.
    opened: Vec<u64>,
    /// The kernel's global accesses, gathered for streamcheck (when it is on and the
    /// launch runs as stream work).
    touches: Option<crate::sanitize::streamcheck::Touches>,
}

impl KernelMemory {
    /// What a kernel of context `ctx` may touch, now. Takes the state lock and the
    /// pools' lock: never call it holding `crate::devmem::Work` (a free waiting for
    /// running work holds the state lock) or either lock.
    pub fn of(ctx: u64) -> Self {
        let (device, peers, opened) = {
            let s = state();
            let (device, peers) = s
                .contexts
                .get(&ctx)
                .map_or((usize::MAX, Vec::new()), |c| (c.device, c.peers.clone()));
            // A green context shares its primary context's memory.
            let peers = peers
                .into_iter()
                .chain(crate::green::shares_memory_with(&s, ctx))
                .collect();
            let opened = s
                .ipc_opened
                .keys()
                .filter(|(c, _)| *c == ctx)
                .map(|&(_, id)| id)
                .collect();
            (device, peers, opened)
        };
        KernelMemory {
            ctx,
            device,
            peers,
            pools: crate::pool::open_to(device),
            opened,
            touches: crate::sanitize::streamcheck::Touches::wanted().then(Default::default),
        }
    }

    /// Checks the accesses gathered for streamcheck, once kernel `name` has ended.
    pub fn flush(&self, name: &str) {
        if let Some(t) = &self.touches {
            t.flush(name);
        }
    }

    fn gather(&self, addr: u64, len: u64, write: bool) {
        if let Some(t) = &self.touches {
            t.note(addr, len, write, || {
                find_alloc(&memory(), addr, len).map(|(base, a)| {
                    crate::sanitize::streamcheck::Block {
                        base,
                        size: a.size,
                        id: a.id,
                    }
                })
            });
        }
    }

    fn reaches(&self, a: &Alloc) -> bool {
        match a.reach {
            Reach::Everywhere => true,
            Reach::Context => {
                a.ctx == self.ctx || self.peers.contains(&a.ctx) || self.opened.contains(&a.id)
            }
            Reach::Pool(p) => self.pools.contains(&p),
            Reach::Devices(mask) => self.device < 64 && mask >> self.device & 1 == 1,
        }
    }
}

impl crate::ptx::DeviceMemory for KernelMemory {
    fn accessible(&self, addr: u64, len: u64) -> bool {
        find_alloc(&memory(), addr, len).is_some_and(|(_, a)| self.reaches(&a))
    }

    /// The reachable allocation holding `addr`. The interpreter keeps a few for the
    /// launch: an allocation freed while the kernel runs stays allocated until the
    /// launch ends (`crate::devmem`), so an access through a kept range never
    /// reaches unmapped memory — it may reach the freed allocation's bytes, as a
    /// kernel racing a free may on a GPU.
    fn region(&self, addr: u64) -> Option<(u64, u64)> {
        find_alloc(&memory(), addr, 1)
            .filter(|(_, a)| self.reaches(a))
            .map(|(base, a)| (base, base + a.size))
    }

    fn set_conditional(&self, handle: u64, value: u32) -> bool {
        crate::graph::cond::set(handle, value)
    }

    fn fault(&self, fault: &crate::ptx::Fault<'_>) {
        use crate::sanitize::memcheck;
        if !crate::sanitize::on(crate::sanitize::MEMCHECK) {
            return;
        }
        let global = matches!(
            fault.space,
            crate::ptx::AccessSpace::Global | crate::ptx::AccessSpace::Const
        );
        let near = if global {
            let m = memory();
            let a = fault.addr;
            let block = |(&base, al): (&u64, &Alloc)| memcheck::Block {
                base,
                size: al.size,
            };
            memcheck::nearest(
                a,
                m.range(..=a)
                    .next_back()
                    .map(block)
                    .into_iter()
                    .chain(m.range(a..).next().map(block)),
            )
        } else {
            None
        };
        memcheck::access(fault, near);
    }

    fn checks(&self) -> u8 {
        let mut checks = crate::sanitize::tools()
            & (crate::ptx::CHECK_SYNC | crate::ptx::CHECK_INIT | crate::ptx::CHECK_RACE);
        if self.touches.is_some() {
            checks |= crate::ptx::CHECK_GLOBAL;
        }
        if crate::sanitize::on(crate::sanitize::MEMCHECK) {
            checks |= crate::ptx::CHECK_FAULT;
        }
        checks
    }

    fn initialized(&self, addr: u64, len: u64) -> bool {
        self.gather(addr, len, false);
        !crate::sanitize::on(crate::sanitize::INITCHECK)
            || crate::sanitize::initcheck::read(addr, len)
    }

    fn written(&self, addr: u64, len: u64) {
        self.gather(addr, len, true);
        crate::sanitize::initcheck::written(addr, len);
    }

    fn uninit_read(&self, fault: &crate::ptx::Fault<'_>) {
        crate::sanitize::initcheck::uninit_read(fault);
    }

    fn race(&self, race: &crate::ptx::Race<'_>) {
        crate::sanitize::racecheck::race(race);
    }

    fn sync_fault(&self, fault: &crate::ptx::SyncFault<'_>) {
        crate::sanitize::synccheck::sync_fault(fault);
    }

    fn texture(&self, handle: u64) -> Option<Arc<crate::ptx::sampler::TexView>> {
        crate::texture::view(handle, false, |c| c == self.ctx || self.peers.contains(&c))
    }

    fn surface(&self, handle: u64) -> Option<Arc<crate::ptx::sampler::TexView>> {
        crate::texture::view(handle, true, |c| c == self.ctx || self.peers.contains(&c))
    }
}

thread_local! {
    /// This thread's context stack (top = current).
    static STACK: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// The current context id, if any.
pub fn current() -> Option<u64> {
    STACK.with_borrow(|s| s.last().copied())
}

/// Runs `f` on this thread's context stack.
pub fn with_stack<T>(f: impl FnOnce(&mut Vec<u64>) -> T) -> T {
    STACK.with_borrow_mut(f)
}

/// `NOT_INITIALIZED` before `cuInit`.
pub fn require_init(s: &State) -> R {
    if s.initialized {
        Ok(())
    } else {
        Err(code::NOT_INITIALIZED)
    }
}

/// The current context, checked: initialised, present, alive, not sticky.
pub fn current_ctx(s: &State) -> R<u64> {
    let id = current_live(s)?;
    match s.context(id)?.sticky.get() {
        Some(e) => Err(e),
        None => Ok(id),
    }
}

/// The current context, initialised, present and alive, sticky or not: for the
/// synchronisations, which wait for the context's workers before they report its
/// sticky error.
pub fn current_live(s: &State) -> R<u64> {
    require_init(s)?;
    let id = current().ok_or(code::INVALID_CONTEXT)?;
    s.context(id)?;
    Ok(id)
}

/// The sticky-error cell of context `ctx`.
pub fn sticky_of(s: &State, ctx: u64) -> R<Arc<Sticky>> {
    Ok(Arc::clone(&s.context(ctx)?.sticky))
}

// ---- test controls --------------------------------------------------------------

/// Replaces the configuration. Refused (`ILLEGAL_STATE`) while any context exists.
pub fn configure(config: Config) -> R {
    let mut s = state();
    if !s.contexts.is_empty() {
        return Err(code::ILLEGAL_STATE);
    }
    s.primaries = vec![Primary::default(); config.devices.len()];
    s.used = vec![0; config.devices.len()];
    s.config = config;
    Ok(())
}

/// The current configuration.
pub fn config() -> Config {
    state().config.clone()
}

/// Live objects of each kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LiveCounts {
    /// Contexts (primary ones while retained, and created ones).
    pub contexts: usize,
    /// Streams not destroyed. A stream destroyed while its work still runs counts
    /// as gone: its handle is, even while its worker finishes that work.
    pub streams: usize,
    /// Events.
    pub events: usize,
    /// Modules.
    pub modules: usize,
    /// Device allocations.
    pub allocations: usize,
    /// Pinned host allocations.
    pub host_allocations: usize,
    /// Host registrations.
    pub registrations: usize,
    /// Graphs (created, cloned or captured; not those embedded in child-graph nodes).
    pub graphs: usize,
    /// Executable graphs.
    pub graph_execs: usize,
    /// Libraries (`cuLibraryLoadData`; their per-context modules count as modules).
    pub libraries: usize,
    /// Link states (`cuLinkCreate`).
    pub link_states: usize,
    /// Memory pools made with `cuMemPoolCreate` and not yet destroyed.
    pub pools: usize,
    /// Physical allocations (`cuMemCreate`, `cuMemImportFromShareableHandle`) not yet
    /// freed: held by a handle or mapped.
    pub vmm_allocations: usize,
    /// Address reservations (`cuMemAddressReserve`) not yet freed.
    pub vmm_reservations: usize,
    /// Mappings (`cuMemMap`) not yet unmapped.
    pub vmm_mappings: usize,
    /// External memory objects (`cuImportExternalMemory`) not yet destroyed.
    pub external_memories: usize,
    /// Buffers mapped from external memory (`cuExternalMemoryGetMappedBuffer`) not
    /// yet freed (not counted among `allocations`).
    pub external_buffers: usize,
    /// External semaphores (`cuImportExternalSemaphore`) not yet destroyed.
    pub external_semaphores: usize,
    /// Green contexts (`cuGreenCtxCreate`) not yet destroyed (their context entries
    /// count among `contexts` too). Resource descriptors have no destroy function
    /// and are not counted.
    pub green_contexts: usize,
    /// CUDA arrays made by `cuArrayCreate`/`cuArray3DCreate` and not yet destroyed
    /// (a mipmapped array's levels are not counted).
    pub arrays: usize,
    /// Mipmapped arrays (`cuMipmappedArrayCreate`) not yet destroyed.
    pub mipmapped_arrays: usize,
    /// Texture objects (`cuTexObjectCreate`) not yet destroyed.
    pub textures: usize,
    /// Surface objects (`cuSurfObjectCreate`) not yet destroyed.
    pub surfaces: usize,
    /// Memory opened with `cuIpcOpenMemHandle` and not yet closed: mappings of other
    /// processes' allocations, and (context, allocation) pairs of this process's
    /// own (not counted among `allocations`).
    pub ipc_memory: usize,
    /// Events opened with `cuIpcOpenEventHandle` and not yet destroyed (counted
    /// among `events` too).
    pub ipc_events: usize,
    /// Pools imported with `cuMemPoolImportFromShareableHandle` and not yet
    /// destroyed (not counted among `pools`).
    pub imported_pools: usize,
    /// Pointers imported with `cuMemPoolImportPointer` and still mapped (not
    /// counted among `allocations` nor `ipc_memory`).
    pub pool_imports: usize,
}

/// Counts the live objects.
pub fn live_counts() -> LiveCounts {
    // The pools' lock first, on its own: a stream's pool job holds it while it takes
    // the memory map's, so taking it under `memory()` could deadlock.
    let pools = crate::pool::live_count();
    // The VMM lock, likewise, before the state lock (its lock order).
    let (vmm_allocations, vmm_reservations, vmm_mappings) = crate::vmm::live_counts();
    // The external resources' lock, likewise (a leaf taken before the state lock).
    let (external_memories, external_semaphores) = crate::external::live_counts();
    // The IPC lock on its own (elsewhere it is taken under the state lock).
    let ipc_imports = crate::ipc::memory::live_count();
    let (imported_pools, pool_imports) = crate::ipc::pool::live_counts();
    // The arrays' lock, a leaf, on its own.
    let (arrays, mipmapped_arrays) = crate::array::live_counts();
    let (textures, surfaces) = crate::texture::live_counts();
    let s = state();
    let m = memory();
    let count = |pred: fn(&AllocKind) -> bool| m.values().filter(|a| pred(&a.kind)).count();
    let (graphs, graph_execs) = crate::graph::live_counts();
    LiveCounts {
        contexts: s.contexts.len(),
        streams: s.streams.len(),
        events: s.events.len(),
        modules: s.modules.len(),
        allocations: count(|k| *k == AllocKind::Device),
        host_allocations: count(|k| matches!(k, AllocKind::PinnedHost(_))),
        registrations: count(|k| matches!(k, AllocKind::Registered(_))),
        graphs,
        graph_execs,
        libraries: s.libraries.len(),
        link_states: s.links.len(),
        pools,
        vmm_allocations,
        vmm_reservations,
        vmm_mappings,
        external_memories,
        external_buffers: count(|k| *k == AllocKind::External),
        external_semaphores,
        green_contexts: s.green.live(),
        arrays,
        mipmapped_arrays,
        textures,
        surfaces,
        ipc_memory: ipc_imports + s.ipc_opened.len(),
        ipc_events: s.events.values().filter(|e| e.ipc_imported()).count(),
        imported_pools,
        pool_imports,
    }
}
