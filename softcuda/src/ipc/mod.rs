//! Inter-process communication (`cuIpc*`): what memory and event handles carry and
//! how one process reaches another's shared files. The C entry points are
//! `crate::api::ipc`; the memory model is [`memory`], the events' [`event`], memory
//! pools shared between processes [`pool`] (entry points `crate::api::pool_ipc`). Linux
//! only: elsewhere every cross-process path is `CUDA_ERROR_NOT_SUPPORTED`
//! ([`SUPPORTED`]).
//!
//! **How.** What is shared lives in memory files (`memfd_create`) that the exporting
//! process keeps open: an exported allocation's bytes, an interprocess event's
//! counters. A handle names the exporter's process id, the descriptor number of the
//! file there and an id; the importer opens `/proc/<pid>/fd/<fd>` (a new open of the
//! same file, which needs the permission to read the exporter's `/proc` entries:
//! the same user, a dumpable process) and checks that the file it got is the one
//! named (`softcuda-ipc-<pid>-<id>`, `softcuda-ipc-event-<pid>-<id>`: the pid and
//! an id the exporter never reuses, so a descriptor number reused for another file
//! is told apart), sealed and large enough. A handle whose process is gone, whose
//! descriptor was closed or reused, is `CUDA_ERROR_INVALID_HANDLE`; a handle that
//! is no softcuda handle of the right kind `CUDA_ERROR_INVALID_VALUE`.
//!
//! **Handle layout** (64 bytes, little-endian): bytes 0..8 the magic `softcuda`,
//! 8..12 the kind ([`MEMORY`] or [`EVENT`]), 12..16 the exporter's pid, 16..20 the
//! descriptor number, 20..24 zero, 24..32 the size (memory: the allocation's
//! bytes; events: 0), 32..40 the id (memory: the allocation's buffer id; events:
//! the event's id), 40..48 the exporter's address (memory; else 0), 48..64 zero.

pub(crate) mod event;
pub(crate) mod memory;
pub(crate) mod pool;

use crate::state::R;
use crate::types::code;
use std::os::fd::OwnedFd;

/// Whether softcuda shares memory and events between processes here (Linux).
pub(crate) const SUPPORTED: bool = cfg!(target_os = "linux");

/// The first bytes of every softcuda IPC handle.
const MAGIC: &[u8; 8] = b"softcuda";

/// The kind of a memory handle (`CUipcMemHandle`).
pub(crate) const MEMORY: u32 = 1;
/// The kind of an event handle (`CUipcEventHandle`).
pub(crate) const EVENT: u32 = 2;

/// The fields of a handle (see the module's layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Handle {
    pub(crate) kind: u32,
    pub(crate) pid: u32,
    pub(crate) fd: i32,
    pub(crate) size: u64,
    pub(crate) id: u64,
    pub(crate) base: u64,
}

impl Handle {
    /// The 64 bytes of the handle.
    pub(crate) fn encode(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        b[..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&self.kind.to_le_bytes());
        b[12..16].copy_from_slice(&self.pid.to_le_bytes());
        b[16..20].copy_from_slice(&self.fd.to_le_bytes());
        b[24..32].copy_from_slice(&self.size.to_le_bytes());
        b[32..40].copy_from_slice(&self.id.to_le_bytes());
        b[40..48].copy_from_slice(&self.base.to_le_bytes());
        b
    }

    /// The handle in `b` if it is a softcuda handle of `kind`; `INVALID_VALUE`
    /// otherwise (bad magic or kind, non-zero padding).
    pub(crate) fn decode(b: &[u8; 64], kind: u32) -> R<Handle> {
        let word = |r: core::ops::Range<usize>| {
            let mut w = [0u8; 8];
            w[..r.len()].copy_from_slice(&b[r]);
            u64::from_le_bytes(w)
        };
        let padding_zero = word(20..24) == 0 && b[48..].iter().all(|&x| x == 0);
        if &b[..8] != MAGIC || word(8..12) != u64::from(kind) || !padding_zero {
            return Err(code::INVALID_VALUE);
        }
        Ok(Handle {
            kind,
            pid: word(12..16) as u32,
            fd: word(16..20) as u32 as i32,
            size: word(24..32),
            id: word(32..40),
            base: word(40..48),
        })
    }
}

/// This process's id, as handles carry it.
pub(crate) fn pid() -> u32 {
    std::process::id()
}

/// The name of the shared file of this process's allocation `id`.
pub(crate) fn memory_name(pid: u32, id: u64) -> String {
    format!("softcuda-ipc-{pid}-{id}")
}

/// The name of the shared file of this process's interprocess event `id`.
pub(crate) fn event_name(pid: u32, id: u64) -> String {
    format!("softcuda-ipc-event-{pid}-{id}")
}

/// Opens descriptor `fd` of process `pid` (`/proc/<pid>/fd/<fd>`, read-write,
/// close-on-exec) and checks that it is the memory file `name`, sealed against
/// shrinking and at least `min` bytes long. `INVALID_HANDLE` if the process or the
/// descriptor is gone, it names another file, or it may not be opened.
pub(crate) fn open_peer(pid: u32, fd: i32, name: &str, min: u64) -> R<OwnedFd> {
    if !SUPPORTED || fd < 0 || pid == 0 {
        return Err(code::INVALID_HANDLE);
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(format!("/proc/{pid}/fd/{fd}"))
        .map_err(|_| code::INVALID_HANDLE)?;
    let file = OwnedFd::from(file);
    // What was opened is checked, not the path: the descriptor may have been
    // replaced between a look at the path and the open.
    let (got, size) = {
        use std::os::fd::AsRawFd;
        crate::vmm::named(file.as_raw_fd()).ok_or(code::INVALID_HANDLE)?
    };
    if got != name || size < min {
        return Err(code::INVALID_HANDLE);
    }
    Ok(file)
}

/// Forgets every IPC object (`control::reset`, after the contexts, and with them
/// every opened mapping and event, are gone): exported files closed.
pub(crate) fn reset() {
    memory::reset();
    pool::reset();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip_and_foreign_bytes_are_refused() {
        let h = Handle {
            kind: MEMORY,
            pid: 4242,
            fd: 17,
            size: 1000,
            id: 99,
            base: 0x7f00_0000_0000,
        };
        let b = h.encode();
        assert_eq!(Handle::decode(&b, MEMORY), Ok(h));
        assert_eq!(Handle::decode(&b, EVENT), Err(code::INVALID_VALUE));
        let mut bad = b;
        bad[0] ^= 1;
        assert_eq!(Handle::decode(&bad, MEMORY), Err(code::INVALID_VALUE));
        let mut bad = b;
        bad[63] = 1;
        assert_eq!(Handle::decode(&bad, MEMORY), Err(code::INVALID_VALUE));
        assert_eq!(Handle::decode(&[0; 64], MEMORY), Err(code::INVALID_VALUE));
    }
}
