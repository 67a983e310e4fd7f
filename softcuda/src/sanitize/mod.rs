//! softcuda as a sanitizer: which tools are on, and the switch that turns them on.
//!
//! `SOFTCUDA_SANITIZE=memcheck,racecheck,synccheck,initcheck,streamcheck` (or `all`), read once
//! when softcuda initialises (its first driver call), or [`set_tools`] from Rust
//! (`crate::control::set_sanitize`); `SOFTCUDA_SANITIZE_LOG=path` sends the report
//! to a file instead of standard error (`%p` in it: the process id). An unknown
//! tool name is an error of [`parse`], reported as a warning when it comes from the
//! environment (the known names still apply).
//!
//! Off by default, and then free on the interpreter's path. memcheck's findings are
//! the accesses the interpreter refuses anyway (every access is checked against the
//! live allocations, the block's shared memory, the thread's stack): they reach
//! [`memcheck`] through its failure-path hook (`ptx::DeviceMemory::fault`), the
//! frees through `cuMemFree`'s own failure path. synccheck's checks run where the
//! interpreter releases a barrier or fires a warp collective, behind one test of
//! a flag read once per launch (`ptx::DeviceMemory::checks`), never per
//! instruction; initcheck's, at each global load, store and atomic, behind a
//! local copy of that flag taken each time a thread starts running. The tools on
//! are one relaxed load of `TOOLS`.
//!
//! Files: `mod.rs` (the switch), `report.rs` (the `========= ` text, the repeat
//! cap, the error count and the summary), `memcheck.rs` (what an invalid access or
//! free is, and the freed blocks it names), `synccheck.rs` (divergent barriers and
//! bad warp-synchronous masks), `initcheck.rs` (which device bytes were written,
//! and reads of those that were not), `streamcheck.rs` (the streams' vector clocks
//! and races between streams on device memory). This module imports only `ptx`'s descriptions of
//! what it found (its row neighbour): the layers above hand it what they know.

use std::sync::Once;
use std::sync::atomic::{AtomicU8, Ordering};

pub(crate) mod delay;
pub(crate) mod initcheck;
pub(crate) mod memcheck;
pub(crate) mod racecheck;
pub(crate) mod report;
pub(crate) mod streamcheck;
pub(crate) mod synccheck;

pub use report::{summary, take_report};

/// memcheck: out-of-bounds, freed, misaligned accesses; invalid and double frees.
pub const MEMCHECK: u8 = 1;
/// racecheck: shared-memory hazards between a block's threads (the interpreter's
/// own bit for it).
pub const RACECHECK: u8 = crate::ptx::CHECK_RACE;
/// synccheck: divergent barriers, bad warp-synchronous masks (the interpreter's
/// own bit for it, so that the tools on are the checks it is asked for).
pub const SYNCCHECK: u8 = crate::ptx::CHECK_SYNC;
/// initcheck: kernel reads of never-written device memory (the interpreter's own
/// bit for it).
pub const INITCHECK: u8 = crate::ptx::CHECK_INIT;
/// leak: device allocations (`cuMemAlloc`, `cuMemAllocPitch`, `cuMemAllocManaged`)
/// still live when their context is destroyed — compute-sanitizer's
/// `--leak-check full`; not part of `all`, as there (a program may rely on the
/// context's destruction to free its memory).
pub const LEAK: u8 = 16;
/// streamcheck: races between streams — two operations on different streams that
/// touch the same device bytes, at least one writing, with nothing ordering them
/// (the interpreter's bit for reporting every global access).
pub const STREAMCHECK: u8 = crate::ptx::CHECK_GLOBAL;
/// delay: the default streams' work runs later, on a worker, and every operation
/// waits a seeded, reproducible while before it runs, so that a missing
/// synchronisation shows as stale data (`delay.rs`).
pub const DELAY: u8 = 64;
/// The tools of `all`.
pub const ALL: u8 = MEMCHECK | RACECHECK | SYNCCHECK | INITCHECK | STREAMCHECK | DELAY;
/// The tools that find something today.
pub const IMPLEMENTED: u8 = ALL | LEAK;

const NAMES: [(&str, u8); 7] = [
    ("memcheck", MEMCHECK),
    ("racecheck", RACECHECK),
    ("synccheck", SYNCCHECK),
    ("initcheck", INITCHECK),
    ("streamcheck", STREAMCHECK),
    ("delay", DELAY),
    ("leak", LEAK),
];

/// The tools on, a set of the bits above.
static TOOLS: AtomicU8 = AtomicU8::new(0);
static FROM_ENV: Once = Once::new();

/// The tools on (reads the environment the first time).
#[inline]
pub fn tools() -> u8 {
    init_from_env();
    TOOLS.load(Ordering::Relaxed)
}

/// Whether `tool` is on.
#[inline]
pub fn on(tool: u8) -> bool {
    tools() & tool != 0
}

/// Parses a tool list: names separated by commas (`memcheck,initcheck`), `all`,
/// or `none`/empty for none. An unknown name is an error naming it and the known
/// ones.
pub fn parse(spec: &str) -> Result<u8, String> {
    let mut set = 0;
    for name in spec.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        set |= match name {
            "all" => ALL,
            "none" => 0,
            n => NAMES
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(n))
                .map(|&(_, b)| b)
                .ok_or_else(|| {
                    format!(
                        "unknown sanitizer tool '{n}' (known: memcheck, racecheck, synccheck, initcheck, streamcheck, delay, leak, all, none)"
                    )
                })?,
        };
    }
    Ok(set)
}

/// The names of the tools in `set`, comma-separated.
pub fn names(set: u8) -> String {
    let v: Vec<&str> = NAMES
        .iter()
        .filter(|(_, b)| set & b != 0)
        .map(|(n, _)| *n)
        .collect();
    v.join(",")
}

/// Reads `SOFTCUDA_SANITIZE` and `SOFTCUDA_SANITIZE_LOG`, once.
pub fn init_from_env() {
    FROM_ENV.call_once(|| {
        if let Ok(path) = std::env::var("SOFTCUDA_SANITIZE_LOG")
            && !path.is_empty()
            && let Err(e) = report::set_log(Some(&path))
        {
            report::warn(&format!("cannot open SOFTCUDA_SANITIZE_LOG '{path}': {e}"));
        }
        let Ok(spec) = std::env::var("SOFTCUDA_SANITIZE") else {
            return;
        };
        let set = spec
            .split(',')
            .map(|n| {
                parse(n).unwrap_or_else(|e| {
                    report::warn(&format!("SOFTCUDA_SANITIZE: {e}; ignored"));
                    0
                })
            })
            .fold(0, |a, b| a | b);
        apply(set);
    });
}

/// Turns the tools in `set` on and the others off (`0`: off). Overrides the
/// environment.
pub fn set_tools(set: u8) {
    init_from_env();
    apply(set & IMPLEMENTED);
}

fn apply(set: u8) {
    TOOLS.store(set, Ordering::Relaxed);
    if set != 0 {
        report::arm_exit_summary();
    }
    let missing = set & !IMPLEMENTED;
    if missing != 0 {
        report::warn(&format!(
            "{} not implemented yet: nothing is checked for {}",
            names(missing),
            if missing.count_ones() == 1 {
                "it"
            } else {
                "them"
            }
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_lists_parse() {
        assert_eq!(parse("memcheck"), Ok(MEMCHECK));
        assert_eq!(parse(" memcheck , initcheck"), Ok(MEMCHECK | INITCHECK));
        assert_eq!(parse("all"), Ok(ALL));
        assert_eq!(parse(""), Ok(0));
        assert_eq!(parse("none"), Ok(0));
        let e = parse("memcheck,leakcheck").unwrap_err();
        assert!(e.contains("'leakcheck'"), "{e}");
        assert_eq!(
            names(ALL),
            "memcheck,racecheck,synccheck,initcheck,streamcheck,delay"
        );
    }
}
