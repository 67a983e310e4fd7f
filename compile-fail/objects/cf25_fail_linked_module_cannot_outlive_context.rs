// CF25: the module a linker completes cannot outlive the context token.
use oxicuda_driver::link::LinkInput;
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::Context;

#[allow(dead_code)]
fn escape(ctx: &Context, a: &str, b: &str) {
    let module = ctx
        .bind(|cur| {
            let mut linker = cur.linker(&JitOptions::default()).unwrap();
            linker.add(LinkInput::Ptx { name: "a", text: a }).unwrap();
            linker.add(LinkInput::Ptx { name: "b", text: b }).unwrap();
            linker.complete().unwrap()
        })
        .unwrap();
    let _ = module.raw();
}

fn main() {}
