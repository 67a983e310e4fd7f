// CF30, the correct form: what is read from a device leaves as plain data.
use oxicuda_driver::nvml::{Nvml, NvmlError};

#[allow(dead_code)]
fn first_bus_id() -> Result<String, NvmlError> {
    let nvml = Nvml::load()?;
    nvml.device_by_index(0)?.pci_bus_id()
}

fn main() {}
