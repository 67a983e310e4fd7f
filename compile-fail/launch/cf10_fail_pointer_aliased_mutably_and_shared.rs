// CF10: one buffer cannot be passed for a `PtrMut` and a `Ptr` of the same launch.
use oxicuda_driver::launch::{Len, Ptr, PtrMut};
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;

#[allow(dead_code)]
fn go(k: &Function<'_, (Ptr<f32>, PtrMut<f32>, Len<i32>)>, s: &Stream<'_>, b: &mut DeviceBuffer<'_, f32>) {
    let _ = k.launch(s, 1, 32, 0, (&*b, &mut *b, 32));
}

fn main() {}
