//! Graphs, executable graphs and stream capture (the model is in `crate::graph`):
//! this file holds the graph functions themselves (create, destroy, clone, topology,
//! DOT output) and the node-parameter readers the other files share; nodes, memory
//! and conditional nodes, executable graphs and capture have a file each.
//!
//! Handles of nodes and graphs that are not live are `CUDA_ERROR_INVALID_VALUE`, as
//! the driver reports them. What softcuda does not model is refused with
//! `CUDA_ERROR_NOT_SUPPORTED` (see docs/softcuda.md, "Graphs and capture").

use super::{c_text, out};
use crate::copy::{memcpy3d_job, set_job, with_graph_memory};
use crate::graph::{
    self, CondNode, KernelNode, NodeKind, Raw, capture, cond, exec, mem, node_handle, store,
};
use crate::launch::prepare_launch;
use crate::ptx::LaunchConfig;
use crate::state::{self, Kind, R};
use crate::stream::Event;
use crate::types::*;
use core::ffi::{c_char, c_uint, c_ulonglong};
use std::sync::Arc;

mod graph_exec;
mod nodes;
mod special_nodes;
mod stream_capture;

pub use graph_exec::*;
pub use nodes::*;
pub use special_nodes::*;
pub use stream_capture::*;

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
