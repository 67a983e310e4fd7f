//! CUDA graphs as typestate: **Capturing → Built → Instantiated**.
//!
//! A [`Graph`] is built node by node ([`CurrentContext::create_graph`]) or by capturing
//! a stream ([`Stream::capture`](crate::stream::Stream::capture), whose closure is
//! handed a [`Capturing`] guard). [`Graph::instantiate`] consumes it into a
//! [`GraphExec`], the only state that launches — and only inside a stream scope
//! ([`AsyncScope::launch_graph`](crate::stream::AsyncScope::launch_graph)), which
//! returns once the graph has run. What each state prevents:
//!
//! - **Capturing** (CF13, CF16): the capturing stream is borrowed mutably, so it cannot
//!   be synchronised, queried or scoped until the capture ends; the guard offers only
//!   what is legal under capture. The capture ends once, when the closure that holds
//!   the guard returns: the guard cannot escape it, so nothing can leave a stream
//!   capturing behind the crate's back.
//! - **Built** (CF14, CF15): a graph has no launch; instantiating consumes it, so no
//!   node can be added to an instantiated graph.
//! - **Instantiated** (CF14, CF17): launches only inside a scope, so when it is dropped
//!   nothing of it runs.
//!
//! **Lifetimes (CF17).** A graph's `'g` is bounded by its context's binding and by
//! every buffer, view, host slice, event, function and host closure a node refers to,
//! each borrowed for as long as the graph — built or executable — lives. Device memory
//! is borrowed shared, also where a node writes it ([`GraphArg`](crate::launch::GraphArg)),
//! so that one node may write what another reads, in dependency order; that is enough
//! for the guarantee: no buffer a graph uses can be freed or written by the host while
//! the graph exists. Host memory a copy node writes is borrowed mutably, so the host can
//! neither read nor write it until the graph is dropped; host memory a node reads is
//! borrowed shared.
//!
//! **Node handles** ([`Node`], [`KernelNode`]) are an index and the identity of the
//! graph that made them; they hold no driver pointer, so a stale or foreign handle is a
//! typed error ([`CudaError::ForeignGraphNode`]), never a dangling handle in the driver.
//!
//! **Buffers a graph owns** ([`GraphBuffer`], [`Graph::add_buffer`]) are the inputs and
//! outputs of a graph replayed with new data: written and read between launches in the
//! scope's stream order, or through the executable graph between scopes.
//!
//! Memory a graph allocates as it runs ([`GraphMemory`], `add_alloc`/`add_free`) is
//! checked against the graph's order; conditional nodes (`add_conditional`, CUDA
//! 12.3+) hand out their body as a `Graph<'g, BodyOf<'p>>` borrowing the graph. Not offered yet:
//! `switch` conditionals, external semaphores, batch memory operations, node removal,
//! and stream-ordered allocation during capture (with memory pools).

mod buffers;
mod capture;
mod conditional;
mod exec;
mod memory;

pub use buffers::GraphBuffer;
pub use capture::{Branch, CaptureMode, Capturing};
pub use conditional::{ConditionalHandle, ConditionalKind};
pub use exec::GraphExec;
pub use memory::GraphMemory;

use crate::context::CurrentContext;
use crate::error::{CudaError, check};
use crate::event::{Event, EventKind};
use crate::launch::{Bounded, Dim3, GraphArgs, Signature};
use crate::loader::Driver;
use crate::memory::{DeviceCopy, DeviceRead, MemsetValue, bytes, same_len};
use crate::module::Function;
use crate::sys::{
    CUDA_HOST_NODE_PARAMS, CUDA_KERNEL_NODE_PARAMS_v2, CUDA_MEMCPY3D_v2, CUDA_MEMSET_NODE_PARAMS,
    CUcontext, CUdeviceptr, CUfunction, CUgraph, CUgraphNode, CUgraphNodeType, CUkernel,
    CUmemorytype,
};
use core::cell::{Cell, RefCell};
use core::ffi::c_void;
use core::marker::PhantomData;
use core::sync::atomic::{AtomicU64, Ordering};
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

/// A host function of a graph: called each time its node runs, possibly many times.
pub(crate) type HostNodeFn<'g> = Box<dyn Fn() + Send + Sync + 'g>;

/// What a graph keeps for its nodes while any graph or executable graph may run them
/// (shared with its conditional bodies, copied into clones, parents that embed it and
/// executable graphs updated from it): its host functions, kept alive, and the marks of
/// the memory its nodes use ([`crate::order`]), set at each launch.
#[derive(Clone, Default)]
pub(crate) struct Kept<'g> {
    fns: Vec<Arc<HostNodeFn<'g>>>,
    /// Each the mark of memory a node uses, borrowed for `'g` (as the node's memory
    /// is): valid while any graph or executable graph of `'g` lives.
    marks: Vec<*const crate::order::Mark>,
}

impl<'g> Kept<'g> {
    /// Keeps another graph's as well.
    pub(crate) fn extend(&mut self, other: Kept<'g>) {
        self.fns.extend(other.fns);
        self.note_raw(other.marks);
    }

    /// Notes the mark of memory a node uses, borrowed for `'g`.
    pub(crate) fn note(&mut self, mark: Option<&'g crate::order::Mark>) {
        if let Some(m) = mark {
            self.note_raw([m as *const _]);
        }
    }

    /// Notes marks of memory the arguments of a node use: each must be the mark of
    /// memory borrowed for `'g` (an argument tuple that outlives `'g`, whose marks lie
    /// in the memory it borrows: `ArgBytes::reach`). Each mark once, so that new
    /// arguments for the same memory, launch after launch, add nothing.
    pub(crate) fn note_raw(&mut self, marks: impl IntoIterator<Item = *const crate::order::Mark>) {
        for m in marks {
            if !self.marks.contains(&m) {
                self.marks.push(m);
            }
        }
    }

    /// Marks the memory the graph's nodes use with `stream`: a launch of it is queued
    /// there.
    pub(crate) fn mark_all(&self, stream: crate::order::StreamId) {
        for m in &self.marks {
            // SAFETY: each mark lies in memory borrowed for `'g` by the node that uses
            // it (`note`, `note_raw`); this value is kept by a graph of `'g`, alive.
            unsafe { (**m).set(stream) };
        }
    }
}

static NEXT_GRAPH: AtomicU64 = AtomicU64::new(1);

fn next_id() -> u64 {
    NEXT_GRAPH.fetch_add(1, Ordering::Relaxed)
}

/// What a [`Graph`] value stands for: a graph it owns ([`Owned`], the default), or the
/// body of a conditional node ([`BodyOf`]), which its node owns. Sealed.
pub trait Kind: kind::Sealed {}

mod kind {
    pub trait Sealed {
        /// Whether dropping the value destroys the graph.
        const OWNED: bool;
    }
}

/// A graph this value owns: it can be instantiated, cloned and embedded.
#[derive(Debug)]
pub struct Owned;
impl kind::Sealed for Owned {
    const OWNED: bool = true;
}
impl Kind for Owned {}

/// The body of a conditional node of a graph borrowed (mutably) for `'p`: built like
/// a graph, owned by its node, and unable to outlive the borrow.
#[derive(Debug)]
pub struct BodyOf<'p>(PhantomData<&'p mut ()>);
impl kind::Sealed for BodyOf<'_> {
    const OWNED: bool = false;
}
impl Kind for BodyOf<'_> {}

/// A built graph of the current context: nodes and their dependencies. Not `Send`.
/// `Graph<'g>` owns its graph; `Graph<'g, BodyOf<'p>>` is a conditional node's body
/// ([`add_conditional`](Graph::add_conditional)).
///
/// Made empty by [`CurrentContext::create_graph`] and built node by node, or by
/// capturing a stream ([`Stream::capture`](crate::stream::Stream::capture)). Only its
/// instantiation, a [`GraphExec`], launches — inside a
/// [`Stream::scope`](crate::stream::Stream::scope):
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let driver = oxicuda_driver::driver_with(oxicuda_driver::DriverOptions::software())?;
/// # driver.init()?;
/// # let ctx = oxicuda_driver::Context::new(&driver.best_device()?, oxicuda_driver::sys::CUctx_flags::empty())?;
/// use oxicuda_driver::launch::{In, Out};
/// use oxicuda_driver::module::JitOptions;
/// use oxicuda_driver::sys::CUstream_flags;
/// use oxicuda_driver::CudaError;
///
/// ctx.bind(|cur| -> Result<(), CudaError> {
///     let module = cur.load_ptx(include_str!("../kernels/slices.ptx"), &JitOptions::default())?;
///     // SAFETY: kernels/slices.cu's saxpy reads `x` and reads and writes `y`, each only
///     // below the length the launch passes with it.
///     let saxpy = unsafe { module.function::<(f32, In<f32>, Out<f32>)>("saxpy")? };
///     let x = cur.alloc_from(&[1.0f32; 64])?;
///     let y = cur.alloc::<f32>(64)?;
///     let mut graph = cur.create_graph()?;
///     let fill = graph.add_fill(&[], &y, 0.0f32)?; // y = 0
///     graph.add_kernel(&[fill], &saxpy, 1, 64, 0, (2.0f32, &x, &y))?; // then y = 2x + y
///     let exec = graph.instantiate()?;
///     let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
///     stream.scope(|s| s.launch_graph(&exec))??; // returns once the graph has run
///     drop(exec); // ends the graph's borrows of `x` and `y`
///     assert!(y.to_vec()?.iter().all(|v| *v == 2.0));
///     Ok(())
/// })??;
/// # Ok(())
/// # }
/// ```
pub struct Graph<'g, K: Kind = Owned> {
    pub(crate) driver: &'static Driver,
    pub(crate) raw: CUgraph,
    pub(crate) id: u64,
    /// The driver's nodes, in the order they were added: a [`Node`] is an index here.
    pub(crate) nodes: Vec<CUgraphNode>,
    /// The dependencies of each node added through this value, by index.
    pub(crate) preds: Vec<Vec<usize>>,
    /// Memory the graph allocates when it runs ([`GraphMemory`]).
    pub(crate) allocations: Vec<memory::Allocation>,
    /// Buffers the graph owns ([`GraphBuffer`]), freed with it.
    pub(crate) buffers: Vec<Box<dyn buffers::OwnedBuffer + 'g>>,
    /// Host functions its nodes call, shared with its conditional bodies (whose nodes
    /// the graph runs), kept while any graph or executable graph may call them.
    pub(crate) kept: Rc<RefCell<Kept<'g>>>,
    /// Whether a node writes host memory: such a graph cannot be cloned or embedded
    /// (two copies would write the same `&mut` host memory, possibly at once).
    pub(crate) writes_host: Rc<Cell<bool>>,
    /// Whether the graph (or a body or child graph in it, at any depth) has a
    /// conditional node: its handles belong to this graph, so it is not an update for
    /// another executable graph.
    pub(crate) has_conditional: Rc<Cell<bool>>,
    /// The graph this one was cloned from, if any.
    pub(crate) cloned_from: Option<u64>,
    /// For a conditional body: the graphs it lies in, outermost first (a conditional
    /// handle of any of them may be set by its kernels).
    pub(crate) ancestors: Vec<u64>,
    pub(crate) _tied: PhantomData<(&'g (), *const (), K)>,
}

impl<K: Kind> core::fmt::Debug for Graph<'_, K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Graph")
            .field("raw", &self.raw)
            .field("owned", &<K as kind::Sealed>::OWNED)
            .finish()
    }
}

/// A node of one graph: its index and that graph's identity. Holds no driver handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Node {
    graph: u64,
    index: usize,
}

impl Node {
    /// Its index among its graph's nodes, in the order they were added.
    pub fn index(&self) -> usize {
        self.index
    }
}

/// A kernel node with its signature `S`, so that an executable graph can be given new
/// arguments for it, checked by the compiler like a launch's
/// ([`GraphExec::set_kernel_args`]).
pub struct KernelNode<S: Signature> {
    node: Node,
    func: CUfunction,
    grid: Dim3,
    block: Dim3,
    shared_bytes: u32,
    _s: PhantomData<fn(S)>,
}

impl<S: Signature> core::fmt::Debug for KernelNode<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let name = format!("KernelNode<{}>", crate::memory::short_type_name::<S>());
        f.debug_struct(&name)
            .field("node", &self.node)
            .field("func", &self.func)
            .field("grid", &self.grid)
            .field("block", &self.block)
            .field("shared_bytes", &self.shared_bytes)
            .finish()
    }
}

impl<S: Signature> Clone for KernelNode<S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S: Signature> Copy for KernelNode<S> {}

impl<S: Signature> KernelNode<S> {
    /// The node, for dependencies.
    pub fn node(&self) -> Node {
        self.node
    }
}

impl<S: Signature> From<KernelNode<S>> for Node {
    fn from(k: KernelNode<S>) -> Node {
        k.node
    }
}

impl<'ctx> CurrentContext<'ctx> {
    /// Creates an empty graph, to be built node by node.
    pub fn create_graph(&self) -> Result<Graph<'_>, CudaError> {
        let mut raw = CUgraph::NULL;
        // SAFETY: a valid out-pointer; flags must be 0.
        check(unsafe { self.driver().table().cuGraphCreate()?(&mut raw, 0) })?;
        Ok(Graph::from_raw(self.driver(), raw, Rc::default()))
    }
}

/// The parameters of a kernel node; `params` must outlive their use.
pub(crate) fn kernel_node_params(
    func: CUfunction,
    grid: Dim3,
    block: Dim3,
    shared_bytes: u32,
    params: &mut [*mut c_void],
) -> CUDA_KERNEL_NODE_PARAMS_v2 {
    CUDA_KERNEL_NODE_PARAMS_v2 {
        func,
        gridDimX: grid.0,
        gridDimY: grid.1,
        gridDimZ: grid.2,
        blockDimX: block.0,
        blockDimY: block.1,
        blockDimZ: block.2,
        sharedMemBytes: shared_bytes,
        kernelParams: params.as_mut_ptr(),
        extra: core::ptr::null_mut(),
        kern: CUkernel::NULL,
        ctx: CUcontext::NULL,
    }
}

/// One end of a linear copy: host memory (written through only when it is the
/// destination, which the caller borrowed mutably), or device memory.
pub(crate) enum End {
    Host(*mut c_void),
    Device(CUdeviceptr),
}

/// The parameters of a linear copy of `bytes` bytes.
pub(crate) fn copy_params(dst: End, src: End, bytes: usize) -> CUDA_MEMCPY3D_v2 {
    // SAFETY: the struct is integers, raw pointers and handles: all-zero is valid
    // (null pointers, no offsets), and is what the driver expects of unused fields.
    let mut p: CUDA_MEMCPY3D_v2 = unsafe { core::mem::zeroed() };
    match src {
        End::Host(h) => {
            p.srcMemoryType = CUmemorytype::CU_MEMORYTYPE_HOST;
            p.srcHost = h.cast_const();
        }
        End::Device(d) => {
            p.srcMemoryType = CUmemorytype::CU_MEMORYTYPE_DEVICE;
            p.srcDevice = d;
        }
    }
    match dst {
        End::Host(h) => {
            p.dstMemoryType = CUmemorytype::CU_MEMORYTYPE_HOST;
            p.dstHost = h;
        }
        End::Device(d) => {
            p.dstMemoryType = CUmemorytype::CU_MEMORYTYPE_DEVICE;
            p.dstDevice = d;
        }
    }
    p.WidthInBytes = bytes;
    p.Height = 1;
    p.Depth = 1;
    p
}

/// The parameters of a memset of `len` elements of `T` to `value`.
pub(crate) fn memset_params<T: MemsetValue>(
    dst: CUdeviceptr,
    len: usize,
    value: T,
) -> CUDA_MEMSET_NODE_PARAMS {
    CUDA_MEMSET_NODE_PARAMS {
        dst,
        pitch: 0,
        value: value.bits(),
        elementSize: size_of::<T>() as u32,
        width: len,
        height: 1,
    }
}

/// Calls a graph host node's function (`userData` is an `Arc<HostNodeFn>`'s target).
pub(crate) unsafe extern "C" fn host_node_trampoline(data: *mut c_void) {
    // SAFETY: `data` points to a `HostNodeFn` kept alive by every graph and executable
    // graph that can run this node: the list (`kept`) of the graph it was added to,
    // shared with that graph's conditional bodies, and copied into clones, parents that
    // embed it and executable graphs updated from it.
    let f = unsafe { &*data.cast::<HostNodeFn<'static>>() };
    crate::stream::run_host_code(f);
}

/// A host function, boxed and kept; returns the node parameters that call it.
pub(crate) fn host_params<'g>(
    keep: &mut Kept<'g>,
    f: impl Fn() + Send + Sync + 'g,
) -> CUDA_HOST_NODE_PARAMS {
    let f: Arc<HostNodeFn<'g>> = Arc::new(Box::new(f));
    let data = Arc::as_ptr(&f).cast_mut().cast::<c_void>();
    keep.fns.push(f);
    CUDA_HOST_NODE_PARAMS {
        fn_: Some(host_node_trampoline),
        userData: data,
    }
}

impl<'g, K: Kind> Graph<'g, K> {
    pub(crate) fn from_raw(
        driver: &'static Driver,
        raw: CUgraph,
        kept: Rc<RefCell<Kept<'g>>>,
    ) -> Graph<'g, K> {
        if K::OWNED {
            crate::leaks::created(crate::leaks::Kind::Graphs, raw);
        }
        Graph {
            driver,
            raw,
            id: next_id(),
            nodes: Vec::new(),
            preds: Vec::new(),
            allocations: Vec::new(),
            buffers: Vec::new(),
            kept,
            writes_host: Rc::default(),
            has_conditional: Rc::default(),
            cloned_from: None,
            ancestors: Vec::new(),
            _tied: PhantomData,
        }
    }

    /// The driver's handle.
    pub fn raw(&self) -> CUgraph {
        self.raw
    }

    /// How many nodes were added through this value.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether no node was added through this value.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The driver's handle of `node`, if it is one of this graph's.
    pub(crate) fn raw_node(&self, node: Node) -> Result<CUgraphNode, CudaError> {
        match self.nodes.get(node.index) {
            Some(raw) if node.graph == self.id => Ok(*raw),
            _ => Err(CudaError::ForeignGraphNode { index: node.index }),
        }
    }

    /// The index of a driver node of this graph.
    pub(crate) fn index_of(&self, raw: CUgraphNode) -> Option<usize> {
        self.nodes.iter().position(|n| *n == raw)
    }

    fn deps(&self, deps: &[Node]) -> Result<Vec<CUgraphNode>, CudaError> {
        deps.iter().map(|d| self.raw_node(*d)).collect()
    }

    /// Whether node `target` is one of `start` or runs before one of them.
    pub(crate) fn reaches(&self, start: &[usize], target: usize) -> bool {
        let mut seen = vec![false; self.nodes.len()];
        let mut todo: Vec<usize> = start.to_vec();
        while let Some(n) = todo.pop() {
            if n == target {
                return true;
            }
            if let Some(false) = seen.get(n) {
                seen[n] = true;
                todo.extend(self.preds.get(n).into_iter().flatten().copied());
            }
        }
        false
    }

    /// Adds a node with `add(out, graph, deps, count)`.
    fn add(
        &mut self,
        deps: &[Node],
        add: impl FnOnce(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize) -> crate::sys::CUresult,
    ) -> Result<Node, CudaError> {
        let raw_deps = self.deps(deps)?;
        let mut raw = CUgraphNode::NULL;
        check(add(&mut raw, self.raw, raw_deps.as_ptr(), raw_deps.len()))?;
        self.nodes.push(raw);
        self.preds.push(deps.iter().map(|d| d.index).collect());
        Ok(Node {
            graph: self.id,
            index: self.nodes.len() - 1,
        })
    }

    /// Adds a node that does nothing: a join point for dependencies.
    pub fn add_empty(&mut self, deps: &[Node]) -> Result<Node, CudaError> {
        let f = self.driver.table().cuGraphAddEmptyNode()?;
        // SAFETY: a valid out-pointer, this graph, and `count` nodes of it.
        self.add(deps, |out, g, d, n| unsafe { f(out, g, d, n) })
    }

    /// Adds a launch of `function` on `grid × block` threads with `shared_bytes` of
    /// dynamic shared memory and `args` — checked by the compiler against `S`, as for
    /// a launch. The driver copies the argument values now; the memory they name stays
    /// borrowed for the graph's lifetime `'g`.
    ///
    /// A signature with raw pointer parameters is added here only when one
    /// [`Len`](crate::launch::Len) bounds them, checked now as for
    /// [`Function::launch`] (the node's arguments are fixed until
    /// [`GraphExec::set_kernel_args`], which checks again); else through
    /// [`add_kernel_unchecked`](Self::add_kernel_unchecked).
    pub fn add_kernel<S: Bounded>(
        &mut self,
        deps: &[Node],
        function: &'g Function<'_, S>,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_bytes: u32,
        args: impl GraphArgs<S> + 'g,
    ) -> Result<KernelNode<S>, CudaError> {
        let (grid, block) = (grid.into(), block.into());
        crate::launch::check_bounds::<S, _>(&args, crate::launch::launch_threads(grid, block))?;
        self.add_kernel_raw(deps, function, grid, block, shared_bytes, args)
    }

    /// [`add_kernel`](Self::add_kernel) for every signature, raw pointers without a
    /// [`Len`](crate::launch::Len) included; no length is checked.
    ///
    /// # Safety
    /// As for [`Function::launch_unchecked`], for every launch of the graph (and of
    /// the executable graphs made from it): the kernel stays inside the view passed
    /// for each raw pointer argument.
    pub unsafe fn add_kernel_unchecked<S: Signature>(
        &mut self,
        deps: &[Node],
        function: &'g Function<'_, S>,
        grid: impl Into<Dim3>,
        block: impl Into<Dim3>,
        shared_bytes: u32,
        args: impl GraphArgs<S> + 'g,
    ) -> Result<KernelNode<S>, CudaError> {
        self.add_kernel_raw(
            deps,
            function,
            grid.into(),
            block.into(),
            shared_bytes,
            args,
        )
    }

    /// The kernel node, once the bound (if any) is checked or promised.
    fn add_kernel_raw<S: Signature>(
        &mut self,
        deps: &[Node],
        function: &'g Function<'_, S>,
        grid: Dim3,
        block: Dim3,
        shared_bytes: u32,
        args: impl GraphArgs<S> + 'g,
    ) -> Result<KernelNode<S>, CudaError> {
        if !crate::launch::fits_every_device(grid, block) {
            return Err(crate::launch::shape_error(grid, block));
        }
        let f = self.driver.table().cuGraphAddKernelNode()?;
        let func = function.raw;
        crate::launch::check_streams::<S, _>(&args, None)?;
        let uses = crate::launch::graph_refs::<S, _>(&args);
        let start: Vec<usize> = deps.iter().map(|d| d.index).collect();
        self.check_uses(&uses, &start, None)?;
        // The arguments outlive `'g`: their memory is borrowed for it.
        self.kept
            .borrow_mut()
            .note_raw(crate::launch::marks::<S, _>(&args));
        let node = crate::launch::with_params::<S, _, _>(args, |params| {
            let p = kernel_node_params(func, grid, block, shared_bytes, params);
            // SAFETY: one pointer per declared parameter, each to a value of its
            // declared size (checked at lookup), read by the driver during the call.
            self.add(deps, |out, g, d, n| unsafe { f(out, g, d, n, &p) })
        })?;
        self.record_uses(&uses, node.index);
        Ok(KernelNode {
            node,
            func,
            grid,
            block,
            shared_bytes,
            _s: PhantomData,
        })
    }

    fn add_copy_node(&mut self, deps: &[Node], p: CUDA_MEMCPY3D_v2) -> Result<Node, CudaError> {
        if p.WidthInBytes == 0 {
            // The driver refuses a copy of no bytes; an empty node keeps the place
            // (and the dependencies) of a copy that does nothing.
            return self.add_empty(deps);
        }
        let f = self.driver.table().cuGraphAddMemcpyNode()?;
        let ctx = current_context(self.driver)?;
        // SAFETY: both ends name memory of at least `WidthInBytes` bytes, borrowed for
        // the graph's lifetime by the caller's signature.
        self.add(deps, |out, g, d, n| unsafe { f(out, g, d, n, &p, ctx) })
    }

    /// Adds a copy of host memory into device memory (same length).
    pub fn add_copy_to_device<T: DeviceCopy>(
        &mut self,
        deps: &[Node],
        dst: &'g impl DeviceRead<T>,
        src: &'g [T],
    ) -> Result<Node, CudaError> {
        let d = dst.view();
        graph_memory(&d)?;
        same_len(d.len(), src.len())?;
        self.kept.borrow_mut().note(d.host_mark());
        let p = copy_params(
            End::Device(d.device_ptr()),
            End::Host(src.as_ptr().cast_mut().cast()),
            bytes::<T>(src.len())?,
        );
        self.add_copy_node(deps, p)
    }

    /// Adds a copy of device memory into host memory (same length).
    pub fn add_copy_to_host<T: DeviceCopy>(
        &mut self,
        deps: &[Node],
        dst: &'g mut [T],
        src: &'g impl DeviceRead<T>,
    ) -> Result<Node, CudaError> {
        let s = src.view();
        graph_memory(&s)?;
        same_len(dst.len(), s.len())?;
        self.writes_host.set(true);
        self.kept.borrow_mut().note(s.host_mark());
        let p = copy_params(
            End::Host(dst.as_mut_ptr().cast()),
            End::Device(s.device_ptr()),
            bytes::<T>(dst.len())?,
        );
        self.add_copy_node(deps, p)
    }

    /// Adds a copy between device memory (same length).
    pub fn add_copy<T: DeviceCopy>(
        &mut self,
        deps: &[Node],
        dst: &'g impl DeviceRead<T>,
        src: &'g impl DeviceRead<T>,
    ) -> Result<Node, CudaError> {
        let (d, s) = (dst.view(), src.view());
        graph_memory(&d)?;
        graph_memory(&s)?;
        same_len(d.len(), s.len())?;
        self.kept.borrow_mut().note(d.host_mark());
        self.kept.borrow_mut().note(s.host_mark());
        let p = copy_params(
            End::Device(d.device_ptr()),
            End::Device(s.device_ptr()),
            bytes::<T>(s.len())?,
        );
        self.add_copy_node(deps, p)
    }

    /// Adds setting every element of `dst` to `value`.
    pub fn add_fill<T: MemsetValue>(
        &mut self,
        deps: &[Node],
        dst: &'g impl DeviceRead<T>,
        value: T,
    ) -> Result<Node, CudaError> {
        let d = dst.view();
        graph_memory(&d)?;
        self.kept.borrow_mut().note(d.host_mark());
        if d.is_empty() {
            return self.add_empty(deps); // as for an empty copy
        }
        let p = memset_params(d.device_ptr(), d.len(), value);
        let f = self.driver.table().cuGraphAddMemsetNode()?;
        let ctx = current_context(self.driver)?;
        // SAFETY: `len` elements at `dst` are the view's, borrowed for `'g`.
        self.add(deps, |out, g, dd, n| unsafe { f(out, g, dd, n, &p, ctx) })
    }

    /// Adds a call of `f` on a driver thread, each time the node runs. Inside it every
    /// driver call is refused (CUDA forbids them there); a panic is caught and
    /// counted ([`host_callback_panics`](crate::stream::host_callback_panics)).
    pub fn add_host_fn(
        &mut self,
        deps: &[Node],
        f: impl Fn() + Send + Sync + 'g,
    ) -> Result<Node, CudaError> {
        let add = self.driver.table().cuGraphAddHostNode()?;
        let p = host_params(&mut self.kept.borrow_mut(), f);
        // SAFETY: the function and its data live as long as this graph and every
        // graph made from it (`kept`).
        self.add(deps, |out, g, d, n| unsafe { add(out, g, d, n, &p) })
    }

    /// Adds recording `event` (it completes when the node's dependencies have).
    pub fn add_event_record<E: EventKind>(
        &mut self,
        deps: &[Node],
        event: &'g Event<'_, E>,
    ) -> Result<Node, CudaError> {
        let f = self.driver.table().cuGraphAddEventRecordNode()?;
        let e = event.raw();
        // SAFETY: a live event, borrowed for `'g`.
        self.add(deps, |out, g, d, n| unsafe { f(out, g, d, n, e) })
    }

    /// Adds waiting for `event`'s last record before the node's dependents run.
    pub fn add_event_wait<E: EventKind>(
        &mut self,
        deps: &[Node],
        event: &'g Event<'_, E>,
    ) -> Result<Node, CudaError> {
        let f = self.driver.table().cuGraphAddEventWaitNode()?;
        let e = event.raw();
        // SAFETY: a live event, borrowed for `'g`.
        self.add(deps, |out, g, d, n| unsafe { f(out, g, d, n, e) })
    }

    /// Makes `to` depend on `from`.
    pub fn add_dependency(&mut self, from: Node, to: Node) -> Result<(), CudaError> {
        let (a, b) = (self.raw_node(from)?, self.raw_node(to)?);
        let t = self.driver.table();
        // SAFETY: two nodes of this graph; one edge, no edge data.
        check(unsafe {
            match t.cuGraphAddDependencies() {
                Ok(f) => f(self.raw, &a, &b, core::ptr::null(), 1),
                Err(_) => t.cuGraphAddDependencies_v10000()?(self.raw, &a, &b, 1),
            }
        })?;
        self.preds[to.index].push(from.index);
        Ok(())
    }

    /// The kind of `node`.
    pub fn node_type(&self, node: Node) -> Result<CUgraphNodeType, CudaError> {
        let raw = self.raw_node(node)?;
        let mut ty = CUgraphNodeType(0);
        // SAFETY: a node of this graph and a valid out-pointer.
        check(unsafe { self.driver.table().cuGraphNodeGetType()?(raw, &mut ty) })?;
        Ok(ty)
    }

    /// How many nodes the driver counts in the graph (a child graph counts as one).
    pub fn driver_node_count(&self) -> Result<usize, CudaError> {
        let mut n = 0usize;
        // SAFETY: a live graph; a null array asks for the count only.
        check(unsafe {
            self.driver.table().cuGraphGetNodes()?(self.raw, core::ptr::null_mut(), &mut n)
        })?;
        Ok(n)
    }

    /// Writes the graph in Graphviz DOT (`cuGraphDebugDotPrint`, verbose) to `path`.
    pub fn write_dot(&self, path: &Path) -> Result<(), CudaError> {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| {
            CudaError::InvalidPath {
                path: path.to_path_buf(),
                reason: "it contains a NUL byte",
            }
        })?;
        // SAFETY: a live graph and a NUL-terminated path; flag 1 is
        // CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE.
        check(unsafe { self.driver.table().cuGraphDebugDotPrint()?(self.raw, c.as_ptr(), 1) })
    }
}

impl<'g, K: Kind> Graph<'g, K> {
    /// Adds `child` as one node (the driver copies it; its host functions are kept
    /// alive by this graph too, and a conditional node in it, at any depth, counts as
    /// one of this graph's: such a graph is no update, [`GraphExec::update`]). Refused
    /// for a child with a node that writes host memory
    /// ([`CudaError::GraphCopyRefused`]).
    pub fn add_child(&mut self, deps: &[Node], child: &Graph<'g>) -> Result<Node, CudaError> {
        if child.writes_host.get() {
            return Err(CudaError::GraphCopyRefused);
        }
        if !child.buffers.is_empty() {
            return Err(buffers::refused(
                "a graph that owns buffers is not embedded: the copy would use memory the original frees",
            ));
        }
        let f = self.driver.table().cuGraphAddChildGraphNode()?;
        let c = child.raw;
        // SAFETY: a live graph of the same context.
        let node = self.add(deps, |out, g, d, n| unsafe { f(out, g, d, n, c) })?;
        let fns: Kept<'g> = child.kept.borrow().clone();
        self.kept.borrow_mut().extend(fns);
        // A conditional node of the copy (or of a child of it, whose flag the child
        // carries) makes this graph one with conditional nodes too.
        if child.has_conditional.get() {
            self.has_conditional.set(true);
        }
        Ok(node)
    }
}

/// What only a graph this value owns can do.
impl<'g> Graph<'g> {
    /// A copy of the graph (`cuGraphClone`), borrowing what this one borrows. Node
    /// handles of this graph become handles of the copy through
    /// [`node_in_clone`](Self::node_in_clone). A graph with a node that writes host
    /// memory is not copied ([`CudaError::GraphCopyRefused`]): two copies could write
    /// the same exclusively borrowed memory at once.
    pub fn try_clone(&self) -> Result<Graph<'g>, CudaError> {
        if self.writes_host.get() {
            return Err(CudaError::GraphCopyRefused);
        }
        if !self.buffers.is_empty() {
            return Err(buffers::refused(
                "a graph that owns buffers is not cloned: the copy would use memory the original frees",
            ));
        }
        let t = self.driver.table();
        let mut raw = CUgraph::NULL;
        // SAFETY: a valid out-pointer and a live graph.
        check(unsafe { t.cuGraphClone()?(&mut raw, self.raw) })?;
        let fns: Kept<'g> = self.kept.borrow().clone();
        let mut copy = Graph::from_raw(self.driver, raw, Rc::new(RefCell::new(fns)));
        let find = t.cuGraphNodeFindInClone()?;
        for original in &self.nodes {
            let mut n = CUgraphNode::NULL;
            // SAFETY: a node of the original and the clone made from it.
            check(unsafe { find(&mut n, *original, raw) })?;
            copy.nodes.push(n);
        }
        copy.preds = self.preds.clone();
        copy.allocations = self.allocations.clone();
        copy.cloned_from = Some(self.id);
        copy.has_conditional.set(self.has_conditional.get());
        Ok(copy)
    }

    /// The node of this clone that corresponds to `original`'s node `node`.
    pub fn node_in_clone(&self, original: &Graph<'_>, node: Node) -> Result<Node, CudaError> {
        original.raw_node(node)?;
        if self.cloned_from != Some(original.id) || node.index >= self.nodes.len() {
            return Err(CudaError::ForeignGraphNode { index: node.index });
        }
        Ok(Node {
            graph: self.id,
            index: node.index,
        })
    }

    /// Instantiates the graph (consuming it: no node can be added afterwards, CF15).
    /// On failure the graph is dropped with the error.
    pub fn instantiate(self) -> Result<GraphExec<'g>, CudaError> {
        self.check_all_freed()?;
        GraphExec::new(self)
    }
}

/// The current context's handle (memcpy and memset nodes name it).
fn current_context(driver: &'static Driver) -> Result<CUcontext, CudaError> {
    let mut c = CUcontext::NULL;
    // SAFETY: a valid out-pointer.
    check(unsafe { driver.table().cuCtxGetCurrent()?(&mut c) })?;
    Ok(c)
}

impl<K: Kind> Drop for Graph<'_, K> {
    fn drop(&mut self) {
        if !K::OWNED {
            return;
        }
        if let Ok(destroy) = self.driver.table().cuGraphDestroy() {
            // SAFETY: this value owns the graph.
            let r = unsafe { destroy(self.raw) };
            if check(r).is_err() {
                tracing::warn!(?r, "cuGraphDestroy failed");
            } else {
                crate::leaks::destroyed(crate::leaks::Kind::Graphs, self.raw);
            }
        }
    }
}

static_assertions::assert_not_impl_any!(Graph<'static>: Send, Sync);
static_assertions::assert_impl_all!(Node: Send, Sync, Copy);

/// [`CudaError::WrongStream`] for a stream-ordered buffer's memory (`crate::pool`): a
/// graph may run on any stream, before the stream reaches the allocation.
fn graph_memory<T: DeviceCopy>(view: &crate::memory::DeviceSlice<'_, T>) -> Result<(), CudaError> {
    crate::memory::check_stream(view.stream_order(), None, None)
}
