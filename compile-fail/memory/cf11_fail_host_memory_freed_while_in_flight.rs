// CF11: ... nor freed.
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::stream::Stream;

#[allow(dead_code)]
fn free(stream: &Stream<'_>, buf: &mut DeviceBuffer<'_, f32>) {
    let host = vec![0f32; 4];
    let _ = stream.scope(|s| {
        let _ = s.copy_to_device(buf, &host);
        drop(host);
    });
}

fn main() {}
