//! Running out of memory, and sticky errors, on softcuda.
//!
//! - Out of memory: allocating past a device's memory (a softcuda device of 64 MiB,
//!   filled for real) or past an allocation budget
//!   (`softcuda::control::fail_allocations_after`) gives the typed
//!   `CUDA_ERROR_OUT_OF_MEMORY`, and once everything is dropped `memory_info()` is
//!   back to its baseline — device buffers, stream-ordered buffers from a pool,
//!   managed and page-locked host memory.
//! - Sticky errors: a kernel that stores to an address no allocation covers makes the
//!   context report `CUDA_ERROR_ILLEGAL_ADDRESS`; every later call in that context
//!   reports it too (softcuda models the driver's poisoned context), the error's
//!   message says the context is unusable, the crate marks the handle
//!   (`Context::sticky_error`) and refuses to bind it again
//!   (`CudaError::ContextPoisoned`), and a new context on the same device works.
//!   NVIDIA documents an illegal address as leaving the whole process unable to use
//!   CUDA; softcuda confines it to the context, which is what makes "a new context
//!   works" testable here.
//!
//! softcuda only: the GPU suite neither configures devices nor counts objects.
#![cfg(not(feature = "gpu-tests"))]

mod common;

use common::{SoftDevices, driver, fault_kernel, fault_module, kernel_fault_code, no_leaks};
use oxicuda_driver::managed::Attach;
use oxicuda_driver::sys::{CUctx_flags, CUmemhostalloc_flags, CUresult, CUstream_flags};
use oxicuda_driver::{Context, CudaError, CurrentContext, PrimaryContext};

const OOM: CudaError = CudaError::Driver(CUresult::CUDA_ERROR_OUT_OF_MEMORY);
const MIB: usize = 1 << 20;

/// Runs `f` in a fresh context of the 64 MiB device 0; checks nothing is left.
fn on_small_device<R>(
    f: impl for<'c> FnOnce(&mut CurrentContext<'c>) -> Result<R, CudaError>,
) -> R {
    let (d, _g) = driver();
    let mut devices = softcuda::control::Profile::defaults();
    devices[0] = softcuda::control::Profile::new(0, 9, 0, 64);
    let _small = SoftDevices::configure(devices);
    let ctx = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
    let r = ctx.bind(f).unwrap().unwrap();
    drop(ctx);
    no_leaks();
    r
}

#[test]
fn filling_the_device_gives_out_of_memory_and_dropping_gives_it_all_back() {
    on_small_device(|cur| {
        let baseline = cur.memory_info()?;
        assert_eq!(baseline, (64 * MIB, 64 * MIB));
        // Past the device's memory at once.
        assert_eq!(cur.alloc::<u8>(65 * MIB).map(drop), Err(OOM));
        // Filled 8 MiB at a time: the ninth buffer does not fit.
        let mut held = Vec::new();
        let err = loop {
            match cur.alloc::<u8>(8 * MIB) {
                Ok(b) => held.push(b),
                Err(e) => break e,
            }
        };
        assert_eq!(err, OOM);
        assert_eq!(held.len(), 8);
        assert_eq!(cur.memory_info()?.0, 0);
        // The context still works: out of memory is not sticky.
        assert!(!err.is_sticky());
        held.pop();
        assert_eq!(cur.alloc_from(&[1u8, 2])?.to_vec()?, [1, 2]);
        drop(held);
        assert_eq!(cur.memory_info()?, baseline);
        Ok(())
    })
}

#[test]
fn a_pool_past_the_device_gives_out_of_memory_and_trimmed_gives_it_all_back() {
    on_small_device(|cur| {
        let baseline = cur.memory_info()?;
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let pool = cur.create_memory_pool(None)?;
        let mut held = Vec::new();
        let err = loop {
            match stream.alloc_from_pool::<u8>(&pool, 8 * MIB) {
                Ok(b) => held.push(b),
                Err(e) => break e,
            }
        };
        assert_eq!(err, OOM);
        assert_eq!(held.len(), 8);
        // The default pool draws on the same memory.
        assert_eq!(stream.alloc_async::<u8>(MIB).map(drop), Err(OOM));
        drop(held);
        stream.synchronize()?;
        // Freed blocks stay reserved in the pool until trimmed (or the pool goes).
        pool.trim_to(0)?;
        assert_eq!(cur.memory_info()?, baseline);
        // And the pool serves again.
        let again = stream.alloc_from_pool::<u8>(&pool, 32 * MIB)?;
        drop(again);
        stream.synchronize()?;
        drop(pool);
        assert_eq!(cur.memory_info()?, baseline);
        Ok(())
    })
}

#[test]
fn managed_and_pinned_memory_past_the_budget_give_out_of_memory() {
    on_small_device(|cur| {
        let baseline = cur.memory_info()?;
        softcuda::control::fail_allocations_after(4 * MIB as u64);
        let managed = cur.alloc_managed::<u8>(3 * MIB, Attach::Global)?;
        assert_eq!(
            cur.alloc_managed::<u8>(2 * MIB, Attach::Global).map(drop),
            Err(OOM)
        );
        let pinned = cur.alloc_host::<u8>(MIB, CUmemhostalloc_flags::empty())?;
        assert_eq!(
            cur.alloc_host::<u8>(MIB, CUmemhostalloc_flags::empty())
                .map(drop),
            Err(OOM)
        );
        assert_eq!(cur.alloc::<u8>(MIB).map(drop), Err(OOM));
        drop((managed, pinned));
        // The budget counts what is live: all of it is available again.
        let managed = cur.alloc_managed::<u8>(3 * MIB, Attach::Global)?;
        let pinned = cur.alloc_host::<u8>(MIB, CUmemhostalloc_flags::empty())?;
        drop((managed, pinned));
        softcuda::control::clear_faults();
        assert_eq!(cur.memory_info()?, baseline);
        Ok(())
    })
}

/// Launches the faulting kernel and waits for it: the sticky error.
fn fault(cur: &CurrentContext<'_>) -> Result<CudaError, CudaError> {
    let module = fault_module(cur)?;
    let k = fault_kernel(&module)?;
    let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    k.launch(&stream, 1, 1, 0, (0u64,))?;
    Ok(stream.synchronize().unwrap_err())
}

/// An injected sticky answer (not a kernel's fault: the same with or without the sanitizer).
const ILLEGAL: CUresult = CUresult::CUDA_ERROR_ILLEGAL_ADDRESS;

#[test]
fn after_an_illegal_address_the_context_is_marked_unusable_and_a_new_one_works() {
    let (d, _g) = driver();
    let dev = d.device(0).unwrap();
    let ctx = Context::new(&dev, CUctx_flags::empty()).unwrap();
    assert_eq!(ctx.sticky_error(), None);
    ctx.bind(|cur| -> Result<(), CudaError> {
        assert_eq!(cur.sticky_error(), None);
        let e = fault(cur)?;
        assert_eq!(e, CudaError::Driver(kernel_fault_code()));
        assert!(e.is_sticky());
        // The message says what it means for the context.
        assert!(e.to_string().contains("context is unusable"), "{e}");
        assert_eq!(cur.sticky_error(), Some(kernel_fault_code()));
        // Later calls in this context report it too.
        assert_eq!(cur.alloc::<u32>(4).map(drop), Err(e.clone()));
        assert_eq!(cur.synchronize(), Err(e.clone()));
        assert_eq!(
            cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)
                .map(drop),
            Err(e)
        );
        Ok(())
    })
    .unwrap()
    .unwrap();
    // The handle is marked, and binding it again is refused, saying why.
    assert_eq!(ctx.sticky_error(), Some(kernel_fault_code()));
    let refused = ctx.bind(|_| ()).unwrap_err();
    assert_eq!(
        refused,
        CudaError::ContextPoisoned {
            code: kernel_fault_code()
        }
    );
    assert!(refused.is_sticky());
    assert_eq!(refused.code(), Some(kernel_fault_code()));
    assert!(
        refused.to_string().contains("create a new context"),
        "{refused}"
    );
    // Nested too.
    let other = Context::new(&dev, CUctx_flags::empty()).unwrap();
    let nested = other.bind(|cur| cur.push(&ctx, |_| ())).unwrap();
    assert_eq!(
        nested,
        Err(CudaError::ContextPoisoned {
            code: kernel_fault_code()
        })
    );
    // Dropping it still destroys it.
    drop(ctx);
    assert_eq!(softcuda::control::live_counts().contexts, 1);
    // The other context, and a new one, work.
    let fresh = Context::new(&dev, CUctx_flags::empty()).unwrap();
    for c in [&other, &fresh] {
        let v = c
            .bind(|cur| cur.alloc_from(&[1u8, 2, 3])?.to_vec())
            .unwrap()
            .unwrap();
        assert_eq!(v, [1, 2, 3]);
        assert_eq!(c.sticky_error(), None);
    }
    drop((other, fresh));
    no_leaks();
}

#[test]
fn a_fault_in_a_nested_binding_marks_the_inner_context_only() {
    let (d, _g) = driver();
    let dev = d.device(0).unwrap();
    let (outer, inner) = (
        Context::new(&dev, CUctx_flags::empty()).unwrap(),
        Context::new(&dev, CUctx_flags::empty()).unwrap(),
    );
    outer
        .bind(|cur| -> Result<(), CudaError> {
            let e = cur.push(&inner, |inner_cur| fault(inner_cur))??;
            assert!(e.is_sticky());
            // softcuda confines the fault to the inner context: the outer binding
            // saw no sticky error and still works.
            assert_eq!(cur.sticky_error(), None);
            assert_eq!(cur.alloc_from(&[5u8])?.to_vec()?, [5]);
            Ok(())
        })
        .unwrap()
        .unwrap();
    assert_eq!(inner.sticky_error(), Some(kernel_fault_code()));
    assert_eq!(outer.sticky_error(), None);
    drop((outer, inner));
    no_leaks();
}

#[test]
fn a_sticky_answer_to_a_nested_push_marks_the_pushed_context_only() {
    let (d, _g) = driver();
    let dev = d.device(0).unwrap();
    let (outer, inner) = (
        Context::new(&dev, CUctx_flags::empty()).unwrap(),
        Context::new(&dev, CUctx_flags::empty()).unwrap(),
    );
    outer
        .bind(|cur| -> Result<(), CudaError> {
            softcuda::control::inject_fault("cuCtxPushCurrent", 1, ILLEGAL.0);
            assert_eq!(cur.push(&inner, |_| ()), Err(CudaError::Driver(ILLEGAL)));
            softcuda::control::clear_faults();
            assert_eq!(cur.alloc_from(&[5u8])?.to_vec()?, [5]);
            Ok(())
        })
        .unwrap()
        .unwrap();
    assert_eq!(inner.sticky_error(), Some(ILLEGAL));
    assert_eq!(outer.sticky_error(), None);
    drop((outer, inner));
    no_leaks();
}

#[test]
fn a_primary_context_is_usable_again_after_a_reset() {
    let (d, _g) = driver();
    let dev = d.device(0).unwrap();
    let mut primary = PrimaryContext::retain(&dev).unwrap();
    let e = primary.bind(|cur| fault(cur)).unwrap().unwrap();
    assert!(e.is_sticky());
    assert_eq!(primary.sticky_error(), Some(kernel_fault_code()));
    assert_eq!(
        primary.bind(|_| ()).unwrap_err(),
        CudaError::ContextPoisoned {
            code: kernel_fault_code()
        }
    );
    // SAFETY: nothing made with the primary context is alive.
    unsafe { primary.reset() }.unwrap();
    assert_eq!(primary.sticky_error(), None);
    let v = primary
        .bind(|cur| cur.alloc_from(&[9u8])?.to_vec())
        .unwrap()
        .unwrap();
    assert_eq!(v, [9]);
    drop(primary);
    no_leaks();
}

#[test]
fn an_injected_sticky_code_marks_the_context_too() {
    let (d, _g) = driver();
    let ctx = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
    let r = ctx
        .bind(|cur| {
            softcuda::control::inject_fault("cuMemAlloc", 1, ILLEGAL.0 as _);
            cur.alloc::<u32>(4).map(drop)
        })
        .unwrap();
    softcuda::control::clear_faults();
    assert_eq!(r, Err(CudaError::Driver(ILLEGAL)));
    assert_eq!(ctx.sticky_error(), Some(ILLEGAL));
    // A sticky answer to the binding's push marks the handle being bound.
    let ctx3 = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
    softcuda::control::inject_fault("cuCtxPushCurrent", 1, ILLEGAL.0 as _);
    let r = ctx3.bind(|_| ());
    softcuda::control::clear_faults();
    assert_eq!(r, Err(CudaError::Driver(ILLEGAL)));
    assert_eq!(ctx3.sticky_error(), Some(ILLEGAL));
    drop(ctx3);
    // A non-sticky failure does not.
    let ctx2 = Context::new(&d.device(0).unwrap(), CUctx_flags::empty()).unwrap();
    let r = ctx2
        .bind(|cur| {
            softcuda::control::inject_fault("cuMemAlloc", 1, OOM.code().unwrap().0 as _);
            cur.alloc::<u32>(4).map(drop)
        })
        .unwrap();
    softcuda::control::clear_faults();
    assert_eq!(r, Err(OOM));
    assert_eq!(ctx2.sticky_error(), None);
    assert!(ctx2.bind(|_| ()).is_ok());
    drop((ctx, ctx2));
    no_leaks();
}

/// The table is resolved on first use, and a lookup may fail: a binding resolves
/// `cuCtxPopCurrent` before it pushes, so a failed lookup refuses the binding and
/// leaves nothing current — the thread can bind again.
#[test]
fn a_failed_lookup_of_the_pop_refuses_the_binding_before_the_push() {
    let (_d, _g) = driver();
    // A driver of its own, so that its table has not been asked anything yet (kept
    // in a static: contexts borrow it for `'static`, and memcheck sees it reachable).
    static OWN: std::sync::OnceLock<oxicuda_driver::Driver> = std::sync::OnceLock::new();
    let options = oxicuda_driver::DriverOptions::software();
    let d = OWN.get_or_init(|| oxicuda_driver::Driver::load(&options).unwrap());
    d.init().unwrap();
    let primary = PrimaryContext::retain(&d.device(0).unwrap()).unwrap();
    // What a binding asks for before its pop: resolved now.
    d.table().cuCtxGetCurrent().unwrap();
    d.table().cuCtxPushCurrent().unwrap();
    softcuda::control::inject_fault("cuGetProcAddress", 1, OOM.code().unwrap().0 as _);
    let refused = primary.bind(|_| ());
    softcuda::control::clear_faults();
    assert_eq!(refused.unwrap_err(), OOM);
    let mut current = oxicuda_driver::sys::CUcontext::NULL;
    // SAFETY: a valid out-pointer.
    let r = unsafe { d.table().cuCtxGetCurrent().unwrap()(&mut current) };
    assert_eq!(
        (r, current),
        (CUresult::CUDA_SUCCESS, oxicuda_driver::sys::CUcontext::NULL)
    );
    primary.bind(|cur| cur.synchronize()).unwrap().unwrap();
}
