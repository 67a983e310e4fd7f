//! What running kernels on softcuda costs: thread-instructions per second on the
//! straight-line kernels of `kernels/` (vector_add, saxpy, daxpy, affine: 1M threads,
//! all in bounds, so every thread executes every instruction of its kernel's body),
//! and vector_add of 1M floats beside a plain Rust loop doing the same sums.
//!
//! Criterion reports elements per second; an element is one thread-instruction (the
//! kernel's PTX instruction count, counted below, times the threads). softcuda runs in
//! process, on one host thread per launch (as configured by default).
//!
//! `cargo bench --bench throughput`
#![allow(missing_docs)] // criterion_group! defines an undocumented public function

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use oxicuda_driver::error::check;
use oxicuda_driver::sys::{CUcontext, CUdeviceptr, CUfunction, CUmodule, CUstream};
use oxicuda_driver::{Driver, DriverOptions};
use std::ffi::{CString, c_uint, c_void};
use std::hint::black_box;

const N: usize = 1 << 20;

/// The kernels: name, PTX, and how its arguments are laid out (see `args`).
const KERNELS: &[(&str, &str)] = &[
    ("vector_add", include_str!("../kernels/vector_add.ptx")),
    ("saxpy", include_str!("../kernels/saxpy.ptx")),
    ("daxpy", include_str!("../kernels/daxpy.ptx")),
    ("affine", include_str!("../kernels/affine.ptx")),
];

/// Instructions in the body of entry `name`: every statement but declarations, the
/// path an in-bounds thread takes through these branch-over-the-body kernels.
fn instructions(ptx: &str, name: &str) -> u64 {
    let start = ptx
        .find(&format!(".entry {name}("))
        .expect("the entry is in the PTX");
    let body = &ptx[start..];
    let open = body.find('{').expect("a body");
    let close = body.find("\n}").expect("the body ends");
    body[open + 1..close]
        .lines()
        .map(str::trim)
        .filter(|l| l.ends_with(';') && !l.starts_with('.') && !l.starts_with("//"))
        .count() as u64
}

fn benches(c: &mut Criterion) {
    let d = Driver::load(&DriverOptions::software()).expect("softcuda loads");
    d.init().expect("softcuda initialises");
    let t = d.table();
    // SAFETY (all raw calls): valid out-pointers and arguments, each kernel given the
    // parameters its .cu source declares, over buffers of N elements of 8 bytes or
    // fewer; everything made is freed.
    unsafe {
        let mut ctx = CUcontext::NULL;
        check(t.cuCtxCreate_v3020().unwrap()(&mut ctx, 0, 0)).unwrap();
        let mut bufs: [CUdeviceptr; 3] = [0; 3];
        for p in &mut bufs {
            check(t.cuMemAlloc().unwrap()(p, N * 8)).unwrap();
            check(t.cuMemsetD8().unwrap()(*p, 0, N * 8)).unwrap();
        }
        let launch = t.cuLaunchKernel().unwrap();
        let mut g = c.benchmark_group("softcuda_throughput");
        g.sample_size(10);
        let mut modules: Vec<CUmodule> = Vec::new();
        for &(name, ptx) in KERNELS {
            let (mut m, mut f) = (CUmodule::NULL, CUfunction::NULL);
            let src = CString::new(ptx).unwrap();
            check(t.cuModuleLoadData().unwrap()(&mut m, src.as_ptr().cast())).unwrap();
            let cname = CString::new(name).unwrap();
            check(t.cuModuleGetFunction().unwrap()(&mut f, m, cname.as_ptr())).unwrap();
            modules.push(m);
            let per_thread = instructions(ptx, name);
            let (a32, a64, n) = (2.0f32, 2.0f64, N as c_uint);
            let affine = (2.0f32, 1.0f32, N as c_uint);
            let mut args: Vec<*mut c_void> = match name {
                "vector_add" => vec![
                    (&raw const bufs[0]).cast_mut().cast(),
                    (&raw const bufs[1]).cast_mut().cast(),
                    (&raw const bufs[2]).cast_mut().cast(),
                    (&raw const n).cast_mut().cast(),
                ],
                "saxpy" => vec![
                    (&raw const a32).cast_mut().cast(),
                    (&raw const bufs[0]).cast_mut().cast(),
                    (&raw const bufs[1]).cast_mut().cast(),
                    (&raw const n).cast_mut().cast(),
                ],
                "daxpy" => vec![
                    (&raw const a64).cast_mut().cast(),
                    (&raw const bufs[0]).cast_mut().cast(),
                    (&raw const bufs[1]).cast_mut().cast(),
                    (&raw const n).cast_mut().cast(),
                ],
                _ => vec![
                    (&raw const affine).cast_mut().cast(),
                    (&raw const bufs[0]).cast_mut().cast(),
                    (&raw const bufs[1]).cast_mut().cast(),
                ],
            };
            g.throughput(Throughput::Elements(per_thread * N as u64));
            g.bench_function(format!("{name}_1M/{per_thread}_instr_per_thread"), |b| {
                b.iter(|| {
                    check(launch(
                        f,
                        (N / 256) as c_uint,
                        1,
                        1,
                        256,
                        1,
                        1,
                        0,
                        CUstream::NULL,
                        args.as_mut_ptr(),
                        std::ptr::null_mut(),
                    ))
                    .unwrap();
                    check(t.cuCtxSynchronize_v2000().unwrap()()).unwrap();
                })
            });
        }
        g.finish();

        // The same sums on the host, one core.
        let (a, b) = (vec![1.0f32; N], vec![2.0f32; N]);
        let mut out = vec![0.0f32; N];
        let mut g = c.benchmark_group("vector_add_1M");
        g.sample_size(10);
        g.bench_function("rust_loop", |bench| {
            bench.iter(|| {
                for ((o, x), y) in out.iter_mut().zip(black_box(&a)).zip(black_box(&b)) {
                    *o = x + y;
                }
                black_box(&mut out);
            })
        });
        g.finish();

        for p in bufs {
            check(t.cuMemFree().unwrap()(p)).unwrap();
        }
        for m in modules {
            check(t.cuModuleUnload().unwrap()(m)).unwrap();
        }
        check(t.cuCtxDestroy().unwrap()(ctx)).unwrap();
    }
}

criterion_group!(throughput, benches);
criterion_main!(throughput);
