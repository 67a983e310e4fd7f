//! Overlapping work on two streams, timed with events: each stream copies its half
//! of `x` from page-locked host memory, sets its half of `y` to 1, runs `y = 2x + y`,
//! and copies the result back into page-locked memory; the two pipelines run at once. Timing events on each stream
//! measure its pipeline; a shared start event measures both together.
//!
//! With no driver chosen and no GPU on the machine it runs on softcuda, the software
//! driver, and says so.
//!
//! `cargo run --example streams_events`

#[path = "common/mod.rs"]
mod common;

use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::memory::DeviceSliceMut;
use oxicuda_driver::module::{Function, JitOptions};
use oxicuda_driver::stream::{AsyncScope, Event, Stream, Timing};
use oxicuda_driver::sys::{CUctx_flags, CUmemhostalloc_flags, CUresult, CUstream_flags};
use oxicuda_driver::{Context, CudaError, Driver};
use std::process::ExitCode;

const SAXPY: &str = include_str!("../kernels/slices.ptx");
const N: usize = 1 << 20;

type Saxpy<'m> = Function<'m, (f32, In<f32>, Out<f32>)>;

fn main() -> ExitCode {
    common::main_with(|driver, _soft| run(driver))
}

/// One stream's pipeline: copy in, set, `y = 2x + y`, copy out, between two events.
#[allow(clippy::too_many_arguments)]
fn pipeline<'env>(
    scope: &AsyncScope<'_, 'env>,
    stream: &Stream<'_>,
    saxpy: &Saxpy<'_>,
    (start, end): (&Event<'_, Timing>, &Event<'_, Timing>),
    x_host: &'env [f32],
    y_host: &'env mut [f32],
    mut x: DeviceSliceMut<'_, f32>,
    mut y: DeviceSliceMut<'_, f32>,
) -> Result<(), CudaError> {
    let n = x_host.len();
    start.record(stream)?;
    scope.copy_to_device(&mut x, x_host)?;
    stream.fill(&mut y, 1.0f32)?;
    let grid = n.div_ceil(256) as u32;
    saxpy.launch(stream, grid, 256, 0, (2.0, &x, y.reborrow()))?;
    scope.copy_to_host(y_host, &y)?;
    end.record(stream)
}

fn run(driver: &'static Driver) -> Result<(), CudaError> {
    let device = driver.best_device()?;
    println!("device: {}", device.name()?);
    let ctx = Context::new(&device, CUctx_flags::empty())?;
    ctx.bind(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(SAXPY, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu's saxpy reads `x` and updates `y`, each only below the
        // length the launch passes with it.
        let saxpy = unsafe { module.function::<(f32, In<f32>, Out<f32>)>("saxpy")? };
        let mut x_host = cur.alloc_host::<f32>(N, CUmemhostalloc_flags::empty())?;
        let mut y_host = cur.alloc_host::<f32>(N, CUmemhostalloc_flags::empty())?;
        for (i, x) in x_host.iter_mut().enumerate() {
            *x = i as f32;
        }
        let (mut x, mut y) = (cur.alloc::<f32>(N)?, cur.alloc::<f32>(N)?);
        let flags = CUstream_flags::CU_STREAM_NON_BLOCKING;
        let (s0, s1) = (cur.create_stream(flags)?, cur.create_stream(flags)?);
        let events = [
            cur.create_event::<Timing>()?,
            cur.create_event::<Timing>()?,
            cur.create_event::<Timing>()?,
            cur.create_event::<Timing>()?,
            cur.create_event::<Timing>()?,
        ];
        let [both, start0, end0, start1, end1] = &events;
        both.record(&s0)?;
        s1.wait(both)?;

        let half = N / 2;
        let (x_lo, x_hi) = x_host.split_at(half);
        let (y_lo, y_hi) = y_host.split_at_mut(half);
        let (dx_lo, dx_hi) = x.as_mut_slice().split_at(half)?;
        let (dy_lo, dy_hi) = y.as_mut_slice().split_at(half)?;
        // Both scopes wait for their stream before returning: the host halves stay
        // borrowed until the copies out of and into them are done.
        s0.scope(|a| {
            s1.scope(|b| -> Result<(), CudaError> {
                pipeline(a, &s0, &saxpy, (start0, end0), x_lo, y_lo, dx_lo, dy_lo)?;
                pipeline(b, &s1, &saxpy, (start1, end1), x_hi, y_hi, dx_hi, dy_hi)
            })
        })???;
        end1.synchronize()?;
        end0.synchronize()?;

        let (t0, t1) = (end0.elapsed_since(start0)?, end1.elapsed_since(start1)?);
        let total = end0.elapsed_since(both)?.max(end1.elapsed_since(both)?);
        println!("stream 0: {t0:8.3} ms (copy in, set, saxpy, copy out of {half} elements)");
        println!("stream 1: {t1:8.3} ms (the other {half})");
        println!(
            "both:     {total:8.3} ms from the shared start ({:.0}% of the two run one after the other)",
            100.0 * total / (t0 + t1).max(f32::MIN_POSITIVE)
        );
        let wrong = (0..N)
            .filter(|&i| y_host[i] != 2.0 * i as f32 + 1.0)
            .count();
        if wrong != 0 {
            eprintln!("{wrong} of {N} results differ from the CPU");
            return Err(CudaError::Driver(CUresult::CUDA_ERROR_UNKNOWN));
        }
        println!("streams_events: {N} elements, all equal to the CPU result");
        Ok(())
    })?
}
