//! Graph nodes of the classic kinds: kernel, memcpy, memset, host, empty, event
//! record and wait, child graph — adding them and reading and changing their
//! parameters.

use super::*;

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

pub(super) fn write_kernel_params(k: &KernelNode, p: *mut CUDA_KERNEL_NODE_PARAMS) -> R {
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

pub(super) fn get_event(h: CUgraphNode, ev: *mut CUevent, record: bool) -> R {
    init()?;
    match (kind_of(h)?, record) {
        (NodeKind::EventRecord(id, _), true) | (NodeKind::EventWait(id, _), false) => {
            out(ev, state::handle(Kind::Event, id))
        }
        _ => Err(code::INVALID_VALUE),
    }
}

pub(super) fn event_kind(ev: CUevent, record: bool) -> R<NodeKind> {
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
pub(crate) static CONDITIONAL_CHILDREN: core::sync::atomic::AtomicBool =
    core::sync::atomic::AtomicBool::new(false);

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
            if s.has_cond_nodes(cid)
                && !CONDITIONAL_CHILDREN.load(core::sync::atomic::Ordering::Relaxed)
            {
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
