// CF6/CF7/CF9/CF10 twin: the declared types, arity, element types, one mutable borrow.
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;

#[allow(dead_code)]
fn go<'a>(k: &Function<'_, (In<f32>, Out<f32>, u32)>, s: &Stream<'_>, a: &DeviceBuffer<'a, f32>, b: &mut DeviceBuffer<'a, f32>) {
    let _ = k.launch(s, 1, 32, 0, (a, b, 7u32));
}

fn main() {}
