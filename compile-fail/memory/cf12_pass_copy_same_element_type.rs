// CF12 twin: same element type.
use oxicuda_driver::memory::DeviceBuffer;

#[allow(dead_code)]
fn copy(dst: &mut DeviceBuffer<'_, f32>, src: &DeviceBuffer<'_, f32>) {
    let _ = dst.copy_from(src);
}

fn main() {}
