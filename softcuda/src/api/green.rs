//! Green contexts and device resources, the C ABI: `cuDeviceGetDevResource`,
//! `cuCtxGetDevResource`, `cuGreenCtxGetDevResource`, `cuDevSmResourceSplitByCount`,
//! `cuDevResourceGenerateDesc`, `cuGreenCtxCreate`, `cuGreenCtxDestroy`,
//! `cuCtxFromGreenCtx`, `cuGreenCtxStreamCreate`, `cuStreamGetGreenCtx`,
//! `cuStreamGetCtx_v2`, `cuGreenCtxRecordEvent`, `cuGreenCtxWaitEvent` and
//! `cuGreenCtxGetId`. The model (SM sets, the resource record, the split rule) is
//! `crate::green`; `docs/softcuda.md` ("Green contexts") has the semantics.
//!
//! A green context retains its device's primary context and has a context entry of
//! its own; it reaches `crate::api::context` for both (`new_context`, `destroy`),
//! as `control` does for teardown.

use super::context::{destroy, new_context};
use super::device::device;
use super::out;
use crate::green::{self, Desc, Green, Origin, Resource, SmSet};
use crate::state::{self, AllocKind, Kind, R, State};
use crate::stream::{self as st, DISABLE_TIMING, Event, Stream, Work};
use crate::types::*;
use core::ffi::{c_int, c_uint, c_ulonglong};
use std::collections::HashSet;
use std::sync::Arc;

/// Every SM of device `d`.
fn whole(s: &State, d: usize) -> SmSet {
    SmSet::first(s.config.devices[d].sm_count)
}

/// The green context `h`: its id and entry, or `INVALID_HANDLE`.
fn green_of(s: &State, h: CUgreenCtx) -> R<(u64, &Green)> {
    state::require_init(s)?;
    let id = state::id_of(Kind::GreenCtx, h).ok_or(code::INVALID_HANDLE)?;
    let g = s.green.greens.get(&id).ok_or(code::INVALID_HANDLE)?;
    Ok((id, g))
}

/// Writes a splittable resource of `sms` on device `d` to `res`, if `type_` is SM.
fn write_whole(res: *mut CUdevResource, type_: CUdevResourceType, d: usize, sms: SmSet) -> R {
    if res.is_null() {
        return Err(code::INVALID_VALUE);
    }
    if type_ != CU_DEV_RESOURCE_TYPE_SM {
        return Err(code::INVALID_RESOURCE_TYPE);
    }
    let r = Resource {
        device: d,
        origin: Origin::Whole,
        sms,
    };
    out(res, r.write())
}

/// `cuDeviceGetDevResource`: every SM of the device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetDevResource(
    dev: CUdevice,
    res: *mut CUdevResource,
    type_: CUdevResourceType,
) -> CUresult {
    api!("cuDeviceGetDevResource", {
        let s = state::state();
        let d = device(&s, dev)?;
        write_whole(res, type_, d, whole(&s, d))
    })
}

/// `cuCtxGetDevResource`: a green context's SMs for a context from
/// `cuCtxFromGreenCtx`, every SM of the device for any other.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetDevResource(
    ctx: CUcontext,
    res: *mut CUdevResource,
    type_: CUdevResourceType,
) -> CUresult {
    api!("cuCtxGetDevResource", {
        let s = state::state();
        state::require_init(&s)?;
        let id = state::id_of(Kind::Context, ctx).ok_or(code::INVALID_CONTEXT)?;
        let d = s.context(id)?.device;
        let sms = s.green.of_ctx(id).map_or_else(|| whole(&s, d), |g| g.sms);
        write_whole(res, type_, d, sms)
    })
}

/// `cuGreenCtxGetDevResource`: the green context's SMs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGreenCtxGetDevResource(
    h: CUgreenCtx,
    res: *mut CUdevResource,
    type_: CUdevResourceType,
) -> CUresult {
    api!("cuGreenCtxGetDevResource", {
        let s = state::state();
        let (_, g) = green_of(&s, h)?;
        write_whole(res, type_, g.device, g.sms)
    })
}

/// `cuDevSmResourceSplitByCount`: groups of `minCount` SMs rounded up to the
/// granularity (`crate::green::granularity`), as many as fit and at most
/// `*nbGroups`; `result` NULL only counts them.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevSmResourceSplitByCount(
    result: *mut CUdevResource,
    nb_groups: *mut c_uint,
    input: *const CUdevResource,
    remaining: *mut CUdevResource,
    use_flags: c_uint,
    min_count: c_uint,
) -> CUresult {
    api!("cuDevSmResourceSplitByCount", {
        let mut s = state::state();
        state::require_init(&s)?;
        if nb_groups.is_null() || input.is_null() || use_flags > 2 {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: non-null: a readable CUdevResource (the C contract). Read first: the
        // outputs may alias it.
        let r = Resource::read(&unsafe { input.read() })?;
        let major = s
            .config
            .devices
            .get(r.device)
            .ok_or(code::INVALID_VALUE)?
            .cc
            .0;
        if matches!(r.origin, Origin::Split(_)) {
            return Err(code::INVALID_RESOURCE_CONFIGURATION); // split outputs: not again
        }
        if use_flags & CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE != 0 && major < 9 {
            return Err(code::INVALID_VALUE);
        }
        if min_count > r.sms.count() {
            return Err(code::INVALID_RESOURCE_CONFIGURATION);
        }
        let size = green::group_size(min_count, green::granularity(major, use_flags));
        if result.is_null() {
            return out(nb_groups, r.sms.count() / size);
        }
        // SAFETY: non-null: a readable and writable count (the C contract).
        let cap = unsafe { nb_groups.read() };
        if cap == 0 {
            return Err(code::INVALID_VALUE);
        }
        let (groups, rest) = green::split(&r.sms, size, cap);
        if groups.is_empty() {
            return Err(code::INVALID_RESOURCE_CONFIGURATION);
        }
        let origin = Origin::Split(s.next_id());
        let made = |sms| Resource {
            device: r.device,
            origin,
            sms,
        };
        for (i, g) in groups.iter().enumerate() {
            // SAFETY: `result` holds `*nbGroups` resources, and `i` < that.
            unsafe { result.add(i).write(made(*g).write()) };
        }
        if !remaining.is_null() {
            // SAFETY: non-null: a writable CUdevResource (the C contract).
            unsafe { remaining.write(made(rest).write()) };
        }
        out(nb_groups, groups.len() as c_uint)
    })
}

/// `cuDevResourceGenerateDesc`: a descriptor of the union of the resources, all of
/// one device and, if more than one, disjoint outputs of one split.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevResourceGenerateDesc(
    desc: *mut CUdevResourceDesc,
    resources: *mut CUdevResource,
    n: c_uint,
) -> CUresult {
    api!("cuDevResourceGenerateDesc", {
        if desc.is_null() || resources.is_null() || n == 0 {
            return Err(code::INVALID_VALUE);
        }
        let mut s = state::state();
        state::require_init(&s)?;
        let mut read = Vec::with_capacity(n as usize);
        for i in 0..n as usize {
            // SAFETY: `resources` holds `n` resources (the C contract).
            read.push(Resource::read(&unsafe { resources.add(i).read() })?);
        }
        let first = read[0];
        if first.device >= s.config.devices.len() {
            return Err(code::INVALID_VALUE);
        }
        let mut sms = SmSet::default();
        for r in &read {
            let same_split = matches!(r.origin, Origin::Split(_)) && r.origin == first.origin;
            if r.device != first.device || (n > 1 && !same_split) || (n > 1 && sms.overlaps(&r.sms))
            {
                return Err(code::INVALID_RESOURCE_CONFIGURATION);
            }
            sms = sms.union(&r.sms);
        }
        if sms.count() == 0 {
            return Err(code::INVALID_RESOURCE_CONFIGURATION);
        }
        let id = s.next_id();
        s.green.descs.insert(
            id,
            Desc {
                device: first.device,
                sms,
            },
        );
        out(desc, state::handle(Kind::DevResourceDesc, id))
    })
}

/// `cuGreenCtxCreate`: a green context of the descriptor's SMs on `dev` (flags:
/// `CU_GREEN_CTX_DEFAULT_STREAM`). It retains the primary context; it is not made
/// current.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGreenCtxCreate(
    ph: *mut CUgreenCtx,
    desc: CUdevResourceDesc,
    dev: CUdevice,
    flags: c_uint,
) -> CUresult {
    api!("cuGreenCtxCreate", {
        if ph.is_null() || flags != CU_GREEN_CTX_DEFAULT_STREAM {
            return Err(code::INVALID_VALUE);
        }
        let mut s = state::state();
        let d = device(&s, dev)?;
        let desc = state::id_of(Kind::DevResourceDesc, desc)
            .and_then(|id| s.green.descs.get(&id).copied())
            .ok_or(code::INVALID_VALUE)?;
        if desc.device != d {
            return Err(code::INVALID_VALUE);
        }
        let primary = match s.primaries[d].ctx {
            Some(id) => id,
            None => {
                let flags = s.primaries[d].flags;
                let id = new_context(&mut s, d, flags, true);
                s.primaries[d].ctx = Some(id);
                id
            }
        };
        s.primaries[d].refs += 1;
        let ctx_flags = s.context(primary)?.flags;
        let ctx = new_context(&mut s, d, ctx_flags, false);
        let id = s.next_id();
        s.green.greens.insert(
            id,
            Green {
                device: d,
                sms: desc.sms,
                ctx,
                primary,
                gates: Vec::new(),
            },
        );
        s.green.by_ctx.insert(ctx, id);
        out(ph, state::handle(Kind::GreenCtx, id))
    })
}

/// Hands what was allocated or registered while green context `ctx` was current
/// (and is not a variable of its modules) to its primary context.
fn reown(s: &State, ctx: u64, primary: u64) {
    let globals: HashSet<u64> = s
        .modules
        .values()
        .filter(|m| m.ctx == ctx)
        .flat_map(|m| m.global_addrs.iter().copied())
        .collect();
    for (base, a) in state::memory_mut().iter_mut() {
        let plain = matches!(
            a.kind,
            AllocKind::Device | AllocKind::PinnedHost(_) | AllocKind::Registered(_)
        );
        if a.ctx == ctx && plain && !globals.contains(base) {
            a.ctx = primary;
        }
    }
}

/// `cuGreenCtxDestroy`: waits for its work, destroys its context entry (modules,
/// events, streams: those become detached) and releases the primary context. A
/// thread that has it current keeps a stale entry (`INVALID_CONTEXT`), as after
/// `cuCtxDestroy`; this thread's stack loses it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGreenCtxDestroy(h: CUgreenCtx) -> CUresult {
    api!("cuGreenCtxDestroy", {
        let (id, ctx, primary, last) = {
            let s = state::state();
            let (id, g) = green_of(&s, h)?;
            (id, g.ctx, g.primary, s.primaries[g.device].refs == 1)
        };
        st::drain(Some(ctx));
        if last {
            st::drain(Some(primary));
        }
        let mut s = state::state();
        let g = s.green.greens.remove(&id).ok_or(code::INVALID_HANDLE)?;
        s.green.by_ctx.remove(&g.ctx);
        let streams: Vec<u64> = s
            .streams
            .iter()
            .filter(|(_, x)| x.ctx == g.ctx)
            .map(|(sid, _)| *sid)
            .collect();
        s.green.detached.extend(streams);
        reown(&s, g.ctx, g.primary);
        let mut removed = destroy(&mut s, g.ctx, false);
        let d = g.device;
        if s.primaries[d].ctx == Some(g.primary) && s.primaries[d].refs > 0 {
            s.primaries[d].refs -= 1;
            if s.primaries[d].refs == 0 {
                removed.merge(destroy(&mut s, g.primary, false));
                s.primaries[d].ctx = None;
            }
        }
        drop(s);
        state::with_stack(|stack| stack.retain(|c| *c != g.ctx));
        removed.finish();
        Ok(())
    })
}

/// `cuCtxFromGreenCtx`: the green context's `CUcontext` (the same each time).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxFromGreenCtx(pctx: *mut CUcontext, h: CUgreenCtx) -> CUresult {
    api!("cuCtxFromGreenCtx", {
        if pctx.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let s = state::state();
        let (_, g) = green_of(&s, h)?;
        out(pctx, state::handle(Kind::Context, g.ctx))
    })
}

/// `cuGreenCtxGetId`: a number no other green context of the process has.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGreenCtxGetId(h: CUgreenCtx, id: *mut c_ulonglong) -> CUresult {
    api!("cuGreenCtxGetId", {
        let s = state::state();
        let (gid, _) = green_of(&s, h)?;
        out(id, gid)
    })
}

/// `cuGreenCtxStreamCreate`: a stream of the green context; `flags` must be
/// `CU_STREAM_NON_BLOCKING`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGreenCtxStreamCreate(
    ph: *mut CUstream,
    h: CUgreenCtx,
    flags: c_uint,
    priority: c_int,
) -> CUresult {
    api!("cuGreenCtxStreamCreate", {
        if ph.is_null() || flags != st::NON_BLOCKING {
            return Err(code::INVALID_VALUE);
        }
        let mut s = state::state();
        let (_, g) = green_of(&s, h)?;
        let ctx = g.ctx;
        let sticky = state::sticky_of(&s, ctx)?;
        if let Some(e) = sticky.get() {
            return Err(e);
        }
        let stream = Stream::spawn(ctx, sticky, flags, priority.clamp(-5, 0))?;
        for (e, generation) in green::gates(&s, ctx) {
            stream.submit(Work::Wait(e, generation));
        }
        let id = s.next_id();
        s.streams.insert(id, stream);
        out(ph, state::handle(Kind::Stream, id))
    })
}

/// The context a stream handle belongs to (a default stream's: the current one).
fn stream_ctx(s: &State, h: CUstream) -> R<u64> {
    if !st::is_created(h) {
        return state::current_ctx(s);
    }
    state::require_init(s)?;
    let id = state::id_of(Kind::Stream, h).ok_or(code::INVALID_HANDLE)?;
    s.streams
        .get(&id)
        .map(|x| x.ctx)
        .ok_or_else(|| green::missing_stream(s, id))
}

/// The green context handle whose context entry is `ctx`, or NULL.
fn green_handle(s: &State, ctx: u64) -> CUgreenCtx {
    s.green
        .id_of_ctx(ctx)
        .map_or(core::ptr::null_mut(), |g| state::handle(Kind::GreenCtx, g))
}

/// `cuStreamGetGreenCtx`: the green context of the stream's context, or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetGreenCtx(h: CUstream, ph: *mut CUgreenCtx) -> CUresult {
    api!("cuStreamGetGreenCtx", {
        if ph.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let s = state::state();
        let ctx = stream_ctx(&s, h)?;
        out(ph, green_handle(&s, ctx))
    })
}

/// `cuStreamGetCtx_v2` (12.5): the stream's context (for a green context's stream,
/// the handle `cuCtxFromGreenCtx` gives) and its green context, or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetCtx_v2(
    h: CUstream,
    pctx: *mut CUcontext,
    pgreen: *mut CUgreenCtx,
) -> CUresult {
    api!("cuStreamGetCtx", {
        if pctx.is_null() || pgreen.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let s = state::state();
        let ctx = stream_ctx(&s, h)?;
        out(pctx, state::handle(Kind::Context, ctx))?;
        out(pgreen, green_handle(&s, ctx))
    })
}

/// The live event `h`.
fn event_of(s: &State, h: CUevent) -> R<Arc<Event>> {
    let id = state::id_of(Kind::Event, h).ok_or(code::INVALID_HANDLE)?;
    s.events.get(&id).cloned().ok_or(code::INVALID_HANDLE)
}

/// `cuGreenCtxRecordEvent`: the event completes once all work submitted so far to
/// the green context's streams has (default-stream work is done when submitted).
/// A helper stream waits for each busy stream and then records the event.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGreenCtxRecordEvent(h: CUgreenCtx, ev: CUevent) -> CUresult {
    api!("cuGreenCtxRecordEvent", {
        let (ctx, e, sticky) = {
            let s = state::state();
            let (_, g) = green_of(&s, h)?;
            let e = event_of(&s, ev)?;
            (g.ctx, e, state::sticky_of(&s, g.ctx)?)
        };
        if let Some(err) = sticky.get() {
            return Err(err);
        }
        let busy: Vec<Arc<Stream>> = st::streams_of(ctx, false)
            .into_iter()
            .filter(|x| x.busy())
            .collect();
        let joiner = Stream::spawn(ctx, Arc::clone(&sticky), st::NON_BLOCKING, 0)?;
        for x in busy {
            let mark = Event::new(ctx, Arc::clone(&sticky), DISABLE_TIMING);
            x.submit(mark.record_work());
            joiner.submit(mark.waiter());
        }
        joiner.submit(e.record_work());
        st::retire(&mut state::state(), joiner);
        Ok(())
    })
}

/// `cuGreenCtxWaitEvent`: all work submitted to the green context from now on waits
/// for the event's last record: its streams' (queued on each), streams created in it
/// later (their first item) and its default streams' (the calling thread waits
/// before it runs such work).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGreenCtxWaitEvent(h: CUgreenCtx, ev: CUevent) -> CUresult {
    api!("cuGreenCtxWaitEvent", {
        let mut s = state::state();
        let (id, g) = green_of(&s, h)?;
        let ctx = g.ctx;
        let e = event_of(&s, ev)?;
        let Work::Wait(e, generation) = e.waiter() else {
            return Err(code::UNKNOWN);
        };
        for x in s.streams.values().filter(|x| x.ctx == ctx) {
            x.submit(Work::Wait(Arc::clone(&e), generation));
        }
        let g = s.green.greens.get_mut(&id).ok_or(code::INVALID_HANDLE)?;
        g.gates.retain(|(e, _)| e.query() == Err(code::NOT_READY));
        g.gates.push((e, generation));
        Ok(())
    })
}
