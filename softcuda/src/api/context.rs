//! Primary and created contexts, and the per-thread current-context stack.

use super::out;
use crate::api::device::device;
use crate::devalloc::{Removed, free_all_of};
use crate::state::{self, Context, Kind, R, State};
use crate::types::{CUcontext, CUdevice, CUresult, code};
use core::ffi::{c_int, c_uint};
use std::collections::HashMap;
use std::sync::Arc;

/// `CU_CTX_FLAGS_MASK`: the flag bits a context accepts.
const FLAGS_MASK: u32 = 0xFF;

/// Enters a new context of device `dev` (also a green context's, `crate::api::green`).
pub(crate) fn new_context(s: &mut State, dev: usize, flags: u32, primary: bool) -> u64 {
    let id = s.next_id();
    s.contexts.insert(
        id,
        Context {
            device: dev,
            flags,
            primary,
            sticky: Arc::default(),
            limits: default_limits(),
            cache_config: 0,
            peers: Vec::new(),
        },
    );
    id
}

fn default_limits() -> HashMap<u32, usize> {
    // STACK_SIZE, PRINTF_FIFO_SIZE, MALLOC_HEAP_SIZE, DEV_RUNTIME_SYNC_DEPTH,
    // DEV_RUNTIME_PENDING_LAUNCH_COUNT, MAX_L2_FETCH_GRANULARITY, PERSISTING_L2_CACHE_SIZE
    [
        (0, 1024),
        (1, 1 << 20),
        (2, 8 << 20),
        (3, 2),
        (4, 2048),
        (5, 64),
        (6, 0),
    ]
    .into_iter()
    .collect()
}

/// Under the sanitizer's `leak`: reports the device allocations of `ctx` still live
/// (`cuMemAlloc`, `cuMemAllocPitch`, `cuMemAllocManaged`; not its modules' variables,
/// which the context's modules own).
fn report_leaks(s: &State, ctx: u64, call: &str) {
    if !crate::sanitize::on(crate::sanitize::LEAK) {
        return;
    }
    let globals: std::collections::HashSet<u64> = s
        .modules
        .values()
        .filter(|m| m.ctx == ctx)
        .flat_map(|m| m.global_addrs.iter().copied())
        .collect();
    let mut leaked: Vec<(u64, u64)> = state::memory()
        .iter()
        .filter(|(b, a)| a.ctx == ctx && a.kind == state::AllocKind::Device && !globals.contains(b))
        .map(|(b, a)| (*b, a.size))
        .collect();
    leaked.sort_unstable();
    crate::sanitize::memcheck::leaks(call, &leaked);
}

/// Releases everything `ctx` owns, then (unless `keep`) the context itself. Its
/// memory leaves the map now and is deallocated by the caller with
/// [`Removed::finish`], once the state lock is released.
#[must_use = "the context's memory is deallocated by `finish`"]
pub(crate) fn destroy(s: &mut State, ctx: u64, keep: bool) -> Removed {
    let streams: Vec<u64> = s
        .streams
        .iter()
        .filter(|(_, st)| st.ctx == ctx)
        .map(|(id, _)| *id)
        .collect();
    for id in streams {
        if let Some(st) = s.streams.remove(&id) {
            crate::stream::retire(s, st);
        }
    }
    if let Some(st) = s.delayed.remove(&ctx) {
        crate::stream::retire(s, st);
    }
    crate::graph::capture::context_destroyed(ctx);
    report_leaks(
        s,
        ctx,
        if keep {
            "cuDevicePrimaryCtxReset"
        } else {
            "cuCtxDestroy"
        },
    );
    s.events.retain(|_, e| e.ctx != ctx);
    s.functions.retain(|_, f| f.ctx != ctx);
    s.modules.retain(|_, m| m.ctx != ctx);
    let removed = free_all_of(s, ctx);
    crate::array::context_destroyed(s, ctx);
    crate::texture::context_destroyed(ctx);
    s.ipc_opened.retain(|(c, _), _| *c != ctx);
    if keep {
        if let Some(c) = s.contexts.get_mut(&ctx) {
            c.sticky = Arc::default(); // old streams keep the old, poisoned one
            c.limits = default_limits();
            c.cache_config = 0;
            c.peers.clear();
        }
    } else {
        s.contexts.remove(&ctx);
        for c in s.contexts.values_mut() {
            c.peers.retain(|p| *p != ctx);
        }
    }
    removed
}

fn ctx_id(h: CUcontext) -> R<u64> {
    state::id_of(Kind::Context, h).ok_or(code::INVALID_CONTEXT)
}

/// `cuDevicePrimaryCtxRetain`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(pctx: *mut CUcontext, dev: CUdevice) -> CUresult {
    api!("cuDevicePrimaryCtxRetain", {
        if pctx.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let mut s = state::state();
        let d = device(&s, dev)?;
        let id = match s.primaries[d].ctx {
            Some(id) => id,
            None => {
                let flags = s.primaries[d].flags;
                let id = new_context(&mut s, d, flags, true);
                s.primaries[d].ctx = Some(id);
                id
            }
        };
        s.primaries[d].refs += 1;
        out(pctx, state::handle(Kind::Context, id))
    })
}

/// `cuDevicePrimaryCtxRelease_v2`: the last release destroys the context.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxRelease_v2(dev: CUdevice) -> CUresult {
    api!("cuDevicePrimaryCtxRelease", {
        let primary = {
            let s = state::state();
            device(&s, dev)?;
            s.primaries[dev as usize]
        };
        if primary.refs == 1 {
            crate::stream::drain(primary.ctx);
        }
        let mut s = state::state();
        let d = device(&s, dev)?;
        let p = s.primaries[d];
        let id = p.ctx.filter(|_| p.refs > 0).ok_or(code::INVALID_CONTEXT)?;
        s.primaries[d].refs -= 1;
        if s.primaries[d].refs == 0 {
            let removed = destroy(&mut s, id, false);
            s.primaries[d].ctx = None;
            drop(s);
            removed.finish();
        }
        Ok(())
    })
}

/// `cuDevicePrimaryCtxSetFlags_v2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxSetFlags_v2(dev: CUdevice, flags: c_uint) -> CUresult {
    api!("cuDevicePrimaryCtxSetFlags", {
        let mut s = state::state();
        let d = device(&s, dev)?;
        if flags & !FLAGS_MASK != 0 || flags & 0x7 > 4 || flags & 0x7 == 3 {
            return Err(code::INVALID_VALUE);
        }
        s.primaries[d].flags = flags;
        if let Some(id) = s.primaries[d].ctx
            && let Some(c) = s.contexts.get_mut(&id)
        {
            c.flags = flags;
        }
        Ok(())
    })
}

/// `cuDevicePrimaryCtxGetState`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxGetState(
    dev: CUdevice,
    flags: *mut c_uint,
    active: *mut c_int,
) -> CUresult {
    api!("cuDevicePrimaryCtxGetState", {
        let s = state::state();
        let d = device(&s, dev)?;
        out(flags, s.primaries[d].flags)?;
        out(active, (s.primaries[d].refs > 0) as c_int)
    })
}

/// `cuDevicePrimaryCtxReset_v2`: frees everything the primary context owns and clears
/// its state (a sticky error included); retains and its handle stay valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxReset_v2(dev: CUdevice) -> CUresult {
    api!("cuDevicePrimaryCtxReset", {
        let primary = {
            let s = state::state();
            device(&s, dev)?;
            s.primaries[dev as usize].ctx
        };
        if primary.is_some() {
            crate::stream::drain(primary);
        }
        let mut s = state::state();
        let d = device(&s, dev)?;
        let removed = match s.primaries[d].ctx {
            Some(id) => destroy(&mut s, id, true),
            None => Removed::default(),
        };
        s.primaries[d].flags = 0;
        drop(s);
        removed.finish();
        Ok(())
    })
}

/// `cuCtxCreate_v2`: creates a context and pushes it on this thread's stack.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxCreate_v2(
    pctx: *mut CUcontext,
    flags: c_uint,
    dev: CUdevice,
) -> CUresult {
    api!("cuCtxCreate", {
        if pctx.is_null() || flags & !FLAGS_MASK != 0 {
            return Err(code::INVALID_VALUE);
        }
        let mut s = state::state();
        let d = device(&s, dev)?;
        let id = new_context(&mut s, d, flags, false);
        state::with_stack(|st| st.push(id));
        out(pctx, state::handle(Kind::Context, id))
    })
}

/// `cuCtxDestroy_v2`: frees everything the context owns; if it is current on this
/// thread it is popped. A primary context cannot be destroyed this way.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxDestroy_v2(ctx: CUcontext) -> CUresult {
    api!("cuCtxDestroy", {
        let id = ctx_id(ctx)?;
        crate::stream::drain(Some(id));
        let mut s = state::state();
        state::require_init(&s)?;
        // A primary context is released, a green context's destroyed with it.
        if s.context(id)?.primary || s.green.id_of_ctx(id).is_some() {
            return Err(code::INVALID_CONTEXT);
        }
        let removed = destroy(&mut s, id, false);
        drop(s);
        state::with_stack(|st| st.retain(|c| *c != id));
        removed.finish();
        Ok(())
    })
}

/// `cuCtxPushCurrent_v2`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxPushCurrent_v2(ctx: CUcontext) -> CUresult {
    api!("cuCtxPushCurrent", {
        let id = ctx_id(ctx)?;
        let s = state::state();
        state::require_init(&s)?;
        s.context(id)?;
        state::with_stack(|st| st.push(id));
        Ok(())
    })
}

/// `cuCtxPopCurrent_v2`: `INVALID_CONTEXT` on an empty stack.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxPopCurrent_v2(pctx: *mut CUcontext) -> CUresult {
    api!("cuCtxPopCurrent", {
        state::require_init(&state::state())?;
        let id = state::with_stack(|st| st.pop()).ok_or(code::INVALID_CONTEXT)?;
        if pctx.is_null() {
            Ok(())
        } else {
            out(pctx, state::handle(Kind::Context, id))
        }
    })
}

/// `cuCtxSetCurrent`: replaces the top of the stack; NULL pops it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxSetCurrent(ctx: CUcontext) -> CUresult {
    api!("cuCtxSetCurrent", {
        let s = state::state();
        state::require_init(&s)?;
        if ctx.is_null() {
            state::with_stack(|st| st.pop());
            return Ok(());
        }
        let id = ctx_id(ctx)?;
        s.context(id)?;
        state::with_stack(|st| match st.last_mut() {
            Some(top) => *top = id,
            None => st.push(id),
        });
        Ok(())
    })
}

/// `cuCtxGetCurrent`: NULL when none.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetCurrent(pctx: *mut CUcontext) -> CUresult {
    api!("cuCtxGetCurrent", {
        state::require_init(&state::state())?;
        let h =
            state::current().map_or(core::ptr::null_mut(), |id| state::handle(Kind::Context, id));
        out(pctx, h)
    })
}

/// `cuCtxGetDevice`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetDevice(dev: *mut CUdevice) -> CUresult {
    api!("cuCtxGetDevice", {
        let s = state::state();
        let id = state::current_ctx(&s)?;
        out(dev, s.context(id)?.device as CUdevice)
    })
}

/// `cuCtxGetFlags`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetFlags(flags: *mut c_uint) -> CUresult {
    api!("cuCtxGetFlags", {
        let s = state::state();
        let id = state::current_ctx(&s)?;
        out(flags, s.context(id)?.flags)
    })
}

/// `cuCtxGetId`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetId(ctx: CUcontext, ctx_id_out: *mut u64) -> CUresult {
    api!("cuCtxGetId", {
        let s = state::state();
        let id = if ctx.is_null() {
            state::current_ctx(&s)?
        } else {
            ctx_id(ctx)?
        };
        s.context(id)?;
        out(ctx_id_out, id)
    })
}

/// `cuCtxGetApiVersion`: 3020 for every context (the `_v2` context ABI).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetApiVersion(ctx: CUcontext, version: *mut c_uint) -> CUresult {
    api!("cuCtxGetApiVersion", {
        let s = state::state();
        let id = if ctx.is_null() {
            state::current_ctx(&s)?
        } else {
            ctx_id(ctx)?
        };
        s.context(id)?;
        out(version, 3020)
    })
}

/// `cuCtxSynchronize`: waits for every stream of the current context (all of them,
/// even after an error). After a sticky error it reports the error only once every
/// worker of the context has finished the operation it was running and discarded
/// the rest.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxSynchronize() -> CUresult {
    api!("cuCtxSynchronize", {
        let (id, sticky) = {
            let s = state::state();
            let id = state::current_live(&s)?;
            (id, state::sticky_of(&s, id)?)
        };
        crate::graph::capture::ctx_sync(id)?;
        crate::stream::synchronize_all(&crate::stream::streams_of(id, false), &sticky)?;
        state::current_ctx(&state::state())?;
        crate::sanitize::streamcheck::host_syncs_context(id);
        Ok(())
    })
}

/// `cuCtxSetLimit`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxSetLimit(limit: c_uint, value: usize) -> CUresult {
    api!("cuCtxSetLimit", {
        let mut s = state::state();
        let id = state::current_ctx(&s)?;
        let c = s.contexts.get_mut(&id).ok_or(code::INVALID_CONTEXT)?;
        let slot = c.limits.get_mut(&limit).ok_or(code::NOT_SUPPORTED)?;
        *slot = value;
        Ok(())
    })
}

/// `cuCtxGetLimit`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetLimit(value: *mut usize, limit: c_uint) -> CUresult {
    api!("cuCtxGetLimit", {
        let s = state::state();
        let id = state::current_ctx(&s)?;
        let v = *s
            .context(id)?
            .limits
            .get(&limit)
            .ok_or(code::NOT_SUPPORTED)?;
        out(value, v)
    })
}

/// `cuCtxGetCacheConfig`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetCacheConfig(config: *mut c_uint) -> CUresult {
    api!("cuCtxGetCacheConfig", {
        let s = state::state();
        let id = state::current_ctx(&s)?;
        out(config, s.context(id)?.cache_config)
    })
}

/// `cuCtxSetCacheConfig`: a preference, recorded (softcuda has no L1 to split).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxSetCacheConfig(config: c_uint) -> CUresult {
    api!("cuCtxSetCacheConfig", {
        if config > 3 {
            return Err(code::INVALID_VALUE);
        }
        let mut s = state::state();
        let id = state::current_ctx(&s)?;
        s.contexts
            .get_mut(&id)
            .ok_or(code::INVALID_CONTEXT)?
            .cache_config = config;
        Ok(())
    })
}

/// `cuCtxGetStreamPriorityRange`: least 0, greatest -5 (as on sm_80/sm_90).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetStreamPriorityRange(
    least: *mut c_int,
    greatest: *mut c_int,
) -> CUresult {
    api!("cuCtxGetStreamPriorityRange", {
        state::current_ctx(&state::state())?;
        if !least.is_null() {
            out(least, 0)?;
        }
        if !greatest.is_null() {
            out(greatest, -5)?;
        }
        Ok(())
    })
}

/// `cuCtxEnablePeerAccess`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxEnablePeerAccess(peer: CUcontext, flags: c_uint) -> CUresult {
    api!("cuCtxEnablePeerAccess", {
        if flags != 0 {
            return Err(code::INVALID_VALUE);
        }
        let peer = ctx_id(peer)?;
        let mut s = state::state();
        let id = state::current_ctx(&s)?;
        let (a, b) = (s.context(id)?.device, s.context(peer)?.device);
        // cuda.h: PEER_ACCESS_UNSUPPORTED when cuDeviceCanAccessPeer says no; one
        // device and itself is no peer pair.
        if a == b {
            return Err(code::INVALID_DEVICE);
        }
        if !s.config.peer(a, b) {
            return Err(code::PEER_ACCESS_UNSUPPORTED);
        }
        let c = s.contexts.get_mut(&id).ok_or(code::INVALID_CONTEXT)?;
        if c.peers.contains(&peer) {
            return Err(code::PEER_ACCESS_ALREADY_ENABLED);
        }
        c.peers.push(peer);
        Ok(())
    })
}

/// `cuCtxDisablePeerAccess`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxDisablePeerAccess(peer: CUcontext) -> CUresult {
    api!("cuCtxDisablePeerAccess", {
        let peer = ctx_id(peer)?;
        let mut s = state::state();
        let id = state::current_ctx(&s)?;
        let c = s.contexts.get_mut(&id).ok_or(code::INVALID_CONTEXT)?;
        let before = c.peers.len();
        c.peers.retain(|p| *p != peer);
        if c.peers.len() == before {
            Err(code::PEER_ACCESS_NOT_ENABLED)
        } else {
            Ok(())
        }
    })
}
