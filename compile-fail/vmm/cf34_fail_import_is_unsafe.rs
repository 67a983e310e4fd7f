// CF34: importing physical memory from a file descriptor is `unsafe`: other mappings
// of the same memory are outside the crate's sight.
use oxicuda_driver::CurrentContext;
use std::os::fd::BorrowedFd;

fn import(cur: &CurrentContext<'_>, fd: BorrowedFd<'_>) -> Result<(), oxicuda_driver::CudaError> {
    let _memory = cur.import_physical(fd, cur.granularity()?.minimum())?;
    Ok(())
}

fn main() {}
