// CF32: a kernel with raw pointer parameters that no `Len` bounds has no safe launch:
// the compiler points to `launch_unchecked`.
use oxicuda_driver::launch::{Ptr, PtrMut};
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;

#[allow(dead_code)]
fn go(k: &Function<'_, (Ptr<f32>, PtrMut<f32>, u32)>, s: &Stream<'_>, a: &DeviceBuffer<'_, f32>, b: &mut DeviceBuffer<'_, f32>) {
    let _ = k.launch(s, 1, 32, 0, (a, b, 32u32));
}

fn main() {}
