// CF29 (as CF3): while another context is pushed over an entered member, its token
// is borrowed, so no view of a group buffer can be checked against it.
use oxicuda_driver::peer::PeerGroup;
use oxicuda_driver::{Context, CudaError, PrimaryContext};

#[allow(dead_code)]
fn pushed(ctxs: &[PrimaryContext], other: &Context) -> Result<(), CudaError> {
    PeerGroup::bind(ctxs, |g| -> Result<(), CudaError> {
        let m = g.member(0).unwrap();
        let b = g.alloc::<f32>(m, 4)?;
        g.enter(m, |e| {
            e.push(other, |_inner| {
                let _v = b.view(e);
            })
        })??;
        Ok(())
    })?
}

fn main() {}
