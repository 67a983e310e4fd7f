//! Reading an image file for the driver (modules, link inputs, libraries): a regular
//! file of at most 1 GiB, read whole, so that the bytes checked are the
//! bytes loaded. A directory, FIFO or device (`/dev/zero`) would block or never end.

use crate::error::CudaError;
use std::io::Read;
use std::path::Path;

/// The largest image file read: 1 GiB (a fatbin for many architectures is tens of MiB).
pub(crate) const MAX_FILE_BYTES: u64 = 1 << 30;

/// The bytes of the regular file at `path`: [`CudaError::ReadFile`] when it cannot be
/// opened or read, [`CudaError::InvalidArgument`] (`path`) when it is not a regular
/// file or is longer than `MAX_FILE_BYTES`.
pub(crate) fn read_image_file(path: &Path) -> Result<Vec<u8>, CudaError> {
    let read_error = |e: std::io::Error| CudaError::ReadFile {
        path: path.to_owned(),
        kind: e.kind(),
    };
    let not_regular = CudaError::InvalidArgument {
        parameter: "path",
        rule: "must name a regular file (not a directory, FIFO or device)",
    };
    // Checked before opening: opening a FIFO blocks until a writer comes.
    if !std::fs::metadata(path).map_err(read_error)?.is_file() {
        return Err(not_regular);
    }
    let file = std::fs::File::open(path).map_err(read_error)?;
    // And again on what was opened, in case the path changed in between.
    let meta = file.metadata().map_err(read_error)?;
    if !meta.is_file() {
        return Err(not_regular);
    }
    let too_long = CudaError::InvalidArgument {
        parameter: "path",
        rule: "the file must be at most 1 GiB",
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_long);
    }
    let mut bytes = Vec::new();
    // At most one byte past the limit, in case the file grows while it is read.
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_long);
    }
    Ok(bytes)
}
