// CF34 twin: views are used, then dropped, and only then is the memory unmapped
// (and handed back).
use oxicuda_driver::CurrentContext;

#[allow(dead_code)]
fn grow_and_shrink(cur: &CurrentContext<'_>) -> Result<Vec<f32>, oxicuda_driver::CudaError> {
    let g = cur.granularity()?.minimum();
    let mut range = cur.reserve_addresses(4 * g)?;
    range.map(0, cur.create_physical(g)?)?;
    range.slice_mut::<f32>(..16)?.fill(1.0)?;
    let host = range.slice::<f32>(..16)?.to_vec()?;
    let physical = range.unmap(0)?;
    range.map(g, physical)?;
    Ok(host)
}

fn main() {}
