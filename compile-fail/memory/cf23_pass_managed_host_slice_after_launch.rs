// CF23 twin: the host slice is taken after the launch (`host` waits for the kernel)
// and after the graph is gone.
use oxicuda_driver::CurrentContext;
use oxicuda_driver::launch::Out;
use oxicuda_driver::managed::ManagedBuffer;
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;

#[allow(dead_code)]
fn ordered(
    cur: &CurrentContext<'_>,
    kernel: &Function<'_, (Out<u32>,)>,
    stream: &Stream<'_>,
    buffer: &mut ManagedBuffer<'_, u32>,
) -> Result<u32, oxicuda_driver::CudaError> {
    kernel.launch(stream, 1, 32, 0, (&mut *buffer,))?;
    {
        let mut graph = cur.create_graph()?;
        graph.add_kernel(&[], kernel, 1, 32, 0, (&*buffer,))?;
    }
    let host = buffer.host()?;
    host[0] += 1;
    Ok(host[0])
}

fn main() {}
