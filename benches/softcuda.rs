//! Launch costs on softcuda, the software driver, through the crate's table
//! (in-process): an empty kernel (the cost of a launch itself) and vector_add on
//! 1M floats.
//!
//! `cargo bench --bench softcuda`
#![allow(missing_docs)] // criterion_group! defines an undocumented public function

use criterion::{Criterion, criterion_group, criterion_main};
use oxicuda_driver::error::check;
use oxicuda_driver::sys::{CUcontext, CUdeviceptr, CUfunction, CUmodule, CUstream};
use oxicuda_driver::{Driver, DriverOptions};
use std::ffi::{c_uint, c_void};

const EMPTY: &str = concat!(include_str!("../kernels/empty.ptx"), "\0");
const VECTOR_ADD: &str = concat!(include_str!("../kernels/vector_add.ptx"), "\0");

fn soft() -> Driver {
    // SAFETY: softcuda's cuGetProcAddress_v2 has this C signature (its own,
    // ABI-identical types) and follows the driver's contract.
    let get = unsafe {
        std::mem::transmute::<*const (), oxicuda_driver::table::pfn::cuGetProcAddress>(
            softcuda::cuGetProcAddress_v2 as *const (),
        )
    };
    let d =
        unsafe { Driver::from_proc_address(get, &DriverOptions::new()) }.expect("softcuda loads");
    d.init().expect("softcuda initialises");
    d
}

fn benches(c: &mut Criterion) {
    let d = soft();
    let t = d.table();
    // SAFETY (all calls): valid out-pointers and arguments; everything made is freed.
    unsafe {
        let mut ctx = CUcontext::NULL;
        check(t.cuCtxCreate_v3020().unwrap()(&mut ctx, 0, 0)).unwrap();
        let load = |src: &str, name: &std::ffi::CStr| {
            let (mut m, mut f) = (CUmodule::NULL, CUfunction::NULL);
            check(t.cuModuleLoadData().unwrap()(&mut m, src.as_ptr().cast())).unwrap();
            check(t.cuModuleGetFunction().unwrap()(&mut f, m, name.as_ptr())).unwrap();
            (m, f)
        };
        let (m_empty, empty) = load(EMPTY, c"empty");
        let (m_add, add) = load(VECTOR_ADD, c"vector_add");
        let launch = t.cuLaunchKernel().unwrap();
        let null = CUstream::NULL;

        c.bench_function("softcuda/launch_empty_kernel", |b| {
            b.iter(|| {
                check(launch(
                    empty,
                    1,
                    1,
                    1,
                    1,
                    1,
                    1,
                    0,
                    null,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                ))
                .unwrap()
            })
        });

        const N: usize = 1 << 20;
        let mut bufs: [CUdeviceptr; 3] = [0; 3];
        for p in &mut bufs {
            check(t.cuMemAlloc().unwrap()(p, N * 4)).unwrap();
        }
        let host: Vec<f32> = (0..N).map(|i| i as f32).collect();
        check(t.cuMemcpyHtoD().unwrap()(
            bufs[0],
            host.as_ptr().cast(),
            N * 4,
        ))
        .unwrap();
        check(t.cuMemcpyHtoD().unwrap()(
            bufs[1],
            host.as_ptr().cast(),
            N * 4,
        ))
        .unwrap();
        let n = N as c_uint;
        let mut args: [*mut c_void; 4] = [
            (&raw const bufs[0]).cast_mut().cast(),
            (&raw const bufs[1]).cast_mut().cast(),
            (&raw const bufs[2]).cast_mut().cast(),
            (&raw const n).cast_mut().cast(),
        ];
        let mut g = c.benchmark_group("softcuda");
        g.sample_size(10);
        g.bench_function("vector_add_1M_floats", |b| {
            b.iter(|| {
                check(launch(
                    add,
                    (N / 256) as c_uint,
                    1,
                    1,
                    256,
                    1,
                    1,
                    0,
                    null,
                    args.as_mut_ptr(),
                    std::ptr::null_mut(),
                ))
                .unwrap()
            })
        });
        g.finish();

        for p in bufs {
            check(t.cuMemFree().unwrap()(p)).unwrap();
        }
        check(t.cuModuleUnload().unwrap()(m_empty)).unwrap();
        check(t.cuModuleUnload().unwrap()(m_add)).unwrap();
        check(t.cuCtxDestroy().unwrap()(ctx)).unwrap();
    }
}

criterion_group!(softcuda_benches, benches);
criterion_main!(softcuda_benches);
