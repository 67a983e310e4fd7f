//! Fuzz target: softcuda's PTX front end — lexer, parser, checker, compiler, linked-
//! image reader and its logs — through `softcuda::ptx::Module::load`, the function
//! behind `cuModuleLoadData` and the linker. Any text gives a module or an error log
//! in ptxas's format; it must never panic or hang.
#![no_main]

use libfuzzer_sys::fuzz_target;
use softcuda::ptx::{JitOptions, Module};

fuzz_target!(|data: &[u8]| {
    // The first byte picks the options (target, register cap, verbose log).
    let Some((&opt, rest)) = data.split_first() else {
        return;
    };
    let opts = JitOptions {
        target_sm: [52, 70, 80, 90][usize::from(opt & 3)],
        max_registers: (opt & 4 != 0).then_some(32),
        verbose: opt & 8 != 0,
    };
    let text = String::from_utf8_lossy(rest);
    match Module::load(&text, &opts) {
        Ok((module, _info)) => {
            for k in module.kernels() {
                let _ = module.kernel(&k.name);
            }
        }
        Err(log) => {
            // The error log is what the crate's JitLog parser reads: it must name an
            // error.
            let parsed = oxicuda_driver::module::JitLog::parse(&log);
            assert!(
                parsed.errors().next().is_some(),
                "a refusal without an error: {log:?}"
            );
        }
    }
});
