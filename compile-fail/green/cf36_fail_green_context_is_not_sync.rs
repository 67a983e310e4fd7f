// CF36: a green context is current on one thread at a time: its handle may move to
// another thread (`Send`), but not be shared by two (`!Sync`).
fn sync<T: Sync>() {}

fn main() {
    sync::<oxicuda_driver::green::GreenContext>();
}
