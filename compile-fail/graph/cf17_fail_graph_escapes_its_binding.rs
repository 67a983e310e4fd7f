// CF17: a graph cannot leave the binding of its context.
use oxicuda_driver::{Context, CudaError};

#[allow(dead_code)]
fn escape(ctx: &Context) -> Result<(), CudaError> {
    let graph = ctx.bind(|cur| cur.create_graph())??;
    drop(graph);
    Ok(())
}

fn main() {}
