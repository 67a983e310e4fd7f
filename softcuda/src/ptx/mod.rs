//! The PTX front end and interpreter.
//!
//! [`Module::load`] parses PTX text (what NVRTC/NVCC emit: `.version` up to 8.8,
//! `.target` up to the JIT target, `.address_size 64`), checks it, and compiles every
//! function once into a compact array of typed operations over register indices.
//! Anything the interpreter cannot execute exactly — an unknown instruction, an
//! unsupported modifier, type or rounding mode — is refused here, with a ptxas-style
//! error log naming it and its line, rather than giving a wrong result at run time.
//!
//! [`launch`] runs a kernel to completion on the calling thread. Blocks run one
//! after another (but see [`launch_ex`]: the blocks of a cluster, or of a
//! cooperative grid, run interleaved); a thread yields after 1024 backward
//! branches, so that one spinning on memory another thread writes makes way; the threads of a block run cooperatively: each runs until it
//! reaches a barrier (`bar.sync`), a warp collective (`shfl.sync`, `vote.sync`, ...)
//! or its end, then the next runs. A barrier releases when every thread that has
//! not exited has reached it; a collective is evaluated once every live lane of its
//! member mask has arrived.
//!
//! Memory model:
//! - global and `.const` memory are host memory at their real addresses, checked
//!   with [`DeviceMemory`] before every access (a failed check is
//!   [`LaunchError::IllegalAddress`]); accesses are relaxed atomics so that kernels
//!   running concurrently on other host threads are never undefined behaviour;
//!   `atom`/`red` are real atomic read-modify-writes;
//! - shared memory is a per-block buffer; local memory (and the `.param` frames of
//!   `.func` calls) is a per-thread stack;
//! - generic addresses of shared, local and parameter memory lie in windows at
//!   `0xFE..`, `0xFD..` and `0xFC..` (top byte), which no user-space host address
//!   can have: `cvta` adds or removes the window, generic `ld`/`st`/`atom` decode it.
//!
//! Not supported (refused at load, naming the instruction or modifier): f16/bf16
//! arithmetic (f16 conversions and loads/stores are supported), texture and surface
//! instructions, tensor-core and async-copy instructions (`mma`, `wmma`, `cp.async`,
//! `mbarrier`, ...), indirect calls and branches (`brx.idx`, calls through a
//! register), `prmt` modes other than the default, `div`/`sqrt`/`rcp` with directed
//! rounding, `fma.rz/rm/rp.f64`, `set`, `slct`, `.address_size 32`, initializers
//! holding addresses, extern functions other than `vprintf` (device `printf`) and
//! `cudaGraphSetConditional` (conditional graph nodes), which are built in.
//!
//! Files: `lex.rs` (tokens), `parse.rs` (syntax tree), `compile/` (checks and
//! lowering to `ir.rs` operations: module scope in `mod.rs`, operands, instruction
//! selection in `lower.rs` and `inst.rs`, per-kernel results in `kernel.rs`),
//! `arith/` (numeric semantics), `exec/` (the scheduler in `mod.rs`, launch-shape checks in
//! `checks.rs`, barriers and warp collectives in `warp.rs`, memory access in
//! `memory.rs`, the interpreter loop in `thread.rs`, racecheck's shadow of shared
//! memory in `race.rs`), `printf.rs` (device `printf`), `log.rs` (ptxas-style
//! logs), `link.rs` (the linker of several units, `cuLink*`). The interpreter
//! imports nothing of the rest of softcuda: the driver layers sit above it.

mod arith;
mod compile;
mod exec;
mod ir;
mod lex;
pub mod link;
mod log;
mod parse;
mod printf;
pub mod sampler;

pub use exec::lanes::{enabled as lane_engine_enabled, set_enabled as set_lane_engine};
pub use exec::{
    MAX_CLUSTER, MAX_STACK, check_cluster, check_launch, launch, launch_ex, resident_bytes,
    resident_limit, set_resident_limit,
};

/// Options of the PTX just-in-time compilation (the `CU_JIT_*` options that matter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JitOptions {
    /// The SM version compiled for (e.g. 90 for `sm_90`); a module whose `.target`
    /// is newer is refused.
    pub target_sm: u32,
    /// `CU_JIT_MAX_REGISTERS`: caps the reported register count.
    pub max_registers: Option<u32>,
    /// `CU_JIT_LOG_VERBOSE`: when false the info log is empty (like the driver, which
    /// writes ptxas's `-v` lines only when asked).
    pub verbose: bool,
}

impl Default for JitOptions {
    fn default() -> Self {
        JitOptions {
            target_sm: 90,
            max_registers: None,
            verbose: false,
        }
    }
}

/// The state space of a module-scope variable the driver allocates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    /// `.global` (`__device__` variables).
    Global,
    /// `.const` (`__constant__` variables).
    Const,
}

/// A module-scope `.global` or `.const` variable. The driver allocates `size` bytes
/// aligned to `align` for it, copies `init` there, and passes its address to
/// [`launch`] (in `global_addrs`, in the order of [`Module::globals`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalVar {
    /// The PTX name (mangled for C++ names).
    pub name: String,
    /// Where it lives.
    pub space: Space,
    /// Size in bytes.
    pub size: u64,
    /// Alignment in bytes.
    pub align: u32,
    /// Initial contents: `size` bytes, zero where the PTX gives no initializer.
    pub init: Vec<u8>,
}

/// One kernel parameter in the packed parameter buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamInfo {
    /// Byte offset in the buffer (aligned to `align`).
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
    /// Alignment (the `.align` given, else the element type's size).
    pub align: u32,
}

/// A kernel (`.entry`) of a loaded module, with the attributes the driver reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    /// The PTX name.
    pub name: String,
    /// The parameters, in order.
    pub params: Vec<ParamInfo>,
    /// Size of the packed parameter buffer (end of the last parameter).
    pub param_bytes: u32,
    /// Shared memory declared statically (the kernel's and the called functions'
    /// `.shared` variables, module-scope ones included when used).
    pub static_shared_bytes: u32,
    /// Per-thread local memory: the deepest chain of stack frames (`.local`
    /// variables and call parameters) of the kernel and the functions it calls.
    pub local_bytes: u32,
    /// Registers per thread: an estimate of the 32-bit registers live at once
    /// (see `compile/`), capped by `.maxnreg`, [`JitOptions::max_registers`] and
    /// what `.maxntid` allows. Only reported: the interpreter never refuses a launch
    /// for registers (the estimate can exceed what ptxas would allocate).
    pub num_regs: u32,
    /// The most threads per block a launch may use: the product of `.maxntid` or
    /// `.reqntid` if given.
    pub max_threads_per_block: Option<u32>,
    /// `.maxntid x, y, z`.
    pub maxntid: Option<[u32; 3]>,
    /// `.reqntid x, y, z`: a launch must use exactly this block shape.
    pub reqntid: Option<[u32; 3]>,
    /// `.minnctapersm n`.
    pub min_blocks_per_sm: Option<u32>,
    /// `.reqnctapercluster x, y, z` (CUDA's `__cluster_dims__`): every launch runs
    /// in clusters of this shape.
    pub cluster_dims: Option<[u32; 3]>,
    /// `.explicitcluster`: a launch must give a cluster shape.
    pub explicit_cluster: bool,
    /// `.maxclusterrank n`: the most blocks a cluster may have.
    pub max_cluster_rank: Option<u32>,
    /// Index of the compiled function.
    func: u32,
    /// Offset of each module shared variable in this kernel's layout (`u32::MAX`
    /// for variables the kernel does not use); dynamic ones at `dyn_shared_offset`.
    shared_offsets: Vec<u32>,
    /// Where the dynamic (`.extern .shared`) memory begins.
    dyn_shared_offset: u32,
    /// Whether the lane engine can run it (`exec::lanes::eligible`).
    lanes: bool,
}

impl Kernel {
    /// Whether launches of this kernel run on the lane engine (all the threads of a
    /// block together, see `exec::lanes`) when no sanitizer check is asked for;
    /// otherwise, and for checked launches, they run one thread at a time.
    pub fn lane_engine(&self) -> bool {
        self.lanes
    }
}

/// A parsed, validated, compiled PTX module.
#[derive(Debug, Clone)]
pub struct Module {
    prog: ir::Program,
    /// Whether some function reads `%reserved_smem_offset_*`: only then does a
    /// block get the driver-reserved shared memory after its own (so that other
    /// kernels' out-of-bounds shared accesses stay illegal).
    reserved_smem: bool,
    kernels: Vec<Kernel>,
    globals: Vec<GlobalVar>,
}

impl Module {
    /// Parses, checks and compiles PTX text. On success returns the module and the
    /// info log (empty unless `opts.verbose`); on failure the error log. Both logs
    /// are in ptxas's format.
    /// A linked image (`link::image`) is linked again from its units.
    pub fn load(text: &str, opts: &JitOptions) -> Result<(Module, String), String> {
        if let Some(units) = link::parse_image(text) {
            return link::link(&units, opts);
        }
        let toks = lex::tokenize(text).map_err(|e| log::error_log(&[e]))?;
        let (ast, errors) = parse::parse(&toks);
        if !errors.is_empty() {
            return Err(log::error_log(&errors));
        }
        let c = compile::compile(&ast, opts).map_err(|e| log::error_log(&e))?;
        let info = if opts.verbose {
            log::info_log(&c, opts.target_sm)
        } else {
            String::new()
        };
        Ok((Module::from_compiled(c), info))
    }

    /// The module of a compiled program.
    pub(crate) fn from_compiled(c: compile::Compiled) -> Module {
        Module {
            reserved_smem: c.prog.code.iter().any(|i| {
                matches!(
                    i.op,
                    ir::Op::Special {
                        sr: ir::Sreg::ReservedSmem(_),
                        ..
                    }
                )
            }),
            prog: c.prog,
            kernels: c.kernels,
            globals: c.globals,
        }
    }

    /// The kernels (`.entry` functions), in source order.
    pub fn kernels(&self) -> &[Kernel] {
        &self.kernels
    }

    /// The kernel named `name`.
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels.iter().find(|k| k.name == name)
    }

    /// The module-scope `.global` and `.const` variables, in source order.
    pub fn globals(&self) -> &[GlobalVar] {
        &self.globals
    }
}

/// Threads per block, grid and block shape of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in x, y, z.
    pub grid: [u32; 3],
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
    /// Bytes of dynamic shared memory (`.extern .shared` arrays).
    pub dynamic_shared_bytes: u32,
}

/// What `cuLaunchKernelEx` adds to a launch: a cluster shape and cooperative
/// (co-resident) execution. See [`launch_ex`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LaunchExtras {
    /// Blocks per cluster in x, y, z (each dividing the grid); `None`: no explicit
    /// cluster (every block is a cluster of one).
    pub cluster: Option<[u32; 3]>,
    /// Run every block of the grid co-resident, with the grid workspace that
    /// `cooperative_groups::this_grid().sync()` needs.
    pub cooperative: bool,
}

/// What a kernel may touch: device memory is ordinary host memory at its real
/// address. Implemented by the driver over its allocation table.
///
/// The interpreter checks each access with [`DeviceMemory::accessible`] and then
/// makes it (a relaxed atomic access) without any lock held in between, so an
/// implementation must keep memory it has reported accessible allocated until
/// [`launch`] returns (softcuda's driver does: frees wait for running launches).
pub trait DeviceMemory: Sync {
    /// Whether `[addr, addr+len)` lies inside memory this kernel may access (a live
    /// device allocation it can reach, or registered/pinned host memory).
    fn accessible(&self, addr: u64, len: u64) -> bool;

    /// Optional speed-up: the whole accessible range `[start, end)` containing
    /// `addr`, if any. The interpreter caches a few such ranges per launch, so that
    /// most accesses need no call at all. Returning `None` (the default) makes every
    /// access call [`DeviceMemory::accessible`].
    fn region(&self, addr: u64) -> Option<(u64, u64)> {
        let _ = addr;
        None
    }

    /// `cudaGraphSetConditional(handle, value)` from device code: sets the value of
    /// a conditional node's handle; `false` if `handle` is not a live handle (the
    /// launch then fails with [`LaunchError::IllegalAddress`]). The default knows
    /// no handles.
    fn set_conditional(&self, handle: u64, value: u32) -> bool {
        let _ = (handle, value);
        false
    }

    /// Told of a memory access that stops the launch (out of bounds, misaligned, a
    /// store to the parameters), before [`launch`] returns its error: the hook of
    /// softcuda's sanitizer. Called only on that failure path, never per access,
    /// and only when [`DeviceMemory::checks`] includes [`CHECK_FAULT`] (which runs
    /// the launch one thread at a time, so that the fault has a thread). The
    /// default does nothing.
    fn fault(&self, fault: &Fault<'_>) {
        let _ = fault;
    }

    /// The sanitizer checks the interpreter makes in this launch ([`CHECK_SYNC`]),
    /// asked once when the launch starts. The default: none.
    fn checks(&self) -> u8 {
        0
    }

    /// Told of a synchronisation error ([`SyncFault`]) found by a check
    /// [`DeviceMemory::checks`] asked for; the launch goes on. The default does
    /// nothing.
    fn sync_fault(&self, fault: &SyncFault<'_>) {
        let _ = fault;
    }

    /// With [`CHECK_INIT`] or [`CHECK_GLOBAL`]: whether every byte of
    /// `[addr, addr+len)` (global memory a kernel is about to load) has been written
    /// since it was allocated. The default: yes.
    fn initialized(&self, addr: u64, len: u64) -> bool {
        let _ = (addr, len);
        true
    }

    /// With [`CHECK_INIT`] or [`CHECK_GLOBAL`]: a kernel stored to (or made an atomic on)
    /// `[addr, addr+len)` of global memory. The default does nothing.
    fn written(&self, addr: u64, len: u64) {
        let _ = (addr, len);
    }

    /// With [`CHECK_INIT`]: a kernel loaded bytes [`DeviceMemory::initialized`]
    /// said nothing had written (`fault` describes the load); the launch goes on.
    /// The default does nothing.
    fn uninit_read(&self, fault: &Fault<'_>) {
        let _ = fault;
    }

    /// With [`CHECK_RACE`]: two accesses to the same shared memory by different
    /// threads of a block, at least one a store, with no barrier between them; the
    /// launch goes on. The default does nothing.
    fn race(&self, race: &Race<'_>) {
        let _ = race;
    }

    /// The texture object `handle` names, if it is a live one this kernel may use
    /// (`tex`, `txq`); otherwise the fetch fails with
    /// [`LaunchError::IllegalAddress`] at the handle. The default knows none.
    fn texture(&self, handle: u64) -> Option<std::sync::Arc<sampler::TexView>> {
        let _ = handle;
        None
    }

    /// The surface object `handle` names, likewise (`suld`, `sust`, `suq`).
    fn surface(&self, handle: u64) -> Option<std::sync::Arc<sampler::TexView>> {
        let _ = handle;
        None
    }
}

/// [`DeviceMemory::checks`]: shadow the block's shared memory and report hazards
/// between its threads (racecheck): one test of a flag per shared access, read once
/// per thread run.
pub const CHECK_RACE: u8 = 2;

/// The kind of a shared-memory hazard: the first access, then the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hazard {
    /// A store, then another thread's load.
    ReadAfterWrite,
    /// A load, then another thread's store.
    WriteAfterRead,
    /// A store, then another thread's store.
    WriteAfterWrite,
}

/// A shared-memory hazard found by racecheck: see [`DeviceMemory::race`].
#[derive(Debug, Clone, Copy)]
pub struct Race<'a> {
    /// The kernel launched.
    pub kernel: &'a str,
    /// `%ctaid` of the block.
    pub ctaid: [u32; 3],
    /// Which hazard.
    pub hazard: Hazard,
    /// The shared-memory address (offset in the block's shared memory) of the byte
    /// both touched.
    pub addr: u64,
    /// Bytes of the second access.
    pub size: u32,
    /// The earlier access: `%tid` and site.
    pub first: ([u32; 3], Site<'a>),
    /// The later access: `%tid` and site.
    pub second: ([u32; 3], Site<'a>),
}

/// [`DeviceMemory::checks`]: check barriers and warp-synchronous member masks
/// (synccheck), at each barrier release and collective: nothing per instruction.
pub const CHECK_SYNC: u8 = 4;

/// [`DeviceMemory::checks`]: track which global memory kernels write and check
/// their loads against it (initcheck): one test of a flag per global access, read
/// once per thread run.
pub const CHECK_INIT: u8 = 8;

/// [`DeviceMemory::checks`]: tell the driver of every global load
/// ([`DeviceMemory::initialized`]), store and atomic ([`DeviceMemory::written`]),
/// as [`CHECK_INIT`] does (softcuda's streamcheck gathers a kernel's accesses so).
pub const CHECK_GLOBAL: u8 = 32;

/// [`DeviceMemory::checks`]: describe every faulting access to
/// [`DeviceMemory::fault`] (memcheck). Nothing per access: the interpreter runs
/// the launch one thread at a time, so a fault is described from its thread.
pub const CHECK_FAULT: u8 = 1;

/// Where in the code: function, operation index from its start, PTX line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Site<'a> {
    /// The function (the kernel, or a `.func` it called).
    pub function: &'a str,
    /// The operation's index from the start of `function`.
    pub offset: u32,
    /// Its line in the PTX text.
    pub line: u32,
    /// The source file and line of the PTX's `.loc` in force there, if it has one.
    pub loc: Option<(&'a str, u32)>,
}

/// What a synchronisation error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncError<'a> {
    /// A block-wide barrier (`bar.sync`/`barrier.sync` without a thread count)
    /// released with only part of the block: `exited` threads ended without
    /// reaching it, and/or the waiting threads wait at two different instructions
    /// (`other`: the second).
    DivergentBarrier {
        /// The barrier's number.
        barrier: u32,
        /// Threads that reached it.
        waiting: u32,
        /// Threads in the block.
        threads: u32,
        /// Threads that had exited.
        exited: u32,
        /// Another instruction some threads wait at for the same barrier.
        other: Option<Site<'a>>,
    },
    /// A warp-synchronous instruction whose member mask names lanes that have
    /// exited or that the warp does not have.
    BadMask {
        /// The instruction (`shfl.sync`, `vote.sync`, `bar.warp.sync`, ...).
        op: &'static str,
        /// The member mask.
        mask: u32,
        /// The lanes it names that have exited.
        exited: u32,
        /// The lanes it names that the warp does not have (a partial last warp).
        missing: u32,
    },
}

/// A synchronisation error found by synccheck: see [`DeviceMemory::sync_fault`].
#[derive(Debug, Clone, Copy)]
pub struct SyncFault<'a> {
    /// The kernel launched.
    pub kernel: &'a str,
    /// Where (the first waiting thread's instruction).
    pub site: Site<'a>,
    /// `%tid` of the first thread concerned.
    pub tid: [u32; 3],
    /// `%ctaid` of its block.
    pub ctaid: [u32; 3],
    /// What is wrong.
    pub error: SyncError<'a>,
}

/// What a faulting access did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessKind {
    /// A load (`ld`, or device `printf` reading its arguments).
    Read,
    /// A store (`st`).
    Write,
    /// A read-modify-write (`atom`, `red`).
    Atomic,
}

/// The state space a faulting access went to (generic addresses decoded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessSpace {
    /// Global (device) memory, or any address outside the other windows.
    Global,
    /// `.const` memory.
    Const,
    /// The block's shared memory (or a cluster peer's).
    Shared,
    /// The thread's local memory.
    Local,
    /// The kernel parameters.
    Param,
    /// A texture object (`addr` is the handle): a handle that names none, or one
    /// whose array was destroyed.
    Texture,
    /// A surface object (`addr` is the handle): as for textures, or an access
    /// out of range with `.trap`.
    Surface,
}

/// A memory access that stopped a launch, with where it happened: see
/// [`DeviceMemory::fault`].
#[derive(Debug, Clone, Copy)]
pub struct Fault<'a> {
    /// The kernel launched.
    pub kernel: &'a str,
    /// The function running (the kernel, or a `.func` it called).
    pub function: &'a str,
    /// The faulting operation's index from the start of `function`.
    pub offset: u32,
    /// Its line in the PTX text.
    pub line: u32,
    /// The source file and line of the PTX's `.loc` in force there, if it has one.
    pub loc: Option<(&'a str, u32)>,
    /// `%tid` of the thread.
    pub tid: [u32; 3],
    /// `%ctaid` of its block.
    pub ctaid: [u32; 3],
    /// Load, store or atomic.
    pub kind: AccessKind,
    /// Where it went.
    pub space: AccessSpace,
    /// Bytes accessed.
    pub size: u32,
    /// The address as the kernel computed it (generic or in its space).
    pub addr: u64,
    /// The offset inside the space's window (the address itself for global memory).
    pub offset_in_space: u64,
    /// Bytes of that space the thread has (shared: the block's static + dynamic
    /// size; local: its stack; parameters: the buffer; 0 for global memory).
    pub space_len: u64,
    /// Whether the access was misaligned (the address not a multiple of its size).
    pub misaligned: bool,
}

/// Why a launch failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaunchError {
    /// An access outside accessible memory (global, shared, local or parameter).
    IllegalAddress {
        /// The address as the kernel computed it (generic or in its space).
        addr: u64,
        /// The access size in bytes.
        len: u64,
    },
    /// An access not aligned to its size.
    MisalignedAddress {
        /// The address as the kernel computed it.
        addr: u64,
    },
    /// Execution reached something it cannot do (for example a barrier that can
    /// never complete); the text says what and where.
    IllegalInstruction(String),
    /// The kernel executed `trap`.
    Trap,
    /// The launch needs more than the device has (threads, shared memory, stack).
    OutOfResources(String),
    /// A bad argument (block or grid shape, parameter buffer, global addresses).
    InvalidValue(String),
}

impl std::fmt::Display for LaunchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LaunchError::IllegalAddress { addr, len } => {
                write!(f, "illegal address: {len}-byte access at {addr:#x}")
            }
            LaunchError::MisalignedAddress { addr } => write!(f, "misaligned address {addr:#x}"),
            LaunchError::IllegalInstruction(s) => write!(f, "illegal instruction: {s}"),
            LaunchError::Trap => write!(f, "trap instruction executed"),
            LaunchError::OutOfResources(s) => write!(f, "out of resources: {s}"),
            LaunchError::InvalidValue(s) => write!(f, "invalid value: {s}"),
        }
    }
}

impl std::error::Error for LaunchError {}
