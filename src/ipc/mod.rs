//! Inter-process communication: device memory, events and memory pools shared with
//! another process through 64-byte handles and file descriptors (`cuIpcGetMemHandle`/`cuIpcOpenMemHandle`/
//! `cuIpcCloseMemHandle`, `cuIpcGetEventHandle`/`cuIpcOpenEventHandle`) — what
//! multi-process services (collectives, inference servers) are built on.
//!
//! A handle is plain bytes ([`IpcMemHandle`], [`IpcEventHandle`]: `to_bytes` and
//! `from_bytes`) that the program sends to the other process any way it likes (a
//! pipe, a socket, shared memory). Then:
//!
//! - **Exporting is safe.** [`DeviceBuffer::ipc_handle`](crate::memory::DeviceBuffer::ipc_handle)
//!   names a buffer; the buffer stays this process's, freed when it is dropped. Once
//!   another process opens the handle it may read and write the buffer at any time:
//!   this process then sees whatever it wrote (every bit pattern is a valid
//!   [`DeviceCopy`](crate::memory::DeviceCopy) value, and no host reference ever points
//!   into device memory, so that is garbage at worst, never undefined behaviour here).
//! - **Opening memory is `unsafe`**
//!   ([`CurrentContext::open_ipc_memory`](crate::CurrentContext::open_ipc_memory)): the mapping is only as good as the
//!   exporter's promise to keep the allocation alive until this process closes it,
//!   and no proof reaches into another process. The opened [`IpcMemory`] lends views
//!   tied to it, like an [`AddressRange`](crate::vmm::AddressRange): a view cannot
//!   outlive the opening. Closing it (the drop) waits for this context's work first
//!   (`cuIpcCloseMemHandle`, like `cuMemUnmap`, does not).
//! - **Events** are the typed kind [`Interprocess`](crate::event::Interprocess)
//!   (`CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING`): only such an event has a
//!   handle, and an opened handle is such an event again
//!   ([`CurrentContext::open_ipc_event`](crate::CurrentContext::open_ipc_event), also
//!   `unsafe`: NVIDIA makes its use undefined once the exporter destroys its event).
//!   Ordering with the other process — record there, wait here — is the program's
//!   protocol; the crate orders this process's work only.
//! - **One opening per handle.** A handle open here already, in any context, is
//!   refused (`AlreadyMapped`): two openings would be two exclusive views of the same
//!   bytes.
//!
//! - **Pools** travel the same way: a shareable pool's file descriptor
//!   ([`MemoryPool::export_fd`](crate::pool::MemoryPool::export_fd)) and each
//!   allocation's [`PoolPointer`]
//!   ([`StreamBuffer::pool_pointer`](crate::pool::StreamBuffer::pool_pointer));
//!   importing either is `unsafe`
//!   ([`CurrentContext::import_memory_pool`](crate::CurrentContext::import_memory_pool),
//!   [`ImportedPool::import`]), and an [`ImportedBuffer`] borrows its pool.
//!
//! What the crate cannot know, and the docs of the `unsafe` call state as its
//! contract: when the exporter frees or writes the memory. Data written by the other
//! process while a kernel here reads it is a race the program's protocol (events)
//! must prevent; it corrupts values, never this process's host memory.

mod event;
mod memory;

pub use memory::IpcMemory;
pub use pool::{ImportedBuffer, ImportedPool, PoolPointer};

use crate::sys::CUdeviceptr;

/// A handle open in this process: the driver library (the address of the driver
/// function that opened it, the same for every [`Driver`](crate::Driver) value of one
/// library) and the handle's bytes.
type Key = (usize, [u8; 64]);

/// A handle of another process open in this one, and where it is mapped.
struct Entry {
    key: Key,
    ptr: CUdeviceptr,
    size: usize,
}

impl Entry {
    /// [`CudaError::AlreadyMapped`] naming its addresses.
    fn already(&self) -> crate::CudaError {
        crate::CudaError::AlreadyMapped {
            start: self.ptr as usize,
            end: (self.ptr as usize).saturating_add(self.size),
        }
    }
}

/// The handles of other processes open in this one (memory handles and pool
/// pointers): a second opening of one is refused. The lock is never held across a
/// driver call.
fn opened() -> std::sync::MutexGuard<'static, Vec<Entry>> {
    static OPEN: std::sync::Mutex<Vec<Entry>> = std::sync::Mutex::new(Vec::new());
    OPEN.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Refuses `key` if it is open here already, before the driver is asked.
fn refuse_open(key: &Key) -> Result<(), crate::CudaError> {
    match opened().iter().find(|e| e.key == *key) {
        Some(e) => Err(e.already()),
        None => Ok(()),
    }
}

/// Enters a fresh opening — unless its key, or its address, is open here already
/// (another thread opened the same handle meanwhile, or other bytes named the same
/// allocation and the driver handed back the same address): then the caller undoes
/// its own opening and returns the error.
fn enter(entry: Entry) -> Result<(), crate::CudaError> {
    let mut open = opened();
    let clash = |e: &&Entry| {
        e.key == entry.key || (e.ptr <= entry.ptr && entry.ptr - e.ptr < e.size.max(1) as u64)
    };
    if let Some(e) = open.iter().find(clash) {
        return Err(e.already());
    }
    open.push(entry);
    Ok(())
}

/// Forgets an opening that was closed.
fn leave(key: &Key) {
    opened().retain(|e| e.key != *key);
}

/// A handle to device memory of another process (`CUipcMemHandle`): 64 opaque
/// bytes, made by [`DeviceBuffer::ipc_handle`](crate::memory::DeviceBuffer::ipc_handle) and
/// opened with [`CurrentContext::open_ipc_memory`](crate::CurrentContext::open_ipc_memory).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpcMemHandle([u8; 64]);

/// A handle to an [`Interprocess`](crate::event::Interprocess) event of another
/// process (`CUipcEventHandle`): 64 opaque bytes, opened with
/// [`CurrentContext::open_ipc_event`](crate::CurrentContext::open_ipc_event).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpcEventHandle([u8; 64]);

macro_rules! handle_bytes {
    ($t:ident) => {
        impl $t {
            /// Its bytes, to send to another process.
            pub fn to_bytes(&self) -> [u8; 64] {
                self.0
            }

            /// The handle another process sent as bytes. Any bytes make a handle: the
            /// driver checks them when the handle is opened.
            pub fn from_bytes(bytes: [u8; 64]) -> $t {
                $t(bytes)
            }
        }

        impl core::fmt::Debug for $t {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, concat!(stringify!($t), "("))?;
                for b in &self.0 {
                    write!(f, "{b:02x}")?;
                }
                write!(f, ")")
            }
        }
    };
}
handle_bytes!(IpcMemHandle);
handle_bytes!(IpcEventHandle);

mod pool;
