//! What the typed launch costs over a raw `cuLaunchKernel`: the same kernel
//! (`vector_add` with `n = 0`, so every thread returns at once), the same arguments,
//! the same softcuda in-process, measured side by side in one run.
//!
//! `cargo bench --bench launch`
#![allow(missing_docs)] // criterion_group! defines an undocumented public function

use criterion::{Criterion, criterion_group, criterion_main};
use oxicuda_driver::error::check;
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::CUctx_flags;
use oxicuda_driver::{Context, CudaError, Driver, DriverOptions};
use std::ffi::c_void;
use std::hint::black_box;

const VECTOR_ADD: &str = include_str!("../kernels/vector_add.ptx");

fn benches(c: &mut Criterion) {
    let d: &'static Driver = Box::leak(Box::new(
        Driver::load(&DriverOptions::software()).expect("softcuda loads"),
    ));
    d.init().expect("softcuda initialises");
    let ctx =
        Context::new(&d.device(0).expect("a device"), CUctx_flags::empty()).expect("a context");
    ctx.bind(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(VECTOR_ADD, &JitOptions::default())?;
        // SAFETY: vector_add reads a and b, writes n elements of c.
        let add = unsafe { module.function::<(In<f32>, In<f32>, Out<f32>, u32)>("vector_add")? };
        let (a, b) = (cur.alloc::<f32>(256)?, cur.alloc::<f32>(256)?);
        let mut out = cur.alloc::<f32>(256)?;
        let stream = cur.default_stream();
        let mut g = c.benchmark_group("launch_4_params");
        g.bench_function("typed", |bench| {
            bench.iter(|| {
                add.launch(&stream, 1, 1, 0, (&a, &b, &mut out, black_box(0u32)))
                    .expect("launch")
            })
        });
        let launch = d.table().cuLaunchKernel()?;
        let (pa, pb, pc) = (a.device_ptr(), b.device_ptr(), out.device_ptr());
        g.bench_function("raw", |bench| {
            bench.iter(|| {
                let mut n = black_box(0u32);
                let (mut pa, mut pb, mut pc) = (pa, pb, pc);
                let mut params: [*mut c_void; 4] = [
                    (&mut pa as *mut u64).cast(),
                    (&mut pb as *mut u64).cast(),
                    (&mut pc as *mut u64).cast(),
                    (&mut n as *mut u32).cast(),
                ];
                // SAFETY: four pointers to values of the kernel's parameter types.
                check(unsafe {
                    launch(
                        add.raw(),
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        0,
                        stream.raw(),
                        params.as_mut_ptr(),
                        std::ptr::null_mut(),
                    )
                })
                .expect("launch")
            })
        });
        g.finish();
        Ok(())
    })
    .expect("bound")
    .expect("benchmarks ran");
}

criterion_group!(group, benches);
criterion_main!(group);
