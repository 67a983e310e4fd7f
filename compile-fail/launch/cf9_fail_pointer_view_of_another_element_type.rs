// CF9: a view of i32 cannot be passed for a pointer the kernel declares `const float *`.
use oxicuda_driver::launch::{Len, Ptr, PtrMut};
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;

#[allow(dead_code)]
fn go(k: &Function<'_, (Ptr<f32>, PtrMut<f32>, Len<i32>)>, s: &Stream<'_>, a: &DeviceBuffer<'_, i32>, b: &mut DeviceBuffer<'_, f32>) {
    let _ = k.launch(s, 1, 32, 0, (a.as_slice(), b, 32));
}

fn main() {}
