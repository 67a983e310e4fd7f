//! Fuzz target: the ptxas/nvlink log parser (`JitLog::parse`) on arbitrary text. It
//! must never panic, and never invent diagnostics: there are at most as many as the
//! text has lines.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxicuda_driver::module::JitLog;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let log = JitLog::parse(&text);
    assert!(log.diagnostics.len() <= text.lines().count());
    assert!(log.errors().count() <= log.diagnostics.len());
    // Display walks every diagnostic: one line each at least.
    assert!(log.to_string().lines().count() >= log.diagnostics.len());
});
