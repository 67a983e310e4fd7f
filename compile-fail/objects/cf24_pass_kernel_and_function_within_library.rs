// CF24 twin: the kernel and its function are used while the library lives; the
// function may outlive the `Kernel` value.
use oxicuda_driver::launch::In;
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::{Context, Driver};

#[allow(dead_code)]
fn within(driver: &'static Driver, ctx: &Context, ptx: &str) {
    let lib = driver.load_library(ptx.as_bytes(), &JitOptions::default()).unwrap();
    let _ = ctx.bind(|cur| {
        let f = {
            // SAFETY: not reached at run time.
            let k = unsafe { lib.kernel::<(In<f32>,)>("k") }.unwrap();
            k.function(cur).unwrap()
        };
        let _ = f.raw();
    });
    drop(lib);
}

fn main() {}
