//! Inter-process communication: memory handles (`cuIpcGetMemHandle`,
//! `cuIpcOpenMemHandle_v2`, `cuIpcCloseMemHandle`) and event handles
//! (`cuIpcGetEventHandle`, `cuIpcOpenEventHandle`). The model is `crate::ipc`
//! (handle layout, how another process's files are reached), `crate::ipc::memory`
//! and `crate::ipc::event`.

use super::out;
use crate::ipc::{self, EVENT, Handle, MEMORY};
use crate::state::{self, Kind};
use crate::stream::{DISABLE_TIMING, Event};
use crate::types::*;
use core::ffi::c_uint;

/// `cuIpcGetMemHandle`: `ptr` must be the base of a `cuMemAlloc` allocation (else
/// `INVALID_VALUE`); its first handle moves it into a shared file (see
/// `crate::ipc::memory`). Off Linux the handle is good in this process only.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuIpcGetMemHandle(
    handle: *mut CUipcMemHandle,
    ptr: CUdeviceptr,
) -> CUresult {
    api!("cuIpcGetMemHandle", {
        state::current_ctx(&state::state())?;
        if handle.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let h = ipc::memory::export(ptr)?;
        out(
            handle,
            CUipcMemHandle {
                reserved: h.encode(),
            },
        )
    })
}

/// `cuIpcOpenMemHandle_v2`: flags 0 or `CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS` (else
/// `INVALID_VALUE`). Another process's handle maps its allocation here (the same
/// address again for a second open in the same context); a handle of this process
/// names the allocation itself, which the current context may then reach. A
/// handle that names nothing any more is `INVALID_HANDLE`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuIpcOpenMemHandle_v2(
    dptr: *mut CUdeviceptr,
    handle: CUipcMemHandle,
    flags: c_uint,
) -> CUresult {
    api!("cuIpcOpenMemHandle", {
        let (ctx, device) = {
            let s = state::state();
            let ctx = state::current_ctx(&s)?;
            (ctx, s.context(ctx)?.device)
        };
        if dptr.is_null() || flags & !CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS != 0 {
            return Err(code::INVALID_VALUE);
        }
        let h = Handle::decode(&handle.reserved, MEMORY)?;
        if h.pid != ipc::pid() {
            let base = ipc::memory::open(&h, ctx, device)?;
            return out(dptr, base);
        }
        // This process's own allocation: its address, reachable by the context.
        let mut s = state::state();
        state::memory()
            .get(&h.base)
            .filter(|a| a.id == h.id && a.kind == state::AllocKind::Device)
            .ok_or(code::INVALID_HANDLE)?;
        out(dptr, h.base)?;
        *s.ipc_opened.entry((ctx, h.id)).or_insert(0) += 1;
        Ok(())
    })
}

/// `cuIpcCloseMemHandle`: one open of `dptr` (an address `cuIpcOpenMemHandle`
/// returned) fewer; the last unmaps another process's memory, or ends the
/// context's reach to this process's. Anything else (never opened, closed as often
/// as opened): `INVALID_VALUE`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuIpcCloseMemHandle(dptr: CUdeviceptr) -> CUresult {
    api!("cuIpcCloseMemHandle", {
        let ctx = state::current_ctx(&state::state())?;
        if ipc::memory::close(dptr).is_some() {
            return Ok(());
        }
        let mut s = state::state();
        let id = state::memory()
            .get(&dptr)
            .map(|a| a.id)
            .ok_or(code::INVALID_VALUE)?;
        let n = s
            .ipc_opened
            .get_mut(&(ctx, id))
            .ok_or(code::INVALID_VALUE)?;
        *n -= 1;
        if *n == 0 {
            s.ipc_opened.remove(&(ctx, id));
        }
        Ok(())
    })
}

/// `cuIpcGetEventHandle`: of an event created with `CU_EVENT_INTERPROCESS` (and
/// so `CU_EVENT_DISABLE_TIMING`); any other event is `INVALID_VALUE`, an unknown
/// one `INVALID_HANDLE`. Off Linux: `NOT_SUPPORTED`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuIpcGetEventHandle(
    handle: *mut CUipcEventHandle,
    event: CUevent,
) -> CUresult {
    api!("cuIpcGetEventHandle", {
        let e = {
            let s = state::state();
            state::require_init(&s)?;
            let id = state::id_of(Kind::Event, event).ok_or(code::INVALID_HANDLE)?;
            s.events.get(&id).cloned().ok_or(code::INVALID_HANDLE)?
        };
        if handle.is_null() || e.flags & CU_EVENT_INTERPROCESS == 0 {
            return Err(code::INVALID_VALUE);
        }
        let shared = e.shared().ok_or(code::NOT_SUPPORTED)?;
        out(
            handle,
            CUipcEventHandle {
                reserved: shared.handle().encode(),
            },
        )
    })
}

/// `cuIpcOpenEventHandle`: an event of the current context sharing the exporter's
/// state (records, queries and waits in either process see each other's), with
/// `CU_EVENT_DISABLE_TIMING` only, freed by `cuEventDestroy`. A handle that is no
/// event handle: `INVALID_VALUE`; one that names nothing any more (process gone,
/// descriptor closed or reused): `INVALID_HANDLE`. Off Linux: `NOT_SUPPORTED`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuIpcOpenEventHandle(
    ph: *mut CUevent,
    handle: CUipcEventHandle,
) -> CUresult {
    api!("cuIpcOpenEventHandle", {
        state::current_ctx(&state::state())?;
        if ph.is_null() {
            return Err(code::INVALID_VALUE);
        }
        let h = Handle::decode(&handle.reserved, EVENT)?;
        let shared = ipc::event::Shared::open(&h)?;
        let mut s = state::state();
        let ctx = state::current_ctx(&s)?;
        let sticky = state::sticky_of(&s, ctx)?;
        let id = s.next_id();
        out(ph, state::handle(Kind::Event, id))?;
        s.events.insert(
            id,
            Event::with_shared(ctx, sticky, DISABLE_TIMING, Some(shared)),
        );
        Ok(())
    })
}
