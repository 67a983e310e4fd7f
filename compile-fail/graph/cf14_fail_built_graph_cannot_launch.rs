// CF14: only an instantiated graph launches; a built graph is not one.
use oxicuda_driver::sys::CUstream_flags;
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn launch(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    let mut graph = cur.create_graph()?;
    graph.add_empty(&[])?;
    stream.scope(|s| s.launch_graph(&graph))??;
    Ok(())
}

fn main() {}
