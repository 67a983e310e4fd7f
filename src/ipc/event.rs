//! Events shared between processes: an [`Interprocess`] event's handle
//! (`cuIpcGetEventHandle`), and another process's event opened here
//! (`cuIpcOpenEventHandle`) as an `Event<Interprocess>` again.

use super::IpcEventHandle;
use crate::context::CurrentContext;
use crate::error::{CudaError, check};
use crate::event::{Event, Interprocess};
use crate::sys::{CUevent, CUipcEventHandle};

impl Event<'_, Interprocess> {
    /// A handle another process may open to record or wait for this event
    /// (`cuIpcGetEventHandle`). Only an [`Interprocess`] event has one: the method
    /// exists for no other kind.
    pub fn ipc_handle(&self) -> Result<IpcEventHandle, CudaError> {
        let mut h = CUipcEventHandle { reserved: [0; 64] };
        // SAFETY: a valid out-pointer; a live event created interprocess.
        check(unsafe { self.driver().table().cuIpcGetEventHandle()?(&mut h, self.raw()) })?;
        Ok(IpcEventHandle(h.reserved.map(|b| b as u8)))
    }
}

impl<'ctx> CurrentContext<'ctx> {
    /// Opens another process's [`Interprocess`] event in this context
    /// (`cuIpcOpenEventHandle`): an event to wait for (a stream's wait, `synchronize`,
    /// `is_done`) or record, destroyed when dropped. Opening a handle of this process
    /// is refused by the driver (NVIDIA: `CUDA_ERROR_INVALID_CONTEXT`).
    ///
    /// # Safety
    /// The handle must come from an interprocess event of another process, which
    /// that process neither destroys nor outlives (it does not exit) until the
    /// returned event is dropped here: NVIDIA documents any use of an opened event
    /// after the exporter destroyed its own as undefined behaviour. The usual way to
    /// keep this: the exporter destroys its event only after this process said
    /// (through the program's own channel) that it is done with it.
    pub unsafe fn open_ipc_event(
        &self,
        handle: &IpcEventHandle,
    ) -> Result<Event<'_, Interprocess>, CudaError> {
        let h = CUipcEventHandle {
            reserved: handle.0.map(|b| b as core::ffi::c_char),
        };
        let mut raw = CUevent::NULL;
        // SAFETY: a valid out-pointer; the driver checks the handle's bytes; the
        // caller promises the exporter keeps its event while it is open here.
        check(unsafe { self.driver().table().cuIpcOpenEventHandle()?(&mut raw, h) })?;
        // SAFETY: a live event the driver just made for this process, owned by
        // nothing else.
        Ok(unsafe { Event::from_raw_parts(self.driver(), raw) })
    }
}
