// CF25 twin: the linked module, and a library kernel's function, are used inside the
// binding.
use oxicuda_driver::launch::In;
use oxicuda_driver::link::LinkInput;
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::{Context, Driver};

#[allow(dead_code)]
fn inside(driver: &'static Driver, ctx: &Context, a: &str, b: &str) {
    let lib = driver.load_library(a.as_bytes(), &JitOptions::default()).unwrap();
    // SAFETY: not reached at run time.
    let k = unsafe { lib.kernel::<(In<f32>,)>("k") }.unwrap();
    let _ = ctx.bind(|cur| {
        let mut linker = cur.linker(&JitOptions::default()).unwrap();
        linker.add(LinkInput::Ptx { name: "a", text: a }).unwrap();
        linker.add(LinkInput::Ptx { name: "b", text: b }).unwrap();
        let module = linker.complete().unwrap();
        let _ = module.raw();
        let f = k.function(cur).unwrap();
        let _ = f.raw();
    });
}

fn main() {}
