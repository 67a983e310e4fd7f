// CF37: only an event created interprocess has an IPC handle (the driver refuses any
// other): an ordinary event's kind has no `ipc_handle`.
use oxicuda_driver::CurrentContext;
use oxicuda_driver::event::NoTiming;

fn export(cur: &CurrentContext<'_>) -> Result<(), oxicuda_driver::CudaError> {
    let event = cur.create_event::<NoTiming>()?;
    let _handle = event.ipc_handle()?;
    Ok(())
}

fn main() {}
