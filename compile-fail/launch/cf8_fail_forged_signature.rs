// CF8: a kernel's signature is a tuple of the crate's parameter kinds — `Signature`
// is sealed, so no layout can be made up.
use oxicuda_driver::launch::Signature;

struct Forged;

impl Signature for Forged {}

fn main() {}
