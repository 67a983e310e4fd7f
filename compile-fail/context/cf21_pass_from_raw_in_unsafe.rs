// CF21 twin: the caller vouches for the handle in an `unsafe` block.
use oxicuda_driver::{Context, Driver};
use oxicuda_driver::sys::CUcontext;

#[allow(dead_code)]
fn adopt(driver: &'static Driver, raw: CUcontext) -> Context {
    // SAFETY: the caller owns `raw`, a live context of `driver`.
    unsafe { Context::from_raw(driver, raw) }
}

fn main() {}
