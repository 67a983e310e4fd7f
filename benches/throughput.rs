//! What running kernels on softcuda costs: thread-instructions per second on the
//! straight-line kernels of `kernels/` (vector_add, saxpy, daxpy, affine: 1M threads,
//! all in bounds, so every thread executes every instruction of its kernel's body),
//! and vector_add of 1M floats beside a plain Rust loop doing the same sums; then
//! kernels with shared memory, barriers, atomics and shuffles (`softcuda_kernels/*`:
//! tiled matrix multiply, two block reductions, histogram, transpose), each on
//! softcuda's lane engine, on its reference interpreter and in plain Rust, side by
//! side in one run.
//!
//! Criterion reports elements per second; an element is one thread-instruction (the
//! kernel's PTX instruction count, counted below, times the threads). softcuda runs in
//! process; the lane engine spreads a launch's blocks over the host's cores.
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

/// Runs `f` of `ptx` once per iteration on a `grid` x `block` launch with `args`,
/// with the lane engine (`lanes`) and the reference interpreter (`reference`)
/// side by side, and `host` (the same work in plain Rust, one core) beside them.
#[allow(clippy::too_many_arguments)]
fn kernel_vs_host(
    c: &mut Criterion,
    d: &Driver,
    name: &str,
    ptx: &str,
    entry: &str,
    grid: [c_uint; 3],
    block: [c_uint; 3],
    args: &mut [*mut c_void],
    mut host: impl FnMut(),
) {
    let t = d.table();
    let mut g = c.benchmark_group(format!("softcuda_kernels/{name}"));
    g.sample_size(10);
    // SAFETY: a valid out-pointers and a NUL-terminated image; `args` holds one
    // pointer per parameter of `entry`, over buffers the caller keeps alive.
    unsafe {
        let (mut m, mut f) = (CUmodule::NULL, CUfunction::NULL);
        let src = CString::new(ptx).unwrap();
        check(t.cuModuleLoadData().unwrap()(&mut m, src.as_ptr().cast())).unwrap();
        let cname = CString::new(entry).unwrap();
        check(t.cuModuleGetFunction().unwrap()(&mut f, m, cname.as_ptr())).unwrap();
        for (engine, on) in [("lanes", true), ("reference", false)] {
            softcuda::control::set_lane_engine(on);
            g.bench_function(engine, |b| {
                b.iter(|| {
                    check(t.cuLaunchKernel().unwrap()(
                        f,
                        grid[0],
                        grid[1],
                        grid[2],
                        block[0],
                        block[1],
                        block[2],
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
        softcuda::control::set_lane_engine(true);
        check(t.cuModuleUnload().unwrap()(m)).unwrap();
    }
    g.bench_function("rust", |b| b.iter(&mut host));
    g.finish();
}

/// The kernels with shared memory and barriers: a tiled matrix multiply (256 x 256
/// x 256, 16 x 16 tiles), a block reduction through shared memory and one with warp
/// shuffles (1M floats), a histogram with shared atomics (4M bytes, 256 bins) and a
/// tiled transpose (1024 x 1024): each on both engines and in plain Rust.
fn kernels(c: &mut Criterion) {
    let d = Driver::load(&DriverOptions::software()).expect("softcuda loads");
    d.init().expect("softcuda initialises");
    let t = d.table();
    let ptr = |v: &CUdeviceptr| (v as *const CUdeviceptr).cast_mut().cast::<c_void>();
    // SAFETY (all raw calls): valid out-pointers; every buffer is big enough for the
    // launch that uses it and is freed at the end; the context outlives the launches.
    unsafe {
        let mut ctx = CUcontext::NULL;
        check(t.cuCtxCreate_v3020().unwrap()(&mut ctx, 0, 0)).unwrap();
        let alloc = |bytes: usize| {
            let mut p: CUdeviceptr = 0;
            check(t.cuMemAlloc().unwrap()(&mut p, bytes)).unwrap();
            check(t.cuMemsetD8().unwrap()(p, 1, bytes)).unwrap();
            p
        };

        // Matrix multiply.
        const M: usize = 256;
        let (a, b, cm) = (alloc(M * M * 4), alloc(M * M * 4), alloc(M * M * 4));
        let dim = M as c_uint;
        let dims = [dim as i32; 3];
        let mut args = [
            ptr(&a),
            ptr(&b),
            ptr(&cm),
            (&raw const dims[0]).cast_mut().cast(),
            (&raw const dims[1]).cast_mut().cast(),
            (&raw const dims[2]).cast_mut().cast(),
        ];
        let (ha, hb) = (vec![1.5f32; M * M], vec![0.5f32; M * M]);
        let mut hc = vec![0.0f32; M * M];
        kernel_vs_host(
            c,
            &d,
            "matmul_256",
            include_str!("../kernels/matmul_tiled.ptx"),
            "matmul_tiled",
            [dim / 16, dim / 16, 1],
            [16, 16, 1],
            &mut args,
            || {
                for i in 0..M {
                    for j in 0..M {
                        let mut acc = 0.0f32;
                        for k in 0..M {
                            acc += black_box(&ha)[i * M + k] * hb[k * M + j];
                        }
                        hc[i * M + j] = acc;
                    }
                }
                black_box(&mut hc);
            },
        );

        // Block reductions.
        let input = alloc(N * 4);
        let partial = alloc(N / 256 * 4);
        let n = N as c_uint;
        let mut args = [ptr(&input), ptr(&partial), (&raw const n).cast_mut().cast()];
        let hin = vec![1.0f32; N];
        let mut hsum = vec![0.0f32; N / 256];
        kernel_vs_host(
            c,
            &d,
            "reduce_shared_1M",
            include_str!("../kernels/reduce_shared.ptx"),
            "reduce_sum",
            [(N / 256) as c_uint, 1, 1],
            [256, 1, 1],
            &mut args,
            || {
                for (s, chunk) in hsum.iter_mut().zip(black_box(&hin).chunks(256)) {
                    *s = chunk.iter().sum();
                }
                black_box(&mut hsum);
            },
        );
        let total = alloc(4);
        let ni = N as i32;
        let mut args = [ptr(&input), ptr(&total), (&raw const ni).cast_mut().cast()];
        let mut hs = 0.0f32;
        kernel_vs_host(
            c,
            &d,
            "warp_shuffle_reduce_1M",
            include_str!("../kernels/warp_reduce.ptx"),
            "warp_sum_f32",
            [(N / 256) as c_uint, 1, 1],
            [256, 1, 1],
            &mut args,
            || {
                hs = black_box(&hin).iter().sum();
                black_box(&mut hs);
            },
        );

        // Histogram.
        const BYTES: usize = 4 << 20;
        let data = alloc(BYTES);
        let bins = alloc(256 * 4);
        let nb = BYTES as c_uint;
        let mut args = [ptr(&data), (&raw const nb).cast_mut().cast(), ptr(&bins)];
        let hdata: Vec<u8> = (0..BYTES).map(|i| (i * 7) as u8).collect();
        let mut hbins = [0u32; 256];
        kernel_vs_host(
            c,
            &d,
            "histogram_4M",
            include_str!("../kernels/histogram.ptx"),
            "histogram",
            [64, 1, 1],
            [256, 1, 1],
            &mut args,
            || {
                hbins = [0; 256];
                for &x in black_box(&hdata) {
                    hbins[usize::from(x)] += 1;
                }
                black_box(&mut hbins);
            },
        );

        // Transpose.
        const R: usize = 1024;
        let (tin, tout) = (alloc(R * R * 4), alloc(R * R * 4));
        let rc = R as i32;
        let mut args = [
            ptr(&tin),
            ptr(&tout),
            (&raw const rc).cast_mut().cast(),
            (&raw const rc).cast_mut().cast(),
        ];
        let hin2 = vec![2.0f32; R * R];
        let mut hout2 = vec![0.0f32; R * R];
        kernel_vs_host(
            c,
            &d,
            "transpose_1024",
            include_str!("../kernels/transpose.ptx"),
            "transpose",
            [(R / 32) as c_uint, (R / 32) as c_uint, 1],
            [32, 8, 1],
            &mut args,
            || {
                for i in 0..R {
                    for j in 0..R {
                        hout2[j * R + i] = black_box(&hin2)[i * R + j];
                    }
                }
                black_box(&mut hout2);
            },
        );

        for p in [a, b, cm, input, partial, total, data, bins, tin, tout] {
            check(t.cuMemFree().unwrap()(p)).unwrap();
        }
        check(t.cuCtxDestroy().unwrap()(ctx)).unwrap();
    }
}

criterion_group!(throughput, benches, kernels);
criterion_main!(throughput);
