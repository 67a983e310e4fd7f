//! CUDA arrays and mipmapped arrays through the C ABI: creation, descriptors and
//! requirements for every kind of array and channel count, every validation error,
//! mipmap levels, the device-memory accounting, stream order, capture, destruction
//! while a copy is queued, and handles (copies: `tests/array_copies.rs`). Every
//! test ends with no live object.

#[path = "common/arrays.rs"]
mod arrays_common;
mod common;

use arrays_common::*;
use common::{no_leaks, ok, serial};
use softcuda::api::graph::*;
use softcuda::api::{array::*, context::*, memory::*, stream::*};
use softcuda::control;
use softcuda::types::*;
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, Ordering};

const PLAIN_FORMATS: [(u32, usize); 8] = [
    (CU_AD_FORMAT_UNSIGNED_INT8, 1),
    (CU_AD_FORMAT_UNSIGNED_INT16, 2),
    (CU_AD_FORMAT_UNSIGNED_INT32, 4),
    (CU_AD_FORMAT_SIGNED_INT8, 1),
    (CU_AD_FORMAT_SIGNED_INT16, 2),
    (CU_AD_FORMAT_SIGNED_INT32, 4),
    (CU_AD_FORMAT_HALF, 2),
    (CU_AD_FORMAT_FLOAT, 4),
];

#[test]
fn every_kind_and_channel_count_is_created_described_and_destroyed() {
    let _g = serial();
    let c = ctx();
    // SAFETY (all below): softcuda's exports, called as C would call them.
    unsafe {
        for (format, size) in PLAIN_FORMATS {
            for ch in [1u32, 2, 4] {
                // 2-D through the 2-D entry point.
                let d = CUDA_ARRAY_DESCRIPTOR {
                    Width: 33,
                    Height: 5,
                    Format: format,
                    NumChannels: ch,
                };
                let mut a = null_mut();
                ok(cuArrayCreate_v2(&mut a, &d));
                let mut back = CUDA_ARRAY_DESCRIPTOR::default();
                ok(cuArrayGetDescriptor_v2(&mut back, a));
                assert_eq!(back, d);
                let r = requirements(a);
                let bytes = 33 * 5 * size * ch as usize;
                assert_eq!(r.size, bytes.next_multiple_of(512));
                assert_eq!(r.alignment, 512);
                destroy(a);
            }
        }
        // Every kind through the 3-D entry point.
        let kinds = [
            desc3(100, 0, 0, CU_AD_FORMAT_FLOAT, 1, 0),
            desc3(
                16,
                8,
                0,
                CU_AD_FORMAT_UNSIGNED_INT8,
                4,
                CUDA_ARRAY3D_SURFACE_LDST,
            ),
            desc3(16, 8, 4, CU_AD_FORMAT_HALF, 2, 0),
            desc3(16, 0, 3, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED),
            desc3(16, 8, 3, CU_AD_FORMAT_SIGNED_INT16, 1, CUDA_ARRAY3D_LAYERED),
            desc3(8, 8, 6, CU_AD_FORMAT_FLOAT, 4, CUDA_ARRAY3D_CUBEMAP),
            desc3(
                8,
                8,
                12,
                CU_AD_FORMAT_FLOAT,
                1,
                CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_LAYERED,
            ),
            desc3(
                64,
                64,
                0,
                CU_AD_FORMAT_UNSIGNED_INT8,
                4,
                CUDA_ARRAY3D_TEXTURE_GATHER,
            ),
            desc3(4, 4, 0, 0xc2, 4, CUDA_ARRAY3D_COLOR_ATTACHMENT), // UNORM_INT8X4
            desc3(4, 4, 0, 0xc4, 2, 0),                             // UNORM_INT16X2
            desc3(1, 1, 20_000, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0),  // 3-D alternate limits
        ];
        let mut made = Vec::new();
        for d in kinds {
            let a = create(d);
            let mut back = CUDA_ARRAY3D_DESCRIPTOR::default();
            ok(cuArray3DGetDescriptor_v2(&mut back, a));
            assert_eq!(back, d, "the descriptor is recorded, flags included");
            let mut two = CUDA_ARRAY_DESCRIPTOR::default();
            let r = cuArrayGetDescriptor_v2(&mut two, a);
            if d.Depth == 0 {
                ok(r);
                assert_eq!((two.Width, two.Height), (d.Width, d.Height));
            } else {
                assert_eq!(r, code::INVALID_VALUE, "3-D arrays need the 3-D descriptor");
            }
            made.push(a);
        }
        // The packed formats' element sizes: 4 bytes each.
        assert_eq!(requirements(made[8]).size, 512);
        assert_eq!(control::live_counts().arrays, made.len());
        let first = made[0];
        for a in made {
            destroy(a);
        }
        // Stale and forged handles.
        let mut back = CUDA_ARRAY3D_DESCRIPTOR::default();
        assert_eq!(
            cuArray3DGetDescriptor_v2(&mut back, first),
            code::INVALID_HANDLE
        );
        assert_eq!(
            cuArrayDestroy(first),
            code::INVALID_HANDLE,
            "destroyed twice"
        );
        assert_eq!(cuArrayDestroy(null_mut()), code::INVALID_HANDLE);
        assert_eq!(cuArrayDestroy(0x1234 as CUarray), code::INVALID_HANDLE);
        assert_eq!(
            cuArray3DGetDescriptor_v2(&mut back, c),
            code::INVALID_HANDLE,
            "a context"
        );
        let mut r = CUDA_ARRAY_MEMORY_REQUIREMENTS::default();
        assert_eq!(
            cuArrayGetMemoryRequirements(&mut r, first, 0),
            code::INVALID_HANDLE
        );
        ok(cuCtxDestroy_v2(c));
    }
    no_leaks();
}

#[test]
fn every_bad_descriptor_is_refused() {
    let _g = serial();
    let f = CU_AD_FORMAT_FLOAT;
    // SAFETY (all below): softcuda's exports, called as C would call them.
    unsafe {
        let d = desc3(4, 4, 0, f, 1, 0);
        let mut a = null_mut();
        assert_eq!(
            cuArray3DCreate_v2(&mut a, &d),
            code::INVALID_CONTEXT,
            "no context"
        );
        let c = ctx();
        assert_eq!(cuArray3DCreate_v2(null_mut(), &d), code::INVALID_VALUE);
        assert_eq!(
            cuArray3DCreate_v2(&mut a, std::ptr::null()),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuArrayCreate_v2(&mut a, std::ptr::null()),
            code::INVALID_VALUE
        );
        let refused = [
            (desc3(0, 4, 0, f, 1, 0), code::INVALID_VALUE, "width 0"),
            (desc3(0, 0, 0, f, 1, 0), code::INVALID_VALUE, "1-D width 0"),
            (desc3(4, 0, 4, f, 1, 0), code::INVALID_VALUE, "3-D height 0"),
            (desc3(4, 4, 0, f, 0, 0), code::INVALID_VALUE, "0 channels"),
            (desc3(4, 4, 0, f, 3, 0), code::INVALID_VALUE, "3 channels"),
            (desc3(4, 4, 0, f, 8, 0), code::INVALID_VALUE, "8 channels"),
            (desc3(4, 4, 0, 0, 1, 0), code::INVALID_VALUE, "format 0"),
            (
                desc3(4, 4, 0, 0x77, 1, 0),
                code::INVALID_VALUE,
                "unknown format",
            ),
            (
                desc3(4, 4, 0, 0xc2, 2, 0),
                code::INVALID_VALUE,
                "UNORM_INT8X4, 2 channels",
            ),
            (
                desc3(4, 4, 0, CU_AD_FORMAT_NV12, 1, 0),
                code::NOT_SUPPORTED,
                "NV12",
            ),
            (
                desc3(4, 4, 0, CU_AD_FORMAT_BC1_UNORM, 4, 0),
                code::NOT_SUPPORTED,
                "BC1",
            ),
            (desc3(4, 4, 0, 0x50, 1, 0), code::NOT_SUPPORTED, "101010_2"),
            (
                desc3(131_073, 0, 0, f, 1, 0),
                code::INVALID_VALUE,
                "1-D too wide",
            ),
            (
                desc3(131_073, 1, 0, f, 1, 0),
                code::INVALID_VALUE,
                "2-D too wide",
            ),
            (
                desc3(1, 65_537, 0, f, 1, 0),
                code::INVALID_VALUE,
                "2-D too high",
            ),
            (
                desc3(16_385, 1, 1, f, 1, 0),
                code::INVALID_VALUE,
                "3-D too wide",
            ),
            (
                desc3(1, 1, 32_769, f, 1, 0),
                code::INVALID_VALUE,
                "3-D too deep",
            ),
            (
                desc3(4, 4, 0, f, 1, CUDA_ARRAY3D_LAYERED),
                code::INVALID_VALUE,
                "0 layers",
            ),
            (
                desc3(4, 4, 2_049, f, 1, CUDA_ARRAY3D_LAYERED),
                code::INVALID_VALUE,
                "2,049 layers",
            ),
            (
                desc3(4, 0, 2_049, f, 1, CUDA_ARRAY3D_LAYERED),
                code::INVALID_VALUE,
                "1-D: 2,049 layers",
            ),
            (
                desc3(4, 8, 6, f, 1, CUDA_ARRAY3D_CUBEMAP),
                code::INVALID_VALUE,
                "cubemap not square",
            ),
            (
                desc3(4, 4, 5, f, 1, CUDA_ARRAY3D_CUBEMAP),
                code::INVALID_VALUE,
                "cubemap of 5 faces",
            ),
            (
                desc3(4, 4, 9, f, 1, CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_LAYERED),
                code::INVALID_VALUE,
                "layered cubemap of 9 faces",
            ),
            (
                desc3(4, 4, 4, f, 1, CUDA_ARRAY3D_TEXTURE_GATHER),
                code::INVALID_VALUE,
                "3-D gather",
            ),
            (
                desc3(4, 4, 0, f, 1, CUDA_ARRAY3D_SPARSE),
                code::NOT_SUPPORTED,
                "sparse",
            ),
            (
                desc3(4, 4, 0, f, 1, CUDA_ARRAY3D_DEFERRED_MAPPING),
                code::NOT_SUPPORTED,
                "deferred mapping",
            ),
            (
                desc3(4, 4, 0, f, 1, CUDA_ARRAY3D_DEPTH_TEXTURE),
                code::NOT_SUPPORTED,
                "depth texture",
            ),
            (
                desc3(4, 4, 0, f, 1, 0x200),
                code::INVALID_VALUE,
                "unknown flag",
            ),
            (
                desc3(131_072, 65_536, 0, f, 4, 0),
                code::OUT_OF_MEMORY,
                "128 GiB",
            ),
        ];
        for (d, want, what) in refused {
            let mut a = null_mut();
            assert_eq!(cuArray3DCreate_v2(&mut a, &d), want, "{what}");
            assert!(a.is_null(), "{what}: no handle written");
        }
        let two = CUDA_ARRAY_DESCRIPTOR {
            Width: 0,
            Height: 3,
            Format: f,
            NumChannels: 1,
        };
        assert_eq!(
            cuArrayCreate_v2(&mut a, &two),
            code::INVALID_VALUE,
            "2-D width 0"
        );
        assert_eq!(control::live_counts().arrays, 0);
        ok(cuCtxDestroy_v2(c));
    }
    no_leaks();
}

#[test]
fn mipmap_levels_halve_and_have_their_own_storage() {
    let _g = serial();
    let c = ctx();
    // SAFETY (all below): softcuda's exports with valid pointers.
    unsafe {
        let base = desc3(100, 7, 0, CU_AD_FORMAT_FLOAT, 1, 0);
        let mut m = null_mut();
        ok(cuMipmappedArrayCreate(&mut m, &base, 4));
        assert_eq!(control::live_counts().mipmapped_arrays, 1);
        assert_eq!(
            control::live_counts().arrays,
            0,
            "levels are not counted as arrays"
        );
        let dims = [(100, 7), (50, 3), (25, 1), (12, 1)];
        let mut levels = Vec::new();
        let mut total = 0;
        for (i, &(w, h)) in dims.iter().enumerate() {
            let mut l = null_mut();
            ok(cuMipmappedArrayGetLevel(&mut l, m, i as u32));
            let mut d = CUDA_ARRAY3D_DESCRIPTOR::default();
            ok(cuArray3DGetDescriptor_v2(&mut d, l));
            assert_eq!((d.Width, d.Height, d.Depth), (w, h, 0), "level {i}");
            let mut again = null_mut();
            ok(cuMipmappedArrayGetLevel(&mut again, m, i as u32));
            assert_eq!(again, l, "the same array each time");
            total += requirements(l).size;
            levels.push((l, w * 4, h));
        }
        let mut l = null_mut();
        assert_eq!(cuMipmappedArrayGetLevel(&mut l, m, 4), code::INVALID_VALUE);
        assert_eq!(
            cuMipmappedArrayGetLevel(&mut l, null_mut(), 0),
            code::INVALID_HANDLE
        );
        let mut r = CUDA_ARRAY_MEMORY_REQUIREMENTS::default();
        ok(cuMipmappedArrayGetMemoryRequirements(&mut r, m, 0));
        assert_eq!((r.size, r.alignment), (total, 512));
        assert_eq!(
            cuMipmappedArrayGetMemoryRequirements(&mut r, m, 9),
            code::INVALID_DEVICE
        );
        // Each level its own bytes.
        for (i, &(l, row, h)) in levels.iter().enumerate() {
            fill(l, &pattern(row * h, i as u8 * 40), row, h, 1);
        }
        for (i, &(l, row, h)) in levels.iter().enumerate() {
            assert_eq!(
                dump(l, row, h, 1),
                pattern(row * h, i as u8 * 40),
                "level {i}"
            );
        }
        assert_eq!(
            cuArrayDestroy(levels[1].0),
            code::INVALID_HANDLE,
            "a level goes with its mipmapped array"
        );
        ok(cuMipmappedArrayDestroy(m));
        let mut d = CUDA_ARRAY3D_DESCRIPTOR::default();
        assert_eq!(
            cuArray3DGetDescriptor_v2(&mut d, levels[0].0),
            code::INVALID_HANDLE,
            "levels gone"
        );
        assert_eq!(
            cuMipmappedArrayDestroy(m),
            code::INVALID_HANDLE,
            "destroyed twice"
        );
        // The level count is clamped to [1, a full chain]; 3-D halves the depth,
        // layers stay.
        for (d, asked, want) in [
            (desc3(100, 7, 0, CU_AD_FORMAT_FLOAT, 1, 0), 0, 1),
            (desc3(100, 7, 0, CU_AD_FORMAT_FLOAT, 1, 0), 100, 7),
            (desc3(8, 4, 16, CU_AD_FORMAT_FLOAT, 1, 0), 100, 5),
            (
                desc3(8, 4, 16, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED),
                100,
                4,
            ),
        ] {
            ok(cuMipmappedArrayCreate(&mut m, &d, asked));
            ok(cuMipmappedArrayGetLevel(&mut l, m, want - 1));
            assert_eq!(
                cuMipmappedArrayGetLevel(&mut l, m, want),
                code::INVALID_VALUE
            );
            ok(cuMipmappedArrayGetLevel(&mut l, m, want - 1));
            let mut got = CUDA_ARRAY3D_DESCRIPTOR::default();
            ok(cuArray3DGetDescriptor_v2(&mut got, l));
            assert_eq!(got.Width, 1.max(d.Width >> (want - 1)));
            if d.Flags & CUDA_ARRAY3D_LAYERED != 0 {
                assert_eq!(got.Depth, 16, "layers stay");
            } else if d.Depth != 0 {
                assert_eq!(got.Depth, 1, "depth halves");
            }
            ok(cuMipmappedArrayDestroy(m));
        }
        assert_eq!(
            cuMipmappedArrayCreate(&mut m, &desc3(0, 7, 0, CU_AD_FORMAT_FLOAT, 1, 0), 2),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuMipmappedArrayCreate(&mut m, &desc3(32_769, 7, 0, CU_AD_FORMAT_FLOAT, 1, 0), 2),
            code::INVALID_VALUE,
            "past MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH"
        );
        ok(cuCtxDestroy_v2(c));
    }
    no_leaks();
}

#[test]
fn arrays_count_against_device_memory_until_destroyed() {
    let _g = serial();
    let c = ctx();
    let before = free_mem();
    let a = create(desc3(1024, 1024, 0, CU_AD_FORMAT_FLOAT, 4, 0)); // 16 MiB
    let during = free_mem();
    assert!(
        before - during >= 16 << 20,
        "free fell by {}",
        before - during
    );
    let mut m = null_mut();
    // SAFETY: valid pointers.
    ok(unsafe {
        cuMipmappedArrayCreate(&mut m, &desc3(512, 512, 0, CU_AD_FORMAT_FLOAT, 1, 0), 10)
    });
    assert!(
        during - free_mem() >= (1 << 20) + (1 << 18),
        "every level counts"
    );
    // SAFETY: softcuda's export.
    ok(unsafe { cuMipmappedArrayDestroy(m) });
    assert_eq!(free_mem(), during);
    destroy(a);
    assert_eq!(free_mem(), before);
    // The test budget applies too; a failed creation takes nothing.
    control::fail_allocations_after(1 << 20);
    assert_eq!(
        try_create(desc3(1024, 1024, 0, CU_AD_FORMAT_FLOAT, 1, 0)).err(),
        Some(code::OUT_OF_MEMORY)
    );
    control::clear_faults();
    assert_eq!(free_mem(), before);
    // Arrays go with their context.
    let _lost = create(desc3(64, 64, 0, CU_AD_FORMAT_FLOAT, 1, 0));
    assert_eq!(control::live_counts().arrays, 1);
    // SAFETY: softcuda's export.
    ok(unsafe { cuCtxDestroy_v2(c) });
    no_leaks();
}

extern "C" fn wait_for_gate(p: *mut c_void) {
    // SAFETY: the test passes a pointer to a static AtomicBool.
    let gate = unsafe { &*(p as *const AtomicBool) };
    while !gate.load(Ordering::Acquire) {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

#[test]
fn async_copies_run_in_stream_order_and_destroy_waits_for_them() {
    static GATE: AtomicBool = AtomicBool::new(false);
    let _g = serial();
    let c = ctx();
    let n = 4096usize;
    let a = create(desc3(n, 0, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0));
    let b = create(desc3(64, 64, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0));
    // SAFETY (all below): softcuda's exports with valid buffers, pinned host memory
    // kept until the stream is synchronised.
    unsafe {
        let mut s = null_mut();
        ok(cuStreamCreate(&mut s, 1));
        let (mut src, mut dst, mut dst2) = (null_mut(), null_mut(), null_mut());
        ok(cuMemAllocHost_v2(&mut src, n));
        ok(cuMemAllocHost_v2(&mut dst, n));
        ok(cuMemAllocHost_v2(&mut dst2, n));
        let src = std::slice::from_raw_parts_mut(src.cast::<u8>(), n);
        let dst = std::slice::from_raw_parts_mut(dst.cast::<u8>(), n);
        src.copy_from_slice(&pattern(n, 9));
        GATE.store(false, Ordering::Release);
        ok(cuLaunchHostFunc(
            s,
            Some(wait_for_gate),
            &GATE as *const AtomicBool as *mut c_void,
        ));
        ok(cuMemcpyHtoAAsync_v2(a, 0, src.as_ptr().cast(), n, s));
        // array a → 2-D array b (64 rows of 64), then back out through 2-D async.
        let mut p = m2(64, 64);
        p.srcMemoryType = CU_MEMORYTYPE_ARRAY;
        p.srcArray = a;
        p.dstMemoryType = CU_MEMORYTYPE_ARRAY;
        p.dstArray = b;
        p.Height = 1; // one row of a (1-D) into row 0 of b
        ok(cuMemcpy2DAsync_v2(&p, s));
        let mut q = m3(64, 64, 1);
        q.srcMemoryType = CU_MEMORYTYPE_ARRAY;
        q.srcArray = b;
        q.dstMemoryType = CU_MEMORYTYPE_HOST;
        q.dstHost = dst2;
        ok(cuMemcpy3DAsync_v2(&q, s));
        ok(cuMemcpyAtoHAsync_v2(dst.as_mut_ptr().cast(), a, 0, n, s));
        assert_eq!(cuStreamQuery(s), code::NOT_READY);
        assert!(dst.iter().all(|&x| x == 0), "nothing ran before the gate");
        GATE.store(true, Ordering::Release);
        ok(cuStreamSynchronize(s));
        assert_eq!(&dst[..], &src[..], "host → array → host, in order");
        let row0 = std::slice::from_raw_parts(dst2.cast::<u8>(), n);
        assert_eq!(&row0[..64], &src[..64], "row 0 of b is row 0 of a");
        assert!(row0[64..].iter().all(|&x| x == 0));
        // cuArrayDestroy waits for the context's queued work that uses the array.
        GATE.store(false, Ordering::Release);
        dst.fill(0);
        ok(cuLaunchHostFunc(
            s,
            Some(wait_for_gate),
            &GATE as *const AtomicBool as *mut c_void,
        ));
        ok(cuMemcpyAtoHAsync_v2(dst.as_mut_ptr().cast(), a, 0, n, s));
        let opener = std::thread::spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(50));
            GATE.store(true, Ordering::Release);
        });
        destroy(a);
        assert_eq!(
            &dst[..],
            &src[..],
            "the queued copy ran before the array went"
        );
        opener.join().expect("thread");
        destroy(b);
        ok(cuMemFreeHost(src.as_mut_ptr().cast()));
        ok(cuMemFreeHost(dst.as_mut_ptr().cast()));
        ok(cuMemFreeHost(dst2));
        ok(cuStreamDestroy_v2(s));
        ok(cuCtxDestroy_v2(c));
    }
    no_leaks();
}

#[test]
fn captured_array_copies_become_memcpy_nodes() {
    let _g = serial();
    let c = ctx();
    let n = 256usize;
    let a = create(desc3(n, 0, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0));
    // SAFETY (all below): softcuda's exports with valid buffers.
    unsafe {
        let mut s = null_mut();
        ok(cuStreamCreate(&mut s, 1));
        let (mut src, mut dst) = (null_mut(), null_mut());
        ok(cuMemAllocHost_v2(&mut src, n));
        ok(cuMemAllocHost_v2(&mut dst, n));
        let srcs = std::slice::from_raw_parts_mut(src.cast::<u8>(), n);
        srcs.copy_from_slice(&pattern(n, 77));
        ok(cuStreamBeginCapture_v2(s, 0));
        ok(cuMemcpyHtoAAsync_v2(a, 0, src, n, s));
        ok(cuMemcpyAtoHAsync_v2(dst, a, 0, n, s));
        assert_eq!(
            cuMemcpyAtoHAsync_v2(dst, a, 1, n, s),
            code::INVALID_VALUE,
            "checked when captured"
        );
        let mut g = null_mut();
        ok(cuStreamEndCapture(s, &mut g));
        let mut count = 0usize;
        ok(cuGraphGetNodes(g, null_mut(), &mut count));
        assert_eq!(count, 2);
        let dsts = std::slice::from_raw_parts(dst.cast::<u8>(), n);
        assert!(dsts.iter().all(|&x| x == 0), "capture ran nothing");
        let mut e = null_mut();
        ok(cuGraphInstantiateWithFlags(&mut e, g, 0));
        ok(cuGraphLaunch(e, s));
        ok(cuStreamSynchronize(s));
        assert_eq!(dsts, &srcs[..]);
        // The graph names the array: once it is destroyed, launching fails.
        destroy(a);
        assert_eq!(cuGraphLaunch(e, s), code::INVALID_VALUE);
        ok(cuGraphExecDestroy(e));
        ok(cuGraphDestroy(g));
        ok(cuMemFreeHost(src));
        ok(cuMemFreeHost(dst));
        ok(cuStreamDestroy_v2(s));
        ok(cuCtxDestroy_v2(c));
    }
    no_leaks();
}

#[test]
fn the_loader_finds_the_array_functions() {
    let _g = serial();
    for name in [
        c"cuArrayCreate",
        c"cuArray3DCreate",
        c"cuArrayDestroy",
        c"cuMipmappedArrayGetLevel",
        c"cuMemcpyHtoA",
        c"cuMemcpyAtoA",
        c"cuArrayGetMemoryRequirements",
    ] {
        let mut f = null_mut();
        let mut status = 0;
        // SAFETY: valid pointers and a NUL-terminated name.
        ok(unsafe {
            softcuda::api::proc::cuGetProcAddress_v2(name.as_ptr(), &mut f, 12090, 0, &mut status)
        });
        assert!(!f.is_null(), "{name:?}");
    }
    assert_eq!(control::live_counts().arrays, 0);
}
