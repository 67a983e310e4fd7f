//! External resources: memory one allocation exports as a POSIX file descriptor,
//! imported again as external memory (as memory from Vulkan or another process would
//! be), and — on softcuda — a binary semaphore handing that memory from one stream to
//! another: stream B fills it and signals, stream A waits and copies it out.
//!
//! With no driver chosen and no GPU on the machine it runs on softcuda, the software
//! driver, and says so. On a GPU the semaphore half needs an exporter such as Vulkan,
//! which this example does not have: it says so and runs the memory half. With a
//! driver chosen (`OXICUDA_DRIVER_PATH`) that has no device, it says so and exits
//! with status 2.
//!
//! `cargo run --example external_memory`

#[path = "common/mod.rs"]
mod common;

use oxicuda_driver::external::Binary;
use oxicuda_driver::sys::{CUctx_flags, CUstream_flags};
use oxicuda_driver::{Context, CudaError, Driver};
use std::process::ExitCode;

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
        let g = cur.granularity()?.minimum();
        // The exporter: an allocation that may be shared, mapped in a range.
        let physical = cur.create_physical_shareable(g)?;
        let fd = physical.export_fd()?;
        let mut range = cur.reserve_addresses(g)?;
        range.map(0, physical)?;
        // The importer. SAFETY: the descriptor is this allocation's own export, of
        // `g` bytes; below, the range and the external buffer are used one after the
        // other (synchronous copies, or stream work ordered by the semaphore).
        let memory = unsafe { cur.import_external_memory(fd, g as u64, false)? };
        let mut shared = memory.buffer::<u32>(0, N)?;
        let data: Vec<u32> = (0..N as u32).collect();
        range.slice_mut::<u32>(..N)?.copy_from_host(&data)?;
        let mut wrong = shared.to_vec()?.iter().zip(&data).filter(|(a, b)| a != b).count();
        println!(
            "external memory: {} bytes imported; {N} values written through the allocation, read through the import",
            memory.size()
        );

        if !soft {
            println!("semaphores: skipped on a GPU (an exporter such as Vulkan is needed)");
            return Ok(wrong);
        }
        let fd = softcuda::control::external_semaphore_fd().ok_or(CudaError::Driver(
            oxicuda_driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY,
        ))?;
        // SAFETY: a binary semaphore file of softcuda's, signalled only below after
        // the writes it orders.
        let ready = unsafe { cur.import_external_semaphore::<Binary>(fd)? };
        let a = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let b = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let mut out = cur.alloc_zeros::<u32>(N)?;
        ready.wait(&a)?; // A's copy waits for B's signal
        a.copy(&mut out, &shared)?;
        b.fill(&mut shared, 7u32)?;
        ready.signal(&b)?;
        wrong += out.to_vec()?.iter().filter(|&&v| v != 7).count();
        println!("semaphore: stream A copied what stream B wrote before signalling");
        Ok(wrong)
    })??;
    if wrong != 0 {
        eprintln!("{wrong} values differ");
        return Err(CudaError::Driver(
            oxicuda_driver::sys::CUresult::CUDA_ERROR_UNKNOWN,
        ));
    }
    println!("external_memory: every value as expected");
    Ok(())
}
