// CF17: a graph that uses a device buffer cannot outlive it.
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn build(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let buf = cur.alloc::<u32>(16)?;
    let mut graph = cur.create_graph()?;
    graph.add_fill(&[], &buf, 0u32)?;
    drop(buf);
    let exec = graph.instantiate()?;
    drop(exec);
    Ok(())
}

fn main() {}
