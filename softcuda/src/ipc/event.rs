//! Interprocess events: the state an event created with `CU_EVENT_INTERPROCESS`
//! shares with the processes that open its handle (`cuIpcGetEventHandle`,
//! `cuIpcOpenEventHandle`). `crate::stream::Event` keeps it beside its own and
//! consults it for every record, query and wait.
//!
//! The state is two `u64` counters in a small shared memory file
//! (`softcuda-ipc-event-<pid>-<event id>`, 16 bytes, sealed), mapped with the same
//! mechanism as an external semaphore's counter (`crate::external::Page`): word 0
//! the newest record completed, word 1 the records made. A record (in any process)
//! takes the next generation from word 1 at the call; when its stream reaches it,
//! word 0 is raised to that generation (never lowered). A query is complete when
//! word 0 has caught up with word 1; a wait (host or stream) waits until word 0
//! reaches the generation that was newest when the wait was asked for, polling with
//! short sleeps (`crate::external::poll_until`). Every mapping holds the file: the
//! state lives while any process has the event.

use super::{EVENT, Handle, SUPPORTED, event_name, open_peer, pid};
use crate::external::Page;
use crate::state::R;
use crate::types::code;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::Ordering::SeqCst;

/// The counters' bytes.
const SIZE: u64 = 16;
/// Word 0: the newest record completed; word 1: records made.
const COMPLETED: usize = 0;
const RECORDED: usize = 1;

/// The shared state of an interprocess event.
pub(crate) struct Shared {
    page: Page,
    /// The event's id in the exporting process (its file's name).
    id: u64,
    /// The exporter's pid.
    pid: u32,
    /// Opened from a handle (else created here with `CU_EVENT_INTERPROCESS`).
    imported: bool,
}

impl Shared {
    /// Fresh state (no record) for this process's event `id`; `OUT_OF_MEMORY` if
    /// the system refused the file or the mapping; `NOT_SUPPORTED` off Linux.
    pub(crate) fn create(id: u64) -> R<Shared> {
        if !SUPPORTED {
            return Err(code::NOT_SUPPORTED);
        }
        let fd =
            crate::vmm::create_named(&event_name(pid(), id), SIZE).ok_or(code::OUT_OF_MEMORY)?;
        // SAFETY: `fd` was just created and is owned by nothing else.
        let file = unsafe { OwnedFd::from_raw_fd(fd) };
        let page = Page::map(file, 2).ok_or(code::OUT_OF_MEMORY)?;
        Ok(Shared {
            page,
            id,
            pid: pid(),
            imported: false,
        })
    }

    /// The state another process's handle `h` names (`INVALID_HANDLE` if it names
    /// nothing any more: see `crate::ipc::open_peer`).
    pub(crate) fn open(h: &Handle) -> R<Shared> {
        if !SUPPORTED {
            return Err(code::NOT_SUPPORTED);
        }
        let file = open_peer(h.pid, h.fd, &event_name(h.pid, h.id), SIZE)?;
        let page = Page::map(file, 2).ok_or(code::OUT_OF_MEMORY)?;
        Ok(Shared {
            page,
            id: h.id,
            pid: h.pid,
            imported: true,
        })
    }

    /// The handle naming this state (an exporter's: its file is this process's).
    pub(crate) fn handle(&self) -> Handle {
        Handle {
            kind: EVENT,
            pid: self.pid,
            fd: self.page.fd(),
            size: 0,
            id: self.id,
            base: 0,
        }
    }

    /// Whether this state was opened from a handle.
    pub(crate) fn imported(&self) -> bool {
        self.imported
    }

    /// A new record: its generation.
    pub(crate) fn record(&self) -> u64 {
        self.page.word(RECORDED).fetch_add(1, SeqCst) + 1
    }

    /// The records made so far (in every process).
    pub(crate) fn recorded(&self) -> u64 {
        self.page.word(RECORDED).load(SeqCst)
    }

    /// The newest record completed.
    pub(crate) fn completed(&self) -> u64 {
        self.page.word(COMPLETED).load(SeqCst)
    }

    /// Record `generation` has completed (or been discarded).
    pub(crate) fn complete(&self, generation: u64) {
        self.page.word(COMPLETED).fetch_max(generation, SeqCst);
    }

    /// Waits until record `target` has completed; gives up (false) once `give_up()`.
    pub(crate) fn wait(&self, target: u64, give_up: impl Fn() -> bool) -> bool {
        crate::external::poll_until(|| self.completed() >= target, give_up)
    }
}
