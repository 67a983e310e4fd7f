// CF36: a partition a split made cannot be split again (the driver would refuse it):
// split the SMs of a green context made of it instead.
use oxicuda_driver::Device;
use oxicuda_driver::green::SplitFlags;

fn split_twice(device: &Device) -> Result<(), oxicuda_driver::CudaError> {
    let split = device.sm_resource()?.split(2, 8, SplitFlags::empty())?;
    let _again = split.groups[0].split(2, 4, SplitFlags::empty())?;
    Ok(())
}

fn main() {}
