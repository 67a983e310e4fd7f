//! Copies with CUDA arrays through the C ABI, checked against a CPU reference:
//! 2-D sub-rectangles between host memory and arrays, device memory and arrays both
//! ways, array to array, 3-D sub-boxes, layers, the 1-D copies, and every
//! out-of-bounds refusal. Every test ends with no live object.

#[path = "common/arrays.rs"]
mod arrays_common;
mod common;

use arrays_common::*;
use common::{no_leaks, ok, serial};
use softcuda::api::{array::*, context::*, memory::*};
use softcuda::types::*;
use std::ptr::null_mut;

#[test]
fn sub_rectangles_round_trip_between_host_and_a_2d_array() {
    let _g = serial();
    let c = ctx();
    let (w, h, elem) = (37usize, 23usize, 8usize); // FLOAT × 2
    let row = w * elem;
    let a = create(desc3(w, h, 0, CU_AD_FORMAT_FLOAT, 2, 0));
    let mut reference = pattern(row * h, 7);
    fill(a, &reference, row, h, 1);
    assert_eq!(dump(a, row, h, 1), reference, "whole array round trip");
    // SAFETY (all below): softcuda's exports with valid descriptors.
    unsafe {
        // Read a 10 × 7 element rectangle at (5, 3) into a pitched host buffer.
        let (x, y, rw, rh, pitch) = (5 * elem, 3, 10 * elem, 7, 10 * elem + 13);
        let mut out = vec![0xEEu8; pitch * rh];
        let mut p = m2(rw, rh);
        p.srcMemoryType = CU_MEMORYTYPE_ARRAY;
        p.srcArray = a;
        p.srcXInBytes = x;
        p.srcY = y;
        p.dstMemoryType = CU_MEMORYTYPE_HOST;
        p.dstHost = out.as_mut_ptr().cast();
        p.dstPitch = pitch;
        ok(cuMemcpy2D_v2(&p));
        for r in 0..rh {
            let want = &reference[(y + r) * row + x..][..rw];
            assert_eq!(&out[r * pitch..][..rw], want, "row {r}");
            assert!(
                out[r * pitch + rw..(r + 1) * pitch]
                    .iter()
                    .all(|&b| b == 0xEE),
                "padding untouched"
            );
        }
        // Write a 4 × 9 rectangle at (30, 12) from a pitched host buffer.
        let (x, y, rw, rh, pitch) = (30 * elem, 12, 4 * elem, 9, 4 * elem + 3);
        let src = pattern(pitch * rh, 99);
        let mut p = m2(rw, rh);
        p.srcMemoryType = CU_MEMORYTYPE_HOST;
        p.srcHost = src.as_ptr().cast();
        p.srcPitch = pitch;
        p.dstMemoryType = CU_MEMORYTYPE_ARRAY;
        p.dstArray = a;
        p.dstXInBytes = x;
        p.dstY = y;
        ok(cuMemcpy2DUnaligned_v2(&p));
        for r in 0..rh {
            reference[(y + r) * row + x..][..rw].copy_from_slice(&src[r * pitch..][..rw]);
        }
        assert_eq!(dump(a, row, h, 1), reference, "only the rectangle changed");
        // Out of bounds, every way.
        let bad = |f: &dyn Fn(&mut CUDA_MEMCPY2D)| {
            let mut p = m2(rw, rh);
            p.srcMemoryType = CU_MEMORYTYPE_HOST;
            p.srcHost = src.as_ptr().cast();
            p.srcPitch = pitch;
            p.dstMemoryType = CU_MEMORYTYPE_ARRAY;
            p.dstArray = a;
            f(&mut p);
            cuMemcpy2D_v2(&p)
        };
        assert_eq!(
            bad(&|p| p.dstXInBytes = row - rw + 1),
            code::INVALID_VALUE,
            "past the right edge"
        );
        assert_eq!(
            bad(&|p| p.dstY = h - rh + 1),
            code::INVALID_VALUE,
            "past the bottom"
        );
        assert_eq!(
            bad(&|p| p.dstXInBytes = usize::MAX),
            code::INVALID_VALUE,
            "overflow"
        );
        assert_eq!(
            bad(&|p| p.WidthInBytes = row + 1),
            code::INVALID_VALUE,
            "wider than a row"
        );
        assert_eq!(
            bad(&|p| p.dstArray = null_mut()),
            code::INVALID_VALUE,
            "null array"
        );
        assert_eq!(
            bad(&|p| p.dstArray = c),
            code::INVALID_VALUE,
            "not an array"
        );
        ok(bad(&|p| p.dstXInBytes = row - rw));
    }
    destroy(a);
    // SAFETY: softcuda's export.
    ok(unsafe { cuCtxDestroy_v2(c) });
    no_leaks();
}

#[test]
fn device_memory_and_arrays_copy_both_ways_and_array_to_array() {
    let _g = serial();
    let c = ctx();
    let (w, h, elem) = (50usize, 20usize, 2usize); // HALF × 1
    let row = w * elem;
    let a = create(desc3(w, h, 0, CU_AD_FORMAT_HALF, 1, 0));
    let b = create(desc3(w, h, 0, CU_AD_FORMAT_HALF, 1, 0));
    let dpitch = 128usize;
    let reference = pattern(dpitch * h, 3);
    // SAFETY (all below): softcuda's exports with valid descriptors and buffers.
    unsafe {
        let (mut d, mut e) = (0, 0);
        ok(cuMemAlloc_v2(&mut d, dpitch * h));
        ok(cuMemAlloc_v2(&mut e, dpitch * h));
        ok(cuMemcpyHtoD_v2(
            d,
            reference.as_ptr().cast(),
            reference.len(),
        ));
        // Device (pitched, from byte 6 of row 2) → array at (10 bytes, 4): 30 × 12.
        let (sx, sy, dx, dy, rw, rh) = (6, 2, 10, 4, 30, 12);
        let mut p = m2(rw, rh);
        p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        p.srcDevice = d;
        p.srcPitch = dpitch;
        p.srcXInBytes = sx;
        p.srcY = sy;
        p.dstMemoryType = CU_MEMORYTYPE_ARRAY;
        p.dstArray = a;
        p.dstXInBytes = dx;
        p.dstY = dy;
        ok(cuMemcpy2D_v2(&p));
        let mut want = vec![0u8; row * h];
        for r in 0..rh {
            want[(dy + r) * row + dx..][..rw]
                .copy_from_slice(&reference[(sy + r) * dpitch + sx..][..rw]);
        }
        assert_eq!(dump(a, row, h, 1), want);
        // Array → array (the whole of a into b at an offset is out of bounds; a part fits).
        let mut p = m2(rw, rh);
        p.srcMemoryType = CU_MEMORYTYPE_ARRAY;
        p.srcArray = a;
        p.srcXInBytes = dx;
        p.srcY = dy;
        p.dstMemoryType = CU_MEMORYTYPE_ARRAY;
        p.dstArray = b;
        ok(cuMemcpy2D_v2(&p));
        // Array b → device e, pitched.
        ok(cuMemsetD8_v2(e, 0xAB, dpitch * h));
        let mut p = m2(rw, rh);
        p.srcMemoryType = CU_MEMORYTYPE_ARRAY;
        p.srcArray = b;
        p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        p.dstDevice = e;
        p.dstPitch = dpitch;
        ok(cuMemcpy2D_v2(&p));
        let mut back = vec![0u8; dpitch * h];
        ok(cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), e, back.len()));
        for r in 0..h {
            let got = &back[r * dpitch..][..dpitch];
            if r < rh {
                assert_eq!(
                    &got[..rw],
                    &reference[(sy + r) * dpitch + sx..][..rw],
                    "row {r}"
                );
                assert!(got[rw..].iter().all(|&x| x == 0xAB));
            } else {
                assert!(got.iter().all(|&x| x == 0xAB), "row {r} untouched");
            }
        }
        // A device side out of its allocation is refused.
        let mut p = m2(row, h);
        p.srcMemoryType = CU_MEMORYTYPE_ARRAY;
        p.srcArray = a;
        p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        p.dstDevice = e + (dpitch * h) as u64 - 8;
        p.dstPitch = dpitch;
        assert_eq!(cuMemcpy2D_v2(&p), code::INVALID_VALUE);
        ok(cuMemFree_v2(d));
        ok(cuMemFree_v2(e));
    }
    destroy(a);
    destroy(b);
    // SAFETY: softcuda's export.
    ok(unsafe { cuCtxDestroy_v2(c) });
    no_leaks();
}

#[test]
fn sub_boxes_of_3d_arrays_and_layers_copy_exactly() {
    let _g = serial();
    let c = ctx();
    let (w, h, d, elem) = (9usize, 7usize, 5usize, 2usize); // UNSIGNED_INT16 × 1
    let row = w * elem;
    let a = create(desc3(w, h, d, CU_AD_FORMAT_UNSIGNED_INT16, 1, 0));
    let mut reference = pattern(row * h * d, 11);
    fill(a, &reference, row, h, d);
    let at = |x: usize, y: usize, z: usize| (z * h + y) * row + x;
    // SAFETY (all below): softcuda's exports with valid descriptors and buffers.
    unsafe {
        // Read the box at (2 elements, 1, 1) of 4 × 3 × 2 into a padded host box.
        let (x, y, z, bw, bh, bd) = (2 * elem, 1, 1, 4 * elem, 3, 2);
        let (pitch, height) = (bw + 5, bh + 2);
        let mut out = vec![0u8; pitch * height * bd];
        let mut p = m3(bw, bh, bd);
        p.srcMemoryType = CU_MEMORYTYPE_ARRAY;
        p.srcArray = a;
        (p.srcXInBytes, p.srcY, p.srcZ) = (x, y, z);
        p.dstMemoryType = CU_MEMORYTYPE_HOST;
        p.dstHost = out.as_mut_ptr().cast();
        (p.dstPitch, p.dstHeight) = (pitch, height);
        ok(cuMemcpy3D_v2(&p));
        for k in 0..bd {
            for r in 0..bh {
                assert_eq!(
                    &out[(k * height + r) * pitch..][..bw],
                    &reference[at(x, y + r, z + k)..][..bw],
                    "slice {k} row {r}"
                );
            }
        }
        // Write a 3 × 2 × 3 box at (5 elements, 4, 2) from device memory.
        let (x, y, z, bw, bh, bd) = (5 * elem, 4, 2, 3 * elem, 2, 3);
        let src = pattern(bw * bh * bd, 200);
        let mut dev = 0;
        ok(cuMemAlloc_v2(&mut dev, src.len()));
        ok(cuMemcpyHtoD_v2(dev, src.as_ptr().cast(), src.len()));
        let mut p = m3(bw, bh, bd);
        p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        p.srcDevice = dev;
        p.dstMemoryType = CU_MEMORYTYPE_ARRAY;
        p.dstArray = a;
        (p.dstXInBytes, p.dstY, p.dstZ) = (x, y, z);
        ok(cuMemcpy3D_v2(&p));
        for k in 0..bd {
            for r in 0..bh {
                reference[at(x, y + r, z + k)..][..bw]
                    .copy_from_slice(&src[(k * bh + r) * bw..][..bw]);
            }
        }
        assert_eq!(dump(a, row, h, d), reference);
        // Out of bounds in depth, and a LOD.
        p.dstZ = d - bd + 1;
        assert_eq!(
            cuMemcpy3D_v2(&p),
            code::INVALID_VALUE,
            "past the last slice"
        );
        p.dstZ = z;
        p.dstLOD = 1;
        assert_eq!(cuMemcpy3D_v2(&p), code::INVALID_VALUE, "a LOD");
        ok(cuMemFree_v2(dev));
    }
    destroy(a);
    // A 2-D layered array: Z is the layer; a 1-D layered array: Y only 0.
    let (w, h, layers) = (8usize, 4usize, 3usize);
    let l = create(desc3(
        w,
        h,
        layers,
        CU_AD_FORMAT_UNSIGNED_INT8,
        1,
        CUDA_ARRAY3D_LAYERED,
    ));
    let layer = pattern(w * h, 1);
    let mut p = m3(w, h, 1);
    p.srcMemoryType = CU_MEMORYTYPE_HOST;
    p.srcHost = layer.as_ptr().cast();
    p.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    p.dstArray = l;
    p.dstZ = 2;
    // SAFETY: a valid descriptor.
    ok(unsafe { cuMemcpy3D_v2(&p) });
    let all = dump(l, w, h, layers);
    assert!(
        all[..2 * w * h].iter().all(|&b| b == 0),
        "layers 0 and 1 untouched (zeroed)"
    );
    assert_eq!(&all[2 * w * h..], &layer[..]);
    p.dstZ = 3;
    // SAFETY: a valid descriptor.
    assert_eq!(
        unsafe { cuMemcpy3D_v2(&p) },
        code::INVALID_VALUE,
        "no layer 3"
    );
    destroy(l);
    let one = create(desc3(
        16,
        0,
        2,
        CU_AD_FORMAT_UNSIGNED_INT8,
        1,
        CUDA_ARRAY3D_LAYERED,
    ));
    let mut p = m3(16, 2, 1);
    p.srcMemoryType = CU_MEMORYTYPE_HOST;
    p.srcHost = layer.as_ptr().cast();
    p.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    p.dstArray = one;
    // SAFETY: a valid descriptor.
    assert_eq!(
        unsafe { cuMemcpy3D_v2(&p) },
        code::INVALID_VALUE,
        "a 1-D array has one row"
    );
    p.Height = 1;
    p.Depth = 2;
    // SAFETY: a valid descriptor.
    ok(unsafe { cuMemcpy3D_v2(&p) });
    assert_eq!(dump(one, 16, 1, 2), layer[..32].to_vec());
    destroy(one);
    // SAFETY: softcuda's export.
    ok(unsafe { cuCtxDestroy_v2(c) });
    no_leaks();
}

#[test]
fn one_dimensional_copies_reach_the_first_row_only() {
    let _g = serial();
    let c = ctx();
    let n = 64usize; // elements of 4 bytes (UNSIGNED_INT32)
    let a = create(desc3(n, 0, 0, CU_AD_FORMAT_UNSIGNED_INT32, 1, 0));
    let b = create(desc3(n, 0, 0, CU_AD_FORMAT_UNSIGNED_INT32, 1, 0));
    let src = pattern(4 * n, 5);
    // SAFETY (all below): softcuda's exports with valid buffers.
    unsafe {
        ok(cuMemcpyHtoA_v2(a, 0, src.as_ptr().cast(), 4 * n));
        let mut back = vec![0u8; 100];
        ok(cuMemcpyAtoH_v2(back.as_mut_ptr().cast(), a, 40, 100));
        assert_eq!(back, src[40..140]);
        // Array → array at offsets, then → device → host.
        ok(cuMemcpyAtoA_v2(b, 16, a, 100, 64));
        let mut d = 0;
        ok(cuMemAlloc_v2(&mut d, 4 * n));
        ok(cuMemsetD8_v2(d, 0, 4 * n));
        ok(cuMemcpyAtoD_v2(d, b, 0, 4 * n));
        let mut whole = vec![0u8; 4 * n];
        ok(cuMemcpyDtoH_v2(whole.as_mut_ptr().cast(), d, 4 * n));
        let mut want = vec![0u8; 4 * n];
        want[16..80].copy_from_slice(&src[100..164]);
        assert_eq!(whole, want);
        // Device → array, then compare.
        ok(cuMemcpyHtoD_v2(d, src.as_ptr().cast(), 4 * n));
        ok(cuMemcpyDtoA_v2(b, 8, d, 4 * n - 8));
        let mut got = vec![0u8; 4 * n];
        ok(cuMemcpyAtoH_v2(got.as_mut_ptr().cast(), b, 0, 4 * n));
        assert_eq!(&got[8..], &src[..4 * n - 8]);
        // Bounds and handles.
        let mut x = [0u8; 8];
        assert_eq!(
            cuMemcpyAtoH_v2(x.as_mut_ptr().cast(), a, 4 * n - 4, 8),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuMemcpyHtoA_v2(a, usize::MAX, x.as_ptr().cast(), 8),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuMemcpyHtoA_v2(null_mut(), 0, x.as_ptr().cast(), 8),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuMemcpyAtoD_v2(d + 4 * n as u64, a, 0, 8),
            code::INVALID_VALUE,
            "device side out of its allocation"
        );
        ok(cuMemcpyAtoH_v2(x.as_mut_ptr().cast(), a, 4 * n, 0)); // nothing, at the end
        // A 2-D array: a 1-D copy reaches its first row only.
        let two = create(desc3(4, 3, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0));
        ok(cuMemcpyHtoA_v2(two, 0, src.as_ptr().cast(), 4));
        assert_eq!(
            cuMemcpyHtoA_v2(two, 0, src.as_ptr().cast(), 5),
            code::INVALID_VALUE
        );
        assert_eq!(dump(two, 4, 3, 1)[..4], src[..4]);
        destroy(two);
        ok(cuMemFree_v2(d));
        destroy(a);
        destroy(b);
        assert_eq!(
            cuMemcpyHtoA_v2(a, 0, x.as_ptr().cast(), 8),
            code::INVALID_VALUE,
            "destroyed array"
        );
        ok(cuCtxDestroy_v2(c));
    }
    no_leaks();
}
