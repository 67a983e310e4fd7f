// CF25: a library kernel's function cannot outlive the context token it was made in.
use oxicuda_driver::launch::In;
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::{Context, Driver};

#[allow(dead_code)]
fn escape(driver: &'static Driver, ctx: &Context, ptx: &str) {
    let lib = driver.load_library(ptx.as_bytes(), &JitOptions::default()).unwrap();
    // SAFETY: not reached at run time; the point is the borrow.
    let k = unsafe { lib.kernel::<(In<f32>,)>("k") }.unwrap();
    let f = ctx.bind(|cur| k.function(cur).unwrap()).unwrap();
    let _ = f.raw();
}

fn main() {}
