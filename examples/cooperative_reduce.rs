//! A cooperative launch (`Function::launch_cooperative`): a grid-wide sum in one
//! kernel, whose blocks wait for each other with
//! `cooperative_groups::this_grid().sync()` — legal only because a cooperative
//! launch guarantees every block is resident at once. The kernel is declared with
//! `Module::cooperative_function`, so a cooperative launch is the only one it has
//! (a plain `launch` of it does not compile). The grid is sized from the
//! occupancy calculator (resident blocks per SM × SMs); one block more is refused
//! with a typed error before the driver is called.
//!
//! With no driver chosen and no GPU on the machine it runs on softcuda, and says so.
//!
//! `cargo run --example cooperative_reduce`

#[path = "common/mod.rs"]
mod common;

use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::{CUctx_flags, CUresult, CUstream_flags};
use oxicuda_driver::{Context, CudaError, Driver};
use std::process::ExitCode;

const PTX: &str = include_str!("../kernels/cooperative.ptx");
const N: usize = 1 << 16;

fn main() -> ExitCode {
    common::main_with(|driver, _soft| run(driver))
}

fn run(driver: &'static Driver) -> Result<(), CudaError> {
    let device = driver.best_device()?;
    println!(
        "device: {} (compute capability {:?})",
        device.name()?,
        device.compute_capability()?
    );
    let data: Vec<u32> = (0..N as u32).map(|i| i % 997).collect();
    let want: u64 = data.iter().map(|&x| u64::from(x)).sum();
    let ctx = Context::new(&device, CUctx_flags::empty())?;
    ctx.bind(|cur| -> Result<(), CudaError> {
        let module = cur.load_ptx(PTX, &JitOptions::default())?;
        // grid_reduce synchronises its grid, so it is correct only when every block
        // is resident at once: it is declared cooperative, and then has no launch but
        // the cooperative one (`k.launch(..)` does not compile).
        // SAFETY: kernels/cooperative.cu's grid_reduce reads `in` and writes the
        // other buffers only below the lengths the launch passes with them, for every
        // grid whose blocks are all resident at once.
        let k = unsafe {
            module.cooperative_function::<(In<u32>, Out<u32>, Out<u64>, Out<u32>)>("grid_reduce")?
        };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let per_sm = k.max_active_blocks_per_multiprocessor(256, 0)?;
        let sms = device.compute()?.multiprocessors;
        // A modest grid (the whole device is allowed, but an interpreter is slow).
        let grid = (per_sm * sms).min(16);
        let din = cur.alloc_from(&data)?;
        let mut partial = cur.alloc::<u32>((per_sm * sms) as usize + 1)?;
        partial.fill(0)?;
        let mut total = cur.alloc::<u64>(1)?;
        let mut seen = cur.alloc::<u32>(1)?;
        seen.fill(0)?;
        k.launch_cooperative(&stream, grid, 256, 0, (&din, &mut partial, &mut total, &mut seen))?;
        stream.synchronize()?;
        let (got, saw) = (total.to_vec()?, seen.to_vec()?);
        if got != [want] || saw != [grid] {
            eprintln!("sum {got:?} (expected {want}); {saw:?} blocks saw every partial sum (expected {grid})");
            return Err(CudaError::Driver(CUresult::CUDA_ERROR_UNKNOWN));
        }
        println!("{grid} blocks of 256 threads, synchronised with grid.sync(): sum {want}, as on the CPU");
        let too_many = per_sm * sms + 1;
        match k.launch_cooperative(&stream, too_many, 256, 0, (&din, &mut partial, &mut total, &mut seen)) {
            Err(e @ CudaError::CooperativeGridTooLarge { .. }) => println!("refused before the launch: {e}"),
            other => {
                eprintln!("a grid of {too_many} blocks: {other:?}");
                return Err(CudaError::Driver(CUresult::CUDA_ERROR_UNKNOWN));
            }
        }
        println!("cooperative_reduce: {N} elements, equal to the CPU sum");
        Ok(())
    })??;
    Ok(())
}
