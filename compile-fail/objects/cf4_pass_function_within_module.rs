// CF4 twin: the function is used while its module lives.
use oxicuda_driver::launch::In;
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::Context;

#[allow(dead_code)]
fn within(ctx: &Context, ptx: &str) {
    let _ = ctx.bind(|cur| {
        let module = cur.load_ptx(ptx, &JitOptions::default()).unwrap();
        // SAFETY: not reached at run time.
        let f = unsafe { module.function::<(In<f32>,)>("k") }.unwrap();
        let _ = f.raw();
    });
}

fn main() {}
