// CF24: a `Function` from a library kernel cannot outlive the `Library`, even once
// the `Kernel` it came from is gone.
use oxicuda_driver::launch::In;
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::{Context, Driver};

#[allow(dead_code)]
fn outlive(driver: &'static Driver, ctx: &Context, ptx: &str) {
    let lib = driver.load_library(ptx.as_bytes(), &JitOptions::default()).unwrap();
    let _ = ctx.bind(|cur| {
        let f = {
            // SAFETY: not reached at run time; the point is the borrow.
            let k = unsafe { lib.kernel::<(In<f32>,)>("k") }.unwrap();
            k.function(cur).unwrap()
        };
        drop(lib);
        let _ = f.raw();
    });
}

fn main() {}
