// CF17: while an executable graph that uses a buffer exists, the host cannot write it.
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn build(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let mut buf = cur.alloc::<u32>(16)?;
    let mut graph = cur.create_graph()?;
    graph.add_fill(&[], &buf, 0u32)?;
    let exec = graph.instantiate()?;
    buf.copy_from_host(&[1; 16])?;
    drop(exec);
    Ok(())
}

fn main() {}
