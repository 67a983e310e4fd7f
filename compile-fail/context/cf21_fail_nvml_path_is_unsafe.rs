// CF21: loading an NVML library the caller chose runs its code and trusts it to be
// NVML, so naming one is `unsafe`.
use oxicuda_driver::nvml::Nvml;

fn main() {
    let _ = Nvml::load_from("/tmp/libanything.so");
}
