//! softcuda's host-side checks: streamcheck (`SOFTCUDA_SANITIZE=streamcheck`),
//! races between streams on device memory, and the `delay` tool, under which
//! default-stream work runs later, as on a GPU. Each racy program here has a clean
//! twin that orders the same work (an event, the same stream, a synchronisation,
//! the legacy stream's rules) and must report nothing; the delay tests show a read
//! without synchronisation seeing stale data that softcuda otherwise hides.

mod common;

use common::{function, launch_kernel, ok, serial};
use softcuda::api::{context::*, memory::*, module::*, stream::*};
use softcuda::control;
use softcuda::types::*;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// `fill(p)`: stores `%tid.x` at `p[%tid.x]`; `copy(d, s)`: `d[%tid.x] = s[%tid.x]`.
const PTX: &str = concat!(
    ".version 8.0\n.target sm_80\n.address_size 64\n",
    ".visible .entry fill(.param .u64 fill_p)\n{\n",
    ".reg .b32 %r<2>;\n.reg .b64 %rd<4>;\n",
    "ld.param.u64 %rd1, [fill_p];\n",
    "mov.u32 %r1, %tid.x;\n",
    "mul.wide.u32 %rd2, %r1, 4;\n",
    "add.s64 %rd3, %rd1, %rd2;\n",
    "st.global.u32 [%rd3], %r1;\n",
    "ret;\n}\n",
    ".visible .entry copy(.param .u64 copy_d, .param .u64 copy_s)\n{\n",
    ".reg .b32 %r<3>;\n.reg .b64 %rd<6>;\n",
    "ld.param.u64 %rd1, [copy_d];\n",
    "ld.param.u64 %rd2, [copy_s];\n",
    "mov.u32 %r1, %tid.x;\n",
    "mul.wide.u32 %rd3, %r1, 4;\n",
    "add.s64 %rd4, %rd2, %rd3;\n",
    "ld.global.u32 %r2, [%rd4];\n",
    "add.s64 %rd5, %rd1, %rd3;\n",
    "st.global.u32 [%rd5], %r2;\n",
    "ret;\n}\n\0"
);

const NON_BLOCKING: u32 = 1;

struct Fixture {
    _g: MutexGuard<'static, ()>,
    ctx: CUcontext,
    module: CUmodule,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture::with("streamcheck")
    }

    fn with(tools: &str) -> Fixture {
        let g = serial();
        control::set_sanitize(tools).unwrap();
        control::sanitize_summary();
        control::sanitize_report();
        let mut ctx = std::ptr::null_mut();
        let mut module = std::ptr::null_mut();
        // SAFETY: valid out-pointers, a NUL-terminated PTX image.
        unsafe {
            ok(cuCtxCreate_v2(&mut ctx, 0, 0));
            ok(cuModuleLoadData(&mut module, PTX.as_ptr().cast()));
        }
        Fixture { _g: g, ctx, module }
    }

    fn alloc(&self, bytes: usize) -> CUdeviceptr {
        let mut p = 0;
        // SAFETY: a valid out-pointer; the context is current.
        ok(unsafe { cuMemAlloc_v2(&mut p, bytes) });
        p
    }

    fn stream(&self, flags: u32) -> CUstream {
        let mut s = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the context is current.
        ok(unsafe { cuStreamCreate(&mut s, flags) });
        s
    }

    fn event(&self) -> CUevent {
        let mut e = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the context is current.
        ok(unsafe { cuEventCreate(&mut e, 0) });
        e
    }

    /// Launches `name` (64 threads, one block) on `s` with pointer arguments.
    fn launch(&self, name: &std::ffi::CStr, s: CUstream, args: &[u64]) {
        let f = function(self.module, name);
        let mut vals = args.to_vec();
        let mut params: Vec<*mut c_void> = vals
            .iter_mut()
            .map(|v| (v as *mut u64).cast::<c_void>())
            .collect();
        ok(launch_kernel(f, [1, 1, 1], [64, 1, 1], 0, s, &mut params));
    }

    /// Synchronises the context, then: the report and the error count.
    fn finish(self) -> (String, u64) {
        // SAFETY: the context is current; made by `new`, destroyed once.
        unsafe {
            ok(cuCtxSynchronize());
        }
        let n = control::sanitize_summary();
        let report = control::sanitize_report();
        // SAFETY: as above.
        unsafe { cuCtxDestroy_v2(self.ctx) };
        control::set_sanitize("none").unwrap();
        (report, n)
    }
}

#[track_caller]
fn clean((report, n): (String, u64)) {
    assert_eq!(n, 0, "{report}");
    assert_eq!(report, "========= ERROR SUMMARY: 0 errors\n");
}

/// One race, between the two descriptions (in either order: the streams' workers
/// may run the two operations either way round), on `bytes` bytes.
#[track_caller]
fn one_race((report, n): (String, u64), a: &str, b: &str, bytes: u64) {
    assert_eq!(n, 1, "{report}");
    let head = report.lines().next().unwrap_or_default();
    assert!(
        head.starts_with("========= Error: Race reported between ")
            && head.contains(a)
            && head.contains(b),
        "{report}"
    );
    assert!(report.contains(&format!("({bytes} bytes)")), "{report}");
    assert!(report.contains("with nothing ordering them"), "{report}");
    assert!(
        report.ends_with("========= ERROR SUMMARY: 1 error\n"),
        "{report}"
    );
}

#[test]
fn a_kernel_and_a_copy_on_two_streams_race() {
    let fx = Fixture::new();
    let p = fx.alloc(256);
    let (a, b) = (fx.stream(NON_BLOCKING), fx.stream(NON_BLOCKING));
    let mut host = [0u32; 64];
    fx.launch(c"fill", a, &[p]);
    // SAFETY: a valid host buffer of 256 bytes, kept until the context synchronises.
    ok(unsafe { cuMemcpyDtoHAsync_v2(host.as_mut_ptr().cast(), p, 256, b) });
    one_race(
        fx.finish(),
        &format!("by cuLaunchKernel (kernel fill) on stream {:#x}", a as u64),
        &format!("by cuMemcpyDtoHAsync on stream {:#x}", b as u64),
        256,
    );
}

#[test]
fn an_event_orders_the_kernel_and_the_copy() {
    let fx = Fixture::new();
    let p = fx.alloc(256);
    let (a, b) = (fx.stream(NON_BLOCKING), fx.stream(NON_BLOCKING));
    let e = fx.event();
    let mut host = [0u32; 64];
    fx.launch(c"fill", a, &[p]);
    // SAFETY: live handles; a host buffer kept until the context synchronises.
    unsafe {
        ok(cuEventRecord(e, a));
        ok(cuStreamWaitEvent(b, e, 0));
        ok(cuMemcpyDtoHAsync_v2(host.as_mut_ptr().cast(), p, 256, b));
    }
    clean(fx.finish());
}

#[test]
fn one_stream_orders_its_own_work() {
    let fx = Fixture::new();
    let p = fx.alloc(256);
    let a = fx.stream(NON_BLOCKING);
    let mut host = [0u32; 64];
    fx.launch(c"fill", a, &[p]);
    // SAFETY: a host buffer kept until the context synchronises.
    ok(unsafe { cuMemcpyDtoHAsync_v2(host.as_mut_ptr().cast(), p, 256, a) });
    clean(fx.finish());
}

#[test]
fn a_host_synchronisation_orders_the_work_after_it() {
    let fx = Fixture::new();
    let p = fx.alloc(256);
    let (a, b) = (fx.stream(NON_BLOCKING), fx.stream(NON_BLOCKING));
    let mut host = [0u32; 64];
    fx.launch(c"fill", a, &[p]);
    // SAFETY: live handles; a host buffer kept until the context synchronises.
    unsafe {
        ok(cuStreamSynchronize(a));
        ok(cuMemcpyDtoHAsync_v2(host.as_mut_ptr().cast(), p, 256, b));
    }
    clean(fx.finish());
}

/// A copy into plain host memory on a created stream returns only once done, after
/// its stream's earlier work: what the host does next, on any stream, is ordered
/// after both.
#[test]
fn a_copy_into_plain_host_memory_orders_the_work_after_it() {
    let fx = Fixture::new();
    let p = fx.alloc(256);
    let (a, b) = (fx.stream(NON_BLOCKING), fx.stream(NON_BLOCKING));
    let mut host = [0u32; 64];
    // SAFETY: inside the allocation; live streams; a host buffer of 256 bytes.
    unsafe {
        ok(cuMemsetD8Async(p, 1, 256, a));
        ok(cuMemcpyDtoHAsync_v2(host.as_mut_ptr().cast(), p, 256, a));
        ok(cuMemsetD8Async(p, 2, 256, b));
    }
    assert_eq!(host, [0x0101_0101; 64]);
    clean(fx.finish());
}

#[test]
fn two_memsets_of_overlapping_bytes_race_and_of_disjoint_halves_do_not() {
    let fx = Fixture::new();
    let p = fx.alloc(256);
    let (a, b) = (fx.stream(NON_BLOCKING), fx.stream(NON_BLOCKING));
    // SAFETY: inside the allocation; live streams.
    unsafe {
        ok(cuMemsetD32Async(p, 1, 32, a));
        ok(cuMemsetD32Async(p + 128, 2, 32, b));
        // Overlaps the second half by 16 bytes.
        ok(cuMemsetD8Async(p + 240, 3, 16, a));
    }
    let (report, n) = fx.finish();
    assert!(
        report.contains("write-after-write hazard on __global__ memory at")
            && report.contains("(16 bytes), 240 bytes inside the allocation"),
        "{report}"
    );
    assert_eq!(n, 1, "{report}");
}

#[test]
fn two_kernels_reading_one_buffer_on_two_streams_do_not_race() {
    let fx = Fixture::new();
    let (src, d1, d2) = (fx.alloc(256), fx.alloc(256), fx.alloc(256));
    // SAFETY: inside the allocation, on the legacy stream.
    ok(unsafe { cuMemsetD32_v2(src, 7, 64) });
    let (a, b) = (fx.stream(0), fx.stream(0));
    fx.launch(c"copy", a, &[d1, src]);
    fx.launch(c"copy", b, &[d2, src]);
    clean(fx.finish());
}

#[test]
fn a_synchronous_copy_races_with_a_non_blocking_stream() {
    let fx = Fixture::new();
    let p = fx.alloc(256);
    let a = fx.stream(NON_BLOCKING);
    let mut host = [0u32; 64];
    fx.launch(c"fill", a, &[p]);
    // SAFETY: a valid host buffer of 256 bytes.
    ok(unsafe { cuMemcpyDtoH_v2(host.as_mut_ptr().cast(), p, 256) });
    one_race(
        fx.finish(),
        &format!("by cuLaunchKernel (kernel fill) on stream {:#x}", a as u64),
        "by cuMemcpyDtoH on the legacy default stream",
        256,
    );
}

#[test]
fn a_synchronous_copy_waits_for_a_blocking_stream() {
    let fx = Fixture::new();
    let p = fx.alloc(256);
    let a = fx.stream(0);
    let mut host = [0u32; 64];
    fx.launch(c"fill", a, &[p]);
    // SAFETY: a valid host buffer of 256 bytes.
    ok(unsafe { cuMemcpyDtoH_v2(host.as_mut_ptr().cast(), p, 256) });
    // And work on a blocking stream after it waits for it: the kernel rewrites the
    // bytes the copy read.
    fx.launch(c"fill", a, &[p]);
    clean(fx.finish());
}

#[test]
fn without_streamcheck_nothing_is_reported() {
    let fx = Fixture::new();
    control::set_sanitize("memcheck").unwrap();
    let p = fx.alloc(256);
    let (a, b) = (fx.stream(NON_BLOCKING), fx.stream(NON_BLOCKING));
    let mut host = [0u32; 64];
    fx.launch(c"fill", a, &[p]);
    // SAFETY: a host buffer kept until the context synchronises.
    ok(unsafe { cuMemcpyDtoHAsync_v2(host.as_mut_ptr().cast(), p, 256, b) });
    clean(fx.finish());
}

// ------------------------------------------------------------------ delay

/// Mapped pinned memory of `words` words, zeroed: its host pointer and its device
/// address.
fn mapped(words: usize) -> (*mut u32, CUdeviceptr) {
    let (mut h, mut d) = (std::ptr::null_mut(), 0);
    // SAFETY: valid out-pointers; `CU_MEMHOSTALLOC_DEVICEMAP`.
    unsafe {
        ok(cuMemHostAlloc(&mut h, words * 4, 0x2));
        std::ptr::write_bytes(h.cast::<u32>(), 0, words);
        ok(cuMemHostGetDevicePointer_v2(&mut d, h, 0));
    }
    (h.cast(), d)
}

/// What the host sees of mapped memory now (volatile: a kernel writes it).
fn seen(h: *const u32, words: usize) -> Vec<u32> {
    // SAFETY: `words` words of live pinned memory.
    (0..words)
        .map(|i| unsafe { h.add(i).read_volatile() })
        .collect()
}

fn filled() -> Vec<u32> {
    (0..64).collect()
}

/// A host function that holds its stream until [`Gate::open`].
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
    entered: AtomicBool,
}

impl Gate {
    fn new() -> &'static Gate {
        Box::leak(Box::default())
    }

    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }
}

extern "C" fn hold(data: *mut c_void) {
    // SAFETY: the tests pass a leaked `Gate`.
    let g = unsafe { &*data.cast::<Gate>() };
    g.entered.store(true, Ordering::SeqCst);
    let mut open = g.open.lock().unwrap();
    while !*open {
        open = g.cv.wait(open).unwrap();
    }
}

#[test]
fn without_delay_default_stream_work_is_done_when_its_call_returns() {
    // The behaviour that hides a missing synchronisation: a GPU need not have run
    // the kernel yet.
    let fx = Fixture::with("none");
    let (h, d) = mapped(64);
    fx.launch(c"fill", std::ptr::null_mut(), &[d]);
    assert_eq!(seen(h, 64), filled());
    // SAFETY: the pinned allocation made above.
    ok(unsafe { cuMemFreeHost(h.cast()) });
    fx.finish();
}

#[test]
fn with_delay_a_read_without_synchronisation_sees_stale_data() {
    let fx = Fixture::with("delay");
    let (h, d) = mapped(64);
    let gate = Gate::new();
    let data = (gate as *const Gate).cast_mut().cast();
    // SAFETY: a live context; the gate outlives the stream's work.
    ok(unsafe { cuLaunchHostFunc(std::ptr::null_mut(), Some(hold), data) });
    fx.launch(c"fill", std::ptr::null_mut(), &[d]);
    // The launch returned; the kernel has not run: the legacy stream's work waits
    // behind the host function, on the context's worker.
    assert_eq!(seen(h, 64), vec![0; 64]);
    gate.open();
    // SAFETY: a live context.
    ok(unsafe { cuStreamSynchronize(std::ptr::null_mut()) });
    assert!(gate.entered.load(Ordering::SeqCst));
    assert_eq!(seen(h, 64), filled());
    // SAFETY: the pinned allocation made above.
    ok(unsafe { cuMemFreeHost(h.cast()) });
    clean(fx.finish());
}

#[test]
fn with_delay_a_synchronous_copy_still_returns_the_kernels_result() {
    let fx = Fixture::with("delay");
    let p = fx.alloc(256);
    fx.launch(c"fill", std::ptr::null_mut(), &[p]);
    let mut host = [0u32; 64];
    // SAFETY: a valid host buffer of 256 bytes.
    ok(unsafe { cuMemcpyDtoH_v2(host.as_mut_ptr().cast(), p, 256) });
    assert_eq!(host.to_vec(), filled());
    clean(fx.finish());
}

#[test]
fn with_delay_a_query_of_the_legacy_stream_says_not_ready_while_work_waits() {
    let fx = Fixture::with("delay");
    let gate = Gate::new();
    let data = (gate as *const Gate).cast_mut().cast();
    // SAFETY: a live context; the gate outlives the stream's work.
    unsafe {
        ok(cuLaunchHostFunc(std::ptr::null_mut(), Some(hold), data));
        assert_eq!(cuStreamQuery(std::ptr::null_mut()), code::NOT_READY);
    }
    gate.open();
    // SAFETY: a live context.
    unsafe {
        ok(cuStreamSynchronize(std::ptr::null_mut()));
        ok(cuStreamQuery(std::ptr::null_mut()));
    }
    clean(fx.finish());
}

#[test]
fn with_delay_a_blocking_stream_waits_for_the_legacy_streams_work() {
    let fx = Fixture::with("delay,streamcheck");
    let (h, d) = mapped(64);
    let gate = Gate::new();
    let data = (gate as *const Gate).cast_mut().cast();
    let a = fx.stream(0);
    let e = fx.event();
    // SAFETY: live handles; the gate outlives the stream's work.
    unsafe {
        ok(cuLaunchHostFunc(std::ptr::null_mut(), Some(hold), data));
        ok(cuMemsetD32Async(d, 5, 64, std::ptr::null_mut()));
    }
    // Ordered after the memset by the legacy stream's rules, so it overwrites it.
    fx.launch(c"fill", a, &[d]);
    // SAFETY: live handles.
    unsafe {
        ok(cuEventRecord(e, a));
        assert_eq!(cuEventQuery(e), code::NOT_READY);
    }
    gate.open();
    // SAFETY: a live event.
    ok(unsafe { cuEventSynchronize(e) });
    assert_eq!(seen(h, 64), filled());
    // SAFETY: the pinned allocation made above.
    ok(unsafe { cuMemFreeHost(h.cast()) });
    clean(fx.finish());
}
