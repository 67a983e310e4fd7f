// CF7: wrong arity fails.
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;

#[allow(dead_code)]
fn go(k: &Function<'_, (In<f32>, Out<f32>, u32)>, s: &Stream<'_>, a: &DeviceBuffer<'_, f32>, b: &mut DeviceBuffer<'_, f32>) {
    let _ = k.launch(s, 1, 32, 0, (a, b));
}

fn main() {}
