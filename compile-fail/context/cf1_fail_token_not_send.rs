// CF1: `CurrentContext<'ctx>` — the proof that a context is current on this thread — is
// not `Send`.
use oxicuda_driver::CurrentContext;

fn assert_send<T: Send>() {}

fn main() {
    assert_send::<CurrentContext<'static>>();
}
