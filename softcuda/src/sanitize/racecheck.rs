//! racecheck: the report of a shared-memory hazard — two accesses to the same
//! byte of a block's shared memory by different threads, at least one a store, with
//! no barrier between them (the bug a missing `__syncthreads()` makes).
//!
//! The interpreter keeps the shadow (`ptx`'s `exec/race.rs`, with
//! `ptx::CHECK_RACE` asked through `ptx::DeviceMemory::checks`) and hands each
//! hazard here through `ptx::DeviceMemory::race`. The kernel goes on.

use crate::ptx::{Hazard, Race, Site};

use super::report;

fn at(s: &Site<'_>) -> String {
    let loc = s
        .loc
        .map(|(file, line)| format!(" in {file}:{line}"))
        .unwrap_or_default();
    format!("{}+{:#x}{loc} (PTX line {})", s.function, s.offset, s.line)
}

/// Reports a hazard.
pub fn race(r: &Race<'_>) {
    if !super::on(super::RACECHECK) {
        return;
    }
    let (name, first, second) = match r.hazard {
        Hazard::ReadAfterWrite => ("read-after-write", "Write", "Read"),
        Hazard::WriteAfterRead => ("write-after-read", "Read", "Write"),
        Hazard::WriteAfterWrite => ("write-after-write", "Write", "Write"),
    };
    let [bx, by, bz] = r.ctaid;
    let (t1, s1) = r.first;
    let (t2, s2) = r.second;
    let lines = vec![
        format!(
            "Error: Race reported between {first} access at {} and {second} access at {}",
            at(&s1),
            at(&s2)
        ),
        format!(
            "    {name} hazard on __shared__ memory at {:#x} ({} bytes) in block ({bx},{by},{bz}) of kernel {}, with no barrier between",
            r.addr, r.size, r.kernel
        ),
        format!(
            "    {first} by thread ({},{},{}) at {}",
            t1[0],
            t1[1],
            t1[2],
            at(&s1)
        ),
        format!(
            "    {second} by thread ({},{},{}) at {}",
            t2[0],
            t2[1],
            t2[2],
            at(&s2)
        ),
    ];
    let site = format!(
        "{}+{:#x}/{}+{:#x}",
        s1.function, s1.offset, s2.function, s2.offset
    );
    report::finding(&site, &lines);
}
