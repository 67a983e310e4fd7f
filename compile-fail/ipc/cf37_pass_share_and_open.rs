// CF37 twin: a buffer and an interprocess event are exported; an opened buffer's
// views live inside the opening; an opened event is waited for in stream order.
use oxicuda_driver::CurrentContext;
use oxicuda_driver::event::Interprocess;
use oxicuda_driver::ipc::{IpcEventHandle, IpcMemHandle, PoolPointer};
use oxicuda_driver::sys::CUstream_flags;

#[allow(dead_code)]
fn export(cur: &CurrentContext<'_>) -> Result<(IpcMemHandle, IpcEventHandle), oxicuda_driver::CudaError> {
    let buf = cur.alloc_from(&[1.0f32; 16])?;
    let event = cur.create_event::<Interprocess>()?;
    Ok((buf.ipc_handle()?, event.ipc_handle()?))
}

#[allow(dead_code)]
fn open(
    cur: &CurrentContext<'_>,
    mem: &IpcMemHandle,
    event: &IpcEventHandle,
) -> Result<Vec<f32>, oxicuda_driver::CudaError> {
    let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    // SAFETY: (for the example) the exporter keeps its event and stays alive.
    stream.wait(&unsafe { cur.open_ipc_event(event)? })?;
    // SAFETY: (for the example) the exporter keeps the memory alive.
    let theirs = unsafe { cur.open_ipc_memory(mem)? };
    let mut mine = cur.alloc::<f32>(16)?;
    stream.copy(&mut mine, &theirs.slice::<f32>(..16)?)?;
    mine.to_vec()
}

fn main() {}

#[allow(dead_code)]
fn share_a_pool(cur: &CurrentContext<'_>) -> Result<(std::os::fd::OwnedFd, PoolPointer), oxicuda_driver::CudaError> {
    let pool = cur.create_shareable_memory_pool(None)?;
    let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    let buf = stream.alloc_from_pool::<f32>(&pool, 16)?;
    Ok((pool.export_fd()?, buf.pool_pointer()?))
}

#[allow(dead_code)]
fn import_from_a_pool(
    cur: &CurrentContext<'_>,
    fd: std::os::fd::BorrowedFd<'_>,
    pointer: &PoolPointer,
) -> Result<Vec<f32>, oxicuda_driver::CudaError> {
    // SAFETY: (for the example) the exporter keeps its pool and allocation alive.
    let pool = unsafe { cur.import_memory_pool(fd)? };
    // SAFETY: as above.
    let theirs = unsafe { pool.import::<f32>(pointer, 16)? };
    theirs.to_vec()
}
