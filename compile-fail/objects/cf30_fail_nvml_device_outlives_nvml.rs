// CF30: an NVML device handle is valid only until NVML shuts down (when the `Nvml`
// is dropped): it borrows the `Nvml`.
use oxicuda_driver::nvml::{Nvml, NvmlDevice, NvmlError};

#[allow(dead_code)]
fn first() -> Result<NvmlDevice<'static>, NvmlError> {
    let nvml = Nvml::load()?;
    nvml.device_by_index(0)
}

fn main() {}
