// CF17: a buffer handed to a graph (`add_buffer`) is the graph's: the host reaches it
// only through the graph.
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn build(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let buf = cur.alloc::<u32>(16)?;
    let mut graph = cur.create_graph()?;
    let _x = graph.add_buffer(buf);
    let _ = buf.to_vec()?;
    Ok(())
}

fn main() {}
