// CF17 twin: the body is built, then the graph is instantiated.
use oxicuda_driver::graph::ConditionalKind;
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn build(cur: &CurrentContext<'_>) -> Result<(), CudaError> {
    let mut graph = cur.create_graph()?;
    {
        let (_node, _handle, mut body) =
            graph.add_conditional(&[], ConditionalKind::If, Some(true))?;
        body.add_empty(&[])?;
    }
    let exec = graph.instantiate()?;
    drop(exec);
    Ok(())
}

fn main() {}
