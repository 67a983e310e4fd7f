// CF37: a view of another process's memory cannot outlive its opening: dropping the
// `IpcMemory` closes the mapping.
use oxicuda_driver::CurrentContext;
use oxicuda_driver::ipc::IpcMemHandle;

fn keep<'c>(
    cur: &'c CurrentContext<'_>,
    handle: &IpcMemHandle,
) -> Result<oxicuda_driver::memory::DeviceSlice<'c, f32>, oxicuda_driver::CudaError> {
    // SAFETY: (for the example) the exporter keeps the memory alive.
    let theirs = unsafe { cur.open_ipc_memory(handle)? };
    let view = theirs.slice::<f32>(..16)?;
    drop(theirs);
    Ok(view)
}

fn main() {}
