// CF36 twin: a green context of partitions of one split, bound like any context; the
// SMs of the green context split again.
use oxicuda_driver::green::{GreenContext, SplitFlags};
use oxicuda_driver::{CudaError, Device};

#[allow(dead_code)]
fn partitioned(device: &Device) -> Result<Vec<u32>, CudaError> {
    let split = device.sm_resource()?.split(2, 8, SplitFlags::empty())?;
    let green = GreenContext::new(device, &split.groups)?;
    let host = green.bind(|cur| -> Result<Vec<u32>, CudaError> {
        cur.alloc_from(&[1u32, 2, 3])?.to_vec()
    })??;
    let _halves = green.sm_resource()?.split(2, 8, SplitFlags::empty())?;
    Ok(host)
}

fn main() {}
