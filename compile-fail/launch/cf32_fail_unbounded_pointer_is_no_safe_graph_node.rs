// CF32: nor a safe graph kernel node.
use oxicuda_driver::graph::Graph;
use oxicuda_driver::launch::{Ptr, PtrMut};
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::module::Function;

#[allow(dead_code)]
fn go<'g>(g: &mut Graph<'g>, k: &'g Function<'_, (Ptr<f32>, PtrMut<f32>, u32)>, a: &'g DeviceBuffer<'_, f32>, b: &'g DeviceBuffer<'_, f32>) {
    let _ = g.add_kernel(&[], k, 1, 32, 0, (a, b, 32u32));
}

fn main() {}
