//! A three-kernel pipeline captured once into a CUDA graph, instantiated, and launched
//! 1000 times — beside the same work as 3000 plain stream launches, from the same
//! starting data: both results are compared with each other and with the CPU, and
//! both are timed.
//!
//! Each step: `y = 2·x + y` (saxpy), `z = x + y` (vector_add), `w = 0.5·z + w`
//! (saxpy). With no driver chosen and no GPU on the machine it runs on softcuda, the
//! software driver, and says so.
//!
//! `cargo run --example graph_capture`

#[path = "common/mod.rs"]
mod common;

use oxicuda_driver::graph::CaptureMode;
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::module::{Function, JitOptions};
use oxicuda_driver::stream::Stream;
use oxicuda_driver::sys::{CUctx_flags, CUresult, CUstream_flags};
use oxicuda_driver::{Context, CudaError, CurrentContext, Driver};
use std::process::ExitCode;
use std::time::{Duration, Instant};

const PTX: &str = include_str!("../kernels/slices.ptx");
const N: usize = 1024;
const STEPS: usize = 1000;

type Saxpy<'m> = Function<'m, (f32, In<f32>, Out<f32>)>;
type Add<'m> = Function<'m, (In<f32>, In<f32>, Out<f32>)>;

/// The pipeline's buffers, from the same starting data each time.
struct Buffers<'a> {
    x: DeviceBuffer<'a, f32>,
    y: DeviceBuffer<'a, f32>,
    z: DeviceBuffer<'a, f32>,
    w: DeviceBuffer<'a, f32>,
}

fn buffers<'a>(cur: &'a CurrentContext<'_>) -> Result<Buffers<'a>, CudaError> {
    let x: Vec<f32> = (0..N).map(|i| i as f32).collect();
    Ok(Buffers {
        x: cur.alloc_from(&x)?,
        y: cur.alloc_from(&vec![1.0f32; N])?,
        z: cur.alloc_from(&vec![0.0f32; N])?,
        w: cur.alloc_from(&vec![0.0f32; N])?,
    })
}

fn main() -> ExitCode {
    common::main_with(run)
}

fn run(driver: &'static Driver, soft: bool) -> Result<(), CudaError> {
    let device = driver.best_device()?;
    println!(
        "driver: {}; device: {}",
        if soft {
            "softcuda (software)"
        } else {
            driver.path().unwrap_or("in-process")
        },
        device.name()?
    );
    let ctx = Context::new(&device, CUctx_flags::empty())?;
    ctx.bind(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(PTX, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu: saxpy and vector_add write their `Slice<float>`
        // only below its length and read their inputs only below theirs.
        let saxpy = unsafe { module.function::<(f32, In<f32>, Out<f32>)>("saxpy")? };
        // SAFETY: as above.
        let add = unsafe { module.function::<(In<f32>, In<f32>, Out<f32>)>("vector_add")? };
        let mut stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let grid = (N as u32).div_ceil(256);

        // Plain stream launches.
        let mut plain = buffers(cur)?;
        let t0 = Instant::now();
        for _ in 0..STEPS {
            step(&stream, &saxpy, &add, grid, &mut plain)?;
        }
        stream.synchronize()?;
        let plain_time = t0.elapsed();

        // The same step, captured once, launched STEPS times.
        let graphed = buffers(cur)?;
        let b = &graphed;
        let captured = stream.capture(CaptureMode::ThreadLocal, |cap| {
            cap.launch(&saxpy, grid, 256, 0, (2.0f32, &b.x, &b.y))?;
            cap.launch(&add, grid, 256, 0, (&b.x, &b.y, &b.z))?;
            cap.launch(&saxpy, grid, 256, 0, (0.5f32, &b.z, &b.w))
        })?;
        println!("captured {} nodes", captured.driver_node_count()?);
        let exec = captured.instantiate()?;
        exec.upload(&stream)?;
        let t1 = Instant::now();
        stream.scope(|s| -> Result<(), CudaError> {
            for _ in 0..STEPS {
                s.launch_graph(&exec)?;
            }
            Ok(())
        })??;
        let graph_time = t1.elapsed();
        drop(exec);

        compare(&plain, &graphed)?;
        println!(
            "{STEPS} steps of 3 kernels on {N} elements: stream launches {}, graph launches {} ({:.2}x)",
            per_step(plain_time),
            per_step(graph_time),
            plain_time.as_secs_f64() / graph_time.as_secs_f64()
        );
        Ok(())
    })?
}

/// One step as three launches on `stream`.
fn step(
    stream: &Stream<'_>,
    saxpy: &Saxpy<'_>,
    add: &Add<'_>,
    grid: u32,
    b: &mut Buffers<'_>,
) -> Result<(), CudaError> {
    saxpy.launch(stream, grid, 256, 0, (2.0f32, &b.x, &mut b.y))?;
    add.launch(stream, grid, 256, 0, (&b.x, &b.y, &mut b.z))?;
    saxpy.launch(stream, grid, 256, 0, (0.5f32, &b.z, &mut b.w))
}

/// Graph and stream results agree exactly (same operations, same order), and `y`
/// and `z` agree with the CPU (exact integers).
fn compare(plain: &Buffers<'_>, graphed: &Buffers<'_>) -> Result<(), CudaError> {
    let wrong = |what: &str| {
        eprintln!("{what}");
        CudaError::Driver(CUresult::CUDA_ERROR_UNKNOWN)
    };
    for (name, a, b) in [
        ("y", &plain.y, &graphed.y),
        ("z", &plain.z, &graphed.z),
        ("w", &plain.w, &graphed.w),
    ] {
        if a.to_vec()? != b.to_vec()? {
            return Err(wrong(&format!("{name}: graph and stream results differ")));
        }
    }
    let (y, z) = (graphed.y.to_vec()?, graphed.z.to_vec()?);
    for i in 0..N {
        let x = i as f32;
        let y_cpu = 1.0 + 2.0 * STEPS as f32 * x;
        if y[i] != y_cpu || z[i] != x + y_cpu {
            return Err(wrong(&format!("element {i} differs from the CPU")));
        }
    }
    println!("graph and stream launches give the same results, equal to the CPU's");
    Ok(())
}

fn per_step(d: Duration) -> String {
    format!("{:.1} µs/step", d.as_secs_f64() * 1e6 / STEPS as f64)
}
