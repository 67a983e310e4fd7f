// CF8: a host reference is no argument for a raw pointer parameter.
use oxicuda_driver::launch::{Len, Ptr, PtrMut};
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;

#[allow(dead_code)]
fn go(k: &Function<'_, (Ptr<f32>, PtrMut<f32>, Len<i32>)>, s: &Stream<'_>, host: &[f32], b: &mut DeviceBuffer<'_, f32>) {
    let _ = k.launch(s, 1, 32, 0, (host, b, 32));
}

fn main() {}
