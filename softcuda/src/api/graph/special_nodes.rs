//! Graph memory nodes (`cuGraphAddMemAllocNode`, `cuGraphAddMemFreeNode`,
//! `cuDeviceGraphMemTrim`; the reservations are `crate::graph::mem`) and
//! conditional nodes (`cuGraphConditionalHandleCreate`, `cuGraphAddNode`).

use super::*;

/// Checks an allocation node's parameters and reserves its memory (for graph `g`).
pub(super) fn alloc_node(g: u64, p: &CUDA_MEM_ALLOC_NODE_PARAMS) -> R<graph::mem::Reservation> {
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
pub(super) fn add_alloc(
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
pub(super) fn add_free(
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
pub(super) fn add_conditional(
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
pub(super) fn add_generic(
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
pub(super) fn check_bodies(s: &graph::Store, g: u64, in_body: bool) -> Result<(), (CUresult, u64)> {
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
