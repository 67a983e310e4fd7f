// CF17: host memory a graph copies into stays mutably borrowed while the graph lives.
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn build(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let buf = cur.alloc::<u32>(16)?;
    let mut out = vec![0u32; 16];
    let mut graph = cur.create_graph()?;
    graph.add_copy_to_host(&[], &mut out, &buf)?;
    let exec = graph.instantiate()?;
    assert_eq!(out[0], 0);
    drop(exec);
    Ok(())
}

fn main() {}
