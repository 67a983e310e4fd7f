// CF17: a buffer a graph owns is written through the executable graph only when no
// scope that launched it is open (`buffer_mut` needs it exclusively); inside the
// scope, `copy_to_graph` queues the write in stream order.
use oxicuda_driver::sys::CUstream_flags;
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn replay(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let mut graph = cur.create_graph()?;
    let x = graph.add_buffer(cur.alloc::<u32>(16)?);
    let mut exec = graph.instantiate()?;
    let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    stream.scope(|s| {
        s.launch_graph(&exec)?;
        exec.buffer_mut(x)?.fill(1u32)
    })??;
    Ok(())
}

fn main() {}
