// CF17: a conditional node's body belongs to its graph: it cannot outlive it, and the
// graph cannot be instantiated while the body is still being built.
use oxicuda_driver::graph::ConditionalKind;
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn build(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let mut graph = cur.create_graph()?;
    let (_node, _handle, mut body) = graph.add_conditional(&[], ConditionalKind::If, Some(true))?;
    let exec = graph.instantiate()?;
    body.add_empty(&[])?;
    drop(exec);
    Ok(())
}

fn main() {}
