//! Two processes share device memory and an event, as multi-process services do.
//! The first (the producer) fills a buffer on its GPU after some slow work, records
//! an interprocess event, and sends both handles to a second process — this example
//! run again, the consumer — as hex in an environment variable. The consumer opens
//! the memory and the event, waits for the event in stream order, checks the data,
//! and scales it in place with a kernel (`saxpy`: `y = 2·1 + y`). When the consumer
//! has exited (so has closed the memory), the producer checks what it wrote.
//!
//! With no driver chosen and no GPU on the machine both run on softcuda, the
//! software driver, and say so: softcuda shares its memory between processes for
//! real (Linux). With a driver chosen (`OXICUDA_DRIVER_PATH`) that has no device, it
//! says so and exits with status 2.
//!
//! `cargo run --example ipc`

#[path = "common/mod.rs"]
mod common;

use oxicuda_driver::event::Interprocess;
use oxicuda_driver::ipc::{IpcEventHandle, IpcMemHandle};
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::{CUctx_flags, CUresult, CUstream_flags};
use oxicuda_driver::{Context, CudaError, Driver};
use std::process::ExitCode;

const PTX: &str = include_str!("../kernels/slices.ptx");
const N: usize = 1 << 20;
/// Set in the consumer: the two handles, as hex, separated by `:`.
const HANDLES: &str = "OXICUDA_IPC_EXAMPLE_HANDLES";

fn main() -> ExitCode {
    common::main_with(run)
}

fn hex(bytes: [u8; 64]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<[u8; 64]> {
    let mut out = [0u8; 64];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// An error for what went wrong outside the driver.
fn failed(rule: &'static str) -> CudaError {
    eprintln!("ipc: {rule}");
    CudaError::Driver(CUresult::CUDA_ERROR_UNKNOWN)
}

fn run(driver: &'static Driver, soft: bool) -> Result<(), CudaError> {
    let device = driver.best_device()?;
    let ctx = Context::new(&device, CUctx_flags::empty())?;
    if let Ok(handles) = std::env::var(HANDLES) {
        let (mem, event) = handles
            .split_once(':')
            .and_then(|(m, e)| Some((unhex(m)?, unhex(e)?)))
            .ok_or_else(|| failed("malformed handles"))?;
        return ctx.bind(|cur| consumer(cur, mem, event))?;
    }
    println!(
        "driver: {} {}; device: {}",
        if soft { "softcuda" } else { "CUDA" },
        driver.version(),
        device.name()?
    );
    ctx.bind(|cur| -> Result<(), CudaError> {
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let mut data = cur.alloc_from(&vec![0.0f32; N])?;
        let ready = cur.create_event::<Interprocess>()?;
        // Slow work, then the data, then the event: the consumer must wait for it.
        stream.launch_host_fn(|| std::thread::sleep(std::time::Duration::from_millis(300)))?;
        stream.fill(&mut data, 7.0f32)?;
        ready.record(&stream)?;
        let handles = format!(
            "{}:{}",
            hex(data.ipc_handle()?.to_bytes()),
            hex(ready.ipc_handle()?.to_bytes())
        );
        println!("producer: {N} floats and an event exported; starting the consumer");
        let exe = std::env::current_exe().map_err(|_| failed("no path to this program"))?;
        let out = std::process::Command::new(exe)
            .env(HANDLES, handles)
            .output()
            .map_err(|_| failed("the consumer did not start"))?;
        print!("{}", String::from_utf8_lossy(&out.stdout));
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
        if !out.status.success() {
            return Err(failed("the consumer failed"));
        }
        let wrong = data.to_vec()?.iter().filter(|&&v| v != 9.0).count();
        if wrong != 0 {
            eprintln!("{wrong} results differ from the CPU");
            return Err(failed("the consumer's results are wrong"));
        }
        println!("ipc: the producer sees every element the consumer wrote (9.0)");
        Ok(())
    })?
}

fn consumer(
    cur: &mut oxicuda_driver::CurrentContext<'_>,
    mem: [u8; 64],
    event: [u8; 64],
) -> Result<(), CudaError> {
    let module = cur.load_ptx(PTX, &JitOptions::default())?;
    // SAFETY: kernels/slices.cu's saxpy reads `x` and writes `y`, each only below the
    // length the launch passes with it.
    let saxpy = unsafe { module.function::<(f32, In<f32>, Out<f32>)>("saxpy")? };
    let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    // SAFETY: the producer frees its buffer only after this process has exited.
    let mut theirs = unsafe { cur.open_ipc_memory(&IpcMemHandle::from_bytes(mem))? };
    // SAFETY: the producer destroys its event only after this process has exited.
    let ready = unsafe { cur.open_ipc_event(&IpcEventHandle::from_bytes(event))? };
    stream.wait(&ready)?;
    let mut seen = cur.alloc::<f32>(N)?;
    stream.copy(&mut seen, &theirs.slice::<f32>(..N)?)?;
    let sevens = seen.to_vec()?.iter().filter(|&&v| v == 7.0).count();
    println!(
        "consumer: opened {} bytes; after the event, {sevens} of {N} elements are 7.0",
        theirs.size()
    );
    let ones = cur.alloc_from(&vec![1.0f32; N])?;
    saxpy.launch(
        &stream,
        (N as u32).div_ceil(256),
        256,
        0,
        (2.0f32, &ones, &mut theirs.slice_mut::<f32>(..N)?),
    )?;
    stream.synchronize()?;
    println!("consumer: wrote 2·1 + 7 into every element, closing");
    if sevens != N {
        return Err(failed("the consumer saw data from before the event"));
    }
    Ok(())
}
