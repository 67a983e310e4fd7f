// CF31: a kernel declared cooperative is no graph kernel node (a node is launched
// without the cooperative attribute, so nothing makes its blocks co-resident).
use oxicuda_driver::launch::{Cooperative, In, Out};
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::module::Function;
use oxicuda_driver::{CudaError, CurrentContext};

#[allow(dead_code)]
fn go(
    cur: &CurrentContext<'_>,
    k: &Function<'_, (In<u32>, Out<u64>), Cooperative>,
    a: &DeviceBuffer<'_, u32>,
    sum: &DeviceBuffer<'_, u64>,
) -> Result<(), CudaError> {
    let mut graph = cur.create_graph()?;
    graph.add_kernel(&[], k, 1 << 20, 256, 0, (a, sum))?;
    Ok(())
}

fn main() {}
