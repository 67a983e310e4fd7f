// CF37: importing another process's pool allocation is `unsafe`: that the exporter
// keeps the allocation until the import is dropped is beyond the crate's proof.
use oxicuda_driver::ipc::{ImportedPool, PoolPointer};

fn import(pool: &ImportedPool<'_>, pointer: &PoolPointer) -> Result<(), oxicuda_driver::CudaError> {
    let _theirs = pool.import::<f32>(pointer, 16)?;
    Ok(())
}

fn main() {}
