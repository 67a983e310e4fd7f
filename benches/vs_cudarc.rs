//! oxicuda-driver beside the raw driver call and beside cudarc 0.19, on the same driver
//! in one process: launches of a null kernel with 4 and 16 arguments, event and stream
//! calls, and host↔device copies of 4 B, 4 KiB and 1 MiB.
//!
//! Both bindings must drive the same library: `scripts/bench.sh` sets
//! `OXICUDA_DRIVER_PATH` to it (this crate's loader) and puts a folder holding
//! `libcuda.so` → the same file on `LD_LIBRARY_PATH` (cudarc's `dynamic-loading`, which
//! `dlopen`s `libcuda.so`); the dynamic linker maps the file once. The library is
//! softcuda (`libsoftcuda.so`) or the zero-cost stub (`benches/stub/zero_driver.c`:
//! softcuda with launches, event/stream calls and copies that return at once), named
//! by `BENCH_DRIVER` (`soft` or `stub`) in the group names.
//!
//! All three use the device's primary context (cudarc's `CudaContext::new` retains it),
//! so that cudarc's per-call `bind_to_thread` finds its context current, as in a
//! program that uses cudarc alone. Copies are synchronous for ours and raw
//! (`cuMemcpyHtoD`), and cudarc's `memcpy_htod` (`cuMemcpyHtoDAsync` on the legacy
//! default stream from pageable memory, which the driver completes before returning).
//!
//! `bash scripts/bench.sh` (it sets the environment up; run alone, this runs nothing).
#![allow(missing_docs)] // criterion_group! defines an undocumented public function

#[path = "common/mod.rs"]
mod common;

#[path = "common/null_args.rs"]
mod null_args;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
use null_args::{NULL_ARGS, Sig4, Sig16, args16};
use oxicuda_driver::context::PrimaryContext;
use oxicuda_driver::error::check;
use oxicuda_driver::event::NoTiming;
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::{CUevent, CUstream};
use oxicuda_driver::{CudaError, loader::ENV_DRIVER_PATH};
use std::ffi::c_void;
use std::hint::black_box;

fn label() -> String {
    std::env::var("BENCH_DRIVER").unwrap_or_else(|_| "soft".into())
}

fn benches(c: &mut Criterion) {
    if std::env::var_os(ENV_DRIVER_PATH).is_none() {
        eprintln!(
            "vs_cudarc: nothing run: {ENV_DRIVER_PATH} and LD_LIBRARY_PATH must name the same \
             driver (bash scripts/bench.sh sets them)"
        );
        return;
    }
    let l = label();
    let d = common::driver("vs_cudarc");
    // cudarc: libcuda.so from LD_LIBRARY_PATH — the same file, already mapped.
    let cctx = CudaContext::new(0).expect("cudarc: a context");
    let cstream = cctx.default_stream();
    let cmodule = cctx
        .load_module(cudarc::nvrtc::Ptx::from_src(NULL_ARGS))
        .expect("cudarc: the module loads");
    let cnull4 = cmodule.load_function("null4").expect("cudarc: null4");
    let cnull16 = cmodule.load_function("null16").expect("cudarc: null16");
    let primary = PrimaryContext::retain(&d.device(0).expect("a device")).expect("primary");
    assert_eq!(
        primary.raw().0.cast::<c_void>(),
        cctx.cu_ctx().cast::<c_void>(),
        "one context"
    );
    // cudarc left its context current; the crate's bind refuses to nest a context on
    // itself, so unbind it first (bind makes it current again, for both bindings).
    let set_current = d.table().cuCtxSetCurrent().expect("cuCtxSetCurrent");
    // SAFETY: unbinding is always valid.
    check(unsafe { set_current(oxicuda_driver::sys::CUcontext::NULL) }).expect("unbound");
    primary
        .bind(|cur| -> Result<(), CudaError> {
            let module = cur.load_ptx(NULL_ARGS, &JitOptions::default())?;
            // SAFETY: kernels/null_args.cu: the kernels read nothing.
            let null4 = unsafe { module.function::<Sig4>("null4")? };
            // SAFETY: as above.
            let null16 = unsafe { module.function::<Sig16>("null16")? };
            let stream = cur.default_stream();
            let t = d.table();
            let launch = t.cuLaunchKernel()?;

            // ---- launches
            for (n, raw_f) in [(4usize, null4.raw()), (16, null16.raw())] {
                let mut g = c.benchmark_group(format!("{l}/launch_null{n}"));
                match n {
                    4 => g.bench_function("ours", |b| {
                        b.iter(|| {
                            null4
                                .launch(&stream, 1, 1, 0, (black_box(1u32), 2, 3, 4))
                                .expect("launch")
                        })
                    }),
                    _ => g.bench_function("ours", |b| {
                        b.iter(|| null16.launch(&stream, 1, 1, 0, args16()).expect("launch"))
                    }),
                };
                // The raw call with a parameter array built once, outside the loop.
                let mut vals: [u32; 16] = core::array::from_fn(|i| i as u32 + 1);
                let mut params: [*mut c_void; 16] =
                    core::array::from_fn(|i| (&raw mut vals[i]).cast());
                g.bench_function("raw", |b| {
                    b.iter(|| {
                        // SAFETY: one pointer per parameter, each to a u32.
                        check(unsafe {
                            launch(
                                black_box(raw_f),
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
                        .expect("launch")
                    })
                });
                let cf = if n == 4 { &cnull4 } else { &cnull16 };
                let cfg = LaunchConfig {
                    grid_dim: (1, 1, 1),
                    block_dim: (1, 1, 1),
                    shared_mem_bytes: 0,
                };
                g.bench_function("cudarc", |b| {
                    b.iter(|| {
                        let mut builder = cstream.launch_builder(cf);
                        for v in &vals[..n] {
                            builder.arg(v);
                        }
                        // SAFETY: the kernel takes `n` u32s and reads nothing.
                        unsafe { builder.launch(black_box(cfg)) }.expect("launch");
                    })
                });
                g.finish();
            }

            // ---- event and stream calls
            let ev = cur.create_event::<NoTiming>()?;
            let cev = cctx.new_event(None).expect("cudarc: an event");
            let (record, query, sync) = (
                t.cuEventRecord()?,
                t.cuEventQuery()?,
                t.cuStreamSynchronize()?,
            );
            let raw_ev: CUevent = ev.raw();
            let mut g = c.benchmark_group(format!("{l}/event_record"));
            g.bench_function("ours", |b| b.iter(|| ev.record(&stream).expect("record")));
            // SAFETY (raw calls below): a live event of the current context, the null stream.
            g.bench_function("raw", |b| {
                b.iter(|| {
                    check(unsafe { record(black_box(raw_ev), CUstream::NULL) }).expect("record")
                })
            });
            g.bench_function("cudarc", |b| {
                b.iter(|| cev.record(&cstream).expect("record"))
            });
            g.finish();
            let mut g = c.benchmark_group(format!("{l}/event_query"));
            g.bench_function("ours", |b| {
                b.iter(|| black_box(ev.is_done().expect("query")))
            });
            g.bench_function("raw", |b| {
                b.iter(|| black_box(unsafe { query(black_box(raw_ev)) }))
            });
            g.bench_function("cudarc", |b| b.iter(|| black_box(cev.is_complete())));
            g.finish();
            let mut g = c.benchmark_group(format!("{l}/stream_synchronize"));
            g.bench_function("ours", |b| b.iter(|| stream.synchronize().expect("sync")));
            g.bench_function("raw", |b| {
                b.iter(|| check(unsafe { sync(black_box(CUstream::NULL)) }).expect("sync"))
            });
            g.bench_function("cudarc", |b| {
                b.iter(|| cstream.synchronize().expect("sync"))
            });
            g.finish();

            // ---- copies
            let (h2d, d2h) = (t.cuMemcpyHtoD()?, t.cuMemcpyDtoH()?);
            for bytes in [4usize, 4 << 10, 1 << 20] {
                let n = bytes / 4;
                let host = vec![1u32; n];
                let mut back = vec![0u32; n];
                let mut buf = cur.alloc::<u32>(n)?;
                let mut cbuf = cstream.alloc_zeros::<u32>(n).expect("cudarc: alloc");
                let size = if bytes >= 1 << 20 {
                    format!("{}MiB", bytes >> 20)
                } else if bytes >= 1024 {
                    format!("{}KiB", bytes >> 10)
                } else {
                    format!("{bytes}B")
                };
                let mut g = c.benchmark_group(format!("{l}/copy_h2d"));
                g.bench_function(BenchmarkId::new("ours", &size), |b| {
                    b.iter(|| buf.copy_from_host(black_box(&host)).expect("copy"))
                });
                let dptr = buf.device_ptr();
                g.bench_function(BenchmarkId::new("raw", &size), |b| {
                    // SAFETY: `bytes` bytes on both sides.
                    b.iter(|| {
                        check(unsafe { h2d(black_box(dptr), host.as_ptr().cast(), bytes) })
                            .expect("copy")
                    })
                });
                g.bench_function(BenchmarkId::new("cudarc", &size), |b| {
                    b.iter(|| {
                        cstream
                            .memcpy_htod(black_box(&host[..]), &mut cbuf)
                            .expect("copy")
                    })
                });
                g.finish();
                let mut g = c.benchmark_group(format!("{l}/copy_d2h"));
                g.bench_function(BenchmarkId::new("ours", &size), |b| {
                    b.iter(|| buf.copy_to_host(black_box(&mut back)).expect("copy"))
                });
                g.bench_function(BenchmarkId::new("raw", &size), |b| {
                    // SAFETY: as above.
                    b.iter(|| {
                        check(unsafe { d2h(back.as_mut_ptr().cast(), black_box(dptr), bytes) })
                            .expect("copy")
                    })
                });
                g.bench_function(BenchmarkId::new("cudarc", &size), |b| {
                    b.iter(|| {
                        cstream
                            .memcpy_dtoh(&cbuf, black_box(&mut back[..]))
                            .expect("copy")
                    })
                });
                g.finish();
            }
            Ok(())
        })
        .expect("bound")
        .expect("benchmarks ran");
}

criterion_group!(group, benches);
criterion_main!(group);
