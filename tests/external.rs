//! External resources through the safe layer: memory exported by one allocation and
//! imported as external memory aliases it; bad buffers are typed errors; a failed
//! import hands the descriptor back; binary and timeline semaphores order two
//! streams. On softcuda, whose test helpers stand in for a Vulkan export
//! (`softcuda::control::external_semaphore_fd`); the memory tests also run on a GPU
//! (`--features gpu-tests`), where the export is a real CUDA allocation's. No live
//! object is left behind.

#![cfg(unix)]

mod common;

use common::on_device0;

use oxicuda_driver::CudaError;
use oxicuda_driver::sys::CUstream_flags;
use std::os::fd::{AsRawFd, OwnedFd};

#[test]
fn imported_memory_aliases_the_allocation_that_exported_it() {
    on_device0(|cur| -> Result<(), CudaError> {
        let g = cur.granularity()?.minimum();
        let physical = cur.create_physical_shareable(g)?;
        let fd = physical.export_fd()?;
        // SAFETY: a CUDA allocation's own export, of `g` bytes; the range and the
        // buffers below are used one after the other, each access synchronous.
        let external = unsafe { cur.import_external_memory(fd, g as u64, false)? };
        assert_eq!(external.size(), g as u64);
        let mut range = cur.reserve_addresses(g)?;
        range.map(0, physical)?;
        range.slice_mut::<u32>(..4)?.copy_from_host(&[1, 2, 3, 4])?;
        let mut head = external.buffer::<u32>(0, 4)?;
        assert_eq!(head.to_vec()?, [1, 2, 3, 4]);
        // A second buffer further in, written through the buffer, read through the range.
        let mut far = external.buffer::<u32>(65536, 2)?;
        far.copy_from_host(&[7, 8])?;
        assert_eq!(range.slice::<u32>(16384..16386)?.to_vec()?, [7, 8]);
        head.fill(9)?;
        assert_eq!(range.slice::<u32>(..4)?.to_vec()?, [9; 4]);
        Ok(())
    });
}

#[test]
fn bad_buffers_are_typed_errors() {
    on_device0(|cur| -> Result<(), CudaError> {
        let g = cur.granularity()?.minimum();
        let physical = cur.create_physical_shareable(g)?;
        // SAFETY: as above; nothing maps the memory elsewhere.
        let external =
            unsafe { cur.import_external_memory(physical.export_fd()?, g as u64, true)? };
        assert!(matches!(
            external.buffer::<u32>(0, 0),
            Err(CudaError::InvalidArgument {
                parameter: "len",
                ..
            })
        ));
        assert!(matches!(
            external.buffer::<u32>(2, 1),
            Err(CudaError::InvalidArgument {
                parameter: "offset",
                ..
            })
        ));
        let g64 = g as u64;
        assert_eq!(
            external.buffer::<u8>(g64 - 1, 2).unwrap_err(),
            CudaError::BytesOutOfRange {
                start: g64 - 1,
                end: g64 + 1,
                len: g64
            }
        );
        assert!(matches!(
            external.buffer::<u8>(u64::MAX, 2),
            Err(CudaError::BytesOutOfRange { .. })
        ));
        // Two live buffers of the same bytes would be two exclusive views of them.
        let first = external.buffer::<u32>(4096, 1024)?;
        assert_eq!(
            external.buffer::<u8>(8191, 2).unwrap_err(),
            CudaError::AlreadyMapped {
                start: 4096,
                end: 8192
            }
        );
        assert!(external.buffer::<u8>(8192, 2).is_ok(), "next to it is fine");
        drop(first);
        assert!(
            external.buffer::<u8>(4096, 2).is_ok(),
            "free again once dropped"
        );
        Ok(())
    });
}

#[test]
fn a_failed_import_hands_the_descriptor_back() {
    on_device0(|cur| -> Result<(), CudaError> {
        // A file that is no memory object CUDA can import.
        let file = std::fs::File::open("/dev/null").map_err(|_| CudaError::InvalidArgument {
            parameter: "file",
            rule: "/dev/null opens",
        })?;
        let fd = OwnedFd::from(file);
        let raw = fd.as_raw_fd();
        // SAFETY: the import is refused; nothing is mapped.
        let e = unsafe { cur.import_external_memory(fd, 4096, false) }.unwrap_err();
        assert!(
            matches!(e.error, CudaError::Driver(_)),
            "the driver's refusal: {:?}",
            e.error
        );
        assert_eq!(
            e.fd.as_raw_fd(),
            raw,
            "the same descriptor comes back, open"
        );
        assert!(std::fs::File::from(e.fd).metadata().is_ok());
        // SAFETY: as above.
        let zero = unsafe {
            cur.import_external_memory(
                OwnedFd::from(std::fs::File::open("/dev/null").unwrap()),
                0,
                false,
            )
        }
        .unwrap_err();
        assert!(matches!(
            zero.error,
            CudaError::InvalidArgument {
                parameter: "size",
                ..
            }
        ));
        Ok(())
    });
}

/// Semaphores need an exporter: softcuda's stand-in for Vulkan.
#[cfg(not(feature = "gpu-tests"))]
mod semaphores {
    use super::*;
    use oxicuda_driver::external::{Binary, Timeline};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    fn semaphore_fd() -> OwnedFd {
        softcuda::control::external_semaphore_fd().expect("softcuda makes semaphore files")
    }

    #[test]
    fn a_binary_semaphore_orders_two_streams() {
        on_device0(|cur| -> Result<(), CudaError> {
            // SAFETY: a semaphore file of softcuda's, used only here.
            let sem = unsafe { cur.import_external_semaphore::<Binary>(semaphore_fd())? };
            let a = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
            let b = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
            let order = Arc::new(Mutex::new(Vec::new()));
            sem.wait(&a)?;
            let o = order.clone();
            a.launch_host_fn(move || o.lock().unwrap().push("a, after the wait"))?;
            let o = order.clone();
            b.launch_host_fn(move || {
                std::thread::sleep(Duration::from_millis(100));
                o.lock().unwrap().push("b, before the signal");
            })?;
            sem.signal(&b)?;
            a.synchronize()?;
            assert_eq!(
                *order.lock().unwrap(),
                ["b, before the signal", "a, after the wait"]
            );
            Ok(())
        });
    }

    #[test]
    fn a_timeline_wait_ends_at_its_value_not_before() {
        on_device0(|cur| -> Result<(), CudaError> {
            // SAFETY: a semaphore file of softcuda's, used only here.
            let sem = unsafe { cur.import_external_semaphore::<Timeline>(semaphore_fd())? };
            let a = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
            let b = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
            sem.wait(&a, 5)?;
            sem.signal(&b, 3)?;
            b.synchronize()?;
            std::thread::sleep(Duration::from_millis(50));
            assert!(!a.is_done()?, "3 is not 5: the wait goes on");
            sem.signal(&b, 5)?;
            a.synchronize()?;
            assert!(a.is_done()?);
            // A timeline only grows: this handle refuses to go back.
            assert!(matches!(
                sem.signal(&b, 5),
                Err(CudaError::InvalidArgument {
                    parameter: "value",
                    ..
                })
            ));
            Ok(())
        });
    }

    #[test]
    fn a_failed_semaphore_import_hands_the_descriptor_back() {
        on_device0(|cur| -> Result<(), CudaError> {
            let fd = OwnedFd::from(std::fs::File::open("/dev/null").unwrap());
            let raw = fd.as_raw_fd();
            // SAFETY: refused; nothing is imported.
            let e = unsafe { cur.import_external_semaphore::<Binary>(fd) }.unwrap_err();
            assert!(matches!(e.error, CudaError::Driver(_)), "{:?}", e.error);
            assert_eq!(e.fd.as_raw_fd(), raw);
            Ok(())
        });
    }
}
