//! softcuda's own soundness, through the C ABI: memory is never freed under work that
//! may still touch it (work of destroyed streams, kernels running on other threads,
//! work queued in another context), work that fails while it runs poisons its
//! context with a sticky error, arguments that would overflow are refused, the
//! occupancy calculator takes any `size_t`, and device memory lives in an address
//! range of its own, so that a stale device address never reaches host memory.
//!
//! Where a regression would make softcuda touch freed memory, the tests are built so
//! that the assertion that notices it fails first, while the work is still held back
//! by a closed gate: a failing test reports instead of corrupting the heap.

mod common;

use common::fault;
use common::{no_leaks, ok, serial};
use softcuda::api::{context::*, memory::*, module::*, stream::*};
use softcuda::control;
use softcuda::types::*;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// A host function's state: counts its runs, waits for its gate if it has one,
/// records that it finished.
#[derive(Default)]
struct Step {
    gated: bool,
    open: Mutex<bool>,
    cv: Condvar,
    runs: AtomicU32,
    finished: AtomicBool,
}

impl Step {
    /// Leaked: it outlives every stream worker, even those of a failed test.
    fn new(gated: bool) -> &'static Step {
        Box::leak(Box::new(Step {
            gated,
            ..Step::default()
        }))
    }

    fn release(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
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
    if s.gated {
        let mut open = s.open.lock().unwrap();
        while !*open {
            open = s.cv.wait(open).unwrap();
        }
    }
    s.finished.store(true, Ordering::SeqCst);
}

/// A context handle that may cross threads.
#[derive(Clone, Copy)]
struct Ctx(CUcontext);
// SAFETY: a handle is an opaque number.
unsafe impl Send for Ctx {}

/// Runs `op` on a new thread with `ctx` current; its result comes back on the channel.
fn on_thread(ctx: Ctx, op: impl FnOnce() -> CUresult + Send + 'static) -> Receiver<CUresult> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let ctx = ctx;
        // SAFETY: a live context.
        ok(unsafe { cuCtxSetCurrent(ctx.0) });
        let _ = tx.send(op());
    });
    rx
}

fn create_context() -> CUcontext {
    let mut ctx = std::ptr::null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuCtxCreate_v2(&mut ctx, 0, 0) });
    ctx
}

fn load(ptx: &str) -> CUmodule {
    let mut m = std::ptr::null_mut();
    // SAFETY: NUL-terminated PTX text.
    ok(unsafe { cuModuleLoadData(&mut m, ptx.as_ptr().cast()) });
    m
}

fn function(m: CUmodule, name: &std::ffi::CStr) -> CUfunction {
    let mut f = std::ptr::null_mut();
    // SAFETY: a live module, a NUL-terminated name.
    ok(unsafe { cuModuleGetFunction(&mut f, m, name.as_ptr()) });
    f
}

/// Launches `f` on one thread with the parameter values `args`.
fn launch(f: CUfunction, stream: CUstream, args: &[*const c_void]) -> CUresult {
    let mut args: Vec<*mut c_void> = args.iter().map(|p| p.cast_mut()).collect();
    // SAFETY: one pointer per kernel parameter, alive for the call.
    unsafe {
        cuLaunchKernel(
            f,
            1,
            1,
            1,
            1,
            1,
            1,
            0,
            stream,
            args.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
}

fn device_words(n: usize) -> CUdeviceptr {
    let mut d = 0;
    // SAFETY: valid out-pointer; a fresh allocation of `n` words.
    unsafe {
        ok(cuMemAlloc_v2(&mut d, n * 4));
        ok(cuMemsetD32_v2(d, 0, n));
    }
    d
}

fn read_words(d: CUdeviceptr, n: usize) -> Vec<u32> {
    let mut v = vec![0u32; n];
    // SAFETY: `d` holds `n` words; `v` is ours.
    ok(unsafe { cuMemcpyDtoH_v2(v.as_mut_ptr().cast(), d, n * 4) });
    v
}

const N: usize = 4096;
const PATTERN: u32 = 0xDEAD_BEEF;

/// Work queued on a stream that is then destroyed: a gated host function, a memset
/// of `d` and a host function that records that the memset is over.
struct Orphan {
    d: CUdeviceptr,
    gate: &'static Step,
    done: &'static Step,
}

fn orphan_work() -> Orphan {
    let d = device_words(N);
    let (gate, done) = (Step::new(true), Step::new(false));
    let mut s = std::ptr::null_mut();
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        ok(cuStreamCreate(&mut s, 0)); // blocking: the legacy stream waits for it
        ok(cuLaunchHostFunc(s, Some(step), gate.data()));
        ok(cuMemsetD32Async(d, PATTERN, N, s));
        ok(cuLaunchHostFunc(s, Some(step), done.data()));
        ok(cuStreamDestroy_v2(s)); // returns at once, as on the driver
    }
    assert_eq!(
        control::live_counts().streams,
        0,
        "a destroyed stream counts as gone"
    );
    o_check_pending(gate, done);
    Orphan { d, gate, done }
}

fn o_check_pending(gate: &Step, done: &Step) {
    let t = Instant::now();
    while gate.runs.load(Ordering::SeqCst) == 0 {
        assert!(t.elapsed() < Duration::from_secs(10), "the gate never ran");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(!done.finished());
}

/// `rx` (an operation on another thread) must not answer while the orphaned work is
/// held back, and must answer once it is done; its answer.
fn waits_for(what: &str, rx: &Receiver<CUresult>, o: &Orphan) -> CUresult {
    assert!(
        matches!(
            rx.recv_timeout(Duration::from_millis(300)),
            Err(RecvTimeoutError::Timeout)
        ),
        "{what} returned while a destroyed stream still had work queued"
    );
    o.gate.release();
    let r = rx
        .recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{what} never returned"));
    assert!(
        o.done.finished(),
        "{what} returned before the destroyed stream's work ended"
    );
    r
}

/// `cuStreamDestroy` returns at once; every synchronisation that covers the stream's
/// context — `cuCtxSynchronize`, the legacy stream, and the implicit one of
/// `cuMemFree`, `cuModuleUnload` and `cuCtxDestroy` — waits for the work it left.
#[test]
fn work_left_on_a_destroyed_stream_is_waited_for() {
    let _g = serial();
    type Op = fn(&Orphan, CUmodule) -> CUresult;
    let ops: [(&str, Op); 7] = [
        // SAFETY (all): softcuda's exports, with live handles.
        ("cuCtxSynchronize", |_, _| unsafe { cuCtxSynchronize() }),
        ("cuStreamSynchronize(NULL)", |_, _| unsafe {
            cuStreamSynchronize(std::ptr::null_mut())
        }),
        ("cuMemcpyDtoH on the legacy stream", |o, _| {
            if read_words(o.d, N).iter().all(|w| *w == PATTERN) {
                code::SUCCESS
            } else {
                4242 // the copy ran before the memset
            }
        }),
        ("cuMemFree", |o, _| unsafe { cuMemFree_v2(o.d) }),
        ("cuModuleUnload", |_, m| unsafe { cuModuleUnload(m) }),
        ("cuCtxDestroy", |_, _| {
            let mut c = std::ptr::null_mut();
            // SAFETY: valid out-pointer; the thread's current context.
            unsafe {
                ok(cuCtxGetCurrent(&mut c));
                cuCtxDestroy_v2(c)
            }
        }),
        ("cuMemFreeHost", |_, _| {
            let mut p = std::ptr::null_mut();
            // SAFETY: a fresh pinned allocation, freed at once.
            unsafe {
                ok(cuMemHostAlloc(&mut p, 64, 0));
                cuMemFreeHost(p)
            }
        }),
    ];
    for (what, op) in ops {
        let ctx = create_context();
        let m = load(DEEP);
        let o = orphan_work();
        let o: &'static Orphan = Box::leak(Box::new(o));
        let m = m as usize;
        let rx = on_thread(Ctx(ctx), move || op(o, m as CUmodule));
        assert_eq!(waits_for(what, &rx, o), code::SUCCESS, "{what}");
        if what != "cuMemFree" && what != "cuCtxDestroy" {
            assert!(read_words(o.d, N).iter().all(|w| *w == PATTERN));
        }
        if what != "cuCtxDestroy" {
            // SAFETY: the test's own context.
            ok(unsafe { cuCtxDestroy_v2(ctx) });
        }
    }
    no_leaks();
}

/// A kernel that marks `flags[0]`, then stores to `buf[0]` until `flags[1]` is set.
const SPIN: &str = concat!(
    ".version 8.0\n.target sm_80\n.address_size 64\n",
    ".visible .entry spin(.param .u64 spin_flags, .param .u64 spin_buf)\n{\n",
    ".reg .pred %p<2>;\n.reg .b32 %r<4>;\n.reg .b64 %rd<3>;\n",
    "ld.param.u64 %rd1, [spin_flags];\nld.param.u64 %rd2, [spin_buf];\n",
    "mov.u32 %r1, 1;\nst.volatile.global.u32 [%rd1], %r1;\nmov.u32 %r2, 0;\n",
    "$LOOP:\nst.global.u32 [%rd2], %r2;\nadd.u32 %r2, %r2, 1;\n",
    "ld.volatile.global.u32 %r3, [%rd1+4];\nsetp.eq.u32 %p1, %r3, 0;\n",
    "setp.lt.and.u32 %p1, %r2, 100000000, %p1;\n@%p1 bra $LOOP;\nret;\n}\n\0"
);

/// `cuMemFree` from one thread waits for a kernel of the context that runs on the
/// legacy stream of another thread (on the calling thread, in softcuda) and uses the
/// memory: the kernel ends normally, and only then is the memory freed.
#[test]
fn a_free_waits_for_a_kernel_running_on_another_thread() {
    let _g = serial();
    let ctx = create_context();
    let m = load(SPIN);
    let spin = function(m, c"spin");
    let mut flags: *mut c_void = std::ptr::null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuMemHostAlloc(&mut flags, 8, 0) });
    let flags = flags as u64;
    let buf = device_words(16);
    let word = |i: u64| {
        // SAFETY: two words of pinned memory, alive until the end of the test; the
        // kernel accesses them atomically too.
        unsafe { std::sync::atomic::AtomicU32::from_ptr((flags + 4 * i) as *mut u32) }
    };
    let (tx, rx) = mpsc::channel();
    let (c, f) = (Ctx(ctx), spin as usize);
    let kernel = std::thread::spawn(move || {
        let c = c;
        // SAFETY: a live context.
        ok(unsafe { cuCtxSetCurrent(c.0) });
        let r = launch(
            f as CUfunction,
            std::ptr::null_mut(),
            &[(&raw const flags).cast(), (&raw const buf).cast()],
        );
        let _ = tx.send(r);
    });
    let t = Instant::now();
    while word(0).load(Ordering::SeqCst) == 0 {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the kernel never ran"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    // SAFETY: the test's own allocation.
    let free = on_thread(Ctx(ctx), move || unsafe { cuMemFree_v2(buf) });
    let early = matches!(
        free.recv_timeout(Duration::from_millis(300)),
        Err(RecvTimeoutError::Timeout)
    );
    word(1).store(1, Ordering::SeqCst); // let the kernel end
    let launched = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    kernel.join().unwrap();
    assert!(
        early,
        "cuMemFree returned while a kernel using the memory ran on another thread"
    );
    assert_eq!(launched, code::SUCCESS, "the kernel lost its memory");
    assert_eq!(free.recv().unwrap(), code::SUCCESS);
    // SAFETY: the test's own pinned memory and context.
    unsafe {
        ok(cuMemFreeHost(flags as *mut c_void));
        ok(cuCtxDestroy_v2(ctx));
    }
    no_leaks();
}

/// Work queued in one context on memory of another (a peer copy, say) whose context
/// then frees it: when the work runs it finds the memory gone and faults (sticky
/// `ILLEGAL_ADDRESS` in its context), as a GPU would; it never reads freed memory.
#[test]
fn work_queued_in_another_context_never_touches_memory_freed_meanwhile() {
    let _g = serial();
    let (a, b) = (create_context(), create_context()); // b is current
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        ok(cuCtxSetCurrent(a));
        let d = device_words(N);
        ok(cuMemsetD32_v2(d, PATTERN, N));
        ok(cuCtxSetCurrent(b));
        let mut s = std::ptr::null_mut();
        ok(cuStreamCreate(&mut s, 0x1));
        let gate = Step::new(true);
        // Pinned: a copy into plain host memory would wait for the gate.
        let mut pinned = std::ptr::null_mut();
        ok(cuMemAllocHost_v2(&mut pinned, N * 4));
        let host = std::slice::from_raw_parts_mut(pinned.cast::<u32>(), N);
        host.fill(0);
        ok(cuLaunchHostFunc(s, Some(step), gate.data()));
        ok(cuMemcpyDtoHAsync_v2(host.as_mut_ptr().cast(), d, N * 4, s));
        ok(cuCtxSetCurrent(a));
        ok(cuMemFree_v2(d)); // waits for a's work only
        ok(cuCtxSetCurrent(b));
        gate.release();
        // A copy's fault (not a kernel's): ILLEGAL_ADDRESS with or without the
        // sanitizer.
        assert_eq!(cuStreamSynchronize(s), code::ILLEGAL_ADDRESS);
        assert!(
            host.iter().all(|w| *w == 0),
            "the copy read memory freed before it ran"
        );
        ok(cuStreamDestroy_v2(s));
        ok(cuCtxDestroy_v2(b)); // frees `pinned` (b is poisoned: no cuMemFreeHost)
        ok(cuCtxDestroy_v2(a));
    }
    no_leaks();
}

/// `deep(n)` recurses `n` calls deep.
const DEEP: &str = concat!(
    ".version 8.0\n.target sm_80\n.address_size 64\n",
    ".global .u32 g_counter = 5;\n",
    ".func (.param .b32 ret) depth(.param .b32 n)\n{\n",
    ".reg .pred %p<2>;\n.reg .b32 %r<4>;\n",
    "ld.param.u32 %r1, [n];\nsetp.eq.u32 %p1, %r1, 0;\n@%p1 bra $DONE;\n",
    "sub.u32 %r2, %r1, 1;\n{\n.param .b32 a0;\n.param .b32 r0;\n",
    "st.param.b32 [a0], %r2;\ncall.uni (r0), depth, (a0);\nld.param.b32 %r3, [r0];\n}\n",
    "add.u32 %r1, %r3, 1;\n$DONE:\nst.param.b32 [ret], %r1;\nret;\n}\n",
    ".visible .entry deep(.param .u32 deep_n)\n{\n.reg .b32 %r<3>;\n",
    "ld.param.u32 %r1, [deep_n];\n{\n.param .b32 a0;\n.param .b32 r0;\n",
    "st.param.b32 [a0], %r1;\ncall.uni (r0), depth, (a0);\nld.param.b32 %r2, [r0];\n}\n",
    "ret;\n}\n",
    ".visible .entry boom()\n{\ntrap;\n}\n\0"
);

/// A kernel that runs out of stack while it runs fails like on the driver: with a
/// sticky error (`HARDWARE_STACK_ERROR`) that poisons the context, reported by the
/// synchronisation — not a non-sticky `LAUNCH_OUT_OF_RESOURCES` kept by the stream.
/// A `trap` is `LAUNCH_FAILED`, sticky too. On the legacy stream (run at once) the
/// launch itself reports it. What can be refused at launch still is, with a
/// non-sticky error and nothing queued.
#[test]
fn failures_of_running_work_are_sticky() {
    let _g = serial();
    for (kernel, arg, expect) in [
        (c"deep", 100_000u32, code::HARDWARE_STACK_ERROR),
        (c"boom", 0, code::LAUNCH_FAILED),
    ] {
        for legacy in [false, true] {
            let ctx = create_context();
            let f = function(load(DEEP), kernel);
            let deep = function(load(DEEP), c"deep");
            let args: Vec<*const c_void> = if kernel == c"deep" {
                vec![(&raw const arg).cast()]
            } else {
                vec![]
            };
            let mut s = std::ptr::null_mut();
            // SAFETY: softcuda's exports, called as C would call them.
            unsafe {
                ok(cuStreamCreate(&mut s, 0x1));
                let shallow = 10u32;
                ok(launch(deep, s, &[(&raw const shallow).cast()]));
                ok(cuStreamSynchronize(s));
                // Refused at launch: not sticky.
                let mut no_args: Vec<*mut c_void> = vec![(&raw const shallow).cast_mut().cast()];
                let r = cuLaunchKernel(
                    deep,
                    1,
                    1,
                    1,
                    2048,
                    1,
                    1,
                    0,
                    s,
                    no_args.as_mut_ptr(),
                    std::ptr::null_mut(),
                );
                assert_eq!(r, code::INVALID_VALUE);
                ok(cuStreamSynchronize(s));
                if legacy {
                    assert_eq!(launch(f, std::ptr::null_mut(), &args), expect);
                } else {
                    ok(launch(f, s, &args));
                    assert_eq!(cuStreamSynchronize(s), expect, "{kernel:?}");
                }
                assert_eq!(cuStreamSynchronize(s), expect);
                assert_eq!(cuStreamQuery(s), expect);
                assert_eq!(cuCtxSynchronize(), expect);
                let mut d = 0;
                assert_eq!(cuMemAlloc_v2(&mut d, 64), expect, "the context is poisoned");
                ok(cuCtxDestroy_v2(ctx));
            }
        }
    }
    no_leaks();
}

/// A kernel whose frames need more local memory per thread than a device has is
/// refused at the launch (non-sticky, nothing queued), not allocated or faulted at
/// run time.
#[test]
fn a_launch_needing_too_much_local_memory_is_refused_at_once() {
    let _g = serial();
    let ctx = create_context();
    const BIG: &str = concat!(
        ".version 8.0\n.target sm_80\n.address_size 64\n",
        ".visible .entry big(.param .u32 big_i)\n{\n",
        ".local .align 4 .b8 arr[1048576];\n.reg .b32 %r<3>;\n.reg .b64 %rd<3>;\n",
        "ld.param.u32 %r1, [big_i];\nmov.u64 %rd1, arr;\ncvt.u64.u32 %rd2, %r1;\n",
        "add.u64 %rd1, %rd1, %rd2;\nst.local.u8 [%rd1], %r1;\nret;\n}\n\0"
    );
    let f = function(load(BIG), c"big");
    let mut s = std::ptr::null_mut();
    // SAFETY: softcuda's exports, called as C would call them.
    unsafe {
        ok(cuStreamCreate(&mut s, 0x1));
        let i = 5u32;
        assert_eq!(
            launch(f, s, &[(&raw const i).cast()]),
            code::LAUNCH_OUT_OF_RESOURCES
        );
        ok(cuStreamSynchronize(s));
        let mut d = 0;
        ok(cuMemAlloc_v2(&mut d, 64)); // not poisoned
        ok(cuCtxDestroy_v2(ctx));
    }
    no_leaks();
}

/// Sizes that overflow `size_t` arithmetic are refused (`INVALID_VALUE`), never
/// wrapped into a small range that passes the checks, and never a panic.
#[test]
fn overflowing_sizes_are_refused() {
    let _g = serial();
    let ctx = create_context();
    let d = device_words(N);
    // SAFETY: softcuda's exports, called as C would call them; nothing is written
    // outside `d`.
    unsafe {
        assert_eq!(
            cuMemsetD32_v2(d, PATTERN, usize::MAX / 4 + 2),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuMemsetD16_v2(d, 1, usize::MAX / 2 + 2),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuMemsetD2D32_v2(d, usize::MAX, 1, 1, 3),
            code::INVALID_VALUE
        );
        let mut c: CUDA_MEMCPY2D = std::mem::zeroed();
        c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        c.srcDevice = d;
        c.srcY = usize::MAX / 2;
        c.srcPitch = 64;
        c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        c.dstDevice = d;
        c.WidthInBytes = 4;
        c.Height = 1;
        assert_eq!(cuMemcpy2D_v2(&c), code::INVALID_VALUE);
        let mut p = 0u32;
        assert_eq!(
            cuMemHostRegister_v2((&raw mut p).cast(), usize::MAX, 0),
            code::INVALID_VALUE
        );
        let (mut big, mut pitch) = (0, 0);
        assert_eq!(
            cuMemAllocPitch_v2(&mut big, &mut pitch, usize::MAX, 1, 4),
            code::INVALID_VALUE
        );
        assert!(read_words(d, N).iter().all(|w| *w == 0));
        ok(cuCtxDestroy_v2(ctx));
    }
    no_leaks();
}

/// A 2-D memset whose pitch is not a multiple of the element size writes each
/// element at its (unaligned) place.
#[test]
fn two_d_memsets_with_odd_pitches_fill_the_right_bytes() {
    let _g = serial();
    let ctx = create_context();
    let d = device_words(64);
    // SAFETY: softcuda's exports; everything written lies in `d` (256 bytes).
    unsafe {
        ok(cuMemsetD2D16_v2(d, 7, 0xA1B2, 3, 4));
        ok(cuMemsetD2D32_v2(d + 128, 13, 0x0102_0304, 2, 3));
        let mut bytes = vec![0u8; 256];
        ok(cuMemcpyDtoH_v2(bytes.as_mut_ptr().cast(), d, 256));
        let mut expect = vec![0u8; 256];
        for r in 0..4 {
            for i in 0..3 {
                let at = r * 7 + 2 * i;
                expect[at..at + 2].copy_from_slice(&0xA1B2u16.to_ne_bytes());
            }
        }
        for r in 0..3 {
            for i in 0..2 {
                let at = 128 + r * 13 + 4 * i;
                expect[at..at + 4].copy_from_slice(&0x0102_0304u32.to_ne_bytes());
            }
        }
        assert_eq!(bytes, expect);
        ok(cuCtxDestroy_v2(ctx));
    }
    no_leaks();
}

/// Copies and memsets of every alignment, overlapping device-to-device copies
/// included, give `memmove`'s result; the device side may be pinned memory too.
#[test]
fn copies_and_memsets_of_every_alignment() {
    let _g = serial();
    let ctx = create_context();
    const B: usize = 1024;
    let mut d = 0;
    let mut pinned: *mut c_void = std::ptr::null_mut();
    // SAFETY: softcuda's exports; every range lies in `d` or `pinned` (B bytes each)
    // or in the test's own vectors.
    unsafe {
        ok(cuMemAlloc_v2(&mut d, B));
        ok(cuMemHostAlloc(&mut pinned, B, 0));
        let init: Vec<u8> = (0..B).map(|i| (i * 7 + 3) as u8).collect();
        for (so, dof, n) in [(0, 0, 512), (1, 9, 300), (3, 0, 77), (8, 3, 500), (5, 1, 1)] {
            for overlap in [false, true] {
                let mut model = init.clone();
                ok(cuMemcpyHtoD_v2(d, init.as_ptr().cast(), B));
                let (src, dst) = if overlap {
                    (so, so + dof)
                } else {
                    (so, 512 + dof)
                };
                model.copy_within(src..src + n, dst);
                ok(cuMemcpyDtoD_v2(d + dst as u64, d + src as u64, n));
                let mut back = vec![0u8; B];
                ok(cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), d, B));
                assert_eq!(back, model, "{so} {dof} {n} {overlap}");
                // Through pinned memory as the device side of unified copies.
                ok(cuMemcpy(pinned as u64 + 3, d + src as u64, n));
                let mut again = vec![0u8; n];
                ok(cuMemcpy(again.as_mut_ptr() as u64, pinned as u64 + 3, n));
                assert_eq!(again, model[src..src + n]);
            }
        }
        ok(cuMemsetD8_v2(d + 5, 0x5A, 333));
        let mut back = vec![0u8; B];
        ok(cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), d, B));
        assert!(back[5..338].iter().all(|b| *b == 0x5A));
        // A host range that straddles mapped (here registered) memory is refused.
        let mut mine = vec![0u64; 8];
        let at = mine.as_mut_ptr() as u64;
        ok(cuMemHostRegister_v2((at + 16) as *mut c_void, 32, 0));
        assert_eq!(
            cuMemcpy(at + 8, d, 16),
            code::INVALID_VALUE,
            "a copy that straddles registered memory"
        );
        ok(cuMemHostUnregister((at + 16) as *mut c_void));
        drop(mine);
        ok(cuMemFreeHost(pinned));
        ok(cuCtxDestroy_v2(ctx));
    }
    no_leaks();
}

/// `cuOccupancy*` take the dynamic shared memory as a `size_t`: any value, no
/// overflow, no truncation. More than a block can have fits 0 blocks.
#[test]
fn occupancy_takes_any_dynamic_shared_memory_size() {
    let _g = serial();
    let ctx = create_context();
    let f = function(load(DEEP), c"deep");
    extern "C" fn huge(_block: std::ffi::c_int) -> usize {
        (1usize << 32) + 64
    }
    // SAFETY: softcuda's exports, with valid out-pointers.
    unsafe {
        let mut n = -1;
        ok(cuOccupancyMaxActiveBlocksPerMultiprocessor(
            &mut n, f, 256, 0,
        ));
        assert!(n > 0);
        for dynamic in [
            u32::MAX as usize - 1000,
            u32::MAX as usize,
            1usize << 32,
            (1usize << 32) + 100,
            usize::MAX,
            300 * 1024,
        ] {
            let mut n = -1;
            ok(cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut n, f, 256, dynamic,
            ));
            assert_eq!(n, 0, "{dynamic:#x}");
            ok(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
                &mut n, f, 256, dynamic, 0,
            ));
            assert_eq!(n, 0, "{dynamic:#x}");
            let (mut grid, mut block) = (-1, -1);
            ok(cuOccupancyMaxPotentialBlockSize(
                &mut grid, &mut block, f, None, dynamic, 0,
            ));
            assert_eq!((grid, block), (0, 0), "{dynamic:#x}");
        }
        let (mut grid, mut block) = (-1, -1);
        ok(cuOccupancyMaxPotentialBlockSizeWithFlags(
            &mut grid,
            &mut block,
            f,
            Some(huge),
            0,
            0,
            0,
        ));
        assert_eq!((grid, block), (0, 0));
        // The most dynamic memory one block may have fits one block, one byte more none.
        let mut most = 0usize;
        ok(cuOccupancyAvailableDynamicSMemPerBlock(&mut most, f, 1, 32));
        assert!(most > 48 * 1024, "{most}");
        ok(cuOccupancyMaxActiveBlocksPerMultiprocessor(
            &mut n, f, 32, most,
        ));
        assert_eq!(n, 1);
        ok(cuOccupancyMaxActiveBlocksPerMultiprocessor(
            &mut n,
            f,
            32,
            most + 1,
        ));
        assert_eq!(n, 0);
        ok(cuCtxDestroy_v2(ctx));
    }
    no_leaks();
}

/// A kernel that stores 7 through its one pointer parameter.
const POKE: &str = concat!(
    ".version 8.0\n.target sm_80\n.address_size 64\n",
    ".visible .entry poke(.param .u64 poke_p)\n{\n",
    ".reg .b32 %r<2>;\n.reg .b64 %rd<2>;\n",
    "ld.param.u64 %rd1, [poke_p];\nmov.u32 %r1, 7;\nst.global.u32 [%rd1], %r1;\nret;\n}\n\0"
);

/// Sizes of the allocations the address-space tests make.
const SIZES: [usize; 5] = [64, 256, 4096, 65536, 1 << 20];

fn overlap(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.0 + b.1 && b.0 < a.0 + a.1
}

/// Device memory of every kind the driver hands out for `size` bytes, freed at
/// once: `cuMemAlloc`, managed memory and a pool block (its pool trimmed, so that
/// the block is given back). Their ranges.
fn freed_device_ranges(s: CUstream) -> Vec<(u64, u64)> {
    use softcuda::api::{managed::cuMemAllocManaged, pool::*};
    let mut freed = Vec::new();
    let mut pool = std::ptr::null_mut();
    // SAFETY: softcuda's exports, called as C would call them.
    unsafe {
        ok(cuDeviceGetDefaultMemPool(&mut pool, 0));
        for size in SIZES {
            let mut d = 0;
            ok(cuMemAlloc_v2(&mut d, size));
            ok(cuMemFree_v2(d));
            freed.push((d, size as u64));
            ok(cuMemAllocManaged(&mut d, size, 1));
            ok(cuMemFree_v2(d));
            freed.push((d, size as u64));
            ok(cuMemAllocAsync(&mut d, size, s));
            ok(cuMemFreeAsync(d, s));
            ok(cuStreamSynchronize(s));
            ok(cuMemPoolTrimTo(pool, 0));
            freed.push((d, size as u64));
        }
    }
    freed
}

/// Device memory is freed, host memory allocated after it — pinned buffers and
/// plain heap blocks of the same sizes — and a kernel then stores through every
/// stale device address: no host buffer ever lies at a freed device address, and
/// every store faults (`ILLEGAL_ADDRESS`) instead of landing in a host buffer. On a
/// GPU device and host addresses are apart; softcuda keeps them apart too.
#[test]
fn a_stale_device_address_never_reaches_host_memory() {
    let _g = serial();
    let ctx = create_context();
    let mut s = std::ptr::null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuStreamCreate(&mut s, 0x1) });
    let freed = freed_device_ranges(s);
    let mut pinned = Vec::new();
    for size in SIZES {
        for _ in 0..4 {
            let mut p = std::ptr::null_mut();
            // SAFETY: a valid out-pointer.
            ok(unsafe { cuMemAllocHost_v2(&mut p, size) });
            // SAFETY: `p` holds `size` bytes.
            unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0xA5, size) };
            pinned.push((p, size));
        }
    }
    let heap: Vec<Vec<u8>> = SIZES
        .iter()
        .flat_map(|&n| (0..20).map(move |_| vec![0x5Au8; n]))
        .collect();
    let host: Vec<(u64, u64)> = pinned
        .iter()
        .map(|&(p, n)| (p as u64, n as u64))
        .chain(heap.iter().map(|v| (v.as_ptr() as u64, v.len() as u64)))
        .collect();
    for &d in &freed {
        for &h in &host {
            assert!(
                !overlap(d, h),
                "host memory {h:x?} at freed device memory {d:x?}"
            );
        }
    }
    // Every stale store faults, in a context of its own (the fault is sticky).
    for &(d, _) in &freed {
        let c = create_context();
        let f = function(load(POKE), c"poke");
        // SAFETY: softcuda's exports, called as C would call them.
        unsafe {
            let mut r = launch(f, std::ptr::null_mut(), &[(&raw const d).cast()]);
            if r == code::SUCCESS {
                r = cuCtxSynchronize();
            }
            assert_eq!(r, fault(), "a store to {d:#x}");
            ok(cuCtxDestroy_v2(c));
        }
    }
    // SAFETY: a live context.
    ok(unsafe { cuCtxSetCurrent(ctx) });
    for &(p, n) in &pinned {
        // SAFETY: `p` holds `n` bytes, no longer touched by any work.
        let bytes = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), n) };
        assert!(bytes.iter().all(|&b| b == 0xA5), "a pinned buffer changed");
        // SAFETY: a live pinned allocation.
        ok(unsafe { cuMemFreeHost(p) });
    }
    assert!(
        heap.iter().flatten().all(|&b| b == 0x5A),
        "a heap buffer changed"
    );
    // SAFETY: softcuda's exports, called as C would call them.
    unsafe {
        ok(cuStreamDestroy_v2(s));
        ok(cuCtxDestroy_v2(ctx));
    }
    no_leaks();
}

/// A module with one 4-byte variable, `g`.
const GLOBAL: &str = concat!(
    ".version 8.0\n.target sm_80\n.address_size 64\n",
    ".visible .global .align 4 .u32 g;\n",
    ".visible .entry nop()\n{\nret;\n}\n\0"
);

/// Every kind of device memory lies inside `control::device_range`, 256-aligned, and
/// no host memory does (pinned, registered, the heap's), before and after frees; a
/// device allocation made after frees lies apart from live host memory; a copy whose
/// host side is a freed device address, and a registration of one, are refused
/// instead of touching it.
#[test]
fn device_memory_lies_in_its_own_address_space() {
    use softcuda::api::{managed::cuMemAllocManaged, pool::*};
    let _g = serial();
    let (lo, hi) = control::device_range().expect("a device address space");
    assert!(lo != 0 && hi > lo);
    let inside = |(a, n): (u64, u64)| a >= lo && a + n <= hi;
    let outside = |(a, n): (u64, u64)| a + n <= lo || a >= hi;
    let ctx = create_context();
    let mut s = std::ptr::null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuStreamCreate(&mut s, 0x1) });
    // Host memory: pinned, registered, the heap's.
    let mut pinned = Vec::new();
    let mut registered: Vec<Vec<u8>> = Vec::new();
    let mut heap: Vec<Vec<u8>> = Vec::new();
    for size in SIZES {
        let mut p = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        ok(unsafe { cuMemHostAlloc(&mut p, size, 0) });
        pinned.push((p, size));
        let mut r = vec![0u8; size];
        // SAFETY: `r` is ours, `size` bytes, unregistered before it is dropped.
        ok(unsafe { cuMemHostRegister_v2(r.as_mut_ptr().cast(), size, 0) });
        registered.push(r);
        heap.push(vec![1u8; size]);
    }
    let host = |pinned: &[(*mut c_void, usize)], heap: &[Vec<u8>], reg: &[Vec<u8>]| {
        pinned
            .iter()
            .map(|&(p, n)| (p as u64, n as u64))
            .chain(
                heap.iter()
                    .chain(reg)
                    .map(|v| (v.as_ptr() as u64, v.len() as u64)),
            )
            .collect::<Vec<_>>()
    };
    for h in host(&pinned, &heap, &registered) {
        assert!(outside(h), "host memory {h:x?} in the device range");
    }
    // Device memory of every kind, freed, then allocated again.
    let freed = freed_device_ranges(s);
    for &d in &freed {
        assert!(inside(d), "device memory {d:x?} outside the device range");
        assert_eq!(d.0 % 256, 0);
    }
    for size in SIZES {
        heap.push(vec![2u8; size]);
    }
    let m = load(GLOBAL);
    let (mut live, mut pool_live) = (Vec::new(), Vec::new());
    // SAFETY: softcuda's exports, called as C would call them.
    unsafe {
        let (mut g, mut gn) = (0, 0);
        ok(cuModuleGetGlobal_v2(&mut g, &mut gn, m, c"g".as_ptr()));
        live.push((g, gn as u64));
        for size in SIZES {
            let mut d = 0;
            ok(cuMemAlloc_v2(&mut d, size));
            live.push((d, size as u64));
            let mut pitch = 0;
            ok(cuMemAllocPitch_v2(&mut d, &mut pitch, size.min(1000), 3, 4));
            live.push((d, (pitch * 3) as u64));
            ok(cuMemAllocManaged(&mut d, size, 1));
            live.push((d, size as u64));
            ok(cuMemAllocAsync(&mut d, size, s));
            live.push((d, size as u64));
            pool_live.push(d);
        }
        ok(cuStreamSynchronize(s));
    }
    let host_now = host(&pinned, &heap, &registered);
    for &d in &live {
        assert!(inside(d), "device memory {d:x?} outside the device range");
        assert_eq!(d.0 % 256, 0);
        for &h in &host_now {
            assert!(
                !overlap(d, h),
                "device memory {d:x?} over host memory {h:x?}"
            );
        }
    }
    // A freed device address is neither a copy's host side nor registrable.
    let stale = freed
        .iter()
        .copied()
        .find(|&f| live.iter().all(|&l| !overlap(f, l)))
        .expect("a freed range not reused");
    let (d, _) = live[1];
    // SAFETY: softcuda's exports; the stale host pointers are refused, not touched.
    unsafe {
        assert_eq!(
            cuMemcpyDtoH_v2(stale.0 as *mut c_void, d, 64),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuMemcpyHtoD_v2(d, stale.0 as *const c_void, 64),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuMemHostRegister_v2(stale.0 as *mut c_void, 64, 0),
            code::INVALID_VALUE
        );
        ok(cuMemsetD8_v2(d, 3, 64)); // the context is not poisoned
    }
    // SAFETY: softcuda's exports, called as C would call them.
    unsafe {
        for &(p, _) in &pinned {
            ok(cuMemFreeHost(p));
        }
        for r in &registered {
            ok(cuMemHostUnregister(r.as_ptr().cast_mut().cast()));
        }
        for d in pool_live {
            ok(cuMemFreeAsync(d, s));
        }
        ok(cuStreamSynchronize(s));
        ok(cuStreamDestroy_v2(s));
        ok(cuCtxDestroy_v2(ctx));
    }
    no_leaks();
}

/// Copies between device memory and plain (pageable) host memory on a created
/// stream are done with it when the call returns, so that a C caller may free or
/// reuse its buffer then, and they keep stream order: a host function queued
/// before the copy writes the source, and the copy (1-D and 2-D) sees what it
/// wrote; a copy into such memory has written it when the call returns.
#[test]
fn copies_with_pageable_host_memory_are_done_with_it_when_the_call_returns() {
    extern "C" fn fill(p: *mut c_void) {
        std::thread::sleep(Duration::from_millis(50));
        // SAFETY: the test's buffer of `N` bytes, alive until the copy returns.
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0x5a, N) };
    }
    let _g = serial();
    let ctx = create_context();
    const N: usize = 1024;
    // SAFETY (all below): softcuda's exports, called as C would call them.
    unsafe {
        let mut s = std::ptr::null_mut();
        ok(cuStreamCreate(&mut s, 0));
        let mut d = 0;
        ok(cuMemAlloc_v2(&mut d, N));
        let mut src = vec![0u8; N];
        ok(cuLaunchHostFunc(s, Some(fill), src.as_mut_ptr().cast()));
        ok(cuMemcpyHtoDAsync_v2(d, src.as_ptr().cast(), N / 2, s));
        let two_d = CUDA_MEMCPY2D {
            srcMemoryType: CU_MEMORYTYPE_HOST,
            srcHost: src.as_ptr().add(N / 2).cast(),
            srcPitch: 64,
            dstMemoryType: CU_MEMORYTYPE_DEVICE,
            dstDevice: d + N as u64 / 2,
            dstPitch: 64,
            WidthInBytes: 64,
            Height: N / 2 / 64,
            ..std::mem::zeroed()
        };
        ok(cuMemcpy2DAsync_v2(&two_d, s));
        // The caller frees its buffer as soon as the calls return.
        drop(src);
        let reused = vec![0u8; N];
        // A copy into plain host memory: written when the call returns.
        let mut back = vec![0u8; N];
        ok(cuMemcpyDtoHAsync_v2(back.as_mut_ptr().cast(), d, N, s));
        assert!(
            back.iter().all(|&b| b == 0x5a),
            "what the host function wrote"
        );
        assert!(reused.iter().all(|&b| b == 0));
        ok(cuStreamDestroy_v2(s));
        ok(cuMemFree_v2(d));
        ok(cuCtxDestroy_v2(ctx));
    }
    no_leaks();
}
