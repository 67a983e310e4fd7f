// CF34: physical memory is mapped once: `map` takes it, so it cannot be mapped again
// (two views of one byte) nor released while mapped.
use oxicuda_driver::CurrentContext;

fn twice(cur: &CurrentContext<'_>) -> Result<(), oxicuda_driver::CudaError> {
    let g = cur.granularity()?.minimum();
    let mut range = cur.reserve_addresses(2 * g)?;
    let physical = cur.create_physical(g)?;
    range.map(0, physical)?;
    range.map(g, physical)?;
    Ok(())
}

fn main() {}
