//! Stream capture: while a created stream captures, the work issued to it becomes
//! nodes of the capture's graph instead of running ([`divert`]); events recorded in
//! it carry the capture's dependencies, and a stream that waits for such an event
//! joins the capture (fork and join). Calls that cannot be captured refuse and
//! invalidate the capture, which `cuStreamEndCapture` then reports.
//!
//! Capture modes follow the driver's rules for "potentially unsafe" calls
//! ([`unsafe_call`]): a thread whose capture is not relaxed may not make them, and
//! neither may any thread in `GLOBAL` interaction mode while another thread has a
//! `GLOBAL` capture; a thread in `RELAXED` interaction mode
//! (`cuThreadExchangeStreamCaptureMode`) always may.

use super::{NodeKind, Store, store};
use crate::state::{self, Kind, R};
use crate::types::*;
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::ThreadId;

/// One stream taking part in a capture.
pub struct Member {
    /// The nodes its next work depends on.
    pub deps: Vec<u64>,
    /// Whether the stream is blocking (synchronises with the legacy stream).
    pub blocking: bool,
    /// The handles handed out by `cuStreamGetCaptureInfo` (valid until the next
    /// query or the end of the capture).
    info: Vec<CUgraphNode>,
    /// The matching edge data (all default).
    edge_info: Vec<CUgraphEdgeData>,
}

// SAFETY: `info` holds node handles, which are numbers, not pointers.
unsafe impl Send for Member {}

/// A capture sequence.
pub struct Session {
    /// The context of the stream that began it.
    pub ctx: u64,
    /// The graph being built.
    pub graph: u64,
    /// `CUstreamCaptureMode`.
    pub mode: CUstreamCaptureMode,
    /// The thread that began it.
    pub thread: ThreadId,
    /// The stream that began it (the one that must end it).
    pub origin: u64,
    /// Its streams, by stream id.
    pub members: HashMap<u64, Member>,
    /// Whether an illegal call invalidated it.
    pub invalidated: bool,
}

/// Every capture sequence.
#[derive(Default)]
pub struct Captures {
    /// Sessions by id.
    pub sessions: HashMap<u64, Session>,
    /// The session each capturing stream (by id) belongs to.
    pub by_stream: HashMap<u64, u64>,
    /// Events last recorded in a capturing stream: event id → (session, the nodes
    /// the record stands for).
    pub events: HashMap<u64, (u64, Vec<u64>)>,
}

/// The number of sessions: the hooks on ordinary calls cost one load while none.
static ACTIVE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's capture interaction mode.
    static MODE: Cell<CUstreamCaptureMode> = const { Cell::new(CU_STREAM_CAPTURE_MODE_GLOBAL) };
}

fn active() -> bool {
    ACTIVE.load(Ordering::SeqCst) > 0
}

/// Forgets every capture (after the store was cleared) and this thread's mode.
pub fn reset() {
    ACTIVE.store(0, Ordering::SeqCst);
    MODE.with(|m| m.set(CU_STREAM_CAPTURE_MODE_GLOBAL));
}

/// `cuThreadExchangeStreamCaptureMode`.
pub fn exchange_mode(mode: CUstreamCaptureMode) -> R<CUstreamCaptureMode> {
    if mode > CU_STREAM_CAPTURE_MODE_RELAXED {
        return Err(code::INVALID_VALUE);
    }
    Ok(MODE.with(|m| m.replace(mode)))
}

/// The id of a created stream's handle (`None` for the default streams).
fn stream_id(h: CUstream) -> Option<u64> {
    state::id_of(Kind::Stream, h)
}

impl Captures {
    fn session_of(&self, sid: u64) -> Option<u64> {
        self.by_stream.get(&sid).copied()
    }

    fn invalidate(&mut self, session: u64) {
        if let Some(s) = self.sessions.get_mut(&session) {
            s.invalidated = true;
        }
    }

    /// Ends session `id`: its streams stop capturing, its events are forgotten.
    fn remove(&mut self, id: u64) -> Option<Session> {
        let s = self.sessions.remove(&id)?;
        self.by_stream.retain(|_, v| *v != id);
        self.events.retain(|_, (v, _)| *v != id);
        ACTIVE.store(self.sessions.len(), Ordering::SeqCst);
        Some(s)
    }
}

/// Adds a node doing `kind` to the capture of stream `sid` (session `session`),
/// after the stream's current dependencies; it becomes the stream's dependency.
fn add_captured(st: &mut Store, session: u64, sid: u64, kind: NodeKind) -> R {
    let (graph, deps) = {
        let s = st
            .capture
            .sessions
            .get(&session)
            .ok_or(code::ILLEGAL_STATE)?;
        if s.invalidated {
            return Err(code::STREAM_CAPTURE_INVALIDATED);
        }
        let m = s.members.get(&sid).ok_or(code::ILLEGAL_STATE)?;
        (s.graph, m.deps.clone())
    };
    let node = st.add_node(graph, &deps, kind)?;
    if let Some(m) = st
        .capture
        .sessions
        .get_mut(&session)
        .and_then(|s| s.members.get_mut(&sid))
    {
        m.deps = vec![node];
    }
    Ok(())
}

/// If stream `h` is capturing, adds the node `make` describes to its capture
/// instead of running the work, and says how that went (`STREAM_CAPTURE_INVALIDATED`
/// once the capture was invalidated); `None` if the stream is not capturing.
pub fn divert(h: CUstream, make: impl FnOnce() -> NodeKind) -> Option<R> {
    if !active() {
        return None;
    }
    let sid = stream_id(h)?;
    let mut st = store();
    let session = st.capture.session_of(sid)?;
    Some(add_captured(&mut st, session, sid, make()))
}

/// Whether stream `h` is capturing (in a valid or invalidated capture).
pub fn is_capturing(h: CUstream) -> bool {
    active() && stream_id(h).is_some_and(|sid| store().capture.session_of(sid).is_some())
}

/// A "potentially unsafe" call (one that may synchronise implicitly: work on the
/// legacy stream, `cuMemAlloc`, `cuMemFree`, `cuCtxSynchronize`): refused with
/// `STREAM_CAPTURE_UNSUPPORTED`, invalidating the captures that forbid it, where
/// the capture modes forbid it to the calling thread.
pub fn unsafe_call() -> R {
    if !active() {
        return Ok(());
    }
    let mode = MODE.with(Cell::get);
    if mode == CU_STREAM_CAPTURE_MODE_RELAXED {
        return Ok(());
    }
    let me = std::thread::current().id();
    let mut st = store();
    let offending: Vec<u64> = st
        .capture
        .sessions
        .iter()
        .filter(|(_, s)| {
            s.mode != CU_STREAM_CAPTURE_MODE_RELAXED
                && (s.thread == me
                    || (mode == CU_STREAM_CAPTURE_MODE_GLOBAL
                        && s.mode == CU_STREAM_CAPTURE_MODE_GLOBAL))
        })
        .map(|(id, _)| *id)
        .collect();
    if offending.is_empty() {
        return Ok(());
    }
    for id in offending {
        st.capture.invalidate(id);
    }
    Err(code::STREAM_CAPTURE_UNSUPPORTED)
}

/// Work on (or a synchronisation of) the legacy stream of context `ctx`: while a
/// blocking stream of the context captures, it would depend on the capture —
/// `STREAM_CAPTURE_IMPLICIT`, and those captures are invalidated. Otherwise it is a
/// potentially unsafe call ([`unsafe_call`]).
pub fn legacy_use(ctx: u64) -> R {
    if !active() {
        return Ok(());
    }
    refuse_sessions(
        |s| s.ctx == ctx && s.members.values().any(|m| m.blocking),
        code::STREAM_CAPTURE_IMPLICIT,
    )?;
    unsafe_call()
}

/// Invalidates every capture `pred` selects and refuses the call with `refusal` if
/// there was one.
fn refuse_sessions(pred: impl Fn(&Session) -> bool, refusal: CUresult) -> R {
    let mut st = store();
    let hit: Vec<u64> = st
        .capture
        .sessions
        .iter()
        .filter(|(_, s)| pred(s))
        .map(|(id, _)| *id)
        .collect();
    if hit.is_empty() {
        return Ok(());
    }
    for id in hit {
        st.capture.invalidate(id);
    }
    Err(refusal)
}

/// `cuStreamSynchronize` / `cuStreamQuery` of stream `h` (of context `ctx`): illegal
/// on a capturing stream (`STREAM_CAPTURE_UNSUPPORTED`, the capture invalidated); on
/// the legacy stream, see [`legacy_use`].
pub fn sync_check(h: CUstream, ctx: u64) -> R {
    if !active() {
        return Ok(());
    }
    if matches!(h as usize, 0 | CU_STREAM_LEGACY) {
        return legacy_use(ctx);
    }
    let Some(sid) = stream_id(h) else {
        return Ok(());
    };
    let mut st = store();
    if let Some(session) = st.capture.session_of(sid) {
        st.capture.invalidate(session);
        return Err(code::STREAM_CAPTURE_UNSUPPORTED);
    }
    Ok(())
}

/// An illegal call on capturing stream `h` (`cuStreamAddCallback`): refused with
/// `STREAM_CAPTURE_UNSUPPORTED`, the capture invalidated.
pub fn refuse_on(h: CUstream) -> R {
    if is_capturing(h) {
        let mut st = store();
        if let Some(session) = stream_id(h).and_then(|sid| st.capture.session_of(sid)) {
            st.capture.invalidate(session);
        }
        return Err(code::STREAM_CAPTURE_UNSUPPORTED);
    }
    Ok(())
}

/// `cuCtxSynchronize` of context `ctx`: illegal while a stream of it captures
/// (`STREAM_CAPTURE_UNSUPPORTED`, those captures invalidated); otherwise a
/// potentially unsafe call.
pub fn ctx_sync(ctx: u64) -> R {
    if !active() {
        return Ok(());
    }
    refuse_sessions(|s| s.ctx == ctx, code::STREAM_CAPTURE_UNSUPPORTED)?;
    unsafe_call()
}

/// `cuEventQuery` / `cuEventSynchronize` of event `ev`: illegal while its last
/// record was captured (`CAPTURED_EVENT`; the capture is invalidated).
pub fn event_check(ev: u64) -> R {
    if !active() {
        return Ok(());
    }
    let mut st = store();
    if let Some((session, _)) = st.capture.events.get(&ev).cloned() {
        st.capture.invalidate(session);
        return Err(code::CAPTURED_EVENT);
    }
    Ok(())
}

/// `cuEventRecord` of event `ev` (`event` with it, for an external record node) on
/// stream `h`: in a capturing stream the event takes the stream's dependencies (or,
/// with `CU_EVENT_RECORD_EXTERNAL`, becomes an event-record node); `None` when `h`
/// does not capture (the event is then no longer a captured one).
pub fn record(
    ev: u64,
    event: &std::sync::Arc<crate::stream::Event>,
    h: CUstream,
    external: bool,
) -> Option<R> {
    if !active() {
        return None;
    }
    let mut st = store();
    let Some((sid, session)) =
        stream_id(h).and_then(|sid| Some((sid, st.capture.session_of(sid)?)))
    else {
        st.capture.events.remove(&ev);
        return None;
    };
    if external {
        return Some(add_captured(
            &mut st,
            session,
            sid,
            NodeKind::EventRecord(ev, std::sync::Arc::clone(event)),
        ));
    }
    let deps = match st.capture.sessions.get(&session) {
        Some(s) if s.invalidated => return Some(Err(code::STREAM_CAPTURE_INVALIDATED)),
        Some(s) => s
            .members
            .get(&sid)
            .map(|m| m.deps.clone())
            .unwrap_or_default(),
        None => return Some(Err(code::ILLEGAL_STATE)),
    };
    st.capture.events.insert(ev, (session, deps));
    Some(Ok(()))
}

/// `cuStreamWaitEvent(h, ev, flags)` while captures exist: a stream that waits for
/// an event recorded in a capture joins it (or, already in it, adds the event's
/// dependencies); a capturing stream waiting for an event outside any capture needs
/// `CU_EVENT_WAIT_EXTERNAL` (an event-wait node), else `STREAM_CAPTURE_ISOLATION`
/// and the capture is invalidated. `blocking`: whether `h` is a blocking stream.
/// `None`: not a matter of capture, wait as usual.
pub fn wait(
    h: CUstream,
    ev: u64,
    event: &std::sync::Arc<crate::stream::Event>,
    flags: u32,
    blocking: bool,
) -> Option<R> {
    let external = flags & CU_EVENT_EXTERNAL != 0;
    if !active() {
        return external.then_some(Err(code::INVALID_VALUE));
    }
    let sid = stream_id(h);
    let mut st = store();
    let captured = st.capture.events.get(&ev).cloned();
    let target = sid.and_then(|s| st.capture.session_of(s));
    match (captured, sid, target) {
        (Some((es, _)), None, _) => {
            // A default stream cannot join a capture.
            st.capture.invalidate(es);
            Some(Err(code::STREAM_CAPTURE_ISOLATION))
        }
        (Some((es, deps)), Some(sid), None) => {
            let s = st.capture.sessions.get_mut(&es)?;
            s.members.insert(
                sid,
                Member {
                    deps,
                    blocking,
                    info: Vec::new(),
                    edge_info: Vec::new(),
                },
            );
            let invalidated = s.invalidated;
            st.capture.by_stream.insert(sid, es);
            Some(if invalidated {
                Err(code::STREAM_CAPTURE_INVALIDATED)
            } else {
                Ok(())
            })
        }
        (Some((es, deps)), Some(sid), Some(ts)) => {
            if es != ts {
                return Some(Err(code::STREAM_CAPTURE_MERGE));
            }
            let s = st.capture.sessions.get_mut(&ts)?;
            if s.invalidated {
                return Some(Err(code::STREAM_CAPTURE_INVALIDATED));
            }
            let m = s.members.get_mut(&sid)?;
            for d in deps {
                if !m.deps.contains(&d) {
                    m.deps.push(d);
                }
            }
            Some(Ok(()))
        }
        (None, Some(sid), Some(ts)) => {
            if external {
                return Some(add_captured(
                    &mut st,
                    ts,
                    sid,
                    NodeKind::EventWait(ev, std::sync::Arc::clone(event)),
                ));
            }
            st.capture.invalidate(ts);
            Some(Err(code::STREAM_CAPTURE_ISOLATION))
        }
        (None, _, _) => external.then_some(Err(code::INVALID_VALUE)),
    }
}

/// `cuStreamBeginCapture` on created stream `sid` of context `ctx`.
pub fn begin(sid: u64, ctx: u64, blocking: bool, mode: CUstreamCaptureMode) -> R {
    if mode > CU_STREAM_CAPTURE_MODE_RELAXED {
        return Err(code::INVALID_VALUE);
    }
    let mut st = store();
    if st.capture.session_of(sid).is_some() {
        return Err(code::ILLEGAL_STATE);
    }
    let graph = st.create_graph(false);
    let id = super::next_id();
    let mut members = HashMap::new();
    members.insert(
        sid,
        Member {
            deps: Vec::new(),
            blocking,
            info: Vec::new(),
            edge_info: Vec::new(),
        },
    );
    st.capture.sessions.insert(
        id,
        Session {
            ctx,
            graph,
            mode,
            thread: std::thread::current().id(),
            origin: sid,
            members,
            invalidated: false,
        },
    );
    st.capture.by_stream.insert(sid, id);
    ACTIVE.store(st.capture.sessions.len(), Ordering::SeqCst);
    Ok(())
}

/// `cuStreamEndCapture` on stream `sid`: the graph, or why there is none
/// (`ILLEGAL_STATE`: not capturing; `STREAM_CAPTURE_UNMATCHED`: not the stream that
/// began it; `STREAM_CAPTURE_WRONG_THREAD`: a thread-local capture ended by another
/// thread; `STREAM_CAPTURE_INVALIDATED`; `STREAM_CAPTURE_UNJOINED`: a stream that
/// joined the capture has work the origin stream does not wait for). Except for the
/// first three, the capture ends either way.
pub fn end(sid: u64) -> R<u64> {
    let mut st = store();
    let session = st.capture.session_of(sid).ok_or(code::ILLEGAL_STATE)?;
    {
        let s = st
            .capture
            .sessions
            .get(&session)
            .ok_or(code::ILLEGAL_STATE)?;
        if s.origin != sid {
            st.capture.invalidate(session);
            return Err(code::STREAM_CAPTURE_UNMATCHED);
        }
        if s.mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL && s.thread != std::thread::current().id()
        {
            return Err(code::STREAM_CAPTURE_WRONG_THREAD);
        }
    }
    let s = st.capture.remove(session).ok_or(code::ILLEGAL_STATE)?;
    if s.invalidated {
        st.destroy_graph(s.graph);
        return Err(code::STREAM_CAPTURE_INVALIDATED);
    }
    // Every node the origin stream's work depends on, directly or not.
    let mut joined: HashSet<u64> = HashSet::new();
    let mut todo: Vec<u64> = s
        .members
        .get(&sid)
        .map(|m| m.deps.clone())
        .unwrap_or_default();
    while let Some(n) = todo.pop() {
        if joined.insert(n)
            && let Some(node) = st.nodes.get(&n)
        {
            todo.extend(node.deps.iter().copied());
        }
    }
    let unjoined = s
        .members
        .iter()
        .any(|(id, m)| *id != sid && m.deps.iter().any(|d| !joined.contains(d)));
    if unjoined {
        st.destroy_graph(s.graph);
        return Err(code::STREAM_CAPTURE_UNJOINED);
    }
    Ok(s.graph)
}

/// A stream being destroyed: it leaves its capture, which is invalidated (or, if it
/// began it, ended and its graph destroyed).
pub fn stream_destroyed(sid: u64) {
    if !active() {
        return;
    }
    let mut st = store();
    let Some(session) = st.capture.session_of(sid) else {
        return;
    };
    let origin = st.capture.sessions.get(&session).map(|s| s.origin);
    if origin == Some(sid) {
        if let Some(s) = st.capture.remove(session) {
            st.destroy_graph(s.graph);
        }
    } else {
        st.capture.by_stream.remove(&sid);
        if let Some(s) = st.capture.sessions.get_mut(&session) {
            s.members.remove(&sid);
            s.invalidated = true;
        }
    }
}

/// A context being destroyed or reset: its captures end, their graphs destroyed.
pub fn context_destroyed(ctx: u64) {
    if !active() {
        return;
    }
    let mut st = store();
    let mine: Vec<u64> = st
        .capture
        .sessions
        .iter()
        .filter(|(_, s)| s.ctx == ctx)
        .map(|(id, _)| *id)
        .collect();
    for id in mine {
        if let Some(s) = st.capture.remove(id) {
            st.destroy_graph(s.graph);
        }
    }
}

/// What `cuStreamGetCaptureInfo` reports about a stream.
pub struct Info {
    /// `CUstreamCaptureStatus`.
    pub status: CUstreamCaptureStatus,
    /// The capture's id (0 when not capturing).
    pub id: u64,
    /// The capture's graph handle (null when not capturing).
    pub graph: CUgraph,
    /// The stream's current dependencies (an array valid until the next query).
    pub deps: *const CUgraphNode,
    /// Their edge data (all default).
    pub edges: *const CUgraphEdgeData,
    /// How many.
    pub count: usize,
}

/// `cuStreamIsCapturing` / `cuStreamGetCaptureInfo` of stream `h` of context `ctx`.
/// The legacy stream while a blocking stream of the context captures:
/// `STREAM_CAPTURE_IMPLICIT`.
pub fn info(h: CUstream, ctx: u64) -> R<Info> {
    let none = Info {
        status: CU_STREAM_CAPTURE_STATUS_NONE,
        id: 0,
        graph: core::ptr::null_mut(),
        deps: core::ptr::null(),
        edges: core::ptr::null(),
        count: 0,
    };
    if !active() {
        return Ok(none);
    }
    let mut st = store();
    if matches!(h as usize, 0 | CU_STREAM_LEGACY) {
        let implicit = st
            .capture
            .sessions
            .values()
            .any(|s| s.ctx == ctx && s.members.values().any(|m| m.blocking));
        return if implicit {
            Err(code::STREAM_CAPTURE_IMPLICIT)
        } else {
            Ok(none)
        };
    }
    let Some(sid) = stream_id(h) else {
        return Ok(none);
    };
    let Some(session) = st.capture.session_of(sid) else {
        return Ok(none);
    };
    let Some(s) = st.capture.sessions.get_mut(&session) else {
        return Ok(none);
    };
    let status = if s.invalidated {
        CU_STREAM_CAPTURE_STATUS_INVALIDATED
    } else {
        CU_STREAM_CAPTURE_STATUS_ACTIVE
    };
    let graph = state::handle(Kind::Graph, s.graph);
    let m = s.members.get_mut(&sid).ok_or(code::ILLEGAL_STATE)?;
    m.info = m.deps.iter().map(|d| super::node_handle(*d)).collect();
    m.edge_info = vec![CUgraphEdgeData::default(); m.deps.len()];
    Ok(Info {
        status,
        id: session,
        graph,
        deps: m.info.as_ptr(),
        edges: m.edge_info.as_ptr(),
        count: m.info.len(),
    })
}
