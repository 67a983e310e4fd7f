// CF10: ... nor mutably and shared.
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;

#[allow(dead_code)]
fn go(k: &Function<'_, (In<f32>, Out<f32>)>, s: &Stream<'_>, b: &mut DeviceBuffer<'_, f32>) {
    let _ = k.launch(s, 1, 32, 0, (&*b, &mut *b));
}

fn main() {}
