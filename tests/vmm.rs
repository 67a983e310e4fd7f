//! Virtual memory management through the safe layer, on softcuda (or with
//! `--features gpu-tests` the driver the environment names): a range grows in place
//! and kernels see every piece; views need mapped memory; bad geometry is a typed
//! error before the driver is called, and a failed map hands the memory back; unmap
//! waits for queued work; memory moves between ranges with its contents; export and
//! import alias one allocation. No live object is left behind.

mod common;

use common::on_device0;

use oxicuda_driver::CudaError;
use oxicuda_driver::launch::{In, Out};
use oxicuda_driver::module::JitOptions;
use oxicuda_driver::sys::CUstream_flags;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const SLICES: &str = include_str!("../kernels/slices.ptx");

#[test]
fn a_range_grows_in_place_and_kernels_see_every_piece() {
    on_device0(|cur| -> Result<(), CudaError> {
        let g = cur.granularity()?;
        assert!(g.minimum().is_power_of_two() && g.recommended() >= g.minimum());
        let module = cur.load_ptx(SLICES, &JitOptions::default())?;
        // SAFETY: kernels/slices.cu's saxpy reads `x` and writes `y`, each only below
        // the length passed with it.
        let saxpy = unsafe { module.function::<(f32, In<f32>, Out<f32>)>("saxpy")? };
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let mut range = cur.reserve_addresses(4 * g.minimum())?;
        let base = range.device_ptr();
        assert_eq!(base % g.minimum() as u64, 0, "aligned to the granularity");
        assert_eq!(range.mapped_prefix(), 0);
        let per_piece = g.minimum() / 4; // f32s

        range.map(0, cur.create_physical(g.minimum())?)?;
        let first: Vec<f32> = (0..per_piece).map(|i| i as f32).collect();
        range
            .slice_mut::<f32>(..per_piece)?
            .copy_from_host(&first)?;
        range.map(g.minimum(), cur.create_physical(g.minimum())?)?;
        assert_eq!(range.mapped_prefix(), 2 * g.minimum());
        assert_eq!(range.device_ptr(), base, "growing never moves the range");
        range
            .slice_mut::<f32>(per_piece..2 * per_piece)?
            .fill(5.0)?;

        // One kernel over both pieces, across the seam.
        let n = 2 * per_piece;
        let mut y = cur.alloc_from(&vec![1.0f32; n])?;
        saxpy.launch(
            &stream,
            n.div_ceil(256) as u32,
            256,
            0,
            (2.0f32, &range.slice::<f32>(..n)?, &mut y),
        )?;
        let got = y.to_vec()?;
        for (i, v) in got.iter().enumerate() {
            let x = if i < per_piece { i as f32 } else { 5.0 };
            assert_eq!(*v, 2.0 * x + 1.0, "element {i}");
        }
        // And a kernel writing into the range, read back by the host in order.
        let x = cur.alloc_from(&vec![1.0f32; n])?;
        saxpy.launch(
            &stream,
            n.div_ceil(256) as u32,
            256,
            0,
            (3.0f32, &x, &mut range.slice_mut::<f32>(..n)?),
        )?;
        let back = range.slice::<f32>(..n)?.to_vec()?;
        assert_eq!(back[0], 3.0 + 0.0);
        assert_eq!(back[per_piece + 7], 3.0 + 5.0);
        Ok(())
    });
}

#[test]
fn views_need_every_byte_mapped() {
    on_device0(|cur| -> Result<(), CudaError> {
        let g = cur.granularity()?.minimum();
        let mut range = cur.reserve_addresses(4 * g)?;
        assert!(matches!(
            range.slice::<u8>(..1),
            Err(CudaError::NotMapped { start: 0, end: 1 })
        ));
        range.map(0, cur.create_physical(g)?)?;
        range.map(2 * g, cur.create_physical(g)?)?;
        assert_eq!(range.mapped_prefix(), g);
        assert!(range.slice::<u8>(..g).is_ok());
        assert!(range.slice::<u8>(2 * g..3 * g).is_ok());
        // A gap in the middle, and the unmapped tail.
        assert_eq!(
            range.slice::<u8>(g - 1..2 * g + 1).unwrap_err(),
            CudaError::NotMapped {
                start: g - 1,
                end: 2 * g + 1
            }
        );
        assert_eq!(
            range.slice_mut::<u32>(..).unwrap_err(),
            CudaError::NotMapped {
                start: 0,
                end: 4 * g
            }
        );
        assert!(matches!(
            range.slice::<u8>(..4 * g + 1),
            Err(CudaError::OutOfRange { .. })
        ));
        Ok(())
    });
}

#[test]
fn bad_geometry_is_a_typed_error_and_a_failed_map_hands_the_memory_back() {
    on_device0(|cur| -> Result<(), CudaError> {
        let g = cur.granularity()?.minimum();
        for size in [0, 1, g + 1] {
            assert!(matches!(
                cur.reserve_addresses(size),
                Err(CudaError::InvalidArgument {
                    parameter: "size",
                    ..
                })
            ));
            assert!(matches!(
                cur.create_physical(size),
                Err(CudaError::InvalidArgument {
                    parameter: "size",
                    ..
                })
            ));
        }
        let mut range = cur.reserve_addresses(2 * g)?;
        let e = range.map(g / 2, cur.create_physical(g)?).unwrap_err();
        assert!(matches!(
            e.error,
            CudaError::InvalidArgument {
                parameter: "offset",
                ..
            }
        ));
        let physical = e.physical.expect("not mapped: the memory comes back");
        assert_eq!(physical.size(), g);
        // Past the end: the same memory, handed back again.
        let e = range.map(2 * g, physical).unwrap_err();
        assert_eq!(
            e.error,
            CudaError::BytesOutOfRange {
                start: 2 * g as u64,
                end: 3 * g as u64,
                len: 2 * g as u64
            }
        );
        range.map(0, e.physical.expect("handed back"))?;
        let e = range.map(0, cur.create_physical(2 * g)?).unwrap_err();
        assert_eq!(e.error, CudaError::AlreadyMapped { start: 0, end: g });
        assert!(e.to_string().contains("mapped already"), "{e}");
        // `?` turns it into the error alone (the memory is released).
        let as_error: CudaError = e.into();
        assert_eq!(as_error, CudaError::AlreadyMapped { start: 0, end: g });
        assert!(matches!(
            range.unmap(g),
            Err(CudaError::NotMapped { start, .. }) if start == g
        ));
        Ok(())
    });
}

#[test]
fn memory_moves_between_ranges_with_its_contents() {
    on_device0(|cur| -> Result<(), CudaError> {
        let g = cur.granularity()?.minimum();
        let mut a = cur.reserve_addresses(g)?;
        let mut b = cur.reserve_addresses(2 * g)?;
        a.map(0, cur.create_physical(g)?)?;
        a.slice_mut::<u32>(..4)?.copy_from_host(&[7, 8, 9, 10])?;
        let physical = a.unmap(0)?;
        assert_eq!(a.mapped_prefix(), 0);
        assert!(matches!(
            a.slice::<u32>(..4),
            Err(CudaError::NotMapped { .. })
        ));
        b.map(g, physical)?;
        assert_eq!(b.slice::<u32>(g / 4..g / 4 + 4)?.to_vec()?, [7, 8, 9, 10]);
        Ok(())
    });
}

#[test]
fn unmap_waits_for_work_queued_on_the_memory() {
    on_device0(|cur| -> Result<(), CudaError> {
        let g = cur.granularity()?.minimum();
        let stream = cur.create_stream(CUstream_flags::CU_STREAM_NON_BLOCKING)?;
        let mut range = cur.reserve_addresses(g)?;
        range.map(0, cur.create_physical(g)?)?;
        // A gate holds the stream; the memset behind it writes the mapped memory.
        let (open, gate) = mpsc::channel::<()>();
        stream.launch_host_fn(move || {
            let _ = gate.recv();
        })?;
        stream.fill(&mut range.slice_mut::<u32>(..1024)?, 0xABCD_u32)?;
        // Timed from before the opener starts: it opens 300 ms later at the
        // earliest, however this thread is scheduled.
        let t = Instant::now();
        let opener = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            let _ = open.send(());
        });
        let physical = range.unmap(0)?;
        assert!(
            t.elapsed() >= Duration::from_millis(250),
            "unmap returned before the queued memset ran"
        );
        opener.join().map_err(|_| CudaError::InvalidArgument {
            parameter: "opener",
            rule: "panicked",
        })?;
        // The memset ran into the memory before it was unmapped: mapped again, it
        // holds what the memset wrote.
        range.map(0, physical)?;
        assert!(
            range
                .slice::<u32>(..1024)?
                .to_vec()?
                .iter()
                .all(|&v| v == 0xABCD)
        );
        assert_eq!(cur.sticky_error(), None);
        Ok(())
    });
}

#[test]
fn dropping_a_range_releases_its_memory_and_addresses() {
    on_device0(|cur| -> Result<(), CudaError> {
        let g = cur.granularity()?.minimum();
        let (free_before, total) = cur.memory_info()?;
        let free_mapped = {
            let mut range = cur.reserve_addresses(8 * g)?;
            for i in 0..3 {
                range.map(i * g, cur.create_physical(g)?)?;
            }
            cur.memory_info()?.0
        };
        let after = cur.memory_info()?;
        if common::ON_GPU {
            // The driver's own bookkeeping moves the figures a little: only the
            // direction is asserted.
            assert!(free_mapped < free_before && after.0 > free_mapped);
        } else {
            assert_eq!(free_before - free_mapped, 3 * g, "physical memory counts");
            assert_eq!(after, (free_before, total), "all of it back");
        }
        Ok(())
    });
}

#[cfg(unix)]
#[test]
fn an_exported_allocation_imported_again_aliases_the_same_memory() {
    on_device0(|cur| -> Result<(), CudaError> {
        let g = cur.granularity()?.minimum();
        let plain = cur.create_physical(g)?;
        assert!(matches!(
            plain.export_fd(),
            Err(CudaError::InvalidArgument {
                parameter: "self",
                ..
            })
        ));
        let shared = cur.create_physical_shareable(g)?;
        let fd = shared.export_fd()?;
        // SAFETY: the two mappings below are used one after the other, each access
        // synchronous: nothing uses one while the other writes.
        let imported = unsafe { cur.import_physical(std::os::fd::AsFd::as_fd(&fd), g)? };
        drop(fd); // the import keeps what it needs
        let mut a = cur.reserve_addresses(g)?;
        let mut b = cur.reserve_addresses(g)?;
        a.map(0, shared)?;
        b.map(0, imported)?;
        a.slice_mut::<u64>(..2)?.copy_from_host(&[11, 22])?;
        assert_eq!(b.slice::<u64>(..2)?.to_vec()?, [11, 22]);
        b.slice_mut::<u64>(1..2)?.copy_from_host(&[33])?;
        assert_eq!(a.slice::<u64>(..2)?.to_vec()?, [11, 33]);
        Ok(())
    });
}

/// Fault injection is softcuda's.
#[cfg(not(feature = "gpu-tests"))]
#[test]
fn memory_the_driver_would_not_unmap_after_a_failed_map_stays_in_the_range() {
    on_device0(|cur| -> Result<(), CudaError> {
        let g = cur.granularity()?.minimum();
        let mut range = cur.reserve_addresses(2 * g)?;
        let invalid = oxicuda_driver::sys::CUresult::CUDA_ERROR_INVALID_VALUE;
        softcuda::control::inject_fault("cuMemSetAccess", 1, invalid.0 as _);
        softcuda::control::inject_fault("cuMemUnmap", 1, invalid.0 as _);
        let e = range.map(0, cur.create_physical(g)?).unwrap_err();
        softcuda::control::clear_faults();
        assert_eq!(e.error, CudaError::Driver(invalid));
        assert!(e.physical.is_none(), "still mapped: the range keeps it");
        // Kept, unusable: no view covers it, nothing maps over it.
        assert_eq!(range.mapped_prefix(), 0);
        assert!(matches!(
            range.slice::<u8>(..1),
            Err(CudaError::NotMapped { .. })
        ));
        let again = range.map(0, cur.create_physical(g)?).unwrap_err();
        assert_eq!(again.error, CudaError::AlreadyMapped { start: 0, end: g });
        // The retry unmaps it and hands it back; it maps cleanly then.
        let physical = range.unmap(0)?;
        range.map(0, physical)?;
        assert!(range.slice::<u8>(..g).is_ok());
        Ok(())
    });
}
