//! memcheck: the report of an invalid access (out of bounds, in freed memory,
//! misaligned; global, shared, local or parameter memory) and of an invalid or
//! double free, and the quarantine of freed blocks those reports name.
//!
//! What is invalid is decided below: the interpreter refuses an access outside
//! what the thread may touch and tells the driver (`ptx::DeviceMemory::fault`),
//! which hands the fault and the nearest live allocation to [`access`];
//! `cuMemFree` hands its refusals to [`bad_free`] and its frees to [`freed`].
//! Freed device memory stays unmapped until the address space runs short
//! (`crate::devspace`), so an access to it is refused like any other; the
//! quarantine only remembers the last [`QUARANTINE`] freed blocks, to say so.

use crate::ptx::{AccessKind, AccessSpace, Fault};
use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use super::report;

/// Freed blocks remembered (the oldest forgotten first).
pub const QUARANTINE: usize = 4096;

/// A block of device memory: base and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// First byte.
    pub base: u64,
    /// Bytes.
    pub size: u64,
}

impl Block {
    fn contains(&self, addr: u64) -> bool {
        addr >= self.base && addr - self.base < self.size.max(1)
    }

    /// How far `addr` is from the block (0 inside).
    fn distance(&self, addr: u64) -> u64 {
        if addr < self.base {
            self.base - addr
        } else {
            (addr - self.base).saturating_sub(self.size.max(1) - 1)
        }
    }
}

static FREED: Mutex<VecDeque<Block>> = Mutex::new(VecDeque::new());

/// Remembers a freed block (while memcheck is on).
pub fn freed(base: u64, size: u64) {
    if !super::on(super::MEMCHECK) {
        return;
    }
    let mut q = FREED.lock().unwrap_or_else(PoisonError::into_inner);
    q.retain(|b| b.base != base);
    if q.len() >= QUARANTINE {
        q.pop_front();
    }
    q.push_back(Block { base, size });
}

/// Forgets a freed block whose addresses a new allocation reuses.
pub fn reused(base: u64, size: u64) {
    let mut q = FREED.lock().unwrap_or_else(PoisonError::into_inner);
    if q.is_empty() {
        return;
    }
    let end = base.saturating_add(size);
    q.retain(|b| b.base.saturating_add(b.size) <= base || b.base >= end);
}

/// The remembered freed block containing `addr`.
fn freed_at(addr: u64) -> Option<Block> {
    let q = FREED.lock().unwrap_or_else(PoisonError::into_inner);
    q.iter().rev().find(|b| b.contains(addr)).copied()
}

/// The remembered freed block starting at `addr`.
fn freed_from(addr: u64) -> Option<Block> {
    let q = FREED.lock().unwrap_or_else(PoisonError::into_inner);
    q.iter().rev().find(|b| b.base == addr).copied()
}

fn space_name(s: AccessSpace) -> &'static str {
    match s {
        AccessSpace::Global => "__global__",
        AccessSpace::Const => "__constant__",
        AccessSpace::Shared => "__shared__",
        AccessSpace::Local => "__local__",
        AccessSpace::Param => "__param__",
        AccessSpace::Texture => "texture",
        AccessSpace::Surface => "surface",
    }
}

fn kind_name(k: AccessKind) -> &'static str {
    match k {
        AccessKind::Read => "read",
        AccessKind::Write => "write",
        AccessKind::Atomic => "atomic",
    }
}

/// Where `addr` lies relative to `b`, as compute-sanitizer words it.
fn relative(addr: u64, b: Block, what: &str) -> String {
    let end = b.base.saturating_add(b.size);
    if addr < b.base {
        format!(
            "and is {} bytes before the {what} at {:#x} of size {} bytes",
            b.base - addr,
            b.base,
            b.size
        )
    } else if addr >= end {
        format!(
            "and is {} bytes after the {what} at {:#x} of size {} bytes",
            addr - end,
            b.base,
            b.size
        )
    } else {
        format!(
            "and is {} bytes inside the {what} at {:#x} of size {} bytes",
            addr - b.base,
            b.base,
            b.size
        )
    }
}

/// The site of a fault: function and operation, as in the report's `at` line.
pub fn site(f: &Fault<'_>) -> String {
    format!("{}+{:#x}", f.function, f.offset)
}

/// Reports an invalid access; `live` is the live allocation nearest to the address
/// (global memory; `None` if there is none or the access is not global).
pub fn access(f: &Fault<'_>, live: Option<Block>) {
    if !super::on(super::MEMCHECK) {
        return;
    }
    let mut lines = vec![
        format!(
            "Invalid {} {} of size {} bytes",
            space_name(f.space),
            kind_name(f.kind),
            f.size
        ),
        format!(
            "    at {}{} (PTX line {})",
            site(f),
            f.loc
                .map(|(file, line)| format!(" in {file}:{line}"))
                .unwrap_or_default(),
            f.line
        ),
    ];
    if f.function != f.kernel {
        lines.push(format!("    in kernel {}", f.kernel));
    }
    let [tx, ty, tz] = f.tid;
    let [bx, by, bz] = f.ctaid;
    lines.push(format!(
        "    by thread ({tx},{ty},{tz}) in block ({bx},{by},{bz})"
    ));
    if f.misaligned {
        lines.push(format!("    Address {:#x} is misaligned", f.addr));
    } else if matches!(f.space, AccessSpace::Texture | AccessSpace::Surface) {
        let surface = f.space == AccessSpace::Surface;
        lines.push(format!(
            "    {}",
            crate::texture::describe_fault(f.addr, surface)
        ));
    } else if f.space == AccessSpace::Param {
        lines.push(format!(
            "    Address {:#x} is in the kernel parameters, which are read-only",
            f.addr
        ));
    } else if matches!(f.space, AccessSpace::Global | AccessSpace::Const) {
        match freed_at(f.addr) {
            Some(b) => lines.push(format!(
                "    Address {:#x} is in freed memory: {} bytes inside a freed allocation at {:#x} of size {} bytes",
                f.addr,
                f.addr - b.base,
                b.base,
                b.size
            )),
            None => {
                let end = f.addr.saturating_add(u64::from(f.size));
                match live {
                    // Inside a live allocation, yet refused: out of this context's reach.
                    Some(b) if b.contains(f.addr) && end <= b.base.saturating_add(b.size) => {
                        lines.push(format!(
                            "    Address {:#x} is {} bytes inside the allocation at {:#x} of size {} bytes, which this kernel cannot access (another context's or device's memory, without peer access)",
                            f.addr,
                            f.addr - b.base,
                            b.base,
                            b.size
                        ));
                    }
                    Some(b) if b.contains(f.addr) => {
                        lines.push(format!("    Address {:#x} is out of bounds", f.addr));
                        lines.push(format!(
                            "    and the access runs {} bytes past the end of the allocation at {:#x} of size {} bytes",
                            end - b.base.saturating_add(b.size),
                            b.base,
                            b.size
                        ));
                    }
                    Some(b) => {
                        lines.push(format!("    Address {:#x} is out of bounds", f.addr));
                        lines.push(format!("    {}", relative(f.addr, b, "nearest allocation")));
                    }
                    None => {
                        lines.push(format!("    Address {:#x} is out of bounds", f.addr));
                        lines.push("    and no device allocation is live".to_owned());
                    }
                }
            }
        }
    } else {
        let what = match f.space {
            AccessSpace::Shared => "block's shared memory (static + dynamic)",
            _ => "thread's local memory",
        };
        lines.push(format!("    Address {:#x} is out of bounds", f.addr));
        let b = Block {
            base: 0,
            size: f.space_len,
        };
        lines.push(format!("    {}", relative(f.offset_in_space, b, what)));
    }
    report::finding(&site(f), &lines);
}

/// Why a free was refused: what the address is.
#[derive(Debug, Clone, Copy)]
pub enum BadFree {
    /// Inside a live allocation, not at its start.
    Inside(Block),
    /// Not in any live allocation.
    Nowhere,
}

/// Reports a refused free of `addr` by `call` (e.g. `cuMemFree`), which returns
/// `code`: a double free if `addr` starts a remembered freed block.
pub fn bad_free(call: &str, addr: u64, why: BadFree) {
    if !super::on(super::MEMCHECK) {
        return;
    }
    let mut lines = Vec::new();
    match (why, freed_from(addr)) {
        (BadFree::Nowhere, Some(b)) => {
            lines.push("Invalid free: double free".to_owned());
            lines.push(format!("    by {call}"));
            lines.push(format!(
                "    Address {addr:#x} is an allocation of size {} bytes that was already freed",
                b.size
            ));
        }
        (BadFree::Inside(b), _) => {
            lines.push("Invalid free: not the start of an allocation".to_owned());
            lines.push(format!("    by {call}"));
            lines.push(format!(
                "    Address {addr:#x} is {} bytes inside the allocation at {:#x} of size {} bytes",
                addr - b.base,
                b.base,
                b.size
            ));
        }
        (BadFree::Nowhere, None) => {
            lines.push("Invalid free: not a device allocation".to_owned());
            lines.push(format!("    by {call}"));
            lines.push(format!(
                "    Address {addr:#x} is not in any live device allocation"
            ));
        }
    }
    lines.push(format!(
        "Program hit CUDA_ERROR_INVALID_VALUE (error 1) due to \"invalid argument\" on CUDA API call to {call}."
    ));
    report::finding(&format!("{call}({addr:#x})"), &lines);
}

/// The block of `blocks` nearest to `addr`.
pub fn nearest(addr: u64, blocks: impl IntoIterator<Item = Block>) -> Option<Block> {
    blocks.into_iter().min_by_key(|b| b.distance(addr))
}

/// Reports the device allocations `leaked` (base, bytes) of a context being destroyed
/// by `call` (`cuCtxDestroy`, a primary context's reset), one finding each, then a
/// `LEAK SUMMARY` line, as compute-sanitizer's `--leak-check full`.
pub fn leaks(call: &str, leaked: &[(u64, u64)]) {
    if !super::on(super::LEAK) || leaked.is_empty() {
        return;
    }
    for &(base, size) in leaked {
        report::finding(
            &format!("{call} leak {base:#x}"),
            &[
                format!("Leaked {size} bytes at {base:#x}"),
                format!("    still allocated when {call} destroyed its context"),
            ],
        );
    }
    let bytes: u64 = leaked.iter().map(|(_, s)| s).sum();
    report::note(&format!(
        "LEAK SUMMARY: {bytes} bytes leaked in {} allocations",
        leaked.len()
    ));
}
