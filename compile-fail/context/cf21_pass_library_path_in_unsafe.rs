// CF21 twin: the caller vouches for the library in `unsafe`.
use oxicuda_driver::DriverOptions;

fn main() {
    // SAFETY: (only built, never loaded) a CUDA driver's path.
    let _ = unsafe { DriverOptions::new().path("/usr/lib/x86_64-linux-gnu/libcuda.so.1") };
}
