//! A graph launch against the same work as plain stream launches, side by side in one
//! run: three kernels (`saxpy`, `vector_add`, `saxpy` of kernels/slices.cu) on empty
//! views, so every thread returns at once and what is measured is the cost of
//! launching — three `cuLaunchKernel`s and a synchronize, or one `cuGraphLaunch` in a
//! scope (which synchronizes). On softcuda in-process unless the environment names a
//! driver (`OXICUDA_DRIVER=system` on a GPU).
//!
//! `cargo bench --bench graph`
#![allow(missing_docs)] // criterion_group! defines an undocumented public function

#[path = "common/mod.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use oxicuda_driver::graph::CaptureMode;
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::{CUctx_flags, CUstream_flags};
use oxicuda_driver::{Context, CudaError};

const SLICES: &str = include_str!("../kernels/slices.ptx");

fn benches(c: &mut Criterion) {
    let d = common::driver("graph");
    let ctx =
        Context::new(&d.device(0).expect("a device"), CUctx_flags::empty()).expect("a context");
    ctx.bind(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: saxpy and vector_add write their `Slice<float>`
        // only below its length.
        let saxpy = unsafe { module.function::<(f32, In<f32>, Out<f32>)>("saxpy")? };
        // SAFETY: as above.
        let add = unsafe { module.function::<(In<f32>, In<f32>, Out<f32>)>("vector_add")? };
        let (x, mut y, mut z) = (
            cur.alloc::<f32>(1)?,
            cur.alloc::<f32>(1)?,
            cur.alloc::<f32>(1)?,
        );
        let mut stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let mut g = c.benchmark_group("three_kernels");
        g.bench_function("stream_launches", |bench| {
            bench.iter(|| -> Result<(), CudaError> {
                let x0 = x.as_slice().slice(..0)?;
                saxpy.launch(&stream, 1, 1, 0, (2.0f32, x0, y.as_mut_slice().slice(..0)?))?;
                let y0 = y.as_slice().slice(..0)?;
                add.launch(&stream, 1, 1, 0, (x0, y0, z.as_mut_slice().slice(..0)?))?;
                let z0 = z.as_slice().slice(..0)?;
                saxpy.launch(&stream, 1, 1, 0, (0.5f32, z0, y.as_mut_slice().slice(..0)?))?;
                stream.synchronize()
            })
        });
        let (x0, y0, z0) = (
            x.as_slice().slice(..0)?,
            y.as_slice().slice(..0)?,
            z.as_slice().slice(..0)?,
        );
        let graph = stream.capture(CaptureMode::ThreadLocal, |cap| {
            cap.launch(&saxpy, 1, 1, 0, (2.0f32, x0, y0))?;
            cap.launch(&add, 1, 1, 0, (x0, y0, z0))?;
            cap.launch(&saxpy, 1, 1, 0, (0.5f32, z0, y0))
        })?;
        let exec = graph.instantiate()?;
        exec.upload(&stream)?;
        g.bench_function("graph_launch", |bench| {
            bench.iter(|| stream.scope(|s| s.launch_graph(&exec)))
        });
        g.finish();
        drop(exec);
        Ok(())
    })
    .expect("bound")
    .expect("benchmarks ran");
}

criterion_group!(group, benches);
criterion_main!(group);
