// CF28: a map of shared memory (`&buffer`, a `DeviceSlice`) is read-only: it cannot be
// passed for a parameter through which the kernel may store (`TensorMapOut`).
use oxicuda_driver::launch::Out;
use oxicuda_driver::module::Function;
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::stream::Stream;
use oxicuda_driver::tensor_map::{ReadOnly, TensorMap, TensorMapOut};

#[allow(dead_code)]
fn go(
    k: &Function<'_, (TensorMapOut, Out<u64>)>,
    s: &Stream<'_>,
    map: &mut TensorMap<'_, ReadOnly>,
    out: &mut DeviceBuffer<'_, u64>,
) {
    let _ = k.launch(s, 1, 32, 0, (map, out));
}

fn main() {}
