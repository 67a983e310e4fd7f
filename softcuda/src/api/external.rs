//! External resource exports: memory (`cuImportExternalMemory`,
//! `cuExternalMemoryGetMappedBuffer`, `cuDestroyExternalMemory`) and semaphores
//! (`cuImportExternalSemaphore`, `cuSignalExternalSemaphoresAsync`,
//! `cuWaitExternalSemaphoresAsync`, `cuDestroyExternalSemaphore`). The bookkeeping,
//! and what softcuda accepts as an external resource (its own memory and semaphore
//! files), is `crate::external`. Linux only: elsewhere each is
//! `CUDA_ERROR_NOT_SUPPORTED`.

use super::out;
use crate::external::{self, Semaphore};
use crate::graph;
use crate::state::{self, R};
use crate::stream as st;
use crate::types::*;
use core::ffi::c_uint;
use std::sync::Arc;

/// `NOT_SUPPORTED` where softcuda has no external resources.
fn supported() -> R {
    if external::SUPPORTED {
        Ok(())
    } else {
        Err(code::NOT_SUPPORTED)
    }
}

/// `cuImportExternalMemory`: an opaque file descriptor (`OPAQUE_FD`) of a softcuda
/// memory file at least `size` bytes long; flags 0 or `CUDA_EXTERNAL_MEMORY_DEDICATED`
/// (which changes nothing). On success softcuda owns the descriptor (it closes it
/// once the object is destroyed and every buffer mapped from it freed); on failure
/// the caller still does. Other handle types are `NOT_SUPPORTED`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuImportExternalMemory(
    ext_mem: *mut CUexternalMemory,
    desc: *const CUDA_EXTERNAL_MEMORY_HANDLE_DESC,
) -> CUresult {
    api!("cuImportExternalMemory", {
        supported()?;
        state::current_ctx(&state::state())?;
        if ext_mem.is_null() || desc.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: a valid descriptor, by the C contract.
        let d = unsafe { *desc };
        match d.type_ {
            CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD => {}
            CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_WIN32
                ..=CU_EXTERNAL_MEMORY_HANDLE_TYPE_DMABUF_FD => {
                return Err(code::NOT_SUPPORTED);
            }
            _ => return Err(code::INVALID_VALUE),
        }
        if d.flags & !CUDA_EXTERNAL_MEMORY_DEDICATED != 0 || d.size == 0 {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: the union's `fd` member is the one an `OPAQUE_FD` descriptor sets.
        let fd = unsafe { d.handle.fd };
        let h = external::import_memory(fd, d.size)?;
        out(ext_mem, h as CUexternalMemory)
    })
}

/// `cuExternalMemoryGetMappedBuffer`: `size` bytes (> 0) of the object from `offset`
/// (a multiple of the page size; the range inside the object), device memory of
/// the current context that `cuMemFree` frees; flags 0.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuExternalMemoryGetMappedBuffer(
    dptr: *mut CUdeviceptr,
    ext_mem: CUexternalMemory,
    desc: *const CUDA_EXTERNAL_MEMORY_BUFFER_DESC,
) -> CUresult {
    api!("cuExternalMemoryGetMappedBuffer", {
        supported()?;
        graph::capture::unsafe_call()?;
        let (ctx, device) = {
            let s = state::state();
            let ctx = state::current_ctx(&s)?;
            (ctx, s.context(ctx)?.device)
        };
        if dptr.is_null() || desc.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: a valid descriptor, by the C contract.
        let d = unsafe { *desc };
        if d.flags != 0 {
            return Err(code::INVALID_VALUE);
        }
        let base = external::map_buffer(ext_mem as u64, d.offset, d.size, ctx, device)?;
        out(dptr, base)
    })
}

/// `cuDestroyExternalMemory`: the handle is invalid at once (`INVALID_VALUE` if it
/// was not valid); buffers mapped from it stay usable until freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDestroyExternalMemory(ext_mem: CUexternalMemory) -> CUresult {
    api!("cuDestroyExternalMemory", {
        supported()?;
        state::require_init(&state::state())?;
        external::destroy_memory(ext_mem as u64)
    })
}

/// `cuImportExternalSemaphore`: an opaque file descriptor of a softcuda semaphore
/// file, as a binary (`OPAQUE_FD`) or timeline (`TIMELINE_SEMAPHORE_FD`) semaphore;
/// flags 0. Ownership of the descriptor passes as for memory. Other handle types
/// are `NOT_SUPPORTED`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuImportExternalSemaphore(
    ext_sem: *mut CUexternalSemaphore,
    desc: *const CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC,
) -> CUresult {
    api!("cuImportExternalSemaphore", {
        supported()?;
        state::current_ctx(&state::state())?;
        if ext_sem.is_null() || desc.is_null() {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: a valid descriptor, by the C contract.
        let d = unsafe { *desc };
        let timeline = match d.type_ {
            CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD => false,
            CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD => true,
            CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_WIN32
                ..=CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_D3D11_KEYED_MUTEX_KMT
            | CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_WIN32 => {
                return Err(code::NOT_SUPPORTED);
            }
            _ => return Err(code::INVALID_VALUE),
        };
        if d.flags != 0 {
            return Err(code::INVALID_VALUE);
        }
        // SAFETY: the union's `fd` member is the one an fd descriptor sets.
        let fd = unsafe { d.handle.fd };
        let h = external::import_semaphore(fd, timeline)?;
        out(ext_sem, h as CUexternalSemaphore)
    })
}

/// `cuDestroyExternalSemaphore`: the handle is invalid at once (`INVALID_HANDLE` if
/// it was not valid); queued signals and waits on it still run.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDestroyExternalSemaphore(ext_sem: CUexternalSemaphore) -> CUresult {
    api!("cuDestroyExternalSemaphore", {
        supported()?;
        state::require_init(&state::state())?;
        external::destroy_semaphore(ext_sem as u64)
    })
}

/// The semaphores of one signal or wait call, each with its fence value.
type Batch = Vec<(Arc<Semaphore>, u64)>;

/// Checks a signal or wait call and gathers its semaphores with their values
/// (`value` reads one entry of the parameter array: its fence value and flags):
/// the current context, `n == 0` (nothing: `None`), non-null arrays, known
/// semaphores (`INVALID_HANDLE`), flags 0, a stream that is not capturing
/// (`NOT_SUPPORTED`).
fn gather<P>(
    sems: *const CUexternalSemaphore,
    params: *const P,
    n: c_uint,
    stream: CUstream,
    value: impl Fn(&P) -> (u64, c_uint),
) -> R<Option<(u64, Batch)>> {
    supported()?;
    let ctx = state::current_ctx(&state::state())?;
    if n == 0 {
        return Ok(None);
    }
    if sems.is_null() || params.is_null() {
        return Err(code::INVALID_VALUE);
    }
    let mut list = Vec::with_capacity(n as usize);
    for i in 0..n as usize {
        // SAFETY: both arrays hold `n` entries, by the C contract.
        let (h, p) = unsafe { (*sems.add(i), &*params.add(i)) };
        let (v, flags) = value(p);
        let sem = external::semaphore(h as u64)?;
        if flags != 0 {
            return Err(code::INVALID_VALUE);
        }
        list.push((sem, v));
    }
    if graph::capture::is_capturing(stream) {
        return Err(code::NOT_SUPPORTED);
    }
    Ok(Some((ctx, list)))
}

/// `cuSignalExternalSemaphoresAsync`: in stream order, each semaphore is signalled
/// (binary: set; timeline: raised to `params.fence.value`). Key and NvSciSync
/// parameters are ignored; flags must be 0. Refused (`NOT_SUPPORTED`) on a
/// capturing stream.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuSignalExternalSemaphoresAsync(
    sems: *const CUexternalSemaphore,
    params: *const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS,
    n: c_uint,
    stream: CUstream,
) -> CUresult {
    api!("cuSignalExternalSemaphoresAsync", {
        let Some((ctx, list)) =
            gather(sems, params, n, stream, |p| (p.params.fence.value, p.flags))?
        else {
            return Ok(());
        };
        st::submit(
            ctx,
            stream,
            Box::new(move || {
                for (sem, v) in &list {
                    sem.signal(*v);
                }
                Ok(())
            }),
        )
    })
}

/// `cuWaitExternalSemaphoresAsync`: in stream order, the stream waits for each
/// semaphore (binary: until set, then clears it; timeline: until at least
/// `params.fence.value`), polling with short sleeps and holding no lock; it gives
/// up once the context is poisoned. On a default stream the calling thread waits.
/// Key, timeout and NvSciSync parameters are ignored; flags must be 0. Refused
/// (`NOT_SUPPORTED`) on a capturing stream.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuWaitExternalSemaphoresAsync(
    sems: *const CUexternalSemaphore,
    params: *const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS,
    n: c_uint,
    stream: CUstream,
) -> CUresult {
    api!("cuWaitExternalSemaphoresAsync", {
        let Some((ctx, list)) =
            gather(sems, params, n, stream, |p| (p.params.fence.value, p.flags))?
        else {
            return Ok(());
        };
        let sticky = state::sticky_of(&state::state(), ctx)?;
        st::submit(
            ctx,
            stream,
            Box::new(move || {
                for (sem, v) in &list {
                    if !crate::external::poll_until(|| sem.try_wait(*v), || sticky.get().is_some())
                    {
                        return Ok(()); // the stream's later work is discarded
                    }
                }
                Ok(())
            }),
        )
    })
}
