// CF21: loading a library the caller chose runs its code and trusts it to be a CUDA
// driver, so naming one is `unsafe`.
use oxicuda_driver::DriverOptions;

fn main() {
    let _ = DriverOptions::new().path("/tmp/libanything.so");
}
