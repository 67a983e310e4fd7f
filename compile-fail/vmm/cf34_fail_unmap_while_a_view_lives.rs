// CF34: memory mapped into an address range cannot be unmapped while a view of it
// lives (`unmap` borrows the range mutably; a view borrows it).
use oxicuda_driver::vmm::AddressRange;

fn unmap_under_a_view(range: &mut AddressRange<'_>) -> Result<Vec<f32>, oxicuda_driver::CudaError> {
    let view = range.slice::<f32>(..16)?;
    let _physical = range.unmap(0)?;
    view.to_vec()
}

fn main() {}
