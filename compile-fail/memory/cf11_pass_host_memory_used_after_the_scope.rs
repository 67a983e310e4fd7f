// CF11 twin: the host memory is used once the scope has synchronised.
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::stream::Stream;

#[allow(dead_code)]
fn after(stream: &Stream<'_>, buf: &DeviceBuffer<'_, f32>) -> f32 {
    let mut host = vec![0f32; 4];
    let _ = stream.scope(|s| s.copy_to_host(&mut host, buf));
    host[0]
}

fn main() {}
