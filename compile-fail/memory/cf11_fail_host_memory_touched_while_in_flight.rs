// CF11: host memory written by an in-flight asynchronous copy cannot be touched ...
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::stream::Stream;

#[allow(dead_code)]
fn touch(stream: &Stream<'_>, buf: &DeviceBuffer<'_, f32>) {
    let mut host = vec![0f32; 4];
    let _ = stream.scope(|s| {
        let _ = s.copy_to_host(&mut host, buf);
        host[0] = 1.0;
    });
}

fn main() {}
