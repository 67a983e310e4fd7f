// CF15 twin: every node is added before the graph is instantiated.
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn build(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let mut graph = cur.create_graph()?;
    let first = graph.add_empty(&[])?;
    graph.add_empty(&[first])?;
    let exec = graph.instantiate()?;
    drop(exec);
    Ok(())
}

fn main() {}
