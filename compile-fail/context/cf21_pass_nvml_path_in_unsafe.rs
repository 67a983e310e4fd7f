// CF21, the correct form: the caller vouches for the library it names.
use oxicuda_driver::nvml::Nvml;

fn main() {
    // SAFETY: (in a real program) the path is NVIDIA's NVML library.
    let r = unsafe { Nvml::load_from("/nonexistent/libnvidia-ml.so.1") };
    assert!(r.is_err());
}
