// CF17: a graph's buffer handle is an argument of that graph's kernel nodes only, not
// of a launch on a stream (which would run outside the graph's order).
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn launch(
    cur: &CurrentContext<'_>,
    f: &Function<'_, (In<f32>, Out<f32>)>,
    stream: &Stream<'_>,
) -> Result<(), CudaError> {
    let mut graph = cur.create_graph()?;
    let x = graph.add_buffer(cur.alloc::<f32>(16)?);
    let mut y = cur.alloc::<f32>(16)?;
    f.launch(stream, 1, 16, 0, (x, &mut y))
}

fn main() {}
