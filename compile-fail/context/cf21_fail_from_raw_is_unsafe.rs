// CF21: making a safe wrapper from a raw handle is `unsafe`.
use oxicuda_driver::{Context, Driver};
use oxicuda_driver::sys::CUcontext;

#[allow(dead_code)]
fn adopt(driver: &'static Driver, raw: CUcontext) -> Context {
    Context::from_raw(driver, raw)
}

fn main() {}
