// CF10 twin: the halves of a split do not overlap, so both may be written by one launch.
use oxicuda_driver::launch::Out;
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;

#[allow(dead_code)]
fn go(k: &Function<'_, (Out<f32>, Out<f32>)>, s: &Stream<'_>, b: &mut DeviceBuffer<'_, f32>) {
    if let Ok((lo, hi)) = b.as_mut_slice().split_at(16) {
        let _ = k.launch(s, 1, 32, 0, (lo, hi));
    }
}

fn main() {}
