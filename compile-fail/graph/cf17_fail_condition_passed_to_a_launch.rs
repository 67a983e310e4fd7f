// CF17: a conditional node's handle is an argument of its graph's kernel nodes only,
// never of an ordinary launch (nor can one be made from a number).
use oxicuda_driver::graph::{ConditionalHandle, ConditionalKind};
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn launch(
    cur: &CurrentContext<'_>,
    set: &Function<'_, (ConditionalHandle, u32)>,
    stream: &Stream<'_>,
) -> Result<(), CudaError> {
    let mut graph = cur.create_graph()?;
    let (_node, handle, _body) = graph.add_conditional(&[], ConditionalKind::If, None)?;
    set.launch(stream, 1, 1, 0, (handle, 1u32))
}

fn main() {}
