// CF15: instantiating consumes the graph: no node can be added afterwards.
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn build(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let mut graph = cur.create_graph()?;
    let first = graph.add_empty(&[])?;
    let exec = graph.instantiate()?;
    graph.add_empty(&[first])?;
    drop(exec);
    Ok(())
}

fn main() {}
