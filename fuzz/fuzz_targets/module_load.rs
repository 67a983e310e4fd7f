//! Fuzz target: `CurrentContext::load_module` end to end on softcuda in-process — the
//! crate's image sniffing and header checks, its aligned, NUL-terminated copy, the
//! driver's `cuModuleLoadDataEx` (softcuda's cubin refusal, fatbin walk and PTX
//! compiler) and the JIT-log parsing. An image the crate passes to the driver must
//! never make the driver read outside it (AddressSanitizer watches the copy), any
//! image gives a module or a typed error, and nothing is left alive afterwards.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::CUctx_flags;
use oxicuda_driver::{Context, DriverOptions, driver_with};

fuzz_target!(|data: &[u8]| {
    let d = driver_with(DriverOptions::software()).expect("softcuda loads");
    d.init().expect("cuInit");
    let device = d.device(0).expect("device 0");
    let ctx = Context::new(&device, CUctx_flags::empty()).expect("a context");
    let loaded = ctx
        .bind(|cur| match cur.load_module(data, &JitOptions::default()) {
            Ok(module) => {
                let _ = module.info_log().to_string();
                true
            }
            Err(e) => {
                let _ = e.to_string();
                false
            }
        })
        .expect("bind");
    drop(ctx);
    assert_eq!(
        softcuda::control::live_counts(),
        softcuda::control::Counts::default(),
        "a live object left after loading (loaded: {loaded})"
    );
});
