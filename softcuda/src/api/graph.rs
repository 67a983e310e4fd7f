//! Graphs, executable graphs and stream capture (the model is in `crate::graph`).
//!
//! Handles of nodes and graphs that are not live are `CUDA_ERROR_INVALID_VALUE`, as
//! the driver reports them. What softcuda does not model is refused with
//! `CUDA_ERROR_NOT_SUPPORTED` (see docs/softcuda.md, "Graphs and capture").

use super::{c_text, out};
use crate::api::memory::with_graph_memory;
use crate::api::memory::{memcpy3d_job, set_job};
use crate::api::module::prepare_launch;
use crate::graph::{
    self, CondNode, KernelNode, NodeKind, Raw, capture, cond, exec, mem, node_handle, store,
};
use crate::ptx::LaunchConfig;
use crate::state::{self, Kind, R};
use crate::stream::Event;
use crate::types::*;
use core::ffi::{c_char, c_uint, c_ulonglong};
use core::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// `CUDA_ERROR_OPERATING_SYSTEM`: the DOT file could not be written.
const OPERATING_SYSTEM: CUresult = 304;

/// `CUDA_GRAPH_INSTANTIATE_FLAG_*` softcuda accepts: auto-free-on-launch (unfreed
/// allocations of memory nodes are freed before a relaunch), upload (only through
/// `cuGraphInstantiateWithParams`) and use-node-priority (no priorities to use).
const INSTANTIATE_AUTO_FREE: u64 = 0x1;
const INSTANTIATE_UPLOAD: u64 = 0x2;
const INSTANTIATE_DEVICE_LAUNCH: u64 = 0x4;
const INSTANTIATE_NODE_PRIORITY: u64 = 0x8;

fn init() -> R {
    state::require_init(&state::state())
}

fn event(h: CUevent) -> R<(u64, Arc<Event>)> {
    let id = state::id_of(Kind::Event, h).ok_or(code::INVALID_HANDLE)?;
    let e = state::state()
        .events
        .get(&id)
        .cloned()
        .ok_or(code::INVALID_HANDLE)?;
    Ok((id, e))
}

fn null_node() -> CUgraphNode {
    core::ptr::null_mut()
}

fn opt_node(n: Option<u64>) -> CUgraphNode {
    n.map_or(null_node(), node_handle)
}

// ---- node parameters ------------------------------------------------------------

/// A kernel node from launch parameters; `ctx` (may be null: the function's) must
/// be the function's context.
#[allow(clippy::too_many_arguments)]
fn kernel_node(
    func: CUfunction,
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared: c_uint,
    params: *mut *mut core::ffi::c_void,
    extra: *mut *mut core::ffi::c_void,
    ctx: CUcontext,
) -> R<NodeKind> {
    init()?;
    let cfg = LaunchConfig {
        grid,
        block,
        dynamic_shared_bytes: shared,
    };
    let ctx = if ctx.is_null() {
        None
    } else {
        Some(state::id_of(Kind::Context, ctx).ok_or(code::INVALID_CONTEXT)?)
    };
    let (id, f, packed, cluster) = prepare_launch(func, ctx, &cfg, params, extra)?;
    Ok(NodeKind::Kernel(KernelNode::new(
        id,
        f,
        cfg,
        cluster,
        Arc::new(packed),
    )))
}

fn kernel_node_v2(p: *const CUDA_KERNEL_NODE_PARAMS) -> R<NodeKind> {
    if p.is_null() {
        return Err(code::INVALID_VALUE);
    }
    // SAFETY: a valid parameter block, by the C contract.
    let p = unsafe { *p };
    if p.func.is_null() && !p.kern.is_null() {
        return Err(code::INVALID_VALUE); // no CUkernel exists in softcuda
    }
    kernel_node(
        p.func,
        [p.gridDimX, p.gridDimY, p.gridDimZ],
        [p.blockDimX, p.blockDimY, p.blockDimZ],
        p.sharedMemBytes,
        p.kernelParams,
        p.extra,
        p.ctx,
    )
}

fn kernel_node_v1(p: *const CUDA_KERNEL_NODE_PARAMS_v1) -> R<NodeKind> {
    if p.is_null() {
        return Err(code::INVALID_VALUE);
    }
    // SAFETY: a valid parameter block, by the C contract.
    let p = unsafe { *p };
    kernel_node(
        p.func,
        [p.gridDimX, p.gridDimY, p.gridDimZ],
        [p.blockDimX, p.blockDimY, p.blockDimZ],
        p.sharedMemBytes,
        p.kernelParams,
        p.extra,
        core::ptr::null_mut(),
    )
}

fn memcpy_node(p: *const CUDA_MEMCPY3D) -> R<NodeKind> {
    init()?;
    if p.is_null() {
        return Err(code::INVALID_VALUE);
    }
    // SAFETY: a valid descriptor, by the C contract.
    let c = unsafe { *p };
    with_graph_memory(|| memcpy3d_job(&c))?; // checked now; built again at each launch
    Ok(NodeKind::Memcpy(Raw(c)))
}

fn memset_node(p: *const CUDA_MEMSET_NODE_PARAMS) -> R<NodeKind> {
    init()?;
    if p.is_null() {
        return Err(code::INVALID_VALUE);
    }
    // SAFETY: a valid parameter block, by the C contract.
    let m = unsafe { *p };
    with_graph_memory(|| {
        set_job(
            m.dst,
            m.pitch,
            m.value,
            m.elementSize as usize,
            m.width,
            m.height,
        )
    })?;
    Ok(NodeKind::Memset(m))
}

fn host_node(p: *const CUDA_HOST_NODE_PARAMS) -> R<NodeKind> {
    init()?;
    if p.is_null() {
        return Err(code::INVALID_VALUE);
    }
    // SAFETY: a valid parameter block, by the C contract.
    let h = unsafe { *p };
    h.fn_.ok_or(code::INVALID_VALUE)?;
    Ok(NodeKind::Host(Raw(h)))
}

/// Adds a node doing `kind` to graph `g` after the `n` nodes at `deps`.
fn add(ph: *mut CUgraphNode, g: CUgraph, deps: *const CUgraphNode, n: usize, kind: NodeKind) -> R {
    if ph.is_null() {
        return Err(code::INVALID_VALUE);
    }
    let id = {
        let mut s = store();
        let gid = graph::graph_id(&s, g)?;
        let deps = graph::read_nodes(&s, gid, deps, n)?;
        s.add_node(gid, &deps, kind)?
    };
    out(ph, node_handle(id))
}

/// What node `h` does.
fn kind_of(h: CUgraphNode) -> R<NodeKind> {
    let s = store();
    let id = graph::node_id(&s, h)?;
    s.nodes
        .get(&id)
        .map(|n| n.kind.clone())
        .ok_or(code::INVALID_VALUE)
}

/// Replaces what node `h` does with `kind`, of the same type.
fn set_kind(h: CUgraphNode, kind: NodeKind) -> R {
    let mut s = store();
    let id = graph::node_id(&s, h)?;
    let node = s.nodes.get_mut(&id).ok_or(code::INVALID_VALUE)?;
    if node.kind.type_code() != kind.type_code() {
        return Err(code::INVALID_VALUE);
    }
    node.kind = kind;
    Ok(())
}

fn kernel_of(h: CUgraphNode) -> R<KernelNode> {
    match kind_of(h)? {
        NodeKind::Kernel(k) => Ok(k),
        _ => Err(code::INVALID_VALUE),
    }
}

// ---- graphs -----------------------------------------------------------------------

/// `cuGraphCreate`: `flags` must be 0.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphCreate(ph: *mut CUgraph, flags: c_uint) -> CUresult {
    api!("cuGraphCreate", {
        init()?;
        if ph.is_null() || flags != 0 {
            return Err(code::INVALID_VALUE);
        }
        let id = store().create_graph(false);
        out(ph, state::handle(Kind::Graph, id))
    })
}

/// `cuGraphDestroy`: with its nodes. A graph embedded in a child-graph node belongs
/// to the node (`INVALID_VALUE`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphDestroy(g: CUgraph) -> CUresult {
    api!("cuGraphDestroy", {
        init()?;
        let mut s = store();
        let id = graph::graph_id(&s, g)?;
        if s.graphs.get(&id).is_some_and(|x| x.embedded) {
            return Err(code::INVALID_VALUE);
        }
        if s.capture.sessions.values().any(|c| c.graph == id) {
            return Err(code::STREAM_CAPTURE_UNSUPPORTED); // still being captured
        }
        s.destroy_graph(id);
        drop(s);
        mem::reap();
        Ok(())
    })
}

/// `cuGraphClone`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphClone(ph: *mut CUgraph, g: CUgraph) -> CUresult {
    api!("cuGraphClone", {
        init()?;
        if ph.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let id = {
            let mut s = store();
            let gid = graph::graph_id(&s, g)?;
            if s.has_mem_nodes(gid) {
                return Err(code::NOT_SUPPORTED); // graphs with memory nodes
            }
            s.clone_graph(gid, false)?
        };
        out(ph, state::handle(Kind::Graph, id))
    })
}

/// `cuGraphNodeFindInClone`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphNodeFindInClone(
    ph: *mut CUgraphNode,
    original: CUgraphNode,
    clone: CUgraph,
) -> CUresult {
    api!("cuGraphNodeFindInClone", {
        init()?;
        let found = {
            let s = store();
            let orig = state::id_of(Kind::GraphNode, original).ok_or(code::INVALID_VALUE)?;
            let gid = graph::graph_id(&s, clone)?;
            let nodes = s
                .graphs
                .get(&gid)
                .map(|x| x.nodes.clone())
                .unwrap_or_default();
            nodes
                .into_iter()
                .find(|n| s.nodes.get(n).and_then(|x| x.cloned_from) == Some(orig))
                .ok_or(code::INVALID_VALUE)?
        };
        out(ph, node_handle(found))
    })
}

/// Fills a caller's node array the driver's way: with `list` null, the count; else
/// up to `*n` entries (the rest of them null) and the count written.
fn fill(list: &[u64], arr: *mut CUgraphNode, n: *mut usize) -> R {
    if n.is_null() {
        return Err(code::INVALID_VALUE);
    }
    if arr.is_null() {
        return out(n, list.len());
    }
    // SAFETY: `n` is a valid pointer, by the C contract.
    let cap = unsafe { *n };
    for i in 0..cap {
        // SAFETY: the caller's array holds `*n` entries.
        unsafe { *arr.add(i) = list.get(i).map_or(null_node(), |id| node_handle(*id)) };
    }
    out(n, cap.min(list.len()))
}

/// Fills edge arrays (`from`, `to`, optional edge data) the same way.
fn fill_edges(
    edges: &[(u64, u64)],
    from: *mut CUgraphNode,
    to: *mut CUgraphNode,
    data: *mut CUgraphEdgeData,
    n: *mut usize,
) -> R {
    if n.is_null() {
        return Err(code::INVALID_VALUE);
    }
    if from.is_null() && to.is_null() {
        return out(n, edges.len());
    }
    if from.is_null() || to.is_null() {
        return Err(code::INVALID_VALUE);
    }
    // SAFETY: `n` is a valid pointer, by the C contract.
    let cap = unsafe { *n };
    for i in 0..cap {
        let (f, t) = edges.get(i).map_or((null_node(), null_node()), |(f, t)| {
            (node_handle(*f), node_handle(*t))
        });
        // SAFETY: the caller's arrays hold `*n` entries each.
        unsafe {
            *from.add(i) = f;
            *to.add(i) = t;
            if !data.is_null() {
                *data.add(i) = CUgraphEdgeData::default();
            }
        }
    }
    out(n, cap.min(edges.len()))
}

/// `cuGraphGetNodes`: in the order they were added.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphGetNodes(
    g: CUgraph,
    nodes: *mut CUgraphNode,
    n: *mut usize,
) -> CUresult {
    api!("cuGraphGetNodes", {
        init()?;
        let list = {
            let s = store();
            let gid = graph::graph_id(&s, g)?;
            s.graphs
                .get(&gid)
                .map(|x| x.nodes.clone())
                .unwrap_or_default()
        };
        fill(&list, nodes, n)
    })
}

/// `cuGraphGetRootNodes`: the nodes without dependencies.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphGetRootNodes(
    g: CUgraph,
    nodes: *mut CUgraphNode,
    n: *mut usize,
) -> CUresult {
    api!("cuGraphGetRootNodes", {
        init()?;
        let list: Vec<u64> = {
            let s = store();
            let gid = graph::graph_id(&s, g)?;
            let all = s
                .graphs
                .get(&gid)
                .map(|x| x.nodes.clone())
                .unwrap_or_default();
            all.into_iter()
                .filter(|id| s.nodes.get(id).is_some_and(|x| x.deps.is_empty()))
                .collect()
        };
        fill(&list, nodes, n)
    })
}

fn get_edges(
    g: CUgraph,
    from: *mut CUgraphNode,
    to: *mut CUgraphNode,
    data: *mut CUgraphEdgeData,
    n: *mut usize,
) -> R {
    init()?;
    let edges = {
        let s = store();
        let gid = graph::graph_id(&s, g)?;
        s.edges(gid)
    };
    fill_edges(&edges, from, to, data, n)
}

/// `cuGraphGetEdges` (the 10.0 ABI).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphGetEdges(
    g: CUgraph,
    from: *mut CUgraphNode,
    to: *mut CUgraphNode,
    n: *mut usize,
) -> CUresult {
    api!("cuGraphGetEdges", {
        get_edges(g, from, to, core::ptr::null_mut(), n)
    })
}

/// `cuGraphGetEdges_v2` (12.3): every edge has default edge data.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphGetEdges_v2(
    g: CUgraph,
    from: *mut CUgraphNode,
    to: *mut CUgraphNode,
    data: *mut CUgraphEdgeData,
    n: *mut usize,
) -> CUresult {
    api!("cuGraphGetEdges", { get_edges(g, from, to, data, n) })
}

/// Reads the edges `from[i] -> to[i]` of graph `g`; non-default edge data is
/// `NOT_SUPPORTED` (programmatic dependencies are not modelled).
fn read_edges(
    s: &graph::Store,
    g: u64,
    from: *const CUgraphNode,
    to: *const CUgraphNode,
    data: *const CUgraphEdgeData,
    n: usize,
) -> R<Vec<(u64, u64)>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if from.is_null() || to.is_null() {
        return Err(code::INVALID_VALUE);
    }
    let mut edges = Vec::with_capacity(n);
    for i in 0..n {
        // SAFETY: the caller's arrays hold `n` entries each, by the C contract.
        let (f, t) = unsafe { (*from.add(i), *to.add(i)) };
        if !data.is_null() {
            // SAFETY: as above.
            let d = unsafe { *data.add(i) };
            if d != CUgraphEdgeData::default() {
                return Err(code::NOT_SUPPORTED);
            }
        }
        let (f, t) = (graph::node_id(s, f)?, graph::node_id(s, t)?);
        let in_g = |id: &u64| s.nodes.get(id).is_some_and(|x| x.graph == g);
        if f == t || !in_g(&f) || !in_g(&t) || edges.contains(&(f, t)) {
            return Err(code::INVALID_VALUE);
        }
        edges.push((f, t));
    }
    Ok(edges)
}

fn add_dependencies(
    g: CUgraph,
    from: *const CUgraphNode,
    to: *const CUgraphNode,
    data: *const CUgraphEdgeData,
    n: usize,
) -> R {
    init()?;
    let mut s = store();
    let gid = graph::graph_id(&s, g)?;
    let edges = read_edges(&s, gid, from, to, data, n)?;
    if edges
        .iter()
        .any(|(f, t)| s.nodes.get(t).is_some_and(|x| x.deps.contains(f)))
    {
        return Err(code::INVALID_VALUE); // already there
    }
    for (f, t) in edges {
        if let Some(node) = s.nodes.get_mut(&t) {
            node.deps.push(f);
        }
    }
    Ok(())
}

fn remove_dependencies(
    g: CUgraph,
    from: *const CUgraphNode,
    to: *const CUgraphNode,
    data: *const CUgraphEdgeData,
    n: usize,
) -> R {
    init()?;
    let mut s = store();
    let gid = graph::graph_id(&s, g)?;
    let edges = read_edges(&s, gid, from, to, data, n)?;
    if s.has_mem_nodes(gid) {
        return Err(code::NOT_SUPPORTED); // edges of graphs with memory nodes stay
    }
    if edges
        .iter()
        .any(|(f, t)| !s.nodes.get(t).is_some_and(|x| x.deps.contains(f)))
    {
        return Err(code::INVALID_VALUE); // no such edge
    }
    for (f, t) in edges {
        if let Some(node) = s.nodes.get_mut(&t) {
            node.deps.retain(|d| *d != f);
        }
    }
    Ok(())
}

/// `cuGraphAddDependencies` (the 10.0 ABI): each `to[i]` depends on `from[i]`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddDependencies(
    g: CUgraph,
    from: *const CUgraphNode,
    to: *const CUgraphNode,
    n: usize,
) -> CUresult {
    api!("cuGraphAddDependencies", {
        add_dependencies(g, from, to, core::ptr::null(), n)
    })
}

/// `cuGraphAddDependencies_v2` (12.3): edge data must be default.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddDependencies_v2(
    g: CUgraph,
    from: *const CUgraphNode,
    to: *const CUgraphNode,
    data: *const CUgraphEdgeData,
    n: usize,
) -> CUresult {
    api!("cuGraphAddDependencies", {
        add_dependencies(g, from, to, data, n)
    })
}

/// `cuGraphRemoveDependencies` (the 10.0 ABI).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphRemoveDependencies(
    g: CUgraph,
    from: *const CUgraphNode,
    to: *const CUgraphNode,
    n: usize,
) -> CUresult {
    api!("cuGraphRemoveDependencies", {
        remove_dependencies(g, from, to, core::ptr::null(), n)
    })
}

/// `cuGraphRemoveDependencies_v2` (12.3).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphRemoveDependencies_v2(
    g: CUgraph,
    from: *const CUgraphNode,
    to: *const CUgraphNode,
    data: *const CUgraphEdgeData,
    n: usize,
) -> CUresult {
    api!("cuGraphRemoveDependencies", {
        remove_dependencies(g, from, to, data, n)
    })
}

/// The nodes node `h` depends on (`dependents`: that depend on it).
fn neighbours(h: CUgraphNode, dependents: bool) -> R<Vec<u64>> {
    init()?;
    let s = store();
    let id = graph::node_id(&s, h)?;
    let node = s.nodes.get(&id).ok_or(code::INVALID_VALUE)?;
    if !dependents {
        return Ok(node.deps.clone());
    }
    let all = s
        .graphs
        .get(&node.graph)
        .map(|x| x.nodes.clone())
        .unwrap_or_default();
    Ok(all
        .into_iter()
        .filter(|n| s.nodes.get(n).is_some_and(|x| x.deps.contains(&id)))
        .collect())
}

fn fill_with_data(
    list: &[u64],
    arr: *mut CUgraphNode,
    data: *mut CUgraphEdgeData,
    n: *mut usize,
) -> R {
    fill(list, arr, n)?;
    if !arr.is_null() && !data.is_null() {
        // SAFETY: `n` was checked by `fill`; the caller's array holds that many.
        let k = unsafe { *n };
        for i in 0..k {
            // SAFETY: as above.
            unsafe { *data.add(i) = CUgraphEdgeData::default() };
        }
    }
    Ok(())
}

/// `cuGraphNodeGetDependencies` (the 10.0 ABI).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphNodeGetDependencies(
    h: CUgraphNode,
    deps: *mut CUgraphNode,
    n: *mut usize,
) -> CUresult {
    api!("cuGraphNodeGetDependencies", {
        fill(&neighbours(h, false)?, deps, n)
    })
}

/// `cuGraphNodeGetDependencies_v2` (12.3).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphNodeGetDependencies_v2(
    h: CUgraphNode,
    deps: *mut CUgraphNode,
    data: *mut CUgraphEdgeData,
    n: *mut usize,
) -> CUresult {
    api!("cuGraphNodeGetDependencies", {
        fill_with_data(&neighbours(h, false)?, deps, data, n)
    })
}

/// `cuGraphNodeGetDependentNodes` (the 10.0 ABI).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphNodeGetDependentNodes(
    h: CUgraphNode,
    deps: *mut CUgraphNode,
    n: *mut usize,
) -> CUresult {
    api!("cuGraphNodeGetDependentNodes", {
        fill(&neighbours(h, true)?, deps, n)
    })
}

/// `cuGraphNodeGetDependentNodes_v2` (12.3).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphNodeGetDependentNodes_v2(
    h: CUgraphNode,
    deps: *mut CUgraphNode,
    data: *mut CUgraphEdgeData,
    n: *mut usize,
) -> CUresult {
    api!("cuGraphNodeGetDependentNodes", {
        fill_with_data(&neighbours(h, true)?, deps, data, n)
    })
}

/// `cuGraphNodeGetType`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphNodeGetType(h: CUgraphNode, ty: *mut CUgraphNodeType) -> CUresult {
    api!("cuGraphNodeGetType", {
        init()?;
        out(ty, kind_of(h)?.type_code())
    })
}

/// `cuGraphDestroyNode`: with its edges.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphDestroyNode(h: CUgraphNode) -> CUresult {
    api!("cuGraphDestroyNode", {
        init()?;
        let mut s = store();
        let id = graph::node_id(&s, h)?;
        let g = s.nodes.get(&id).map(|x| x.graph).unwrap_or_default();
        if s.has_mem_nodes(g) {
            return Err(code::NOT_SUPPORTED); // nodes of graphs with memory nodes stay
        }
        s.destroy_node(id);
        Ok(())
    })
}

/// `cuGraphDebugDotPrint`: writes the graph as Graphviz DOT (every `flags` value
/// gives the same, fully detailed output).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphDebugDotPrint(
    g: CUgraph,
    path: *const c_char,
    _flags: c_uint,
) -> CUresult {
    api!("cuGraphDebugDotPrint", {
        init()?;
        if path.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: non-null (checked above) and NUL-terminated, by the C contract.
        let path = unsafe { c_text(path, code::INVALID_VALUE) }?;
        let text = {
            let s = store();
            let gid = graph::graph_id(&s, g)?;
            s.dot(gid)
        };
        std::fs::write(path, text).map_err(|_| OPERATING_SYSTEM)
    })
}

// ---- nodes --------------------------------------------------------------------------

/// `cuGraphAddKernelNode` (the 10.0 ABI, `CUDA_KERNEL_NODE_PARAMS_v1`): the argument
/// bytes are copied now.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddKernelNode(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    p: *const CUDA_KERNEL_NODE_PARAMS_v1,
) -> CUresult {
    api!("cuGraphAddKernelNode", {
        add(ph, g, deps, n, kernel_node_v1(p)?)
    })
}

/// `cuGraphAddKernelNode_v2` (12.0): the argument bytes (from `kernelParams` or the
/// `extra` buffer) are copied now; `kern` (a `CUkernel`) is `INVALID_VALUE`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddKernelNode_v2(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    p: *const CUDA_KERNEL_NODE_PARAMS,
) -> CUresult {
    api!("cuGraphAddKernelNode", {
        add(ph, g, deps, n, kernel_node_v2(p)?)
    })
}

fn write_kernel_params(k: &KernelNode, p: *mut CUDA_KERNEL_NODE_PARAMS) -> R {
    out(
        p,
        CUDA_KERNEL_NODE_PARAMS {
            func: state::handle(Kind::Function, k.func),
            gridDimX: k.cfg.grid[0],
            gridDimY: k.cfg.grid[1],
            gridDimZ: k.cfg.grid[2],
            blockDimX: k.cfg.block[0],
            blockDimY: k.cfg.block[1],
            blockDimZ: k.cfg.block[2],
            sharedMemBytes: k.cfg.dynamic_shared_bytes,
            kernelParams: k.arg_ptrs.as_ptr().cast_mut().cast(),
            extra: core::ptr::null_mut(),
            kern: core::ptr::null_mut(),
            ctx: state::handle(Kind::Context, k.entry.ctx),
        },
    )
}

/// `cuGraphKernelNodeGetParams_v2`: `kernelParams` points at the node's own copy of
/// the arguments (valid until its parameters are set again or it is destroyed).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphKernelNodeGetParams_v2(
    h: CUgraphNode,
    p: *mut CUDA_KERNEL_NODE_PARAMS,
) -> CUresult {
    api!("cuGraphKernelNodeGetParams", {
        init()?;
        write_kernel_params(&kernel_of(h)?, p)
    })
}

/// `cuGraphKernelNodeGetParams` (the 10.0 ABI).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphKernelNodeGetParams(
    h: CUgraphNode,
    p: *mut CUDA_KERNEL_NODE_PARAMS_v1,
) -> CUresult {
    api!("cuGraphKernelNodeGetParams", {
        init()?;
        if p.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let k = kernel_of(h)?;
        let mut v2 = core::mem::MaybeUninit::<CUDA_KERNEL_NODE_PARAMS>::uninit();
        write_kernel_params(&k, v2.as_mut_ptr())?;
        // SAFETY: written just above.
        let v2 = unsafe { v2.assume_init() };
        out(
            p,
            CUDA_KERNEL_NODE_PARAMS_v1 {
                func: v2.func,
                gridDimX: v2.gridDimX,
                gridDimY: v2.gridDimY,
                gridDimZ: v2.gridDimZ,
                blockDimX: v2.blockDimX,
                blockDimY: v2.blockDimY,
                blockDimZ: v2.blockDimZ,
                sharedMemBytes: v2.sharedMemBytes,
                kernelParams: v2.kernelParams,
                extra: v2.extra,
            },
        )
    })
}

/// `cuGraphKernelNodeSetParams_v2`: arguments copied now.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphKernelNodeSetParams_v2(
    h: CUgraphNode,
    p: *const CUDA_KERNEL_NODE_PARAMS,
) -> CUresult {
    api!("cuGraphKernelNodeSetParams", {
        let kind = kernel_node_v2(p)?;
        set_kind(h, kind)
    })
}

/// `cuGraphKernelNodeSetParams` (the 10.0 ABI).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphKernelNodeSetParams(
    h: CUgraphNode,
    p: *const CUDA_KERNEL_NODE_PARAMS_v1,
) -> CUresult {
    api!("cuGraphKernelNodeSetParams", {
        let kind = kernel_node_v1(p)?;
        set_kind(h, kind)
    })
}

/// `cuGraphAddMemcpyNode`: host, device and unified memory; CUDA arrays are
/// `NOT_SUPPORTED`. The ranges are checked now (and again at each launch).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddMemcpyNode(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    p: *const CUDA_MEMCPY3D,
    _ctx: CUcontext,
) -> CUresult {
    api!("cuGraphAddMemcpyNode", {
        add(ph, g, deps, n, memcpy_node(p)?)
    })
}

/// `cuGraphMemcpyNodeGetParams`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphMemcpyNodeGetParams(
    h: CUgraphNode,
    p: *mut CUDA_MEMCPY3D,
) -> CUresult {
    api!("cuGraphMemcpyNodeGetParams", {
        init()?;
        match kind_of(h)? {
            NodeKind::Memcpy(c) => out(p, c.0),
            _ => Err(code::INVALID_VALUE),
        }
    })
}

/// `cuGraphMemcpyNodeSetParams`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphMemcpyNodeSetParams(
    h: CUgraphNode,
    p: *const CUDA_MEMCPY3D,
) -> CUresult {
    api!("cuGraphMemcpyNodeSetParams", {
        let kind = memcpy_node(p)?;
        set_kind(h, kind)
    })
}

/// `cuGraphAddMemsetNode`: element sizes 1, 2 and 4.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddMemsetNode(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    p: *const CUDA_MEMSET_NODE_PARAMS,
    _ctx: CUcontext,
) -> CUresult {
    api!("cuGraphAddMemsetNode", {
        add(ph, g, deps, n, memset_node(p)?)
    })
}

/// `cuGraphMemsetNodeGetParams`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphMemsetNodeGetParams(
    h: CUgraphNode,
    p: *mut CUDA_MEMSET_NODE_PARAMS,
) -> CUresult {
    api!("cuGraphMemsetNodeGetParams", {
        init()?;
        match kind_of(h)? {
            NodeKind::Memset(m) => out(p, m),
            _ => Err(code::INVALID_VALUE),
        }
    })
}

/// `cuGraphMemsetNodeSetParams`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphMemsetNodeSetParams(
    h: CUgraphNode,
    p: *const CUDA_MEMSET_NODE_PARAMS,
) -> CUresult {
    api!("cuGraphMemsetNodeSetParams", {
        let kind = memset_node(p)?;
        set_kind(h, kind)
    })
}

/// `cuGraphAddHostNode`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddHostNode(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    p: *const CUDA_HOST_NODE_PARAMS,
) -> CUresult {
    api!("cuGraphAddHostNode", { add(ph, g, deps, n, host_node(p)?) })
}

/// `cuGraphHostNodeGetParams`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphHostNodeGetParams(
    h: CUgraphNode,
    p: *mut CUDA_HOST_NODE_PARAMS,
) -> CUresult {
    api!("cuGraphHostNodeGetParams", {
        init()?;
        match kind_of(h)? {
            NodeKind::Host(x) => out(p, x.0),
            _ => Err(code::INVALID_VALUE),
        }
    })
}

/// `cuGraphHostNodeSetParams`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphHostNodeSetParams(
    h: CUgraphNode,
    p: *const CUDA_HOST_NODE_PARAMS,
) -> CUresult {
    api!("cuGraphHostNodeSetParams", {
        let kind = host_node(p)?;
        set_kind(h, kind)
    })
}

/// `cuGraphAddEmptyNode`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddEmptyNode(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
) -> CUresult {
    api!("cuGraphAddEmptyNode", {
        init()?;
        add(ph, g, deps, n, NodeKind::Empty)
    })
}

/// `cuGraphAddEventRecordNode`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddEventRecordNode(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    ev: CUevent,
) -> CUresult {
    api!("cuGraphAddEventRecordNode", {
        init()?;
        let (id, e) = event(ev)?;
        add(ph, g, deps, n, NodeKind::EventRecord(id, e))
    })
}

/// `cuGraphAddEventWaitNode`: waits for the event's last record as of each launch.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddEventWaitNode(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    ev: CUevent,
) -> CUresult {
    api!("cuGraphAddEventWaitNode", {
        init()?;
        let (id, e) = event(ev)?;
        add(ph, g, deps, n, NodeKind::EventWait(id, e))
    })
}

fn get_event(h: CUgraphNode, ev: *mut CUevent, record: bool) -> R {
    init()?;
    match (kind_of(h)?, record) {
        (NodeKind::EventRecord(id, _), true) | (NodeKind::EventWait(id, _), false) => {
            out(ev, state::handle(Kind::Event, id))
        }
        _ => Err(code::INVALID_VALUE),
    }
}

fn event_kind(ev: CUevent, record: bool) -> R<NodeKind> {
    init()?;
    let (id, e) = event(ev)?;
    Ok(if record {
        NodeKind::EventRecord(id, e)
    } else {
        NodeKind::EventWait(id, e)
    })
}

/// `cuGraphEventRecordNodeGetEvent`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphEventRecordNodeGetEvent(
    h: CUgraphNode,
    ev: *mut CUevent,
) -> CUresult {
    api!("cuGraphEventRecordNodeGetEvent", { get_event(h, ev, true) })
}

/// `cuGraphEventRecordNodeSetEvent`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphEventRecordNodeSetEvent(h: CUgraphNode, ev: CUevent) -> CUresult {
    api!("cuGraphEventRecordNodeSetEvent", {
        let kind = event_kind(ev, true)?;
        set_kind(h, kind)
    })
}

/// `cuGraphEventWaitNodeGetEvent`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphEventWaitNodeGetEvent(
    h: CUgraphNode,
    ev: *mut CUevent,
) -> CUresult {
    api!("cuGraphEventWaitNodeGetEvent", { get_event(h, ev, false) })
}

/// `cuGraphEventWaitNodeSetEvent`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphEventWaitNodeSetEvent(h: CUgraphNode, ev: CUevent) -> CUresult {
    api!("cuGraphEventWaitNodeSetEvent", {
        let kind = event_kind(ev, false)?;
        set_kind(h, kind)
    })
}

/// Whether `cuGraphAddChildGraphNode` takes a child with conditional nodes
/// ([`crate::control::allow_conditional_children`]).
pub(crate) static CONDITIONAL_CHILDREN: AtomicBool = AtomicBool::new(false);

/// `cuGraphAddChildGraphNode`: `child` is cloned into the node, as on the driver.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddChildGraphNode(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    child: CUgraph,
) -> CUresult {
    api!("cuGraphAddChildGraphNode", {
        init()?;
        if ph.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let id = {
            let mut s = store();
            let gid = graph::graph_id(&s, g)?;
            let cid = graph::graph_id(&s, child)?;
            let deps = graph::read_nodes(&s, gid, deps, n)?;
            if s.has_mem_nodes(cid) {
                return Err(code::NOT_SUPPORTED); // cannot be cloned into the node
            }
            if s.has_cond_nodes(cid) && !CONDITIONAL_CHILDREN.load(Ordering::Relaxed) {
                return Err(code::INVALID_VALUE); // "must not contain conditional nodes"
            }
            let copy = s.clone_graph(cid, true)?;
            s.add_node(gid, &deps, NodeKind::Child(copy))?
        };
        out(ph, node_handle(id))
    })
}

/// `cuGraphChildGraphNodeGetGraph`: the graph embedded in the node (owned by it).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphChildGraphNodeGetGraph(
    h: CUgraphNode,
    pg: *mut CUgraph,
) -> CUresult {
    api!("cuGraphChildGraphNodeGetGraph", {
        init()?;
        match kind_of(h)? {
            NodeKind::Child(c) => out(pg, state::handle(Kind::Graph, c)),
            _ => Err(code::INVALID_VALUE),
        }
    })
}

// ---- memory nodes -----------------------------------------------------------------

/// Checks an allocation node's parameters and reserves its memory (for graph `g`).
fn alloc_node(g: u64, p: &CUDA_MEM_ALLOC_NODE_PARAMS) -> R<graph::mem::Reservation> {
    let (ctx, ndev) = {
        let s = state::state();
        (state::current_ctx(&s)?, s.config.devices.len())
    };
    let props = p.poolProps;
    let dev = usize::try_from(props.location.id).map_err(|_| code::INVALID_VALUE)?;
    if p.bytesize == 0
        || props.allocType != CU_MEM_ALLOCATION_TYPE_PINNED
        || props.location.type_ != CU_MEM_LOCATION_TYPE_DEVICE
        || dev >= ndev
        || props.handleTypes != CU_MEM_HANDLE_TYPE_NONE
        || (p.accessDescCount > 0 && p.accessDescs.is_null())
    {
        return Err(code::INVALID_VALUE);
    }
    let mut access = Vec::with_capacity(p.accessDescCount);
    for i in 0..p.accessDescCount {
        // SAFETY: the caller's array holds `accessDescCount` descriptors.
        let d = unsafe { *p.accessDescs.add(i) };
        let ok_dev = usize::try_from(d.location.id).is_ok_and(|x| x < ndev);
        if d.location.type_ != CU_MEM_LOCATION_TYPE_DEVICE
            || !ok_dev
            || d.flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        {
            return Err(code::INVALID_VALUE);
        }
        access.push(d);
    }
    mem::reserve(g, ctx, dev, p.bytesize as u64, props, access)
}

/// Adds an allocation node doing `p` to graph `g` and writes its address to `p`.
fn add_alloc(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    p: *mut CUDA_MEM_ALLOC_NODE_PARAMS,
) -> R {
    init()?;
    if ph.is_null() || p.is_null() {
        return Err(code::INVALID_VALUE);
    }
    // SAFETY: a valid parameter block, by the C contract.
    let params = unsafe { &mut *p };
    let (id, base) = {
        let mut s = store();
        let gid = graph::graph_id(&s, g)?;
        if s.graphs.get(&gid).is_some_and(|x| x.embedded) {
            return Err(code::NOT_SUPPORTED); // no memory nodes in embedded graphs
        }
        let deps = graph::read_nodes(&s, gid, deps, n)?;
        let r = alloc_node(gid, params)?;
        let base = r.base;
        (
            s.add_node(gid, &deps, NodeKind::MemAlloc(Arc::new(r)))?,
            base,
        )
    };
    params.dptr = base;
    out(ph, node_handle(id))
}

/// Adds a free node of `dptr` to graph `g`.
fn add_free(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    dptr: CUdeviceptr,
) -> R {
    init()?;
    if ph.is_null() {
        return Err(code::INVALID_VALUE);
    }
    let id = {
        let mut s = store();
        let gid = graph::graph_id(&s, g)?;
        if s.graphs.get(&gid).is_some_and(|x| x.embedded) {
            return Err(code::NOT_SUPPORTED); // no memory nodes in embedded graphs
        }
        let deps = graph::read_nodes(&s, gid, deps, n)?;
        let nodes = s
            .graphs
            .get(&gid)
            .map(|x| x.nodes.clone())
            .unwrap_or_default();
        let twice = nodes.iter().any(|x| {
            s.nodes
                .get(x)
                .is_some_and(|node| matches!(node.kind, NodeKind::MemFree(p) if p == dptr))
        });
        mem::add_free(gid, dptr, twice)?;
        s.add_node(gid, &deps, NodeKind::MemFree(dptr))?
    };
    out(ph, node_handle(id))
}

/// `cuGraphAddMemAllocNode`: reserves `bytesize` bytes now and returns their
/// address in `dptr`, fixed for the graph's life; the memory is accessible from the
/// node's execution until a free node's (or, for an allocation its graph does not
/// free, `cuMemFree`'s). Pinned device memory of a valid device only, without
/// export handle types; access descriptors must grant read-write to devices.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddMemAllocNode(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    p: *mut CUDA_MEM_ALLOC_NODE_PARAMS,
) -> CUresult {
    api!("cuGraphAddMemAllocNode", { add_alloc(ph, g, deps, n, p) })
}

/// `cuGraphAddMemFreeNode`: `dptr` must be the address of an allocation node's
/// memory, freed once per graph (one freed in its own graph cannot be freed
/// elsewhere).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddMemFreeNode(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    dptr: CUdeviceptr,
) -> CUresult {
    api!("cuGraphAddMemFreeNode", { add_free(ph, g, deps, n, dptr) })
}

/// `cuGraphMemAllocNodeGetParams`: `accessDescs` points at the node's own copy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphMemAllocNodeGetParams(
    h: CUgraphNode,
    p: *mut CUDA_MEM_ALLOC_NODE_PARAMS,
) -> CUresult {
    api!("cuGraphMemAllocNodeGetParams", {
        init()?;
        match kind_of(h)? {
            NodeKind::MemAlloc(r) => out(
                p,
                CUDA_MEM_ALLOC_NODE_PARAMS {
                    poolProps: r.props.0,
                    accessDescs: if r.access.is_empty() {
                        core::ptr::null()
                    } else {
                        r.access.as_ptr()
                    },
                    accessDescCount: r.access.len(),
                    bytesize: r.size as usize,
                    dptr: r.base,
                },
            ),
            _ => Err(code::INVALID_VALUE),
        }
    })
}

/// `cuGraphMemFreeNodeGetParams`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphMemFreeNodeGetParams(
    h: CUgraphNode,
    dptr: *mut CUdeviceptr,
) -> CUresult {
    api!("cuGraphMemFreeNodeGetParams", {
        init()?;
        match kind_of(h)? {
            NodeKind::MemFree(p) => out(dptr, p),
            _ => Err(code::INVALID_VALUE),
        }
    })
}

/// `cuDeviceGraphMemTrim`: gives back the memory of allocation nodes that no
/// longer exist (and are not mapped); there is no pool to trim beyond that.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGraphMemTrim(device: CUdevice) -> CUresult {
    api!("cuDeviceGraphMemTrim", {
        let n = {
            let s = state::state();
            state::require_init(&s)?;
            s.config.devices.len()
        };
        if usize::try_from(device).map_or(true, |d| d >= n) {
            return Err(code::INVALID_DEVICE);
        }
        mem::reap();
        Ok(())
    })
}

// ---- conditional nodes --------------------------------------------------------------

/// `cuGraphConditionalHandleCreate`: a handle of graph `g` for context `ctx`, its
/// value `default` (reset to it at the start of every launch with
/// `CU_GRAPH_COND_ASSIGN_DEFAULT`; otherwise it keeps what was last set).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphConditionalHandleCreate(
    ph: *mut CUgraphConditionalHandle,
    g: CUgraph,
    ctx: CUcontext,
    default: c_uint,
    flags: c_uint,
) -> CUresult {
    api!("cuGraphConditionalHandleCreate", {
        init()?;
        if ph.is_null() || flags & !CU_GRAPH_COND_ASSIGN_DEFAULT != 0 {
            return Err(code::INVALID_VALUE);
        }
        let cid = {
            let s = state::state();
            let id = state::id_of(Kind::Context, ctx).ok_or(code::INVALID_CONTEXT)?;
            s.context(id)?;
            id
        };
        let mut s = store();
        let gid = graph::graph_id(&s, g)?;
        let c = cond::create(gid, cid, default, flags & CU_GRAPH_COND_ASSIGN_DEFAULT != 0);
        let handle = c.handle;
        if let Some(x) = s.graphs.get_mut(&gid) {
            x.conds.push(c);
        }
        out(ph, handle)
    })
}

/// Adds a conditional node to graph `g`: its body graphs are created (owned by the
/// node) and written to `phGraph_out`.
fn add_conditional(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    p: &mut CUDA_CONDITIONAL_NODE_PARAMS,
) -> R {
    if ph.is_null() || p.phGraph_out.is_null() {
        return Err(code::INVALID_VALUE);
    }
    let c = cond::get(p.handle).ok_or(code::INVALID_VALUE)?;
    let size = p.size as usize;
    let ok_size = match p.type_ {
        CU_GRAPH_COND_TYPE_IF => matches!(size, 1 | 2),
        CU_GRAPH_COND_TYPE_WHILE => size == 1,
        CU_GRAPH_COND_TYPE_SWITCH => size >= 1,
        _ => false,
    };
    if !ok_size {
        return Err(code::INVALID_VALUE);
    }
    if !p.ctx.is_null() && state::id_of(Kind::Context, p.ctx) != Some(c.ctx) {
        return Err(code::INVALID_VALUE);
    }
    let (id, bodies) = {
        let mut s = store();
        let gid = graph::graph_id(&s, g)?;
        if c.graph != gid {
            return Err(code::INVALID_VALUE); // a handle of another graph
        }
        let deps = graph::read_nodes(&s, gid, deps, n)?;
        let bodies: Vec<u64> = (0..size)
            .map(|_| {
                let b = s.create_graph(true);
                if let Some(x) = s.graphs.get_mut(&b) {
                    x.body = true;
                }
                b
            })
            .collect();
        let kind = NodeKind::Conditional(CondNode {
            cond: c,
            ty: p.type_,
            bodies: bodies.clone(),
        });
        (s.add_node(gid, &deps, kind)?, bodies)
    };
    for (i, b) in bodies.into_iter().enumerate() {
        // SAFETY: the caller's array holds `size` graphs, by the C contract.
        unsafe { *p.phGraph_out.add(i) = state::handle(Kind::Graph, b) };
    }
    out(ph, node_handle(id))
}

/// The generic `cuGraphAddNode`: conditional, memory and empty nodes; other types
/// are `NOT_SUPPORTED` (use the type-specific functions).
fn add_generic(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    data: *const CUgraphEdgeData,
    n: usize,
    p: *mut CUgraphNodeParams,
) -> R {
    init()?;
    if p.is_null() {
        return Err(code::INVALID_VALUE);
    }
    if !data.is_null() {
        for i in 0..n {
            // SAFETY: the caller's array holds `n` entries, by the C contract.
            if unsafe { *data.add(i) } != CUgraphEdgeData::default() {
                return Err(code::NOT_SUPPORTED);
            }
        }
    }
    // SAFETY: a valid parameter block, by the C contract.
    let params = unsafe { &mut *p };
    match params.type_ {
        // SAFETY (each arm): the union member the type names.
        CU_GRAPH_NODE_TYPE_CONDITIONAL => {
            add_conditional(ph, g, deps, n, unsafe { &mut params.anon_0.conditional })
        }
        CU_GRAPH_NODE_TYPE_MEM_ALLOC => {
            // v1 and v2 of the parameters have one layout.
            let a: *mut CUDA_MEM_ALLOC_NODE_PARAMS = core::ptr::addr_of_mut!(params.anon_0.alloc);
            add_alloc(ph, g, deps, n, a)
        }
        CU_GRAPH_NODE_TYPE_MEM_FREE => add_free(ph, g, deps, n, unsafe { params.anon_0.free.dptr }),
        CU_GRAPH_NODE_TYPE_EMPTY => add(ph, g, deps, n, NodeKind::Empty),
        _ => Err(code::NOT_SUPPORTED),
    }
}

/// `cuGraphAddNode` (the 12.2 ABI): see `cuGraphAddNode_v2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddNode(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    n: usize,
    p: *mut CUgraphNodeParams,
) -> CUresult {
    api!("cuGraphAddNode", {
        add_generic(ph, g, deps, core::ptr::null(), n, p)
    })
}

/// `cuGraphAddNode_v2` (12.3): conditional nodes (IF with one or two bodies, WHILE,
/// SWITCH), memory allocation and free nodes, empty nodes; edge data must be
/// default. Other node types are `NOT_SUPPORTED`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphAddNode_v2(
    ph: *mut CUgraphNode,
    g: CUgraph,
    deps: *const CUgraphNode,
    data: *const CUgraphEdgeData,
    n: usize,
    p: *mut CUgraphNodeParams,
) -> CUresult {
    api!("cuGraphAddNode", { add_generic(ph, g, deps, data, n, p) })
}

/// Conditional bodies (`in_body`) may hold kernel, copy, memset, host, empty, child
/// and conditional nodes; event and memory nodes there are `NOT_SUPPORTED` (with
/// the node).
fn check_bodies(s: &graph::Store, g: u64, in_body: bool) -> Result<(), (CUresult, u64)> {
    let nodes = s
        .graphs
        .get(&g)
        .map(|x| x.nodes.clone())
        .unwrap_or_default();
    for n in nodes {
        let Some(node) = s.nodes.get(&n) else {
            continue;
        };
        match &node.kind {
            NodeKind::EventRecord(..)
            | NodeKind::EventWait(..)
            | NodeKind::MemAlloc(_)
            | NodeKind::MemFree(_)
                if in_body =>
            {
                return Err((code::NOT_SUPPORTED, n));
            }
            NodeKind::Child(c) => check_bodies(s, *c, in_body)?,
            NodeKind::Conditional(c) => {
                for b in &c.bodies {
                    check_bodies(s, *b, true)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

// ---- executable graphs ------------------------------------------------------------------

/// Instantiates `g`: the exec's id, or the error and the node at fault (a cycle:
/// `INVALID_VALUE` and a node on it).
fn instantiate(g: CUgraph, flags: u64) -> Result<u64, (CUresult, Option<u64>)> {
    state::current_ctx(&state::state()).map_err(|e| (e, None))?;
    if flags
        & !(INSTANTIATE_AUTO_FREE
            | INSTANTIATE_UPLOAD
            | INSTANTIATE_NODE_PRIORITY
            | INSTANTIATE_DEVICE_LAUNCH)
        != 0
    {
        return Err((code::INVALID_VALUE, None));
    }
    if flags & INSTANTIATE_DEVICE_LAUNCH != 0 {
        return Err((code::NOT_SUPPORTED, None)); // no device-side launch
    }
    let mut s = store();
    let gid = graph::graph_id(&s, g).map_err(|e| (e, None))?;
    if s.has_mem_nodes(gid) && s.execs.values().any(|e| e.mem_graph == Some(gid)) {
        // Only one executable graph of a graph with memory nodes at a time.
        return Err((code::INVALID_VALUE, None));
    }
    check_bodies(&s, gid, false).map_err(|(e, n)| (e, Some(n)))?;
    let e = exec::instantiate(&s, gid, flags).map_err(|n| (code::INVALID_VALUE, Some(n)))?;
    let id = graph::next_id();
    s.execs.insert(id, e);
    Ok(id)
}

/// `cuGraphInstantiateWithFlags`: a graph with a cycle is `INVALID_VALUE`;
/// `CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH` is `NOT_SUPPORTED`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphInstantiateWithFlags(
    ph: *mut CUgraphExec,
    g: CUgraph,
    flags: c_ulonglong,
) -> CUresult {
    api!("cuGraphInstantiateWithFlags", {
        init()?;
        if ph.is_null() || flags & INSTANTIATE_UPLOAD != 0 {
            return Err(code::INVALID_VALUE);
        }
        let id = instantiate(g, flags).map_err(|(e, _)| e)?;
        out(ph, state::handle(Kind::GraphExec, id))
    })
}

/// `cuGraphInstantiateWithParams`: reports the node at fault and the result in the
/// parameter block; the upload stream is checked (an upload does nothing more).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphInstantiateWithParams(
    ph: *mut CUgraphExec,
    g: CUgraph,
    p: *mut CUDA_GRAPH_INSTANTIATE_PARAMS,
) -> CUresult {
    api!("cuGraphInstantiateWithParams", {
        init()?;
        if ph.is_null() || p.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: a valid parameter block, by the C contract.
        let params = unsafe { &mut *p };
        if params.flags & INSTANTIATE_UPLOAD != 0 {
            check_stream(params.hUploadStream)?;
        }
        match instantiate(g, params.flags) {
            Ok(id) => {
                params.hErrNode_out = null_node();
                params.result_out = CUDA_GRAPH_INSTANTIATE_SUCCESS;
                out(ph, state::handle(Kind::GraphExec, id))
            }
            Err((e, node)) => {
                params.hErrNode_out = opt_node(node);
                params.result_out = if node.is_some() {
                    CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE
                } else {
                    CUDA_GRAPH_INSTANTIATE_ERROR
                };
                Err(e)
            }
        }
    })
}

fn exec_id(h: CUgraphExec) -> R<u64> {
    let id = state::id_of(Kind::GraphExec, h).ok_or(code::INVALID_VALUE)?;
    if store().execs.contains_key(&id) {
        Ok(id)
    } else {
        Err(code::INVALID_VALUE)
    }
}

/// A stream handle of the current context: a default stream or a live stream.
fn check_stream(h: CUstream) -> R<u64> {
    let s = state::state();
    let ctx = state::current_ctx(&s)?;
    if !matches!(h as usize, 0 | CU_STREAM_LEGACY | CU_STREAM_PER_THREAD) {
        let id = state::id_of(Kind::Stream, h).ok_or(code::INVALID_HANDLE)?;
        s.streams.get(&id).ok_or(code::INVALID_HANDLE)?;
    }
    Ok(ctx)
}

/// `cuGraphLaunch`: the nodes run in dependency order on the stream, as stream work
/// (sticky errors abandon the rest, as for any stream work). Launching into a
/// capturing stream is `NOT_SUPPORTED`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphLaunch(h: CUgraphExec, stream: CUstream) -> CUresult {
    api!("cuGraphLaunch", {
        let ctx = state::current_ctx(&state::state())?;
        let id = exec_id(h)?;
        if capture::is_capturing(stream) {
            return Err(code::NOT_SUPPORTED);
        }
        exec::launch(id, ctx, stream)
    })
}

/// `cuGraphUpload`: checks its arguments; there is nothing to upload.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphUpload(h: CUgraphExec, stream: CUstream) -> CUresult {
    api!("cuGraphUpload", {
        exec_id(h)?;
        check_stream(stream).map(|_| ())
    })
}

/// `cuGraphExecDestroy`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecDestroy(h: CUgraphExec) -> CUresult {
    api!("cuGraphExecDestroy", {
        init()?;
        let id = state::id_of(Kind::GraphExec, h).ok_or(code::INVALID_VALUE)?;
        let e = store().execs.remove(&id).ok_or(code::INVALID_VALUE)?;
        drop(e);
        mem::reap();
        Ok(())
    })
}

/// `cuGraphExecGetFlags`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecGetFlags(h: CUgraphExec, flags: *mut u64) -> CUresult {
    api!("cuGraphExecGetFlags", {
        init()?;
        let id = state::id_of(Kind::GraphExec, h).ok_or(code::INVALID_VALUE)?;
        let f = store()
            .execs
            .get(&id)
            .map(|e| e.flags)
            .ok_or(code::INVALID_VALUE)?;
        out(flags, f)
    })
}

fn exec_set(h: CUgraphExec, node: CUgraphNode, kind: NodeKind) -> R {
    let id = exec_id(h)?;
    let n = state::id_of(Kind::GraphNode, node).ok_or(code::INVALID_VALUE)?;
    exec::set_leaf(&mut store(), id, n, kind)
}

/// `cuGraphExecKernelNodeSetParams_v2`: the function must stay in the same context.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecKernelNodeSetParams_v2(
    h: CUgraphExec,
    node: CUgraphNode,
    p: *const CUDA_KERNEL_NODE_PARAMS,
) -> CUresult {
    api!("cuGraphExecKernelNodeSetParams", {
        let kind = kernel_node_v2(p)?;
        exec_set(h, node, kind)
    })
}

/// `cuGraphExecKernelNodeSetParams` (the 10.1 ABI).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecKernelNodeSetParams(
    h: CUgraphExec,
    node: CUgraphNode,
    p: *const CUDA_KERNEL_NODE_PARAMS_v1,
) -> CUresult {
    api!("cuGraphExecKernelNodeSetParams", {
        let kind = kernel_node_v1(p)?;
        exec_set(h, node, kind)
    })
}

/// `cuGraphExecMemcpyNodeSetParams`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecMemcpyNodeSetParams(
    h: CUgraphExec,
    node: CUgraphNode,
    p: *const CUDA_MEMCPY3D,
    _ctx: CUcontext,
) -> CUresult {
    api!("cuGraphExecMemcpyNodeSetParams", {
        let kind = memcpy_node(p)?;
        exec_set(h, node, kind)
    })
}

/// `cuGraphExecMemsetNodeSetParams`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecMemsetNodeSetParams(
    h: CUgraphExec,
    node: CUgraphNode,
    p: *const CUDA_MEMSET_NODE_PARAMS,
    _ctx: CUcontext,
) -> CUresult {
    api!("cuGraphExecMemsetNodeSetParams", {
        let kind = memset_node(p)?;
        exec_set(h, node, kind)
    })
}

/// `cuGraphExecHostNodeSetParams`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecHostNodeSetParams(
    h: CUgraphExec,
    node: CUgraphNode,
    p: *const CUDA_HOST_NODE_PARAMS,
) -> CUresult {
    api!("cuGraphExecHostNodeSetParams", {
        let kind = host_node(p)?;
        exec_set(h, node, kind)
    })
}

/// `cuGraphExecEventRecordNodeSetEvent`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecEventRecordNodeSetEvent(
    h: CUgraphExec,
    node: CUgraphNode,
    ev: CUevent,
) -> CUresult {
    api!("cuGraphExecEventRecordNodeSetEvent", {
        let kind = event_kind(ev, true)?;
        exec_set(h, node, kind)
    })
}

/// `cuGraphExecEventWaitNodeSetEvent`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecEventWaitNodeSetEvent(
    h: CUgraphExec,
    node: CUgraphNode,
    ev: CUevent,
) -> CUresult {
    api!("cuGraphExecEventWaitNodeSetEvent", {
        let kind = event_kind(ev, false)?;
        exec_set(h, node, kind)
    })
}

/// Updates exec `h` from graph `g`: `Ok` or the failure's details.
fn update(h: CUgraphExec, g: CUgraph) -> R<Result<(), exec::UpdateError>> {
    init()?;
    let id = exec_id(h)?;
    let mut s = store();
    let gid = graph::graph_id(&s, g)?;
    Ok(exec::update(&mut s, id, gid))
}

/// `cuGraphExecUpdate_v2`: `g` must have the instantiated graph's topology and node
/// types (nodes paired in the order they were added), kernels the same contexts,
/// copies the same memory types; otherwise `GRAPH_EXEC_UPDATE_FAILURE`, with the
/// reason, the node at fault and (for a changed edge) the edge's other node in
/// `info`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecUpdate_v2(
    h: CUgraphExec,
    g: CUgraph,
    info: *mut CUgraphExecUpdateResultInfo,
) -> CUresult {
    api!("cuGraphExecUpdate", {
        let r = update(h, g)?;
        let (result, node, from) = match r {
            Ok(()) => (CU_GRAPH_EXEC_UPDATE_SUCCESS, None, None),
            Err(e) => e,
        };
        if !info.is_null() {
            out(
                info,
                CUgraphExecUpdateResultInfo {
                    result,
                    errorNode: opt_node(node),
                    errorFromNode: opt_node(from),
                },
            )?;
        }
        if result == CU_GRAPH_EXEC_UPDATE_SUCCESS {
            Ok(())
        } else {
            Err(code::GRAPH_EXEC_UPDATE_FAILURE)
        }
    })
}

/// `cuGraphExecUpdate` (the 10.2 ABI).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphExecUpdate(
    h: CUgraphExec,
    g: CUgraph,
    error_node: *mut CUgraphNode,
    result_out: *mut CUgraphExecUpdateResult,
) -> CUresult {
    api!("cuGraphExecUpdate", {
        let r = update(h, g)?;
        let (result, node) = match r {
            Ok(()) => (CU_GRAPH_EXEC_UPDATE_SUCCESS, None),
            Err((r, n, _)) => (r, n),
        };
        if !error_node.is_null() {
            out(error_node, opt_node(node))?;
        }
        if !result_out.is_null() {
            out(result_out, result)?;
        }
        if result == CU_GRAPH_EXEC_UPDATE_SUCCESS {
            Ok(())
        } else {
            Err(code::GRAPH_EXEC_UPDATE_FAILURE)
        }
    })
}

// ---- stream capture -----------------------------------------------------------------

/// `cuStreamBeginCapture_v2`: created streams only (the legacy stream is
/// `STREAM_CAPTURE_UNSUPPORTED`, the per-thread stream `NOT_SUPPORTED`); a stream
/// already capturing is `ILLEGAL_STATE`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamBeginCapture_v2(
    h: CUstream,
    mode: CUstreamCaptureMode,
) -> CUresult {
    api!("cuStreamBeginCapture", {
        let (sid, ctx, blocking) = {
            let s = state::state();
            state::current_ctx(&s)?;
            match h as usize {
                0 | CU_STREAM_LEGACY => return Err(code::STREAM_CAPTURE_UNSUPPORTED),
                CU_STREAM_PER_THREAD => return Err(code::NOT_SUPPORTED),
                _ => {}
            }
            let sid = state::id_of(Kind::Stream, h).ok_or(code::INVALID_HANDLE)?;
            let st = s.streams.get(&sid).ok_or(code::INVALID_HANDLE)?;
            (sid, st.ctx, st.flags & crate::stream::NON_BLOCKING == 0)
        };
        capture::begin(sid, ctx, blocking, mode)
    })
}

/// `cuStreamEndCapture`: the captured graph; null with `STREAM_CAPTURE_INVALIDATED`
/// or `STREAM_CAPTURE_UNJOINED` (the capture has ended).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamEndCapture(h: CUstream, pg: *mut CUgraph) -> CUresult {
    api!("cuStreamEndCapture", {
        if pg.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let sid = {
            let s = state::state();
            state::current_live(&s)?;
            let sid = state::id_of(Kind::Stream, h).ok_or(code::ILLEGAL_STATE)?;
            s.streams.get(&sid).ok_or(code::INVALID_HANDLE)?;
            sid
        };
        match capture::end(sid) {
            Ok(g) => out(pg, state::handle(Kind::Graph, g)),
            Err(e) => {
                if matches!(
                    e,
                    code::STREAM_CAPTURE_INVALIDATED | code::STREAM_CAPTURE_UNJOINED
                ) {
                    out(pg, core::ptr::null_mut())?;
                }
                Err(e)
            }
        }
    })
}

fn capture_info(h: CUstream) -> R<capture::Info> {
    let ctx = check_stream(h)?;
    capture::info(h, ctx)
}

/// `cuStreamIsCapturing`: the legacy stream while a blocking stream of the context
/// captures is `STREAM_CAPTURE_IMPLICIT`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamIsCapturing(
    h: CUstream,
    status: *mut CUstreamCaptureStatus,
) -> CUresult {
    api!("cuStreamIsCapturing", {
        if status.is_null() {
            return Err(code::INVALID_VALUE);
        }
        out(status, capture_info(h)?.status)
    })
}

/// Writes the optional outputs of `cuStreamGetCaptureInfo*`.
fn write_info(
    i: &capture::Info,
    status: *mut CUstreamCaptureStatus,
    id: *mut u64,
    graph: *mut CUgraph,
    deps: *mut *const CUgraphNode,
    edges: *mut *const CUgraphEdgeData,
    n: *mut usize,
) -> R {
    out(status, i.status)?;
    let active = i.status != CU_STREAM_CAPTURE_STATUS_NONE;
    if !id.is_null() && active {
        out(id, i.id)?;
    }
    if !graph.is_null() {
        out(graph, i.graph)?;
    }
    if !deps.is_null() {
        out(deps, i.deps)?;
    }
    if !edges.is_null() {
        out(edges, i.edges)?;
    }
    if !n.is_null() {
        out(n, i.count)?;
    }
    Ok(())
}

/// `cuStreamGetCaptureInfo` (the 10.1 ABI: status and id).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetCaptureInfo(
    h: CUstream,
    status: *mut CUstreamCaptureStatus,
    id: *mut u64,
) -> CUresult {
    api!("cuStreamGetCaptureInfo", {
        let i = capture_info(h)?;
        use core::ptr::null_mut as null;
        write_info(&i, status, id, null(), null(), null(), null())
    })
}

/// `cuStreamGetCaptureInfo_v2` (11.3): also the graph and the stream's current
/// dependencies (an array valid until the next query of the stream or the end of
/// the capture).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_v2(
    h: CUstream,
    status: *mut CUstreamCaptureStatus,
    id: *mut u64,
    graph: *mut CUgraph,
    deps: *mut *const CUgraphNode,
    n: *mut usize,
) -> CUresult {
    api!("cuStreamGetCaptureInfo", {
        let i = capture_info(h)?;
        write_info(&i, status, id, graph, deps, core::ptr::null_mut(), n)
    })
}

/// `cuStreamGetCaptureInfo_v3` (12.3): also edge data (all default).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetCaptureInfo_v3(
    h: CUstream,
    status: *mut CUstreamCaptureStatus,
    id: *mut u64,
    graph: *mut CUgraph,
    deps: *mut *const CUgraphNode,
    edges: *mut *const CUgraphEdgeData,
    n: *mut usize,
) -> CUresult {
    api!("cuStreamGetCaptureInfo", {
        let i = capture_info(h)?;
        write_info(&i, status, id, graph, deps, edges, n)
    })
}

/// `cuThreadExchangeStreamCaptureMode`: swaps the calling thread's interaction mode.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuThreadExchangeStreamCaptureMode(
    mode: *mut CUstreamCaptureMode,
) -> CUresult {
    api!("cuThreadExchangeStreamCaptureMode", {
        if mode.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: a valid pointer, by the C contract.
        let m = unsafe { *mode };
        let old = capture::exchange_mode(m)?;
        out(mode, old)
    })
}
