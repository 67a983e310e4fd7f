//! Managed memory and stream-ordered allocation with the safe layer: the host fills a
//! managed buffer in place, advice and a prefetch say where it should live, a kernel
//! computes `y = 2·x + y` into another managed buffer through a scratch buffer
//! allocated and freed in the stream's order from the device's memory pool, and the
//! host reads the result in place — after `host()` has waited for the kernel.
//!
//! With no driver chosen and no GPU on the machine it runs on softcuda, the software
//! driver, and says so. With a driver chosen (`OXICUDA_DRIVER_PATH`) that has no
//! device, it says so and exits with status 2.
//!
//! `cargo run --example managed_memory`

#[path = "common/mod.rs"]
mod common;

use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::managed::{Advice, Attach, Location};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::{CUctx_flags, CUstream_flags};
use oxicuda_driver::{Context, CudaError, Driver};
use std::process::ExitCode;

const PTX: &str = include_str!("../kernels/slices.ptx");
const N: usize = 1 << 16;

fn main() -> ExitCode {
    common::main_with(run)
}

fn run(driver: &'static Driver, soft: bool) -> Result<(), CudaError> {
    let device = driver.best_device()?;
    println!(
        "driver: {} {}; device: {}",
        if soft { "softcuda" } else { "CUDA" },
        driver.version(),
        device.name()?
    );
    let ctx = Context::new(&device, CUctx_flags::empty())?;
    let wrong = ctx.bind(|cur| -> Result<usize, CudaError> {
        let module = cur.load_ptx(PTX, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu's saxpy reads `x` and writes `y`, each only below
        // the length the launch passes with it.
        let saxpy = unsafe { module.function::<(f32, In<f32>, Out<f32>)>("saxpy")? };
        // A blocking stream: the synchronous copy below (on the legacy default stream)
        // is ordered after its allocation, and its kernel after the copy.
        let stream = cur.create_stream(CUstream_flags::empty())?;

        let mut x = cur.alloc_managed::<f32>(N, Attach::Global)?;
        let mut y = cur.alloc_managed::<f32>(N, Attach::Global)?;
        for (i, v) in x.host()?.iter_mut().enumerate() {
            *v = i as f32;
        }
        y.host()?.fill(1.0);
        x.advise(Advice::SetReadMostly)?;
        y.advise(Advice::SetPreferredLocation(Location::Device(device)))?;
        x.prefetch(&stream, Location::Device(device))?;
        y.prefetch(&stream, Location::Device(device))?;

        // A scratch copy of x, allocated and freed in the stream's order.
        let pool = cur.default_memory_pool()?;
        let mut scratch = stream.alloc_async::<f32>(N)?;
        stream.fill(&mut scratch, 0.0f32)?;
        scratch.as_mut_slice().copy_from(&x)?;
        let grid = N.div_ceil(256) as u32;
        saxpy.launch(&stream, grid, 256, 0, (2.0f32, &scratch, &mut y))?;
        println!(
            "pool: {} bytes in use while the scratch buffer lives",
            pool.used_current()?
        );
        scratch.free_async()?;
        y.prefetch(&stream, Location::Host)?;

        // `host` waits for the kernel, then lends the bytes in place.
        let ys = y.host()?;
        let wrong = (0..N).filter(|&i| ys[i] != 2.0 * i as f32 + 1.0).count();
        println!(
            "x read-mostly: {}; y preferred location: {:?}; y last prefetched to: {:?}",
            x.read_mostly()?,
            y.preferred_location()?,
            y.last_prefetch_location()?
        );
        println!("pool: {} bytes in use after the free", pool.used_current()?);
        Ok(wrong)
    })??;
    if wrong != 0 {
        eprintln!("{wrong} of {N} results differ from the CPU");
        return Err(CudaError::Driver(
            oxicuda_driver::sys::CUresult::CUDA_ERROR_UNKNOWN,
        ));
    }
    println!("managed_memory: {N} elements, all equal to the CPU result");
    Ok(())
}
