//! What the typed launch costs over a raw `cuLaunchKernel`: the same kernel
//! (`vector_add` of kernels/slices.cu on empty views, so every thread returns at
//! once), the same arguments, the same driver — softcuda in-process, or the one
//! `OXICUDA_DRIVER` names — measured side by side in one run.
//!
//! `cargo bench --bench launch` (`OXICUDA_DRIVER=system cargo bench --bench launch` on a
//! GPU)
#![allow(missing_docs)] // criterion_group! defines an undocumented public function

#[path = "common/mod.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use oxicuda_driver::error::check;
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::CUctx_flags;
use oxicuda_driver::{Context, CudaError};
use std::ffi::c_void;
use std::hint::black_box;

const SLICES: &str = include_str!("../kernels/slices.ptx");

/// A buffer parameter as the kernel receives it.
#[repr(C)]
struct Slice {
    ptr: u64,
    len: u64,
}

fn benches(c: &mut Criterion) {
    let d = common::driver("launch");
    let ctx =
        Context::new(&d.device(0).expect("a device"), CUctx_flags::empty()).expect("a context");
    ctx.bind(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: vector_add reads a and b and writes c, each only
        // below its length.
        let add = unsafe { module.function::<(In<f32>, In<f32>, Out<f32>)>("vector_add")? };
        let (a, b) = (cur.alloc::<f32>(256)?, cur.alloc::<f32>(256)?);
        let mut out = cur.alloc::<f32>(256)?;
        // Empty views: every thread returns at once.
        let (a0, b0) = (a.as_slice().slice(..0)?, b.as_slice().slice(..0)?);
        let mut out0 = out.as_mut_slice().slice(..0)?;
        let stream = cur.default_stream();
        let mut g = c.benchmark_group("launch_3_slices");
        g.bench_function("typed", |bench| {
            bench.iter(|| {
                add.launch(&stream, 1, 1, 0, (black_box(a0), b0, out0.reborrow()))
                    .expect("launch")
            })
        });
        let launch = d.table().cuLaunchKernel()?;
        let (pa, pb, pc) = (a0.device_ptr(), b0.device_ptr(), out0.device_ptr());
        g.bench_function("raw", |bench| {
            bench.iter(|| {
                let len = black_box(0u64);
                let mut sa = Slice { ptr: pa, len };
                let mut sb = Slice { ptr: pb, len };
                let mut sc = Slice { ptr: pc, len };
                let mut params: [*mut c_void; 3] = [
                    (&mut sa as *mut Slice).cast(),
                    (&mut sb as *mut Slice).cast(),
                    (&mut sc as *mut Slice).cast(),
                ];
                // SAFETY: three pointers to values of the kernel's parameter types.
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
