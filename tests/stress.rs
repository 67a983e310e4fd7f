//! Concurrency stress on softcuda: 8 threads × 1000 iterations, across 4 devices,
//! with owned contexts migrating between threads.
//!
//! Eight contexts (two per device) travel through one channel: each iteration takes
//! whichever context comes next (made or last used on any thread), binds it, creates
//! a stream, allocates and fills three buffers, launches `vector_add` on 32 elements
//! (the kernel of a per-thread `Library`, resolved in the bound context), takes and
//! fills stream-ordered memory from the device's default pool, records and waits
//! for an event, checks the sum, drops everything, and sends the context back.
//! Every 25th iteration a thread also creates, binds, uses and destroys a context
//! of its own. The test fails if anything is left alive at the end (softcuda's
//! live counts), if a shared context stayed on one thread, and a
//! watchdog aborts the process if the run takes longer than 240 s (a deadlock). It
//! prints its wall time: `stress: threads=8 iterations=1000 ... wall_ms=N`.
//!
//! softcuda only: it configures softcuda's devices and counts its objects.
#![cfg(not(feature = "gpu-tests"))]

mod common;

use common::{SoftDevices, driver, no_leaks};
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::{CUctx_flags, CUstream_flags};
use oxicuda_driver::{Context, CudaError, CurrentContext, Driver};
use std::collections::{HashMap, HashSet};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SLICES: &str = include_str!("../kernels/slices.ptx");
const THREADS: usize = 8;
const ITERATIONS: usize = 1000;
const DEVICES: usize = 4;
const CONTEXTS_PER_DEVICE: usize = 2;
const N: usize = 32;

type Add = (In<f32>, In<f32>, Out<f32>);

/// One iteration's work in the bound context: stream, buffers, launch, check.
fn work(
    cur: &CurrentContext<'_>,
    add: &oxicuda_driver::library::Kernel<'_, Add>,
    seed: f32,
) -> Result<(), CudaError> {
    let f = add.function(cur)?;
    let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    let xs: Vec<f32> = (0..N).map(|i| i as f32 + seed).collect();
    let a = cur.alloc_from(&xs)?;
    let b = cur.alloc_from(&xs)?;
    let mut c = cur.alloc::<f32>(N)?;
    f.launch(&stream, 1, N as u32, 0, (&a, &b, &mut c))?;
    // Stream-ordered memory from the device's default pool, shared by every context
    // of the device, and an event.
    let mut scratch = stream.alloc_async::<u32>(N)?;
    stream.fill(&mut scratch, 7)?;
    drop(scratch);
    let event = cur.create_event::<oxicuda_driver::event::NoTiming>()?;
    event.record(&stream)?;
    event.synchronize()?;
    stream.synchronize()?;
    let sum = c.to_vec()?;
    assert!(sum.iter().zip(&xs).all(|(s, x)| *s == 2.0 * x), "wrong sum");
    Ok(())
}

fn worker(
    d: &'static Driver,
    thread: usize,
    take: Arc<Mutex<mpsc::Receiver<Context>>>,
    give: mpsc::Sender<Context>,
    seen: Arc<Mutex<HashMap<usize, HashSet<usize>>>>,
) -> usize {
    let lib = d
        .load_library(SLICES.as_bytes(), &JitOptions::default())
        .unwrap();
    // SAFETY: kernels/slices.cu: vector_add writes its output only below its length
    // and reads its inputs only below theirs.
    let add = unsafe { lib.kernel::<Add>("vector_add") }.unwrap();
    let mut migrations = 0;
    let mut last: Option<usize> = None;
    for i in 0..ITERATIONS {
        let ctx = take.lock().unwrap().recv().unwrap();
        let id = ctx.raw().0 as usize;
        migrations += usize::from(last.is_some_and(|l| l != id));
        last = Some(id);
        seen.lock().unwrap().entry(id).or_default().insert(thread);
        ctx.bind(|cur| work(cur, &add, (thread * ITERATIONS + i) as f32))
            .unwrap()
            .unwrap();
        give.send(ctx).unwrap();
        if i % 25 == 0 {
            let own = Context::new(
                &d.device((thread + i) % DEVICES).unwrap(),
                CUctx_flags::empty(),
            )
            .unwrap();
            own.bind(|cur| work(cur, &add, i as f32)).unwrap().unwrap();
        }
    }
    migrations
}

#[test]
fn eight_threads_bind_create_launch_and_drop_across_four_devices() {
    let (d, _g) = driver();
    let _devices = SoftDevices::configure(
        (0..DEVICES as u32)
            .map(|i| softcuda::control::Profile::new(i, 8 + i % 2, 0, 1024))
            .collect(),
    );
    assert_eq!(d.device_count().unwrap(), DEVICES);

    // The watchdog: a run past 240 s is a deadlock; abort with a message.
    let (done, finished) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) =
            finished.recv_timeout(Duration::from_secs(240))
        {
            eprintln!("stress: no progress for 240 s: deadlock; aborting");
            std::process::abort();
        }
    });

    let start = Instant::now();
    let (give, take) = mpsc::channel::<Context>();
    for i in 0..DEVICES * CONTEXTS_PER_DEVICE {
        let ctx = Context::new(&d.device(i % DEVICES).unwrap(), CUctx_flags::empty()).unwrap();
        give.send(ctx).unwrap();
    }
    let take = Arc::new(Mutex::new(take));
    let seen = Arc::new(Mutex::new(HashMap::new()));
    let migrations: usize = (0..THREADS)
        .map(|t| {
            let (take, give, seen) = (Arc::clone(&take), give.clone(), Arc::clone(&seen));
            std::thread::spawn(move || worker(d, t, take, give, seen))
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .sum();
    drop(give);
    let contexts: Vec<Context> = take.lock().unwrap().try_iter().collect();
    assert_eq!(contexts.len(), DEVICES * CONTEXTS_PER_DEVICE);
    drop(contexts);
    let wall = start.elapsed();
    done.send(()).unwrap();
    watchdog.join().unwrap();
    no_leaks();
    println!(
        "stress: threads={THREADS} iterations={ITERATIONS} devices={DEVICES} contexts={} migrations={migrations} own_contexts={} wall_ms={}",
        DEVICES * CONTEXTS_PER_DEVICE,
        THREADS * ITERATIONS.div_ceil(25),
        wall.as_millis()
    );
    // The shared contexts moved between threads: each was bound by several.
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), DEVICES * CONTEXTS_PER_DEVICE);
    let fewest = seen.values().map(HashSet::len).min().unwrap();
    assert!(fewest >= 2, "a context stayed on one thread");
    println!("stress: every shared context was bound by at least {fewest} threads");
}
