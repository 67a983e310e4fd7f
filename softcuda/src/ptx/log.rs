//! ptxas-style logs: the error log of a failed load and the info log (`-v`) of a
//! successful one.

use std::fmt::Write;

use super::Space;
use super::compile::Compiled;

/// Size of the driver's part of constant bank 0 before the kernel parameters.
const CMEM0_BASE: u32 = 352;

/// One `error` line per problem (sorted by line), then the fatal line.
pub(crate) fn error_log(errors: &[(u32, String)]) -> String {
    let mut out = String::new();
    for (line, msg) in errors {
        let _ = writeln!(
            out,
            "ptxas application ptx input, line {line}; error   : {msg}"
        );
    }
    out.push_str("ptxas fatal   : Ptx assembly aborted due to errors\n");
    out
}

/// The info log: global memory, then for each kernel its properties.
pub(crate) fn info_log(c: &Compiled, sm: u32) -> String {
    let mut out = String::new();
    let gmem: u64 = c
        .globals
        .iter()
        .filter(|g| g.space == Space::Global)
        .map(|g| g.size)
        .sum();
    let cmem: u64 = c
        .globals
        .iter()
        .filter(|g| g.space == Space::Const)
        .map(|g| g.size)
        .sum();
    if cmem > 0 {
        let _ = writeln!(
            out,
            "ptxas info    : {gmem} bytes gmem, {cmem} bytes cmem[3]"
        );
    } else {
        let _ = writeln!(out, "ptxas info    : {gmem} bytes gmem");
    }
    for k in &c.kernels {
        let _ = writeln!(
            out,
            "ptxas info    : Compiling entry function '{}' for 'sm_{sm}'",
            k.name
        );
        let _ = writeln!(out, "ptxas info    : Function properties for {}", k.name);
        let _ = writeln!(
            out,
            "    {} bytes stack frame, 0 bytes spill stores, 0 bytes spill loads",
            k.local_bytes
        );
        let smem = if k.static_shared_bytes > 0 {
            format!(", {} bytes smem", k.static_shared_bytes)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "ptxas info    : Used {} registers{smem}, {} bytes cmem[0]",
            k.num_regs,
            CMEM0_BASE + k.param_bytes
        );
    }
    out
}
