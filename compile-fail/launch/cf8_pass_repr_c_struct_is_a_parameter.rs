// CF8 twin: device buffers and views, numbers, and `#[repr(C)]` structs that opt in
// through the `unsafe` marker trait `DeviceCopy` are kernel parameters.
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::memory::{DeviceBuffer, DeviceCopy};
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;

#[derive(Clone, Copy)]
#[repr(C)]
struct Affine {
    scale: f32,
    offset: f32,
}
// SAFETY: two f32s, no padding.
unsafe impl DeviceCopy for Affine {}

#[allow(dead_code)]
fn go(
    k: &Function<'_, (Affine, In<f32>, Out<f32>, u32)>,
    s: &Stream<'_>,
    x: &DeviceBuffer<'_, f32>,
    y: &mut DeviceBuffer<'_, f32>,
) {
    let p = Affine { scale: 2.0, offset: 1.0 };
    let _ = k.launch(s, 1, 32, 0, (p, x.as_slice(), y.as_mut_slice(), 32));
}

fn main() {}
