//! Instructions per call, for `valgrind --tool=callgrind`: each measured loop is a
//! function of its own, `cg_<binding>_<call>`, that makes `CG_N` calls (default
//! 10 000); `scripts/bench.sh` runs this binary under callgrind with
//! `--toggle-collect=cg_*` and divides each function's inclusive instruction count by
//! `CG_N`. Run on the zero-cost driver (`benches/stub/zero_driver.c`), the count is the
//! binding's own: ours, the raw table pointer (parameter array built once; and, for
//! launches, `rawbuilt`: built at each call, as C code does), cudarc 0.19.
//!
//! Like benches/vs_cudarc.rs it needs `OXICUDA_DRIVER_PATH` and `LD_LIBRARY_PATH` to
//! name the same driver; without them (a plain `cargo bench`) it says so and exits.

#[path = "common/null_args.rs"]
mod null_args;
use cudarc::driver::{CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream};
use cudarc::driver::{LaunchConfig, PushKernelArg};
use null_args::{NULL_ARGS, Sig4, Sig16, SigPtr4, args16};
use oxicuda_driver::context::PrimaryContext;
use oxicuda_driver::error::check;
use oxicuda_driver::event::{Event, NoTiming};
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::module::Function;
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::stream::Stream;
use oxicuda_driver::sys::{CUevent, CUfunction, CUstream};
use oxicuda_driver::table::DriverTable;
use oxicuda_driver::{CudaError, DriverOptions, loader::ENV_DRIVER_PATH};
use std::ffi::c_void;
use std::hint::black_box;
use std::sync::Arc;

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_ours_launch4(f: &Function<'_, Sig4>, s: &Stream<'_>, n: u64) {
    for _ in 0..n {
        f.launch(s, 1, 1, 0, (black_box(1u32), 2, 3, 4))
            .expect("launch");
    }
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_ours_launch16(f: &Function<'_, Sig16>, s: &Stream<'_>, n: u64) {
    for _ in 0..n {
        f.launch(s, 1, 1, 0, args16()).expect("launch");
    }
}

/// The buffers of the pointer launch: two read, two written.
struct Ptr4<'a, 'c> {
    a: &'a DeviceBuffer<'c, u32>,
    b: &'a DeviceBuffer<'c, u32>,
    c: &'a mut DeviceBuffer<'c, u32>,
    d: &'a mut DeviceBuffer<'c, u32>,
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_ours_launch_ptr4(f: &Function<'_, SigPtr4>, s: &Stream<'_>, p: Ptr4<'_, '_>, n: u64) {
    for _ in 0..n {
        f.launch(
            s,
            1,
            1,
            0,
            (p.a, p.b, &mut *p.c, &mut *p.d, black_box(1u32)),
        )
        .expect("launch");
    }
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_rawbuilt_launch_ptr4(t: &DriverTable, f: CUfunction, ptrs: [u64; 4], n: u64) {
    for _ in 0..n {
        let [mut a, mut b, mut c, mut d] = black_box(ptrs);
        let mut len = black_box(1u32);
        let mut p: [*mut c_void; 5] = [
            (&raw mut a).cast(),
            (&raw mut b).cast(),
            (&raw mut c).cast(),
            (&raw mut d).cast(),
            (&raw mut len).cast(),
        ];
        raw_launch_once(t, f, &mut p);
    }
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_cudarc_launch4(s: &Arc<CudaStream>, f: &CudaFunction, vals: &[u32; 16], n: u64) {
    cudarc_launch(s, f, &vals[..4], n)
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_cudarc_launch16(s: &Arc<CudaStream>, f: &CudaFunction, vals: &[u32; 16], n: u64) {
    cudarc_launch(s, f, vals, n)
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_raw_launch4(t: &DriverTable, f: CUfunction, params: &mut [*mut c_void; 16], n: u64) {
    raw_launch(t, f, params, n)
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_raw_launch16(t: &DriverTable, f: CUfunction, params: &mut [*mut c_void; 16], n: u64) {
    // `black_box`: otherwise LLVM merges this loop with cg_raw_launch4 (the code is the
    // same: the array is prebuilt) and one symbol counts both loops.
    raw_launch(t, f, black_box(params), n)
}

/// The raw call as C code makes it: the values and their parameter array built at
/// each call (`void *args[] = {&a, &b, ...}`), the first value opaque as in ours.
#[inline(never)]
#[unsafe(no_mangle)]
fn cg_rawbuilt_launch4(t: &DriverTable, f: CUfunction, n: u64) {
    for _ in 0..n {
        let mut v = [black_box(1u32), 2, 3, 4];
        let mut p: [*mut c_void; 4] = core::array::from_fn(|i| (&raw mut v[i]).cast());
        raw_launch_once(t, f, &mut p);
    }
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_rawbuilt_launch16(t: &DriverTable, f: CUfunction, n: u64) {
    for _ in 0..n {
        let a = args16();
        let mut v = [
            a.0, a.1, a.2, a.3, a.4, a.5, a.6, a.7, a.8, a.9, a.10, a.11, a.12, a.13, a.14, a.15,
        ];
        let mut p: [*mut c_void; 16] = core::array::from_fn(|i| (&raw mut v[i]).cast());
        raw_launch_once(t, f, &mut p);
    }
}

/// One raw launch, the pointer looked up in the table at each call as ours does.
#[inline(always)]
fn raw_launch_once(t: &DriverTable, f: CUfunction, params: &mut [*mut c_void]) {
    let launch = t.cuLaunchKernel().expect("cuLaunchKernel");
    // SAFETY: one pointer per parameter, each to a u32.
    check(unsafe {
        launch(
            f,
            1,
            1,
            1,
            1,
            1,
            1,
            0,
            CUstream::NULL,
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    })
    .expect("launch");
}

#[inline(always)]
fn raw_launch(t: &DriverTable, f: CUfunction, params: &mut [*mut c_void; 16], n: u64) {
    let launch = t.cuLaunchKernel().expect("cuLaunchKernel");
    for _ in 0..n {
        // SAFETY: one pointer per parameter, each to a u32.
        check(unsafe {
            launch(
                black_box(f),
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                CUstream::NULL,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })
        .expect("launch");
    }
}

#[inline(always)]
fn cudarc_launch(s: &Arc<CudaStream>, f: &CudaFunction, vals: &[u32], n: u64) {
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (1, 1, 1),
        shared_mem_bytes: 0,
    };
    for _ in 0..n {
        let mut b = s.launch_builder(f);
        for v in vals {
            b.arg(v);
        }
        // SAFETY: the kernel takes `vals.len()` u32s and reads nothing.
        unsafe { b.launch(black_box(cfg)) }.expect("launch");
    }
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_ours_event_record(e: &Event<'_, NoTiming>, s: &Stream<'_>, n: u64) {
    for _ in 0..n {
        black_box(e).record(s).expect("record");
    }
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_raw_event_record(t: &DriverTable, e: CUevent, n: u64) {
    let record = t.cuEventRecord().expect("cuEventRecord");
    for _ in 0..n {
        // SAFETY: a live event, the null stream.
        check(unsafe { record(black_box(e), CUstream::NULL) }).expect("record");
    }
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_cudarc_event_record(e: &CudaEvent, s: &Arc<CudaStream>, n: u64) {
    for _ in 0..n {
        black_box(e).record(s).expect("record");
    }
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_ours_event_query(e: &Event<'_, NoTiming>, n: u64) {
    for _ in 0..n {
        black_box(black_box(e).is_done().expect("query"));
    }
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_raw_event_query(t: &DriverTable, e: CUevent, n: u64) {
    let query = t.cuEventQuery().expect("cuEventQuery");
    for _ in 0..n {
        // SAFETY: a live event.
        black_box(unsafe { query(black_box(e)) });
    }
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_cudarc_event_query(e: &CudaEvent, n: u64) {
    for _ in 0..n {
        black_box(black_box(e).is_complete());
    }
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_ours_stream_sync(s: &Stream<'_>, n: u64) {
    for _ in 0..n {
        black_box(s).synchronize().expect("sync");
    }
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_raw_stream_sync(t: &DriverTable, n: u64) {
    let sync = t.cuStreamSynchronize().expect("cuStreamSynchronize");
    for _ in 0..n {
        // SAFETY: the null stream of the current context.
        check(unsafe { sync(black_box(CUstream::NULL)) }).expect("sync");
    }
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_cudarc_stream_sync(s: &Arc<CudaStream>, n: u64) {
    for _ in 0..n {
        black_box(s).synchronize().expect("sync");
    }
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_ours_copy_h2d(buf: &mut DeviceBuffer<'_, u32>, host: &[u32], n: u64) {
    for _ in 0..n {
        buf.copy_from_host(black_box(host)).expect("copy");
    }
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_raw_copy_h2d(t: &DriverTable, dst: u64, host: &[u32], n: u64) {
    let h2d = t.cuMemcpyHtoD().expect("cuMemcpyHtoD");
    for _ in 0..n {
        // SAFETY: `host` fits in the allocation at `dst`.
        check(unsafe { h2d(black_box(dst), host.as_ptr().cast(), size_of_val(host)) })
            .expect("copy");
    }
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_cudarc_copy_h2d(s: &Arc<CudaStream>, buf: &mut CudaSlice<u32>, host: &[u32], n: u64) {
    for _ in 0..n {
        s.memcpy_htod(black_box(host), buf).expect("copy");
    }
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_ours_copy_d2h(buf: &DeviceBuffer<'_, u32>, host: &mut [u32], n: u64) {
    for _ in 0..n {
        buf.copy_to_host(black_box(&mut *host)).expect("copy");
    }
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_raw_copy_d2h(t: &DriverTable, src: u64, host: &mut [u32], n: u64) {
    let d2h = t.cuMemcpyDtoH().expect("cuMemcpyDtoH");
    for _ in 0..n {
        // SAFETY: `host` is no larger than the allocation at `src`.
        check(unsafe { d2h(host.as_mut_ptr().cast(), black_box(src), size_of_val(host)) })
            .expect("copy");
    }
}

#[inline(never)]
#[unsafe(no_mangle)]
fn cg_cudarc_copy_d2h(s: &Arc<CudaStream>, buf: &CudaSlice<u32>, host: &mut [u32], n: u64) {
    for _ in 0..n {
        s.memcpy_dtoh(buf, black_box(&mut *host)).expect("copy");
    }
}

fn main() -> Result<(), CudaError> {
    if std::env::var_os(ENV_DRIVER_PATH).is_none() || std::env::args().any(|a| a == "--list") {
        eprintln!("callgrind: run through scripts/bench.sh (it names the driver); nothing to do");
        return Ok(());
    }
    let n: u64 = std::env::var("CG_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let d = oxicuda_driver::driver_with(DriverOptions::from_env()?)?;
    d.init()?;
    let cctx = CudaContext::new(0).expect("cudarc: a context");
    let cstream = cctx.default_stream();
    let cmodule = cctx
        .load_module(cudarc::nvrtc::Ptx::from_src(NULL_ARGS))
        .expect("cudarc: the module loads");
    let (c4, c16) = (
        cmodule.load_function("null4").expect("null4"),
        cmodule.load_function("null16").expect("null16"),
    );
    let cev = cctx.new_event(None).expect("cudarc: an event");
    let mut cbuf = cstream.alloc_zeros::<u32>(1).expect("cudarc: alloc");
    let t = d.table();
    // SAFETY: unbinding is always valid (cudarc left its context current; the crate's
    // bind makes it current again).
    check(unsafe { t.cuCtxSetCurrent()?(oxicuda_driver::sys::CUcontext::NULL) })?;
    let primary = PrimaryContext::retain(&d.device(0)?)?;
    primary.bind(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(NULL_ARGS, &JitOptions::default())?;
        // SAFETY: kernels/null_args.cu: the kernels read nothing.
        let f4 = unsafe { module.function::<Sig4>("null4")? };
        // SAFETY: as above.
        let f16 = unsafe { module.function::<Sig16>("null16")? };
        // SAFETY: as above.
        let fp4 = unsafe { module.function::<SigPtr4>("null_ptr4")? };
        let (pa, pb) = (cur.alloc::<u32>(1)?, cur.alloc::<u32>(1)?);
        let (mut pc, mut pd) = (cur.alloc::<u32>(1)?, cur.alloc::<u32>(1)?);
        let s = cur.default_stream();
        let ev = cur.create_event::<NoTiming>()?;
        let mut buf = cur.alloc::<u32>(1)?;
        let mut vals: [u32; 16] = core::array::from_fn(|i| i as u32 + 1);
        let mut params: [*mut c_void; 16] = core::array::from_fn(|i| (&raw mut vals[i]).cast());
        let mut host = [7u32; 1];

        cg_ours_launch4(&f4, &s, n);
        cg_ours_launch16(&f16, &s, n);
        cg_raw_launch4(t, f4.raw(), &mut params, n);
        cg_raw_launch16(t, f16.raw(), &mut params, n);
        cg_rawbuilt_launch4(t, f4.raw(), n);
        cg_rawbuilt_launch16(t, f16.raw(), n);
        let ptrs = [
            pa.device_ptr(),
            pb.device_ptr(),
            pc.device_ptr(),
            pd.device_ptr(),
        ];
        let p4 = Ptr4 {
            a: &pa,
            b: &pb,
            c: &mut pc,
            d: &mut pd,
        };
        cg_ours_launch_ptr4(&fp4, &s, p4, n);
        cg_rawbuilt_launch_ptr4(t, fp4.raw(), ptrs, n);
        cg_cudarc_launch4(&cstream, &c4, &vals, n);
        cg_cudarc_launch16(&cstream, &c16, &vals, n);
        cg_ours_event_record(&ev, &s, n);
        cg_raw_event_record(t, ev.raw(), n);
        cg_cudarc_event_record(&cev, &cstream, n);
        cg_ours_event_query(&ev, n);
        cg_raw_event_query(t, ev.raw(), n);
        cg_cudarc_event_query(&cev, n);
        cg_ours_stream_sync(&s, n);
        cg_raw_stream_sync(t, n);
        cg_cudarc_stream_sync(&cstream, n);
        cg_ours_copy_h2d(&mut buf, &host, n);
        cg_raw_copy_h2d(t, buf.device_ptr(), &host, n);
        cg_cudarc_copy_h2d(&cstream, &mut cbuf, &host, n);
        cg_ours_copy_d2h(&buf, &mut host, n);
        cg_raw_copy_d2h(t, buf.device_ptr(), &mut host, n);
        cg_cudarc_copy_d2h(&cstream, &cbuf, &mut host, n);
        Ok(())
    })??;
    eprintln!("callgrind: {n} calls each, on {}", d.path().unwrap_or("?"));
    Ok(())
}
