//! Errors: every `CUresult` of the 12.9 and 13.x headers, the driver library's load
//! failures, and functions the loaded driver does not provide.
//!
//! [`CudaError`] is the one error type of the crate. A driver failure keeps its
//! [`CUresult`] — the value, unknown codes included — so it can be matched
//! (`CudaError::Driver(CUresult::CUDA_ERROR_NO_DEVICE)`) and classified:
//! [`CUresult::is_sticky`] says the context (and the process) can no longer be used,
//! [`CUresult::is_usage_error`] says the call was wrong and nothing else is harmed.
//! Names are those of `cuGetErrorName`; messages those of `cuGetErrorString`
//! wherever the 535 driver has one (`tests/real_driver.rs` checks both), our own
//! otherwise.
//!
//! Every error type (`CudaError`, `LoadError`, and `NvmlError` with the `multi-gpu`
//! feature) derives `Error` and `Display` with `thiserror`; `CUresult`'s are written
//! here by hand (`sys` mirrors the C ABI and uses nothing above it). A driver code
//! is an error of its own; an error caused by one (`JitFailed`, `ContextPoisoned`,
//! `LoadError::VersionQuery`) gives it as its `source`, and `CudaError::Load` is its
//! `LoadError`, shown as it is (`#[error(transparent)]`, `From` for `?`).

mod messages;

use crate::sys::CUresult;
use crate::version::DriverVersion;
use core::fmt;

/// The crate's error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CudaError {
    /// The driver returned this code. A sticky code's message says the context is
    /// unusable.
    #[error("{0}{note}", note = sticky_note(*.0))]
    Driver(CUresult),
    /// The loaded driver does not provide this function at the ABI the crate binds.
    #[error(
        "{function} is not available from the loaded CUDA driver (its ABI needs driver {needs} or newer)"
    )]
    NotSupported {
        /// The function (table field) asked for, e.g. `cuGraphAddNode`.
        function: &'static str,
        /// The CUDA version whose ABI the crate binds for it.
        needs: DriverVersion,
    },
    /// The driver library could not be loaded.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A context is already current on this thread — a root binding of this crate,
    /// or a context other code (another copy of the crate, the CUDA runtime, another
    /// library) left current; nest with `CurrentContext::push` instead, or have that
    /// code pop its context.
    #[error(
        "a context is already current on this thread (a binding, or a context other code left current): nest with CurrentContext::push instead"
    )]
    ContextAlreadyBound,
    /// The context current on this thread is not the binding's: code outside this
    /// crate changed the driver's per-thread context stack during the binding.
    #[error(
        "the current context ({found:#x}) is not the binding's ({expected:#x}): other code changed this thread's context stack during the binding"
    )]
    ContextMismatch {
        /// The binding's context (the driver's handle, as an address).
        expected: usize,
        /// The context found current (0: none).
        found: usize,
    },
    /// A context (or object) of another `Driver` was passed: two drivers' handles
    /// mean nothing to each other.
    #[error("the context belongs to another CUDA driver than the binding's")]
    ForeignDriver,
    /// A [`FunctionKey`](crate::module::FunctionKey) or
    /// [`KernelKey`](crate::library::KernelKey) given to another module or library
    /// than the one it was declared in.
    #[error("the kernel key was declared in another module or library than the one asked")]
    ForeignKey,
    /// A graph node handle used with a graph it does not belong to (another graph, or
    /// one cloned before the node was added).
    #[error("the node (#{index}) belongs to another graph")]
    ForeignGraphNode {
        /// The node's index in the graph that made it.
        index: usize,
    },
    /// `cuGraphExecUpdate` refused the new graph: the reason the driver gave, and the
    /// node it named (its index in the new graph), if any.
    #[error("the executable graph cannot take this update: {reason:?}{at}", at = AtNode(*node))]
    GraphUpdate {
        /// The driver's reason (`CUgraphExecUpdateResultInfo::result`).
        reason: crate::sys::CUgraphExecUpdateResult,
        /// The offending node of the new graph, by index, when the driver named one.
        node: Option<usize>,
    },
    /// Memory a graph allocates ([`GraphMemory`](crate::graph::GraphMemory)) used
    /// against the graph's order: the allocation (by index) and the rule broken.
    #[error("graph allocation #{allocation}: {rule}")]
    GraphMemory {
        /// The allocation's index among its graph's allocations.
        allocation: usize,
        /// The rule broken.
        rule: &'static str,
    },
    /// A buffer a graph owns ([`GraphBuffer`](crate::graph::GraphBuffer)) used outside
    /// its graph, or a graph that owns buffers cloned, embedded or used as an update:
    /// the buffer (by index, when one is concerned) and the rule broken.
    #[error("graph buffer{at}: {rule}", at = match buffer { Some(i) => format!(" #{i}"), None => String::new() })]
    GraphBuffer {
        /// The buffer's index among its graph's buffers, when one is concerned.
        buffer: Option<usize>,
        /// The rule broken.
        rule: &'static str,
    },
    /// A conditional node's handle used outside the graph that owns it (and that
    /// graph's conditional bodies).
    #[error("the condition belongs to another graph")]
    ForeignCondition,
    /// A capture or fork refused before it began, or discarded: why.
    #[error("capture refused: {0}")]
    CaptureRefused(&'static str),
    /// A graph with a node that writes host memory cannot be cloned or embedded as a
    /// child: two copies could write the same exclusively borrowed memory at once.
    #[error("a graph that writes host memory cannot be cloned or embedded as a child")]
    GraphCopyRefused,
    /// A stream that should be capturing is not (the driver accepted the capture but
    /// reports another status): work through the capture would run instead.
    #[error(
        "the stream is not capturing (status {status:?}): nothing is queued through the capture"
    )]
    CaptureNotActive {
        /// The status the driver reported.
        status: crate::sys::CUstreamCaptureStatus,
    },
    /// A path the driver cannot be given (it holds a NUL byte).
    #[error("the path {path:?} cannot be passed to the driver: {reason}")]
    InvalidPath {
        /// The path.
        path: std::path::PathBuf,
        /// Why.
        reason: &'static str,
    },
    /// A driver call from inside a host callback, which CUDA forbids (it can hang).
    #[error("CUDA forbids driver calls inside a host callback; none is made there")]
    InHostCallback,
    /// Stream-ordered memory (a [`StreamBuffer`](crate::pool::StreamBuffer) or a view of
    /// one) used on a stream other than the one it was allocated on, whose free would
    /// not wait for that work, or by a graph's node ([`crate::pool`]'s rule).
    #[error("{}a stream-ordered buffer is used only by work queued on the stream it was allocated on, never on another stream or by a graph node: its allocation and free are ordered with that stream's work alone (to share its data, copy it into a DeviceBuffer)", launch_argument(*argument))]
    WrongStream {
        /// The launch argument (from 0), when the memory was one.
        argument: Option<usize>,
    },
    /// A safe launch whose [`Len`](crate::launch::Len) argument is negative.
    #[error(
        "launch argument {parameter} is the launch's length, {value}: a length cannot be negative"
    )]
    NegativeLength {
        /// The `Len` argument (from 0).
        parameter: usize,
        /// Its value.
        value: i64,
    },
    /// A safe launch bounded by a [`Len<I>`](crate::launch::Len) with more threads
    /// (grid × block, every dimension) than `I` can count: a kernel that computes a
    /// thread's linear index in `I` (`int i = blockIdx.x * blockDim.x + threadIdx.x`)
    /// would wrap it and pass its bound check below zero.
    #[error(
        "launch argument {parameter} is the launch's length, whose type counts at most {max} threads, but the launch has {threads}: use a smaller grid, or a wider length type (`Len<i64>`, `Len<u64>`) in a kernel whose index is as wide"
    )]
    TooManyThreadsForLen {
        /// The `Len` argument (from 0).
        parameter: usize,
        /// The launch's threads: grid × block.
        threads: u128,
        /// The largest value of the `Len`'s type.
        max: u64,
    },
    /// A safe launch whose raw pointer argument ([`Ptr`](crate::launch::Ptr),
    /// [`PtrMut`](crate::launch::PtrMut)) is a view shorter than the launch's
    /// [`Len`](crate::launch::Len) value: the kernel may touch every element below it.
    #[error(
        "launch argument {parameter} is a view of {len} elements, fewer than the launch's length {value}"
    )]
    ViewTooShort {
        /// The pointer argument (from 0).
        parameter: usize,
        /// Its view's length in elements.
        len: usize,
        /// The `Len` argument's value.
        value: u64,
    },
    /// A copy between host and device (or two buffers) of different lengths.
    #[error(
        "copy of mismatched lengths: destination holds {destination_len} elements, source {source_len}"
    )]
    LengthMismatch {
        /// Elements in the destination.
        destination_len: usize,
        /// Elements in the source.
        source_len: usize,
    },
    /// A range or split point outside a view of device memory.
    #[error("range {start}..{end} is out of bounds for {len} elements")]
    OutOfRange {
        /// The first element asked for.
        start: usize,
        /// One past the last element asked for.
        end: usize,
        /// The elements there are.
        len: usize,
    },
    /// Bytes of an [`AddressRange`](crate::vmm::AddressRange) that a view or an unmap
    /// needs mapped are not (nothing mapped there, or a gap).
    #[error("bytes {start}..{end} of the address range are not mapped")]
    NotMapped {
        /// The first byte asked for.
        start: usize,
        /// One past the last byte asked for.
        end: usize,
    },
    /// A mapping into an [`AddressRange`](crate::vmm::AddressRange), or a buffer of
    /// [`ExternalMemory`](crate::external::ExternalMemory), would overlap memory
    /// mapped there already; or another process's allocation is open here already
    /// ([`IpcMemory`](crate::ipc::IpcMemory); its device addresses).
    #[error("bytes {start}..{end} are mapped already")]
    AlreadyMapped {
        /// The first byte of the mapping in the way.
        start: usize,
        /// One past its last byte.
        end: usize,
    },
    /// Bytes outside an object: a mapping past an address range's end, a buffer past
    /// the end of external memory.
    #[error("bytes {start}..{end} are out of bounds for {len} bytes")]
    BytesOutOfRange {
        /// The first byte asked for.
        start: u64,
        /// One past the last byte asked for.
        end: u64,
        /// The bytes there are.
        len: u64,
    },
    /// A module image that is malformed: the reason says how.
    #[error("invalid module image: {0}")]
    InvalidImage(&'static str),
    /// A file could not be read.
    #[error("could not read {}: {kind}", path.display())]
    ReadFile {
        /// The file.
        path: std::path::PathBuf,
        /// What went wrong.
        kind: std::io::ErrorKind,
    },
    /// The JIT compiler refused a module; `log` holds its diagnostics.
    #[error("the JIT compiler refused the module ({source}):\n{log}")]
    JitFailed {
        /// The diagnostics.
        log: crate::jit_log::JitLog,
        /// The driver's code (`CUDA_ERROR_INVALID_PTX`, ...), the error's `source`.
        source: CUresult,
    },
    /// A module variable's size differs from the type asked for.
    #[error("module variable `{name}` holds {found} bytes, but the type asked for has {expected}")]
    GlobalSizeMismatch {
        /// The variable.
        name: String,
        /// `size_of` of the type asked for.
        expected: usize,
        /// The variable's size.
        found: usize,
    },
    /// A kernel's declared signature differs from its parameters.
    #[error(
        "kernel `{function}`, parameter {parameter}: declared {expected}, but the kernel has {found}{hint}"
    )]
    SignatureMismatch {
        /// The kernel.
        function: String,
        /// The index of the first parameter that differs.
        parameter: usize,
        /// What the declaration says.
        expected: String,
        /// What the kernel has.
        found: String,
        /// What the sizes suggest, when they suggest something (a slice `In`/`Out`
        /// declared for a raw pointer, or the reverse), else empty: starts with `; `.
        hint: &'static str,
    },
    /// A kernel or variable the module or library does not have (the driver's
    /// `CUDA_ERROR_NOT_FOUND`, which [`code`](CudaError::code) gives), with the name
    /// asked for and the names of that kind it has, where they are known (kernels of
    /// a module loaded from PTX text, or of a library on a driver 12.4+).
    #[error("no {what} named `{name}` in the {place}{}", KnownNames(known))]
    NotFound {
        /// `"kernel"` or `"variable"`.
        what: &'static str,
        /// The name asked for.
        name: String,
        /// `"module"` or `"library"`.
        place: &'static str,
        /// The names of that kind it has, if known (else empty).
        known: Vec<String>,
    },
    /// A launch's grid, block or dynamic shared memory outside what the device (or
    /// the function) allows, or a grid or block dimension of 0: found before the
    /// driver call where the limit is every device's (grid and block shapes), else
    /// from the device's and the function's limits once the driver refused it.
    #[error("{}", LaunchLimitText(*what, *value, *limit, limit_of))]
    LaunchLimit {
        /// The dimension at fault.
        what: LaunchDimension,
        /// What the launch asked for.
        value: u64,
        /// The most it may be (for a dimension of 0: at least 1).
        limit: u64,
        /// Whose limit it is: `"every CUDA device"`, `"the device's
        /// MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"`, `"the function's MAX_THREADS_PER_BLOCK"`, ...
        limit_of: &'static str,
    },
    /// A tensor map's parameter breaks a rule of `cuTensorMapEncode*` or
    /// `cuTensorMapReplaceAddress` (or the tensor does not fit in the memory it
    /// describes); nothing was encoded or changed.
    #[error("tensor map parameter `{parameter}`: {rule}")]
    InvalidTensorMap {
        /// The C parameter (`boxDim`, `globalStrides`, ...), `device`, or
        /// `TensorLayout::KIND` (a constructor of another kind than the layout's).
        parameter: &'static str,
        /// The rule, with the values that break it.
        rule: String,
    },
    /// The device lacks a feature the call needs (a device attribute says so).
    #[error("the device lacks {feature}")]
    DeviceLacks {
        /// The feature (the device attribute's meaning).
        feature: &'static str,
    },
    /// An argument the call cannot accept: which parameter, and the rule it breaks.
    #[error("invalid `{parameter}`: {rule}")]
    InvalidArgument {
        /// The parameter.
        parameter: &'static str,
        /// The rule broken.
        rule: &'static str,
    },
    /// A launch configuration that breaks one of the driver's rules, found before
    /// the driver is called ([`crate::launch_config`]).
    #[error("invalid launch configuration, {parameter}: {rule}")]
    InvalidLaunch {
        /// The setting at fault (`grid`, `block`, `cluster`, `cooperative`, ...).
        parameter: &'static str,
        /// The rule it breaks, with the values involved.
        rule: String,
    },
    /// A cooperative launch whose grid cannot be resident on the device at once.
    #[error(
        "a cooperative grid of {blocks} blocks cannot be resident at once: the device holds at most {max} such blocks"
    )]
    CooperativeGridTooLarge {
        /// Blocks in the grid.
        blocks: u64,
        /// Resident blocks per multiprocessor × multiprocessors.
        max: u64,
    },
    /// The context was not bound: a binding of this handle reported a sticky error
    /// (`code`), which leaves the context unusable ([`crate::context`]'s docs).
    #[error(
        "the context is unusable: a binding of it reported {code}; drop it and create a new context"
    )]
    ContextPoisoned {
        /// The sticky error (also the error's `source`).
        #[source]
        code: CUresult,
    },
    /// A kernel-visible view of a `PeerGroup` buffer (the `multi-gpu` feature) was
    /// asked for in a context without peer access to the buffer's owner.
    #[error(
        "device {accessor} has no peer access to device {owner}'s memory: enable it with PeerGroup::enable_peer_access first"
    )]
    PeerAccessNotEnabled {
        /// The ordinal of the device whose context wanted the view.
        accessor: usize,
        /// The ordinal of the device owning the memory.
        owner: usize,
    },
    /// Peer access cannot be disabled while a `PeerGroup` binding (the `multi-gpu`
    /// feature) is active in the process: its kernels may rely on it.
    #[error(
        "peer access cannot be disabled while a PeerGroup binding is active (its kernels may be using it)"
    )]
    PeerGroupsLive,
}

/// What a sticky code's message adds.
/// `"launch argument N: "` for a launch argument, nothing otherwise.
fn launch_argument(argument: Option<usize>) -> String {
    argument.map_or_else(String::new, |i| format!("launch argument {i}: "))
}

fn sticky_note(code: CUresult) -> &'static str {
    if code.is_sticky() {
        " (sticky: the context is unusable from now on; drop it and create a new context)"
    } else {
        ""
    }
}

/// One dimension of a launch (see [`CudaError::LaunchLimit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LaunchDimension {
    /// The grid's x dimension (blocks).
    GridX,
    /// The grid's y dimension.
    GridY,
    /// The grid's z dimension.
    GridZ,
    /// The block's x dimension (threads).
    BlockX,
    /// The block's y dimension.
    BlockY,
    /// The block's z dimension.
    BlockZ,
    /// Threads per block (x × y × z).
    BlockThreads,
    /// Dynamic shared memory, bytes.
    SharedBytes,
}

impl fmt::Display for LaunchDimension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::GridX => "grid.x",
            Self::GridY => "grid.y",
            Self::GridZ => "grid.z",
            Self::BlockX => "block.x",
            Self::BlockY => "block.y",
            Self::BlockZ => "block.z",
            Self::BlockThreads => "threads per block",
            Self::SharedBytes => "dynamic shared memory (bytes)",
        })
    }
}

/// The message of [`CudaError::LaunchLimit`].
struct LaunchLimitText<'a>(LaunchDimension, u64, u64, &'a str);

impl fmt::Display for LaunchLimitText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self(what, value, limit, limit_of) = self;
        if *value == 0 {
            write!(
                f,
                "launch {what} is 0: every grid and block dimension must be at least 1"
            )
        } else {
            write!(
                f,
                "launch {what} is {value}, above the limit of {limit} ({limit_of})"
            )
        }
    }
}

/// `; it has `a`, `b`` when names are known, nothing otherwise.
struct KnownNames<'a>(&'a [String]);

impl fmt::Display for KnownNames<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, n) in self.0.iter().enumerate() {
            f.write_str(if i == 0 { "; it has " } else { ", " })?;
            write!(f, "`{n}`")?;
        }
        Ok(())
    }
}

/// ` at node #n` when the driver named a node, nothing otherwise.
struct AtNode(Option<usize>);

impl fmt::Display for AtNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(n) => write!(f, " at node #{n}"),
            None => Ok(()),
        }
    }
}

impl CudaError {
    /// The driver's code, if this is a driver failure (or a context refused for one).
    pub fn code(&self) -> Option<CUresult> {
        match self {
            Self::Driver(code) | Self::ContextPoisoned { code } => Some(*code),
            Self::NotFound { .. } => Some(CUresult::CUDA_ERROR_NOT_FOUND),
            _ => None,
        }
    }

    /// Whether this failure left the context unusable (see [`CUresult::is_sticky`]).
    pub fn is_sticky(&self) -> bool {
        self.code().is_some_and(CUresult::is_sticky)
    }

    /// Whether the driver found no CUDA device.
    pub fn is_no_device(&self) -> bool {
        self.code() == Some(CUresult::CUDA_ERROR_NO_DEVICE)
    }
}

/// [`CudaError::InHostCallback`] on a thread running a host callback: for the entry
/// points that must refuse before anything else (a binding, which would otherwise
/// wait for a lock or report a poisoned context first).
pub(crate) fn refuse_in_host_callback() -> Result<(), CudaError> {
    if crate::activity::in_host_callback() {
        Err(CudaError::InHostCallback)
    } else {
        Ok(())
    }
}

/// The error for a failure code the driver returned (not `CUDA_SUCCESS`): notes a
/// sticky one for the binding in progress ([`crate::context`]'s docs). Every code
/// that comes from the driver becomes an error through here or [`check`].
#[cold]
#[inline(never)]
pub(crate) fn driver_error(code: CUresult) -> CudaError {
    crate::activity::note_failure(code);
    CudaError::Driver(code)
}

/// `Ok(())` for `CUDA_SUCCESS`, the typed error otherwise. A sticky code checked
/// inside a binding marks that binding's context as unusable
/// ([`crate::context`]'s docs), as the crate's own calls do.
#[inline]
pub fn check(code: CUresult) -> Result<(), CudaError> {
    if code == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(driver_error(code))
    }
}

impl CUresult {
    /// What `cuGetErrorString` says of this code (our own words where the 535 driver
    /// has none); `None` for a code no header we know declares.
    pub fn message(self) -> Option<&'static str> {
        messages::MESSAGES
            .iter()
            .find(|(c, _)| *c == self)
            .map(|(_, m)| *m)
    }

    /// Whether the driver documents this error as leaving the process in an
    /// inconsistent state: the context is unusable and every later call fails the
    /// same way until the process restarts (illegal address, launch failure, ...).
    pub fn is_sticky(self) -> bool {
        messages::STICKY.contains(&self)
    }

    /// Whether this error says only that the call was wrong (a bad value, handle,
    /// context or state): nothing was changed and the context remains usable.
    pub fn is_usage_error(self) -> bool {
        matches!(
            self,
            Self::CUDA_ERROR_INVALID_VALUE
                | Self::CUDA_ERROR_NOT_INITIALIZED
                | Self::CUDA_ERROR_INVALID_DEVICE
                | Self::CUDA_ERROR_INVALID_CONTEXT
                | Self::CUDA_ERROR_CONTEXT_ALREADY_CURRENT
                | Self::CUDA_ERROR_INVALID_HANDLE
                | Self::CUDA_ERROR_ILLEGAL_STATE
                | Self::CUDA_ERROR_NOT_FOUND
                | Self::CUDA_ERROR_NOT_PERMITTED
                | Self::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
                | Self::CUDA_ERROR_PEER_ACCESS_NOT_ENABLED
                | Self::CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE
                | Self::CUDA_ERROR_CONTEXT_ALREADY_IN_USE
                | Self::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
                | Self::CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED
                | Self::CUDA_ERROR_ALREADY_MAPPED
                | Self::CUDA_ERROR_NOT_MAPPED
                | Self::CUDA_ERROR_ALREADY_ACQUIRED
                | Self::CUDA_ERROR_NOT_MAPPED_AS_ARRAY
                | Self::CUDA_ERROR_NOT_MAPPED_AS_POINTER
                | Self::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
                | Self::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
                | Self::CUDA_ERROR_STREAM_CAPTURE_MERGE
                | Self::CUDA_ERROR_STREAM_CAPTURE_UNMATCHED
                | Self::CUDA_ERROR_STREAM_CAPTURE_UNJOINED
                | Self::CUDA_ERROR_STREAM_CAPTURE_ISOLATION
                | Self::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
                | Self::CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD
                | Self::CUDA_ERROR_CAPTURED_EVENT
        )
    }
}

/// A code's text, `CUresult`'s `Display`: `CUDA_ERROR_NO_DEVICE (100): no
/// CUDA-capable device is detected` — the names of `cuGetErrorName`, the messages of
/// `cuGetErrorString` — or `unknown CUDA error code 123456` for a code no header we
/// know declares. Written here, not in `sys`, which mirrors the C ABI only.
impl fmt::Display for CUresult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let code = *self;
        match (code.name(), code.message()) {
            (Some(name), Some(msg)) => write!(f, "{name} ({}): {msg}", code.0),
            _ => write!(f, "unknown CUDA error code {}", code.0),
        }
    }
}

/// A driver code is an error of its own (the `source` of the errors it causes).
impl std::error::Error for CUresult {}

/// Why the driver library could not be loaded. Every variant keeps its cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// No candidate library could be opened.
    #[error("no CUDA driver library could be loaded; tried: {}", list(tried))]
    LibraryNotFound {
        /// Every path tried, in order, with the loader's message.
        tried: Vec<LoadAttempt>,
    },
    /// The library opened, but it is not a CUDA driver: it lacks a required symbol.
    #[error("{path} is not a CUDA driver: it has no `{symbol}`")]
    NotACudaDriver {
        /// The library.
        path: String,
        /// The required symbol it lacks.
        symbol: &'static str,
    },
    /// `cuDriverGetVersion` failed: its code (also the error's `source`).
    #[error("cuDriverGetVersion failed: {0}")]
    VersionQuery(#[source] CUresult),
    /// The CUDA driver does not exist on this platform.
    #[error("the CUDA driver is not available on {0}")]
    UnsupportedPlatform(&'static str),
    /// The per-thread default stream was asked of a driver without `cuGetProcAddress`.
    #[error(
        "the per-thread default stream needs cuGetProcAddress (driver 11.3 or newer), which {path} lacks"
    )]
    PerThreadNeedsProcAddress {
        /// The library.
        path: String,
    },
    /// An environment variable names a choice this build cannot honour.
    #[error("{variable}={value}: {reason}")]
    Environment {
        /// The variable.
        variable: &'static str,
        /// Its value.
        value: String,
        /// Why it cannot be honoured.
        reason: &'static str,
    },
    /// The process-wide driver was already loaded with other options.
    #[error("the process-wide driver is already loaded, with other options")]
    AlreadyLoaded,
    /// A load asked for inside a host callback: loading calls the driver
    /// (`cuDriverGetVersion`, `cuGetProcAddress`), which CUDA forbids there.
    #[error("CUDA forbids driver calls inside a host callback; no driver is loaded there")]
    InHostCallback,
}

/// One library the loader tried to open, and why it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadAttempt {
    /// The path or name given to the dynamic loader.
    pub path: String,
    /// The dynamic loader's message.
    pub error: String,
}

fn list(tried: &[LoadAttempt]) -> String {
    let parts: Vec<String> = tried
        .iter()
        .map(|a| format!("{} ({})", a.path, a.error))
        .collect();
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_messages_cover_every_known_code() {
        for (name, code) in CUresult::KNOWN {
            assert_eq!(code.name(), Some(*name));
            let msg = code.message();
            assert!(msg.is_some_and(|m| !m.is_empty()), "{name} has no message");
        }
        // 12.9 has 100 codes; the 13.x header adds some.
        assert!(CUresult::KNOWN.len() > 100, "{}", CUresult::KNOWN.len());
    }

    #[test]
    fn faults_that_end_the_context_are_sticky() {
        // The header: "inconsistent state" / "must be terminated" / "cannot be used
        // anymore". A device-side assert is one (`Stream::scope` relies on it).
        for code in [
            CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
            CUresult::CUDA_ERROR_LAUNCH_FAILED,
            CUresult::CUDA_ERROR_HARDWARE_STACK_ERROR,
            CUresult::CUDA_ERROR_ASSERT,
        ] {
            assert!(code.is_sticky(), "{code}");
        }
        for code in [
            CUresult::CUDA_ERROR_INVALID_VALUE,
            CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
            CUresult::CUDA_ERROR_NOT_READY,
        ] {
            assert!(!code.is_sticky(), "{code}");
        }
    }

    #[test]
    fn unknown_codes_keep_their_value() {
        let e = CudaError::Driver(CUresult(123_456));
        assert_eq!(e.code(), Some(CUresult(123_456)));
        assert_eq!(e.to_string(), "unknown CUDA error code 123456");
        assert!(!e.is_sticky());
    }

    #[test]
    fn display_names_the_code_and_says_what_it_means() {
        let e = CudaError::Driver(CUresult::CUDA_ERROR_NO_DEVICE);
        assert_eq!(
            e.to_string(),
            "CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected"
        );
        assert!(e.is_no_device());
        assert_eq!(check(CUresult::CUDA_SUCCESS), Ok(()));
        assert_eq!(
            check(CUresult::CUDA_ERROR_INVALID_VALUE),
            Err(CudaError::Driver(CUresult::CUDA_ERROR_INVALID_VALUE))
        );
    }

    #[test]
    fn sticky_and_usage_errors_are_told_apart() {
        assert!(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS.is_sticky());
        assert!(CUresult::CUDA_ERROR_LAUNCH_FAILED.is_sticky());
        assert!(!CUresult::CUDA_ERROR_ILLEGAL_ADDRESS.is_usage_error());
        assert!(CUresult::CUDA_ERROR_INVALID_VALUE.is_usage_error());
        assert!(!CUresult::CUDA_ERROR_INVALID_VALUE.is_sticky());
        assert!(!CUresult::CUDA_ERROR_OUT_OF_MEMORY.is_sticky());
        for (name, code) in CUresult::KNOWN {
            assert!(!(code.is_sticky() && code.is_usage_error()), "{name}");
        }
    }

    #[test]
    fn derived_display_and_source() {
        use std::error::Error as _;
        let u = CudaError::GraphUpdate {
            reason:
                crate::sys::CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED,
            node: Some(3),
        };
        assert_eq!(
            u.to_string(),
            "the executable graph cannot take this update: CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED at node #3"
        );
        let u = CudaError::GraphUpdate {
            reason:
                crate::sys::CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED,
            node: None,
        };
        assert!(u.to_string().ends_with("TOPOLOGY_CHANGED"), "{u}");
        assert!(u.source().is_none());
        let r = CudaError::OutOfRange {
            start: 2,
            end: 9,
            len: 4,
        };
        assert_eq!(r.to_string(), "range 2..9 is out of bounds for 4 elements");
        // A driver code is the error itself: its text is the driver's, with no source.
        let e = CudaError::Driver(CUresult::CUDA_ERROR_NO_DEVICE);
        assert_eq!(
            e.to_string(),
            "CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected"
        );
        assert!(e.source().is_none());
        // Errors caused by a driver code give it as their source.
        let j = CudaError::JitFailed {
            log: crate::jit_log::JitLog::default(),
            source: CUresult::CUDA_ERROR_INVALID_PTX,
        };
        assert_eq!(
            j.source().map(|s| s.to_string()),
            Some(CUresult::CUDA_ERROR_INVALID_PTX.to_string())
        );
        let p = CudaError::ContextPoisoned {
            code: CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
        };
        assert_eq!(
            p.source().map(|s| s.to_string()),
            Some(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS.to_string())
        );
        let v = LoadError::VersionQuery(CUresult::CUDA_ERROR_NOT_INITIALIZED);
        assert_eq!(
            v.to_string(),
            format!(
                "cuDriverGetVersion failed: {}",
                CUresult::CUDA_ERROR_NOT_INITIALIZED
            )
        );
        assert_eq!(
            v.source().map(|s| s.to_string()),
            Some(CUresult::CUDA_ERROR_NOT_INITIALIZED.to_string())
        );
        // A load failure converts (`?`) and is shown as it is (transparent): its
        // message, and its own source.
        let l: CudaError = LoadError::AlreadyLoaded.into();
        assert_eq!(
            l.to_string(),
            "the process-wide driver is already loaded, with other options"
        );
        assert!(l.source().is_none());
        let l: CudaError = v.clone().into();
        assert_eq!(l.to_string(), v.to_string());
        assert_eq!(
            l.source().map(|s| s.to_string()),
            Some(CUresult::CUDA_ERROR_NOT_INITIALIZED.to_string())
        );
        let n = LoadError::LibraryNotFound {
            tried: vec![
                LoadAttempt {
                    path: "libcuda.so.1".into(),
                    error: "not found".into(),
                },
                LoadAttempt {
                    path: "libcuda.so".into(),
                    error: "nope".into(),
                },
            ],
        };
        assert_eq!(
            n.to_string(),
            "no CUDA driver library could be loaded; tried: libcuda.so.1 (not found); libcuda.so (nope)"
        );
    }

    #[test]
    fn sticky_errors_say_the_context_is_unusable() {
        let e = CudaError::Driver(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS);
        assert!(e.to_string().contains("the context is unusable"), "{e}");
        let p = CudaError::ContextPoisoned {
            code: CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
        };
        assert_eq!(p.code(), Some(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS));
        assert!(p.is_sticky());
        assert!(p.to_string().contains("create a new context"), "{p}");
        let oom = CudaError::Driver(CUresult::CUDA_ERROR_OUT_OF_MEMORY);
        assert!(!oom.to_string().contains("unusable"), "{oom}");
    }

    #[test]
    fn load_errors_list_every_path_tried() {
        let e = LoadError::LibraryNotFound {
            tried: vec![
                LoadAttempt {
                    path: "libcuda.so.1".into(),
                    error: "not found".into(),
                },
                LoadAttempt {
                    path: "libcuda.so".into(),
                    error: "also not found".into(),
                },
            ],
        };
        let s = e.to_string();
        assert!(
            s.contains("libcuda.so.1 (not found)") && s.contains("libcuda.so (also not found)"),
            "{s}"
        );
    }
}

static_assertions::assert_impl_all!(CudaError: Send, Sync, Clone, std::error::Error);
static_assertions::assert_impl_all!(LoadError: Send, Sync, Clone);
static_assertions::assert_impl_all!(LoadAttempt: Send, Sync);
