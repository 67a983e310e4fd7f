// CF12: copies between buffers of different element types fail.
use oxicuda_driver::memory::DeviceBuffer;

#[allow(dead_code)]
fn copy(dst: &mut DeviceBuffer<'_, f32>, src: &DeviceBuffer<'_, u32>) {
    let _ = dst.copy_from(src);
}

fn main() {}
