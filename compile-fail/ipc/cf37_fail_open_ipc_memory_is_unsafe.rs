// CF37: opening another process's memory is `unsafe`: that the other process keeps
// the allocation alive while it is open here is beyond the crate's proof.
use oxicuda_driver::CurrentContext;
use oxicuda_driver::ipc::IpcMemHandle;

fn open(cur: &CurrentContext<'_>, handle: &IpcMemHandle) -> Result<(), oxicuda_driver::CudaError> {
    let _theirs = cur.open_ipc_memory(handle)?;
    Ok(())
}

fn main() {}
