// CF34: a view of an address range cannot outlive the range (dropping the range
// unmaps its memory and frees its addresses).
use oxicuda_driver::memory::DeviceSlice;
use oxicuda_driver::CurrentContext;

fn escape<'c>(cur: &'c CurrentContext<'_>) -> Result<DeviceSlice<'c, f32>, oxicuda_driver::CudaError> {
    let mut range = cur.reserve_addresses(cur.granularity()?.minimum())?;
    range.map(0, cur.create_physical(cur.granularity()?.minimum())?)?;
    range.slice::<f32>(..16)
}

fn main() {}
