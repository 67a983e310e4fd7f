// CF1: ... nor `Sync`.
use oxicuda_driver::CurrentContext;

fn assert_sync<T: Sync>() {}

fn main() {
    assert_sync::<CurrentContext<'static>>();
}
