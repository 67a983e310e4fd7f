//! Executable graphs: instantiation, launch and upload, per-node parameter changes
//! and `cuGraphExecUpdate` (the runner is `crate::graph::exec`).

use super::*;

/// Instantiates `g`: the exec's id, or the error and the node at fault (a cycle:
/// `INVALID_VALUE` and a node on it).
pub(super) fn instantiate(g: CUgraph, flags: u64) -> Result<u64, (CUresult, Option<u64>)> {
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

pub(super) fn exec_id(h: CUgraphExec) -> R<u64> {
    let id = state::id_of(Kind::GraphExec, h).ok_or(code::INVALID_VALUE)?;
    if store().execs.contains_key(&id) {
        Ok(id)
    } else {
        Err(code::INVALID_VALUE)
    }
}

/// A stream handle of the current context: a default stream or a live stream.
pub(super) fn check_stream(h: CUstream) -> R<u64> {
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

pub(super) fn exec_set(h: CUgraphExec, node: CUgraphNode, kind: NodeKind) -> R {
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
pub(super) fn update(h: CUgraphExec, g: CUgraph) -> R<Result<(), exec::UpdateError>> {
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
