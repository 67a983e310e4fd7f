//! Stream capture exports: begin and end, the capture status and info queries, and
//! the thread's capture interaction mode (the model is `crate::graph::capture`).

use super::*;

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

pub(super) fn capture_info(h: CUstream) -> R<capture::Info> {
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
pub(super) fn write_info(
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
