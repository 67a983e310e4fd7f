// CF17: a conditional node's body is a graph of another kind: it cannot be swapped
// with (or replaced by) a graph the caller owns, so it never leaves its parent.
use oxicuda_driver::graph::ConditionalKind;
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn build(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let mut graph = cur.create_graph()?;
    let mut mine = cur.create_graph()?;
    let (_node, _handle, mut body) = graph.add_conditional(&[], ConditionalKind::If, Some(true))?;
    std::mem::swap(&mut body, &mut mine);
    Ok(())
}

fn main() {}
