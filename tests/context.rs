//! Devices and the context token, on softcuda (the `soft` feature, in-process), or
//! with `--features gpu-tests` on the driver the environment names:
//! binding restores the previous context (also on panic), one root binding per
//! thread, nesting, migration of a context across threads, primary-context retains.
//! Every test leaves softcuda with no live object.

mod common;

use common::{ON_GPU, driver, live_contexts, no_leaks, second_device};

use oxicuda_driver::sys::{CUctx_flags, CUdevice_attribute, CUlimit};
use oxicuda_driver::{Context, CudaError, Driver, PrimaryContext};

fn current(d: &Driver) -> oxicuda_driver::sys::CUcontext {
    let mut c = oxicuda_driver::sys::CUcontext::NULL;
    oxicuda_driver::error::check(unsafe { d.table().cuCtxGetCurrent().unwrap()(&mut c) }).unwrap();
    c
}

#[test]
fn devices_answer_through_typed_and_grouped_views() {
    let (d, _g) = driver();
    let devices = d.list_devices().unwrap();
    let a = devices[0];
    assert_eq!(
        a.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE)
            .unwrap(),
        32
    );
    let limits = a.launch_limits().unwrap();
    assert_eq!(limits.max_threads_per_block, 1024);
    assert_eq!(limits.max_block_dim, [1024, 1024, 64]);
    assert!(limits.max_shared_per_block_optin > limits.max_shared_per_block);
    assert_eq!(a.memory().unwrap().total, a.total_memory().unwrap());
    assert!(a.features().unwrap().unified_addressing);
    let bus = a.pci_bus_id().unwrap();
    assert!(
        bus.len() == 16 && bus.as_bytes()[8] == b':' && bus.ends_with(".0"),
        "{bus}"
    );
    assert!(!a.name().unwrap().is_empty());
    assert!(d.device(devices.len()).is_err());
    let unknown = CUdevice_attribute(9999);
    assert_eq!(
        a.attribute(unknown),
        Err(CudaError::Driver(
            oxicuda_driver::sys::CUresult::CUDA_ERROR_INVALID_VALUE
        ))
    );
    // Best: the highest compute capability.
    let best = d.best_device().unwrap();
    for dev in &devices {
        assert!(dev.compute_capability().unwrap() <= best.compute_capability().unwrap());
    }
    if ON_GPU {
        assert!(a.compute_capability().unwrap() >= (5, 0));
        return;
    }
    // softcuda's default profiles: 9.0 and 8.0.
    assert_eq!(devices.len(), 2);
    let b = devices[1];
    assert_eq!(a.compute_capability().unwrap(), (9, 0));
    assert_eq!(b.compute().unwrap().capability, (8, 0));
    assert_ne!(a.uuid().unwrap(), b.uuid().unwrap());
    assert_ne!(a.name().unwrap(), b.name().unwrap());
    assert_eq!(bus, "00000000:10:00.0");
    assert!(a.can_access_peer(&b).unwrap());
    assert_eq!(best, a);
}

#[test]
fn binding_restores_the_previous_context_even_on_panic() {
    let (d, _g) = driver();
    let dev = d.device(0).unwrap();
    let ctx = Context::new(&dev, CUctx_flags::CU_CTX_SCHED_AUTO).unwrap();
    assert!(current(d).is_null(), "a new context is not left current");
    let raw = ctx.raw();
    let seen = ctx.bind(|cur| {
        assert_eq!(cur.raw(), raw);
        assert_eq!(cur.device().unwrap(), dev);
        cur.synchronize().unwrap();
        current(d)
    });
    assert_eq!(seen, Ok(raw));
    assert!(current(d).is_null(), "unbound after the binding");
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = ctx.bind(|_| panic!("inside a binding"));
    }));
    assert!(r.is_err());
    assert!(current(d).is_null(), "unbound after a panic too");
    // ... and the thread may bind again.
    assert_eq!(ctx.bind(|_| 7), Ok(7));
    drop(ctx);
    no_leaks();
}

#[test]
fn one_root_binding_per_thread_and_nesting_through_the_token() {
    let (d, _g) = driver();
    let (d0, d1) = (d.device(0).unwrap(), second_device(d));
    let (outer, inner) = (
        Context::new(&d0, CUctx_flags::empty()).unwrap(),
        Context::new(&d1, CUctx_flags::empty()).unwrap(),
    );
    let r = outer.bind(|cur| {
        assert_eq!(
            inner.bind(|_| ()),
            Err(CudaError::ContextAlreadyBound),
            "a second root binding is refused"
        );
        let nested = cur.push(&inner, |cur2| cur2.device().unwrap());
        assert_eq!(nested, Ok(d1));
        assert_eq!(
            cur.device().unwrap(),
            d0,
            "the outer context is current again"
        );
        cur.raw()
    });
    assert_eq!(r, Ok(outer.raw()));
    drop((outer, inner));
    no_leaks();
}

#[test]
fn context_queries() {
    let (d, _g) = driver();
    let ctx = Context::new(
        &d.device(0).unwrap(),
        CUctx_flags::CU_CTX_SCHED_BLOCKING_SYNC,
    )
    .unwrap();
    ctx.bind(|cur| {
        assert!(
            cur.flags()
                .unwrap()
                .contains(CUctx_flags::CU_CTX_SCHED_BLOCKING_SYNC)
        );
        cur.set_limit(CUlimit::CU_LIMIT_STACK_SIZE, 4096).unwrap();
        assert_eq!(cur.limit(CUlimit::CU_LIMIT_STACK_SIZE).unwrap(), 4096);
        let (least, greatest) = cur.stream_priority_range().unwrap();
        assert!(least == 0 && greatest < 0, "{least} {greatest}");
        assert!(cur.api_version().unwrap() >= 3020);
        if !ON_GPU {
            assert_eq!((greatest, cur.api_version().unwrap()), (-5, 3020));
        }
    })
    .unwrap();
    drop(ctx);
    no_leaks();
}

#[test]
fn a_context_migrates_across_eight_threads() {
    let (d, _g) = driver();
    let dev = second_device(d);
    let mut ctx = Context::new(&dev, CUctx_flags::empty()).unwrap();
    let ordinal = dev.ordinal();
    let raw = ctx.raw().0 as usize; // raw handles are not Send; their value is
    for i in 0..8 {
        ctx = std::thread::spawn(move || {
            let seen = ctx
                .bind(|cur| (cur.raw().0 as usize, cur.device().unwrap().ordinal()))
                .unwrap();
            assert_eq!(seen, (raw, ordinal), "thread {i}");
            ctx
        })
        .join()
        .unwrap();
    }
    drop(ctx);
    no_leaks();
}

#[test]
fn primary_context_retains_are_counted() {
    let (d, _g) = driver();
    let dev = d.device(0).unwrap();
    let mut a = PrimaryContext::retain(&dev).unwrap();
    let b = PrimaryContext::retain(&dev).unwrap();
    assert_eq!(a.raw(), b.raw());
    assert!(a.state().unwrap().active);
    drop(b);
    assert!(a.state().unwrap().active, "still retained once");
    a.bind(|cur| cur.synchronize()).unwrap().unwrap();
    // SAFETY: this test made everything in the primary context and has dropped it,
    // `b` is gone, and no other code uses softcuda's device 0 meanwhile (the tests
    // of this binary are serialised by `driver()`).
    unsafe { a.reset() }.unwrap();
    a.set_flags(CUctx_flags::CU_CTX_SCHED_YIELD).unwrap();
    assert_eq!(a.state().unwrap().flags, CUctx_flags::CU_CTX_SCHED_YIELD);
    drop(a);
    if let Some(n) = live_contexts() {
        assert_eq!(n, 0, "the last release destroys it");
    }
    no_leaks();
}
