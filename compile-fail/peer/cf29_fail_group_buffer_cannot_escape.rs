// CF29: a group buffer borrows its group binding; it cannot outlive it.
use oxicuda_driver::peer::PeerGroup;
use oxicuda_driver::{CudaError, PrimaryContext};

#[allow(dead_code)]
fn escape(ctxs: &[PrimaryContext]) -> Result<(), CudaError> {
    let _leaked = PeerGroup::bind(ctxs, |g| {
        let m = g.member(0).unwrap();
        g.alloc::<f32>(m, 4)
    })?;
    Ok(())
}

fn main() {}
