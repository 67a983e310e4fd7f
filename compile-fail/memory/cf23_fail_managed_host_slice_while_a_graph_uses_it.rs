// CF23: a graph holds the buffer for its whole life (its kernel nodes may write
// through it), so no host slice of it exists meanwhile.
use oxicuda_driver::CurrentContext;
use oxicuda_driver::launch::Out;
use oxicuda_driver::managed::ManagedBuffer;
use oxicuda_driver::module::Function;

fn racy(
    cur: &CurrentContext<'_>,
    kernel: &Function<'_, (Out<u32>,)>,
    buffer: &mut ManagedBuffer<'_, u32>,
) -> Result<(), oxicuda_driver::CudaError> {
    let mut graph = cur.create_graph()?;
    graph.add_kernel(&[], kernel, 1, 32, 0, (&*buffer,))?;
    let host = buffer.host()?;
    host[0] = 1;
    drop(graph);
    Ok(())
}

fn main() {
    let _ = racy;
}
