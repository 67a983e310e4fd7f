//! `DevicePool` on softcuda with four devices: round-robin order, the choice of the
//! best device by free memory and then load, a batch distributed across every
//! device (a real kernel per chunk, each item processed once, results in order),
//! errors and panics of workers, contexts migrating between many threads, a poisoned
//! device skipped, the refusals that keep the pool deadlock-free, and every context
//! released when the pool is dropped (softcuda's live counts back to zero).
//!
//! softcuda only: it configures softcuda's devices and counts its objects.
#![cfg(not(feature = "gpu-tests"))]

mod common;

use common::{SoftDevices, driver, fault_kernel, fault_module, kernel_fault_code, no_leaks};
use oxicuda_driver::device_pool::DevicePool;
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::{CUctx_flags, CUstream_flags};
use oxicuda_driver::{Context, CudaError, CurrentContext};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex, mpsc};

const SLICES: &str = include_str!("../kernels/slices.ptx");
const DEVICES: usize = 4;
const MIB: usize = 1 << 20;

type Add = (In<f32>, In<f32>, Out<f32>);

/// softcuda with four alike devices of 64 MiB.
fn four_devices() -> SoftDevices {
    SoftDevices::configure(
        (0..DEVICES as u32)
            .map(|i| softcuda::control::Profile::new(i, 8, 0, 64))
            .collect(),
    )
}

/// `c = a + a` for `xs` with `vector_add`, in the bound context.
fn double(cur: &CurrentContext<'_>, xs: &[f32]) -> Result<Vec<f32>, CudaError> {
    let module = cur.load_ptx(SLICES, &JitOptions::default())?;
    // SAFETY: kernels/slices.cu: vector_add writes its output only below its length
    // and reads its inputs only below theirs.
    let add = unsafe { module.function::<Add>("vector_add") }?;
    let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    let a = cur.alloc_from(xs)?;
    let mut c = cur.alloc::<f32>(xs.len())?;
    let blocks = xs.len().div_ceil(128) as u32;
    add.launch(&stream, blocks, 128, 0, (&a, &a, &mut c))?;
    stream.synchronize()?;
    c.to_vec()
}

/// Poisons the bound context: a kernel stores to address 0.
fn poison(cur: &CurrentContext<'_>) -> Result<CudaError, CudaError> {
    let module = fault_module(cur)?;
    let k = fault_kernel(&module)?;
    let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    k.launch(&stream, 1, 1, 0, (0u64,))?;
    Ok(stream.synchronize().unwrap_err())
}

#[test]
fn round_robin_visits_the_devices_in_order_and_bad_requests_are_refused() {
    let (d, _g) = driver();
    let _devices = four_devices();
    let pool = DevicePool::new(d).unwrap();
    assert_eq!(pool.len(), DEVICES);
    assert!(!pool.is_empty());
    let ordinals: Vec<usize> = pool.devices().iter().map(|d| d.ordinal()).collect();
    assert_eq!(ordinals, [0, 1, 2, 3]);
    let order: Vec<usize> = (0..2 * DEVICES).map(|_| pool.next_round_robin()).collect();
    assert_eq!(order, [0, 1, 2, 3, 0, 1, 2, 3]);
    // bind_next binds the device it names.
    for want in 0..DEVICES {
        let (i, ordinal) = pool
            .bind_next(|i, cur| (i, cur.device().unwrap().ordinal()))
            .unwrap();
        assert_eq!((i, ordinal), (want, want));
    }
    assert!(matches!(
        pool.bind(DEVICES, |_| ()),
        Err(CudaError::InvalidArgument {
            parameter: "index",
            ..
        })
    ));
    assert!(matches!(
        pool.load(DEVICES),
        Err(CudaError::InvalidArgument { .. })
    ));
    // Primary contexts: the pool's context of device 2 is the one retain gives.
    let primary = oxicuda_driver::PrimaryContext::retain(&d.device(2).unwrap()).unwrap();
    pool.with_all(|ctxs| {
        assert_eq!(ctxs.len(), DEVICES);
        assert_eq!(ctxs[2].raw(), primary.raw());
        assert!(ctxs[2].as_primary().is_some() && ctxs[2].as_created().is_none());
    })
    .unwrap();
    drop(primary);

    // A chosen subset, in the order given.
    let sub = DevicePool::with_devices(d, &[2, 0]).unwrap();
    assert_eq!(sub.len(), 2);
    assert_eq!(
        sub.bind(0, |cur| cur.device().unwrap().ordinal()).unwrap(),
        2
    );
    assert_eq!(
        sub.bind(1, |cur| cur.device().unwrap().ordinal()).unwrap(),
        0
    );
    for bad in [&[][..], &[1, 1][..]] {
        assert!(matches!(
            DevicePool::with_devices(d, bad),
            Err(CudaError::InvalidArgument {
                parameter: "ordinals",
                ..
            })
        ));
    }
    assert!(DevicePool::with_devices(d, &[0, 9]).is_err(), "no device 9");
    drop((pool, sub));
    no_leaks();
}

#[test]
fn best_available_follows_free_memory_then_load_then_index() {
    let (d, _g) = driver();
    let _devices = four_devices();
    let pool = DevicePool::new(d).unwrap();
    assert_eq!(
        pool.best_available().unwrap(),
        0,
        "all alike: the lowest index"
    );

    // Memory taken on devices 0, 1 and 2 by contexts outside the pool (other users
    // of the devices): device 3 has most free memory; then device 2, ...
    let held = Barrier::new(4);
    let release = Barrier::new(4);
    std::thread::scope(|s| {
        for (dev, mib) in [(0usize, 32usize), (1, 16), (2, 8)] {
            let (held, release) = (&held, &release);
            s.spawn(move || {
                let ctx = Context::new(&d.device(dev).unwrap(), CUctx_flags::empty()).unwrap();
                ctx.bind(|cur| {
                    let buf = cur.alloc::<u8>(mib * MIB).unwrap();
                    held.wait();
                    release.wait();
                    drop(buf);
                })
                .unwrap();
            });
        }
        held.wait();
        assert_eq!(pool.best_available().unwrap(), 3);
        let (i, free) = pool
            .bind_best(|i, cur| (i, cur.memory_info().unwrap().0))
            .unwrap();
        assert_eq!((i, free), (3, 64 * MIB));
        release.wait();
    });
    // The other users are gone: all alike again.
    assert_eq!(pool.best_available().unwrap(), 0);
    // Memory taken inside the pool's own binding, on device 0 and 1 (measured when
    // the binding ends... and while it lasts the device is loaded).
    let bound = Barrier::new(2);
    let done = Barrier::new(2);
    std::thread::scope(|s| {
        s.spawn(|| {
            pool.bind(0, |_| {
                bound.wait();
                done.wait();
            })
            .unwrap();
        });
        bound.wait();
        assert_eq!(pool.load(0).unwrap(), 1);
        // Device 0 is bound elsewhere: its last figure equals the others', and its
        // load breaks the tie.
        assert_eq!(pool.best_available().unwrap(), 1);
        done.wait();
    });
    assert_eq!(pool.load(0).unwrap(), 0);
    assert_eq!(pool.best_available().unwrap(), 0);
    drop(pool);
    no_leaks();
}

#[test]
fn distribute_processes_every_item_once_across_all_devices_in_order() {
    let (d, _g) = driver();
    let _devices = four_devices();
    let pool = DevicePool::new(d).unwrap();
    let xs: Vec<f32> = (0..1001).map(|i| i as f32 * 0.5).collect();
    let chunks = Mutex::new(Vec::new());
    let caller = std::thread::current().id();
    let out = pool
        .distribute(&xs, |i, cur, chunk| {
            assert_ne!(std::thread::current().id(), caller, "a worker thread");
            let ordinal = cur.device()?.ordinal();
            chunks
                .lock()
                .unwrap()
                .push((i, ordinal, chunk.len(), chunk[0]));
            double(cur, chunk)
        })
        .unwrap();
    let expect: Vec<f32> = xs.iter().map(|x| 2.0 * x).collect();
    assert_eq!(out, expect);
    let mut chunks = chunks.into_inner().unwrap();
    chunks.sort_by_key(|c| c.0);
    // Equal split, the first 1001 % 4 = 1 chunk one longer; each device its own.
    assert_eq!(
        chunks,
        [
            (0, 0, 251, 0.0),
            (1, 1, 250, 125.5),
            (2, 2, 250, 250.5),
            (3, 3, 250, 375.5)
        ]
    );

    // Fewer items than devices: only as many devices work.
    let calls = AtomicUsize::new(0);
    let few = pool
        .distribute(&[1.0f32, 2.0], |_, cur, chunk| {
            calls.fetch_add(1, Ordering::Relaxed);
            double(cur, chunk)
        })
        .unwrap();
    assert_eq!(few, [2.0, 4.0]);
    assert_eq!(calls.load(Ordering::Relaxed), 2);
    // An empty batch: nothing runs.
    let none: Vec<f32> = pool
        .distribute(&[] as &[f32], |_, _, _| -> Result<Vec<f32>, CudaError> {
            unreachable!()
        })
        .unwrap();
    assert!(none.is_empty());
    drop(pool);
    no_leaks();
}

#[test]
fn distribute_reports_errors_after_every_device_ran_and_resumes_panics() {
    let (d, _g) = driver();
    let _devices = four_devices();
    let pool = DevicePool::new(d).unwrap();
    let items: Vec<u32> = (0..40).collect();

    // Devices 1 and 2 fail: every device ran, the lowest index's error comes back.
    let ran = AtomicUsize::new(0);
    let r = pool.distribute(&items, |i, _, chunk| {
        ran.fetch_add(1, Ordering::Relaxed);
        match i {
            1 => Err(CudaError::DeviceLacks { feature: "one" }),
            2 => Err(CudaError::DeviceLacks { feature: "two" }),
            _ => Ok(chunk.to_vec()),
        }
    });
    assert!(matches!(r, Err(CudaError::DeviceLacks { feature: "one" })));
    assert_eq!(ran.load(Ordering::Relaxed), DEVICES);

    // A result per item, or a typed error.
    let r = pool.distribute(&items, |_, _, chunk| {
        Ok::<_, CudaError>(chunk[1..].to_vec())
    });
    assert!(matches!(
        r,
        Err(CudaError::InvalidArgument { parameter: "f", .. })
    ));

    // A caller's own error type.
    #[derive(Debug)]
    enum MyError {
        Cuda(CudaError),
        Odd(u32),
    }
    impl From<CudaError> for MyError {
        fn from(e: CudaError) -> Self {
            MyError::Cuda(e)
        }
    }
    let r = pool.distribute(&items, |_, _, chunk| {
        chunk
            .iter()
            .map(|&x| if x == 33 { Err(MyError::Odd(x)) } else { Ok(x) })
            .collect::<Result<Vec<_>, _>>()
    });
    assert!(matches!(r, Err(MyError::Odd(33))), "{r:?}");
    // The pool's own refusals arrive through `From<CudaError>`.
    let r = pool.distribute(&items, |_, _, _| Ok::<Vec<u32>, MyError>(Vec::new()));
    assert!(
        matches!(
            r,
            Err(MyError::Cuda(CudaError::InvalidArgument {
                parameter: "f",
                ..
            }))
        ),
        "{r:?}"
    );

    // A panic in a worker is the caller's panic again, after every thread ended.
    let ran = AtomicUsize::new(0);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.distribute(&items, |i, _, chunk| {
            ran.fetch_add(1, Ordering::Relaxed);
            if i == 1 {
                std::panic::panic_any("worker 1 gave up");
            }
            Ok::<_, CudaError>(chunk.to_vec())
        })
    }));
    let payload = caught.unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"worker 1 gave up"));
    assert_eq!(ran.load(Ordering::Relaxed), DEVICES);
    // Device 1's lock was poisoned by the panic: the pool recovers it.
    assert_eq!(
        pool.bind(1, |cur| cur.device().unwrap().ordinal()).unwrap(),
        1
    );
    assert_eq!(pool.sticky_error(1).unwrap(), None);
    let again = pool.distribute(&items, |_, _, chunk| Ok::<_, CudaError>(chunk.to_vec()));
    assert_eq!(again.unwrap(), items);
    drop(pool);
    no_leaks();
}

#[test]
fn contexts_migrate_between_many_threads_under_load() {
    const THREADS: usize = 8;
    const ITERATIONS: usize = 40;
    let (d, _g) = driver();
    let _devices = four_devices();
    let pool = DevicePool::new(d).unwrap();
    let seen: Mutex<HashMap<usize, HashSet<usize>>> = Mutex::new(HashMap::new());
    let peak = AtomicUsize::new(0);
    let start = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (pool, seen, peak, start) = (&pool, &seen, &peak, &start);
            s.spawn(move || {
                start.wait();
                for it in 0..ITERATIONS {
                    let xs: Vec<f32> = (0..64).map(|k| (t * 1000 + it + k) as f32).collect();
                    let work = |i: usize, cur: &mut CurrentContext<'_>| {
                        let load: usize = (0..DEVICES).map(|j| pool.load(j).unwrap()).sum();
                        peak.fetch_max(load, Ordering::Relaxed);
                        assert!(pool.load(i).unwrap() >= 1, "this binding counts");
                        seen.lock().unwrap().entry(i).or_default().insert(t);
                        assert_eq!(cur.device().unwrap().ordinal(), i);
                        double(cur, &xs).unwrap()
                    };
                    let out = if it % 2 == 0 {
                        pool.bind_next(work).unwrap()
                    } else {
                        pool.bind_best(work).unwrap()
                    };
                    assert!(out.iter().zip(&xs).all(|(o, x)| *o == 2.0 * x));
                }
            });
        }
    });
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), DEVICES, "every device was used");
    for (i, threads) in &seen {
        assert!(threads.len() >= 2, "device {i} stayed with one thread");
    }
    assert!(peak.load(Ordering::Relaxed) >= 2, "bindings overlapped");
    assert!((0..DEVICES).all(|i| pool.load(i).unwrap() == 0));
    drop(pool);
    no_leaks();
}

#[test]
fn a_poisoned_device_is_skipped_and_refused() {
    let (d, _g) = driver();
    let _devices = four_devices();
    let pool = DevicePool::with_created_contexts(d, &[0, 1], CUctx_flags::empty()).unwrap();
    pool.with_all(|ctxs| assert!(ctxs.iter().all(|c| c.as_created().is_some())))
        .unwrap();
    assert_eq!(pool.best_available().unwrap(), 0);
    let err = pool.bind(0, |cur| poison(cur).unwrap()).unwrap();
    assert_eq!(err, CudaError::Driver(kernel_fault_code()));
    assert_eq!(pool.sticky_error(0).unwrap(), Some(kernel_fault_code()));
    assert_eq!(pool.best_available().unwrap(), 1, "device 0 skipped");
    assert_eq!(pool.bind_best(|i, _| i).unwrap(), 1);
    assert_eq!(
        pool.bind(0, |_| ()).unwrap_err(),
        CudaError::ContextPoisoned {
            code: kernel_fault_code()
        }
    );
    // distribute reports the refused binding; the healthy device still ran.
    let ran = AtomicUsize::new(0);
    let r = pool.distribute(&[1u8, 2], |_, _, c| {
        ran.fetch_add(1, Ordering::Relaxed);
        Ok::<_, CudaError>(c.to_vec())
    });
    assert_eq!(
        r.unwrap_err(),
        CudaError::ContextPoisoned {
            code: kernel_fault_code()
        }
    );
    assert_eq!(ran.load(Ordering::Relaxed), 1);
    // Both poisoned: no device to offer.
    pool.bind(1, |cur| poison(cur).unwrap()).unwrap();
    assert_eq!(
        pool.best_available().unwrap_err(),
        CudaError::ContextPoisoned {
            code: kernel_fault_code()
        }
    );
    drop(pool);
    no_leaks();
}

#[test]
fn a_thread_holding_a_pool_lock_is_refused_instead_of_deadlocking() {
    let (d, _g) = driver();
    let _devices = four_devices();
    let pool = DevicePool::new(d).unwrap();
    let refused =
        |r: Result<(), CudaError>| assert_eq!(r.unwrap_err(), CudaError::ContextAlreadyBound);
    pool.bind(0, |_| {
        refused(pool.bind(1, |_| ()));
        refused(pool.bind(0, |_| ()));
        refused(pool.with_all(|_| ()));
        refused(
            pool.distribute(&[1], |_, _, c| Ok::<_, CudaError>(c.to_vec()))
                .map(drop),
        );
        // Choosing never waits, even for the device this thread holds.
        assert_eq!(pool.best_available().unwrap(), 1, "device 0 is loaded");
    })
    .unwrap();
    // with_all lends every context in pool order; each can be bound in turn.
    let ordinals = pool
        .with_all(|ctxs| {
            refused(pool.bind(2, |_| ()));
            assert!((0..DEVICES).all(|i| pool.load(i).unwrap() == 1));
            ctxs.iter()
                .map(|c| c.bind(|cur| cur.device().unwrap().ordinal()).unwrap())
                .collect::<Vec<_>>()
        })
        .unwrap();
    assert_eq!(ordinals, [0, 1, 2, 3]);
    // A root binding elsewhere on the thread: the driver's rule.
    let own = Context::new(&d.device(3).unwrap(), CUctx_flags::empty()).unwrap();
    own.bind(|_| refused(pool.bind(3, |_| ()))).unwrap();
    // with_all waits for a binding in progress on another thread.
    let (tx, rx) = mpsc::channel();
    let ended = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            pool.bind(2, |_| {
                tx.send(()).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(50));
                ended.store(true, std::sync::atomic::Ordering::SeqCst);
            })
            .unwrap()
        });
        rx.recv().unwrap();
        pool.with_all(|_| ()).unwrap();
        assert!(
            ended.load(std::sync::atomic::Ordering::SeqCst),
            "with_all lent the contexts while the binding on the other thread ran"
        );
    });
    drop((own, pool));
    no_leaks();
}

/// Review finding: refusals that would come after a wait for a device's lock come
/// before it — in a host callback (whose stream's owner may hold the lock and wait
/// for the callback: a deadlock before) and on a thread with a binding of its own.
#[test]
fn refusals_come_before_waiting_for_a_device() {
    let (d, _g) = driver();
    let _devices = four_devices();
    let pool = std::sync::Arc::new(DevicePool::new(d).unwrap());
    let (tx, rx) = mpsc::channel();
    let in_callback = pool.clone();
    pool.bind(0, |cur| {
        let s = cur
            .create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)
            .unwrap();
        s.launch_host_fn(move || {
            let bind = in_callback.bind(0, |_| ()).err();
            let all = in_callback.with_all(|_| ()).err();
            let _ = tx.send((bind, all));
        })
        .unwrap();
        // This thread holds device 0's lock and waits for the callback.
        s.synchronize().unwrap();
    })
    .unwrap();
    let got = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("no answer from the callback: a deadlock");
    assert_eq!(
        got,
        (
            Some(CudaError::InHostCallback),
            Some(CudaError::InHostCallback)
        )
    );
    // A thread with a binding of its own is refused at once, even while another
    // thread holds the device.
    let own = Context::new(&d.device(1).unwrap(), CUctx_flags::empty()).unwrap();
    let holding = Barrier::new(2);
    let (refused, released) = (mpsc::channel::<()>(), AtomicUsize::new(0));
    std::thread::scope(|s| {
        let (refused_tx, refused_rx) = refused;
        let (released, holding, pool) = (&released, &holding, &pool);
        s.spawn(move || {
            pool.bind(0, |_| {
                holding.wait();
                // Holds the device until the other thread has been refused (or 10 s).
                let _ = refused_rx.recv_timeout(std::time::Duration::from_secs(10));
                released.store(1, Ordering::SeqCst);
            })
            .unwrap()
        });
        holding.wait();
        let r = own.bind(|_| pool.bind(0, |_| ())).unwrap();
        assert_eq!(r.err(), Some(CudaError::ContextAlreadyBound));
        assert_eq!(
            released.load(Ordering::SeqCst),
            0,
            "refused only after the lock was released"
        );
        let _ = refused_tx.send(());
    });
    drop(own);
    drop(pool);
    no_leaks();
}
