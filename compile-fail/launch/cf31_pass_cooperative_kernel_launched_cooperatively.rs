// CF31 twin: a kernel declared cooperative launches cooperatively (the grid is checked
// to be resident at once), with `launch_cooperative` or a cooperative `LaunchConfig`;
// a plain kernel launches either way.
use oxicuda_driver::launch::{Cooperative, In, Out};
use oxicuda_driver::launch_config::LaunchConfig;
use oxicuda_driver::memory::DeviceBuffer;
use oxicuda_driver::module::Function;
use oxicuda_driver::stream::Stream;
use oxicuda_driver::CudaError;

#[allow(dead_code)]
fn go(
    k: &Function<'_, (In<u32>, Out<u64>), Cooperative>,
    plain: &Function<'_, (In<u32>, Out<u64>)>,
    s: &Stream<'_>,
    a: &DeviceBuffer<'_, u32>,
    sum: &mut DeviceBuffer<'_, u64>,
) -> Result<(), CudaError> {
    k.launch_cooperative(s, 8, 256, 0, (a, &mut *sum))?;
    k.launch_with(s, &LaunchConfig::new(8, 256).cooperative(true), (a, &mut *sum))?;
    plain.launch_cooperative(s, 8, 256, 0, (a, &mut *sum))?;
    plain.launch(s, 1 << 20, 256, 0, (a, sum))
}

fn main() {}
