// CF4: a `Function` cannot outlive its `Module`.
use oxicuda_driver::launch::In;
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::Context;

#[allow(dead_code)]
fn outlive(ctx: &Context, ptx: &str) {
    let _ = ctx.bind(|cur| {
        let module = cur.load_ptx(ptx, &JitOptions::default()).unwrap();
        // SAFETY: not reached at run time; the point is the borrow.
        let f = unsafe { module.function::<(In<f32>,)>("k") }.unwrap();
        drop(module);
        let _ = f.raw();
    });
}

fn main() {}
