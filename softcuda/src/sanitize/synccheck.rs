//! synccheck: the report of a barrier only part of a block reaches (or that its
//! threads wait for at different instructions) and of a warp-synchronous
//! instruction whose member mask names lanes that exited or do not exist.
//!
//! The interpreter finds them when it releases a barrier or fires a collective
//! (with `ptx::CHECK_SYNC` asked through `ptx::DeviceMemory::checks`, read once per
//! launch) and hands them here through `ptx::DeviceMemory::sync_fault`. The launch
//! goes on: the barrier releases (or the collective fires) as it does without the
//! check.

use crate::ptx::{Site, SyncError, SyncFault};

use super::report;

fn at(s: &Site<'_>) -> String {
    let loc = s
        .loc
        .map(|(file, line)| format!(" in {file}:{line}"))
        .unwrap_or_default();
    format!("{}+{:#x}{loc} (PTX line {})", s.function, s.offset, s.line)
}

/// Reports a synchronisation error.
pub fn sync_fault(f: &SyncFault<'_>) {
    if !super::on(super::SYNCCHECK) {
        return;
    }
    let [tx, ty, tz] = f.tid;
    let [bx, by, bz] = f.ctaid;
    let head = match f.error {
        SyncError::DivergentBarrier { .. } => {
            "Barrier error detected. Divergent thread(s) in block"
        }
        SyncError::BadMask { .. } => "Barrier error detected. Invalid arguments",
    };
    let mut lines = vec![head.to_owned(), format!("    at {}", at(&f.site))];
    if f.site.function != f.kernel {
        lines.push(format!("    in kernel {}", f.kernel));
    }
    lines.push(format!(
        "    by thread ({tx},{ty},{tz}) in block ({bx},{by},{bz})"
    ));
    match f.error {
        SyncError::DivergentBarrier {
            barrier,
            waiting,
            threads,
            exited,
            other,
        } => {
            if exited > 0 {
                lines.push(format!(
                    "    Barrier {barrier} released with {waiting} of {threads} threads: {exited} exited without reaching it"
                ));
            }
            if let Some(o) = other {
                lines.push(format!(
                    "    Barrier {barrier} is awaited at two instructions: here and at {}",
                    at(&o)
                ));
            }
        }
        SyncError::BadMask {
            op,
            mask,
            exited,
            missing,
        } => {
            if exited != 0 {
                lines.push(format!(
                    "    Member mask {mask:#010x} of {op} names lanes {exited:#010x}, which have exited"
                ));
            }
            if missing != 0 {
                lines.push(format!(
                    "    Member mask {mask:#010x} of {op} names lanes {missing:#010x}, which this warp does not have"
                ));
            }
        }
    }
    let site = format!("{}+{:#x}", f.site.function, f.site.offset);
    report::finding(&site, &lines);
}
