//! What the JIT compiler says, as structured diagnostics: a PTX module with mistakes
//! is refused with `CudaError::JitFailed`, whose log lists each diagnostic's
//! severity, line and message; a correct module loaded with a verbose log reports
//! what the compiler did (registers, stack, ...).
//!
//! With no driver chosen and no GPU on the machine it runs on softcuda, the software
//! driver, and says so.
//!
//! `cargo run --example jit_log`

#[path = "common/mod.rs"]
mod common;

use oxicuda_driver::module::{JitLog, JitOptions};
use oxicuda_driver::sys::CUctx_flags;
use oxicuda_driver::{Context, CudaError, Driver};
use std::process::ExitCode;

/// Line 8 uses an instruction that does not exist.
const BROKEN: &str = "\
.version 8.0
.target sm_80
.address_size 64
.visible .entry broken(.param .u64 out)
{
\t.reg .b32 %r<3>;
\tmov.u32 %r1, %tid.x;
\tfrobnicate.u32 %r2, %r1;
\tret;
}
";

const VECTOR_ADD: &str = include_str!("../kernels/vector_add.ptx");

fn main() -> ExitCode {
    common::main_with(|driver, _soft| run(driver))
}

fn show(log: &JitLog) {
    for d in &log.diagnostics {
        let line = d.line.map(|l| format!("line {l}")).unwrap_or_default();
        let message = d.message.replace('\n', "; ");
        println!("  {:<7} {:<8} {message}", format!("{:?}", d.severity), line);
    }
}

fn run(driver: &'static Driver) -> Result<(), CudaError> {
    let device = driver.best_device()?;
    println!("device: {}", device.name()?);
    let ctx = Context::new(&device, CUctx_flags::empty())?;
    ctx.bind(|cur| -> Result<(), CudaError> {
        match cur.load_ptx(BROKEN, &JitOptions::default()) {
            Err(CudaError::JitFailed { log, source }) => {
                println!("The JIT refused the broken module ({source}):");
                show(&log);
                let first = log.errors().next();
                if first.and_then(|d| d.line) != Some(8) {
                    println!("(expected the first error on line 8)");
                    return Err(CudaError::JitFailed { log, source });
                }
            }
            Ok(_) => {
                println!("the broken module loaded: the JIT should have refused it");
                return Err(CudaError::Driver(
                    oxicuda_driver::sys::CUresult::CUDA_ERROR_UNKNOWN,
                ));
            }
            Err(e) => return Err(e),
        }
        let options = JitOptions {
            verbose: true,
            ..JitOptions::default()
        };
        let module = cur.load_ptx(VECTOR_ADD, &options)?;
        println!("vector_add loaded; the JIT's info log:");
        show(module.info_log());
        Ok(())
    })?
}
