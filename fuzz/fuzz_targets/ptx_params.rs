//! Fuzz target: the PTX `.entry` parameter scan (`module::entry_params`) on arbitrary
//! text and entry names. It must never panic, and a list it reads must be laid out
//! as the PTX ABI does: offsets increasing, each parameter after the previous one.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // The entry's name: the first line when it is short, else a name the seeds use.
    let (name, ptx) = match text.split_once('\n') {
        Some((first, rest)) if first.len() <= 64 && !first.contains(' ') => (first, rest),
        _ => ("k", &*text),
    };
    for name in [name, "k", "vector_add", ""] {
        if let Some(params) = oxicuda_driver::module::entry_params(ptx, name) {
            let mut end = 0usize;
            for (offset, size) in params {
                assert!(offset >= end, "parameters overlap: {offset} < {end}");
                end = offset.checked_add(size).expect("parameter end overflows");
            }
        }
    }
});
