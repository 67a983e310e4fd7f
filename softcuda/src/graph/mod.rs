//! CUDA graphs: the graph model (graphs, nodes, dependencies), executable graphs
//! ([`exec`]) and stream capture ([`capture`]).
//!
//! Graphs, nodes and executable graphs live in one store behind one lock, apart from
//! the driver state ([`crate::state`]): that lock is always the innermost one —
//! nothing takes the state lock, the memory map or a stream's queue while holding
//! it. Handles are made as in `crate::state` (`Kind::Graph`, `Kind::GraphNode`,
//! `Kind::GraphExec`), with ids of their own, never reused.
//!
//! A node's parameters are copied when it is added, as on the driver: a kernel
//! node's argument bytes (packed with the function's parameter layout), a memcpy or
//! memset node's descriptor, a child graph (cloned into the node). Memory ranges are
//! checked when the node is added and again when an executable graph is launched
//! (and, for the queued work, when it runs), exactly as for stream work.

pub mod capture;
pub mod cond;
pub mod exec;
pub mod mem;

use crate::ptx::LaunchConfig;
use crate::state::{self, FunctionEntry, Kind, R};
use crate::stream::Event;
use crate::types::*;
use core::ffi::c_void;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};

/// C data holding raw pointers (a copy descriptor, a host function and its data):
/// kept in the store and handed to stream workers.
#[derive(Clone, Copy, Debug)]
pub struct Raw<T>(pub T);
// SAFETY: the pointers inside are the caller's, used only as the driver uses them
// (passed back to the caller's function, or the memory of a copy the caller keeps
// valid until it completes): the C contract, as for stream work.
unsafe impl<T> Send for Raw<T> {}
// SAFETY: as above; the store never dereferences them.
unsafe impl<T> Sync for Raw<T> {}

/// A kernel node's launch: the function, the shape and the argument bytes.
#[derive(Clone)]
pub struct KernelNode {
    /// The function's id (`Kind::Function`).
    pub func: u64,
    /// The function.
    pub entry: FunctionEntry,
    /// Grid, block and dynamic shared memory.
    pub cfg: LaunchConfig,
    /// The packed arguments, copied when the node was added or its parameters set.
    pub args: Arc<Vec<u8>>,
    /// The address of each argument inside `args`: the `kernelParams` array that
    /// `cuGraphKernelNodeGetParams` hands back (valid while the parameters stay).
    pub arg_ptrs: Arc<Vec<usize>>,
    /// The function's cluster shape when the node was made or its parameters set
    /// (compiled in or set with `cuFuncSetAttribute`), which the node's launches use.
    pub cluster: Option<[u32; 3]>,
}

impl KernelNode {
    /// A kernel node of function `func` (`entry`) with `cfg`, the function's
    /// cluster shape `cluster` and the packed `args`.
    pub fn new(
        func: u64,
        entry: FunctionEntry,
        cfg: LaunchConfig,
        cluster: Option<[u32; 3]>,
        args: Arc<Vec<u8>>,
    ) -> Self {
        let base = args.as_ptr() as usize;
        let arg_ptrs = entry.ptx.kernels()[entry.kernel]
            .params
            .iter()
            .map(|p| base + p.offset as usize)
            .collect();
        KernelNode {
            func,
            entry,
            cfg,
            args,
            arg_ptrs: Arc::new(arg_ptrs),
            cluster,
        }
    }

    /// The kernel's name.
    fn name(&self) -> String {
        self.entry.name.to_string_lossy().into_owned()
    }
}

/// A conditional node: its handle, its type and its body graphs (owned by the
/// node, embedded).
#[derive(Clone)]
pub struct CondNode {
    /// The handle it tests.
    pub cond: Arc<cond::Cond>,
    /// `CU_GRAPH_COND_TYPE_IF`, `_WHILE` or `_SWITCH`.
    pub ty: CUgraphConditionalNodeType,
    /// The body graphs (ids).
    pub bodies: Vec<u64>,
}

/// What a node does.
#[derive(Clone)]
pub enum NodeKind {
    /// `CU_GRAPH_NODE_TYPE_KERNEL`.
    Kernel(KernelNode),
    /// `CU_GRAPH_NODE_TYPE_MEMCPY`: host, device or unified memory (no arrays).
    Memcpy(Raw<CUDA_MEMCPY3D>),
    /// `CU_GRAPH_NODE_TYPE_MEMSET`.
    Memset(CUDA_MEMSET_NODE_PARAMS),
    /// `CU_GRAPH_NODE_TYPE_HOST`.
    Host(Raw<CUDA_HOST_NODE_PARAMS>),
    /// `CU_GRAPH_NODE_TYPE_GRAPH`: the id of the embedded graph, owned by the node.
    Child(u64),
    /// `CU_GRAPH_NODE_TYPE_EMPTY`.
    Empty,
    /// `CU_GRAPH_NODE_TYPE_EVENT_RECORD`: the event's id and the event.
    EventRecord(u64, Arc<Event>),
    /// `CU_GRAPH_NODE_TYPE_WAIT_EVENT`.
    EventWait(u64, Arc<Event>),
    /// `CU_GRAPH_NODE_TYPE_MEM_ALLOC`: the memory it maps.
    MemAlloc(Arc<mem::Reservation>),
    /// `CU_GRAPH_NODE_TYPE_MEM_FREE`: the address it unmaps.
    MemFree(u64),
    /// `CU_GRAPH_NODE_TYPE_CONDITIONAL`.
    Conditional(CondNode),
}

impl NodeKind {
    /// The `CUgraphNodeType`.
    pub fn type_code(&self) -> CUgraphNodeType {
        match self {
            NodeKind::Kernel(_) => CU_GRAPH_NODE_TYPE_KERNEL,
            NodeKind::Memcpy(_) => CU_GRAPH_NODE_TYPE_MEMCPY,
            NodeKind::Memset(_) => CU_GRAPH_NODE_TYPE_MEMSET,
            NodeKind::Host(_) => CU_GRAPH_NODE_TYPE_HOST,
            NodeKind::Child(_) => CU_GRAPH_NODE_TYPE_GRAPH,
            NodeKind::Empty => CU_GRAPH_NODE_TYPE_EMPTY,
            NodeKind::EventRecord(..) => CU_GRAPH_NODE_TYPE_EVENT_RECORD,
            NodeKind::EventWait(..) => CU_GRAPH_NODE_TYPE_WAIT_EVENT,
            NodeKind::MemAlloc(_) => CU_GRAPH_NODE_TYPE_MEM_ALLOC,
            NodeKind::MemFree(_) => CU_GRAPH_NODE_TYPE_MEM_FREE,
            NodeKind::Conditional(_) => CU_GRAPH_NODE_TYPE_CONDITIONAL,
        }
    }

    fn type_name(&self) -> &'static str {
        match self {
            NodeKind::Kernel(_) => "KERNEL",
            NodeKind::Memcpy(_) => "MEMCPY",
            NodeKind::Memset(_) => "MEMSET",
            NodeKind::Host(_) => "HOST",
            NodeKind::Child(_) => "GRAPH",
            NodeKind::Empty => "EMPTY",
            NodeKind::EventRecord(..) => "EVENT_RECORD",
            NodeKind::EventWait(..) => "WAIT_EVENT",
            NodeKind::MemAlloc(_) => "MEM_ALLOC",
            NodeKind::MemFree(_) => "MEM_FREE",
            NodeKind::Conditional(_) => "CONDITIONAL",
        }
    }
}

/// A node.
pub struct Node {
    /// Its graph.
    pub graph: u64,
    /// What it does.
    pub kind: NodeKind,
    /// The nodes it depends on, in the order the edges were added.
    pub deps: Vec<u64>,
    /// The node it is a clone of (`cuGraphNodeFindInClone`).
    pub cloned_from: Option<u64>,
}

/// A graph.
#[derive(Default)]
pub struct Graph {
    /// Its nodes, in the order they were added.
    pub nodes: Vec<u64>,
    /// Whether it is embedded in a child-graph or conditional node (owned by that
    /// node; not counted and not destroyable by `cuGraphDestroy`).
    pub embedded: bool,
    /// Whether it is the body of a conditional node.
    pub body: bool,
    /// The conditional handles created for it (kept alive with it).
    pub conds: Vec<Arc<cond::Cond>>,
}

/// Every graph, node and executable graph, and the capture sessions.
#[derive(Default)]
pub struct Store {
    /// Graphs by id.
    pub graphs: HashMap<u64, Graph>,
    /// Nodes by id.
    pub nodes: HashMap<u64, Node>,
    /// Executable graphs by id.
    pub execs: HashMap<u64, exec::Exec>,
    /// Stream capture.
    pub capture: capture::Captures,
}

static STORE: LazyLock<Mutex<Store>> = LazyLock::new(|| Mutex::new(Store::default()));
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The store, locked. Take no other lock while holding it.
pub fn store() -> MutexGuard<'static, Store> {
    STORE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A fresh id for a graph, node, executable graph or capture sequence.
pub fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// Forgets every graph, node, executable graph and capture (`softcuda_reset`).
pub fn reset() {
    let old = std::mem::take(&mut *store());
    drop(old);
    capture::reset();
    cond::reset();
    mem::reap();
}

/// Live user-visible graphs and executable graphs.
pub fn live_counts() -> (usize, usize) {
    let s = store();
    (
        s.graphs.values().filter(|g| !g.embedded).count(),
        s.execs.len(),
    )
}

/// The id of graph handle `h`, if it is a live graph.
pub fn graph_id(s: &Store, h: CUgraph) -> R<u64> {
    state::id_of(Kind::Graph, h)
        .filter(|id| s.graphs.contains_key(id))
        .ok_or(code::INVALID_VALUE)
}

/// The id of node handle `h`, if it is a live node.
pub fn node_id(s: &Store, h: CUgraphNode) -> R<u64> {
    state::id_of(Kind::GraphNode, h)
        .filter(|id| s.nodes.contains_key(id))
        .ok_or(code::INVALID_VALUE)
}

/// A node's handle.
pub fn node_handle(id: u64) -> CUgraphNode {
    state::handle(Kind::GraphNode, id)
}

/// Reads `n` node handles from `p` as node ids of graph `g`: each a live node of
/// `g`, no two the same.
pub(crate) fn read_nodes(s: &Store, g: u64, p: *const CUgraphNode, n: usize) -> R<Vec<u64>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return Err(code::INVALID_VALUE);
    }
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        // SAFETY: the caller's array holds `n` handles, by the C contract.
        let h = unsafe { *p.add(i) };
        let id = node_id(s, h)?;
        if s.nodes.get(&id).is_none_or(|node| node.graph != g) || ids.contains(&id) {
            return Err(code::INVALID_VALUE);
        }
        ids.push(id);
    }
    Ok(ids)
}

impl Store {
    /// A new, empty graph.
    pub fn create_graph(&mut self, embedded: bool) -> u64 {
        let id = next_id();
        self.graphs.insert(
            id,
            Graph {
                nodes: Vec::new(),
                embedded,
                body: false,
                conds: Vec::new(),
            },
        );
        id
    }

    /// Adds a node doing `kind` to graph `g`, depending on `deps` (nodes of `g`).
    pub fn add_node(&mut self, g: u64, deps: &[u64], kind: NodeKind) -> R<u64> {
        let graph = self.graphs.get_mut(&g).ok_or(code::INVALID_VALUE)?;
        let id = next_id();
        graph.nodes.push(id);
        self.nodes.insert(
            id,
            Node {
                graph: g,
                kind,
                deps: deps.to_vec(),
                cloned_from: None,
            },
        );
        Ok(id)
    }

    /// Destroys graph `g` with its nodes (and their embedded graphs).
    pub fn destroy_graph(&mut self, g: u64) {
        if let Some(graph) = self.graphs.remove(&g) {
            for n in graph.nodes {
                if let Some(node) = self.nodes.remove(&n) {
                    for c in owned_graphs(&node.kind) {
                        self.destroy_graph(c);
                    }
                }
            }
        }
    }

    /// Destroys node `n`, its edges and its embedded graph.
    pub fn destroy_node(&mut self, n: u64) {
        let Some(node) = self.nodes.remove(&n) else {
            return;
        };
        if let Some(graph) = self.graphs.get_mut(&node.graph) {
            graph.nodes.retain(|x| *x != n);
            for other in graph.nodes.clone() {
                if let Some(o) = self.nodes.get_mut(&other) {
                    o.deps.retain(|d| *d != n);
                }
            }
        }
        for c in owned_graphs(&node.kind) {
            self.destroy_graph(c);
        }
    }

    /// Whether graph `g` (or a graph embedded in it) has memory nodes: it cannot be
    /// cloned, embedded, or have nodes or edges removed.
    pub fn has_mem_nodes(&self, g: u64) -> bool {
        self.graphs.get(&g).is_some_and(|graph| {
            graph.nodes.iter().any(|n| {
                self.nodes.get(n).is_some_and(|node| match &node.kind {
                    NodeKind::MemAlloc(_) | NodeKind::MemFree(_) => true,
                    k => owned_graphs(k).into_iter().any(|c| self.has_mem_nodes(c)),
                })
            })
        })
    }

    /// Whether graph `g` (or a graph embedded in it) has conditional nodes.
    pub fn has_cond_nodes(&self, g: u64) -> bool {
        self.graphs.get(&g).is_some_and(|graph| {
            graph.nodes.iter().any(|n| {
                self.nodes.get(n).is_some_and(|node| match &node.kind {
                    NodeKind::Conditional(_) => true,
                    k => owned_graphs(k).into_iter().any(|c| self.has_cond_nodes(c)),
                })
            })
        })
    }

    /// A copy of graph `g` (child graphs copied too); each new node remembers its
    /// original.
    pub fn clone_graph(&mut self, g: u64, embedded: bool) -> R<u64> {
        let nodes = self
            .graphs
            .get(&g)
            .ok_or(code::INVALID_VALUE)?
            .nodes
            .clone();
        let new = self.create_graph(embedded);
        let mut map = HashMap::new();
        for n in &nodes {
            let (kind, deps) = match self.nodes.get(n) {
                Some(node) => (node.kind.clone(), node.deps.clone()),
                None => continue,
            };
            let kind = match kind {
                NodeKind::Child(c) => NodeKind::Child(self.clone_graph(c, true)?),
                NodeKind::Conditional(c) => {
                    let mut bodies = Vec::with_capacity(c.bodies.len());
                    for b in &c.bodies {
                        let nb = self.clone_graph(*b, true)?;
                        if let Some(x) = self.graphs.get_mut(&nb) {
                            x.body = true;
                        }
                        bodies.push(nb);
                    }
                    NodeKind::Conditional(CondNode { bodies, ..c })
                }
                NodeKind::MemAlloc(_) | NodeKind::MemFree(_) => {
                    return Err(code::NOT_SUPPORTED); // checked first by the callers
                }
                k => k,
            };
            let deps: Vec<u64> = deps.iter().filter_map(|d| map.get(d).copied()).collect();
            let id = self.add_node(new, &deps, kind)?;
            if let Some(node) = self.nodes.get_mut(&id) {
                node.cloned_from = Some(*n);
            }
            map.insert(*n, id);
        }
        Ok(new)
    }

    /// The edges of graph `g` (from, to), by node, in the order they were added.
    pub fn edges(&self, g: u64) -> Vec<(u64, u64)> {
        let Some(graph) = self.graphs.get(&g) else {
            return Vec::new();
        };
        graph
            .nodes
            .iter()
            .filter_map(|n| self.nodes.get(n).map(|node| (*n, node)))
            .flat_map(|(n, node)| node.deps.iter().map(move |d| (*d, n)))
            .collect()
    }

    /// The nodes of graph `g` in an order that respects every dependency (the
    /// order of addition among independent nodes); `Err(node)` names a node on a
    /// cycle.
    pub fn topo_order(&self, g: u64) -> Result<Vec<u64>, u64> {
        let nodes = self
            .graphs
            .get(&g)
            .map(|x| x.nodes.clone())
            .unwrap_or_default();
        let mut indegree: HashMap<u64, usize> = HashMap::new();
        let mut dependents: HashMap<u64, Vec<u64>> = HashMap::new();
        for n in &nodes {
            let deps = self
                .nodes
                .get(n)
                .map(|x| x.deps.clone())
                .unwrap_or_default();
            indegree.insert(*n, deps.len());
            for d in deps {
                dependents.entry(d).or_default().push(*n);
            }
        }
        let mut ready: VecDeque<u64> = nodes
            .iter()
            .copied()
            .filter(|n| indegree.get(n) == Some(&0))
            .collect();
        let mut order = Vec::with_capacity(nodes.len());
        while let Some(n) = ready.pop_front() {
            order.push(n);
            for m in dependents.get(&n).cloned().unwrap_or_default() {
                if let Some(d) = indegree.get_mut(&m) {
                    *d -= 1;
                    if *d == 0 {
                        ready.push_back(m);
                    }
                }
            }
        }
        if order.len() == nodes.len() {
            return Ok(order);
        }
        let done: HashSet<u64> = order.into_iter().collect();
        Err(nodes
            .into_iter()
            .find(|n| !done.contains(n))
            .unwrap_or_default())
    }

    /// Graph `g` as Graphviz DOT text (`cuGraphDebugDotPrint`).
    pub fn dot(&self, g: u64) -> String {
        let mut out = String::from("digraph dot {\n");
        let _ = writeln!(out, "subgraph cluster_{g} {{\nlabel=\"graph_{g}\";");
        self.dot_body(g, &mut out);
        out.push_str("}\n}\n");
        out
    }

    fn dot_body(&self, g: u64, out: &mut String) {
        let nodes = self
            .graphs
            .get(&g)
            .map(|x| x.nodes.clone())
            .unwrap_or_default();
        for n in &nodes {
            let Some(node) = self.nodes.get(n) else {
                continue;
            };
            let detail = match &node.kind {
                NodeKind::Kernel(k) => format!(
                    "\\n{}\\n<<<({},{},{}),({},{},{}),{}>>>",
                    k.name(),
                    k.cfg.grid[0],
                    k.cfg.grid[1],
                    k.cfg.grid[2],
                    k.cfg.block[0],
                    k.cfg.block[1],
                    k.cfg.block[2],
                    k.cfg.dynamic_shared_bytes
                ),
                NodeKind::Memcpy(c) => format!(
                    "\\n{} x {} x {} bytes",
                    c.0.WidthInBytes, c.0.Height, c.0.Depth
                ),
                NodeKind::Memset(m) => format!(
                    "\\ndst 0x{:x} value 0x{:x}\\n{} x {} elements of {} bytes",
                    m.dst, m.value, m.width, m.height, m.elementSize
                ),
                NodeKind::Host(h) => format!(
                    "\\nfn {:p}",
                    h.0.fn_.map_or(core::ptr::null(), |f| f as *const c_void)
                ),
                NodeKind::EventRecord(e, _) | NodeKind::EventWait(e, _) => {
                    format!("\\nevent {:p}", state::handle(Kind::Event, *e))
                }
                NodeKind::MemAlloc(r) => format!("\\ndptr 0x{:x} {} bytes", r.base, r.size),
                NodeKind::MemFree(p) => format!("\\ndptr 0x{p:x}"),
                NodeKind::Conditional(c) => format!(
                    "\\nhandle 0x{:x} type {} default {}",
                    c.cond.handle, c.ty, c.cond.default
                ),
                NodeKind::Child(_) | NodeKind::Empty => String::new(),
            };
            let _ = writeln!(
                out,
                "\"graph_{g}_node_{n}\" [label=\"{} node_{n}{detail}\"];",
                node.kind.type_name()
            );
            for c in owned_graphs(&node.kind) {
                let _ = writeln!(
                    out,
                    "subgraph cluster_{c} {{\nlabel=\"graph_{c} (child of node_{n})\";"
                );
                self.dot_body(c, out);
                out.push_str("}\n");
            }
        }
        for (from, to) in self.edges(g) {
            let _ = writeln!(out, "\"graph_{g}_node_{from}\" -> \"graph_{g}_node_{to}\";");
        }
    }
}

/// The graphs a node owns: a child graph, a conditional node's bodies.
pub fn owned_graphs(k: &NodeKind) -> Vec<u64> {
    match k {
        NodeKind::Child(c) => vec![*c],
        NodeKind::Conditional(c) => c.bodies.clone(),
        _ => Vec::new(),
    }
}
