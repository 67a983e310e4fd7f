// CF8/CF9/CF10/CF32 twin: pointer parameters take device memory of their element type,
// one mutable borrow per buffer; with one `Len` the launch is safe, without one it is
// `launch_unchecked`.
use oxicuda_driver::graph::Graph;
use oxicuda_driver::launch::{Len, Ptr, PtrMut};
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;

#[allow(dead_code)]
fn go<'a>(
    k: &Function<'_, (Ptr<f32>, PtrMut<f32>, Len<i32>)>,
    raw: &Function<'_, (Ptr<f32>, PtrMut<f32>, i32)>,
    s: &Stream<'_>,
    a: &DeviceBuffer<'a, f32>,
    b: &mut DeviceBuffer<'a, f32>,
) {
    let _ = k.launch(s, 1, 32, 0, (a, &mut *b, 32));
    let _ = k.launch(s, 1, 32, 0, (a.as_slice(), b.as_mut_slice(), 32));
    // SAFETY: (not run) the kernel would stay inside both views.
    let _ = unsafe { raw.launch_unchecked(s, 1, 32, 0, (a, b, 32)) };
}

#[allow(dead_code)]
fn node<'g>(
    g: &mut Graph<'g>,
    k: &'g Function<'_, (Ptr<f32>, PtrMut<f32>, Len<u32>)>,
    raw: &'g Function<'_, (Ptr<f32>, PtrMut<f32>, u32)>,
    a: &'g DeviceBuffer<'_, f32>,
    b: &'g DeviceBuffer<'_, f32>,
) {
    let _ = g.add_kernel(&[], k, 1, 32, 0, (a, b, 32u32));
    // SAFETY: (not run) the kernel would stay inside both views.
    let _ = unsafe { g.add_kernel_unchecked(&[], raw, 1, 32, 0, (a, b, 32u32)) };
}

fn main() {}
