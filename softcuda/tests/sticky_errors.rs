//! What softcuda does after a sticky error (a kernel fault), through the C ABI.
//!
//! On the driver a fault poisons the whole context: the work still queued in it is
//! abandoned, and a synchronisation that reports the error returns only once nothing
//! of the context touches memory any more — code such as `Stream::scope` of the safe
//! crate frees host memory as soon as `cuStreamSynchronize` returns, success or not.
//!
//! The host buffers the streams could write to are leaked on purpose: if softcuda
//! regresses, a late copy writes into memory the test still owns, and the assertion
//! that notices it fails instead of the process corrupting its heap.

mod common;

use common::fault;
use common::{no_leaks, ok, serial};
use softcuda::api::{context::*, memory::*, module::*, stream::*};
use softcuda::types::*;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// `poke(p, v)`: one thread stores `v` at address `p`; a wild `p` faults.
const POKE: &str = concat!(
    ".version 8.0\n.target sm_80\n.address_size 64\n",
    ".visible .entry poke(.param .u64 poke_p, .param .u32 poke_v)\n{\n",
    ".reg .b32 %r<2>;\n.reg .b64 %rd<2>;\n",
    "ld.param.u64 %rd1, [poke_p];\nld.param.u32 %r1, [poke_v];\n",
    "st.global.u32 [%rd1], %r1;\nret;\n}\n\0"
);

/// Leaks `t`: the tests' host memory outlives every stream worker.
fn leak<T>(t: T) -> &'static T {
    Box::leak(Box::new(t))
}

/// What a host function does: counts its run, sleeps, waits for its gate if it has
/// one, and records that it finished.
#[derive(Default)]
struct Step {
    sleep_ms: u64,
    gated: bool,
    open: Mutex<bool>,
    cv: Condvar,
    runs: AtomicU32,
    finished: AtomicBool,
}

impl Step {
    fn sleeping(ms: u64) -> &'static Step {
        leak(Step {
            sleep_ms: ms,
            ..Step::default()
        })
    }

    fn gated() -> &'static Step {
        leak(Step {
            gated: true,
            ..Step::default()
        })
    }

    fn release(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }

    /// Opens the gate `ms` milliseconds from now, from another thread: the
    /// synchronising call the test makes next finds the host function running
    /// however slowly this thread got here (valgrind, a loaded machine).
    fn release_after(&'static self, ms: u64) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(ms));
            self.release();
        })
    }

    fn started(&self) -> bool {
        self.runs.load(Ordering::SeqCst) > 0
    }

    /// Waits until the host function runs: its worker may start late, and a fault
    /// before that would discard it rather than find it running.
    fn wait_started(&self) {
        let t = Instant::now();
        while !self.started() {
            assert!(t.elapsed() < Duration::from_secs(10), "never started");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn finished(&self) -> bool {
        self.finished.load(Ordering::SeqCst)
    }

    fn data(&'static self) -> *mut c_void {
        (self as *const Step).cast_mut().cast()
    }
}

extern "C" fn step(data: *mut c_void) {
    // SAFETY: the tests pass a leaked `Step`.
    let s = unsafe { &*data.cast::<Step>() };
    s.runs.fetch_add(1, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(s.sleep_ms));
    if s.gated {
        let mut open = s.open.lock().unwrap();
        while !*open {
            open = s.cv.wait(open).unwrap();
        }
    }
    s.finished.store(true, Ordering::SeqCst);
}

/// A `cuStreamAddCallback` callback: records the status it is given.
extern "C" fn record_status(_s: CUstream, status: CUresult, data: *mut c_void) {
    // SAFETY: the tests pass a leaked `Mutex<Vec<CUresult>>`.
    let log = unsafe { &*data.cast::<Mutex<Vec<CUresult>>>() };
    log.lock().unwrap().push(status);
}

/// A leaked, zeroed host buffer of `n` words.
fn host_words(n: usize) -> *mut u32 {
    Box::leak(vec![0u32; n].into_boxed_slice()).as_mut_ptr()
}

/// `n` zeroed words of host memory registered with the current context: a copy
/// into it stays queued (into plain host memory, a copy returns only once done).
fn registered_words(n: usize) -> *mut u32 {
    let p = host_words(n);
    // SAFETY: a leaked buffer of `n` words, registered once.
    ok(unsafe { cuMemHostRegister_v2(p.cast(), n * 4, 0) });
    p
}

/// The `n` words at `p`, read as another thread may still write them.
fn read_words(p: *const u32, n: usize) -> Vec<u32> {
    // SAFETY: `p` is a leaked buffer of at least `n` words.
    (0..n)
        .map(|i| unsafe { core::ptr::read_volatile(p.add(i)) })
        .collect()
}

/// A created context with the `poke` kernel loaded.
struct Fixture {
    ctx: CUcontext,
    poke: CUfunction,
}

impl Fixture {
    fn new() -> Fixture {
        // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
        unsafe {
            let mut ctx = std::ptr::null_mut();
            ok(cuCtxCreate_v2(&mut ctx, 0, 0));
            let mut m = std::ptr::null_mut();
            ok(cuModuleLoadData(&mut m, POKE.as_ptr().cast()));
            let mut poke = std::ptr::null_mut();
            ok(cuModuleGetFunction(&mut poke, m, c"poke".as_ptr()));
            Fixture { ctx, poke }
        }
    }

    fn stream(&self, flags: u32) -> CUstream {
        let mut s = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        ok(unsafe { cuStreamCreate(&mut s, flags) });
        s
    }

    /// Queues `poke(p, v)` on `s`.
    fn poke(&self, s: CUstream, p: u64, v: u32) -> CUresult {
        let mut args: [*mut c_void; 2] = [
            (&raw const p).cast_mut().cast(),
            (&raw const v).cast_mut().cast(),
        ];
        // SAFETY: the kernel's two parameters, alive for the call.
        unsafe {
            cuLaunchKernel(
                self.poke,
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                s,
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
    }

    /// Faults on `s` (a store to address 8) and waits until the fault is reported.
    fn fault(&self, s: CUstream) {
        ok(self.poke(s, 8, 1));
        // SAFETY: a live stream of the current context.
        assert_eq!(unsafe { cuStreamSynchronize(s) }, fault());
    }

    /// Destroys the context (everything it owns with it).
    fn destroy(self) {
        // SAFETY: the fixture's own context.
        ok(unsafe { cuCtxDestroy_v2(self.ctx) });
    }
}

/// A device buffer of `n` words, each `pattern`.
fn device_words(n: usize, pattern: u32) -> CUdeviceptr {
    let mut d = 0;
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        ok(cuMemAlloc_v2(&mut d, n * 4));
        ok(cuMemsetD32_v2(d, pattern, n));
    }
    d
}

const N: usize = 1024;

/// The scenario of `Stream::scope`: stream A runs a slow host function, then a
/// device-to-host copy; a kernel faults on stream B. Synchronising A reports the
/// fault only after the host function finished, and the copy never happens.
#[test]
fn stream_synchronize_returns_after_the_running_operation_and_the_copy_never_runs() {
    let _g = serial();
    let f = Fixture::new();
    let (a, b) = (f.stream(0x1), f.stream(0x1));
    let d = device_words(N, 0xA5A5_A5A5);
    let host = registered_words(N);
    let slow = Step::gated();
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        ok(cuLaunchHostFunc(a, Some(step), slow.data()));
        ok(cuMemcpyDtoHAsync_v2(host.cast(), d, N * 4, a));
        slow.wait_started();
        f.fault(b);
        assert!(!slow.finished(), "A's host function runs until released");
        let opener = slow.release_after(100);
        assert_eq!(cuStreamSynchronize(a), fault());
        assert!(
            slow.finished(),
            "cuStreamSynchronize(A) returned while A's host function was still running"
        );
        opener.join().unwrap();
        let seen = read_words(host, N);
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(
            read_words(host, N),
            seen,
            "host memory changed after cuStreamSynchronize returned"
        );
        assert!(
            seen.iter().all(|w| *w == 0),
            "the copy queued before the fault ran after it"
        );
        assert_eq!(cuStreamSynchronize(a), fault(), "the error stays");
        ok(cuStreamDestroy_v2(a));
        ok(cuStreamDestroy_v2(b));
    }
    f.destroy();
    no_leaks();
}

/// `cuCtxSynchronize`, `cuEventSynchronize`, the legacy default stream and
/// `cuStreamSynchronize`, called from several threads at once, all wait for the
/// operation running on the affected stream; queries say `NOT_READY` until then.
#[test]
fn every_synchroniser_waits_for_the_running_operation_from_many_threads() {
    let _g = serial();
    let f = Fixture::new();
    let (a, b) = (f.stream(0), f.stream(0x1)); // A blocks the legacy stream
    let d = device_words(N, 0x5A5A_5A5A);
    let host = registered_words(N);
    let slow = Step::gated();
    let mut ev = std::ptr::null_mut();
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        ok(cuEventCreate(&mut ev, 0));
        ok(cuLaunchHostFunc(a, Some(step), slow.data()));
        ok(cuMemcpyDtoHAsync_v2(host.cast(), d, N * 4, a));
        ok(cuEventRecord(ev, a));
        slow.wait_started();
        f.fault(b);
        assert!(!slow.finished(), "A's host function runs until released");
        assert_eq!(cuStreamQuery(a), code::NOT_READY, "A is still running");
        assert_eq!(cuEventQuery(ev), code::NOT_READY, "its record is pending");
        assert_eq!(
            cuEventRecord(ev, a),
            fault(),
            "nothing is queued after the fault"
        );
    }
    // Released while the threads below wait (or before some of them start: those
    // find A finished, which they check as well).
    let opener = slow.release_after(300);
    // Handles cross threads as numbers.
    let (ctx, a_h, ev_h) = (f.ctx as usize, a as usize, ev as usize);
    type Call = fn(usize, usize) -> CUresult; // (stream, event) -> result
    let calls: [(&str, Call); 5] = [
        // SAFETY (each): softcuda's exports with live handles of the current context.
        ("cuCtxSynchronize", |_, _| unsafe { cuCtxSynchronize() }),
        ("cuEventSynchronize", |_, e| unsafe {
            cuEventSynchronize(e as CUevent)
        }),
        ("cuStreamSynchronize(A)", |s, _| unsafe {
            cuStreamSynchronize(s as CUstream)
        }),
        ("cuStreamSynchronize(NULL)", |_, _| unsafe {
            cuStreamSynchronize(std::ptr::null_mut())
        }),
        ("cuStreamSynchronize(A) again", |s, _| unsafe {
            cuStreamSynchronize(s as CUstream)
        }),
    ];
    std::thread::scope(|scope| {
        for (name, call) in calls {
            scope.spawn(move || {
                // SAFETY: a live context.
                ok(unsafe { cuCtxPushCurrent_v2(ctx as CUcontext) });
                let r = call(a_h, ev_h);
                let finished = slow.finished();
                let mut popped = std::ptr::null_mut();
                // SAFETY: a valid out-pointer.
                ok(unsafe { cuCtxPopCurrent_v2(&mut popped) });
                assert_eq!(r, fault(), "{name}");
                assert!(finished, "{name} returned while A was still running");
            });
        }
    });
    opener.join().unwrap();
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        assert_eq!(cuStreamQuery(a), fault());
        assert_eq!(cuEventQuery(ev), fault());
        let mut ms = 0f32;
        assert_eq!(
            cuEventElapsedTime(&mut ms, ev, ev),
            fault(),
            "an abandoned record has no time"
        );
        std::thread::sleep(Duration::from_millis(200));
        assert!(
            read_words(host, N).iter().all(|w| *w == 0),
            "the copy queued before the fault ran after it"
        );
        ok(cuEventDestroy_v2(ev));
        ok(cuStreamDestroy_v2(a));
        ok(cuStreamDestroy_v2(b));
    }
    f.destroy();
    no_leaks();
}

/// Everything queued behind a blocked host function is abandoned once the context
/// is poisoned: no memset, no kernel, no copy, no host function, no event record;
/// a stream waiting for such a record does not hang; a `cuStreamAddCallback`
/// callback is called exactly once with the error, as the driver documents.
/// Reporting the fault on B does not wait for A's blocked host function.
#[test]
fn work_queued_before_the_fault_never_starts_after_it() {
    let _g = serial();
    let f = Fixture::new();
    let (a, b, c) = (f.stream(0x1), f.stream(0x1), f.stream(0x1));
    let host = host_words(N);
    let gate = Step::gated();
    let later = Step::sleeping(0);
    let on_c = Step::sleeping(0);
    let statuses: &'static Mutex<Vec<CUresult>> = leak(Mutex::new(Vec::new()));
    let src = registered_words(N); // plain memory would make the copy wait for the gate
    let mut ev = std::ptr::null_mut();
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        // The host buffer is registered: memsets and kernels may write it directly.
        ok(cuMemHostRegister_v2(host.cast(), N * 4, 0));
        for i in 0..N {
            src.add(i).write(0x7777_7777);
        }
        ok(cuEventCreate(&mut ev, 0));
        ok(cuLaunchHostFunc(a, Some(step), gate.data()));
        ok(cuMemsetD32Async(host as u64, 0x1111_1111, N, a));
        ok(f.poke(a, host as u64 + 4, 0x2222_2222));
        ok(cuMemcpyHtoDAsync_v2(host as u64 + 8, src.cast(), 4, a));
        ok(cuLaunchHostFunc(a, Some(step), later.data()));
        ok(cuStreamAddCallback(
            a,
            Some(record_status),
            (statuses as *const Mutex<Vec<CUresult>>).cast_mut().cast(),
            0,
        ));
        ok(cuEventRecord(ev, a));
        ok(cuStreamWaitEvent(c, ev, 0));
        ok(cuLaunchHostFunc(c, Some(step), on_c.data()));
        gate.wait_started();
        f.fault(b); // returns although A's host function is blocked
        assert_eq!(
            cuMemsetD32Async(host as u64, 0x3333_3333, N, a),
            fault(),
            "nothing is queued after the fault"
        );
        assert_eq!(cuLaunchHostFunc(a, Some(step), later.data()), fault());
        assert_eq!(cuStreamQuery(a), code::NOT_READY, "A's host function runs");
        gate.release();
        assert_eq!(cuStreamSynchronize(a), fault());
        assert!(gate.finished());
        assert_eq!(cuStreamSynchronize(c), fault(), "no hang");
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            read_words(host, N).iter().all(|w| *w == 0),
            "an operation queued before the fault ran after it"
        );
        assert_eq!(later.runs.load(Ordering::SeqCst), 0, "a host function ran");
        assert_eq!(on_c.runs.load(Ordering::SeqCst), 0, "a host function ran");
        assert_eq!(
            *statuses.lock().unwrap(),
            [fault()],
            "the callback runs once, with the error"
        );
        assert_eq!(cuEventQuery(ev), fault());
        ok(cuEventDestroy_v2(ev));
        for s in [a, b, c] {
            ok(cuStreamDestroy_v2(s));
        }
    }
    f.destroy();
    no_leaks();
}

/// The destruction paths drain the same way: `cuCtxDestroy` returns only after the
/// running operation, and the work behind it never runs.
#[test]
fn context_destruction_waits_for_the_running_operation() {
    let _g = serial();
    let f = Fixture::new();
    let (a, b) = (f.stream(0x1), f.stream(0x1));
    let d = device_words(N, 0xA5A5_A5A5);
    let host = registered_words(N);
    let slow = Step::gated();
    let later = Step::sleeping(0);
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        ok(cuLaunchHostFunc(a, Some(step), slow.data()));
        ok(cuMemcpyDtoHAsync_v2(host.cast(), d, N * 4, a));
        ok(cuLaunchHostFunc(a, Some(step), later.data()));
        slow.wait_started();
        f.fault(b);
        assert!(!slow.finished(), "A's host function runs until released");
    }
    let opener = slow.release_after(100);
    f.destroy();
    assert!(slow.finished(), "cuCtxDestroy returned while A was running");
    opener.join().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(read_words(host, N).iter().all(|w| *w == 0), "the copy ran");
    assert_eq!(later.runs.load(Ordering::SeqCst), 0, "a host function ran");
    no_leaks();
}

/// A primary-context reset after a fault waits like a synchronisation, discards the
/// old streams' work, and leaves a clean context whose new streams run work again.
#[test]
fn a_reset_primary_context_is_usable_again() {
    let _g = serial();
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        let mut ctx = std::ptr::null_mut();
        ok(cuDevicePrimaryCtxRetain(&mut ctx, 0));
        ok(cuCtxPushCurrent_v2(ctx));
        let mut m = std::ptr::null_mut();
        ok(cuModuleLoadData(&mut m, POKE.as_ptr().cast()));
        let mut poke = std::ptr::null_mut();
        ok(cuModuleGetFunction(&mut poke, m, c"poke".as_ptr()));
        let f = Fixture { ctx, poke };
        let (a, b) = (f.stream(0x1), f.stream(0x1));
        let d = device_words(N, 0xA5A5_A5A5);
        let host = registered_words(N);
        let slow = Step::gated();
        ok(cuLaunchHostFunc(a, Some(step), slow.data()));
        ok(cuMemcpyDtoHAsync_v2(host.cast(), d, N * 4, a));
        slow.wait_started();
        f.fault(b);
        assert!(!slow.finished(), "A's host function runs until released");
        let opener = slow.release_after(100);
        ok(cuDevicePrimaryCtxReset_v2(0));
        assert!(slow.finished(), "the reset returned while A was running");
        opener.join().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(read_words(host, N).iter().all(|w| *w == 0), "the copy ran");
        assert_eq!(cuStreamQuery(a), code::INVALID_HANDLE, "streams are gone");
        // A clean context: new work runs.
        let s = f.stream(0x1);
        let d = device_words(N, 0x0102_0304);
        let out = host_words(N);
        let after = Step::sleeping(20);
        ok(cuLaunchHostFunc(s, Some(step), after.data()));
        ok(cuMemcpyDtoHAsync_v2(out.cast(), d, N * 4, s));
        ok(cuStreamSynchronize(s));
        assert!(after.finished());
        assert!(read_words(out, N).iter().all(|w| *w == 0x0102_0304));
        ok(cuStreamDestroy_v2(s));
        let mut popped = std::ptr::null_mut();
        ok(cuCtxPopCurrent_v2(&mut popped));
        ok(cuDevicePrimaryCtxRelease_v2(0));
    }
    no_leaks();
}

/// A host function that calls the driver (which CUDA forbids, but programs do)
/// synchronising its own stream does not deadlock on itself.
#[test]
fn a_host_function_synchronising_its_own_stream_does_not_deadlock() {
    struct Own {
        ctx: usize,
        stream: usize,
        result: Mutex<Option<CUresult>>,
    }
    extern "C" fn sync_own(data: *mut c_void) {
        // SAFETY: the test passes a leaked `Own`.
        let o = unsafe { &*data.cast::<Own>() };
        // SAFETY: a live context and stream.
        let r = unsafe {
            ok(cuCtxPushCurrent_v2(o.ctx as CUcontext));
            let r = cuStreamSynchronize(o.stream as CUstream);
            let mut p = std::ptr::null_mut();
            ok(cuCtxPopCurrent_v2(&mut p));
            r
        };
        *o.result.lock().unwrap() = Some(r);
    }
    let _g = serial();
    let f = Fixture::new();
    let a = f.stream(0x1);
    let own = leak(Own {
        ctx: f.ctx as usize,
        stream: a as usize,
        result: Mutex::new(None),
    });
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        ok(cuLaunchHostFunc(
            a,
            Some(sync_own),
            (own as *const Own).cast_mut().cast(),
        ));
        let t = Instant::now();
        while cuStreamQuery(a) == code::NOT_READY {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "the host function deadlocked on its own stream"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(*own.result.lock().unwrap(), Some(code::SUCCESS));
        ok(cuStreamDestroy_v2(a));
    }
    f.destroy();
    no_leaks();
}

/// Event bookkeeping that synchronisation relies on: a refused record leaves the
/// event as it was (it does not stay pending forever), and the elapsed time of an
/// event with itself is 0 (it does not lock the event twice).
#[test]
fn refused_records_and_self_elapsed_time_do_not_hang() {
    let _g = serial();
    let f = Fixture::new();
    let s = f.stream(0x1);
    let mut ev = std::ptr::null_mut();
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        ok(cuEventCreate(&mut ev, 0));
        ok(cuEventRecord(ev, s));
        ok(cuEventSynchronize(ev));
        let bogus = (4usize << 48 | 0xFFFF_FFFF) as CUstream; // a stream id never issued
        assert_eq!(cuEventRecord(ev, bogus), code::INVALID_HANDLE);
        assert_eq!(
            cuEventQuery(ev),
            code::SUCCESS,
            "a refused record is pending"
        );
        let (tx, rx) = std::sync::mpsc::channel();
        let ev_h = ev as usize;
        std::thread::spawn(move || {
            let mut ms = -1f32;
            // A live event; a valid out-pointer (the enclosing `unsafe`).
            let r = cuEventElapsedTime(&mut ms, ev_h as CUevent, ev_h as CUevent);
            let _ = tx.send((r, ms));
        });
        let (r, ms) = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("cuEventElapsedTime(ev, ev) deadlocked");
        assert_eq!((r, ms), (code::SUCCESS, 0.0));
        ok(cuEventDestroy_v2(ev));
        ok(cuStreamDestroy_v2(s));
    }
    f.destroy();
    no_leaks();
}
