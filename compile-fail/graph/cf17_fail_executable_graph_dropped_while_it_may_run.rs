// CF17: an executable graph stays borrowed until its launch's scope has waited for
// it: it cannot be dropped (releasing what it borrows) while it may run.
use oxicuda_driver::sys::CUstream_flags;
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn launch(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    let graph = cur.create_graph()?;
    let exec = graph.instantiate()?;
    stream.scope(|s| {
        s.launch_graph(&exec)?;
        drop(exec);
        Ok::<(), CudaError>(())
    })??;
    Ok(())
}

fn main() {}
