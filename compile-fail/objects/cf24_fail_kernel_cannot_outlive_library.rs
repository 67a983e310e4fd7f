// CF24: a library `Kernel` cannot outlive its `Library`.
use oxicuda_driver::launch::In;
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::Driver;

#[allow(dead_code)]
fn outlive(driver: &'static Driver, ptx: &str) {
    let lib = driver.load_library(ptx.as_bytes(), &JitOptions::default()).unwrap();
    // SAFETY: not reached at run time; the point is the borrow.
    let k = unsafe { lib.kernel::<(In<f32>,)>("k") }.unwrap();
    drop(lib);
    let _ = k.raw();
}

fn main() {}
