// CF37: an allocation imported from another process's pool cannot outlive the
// imported pool: dropping the pool releases what it maps.
use oxicuda_driver::CurrentContext;
use oxicuda_driver::ipc::PoolPointer;
use std::os::fd::BorrowedFd;

fn import(
    cur: &CurrentContext<'_>,
    fd: BorrowedFd<'_>,
    pointer: &PoolPointer,
) -> Result<Vec<f32>, oxicuda_driver::CudaError> {
    // SAFETY: (for the example) the exporter keeps its pool and allocation alive.
    let pool = unsafe { cur.import_memory_pool(fd)? };
    // SAFETY: as above.
    let theirs = unsafe { pool.import::<f32>(pointer, 16)? };
    drop(pool);
    theirs.to_vec()
}

fn main() {}
