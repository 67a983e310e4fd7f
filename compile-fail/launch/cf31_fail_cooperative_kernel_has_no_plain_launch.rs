// CF31: a kernel declared cooperative (`Module::cooperative_function`: it synchronises
// its grid, so it is correct only when every block is resident at once) has no plain
// launch, which would take any grid.
use oxicuda_driver::launch::{Cooperative, In, Out};
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;

#[allow(dead_code)]
fn go(
    k: &Function<'_, (In<u32>, Out<u64>), Cooperative>,
    s: &Stream<'_>,
    a: &DeviceBuffer<'_, u32>,
    sum: &mut DeviceBuffer<'_, u64>,
) {
    let _ = k.launch(s, 1 << 20, 256, 0, (a, sum));
}

fn main() {}
