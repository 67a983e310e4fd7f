// CF17 twin: a graph's own buffers are written between replays — in the scope in
// stream order, or through the executable graph once the scope has returned.
use oxicuda_driver::sys::CUstream_flags;
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn replay(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let mut graph = cur.create_graph()?;
    let x = graph.add_buffer(cur.alloc::<u32>(16)?);
    let mut exec = graph.instantiate()?;
    let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
    let input = [1u32; 16];
    let mut output = [0u32; 16];
    stream.scope(|s| {
        s.copy_to_graph(&exec, x, &input)?;
        s.launch_graph(&exec)?;
        s.copy_from_graph(&exec, x, &mut output)
    })??;
    exec.buffer_mut(x)?.fill(2u32)?;
    Ok(())
}

fn main() {}
