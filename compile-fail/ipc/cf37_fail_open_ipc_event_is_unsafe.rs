// CF37: opening another process's event is `unsafe`: NVIDIA makes any use of it
// undefined once the exporter destroys its event, which no proof here can see.
use oxicuda_driver::CurrentContext;
use oxicuda_driver::ipc::IpcEventHandle;

fn open(cur: &CurrentContext<'_>, handle: &IpcEventHandle) -> Result<(), oxicuda_driver::CudaError> {
    let _theirs = cur.open_ipc_event(handle)?;
    Ok(())
}

fn main() {}
