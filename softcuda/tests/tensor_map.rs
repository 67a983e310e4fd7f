//! softcuda's tensor-map functions through the C ABI: the descriptor layout it
//! documents, the header's rules (`CUDA_ERROR_INVALID_VALUE`, nothing written), the
//! map's own alignment, the current context, address replacement, `cuGetProcAddress`,
//! and a kernel that receives a descriptor by value. TMA instructions are refused at
//! load, as `docs/softcuda.md` says.

mod common;

use common::{no_leaks, ok, serial};
use softcuda::api::{context::*, memory::*, module::*, proc::*, stream::*, tensor_map::*};
use softcuda::types::*;
use std::ffi::{c_int, c_uint, c_void};

/// A 64-byte-aligned descriptor, as `CUtensorMap` is in C.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Map([u8; 128]);

const F32: c_uint = 7;
const F16: c_uint = 6;

/// Runs `f` under a fresh context of device 0 with 8 KiB of device memory; then
/// destroys both.
fn with_memory(f: impl FnOnce(u64)) {
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        let mut ctx = std::ptr::null_mut();
        ok(cuCtxCreate_v2(&mut ctx, 0, 0));
        let mut p = 0;
        ok(cuMemAlloc_v2(&mut p, 8192));
        f(p);
        ok(cuMemFree_v2(p));
        ok(cuCtxDestroy_v2(ctx));
    }
}

/// `cuTensorMapEncodeTiled` of an f32 64 × 8 × 4 tensor (rows of 256 bytes) at
/// `address` into `map`, with `edit` applied to the parameters first.
#[allow(clippy::type_complexity)]
fn tiled(
    map: *mut c_void,
    address: u64,
    edit: impl FnOnce(&mut [u64; 3], &mut [u64; 2], &mut [u32; 3], &mut [u32; 3], &mut [c_uint; 5]),
) -> CUresult {
    let (mut dims, mut strides, mut boxes, mut es) =
        ([64u64, 8, 4], [256u64, 2048], [16u32, 4, 2], [1u32, 1, 1]);
    // dtype, interleave, swizzle, l2, oob
    let mut e = [F32, 0, 0, 0, 0];
    edit(&mut dims, &mut strides, &mut boxes, &mut es, &mut e);
    // SAFETY: arrays of the rank's counts; `map` is the caller's.
    unsafe {
        cuTensorMapEncodeTiled(
            map,
            e[0],
            3,
            address as *mut c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            es.as_ptr(),
            e[1],
            e[2],
            e[3],
            e[4],
        )
    }
}

#[test]
fn a_tiled_descriptor_has_the_documented_layout() {
    let _g = serial();
    with_memory(|p| {
        // Swizzle 32B (so an inner box of 8 × 4 = 32 bytes), L2 128B, NaN fill.
        let mut m = Map([0xAA; 128]);
        let r = tiled((&raw mut m).cast(), p, |_, _, b, es, e| {
            b[0] = 8;
            es[2] = 3;
            *e = [F32, 0, 1, 2, 1];
        });
        ok(r);
        let b = m.0;
        assert_eq!(&b[0..4], b"SCTM");
        assert_eq!(&b[4..12], &[1, 3, 7, 0, 1, 2, 1, 0]);
        assert_eq!(&b[12..16], &[0, 0, 0, 0]);
        assert_eq!(u64::from_le_bytes(b[16..24].try_into().unwrap()), p);
        let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        assert_eq!(
            [word(24), word(32), word(40), word(48), word(56)],
            [64, 8, 4, 0, 0]
        );
        assert_eq!([word(64), word(72), word(80), word(88)], [256, 2048, 0, 0]);
        assert_eq!(&b[96..101], &[7, 3, 1, 0, 0]);
        assert_eq!(&b[101..106], &[1, 1, 3, 0, 0]);
        assert!(b[106..].iter().all(|&x| x == 0));
    });
    no_leaks();
}

#[test]
fn every_rule_is_invalid_value_and_writes_nothing() {
    let _g = serial();
    with_memory(|p| {
        type Edit =
            fn(&mut [u64; 3], &mut [u64; 2], &mut [u32; 3], &mut [u32; 3], &mut [c_uint; 5]);
        let cases: &[(&str, Edit)] = &[
            ("data type", |_, _, _, _, e| e[0] = 16),
            ("interleave", |_, _, _, _, e| e[1] = 3),
            ("swizzle", |_, _, _, _, e| e[2] = 7),
            ("L2 promotion", |_, _, _, _, e| e[3] = 4),
            ("fill", |_, _, _, _, e| e[4] = 2),
            ("zero dimension", |d, _, _, _, _| d[1] = 0),
            ("dimension over 2^32", |d, _, _, _, _| d[2] = (1 << 32) + 1),
            ("stride not a multiple of 16", |_, s, _, _, _| s[0] = 264),
            ("stride at 2^40", |_, s, _, _, _| s[1] = 1 << 40),
            ("stride below a row", |_, s, _, _, _| s[0] = 128),
            ("stride below a plane", |_, s, _, _, _| s[1] = 1024),
            ("32B interleave strides", |_, s, _, _, e| {
                *s = [272, 2176];
                e[1] = 2;
                e[2] = 1;
            }),
            ("32B interleave without 32B swizzle", |_, _, _, _, e| {
                e[1] = 2
            }),
            ("box 0", |_, _, b, _, _| b[1] = 0),
            ("box 257", |_, _, b, _, _| b[1] = 257),
            ("inner box not 16 bytes", |_, _, b, _, _| b[0] = 3),
            ("inner box over the 32B span", |_, _, _, _, e| e[2] = 1),
            ("inner box over the 128B span", |_, _, b, _, e| {
                b[0] = 64;
                e[2] = 3;
            }),
            ("element stride 0", |_, _, _, es, _| es[0] = 0),
            ("element stride 9", |_, _, _, es, _| es[1] = 9),
            ("NaN fill of integers", |_, _, _, _, e| *e = [2, 0, 0, 0, 1]),
            ("ALIGN16B dimension 0", |_, _, _, _, e| e[0] = 0xe),
            ("ALIGN8B odd dimension 0", |d, _, _, _, e| {
                d[0] = 63;
                e[0] = 0xd;
            }),
            ("16U6 with interleave", |d, s, b, _, e| {
                *d = [128, 8, 4];
                *s = [128, 1024];
                *b = [128, 1, 1];
                *e = [0xf, 1, 0, 0, 0];
            }),
            ("16U4_ALIGN16B store-only swizzle", |d, s, b, _, e| {
                *d = [128, 8, 4];
                *s = [128, 1024];
                *b = [128, 1, 1];
                *e = [0xe, 0, 6, 0, 0];
            }),
            ("ALIGN16B box", |d, s, b, _, e| {
                *d = [128, 8, 4];
                *s = [128, 1024];
                *b = [64, 1, 1];
                *e = [0xf, 0, 0, 0, 0];
            }),
            ("NaN fill of packed values", |d, s, b, _, e| {
                *d = [128, 8, 4];
                *s = [128, 1024];
                *b = [128, 1, 1];
                *e = [0xf, 0, 0, 0, 1];
            }),
        ];
        for (what, edit) in cases {
            let mut m = Map([0xAA; 128]);
            assert_eq!(
                tiled((&raw mut m).cast(), p, edit),
                code::INVALID_VALUE,
                "{what}"
            );
            assert!(m.0.iter().all(|&b| b == 0xAA), "{what}: written");
        }
        let mut m = Map([0; 128]);
        // The address: 16-byte alignment; 32 with 32-byte interleave.
        assert_eq!(
            tiled((&raw mut m).cast(), p + 8, |_, _, _, _, _| {}),
            code::INVALID_VALUE
        );
        ok(tiled((&raw mut m).cast(), p + 16, |_, _, _, _, _| {}));
        assert_eq!(
            tiled((&raw mut m).cast(), p + 16, |_, _, b, _, e| {
                b[0] = 8;
                e[1] = 2;
                e[2] = 1;
            }),
            code::INVALID_VALUE
        );
        // The descriptor itself must be 64-byte aligned, and the address not null.
        let mut two = [Map([0; 128]); 2];
        let inside = two.as_mut_ptr().cast::<u8>().wrapping_add(32);
        assert_eq!(
            tiled(inside.cast(), p, |_, _, _, _, _| {}),
            code::INVALID_VALUE
        );
        assert_eq!(
            tiled((&raw mut m).cast(), 0, |_, _, _, _, _| {}),
            code::INVALID_VALUE
        );
        // Rank 0 and 6, and null arrays.
        // SAFETY: the arrays are never read: the rank is refused first.
        unsafe {
            let d = [1u64; 6];
            for rank in [0, 6] {
                assert_eq!(
                    cuTensorMapEncodeTiled(
                        (&raw mut m).cast(),
                        F32,
                        rank,
                        p as *mut c_void,
                        d.as_ptr(),
                        d.as_ptr(),
                        std::ptr::null(),
                        std::ptr::null(),
                        0,
                        0,
                        0,
                        0
                    ),
                    code::INVALID_VALUE
                );
            }
            assert_eq!(
                cuTensorMapEncodeTiled(
                    (&raw mut m).cast(),
                    F32,
                    1,
                    p as *mut c_void,
                    d.as_ptr(),
                    d.as_ptr(),
                    std::ptr::null(),
                    [1u32].as_ptr(),
                    0,
                    0,
                    0,
                    0
                ),
                code::INVALID_VALUE
            );
        }
    });
    // Without a current context.
    let mut m = Map([0; 128]);
    assert_eq!(
        tiled((&raw mut m).cast(), 0x1000, |_, _, _, _, _| {}),
        code::INVALID_CONTEXT
    );
    no_leaks();
}

/// `cuTensorMapEncodeIm2col` of f16 NHWC (C 32, W 8, H 8, N 2).
fn im2col(
    map: *mut c_void,
    address: u64,
    lower: [c_int; 2],
    upper: [c_int; 2],
    channels: c_uint,
    pixels: c_uint,
    swizzle: c_uint,
) -> CUresult {
    let (dims, strides, es) = ([32u64, 8, 8, 2], [64u64, 512, 4096], [1u32; 4]);
    // SAFETY: arrays of the rank's counts.
    unsafe {
        cuTensorMapEncodeIm2col(
            map,
            F16,
            4,
            address as *mut c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            lower.as_ptr(),
            upper.as_ptr(),
            channels,
            pixels,
            es.as_ptr(),
            0,
            swizzle,
            0,
            0,
        )
    }
}

/// `cuTensorMapEncodeIm2colWide` of f16 NWC (C 32, W 64, N 2).
fn wide(
    map: *mut c_void,
    address: u64,
    lower: c_int,
    upper: c_int,
    pixels: c_uint,
    mode: c_uint,
    swizzle: c_uint,
) -> CUresult {
    let (dims, strides, es) = ([32u64, 64, 2], [64u64, 4096], [1u32; 3]);
    // SAFETY: arrays of the rank's counts.
    unsafe {
        cuTensorMapEncodeIm2colWide(
            map,
            F16,
            3,
            address as *mut c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            lower,
            upper,
            32,
            pixels,
            es.as_ptr(),
            0,
            mode,
            swizzle,
            0,
            0,
        )
    }
}

#[test]
fn im2col_descriptors_and_their_rules() {
    let _g = serial();
    with_memory(|p| {
        let mut m = Map([0; 128]);
        let map = (&raw mut m).cast();
        ok(im2col(map, p, [-1, -2], [1, 2], 32, 64, 0));
        assert_eq!(&m.0[4..8], &[2, 4, F16 as u8, 0]);
        assert_eq!(&m.0[12..16], &[32, 0, 64, 0]);
        assert_eq!(&m.0[106..110], &[0xff, 0xff, 0xfe, 0xff]);
        assert_eq!(&m.0[112..116], &[1, 0, 2, 0]);
        for (what, r) in [
            (
                "rank-4 corner",
                im2col(map, p, [-129, 0], [0, 0], 32, 64, 0),
            ),
            (
                "rank-4 upper corner",
                im2col(map, p, [0, 0], [128, 0], 32, 64, 0),
            ),
            ("empty box", im2col(map, p, [4, 0], [-4, 0], 32, 64, 0)),
            ("no channels", im2col(map, p, [0, 0], [0, 0], 0, 64, 0)),
            ("257 channels", im2col(map, p, [0, 0], [0, 0], 257, 64, 0)),
            ("1025 pixels", im2col(map, p, [0, 0], [0, 0], 32, 1025, 0)),
            (
                "channels over the span",
                im2col(map, p, [0, 0], [0, 0], 32, 64, 1),
            ),
        ] {
            assert_eq!(r, code::INVALID_VALUE, "{what}");
        }
        ok(wide(map, p, -2, 2, 64, 0, 3));
        assert_eq!(&m.0[4..12], &[3, 3, F16 as u8, 0, 3, 0, 0, 0]);
        assert_eq!(&m.0[106..108], &[0xfe, 0xff]);
        ok(wide(map, p, 0, 0, 0, 1, 2)); // W128 ignores pixelsPerColumn
        ok(wide(map, p, 0, 0, 5000, 1, 2));
        assert_eq!(&m.0[11..16], &[1, 32, 0, 0, 0]);
        for (what, r) in [
            ("no swizzle", wide(map, p, 0, 0, 64, 0, 0)),
            ("32B swizzle", wide(map, p, 0, 0, 64, 0, 1)),
            ("mode", wide(map, p, 0, 0, 64, 2, 3)),
            ("width", wide(map, p, 40_000, 0, 64, 0, 3)),
            ("empty box", wide(map, p, 40, -30, 64, 0, 3)),
            ("pixels in W mode", wide(map, p, 0, 0, 1025, 0, 3)),
        ] {
            assert_eq!(r, code::INVALID_VALUE, "{what}");
        }
    });
    no_leaks();
}

#[test]
fn replacing_the_address() {
    let _g = serial();
    with_memory(|p| {
        let mut m = Map([0; 128]);
        let map: *mut c_void = (&raw mut m).cast();
        ok(tiled(map, p, |_, _, _, _, _| {}));
        // SAFETY: a valid, aligned descriptor.
        unsafe {
            ok(cuTensorMapReplaceAddress(map, (p + 4096) as *mut c_void));
            assert_eq!(
                u64::from_le_bytes(m.0[16..24].try_into().unwrap()),
                p + 4096
            );
            let before = m.0;
            assert_eq!(
                cuTensorMapReplaceAddress(map, (p + 8) as *mut c_void),
                code::INVALID_VALUE
            );
            assert_eq!(
                cuTensorMapReplaceAddress(map, std::ptr::null_mut()),
                code::INVALID_VALUE
            );
            assert_eq!(m.0, before);
            // Bytes softcuda did not encode are refused.
            let mut junk = Map([7; 128]);
            assert_eq!(
                cuTensorMapReplaceAddress((&raw mut junk).cast(), p as *mut c_void),
                code::INVALID_VALUE
            );
        }
    });
    no_leaks();
}

#[test]
fn the_functions_are_found_by_get_proc_address() {
    let _g = serial();
    for (name, ver) in [
        (c"cuTensorMapEncodeTiled", 12000),
        (c"cuTensorMapEncodeIm2col", 12000),
        (c"cuTensorMapEncodeIm2colWide", 12080),
        (c"cuTensorMapReplaceAddress", 12000),
    ] {
        let mut f = std::ptr::null_mut();
        // SAFETY: valid pointers.
        ok(unsafe { cuGetProcAddress_v2(name.as_ptr(), &mut f, ver, 0, std::ptr::null_mut()) });
        assert!(!f.is_null());
    }
}

const KERNEL: &str = concat!(
    include_str!("../../kernels/handwritten_tensor_map.ptx"),
    "\0"
);

#[test]
fn a_kernel_receives_the_descriptor_by_value() {
    let _g = serial();
    with_memory(|p| {
        let mut m = Map([0; 128]);
        ok(tiled((&raw mut m).cast(), p, |_, _, _, _, _| {}));
        // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
        unsafe {
            let mut module = std::ptr::null_mut();
            ok(cuModuleLoadData(&mut module, KERNEL.as_ptr().cast()));
            let mut f = std::ptr::null_mut();
            ok(cuModuleGetFunction(
                &mut f,
                module,
                c"copy_tensor_map".as_ptr(),
            ));
            let (mut off, mut size) = (0, 0);
            ok(cuFuncGetParamInfo(f, 1, &mut off, &mut size));
            assert_eq!((off, size), (64, 128));
            let mut out = 0;
            ok(cuMemAlloc_v2(&mut out, 17 * 8));
            let slice = [out, 17u64];
            let tag = 42u32;
            let mut args: [*mut c_void; 3] = [
                (&raw const tag).cast_mut().cast(),
                (&raw mut m).cast(),
                (&raw const slice).cast_mut().cast(),
            ];
            ok(cuLaunchKernel(
                f,
                1,
                1,
                1,
                32,
                1,
                1,
                0,
                std::ptr::null_mut(),
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            ));
            ok(cuStreamSynchronize(std::ptr::null_mut()));
            let mut got = [0u64; 17];
            ok(cuMemcpyDtoH_v2(got.as_mut_ptr().cast(), out, 17 * 8));
            let want: Vec<u64> =
                m.0.chunks(8)
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                    .collect();
            assert_eq!(&got[..16], &want[..]);
            assert_eq!(got[16], 42);
            ok(cuMemFree_v2(out));
            ok(cuModuleUnload(module));
        }
    });
    no_leaks();
}

#[test]
fn tma_instructions_are_not_executed_a_module_using_them_fails_to_load() {
    let _g = serial();
    let instructions = [
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [sh], [%rd1, {%r1, %r1}], [bar];",
        "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%rd1, {%r1, %r1}], [sh];",
        "tensormap.replace.tile.global_address.global.b1024.b64 [%rd1], %rd2;",
    ];
    with_memory(|_| {
        // The same module without a TMA instruction loads: the refusal is the instruction's.
        for inst in std::iter::once("").chain(instructions) {
            let ptx = format!(
                ".version 8.3\n.target sm_90a\n.address_size 64\n\
                 .visible .entry k(.param .align 64 .b8 k_0[128])\n{{\n\
                 .reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n\
                 .shared .align 128 .b8 sh[1024];\n.shared .align 8 .b64 bar;\n\
                 mov.u64 %rd1, k_0;\nmov.u64 %rd2, 0;\nmov.u32 %r1, 0;\n{inst}\nret;\n}}\n\0"
            );
            let mut module = std::ptr::null_mut();
            // SAFETY: a NUL-terminated image and a valid out-pointer.
            let r = unsafe { cuModuleLoadData(&mut module, ptx.as_ptr().cast()) };
            if inst.is_empty() {
                ok(r);
                // SAFETY: the module just loaded.
                ok(unsafe { cuModuleUnload(module) });
                continue;
            }
            assert_eq!(r, code::INVALID_PTX, "{inst} must not load as if it ran");
            assert!(module.is_null());
        }
    });
    no_leaks();
}
