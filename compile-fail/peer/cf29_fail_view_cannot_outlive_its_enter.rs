// CF29: a kernel view of a group buffer is checked for one `enter` and ends with it:
// after the enter, the context that checked it is no longer current.
use oxicuda_driver::peer::PeerGroup;
use oxicuda_driver::{CudaError, PrimaryContext};

#[allow(dead_code)]
fn escape(ctxs: &[PrimaryContext]) -> Result<(), CudaError> {
    PeerGroup::bind(ctxs, |g| -> Result<(), CudaError> {
        let m = g.member(0).unwrap();
        let b = g.alloc::<f32>(m, 4)?;
        let _view = g.enter(m, |e| b.view(e))??;
        Ok(())
    })?
}

fn main() {}
