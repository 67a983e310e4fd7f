// CF29: a member, and a buffer, belong to one group binding (an invariant brand):
// another group cannot use them.
use oxicuda_driver::peer::PeerGroup;
use oxicuda_driver::{CudaError, PrimaryContext};

#[allow(dead_code)]
fn mixed(a: &[PrimaryContext], b: &[PrimaryContext]) -> Result<(), CudaError> {
    PeerGroup::bind(a, |g1| -> Result<(), CudaError> {
        let m1 = g1.member(0).unwrap();
        PeerGroup::bind(b, |g2| -> Result<(), CudaError> {
            let _buf = g2.alloc::<f32>(m1, 4)?;
            Ok(())
        })?
    })?
}

fn main() {}
