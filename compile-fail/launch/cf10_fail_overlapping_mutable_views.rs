// CF10: two mutable views of the same buffer cannot exist at once, so cannot be
// passed to one launch.
use oxicuda_driver::launch::Out;
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;

#[allow(dead_code)]
fn go(k: &Function<'_, (Out<f32>, Out<f32>)>, s: &Stream<'_>, b: &mut DeviceBuffer<'_, f32>) {
    let first = b.as_mut_slice();
    let second = b.as_mut_slice();
    let _ = k.launch(s, 1, 32, 0, (first, second));
}

fn main() {}
