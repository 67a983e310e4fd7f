//! Texture objects through the C ABI and the PTX instructions that read them
//! (`tex`, `tex.level`, `txq`): creation checks, descriptors, handles and live
//! counts; fetches of every format class and channel count, read mode, address
//! mode, filter, normalized coordinates, layered and 3-D arrays, linear and
//! pitch-2-D memory and mipmaps, compared with the CPU reference of
//! `common/textures.rs` (bit for bit; linear filtering to the exact 8-bit
//! fixed-point result); `txq`/`suq`; and the faults (bad handle, destroyed array,
//! `.trap`) with memcheck's reports. Surfaces: `tests/surfaces.rs`. Every test ends
//! with no live object.

#[path = "common/arrays.rs"]
mod arrays_common;
mod common;
#[path = "common/textures.rs"]
mod textures_common;

use arrays_common::{create, ctx, desc3, destroy, fill};
use common::{fault, function, launch_kernel, no_leaks, ok, serial};
use softcuda::api::texture::*;
use softcuda::api::{array::*, context::*, memory::*};
use softcuda::control;
use softcuda::types::*;
use std::ffi::c_void;
use std::ptr::{null, null_mut};
use textures_common::*;

// ---------------------------------------------------------------- objects

#[test]
fn objects_are_checked_described_counted_and_destroyed() {
    let _g = serial();
    let c = ctx();
    let a = create(desc3(8, 4, 0, CU_AD_FORMAT_FLOAT, 2, 0));
    let r = res_array(a);
    let t = tex_desc(
        [1, 3, 0],
        1,
        CU_TRSF_NORMALIZED_COORDINATES,
        [0.5, 1.0, 2.0, 3.0],
    );
    let h = try_tex(&r, &t).expect("create");
    assert_ne!(h, 0);
    assert_eq!(control::live_counts().textures, 1);
    // SAFETY (all below): softcuda's exports with valid or deliberately bad pointers.
    unsafe {
        let mut back = CUDA_RESOURCE_DESC::default();
        ok(cuTexObjectGetResourceDesc(&mut back, h));
        assert_eq!(back.resType, CU_RESOURCE_TYPE_ARRAY);
        assert_eq!(back.res.array.hArray, a);
        let mut td = CUDA_TEXTURE_DESC::default();
        ok(cuTexObjectGetTextureDesc(&mut td, h));
        assert_eq!(td, t);
        let mut view = [0u8; 128];
        assert_eq!(
            cuTexObjectGetResourceViewDesc(view.as_mut_ptr().cast(), h),
            code::INVALID_VALUE
        );
        // Null pointers.
        let mut x = 0;
        assert_eq!(
            cuTexObjectCreate(null_mut(), &r, &t, null()),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuTexObjectCreate(&mut x, null(), &t, null()),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuTexObjectCreate(&mut x, &r, null(), null()),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuTexObjectGetResourceDesc(null_mut(), h),
            code::INVALID_VALUE
        );
        // A view: not supported.
        assert_eq!(
            cuTexObjectCreate(&mut x, &r, &t, view.as_ptr().cast()),
            code::NOT_SUPPORTED
        );
        // Bad descriptors.
        let bad = [
            tex_desc([4, 0, 0], 0, 0, [0.0; 4]),
            tex_desc([0, 0, 0], 2, 0, [0.0; 4]),
            tex_desc([0, 0, 0], 0, 0x100, [0.0; 4]),
        ];
        for b in bad {
            assert_eq!(try_tex(&r, &b), Err(code::INVALID_VALUE));
        }
        assert_eq!(
            try_tex(&r, &tex_desc([0; 3], 0, CU_TRSF_SRGB, [0.0; 4])),
            Err(code::NOT_SUPPORTED)
        );
        let mut forged = res_array(0x1234 as CUarray);
        assert_eq!(try_tex(&forged, &t), Err(code::INVALID_VALUE));
        forged.resType = 9;
        assert_eq!(try_tex(&forged, &t), Err(code::INVALID_VALUE));
        let mut flagged = r;
        flagged.flags = 1;
        assert_eq!(try_tex(&flagged, &t), Err(code::INVALID_VALUE));
        // Linear and pitch-2-D: alignment, size and pitch limits.
        let mut d = 0;
        ok(cuMemAlloc_v2(&mut d, 1 << 16));
        let mut lin = CUDA_RESOURCE_DESC {
            resType: CU_RESOURCE_TYPE_LINEAR,
            ..Default::default()
        };
        let linear = |ptr, size| CUDA_RESOURCE_DESC_linear {
            devPtr: ptr,
            format: CU_AD_FORMAT_FLOAT,
            numChannels: 1,
            sizeInBytes: size,
        };
        lin.res.linear = linear(d + 4, 1024);
        assert_eq!(try_tex(&lin, &t), Err(code::INVALID_VALUE), "misaligned");
        lin.res.linear = linear(d, 0);
        assert_eq!(try_tex(&lin, &t), Err(code::INVALID_VALUE), "empty");
        lin.res.linear = linear(d, (1 << 30) + 4);
        assert_eq!(
            try_tex(&lin, &t),
            Err(code::INVALID_VALUE),
            "over the 1-D linear limit"
        );
        lin.res.linear = linear(d, 1024);
        assert_eq!(
            cuTexObjectCreate(&mut x, &lin, &t, view.as_ptr().cast()),
            code::INVALID_VALUE,
            "a view of linear memory"
        );
        let hl = try_tex(&lin, &t).expect("linear");
        let mut back = CUDA_RESOURCE_DESC::default();
        ok(cuTexObjectGetResourceDesc(&mut back, hl));
        assert_eq!(back.resType, CU_RESOURCE_TYPE_LINEAR);
        assert_eq!(back.res.linear, linear(d, 1024));
        let mut p2 = CUDA_RESOURCE_DESC {
            resType: CU_RESOURCE_TYPE_PITCH2D,
            ..Default::default()
        };
        let pitch = |w, h, p| CUDA_RESOURCE_DESC_pitch2D {
            devPtr: d,
            format: CU_AD_FORMAT_UNSIGNED_INT8,
            numChannels: 4,
            width: w,
            height: h,
            pitchInBytes: p,
        };
        for (w, h, p) in [
            (16, 4, 48),
            (16, 4, 32),
            (0, 4, 64),
            (16, 65_001, 64),
            (16, 4, 2_097_152),
        ] {
            p2.res.pitch2D = pitch(w, h, p);
            assert_eq!(
                try_tex(&p2, &t),
                Err(code::INVALID_VALUE),
                "{w}x{h} pitch {p}"
            );
        }
        p2.res.pitch2D = pitch(16, 4, 64);
        let hp = try_tex(&p2, &t).expect("pitch2D");
        // Surfaces: arrays with SURFACE_LDST only.
        assert_eq!(try_surf(&r), Err(code::INVALID_VALUE), "no SURFACE_LDST");
        assert_eq!(try_surf(&lin), Err(code::INVALID_VALUE), "linear memory");
        let sa = create(desc3(
            8,
            4,
            0,
            CU_AD_FORMAT_FLOAT,
            1,
            CUDA_ARRAY3D_SURFACE_LDST,
        ));
        let s = try_surf(&res_array(sa)).expect("surface");
        assert_ne!(s, h);
        ok(cuSurfObjectGetResourceDesc(&mut back, s));
        assert_eq!(back.res.array.hArray, sa);
        assert_eq!(cuSurfObjectCreate(null_mut(), &r), code::INVALID_VALUE);
        assert_eq!(control::live_counts().textures, 3);
        assert_eq!(control::live_counts().surfaces, 1);
        // A surface handle is no texture, and destroying twice fails.
        assert_eq!(cuTexObjectDestroy(s), code::INVALID_VALUE);
        ok(cuSurfObjectDestroy(s));
        assert_eq!(cuSurfObjectDestroy(s), code::INVALID_VALUE);
        ok(cuTexObjectDestroy(h));
        assert_eq!(cuTexObjectDestroy(h), code::INVALID_VALUE);
        assert_eq!(cuTexObjectGetTextureDesc(&mut td, h), code::INVALID_VALUE);
        assert_eq!(cuTexObjectDestroy(0), code::INVALID_VALUE);
        // A new handle is never an old one.
        let h2 = try_tex(&r, &t).expect("again");
        assert_ne!(h2, h);
        let _ = (hl, hp);
        // The context takes its objects with it.
        let _ = try_surf(&res_array(sa)).expect("surface");
        destroy(a);
        destroy(sa);
        ok(cuMemFree_v2(d));
        assert_eq!(control::live_counts().textures, 3);
        ok(cuCtxDestroy_v2(c));
    }
    assert_eq!(control::live_counts().textures, 0);
    assert_eq!(control::live_counts().surfaces, 0);
    no_leaks();
}

// ---------------------------------------------------------------- fetches

/// Float coordinates of a few fetches in and around a `w`-texel dimension.
fn sample_coords(norm: bool, w: usize) -> Vec<f32> {
    let unnorm = [
        -2.3,
        -0.5,
        0.0,
        0.25,
        0.5,
        0.74,
        1.0,
        1.5,
        2.9,
        3.49,
        w as f32 - 0.2,
        w as f32,
        w as f32 + 1.7,
    ];
    unnorm
        .iter()
        .map(|&u| if norm { u / w as f32 } else { u })
        .collect()
}

fn check_fetches(r: &Ref, g: &str, dims: usize, layered: bool) {
    let (a, t) = make_tex(r, layered, dims);
    let dty = if r.floats() {
        "f32"
    } else if matches!(
        r.format,
        CU_AD_FORMAT_SIGNED_INT8 | CU_AD_FORMAT_SIGNED_INT16 | CU_AD_FORMAT_SIGNED_INT32
    ) {
        "s32"
    } else {
        "u32"
    };
    let norm = r.flags & CU_TRSF_NORMALIZED_COORDINATES != 0;
    let xs = sample_coords(norm, r.size[0]);
    let ys = sample_coords(norm, r.size[1]);
    let mut input = Vec::new();
    let mut want = Vec::new();
    for (i, &x) in xs.iter().enumerate() {
        for (j, &y) in ys.iter().enumerate().step_by(2) {
            let z = ys[(i + j) % ys.len()] * r.size[2] as f32 / r.size[1] as f32;
            let layer = (i + j) as i32 % (r.size[2] as i32 + 2) - 1; // includes -1 and past the end
            input.push([x.to_bits(), y.to_bits(), z.to_bits(), layer as u32]);
            let l = if layered {
                layer.clamp(0, r.size[2] as i32 - 1) as usize
            } else {
                0
            };
            want.push(r.fetch(dims, [x, y, z], l));
        }
    }
    let got = run(&tex_body(g, dty, "f32"), t, &input).expect("launch");
    for (k, (g1, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(
            g1, w,
            "{g} format {:#x} ch {} modes {:?} linear {} flags {} at {:?}",
            r.format, r.ch, r.modes, r.linear, r.flags, input[k]
        );
    }
    destroy_tex(t);
    destroy(a);
}

#[test]
fn point_fetches_of_every_format_channel_count_read_mode_and_address_mode() {
    let _g = serial();
    let c = ctx();
    for (fi, &format) in FORMATS.iter().enumerate() {
        for ch in [1usize, 2, 4] {
            for flags in [0, CU_TRSF_READ_AS_INTEGER] {
                for (mi, modes) in [[1u32, 1, 1], [3, 3, 3], [0, 2, 1], [2, 0, 3]]
                    .iter()
                    .enumerate()
                {
                    let mut r = Ref {
                        format,
                        ch,
                        size: [5, 3, 1],
                        bytes: Vec::new(),
                        modes: *modes,
                        linear: false,
                        flags: flags
                            | if mi >= 2 {
                                CU_TRSF_NORMALIZED_COORDINATES
                            } else {
                                0
                            },
                        border: [0.25, -2.0, 7.0, 1.5],
                    };
                    let cb = r.cbytes();
                    r.bytes = bytes_of(5 * 3 * ch * cb, (fi * 31 + ch * 7 + mi) as u32, format);
                    check_fetches(&r, "2d", 2, false);
                }
            }
        }
    }
    ok(unsafe_ctx_destroy(c));
    no_leaks();
}

#[test]
fn linear_filtering_is_the_fixed_point_blend() {
    let _g = serial();
    let c = ctx();
    let cases = [
        (CU_AD_FORMAT_FLOAT, 1, 0),
        (CU_AD_FORMAT_FLOAT, 4, CU_TRSF_NORMALIZED_COORDINATES),
        (CU_AD_FORMAT_UNSIGNED_INT8, 4, 0),
        (CU_AD_FORMAT_SIGNED_INT16, 2, CU_TRSF_NORMALIZED_COORDINATES),
        (CU_AD_FORMAT_HALF, 2, 0),
    ];
    for (k, &(format, ch, flags)) in cases.iter().enumerate() {
        for modes in [[1u32, 1, 1], [3, 3, 3], [0, 2, 0], [2, 0, 2]] {
            for (g, dims, layered) in [
                ("1d", 1, false),
                ("2d", 2, false),
                ("3d", 3, false),
                ("a2d", 2, true),
                ("a1d", 1, true),
            ] {
                let mut r = Ref {
                    format,
                    ch,
                    size: match (dims, layered) {
                        (1, false) => [6, 1, 1],
                        (1, true) => [6, 1, 3],
                        (2, false) => [4, 3, 1],
                        _ => [4, 3, 3],
                    },
                    bytes: Vec::new(),
                    modes,
                    linear: true,
                    flags,
                    border: [1.0, 0.5, -0.75, 100.0],
                };
                let n = r.size.iter().product::<usize>() * ch * r.cbytes();
                r.bytes = bytes_of(n, k as u32 * 13 + dims as u32, format);
                check_fetches(&r, g, dims, layered);
            }
        }
    }
    // The weights really are 8-bit: a fraction of 1/512 rounds to 0 or 1/256.
    let mut r = Ref {
        format: CU_AD_FORMAT_FLOAT,
        ch: 1,
        size: [2, 1, 1],
        bytes: [0.0f32, 256.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        modes: [1; 3],
        linear: true,
        flags: 0,
        border: [0.0; 4],
    };
    let (a, t) = make_tex(&r, false, 1);
    let xs = [
        0.5 + 1.0 / 512.0 - 1.0 / 4096.0,
        0.5 + 3.0 / 1024.0,
        0.75,
        1.499,
    ];
    let input: Vec<[u32; 4]> = xs.iter().map(|x: &f32| [x.to_bits(), 0, 0, 0]).collect();
    let got = run(&tex_body("1d", "f32", "f32"), t, &input).expect("launch");
    let firsts: Vec<f32> = got.iter().map(|v| f32::from_bits(v[0])).collect();
    assert_eq!(firsts, [0.0, 1.0, 64.0, 256.0]);
    r.linear = false;
    assert_eq!(
        got[0][1], 0,
        "second channel of a 1-channel texture reads 0"
    );
    assert_eq!(f32::from_bits(got[0][3]), 1.0, "fourth channel reads 1");
    destroy_tex(t);
    destroy(a);
    ok(unsafe_ctx_destroy(c));
    no_leaks();
}

#[test]
fn layered_and_3d_point_fetches_and_integer_coordinates() {
    let _g = serial();
    let c = ctx();
    for (g, dims, layered) in [
        ("a1d", 1, true),
        ("a2d", 2, true),
        ("3d", 3, false),
        ("1d", 1, false),
    ] {
        let mut r = Ref {
            format: CU_AD_FORMAT_SIGNED_INT16,
            ch: 2,
            size: if dims == 1 && !layered {
                [7, 1, 1]
            } else if dims == 1 {
                [7, 1, 4]
            } else {
                [5, 4, 3]
            },
            bytes: Vec::new(),
            modes: [3, 1, 3],
            linear: false,
            flags: CU_TRSF_READ_AS_INTEGER,
            border: [-3.0, 9.0, 0.0, 0.0],
        };
        r.bytes = bytes_of(
            r.size.iter().product::<usize>() * 4,
            dims as u32 + 40,
            r.format,
        );
        check_fetches(&r, g, dims, layered);
        // Integer coordinates: texel indices, no filtering.
        let (a, t) = make_tex(&r, layered, dims);
        let input: Vec<[u32; 4]> = (-1..8).map(|i: i32| [i as u32, 2, 1, 1]).collect();
        let body = format!(
            "    tex.{g}.v4.s32.s32 {{%r10, %r11, %r12, %r13}}, [%rd1, {}];",
            coords(g)
        );
        let got = run(&body, t, &input).expect("launch");
        for (k, inp) in input.iter().enumerate() {
            let l = if layered { 1 } else { 0 };
            let want = r.fetch(dims, [inp[0] as i32 as f32 + 0.5, 2.5, 1.5], l);
            assert_eq!(got[k], want, "{g} integer coordinate {}", inp[0] as i32);
        }
        destroy_tex(t);
        destroy(a);
    }
    ok(unsafe_ctx_destroy(c));
    no_leaks();
}

#[test]
fn linear_and_pitch2d_memory_are_fetched_through_device_memory() {
    let _g = serial();
    let c = ctx();
    // Linear: tex.1d with integer coordinates (tex1Dfetch); out of range reads 0.
    let vals: Vec<u8> = (0..64u8).map(|v| v.wrapping_mul(7)).collect();
    let d = alloc(&vals);
    let mut lin = CUDA_RESOURCE_DESC {
        resType: CU_RESOURCE_TYPE_LINEAR,
        ..Default::default()
    };
    lin.res.linear = CUDA_RESOURCE_DESC_linear {
        devPtr: d,
        format: CU_AD_FORMAT_UNSIGNED_INT8,
        numChannels: 2,
        sizeInBytes: 64,
    };
    let t = try_tex(
        &lin,
        &tex_desc([1; 3], 0, CU_TRSF_READ_AS_INTEGER, [5.0; 4]),
    )
    .expect("linear");
    let input: Vec<[u32; 4]> = [-1i32, 0, 5, 31, 32, 1000]
        .iter()
        .map(|&i| [i as u32, 0, 0, 0])
        .collect();
    let got = run(
        "    tex.1d.v4.u32.s32 {%r10, %r11, %r12, %r13}, [%rd1, {%r6}];",
        t,
        &input,
    )
    .expect("launch");
    for (k, inp) in input.iter().enumerate() {
        let i = inp[0] as i32;
        let want = if (0..32).contains(&i) {
            [
                u32::from(vals[2 * i as usize]),
                u32::from(vals[2 * i as usize + 1]),
                0,
                1,
            ]
        } else {
            [0, 0, 0, 0]
        };
        assert_eq!(got[k], want, "linear index {i}");
    }
    destroy_tex(t);
    // Pitch 2-D: 6 x 3 float texels, rows 64 bytes apart; point and linear.
    let mut bytes = vec![0u8; 64 * 3];
    let mut dense = Vec::new();
    for y in 0..3 {
        for x in 0..6 {
            let v = (y * 10 + x) as f32 * 1.5 - 7.0;
            bytes[y * 64 + x * 4..y * 64 + x * 4 + 4].copy_from_slice(&v.to_le_bytes());
            dense.extend_from_slice(&v.to_le_bytes());
        }
    }
    free(d);
    let d = alloc(&bytes);
    let mut p2 = CUDA_RESOURCE_DESC {
        resType: CU_RESOURCE_TYPE_PITCH2D,
        ..Default::default()
    };
    p2.res.pitch2D = CUDA_RESOURCE_DESC_pitch2D {
        devPtr: d,
        format: CU_AD_FORMAT_FLOAT,
        numChannels: 1,
        width: 6,
        height: 3,
        pitchInBytes: 64,
    };
    for linear in [false, true] {
        let r = Ref {
            format: CU_AD_FORMAT_FLOAT,
            ch: 1,
            size: [6, 3, 1],
            bytes: dense.clone(),
            modes: [1, 3, 1],
            linear,
            flags: 0,
            border: [42.0, 0.0, 0.0, 0.0],
        };
        let t = try_tex(&p2, &tex_desc(r.modes, u32::from(linear), 0, r.border)).expect("pitch2D");
        let mut input = Vec::new();
        let mut want = Vec::new();
        for x in sample_coords(false, 6) {
            for y in sample_coords(false, 3) {
                input.push([x.to_bits(), y.to_bits(), 0, 0]);
                want.push(r.fetch(2, [x, y, 0.0], 0));
            }
        }
        let got = run(&tex_body("2d", "f32", "f32"), t, &input).expect("launch");
        assert_eq!(got, want, "pitch2D linear={linear}");
        destroy_tex(t);
    }
    // A texture of freed memory: the fetch is an illegal address.
    let t = try_tex(&p2, &tex_desc([1; 3], 0, 0, [0.0; 4])).expect("pitch2D");
    free(d);
    let e = run(&tex_body("2d", "f32", "f32"), t, &[[0; 4]]);
    assert_eq!(e, Err(fault()));
    ok(unsafe_ctx_destroy(c));
    no_leaks();
}

#[test]
fn mipmapped_textures_pick_levels() {
    let _g = serial();
    let c = ctx();
    let d = desc3(8, 0, 0, CU_AD_FORMAT_FLOAT, 1, 0);
    let mut m = null_mut();
    // SAFETY (all below): softcuda's exports with valid pointers.
    unsafe {
        ok(cuMipmappedArrayCreate(&mut m, &d, 4));
        for l in 0..4u32 {
            let mut a = null_mut();
            ok(cuMipmappedArrayGetLevel(&mut a, m, l));
            let w = 8 >> l;
            let v: Vec<u8> = (0..w)
                .flat_map(|i| ((l * 100 + i) as f32).to_le_bytes())
                .collect();
            fill(a, &v, w as usize * 4, 1, 1);
        }
        let mut r = CUDA_RESOURCE_DESC {
            resType: CU_RESOURCE_TYPE_MIPMAPPED_ARRAY,
            ..Default::default()
        };
        r.res.mipmap = CUDA_RESOURCE_DESC_mipmap { hMipmappedArray: m };
        let mut td = tex_desc([1; 3], 0, CU_TRSF_NORMALIZED_COORDINATES, [0.0; 4]);
        td.maxMipmapLevelClamp = 3.0;
        let t = try_tex(&r, &td).expect("mipmapped");
        // x = 0.3 of the width; lod 0, 1.4 (-> 1), 1.6 (-> 2), 9 (-> 3), -2 (-> 0).
        let lods = [0.0f32, 1.4, 1.6, 9.0, -2.0];
        let input: Vec<[u32; 4]> = lods
            .iter()
            .map(|l| [0.3f32.to_bits(), 0, l.to_bits(), 0])
            .collect();
        let got = run(
            "    tex.level.1d.v4.f32.f32 {%r10, %r11, %r12, %r13}, [%rd1, {%r6}], %r8;",
            t,
            &input,
        )
        .expect("launch");
        let want = [0u32, 1, 2, 3, 0].map(|l: u32| {
            let w = 8u32 >> l;
            let i = (0.3f32 * w as f32).floor() as u32;
            (l * 100 + i) as f32
        });
        let firsts: Vec<f32> = got.iter().map(|v| f32::from_bits(v[0])).collect();
        assert_eq!(firsts, want);
        destroy_tex(t);
        ok(cuMipmappedArrayDestroy(m));
    }
    ok(unsafe_ctx_destroy(c));
    no_leaks();
}

// ---------------------------------------------------------------- queries

#[test]
fn txq_and_suq_report_the_object() {
    let _g = serial();
    let c = ctx();
    let a = create(desc3(
        7,
        5,
        3,
        CU_AD_FORMAT_SIGNED_INT16,
        2,
        CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST,
    ));
    let t = try_tex(
        &res_array(a),
        &tex_desc([0, 2, 3], 1, CU_TRSF_NORMALIZED_COORDINATES, [0.0; 4]),
    )
    .expect("tex");
    let s = try_surf(&res_array(a)).expect("surf");
    let q = |op: &str, what: [&str; 4], h: u64| {
        let body: String = what
            .iter()
            .enumerate()
            .map(|(k, w)| format!("    {op}.{w}.b32 %r{}, [%rd1];\n", 10 + k))
            .collect();
        run(&body, h, &[[0; 4]]).expect("query")[0]
    };
    assert_eq!(
        q("txq", ["width", "height", "depth", "array_size"], t),
        [7, 5, 1, 3]
    );
    assert_eq!(
        q(
            "txq",
            ["addr_mode_0", "addr_mode_1", "addr_mode_2", "filter_mode"],
            t
        ),
        [0, 2, 3, 1]
    );
    assert_eq!(
        q(
            "txq",
            [
                "normalized_coords",
                "channel_order",
                "channel_data_type",
                "num_mipmap_levels"
            ],
            t
        ),
        [1, 0x10B2, 0x10D1, 0]
    );
    assert_eq!(
        q("suq", ["width", "height", "depth", "array_size"], s),
        [7, 5, 1, 3]
    );
    assert_eq!(
        q(
            "suq",
            ["channel_order", "channel_data_type", "width", "width"],
            s
        ),
        [0x10B2, 0x10D8, 7, 7]
    );
    // SAFETY: live objects.
    unsafe {
        ok(cuSurfObjectDestroy(s));
        ok(cuTexObjectDestroy(t));
    }
    destroy(a);
    ok(unsafe_ctx_destroy(c));
    no_leaks();
}

// ---------------------------------------------------------------- faults

#[test]
fn bad_handles_and_destroyed_arrays_fault() {
    let _g = serial();
    let body = tex_body("2d", "f32", "f32");
    // A handle that names nothing; a surface handle used as a texture.
    for bogus in [0u64, 0x1234, 0x5458 << 48 | 999] {
        let c = ctx();
        assert_eq!(run(&body, bogus, &[[0; 4]]), Err(fault()), "{bogus:#x}");
        // Sticky.
        // SAFETY: softcuda's export.
        assert_eq!(unsafe { cuCtxSynchronize() }, fault());
        ok(unsafe_ctx_destroy(c));
    }
    let c = ctx();
    let a = create(desc3(
        4,
        4,
        0,
        CU_AD_FORMAT_FLOAT,
        1,
        CUDA_ARRAY3D_SURFACE_LDST,
    ));
    let s = try_surf(&res_array(a)).expect("surf");
    assert_eq!(
        run(&body, s, &[[0; 4]]),
        Err(fault()),
        "a surface is no texture"
    );
    ok(unsafe_ctx_destroy(c));
    // A destroyed texture, and a texture whose array was destroyed.
    let c = ctx();
    let a = create(desc3(4, 4, 0, CU_AD_FORMAT_FLOAT, 1, 0));
    let t = try_tex(&res_array(a), &tex_desc([1; 3], 0, 0, [0.0; 4])).expect("tex");
    assert!(run(&body, t, &[[0; 4]]).is_ok());
    destroy(a);
    assert_eq!(run(&body, t, &[[0; 4]]), Err(fault()), "destroyed array");
    ok(unsafe_ctx_destroy(c));
    let c = ctx();
    let a = create(desc3(4, 4, 0, CU_AD_FORMAT_FLOAT, 1, 0));
    let t = try_tex(&res_array(a), &tex_desc([1; 3], 0, 0, [0.0; 4])).expect("tex");
    destroy_tex(t);
    assert_eq!(run(&body, t, &[[0; 4]]), Err(fault()), "destroyed texture");
    ok(unsafe_ctx_destroy(c));
    // Another context's texture.
    let c1 = ctx();
    let a = create(desc3(4, 4, 0, CU_AD_FORMAT_FLOAT, 1, 0));
    let t = try_tex(&res_array(a), &tex_desc([1; 3], 0, 0, [0.0; 4])).expect("tex");
    let c2 = ctx();
    assert_eq!(
        run(&body, t, &[[0; 4]]),
        Err(fault()),
        "another context's texture"
    );
    ok(unsafe_ctx_destroy(c2));
    ok(unsafe_ctx_destroy(c1));
    no_leaks();
}

#[test]
fn unsupported_forms_are_refused_at_load() {
    let _g = serial();
    let c = ctx();
    for body in [
        "    tex.grad.2d.v4.f32.f32 {%r10, %r11, %r12, %r13}, [%rd1, {%r6, %r7}], {%r6, %r7}, {%r6, %r7};",
        "    tex.cube.v4.f32.f32 {%r10, %r11, %r12, %r13}, [%rd1, {%r6, %r7, %r8, %r8}];",
        "    sust.p.2d.b32.trap [%rd1, {%r6, %r7}], {%r10, %r10, %r10, %r10};",
        "    txq.level.width.b32 %r10, [%rd1], %r6;",
        "    tex.2d.v4.f32.f32 {%r10, %r11, %r12, %r13}, [%rd1, {%r6}];",
        "    suq.filter_mode.b32 %r10, [%rd1];",
        "    tld4.r.2d.v4.f32.f32 {%r10, %r11, %r12, %r13}, [%rd1, {%r6, %r7}];",
    ] {
        assert_eq!(
            load(&kernel(body)).map(|_| ()),
            Err(code::INVALID_PTX),
            "{body}"
        );
    }
    // A kernel-parameter handle is accepted (unified mode).
    let ptx = format!(
        "{HEADER}.visible .entry k(.param .u64 t, .param .u64 o)\n{{\n .reg .b32 %r<4>;\n .reg .b64 %rd<2>;\n txq.width.b32 %r1, [t];\n ld.param.u64 %rd1, [o];\n st.global.u32 [%rd1], %r1;\n ret;\n}}\n\0"
    );
    let m = load(&ptx).expect("param handle");
    let a = create(desc3(9, 2, 0, CU_AD_FORMAT_FLOAT, 1, 0));
    let t = try_tex(&res_array(a), &tex_desc([1; 3], 0, 0, [0.0; 4])).expect("tex");
    let out = alloc(&[0; 4]);
    let (mut th, mut o) = (t, out);
    let mut params: [*mut c_void; 2] = [(&raw mut th).cast(), (&raw mut o).cast()];
    ok(launch_kernel(
        function(m, c"k"),
        [1, 1, 1],
        [1, 1, 1],
        0,
        null_mut(),
        &mut params,
    ));
    assert_eq!(read_back(out, 4), 9u32.to_le_bytes());
    let _ = fbits([0.0; 4]);
    unload(m);
    ok(unsafe_ctx_destroy(c));
    no_leaks();
}

#[test]
fn memcheck_reports_texture_and_surface_faults() {
    let _g = serial();
    let c = ctx();
    control::set_sanitize("memcheck").expect("sanitize");
    control::sanitize_summary();
    control::sanitize_report();
    let body = tex_body("2d", "f32", "f32");
    // A bogus texture handle.
    assert_eq!(run(&body, 0x4242, &[[0; 4]]), Err(fault()));
    ok(unsafe_ctx_destroy(c));
    // A texture whose array was destroyed.
    let c = ctx();
    let a = create(desc3(4, 4, 0, CU_AD_FORMAT_FLOAT, 1, 0));
    let t = try_tex(&res_array(a), &tex_desc([1; 3], 0, 0, [0.0; 4])).expect("tex");
    destroy(a);
    assert_eq!(run(&body, t, &[[0; 4]]), Err(fault()));
    ok(unsafe_ctx_destroy(c));
    // A .trap surface access out of range.
    let c = ctx();
    let a = create(desc3(
        4,
        4,
        0,
        CU_AD_FORMAT_FLOAT,
        1,
        CUDA_ARRAY3D_SURFACE_LDST,
    ));
    let s = try_surf(&res_array(a)).expect("surf");
    assert_eq!(
        run(
            &surf_body("sust", "2d", "", "b32", ".trap"),
            s,
            &[[16, 0, 0, 0]]
        ),
        Err(fault())
    );
    ok(unsafe_ctx_destroy(c));
    let n = control::sanitize_summary();
    let report = control::sanitize_report();
    control::set_sanitize("none").expect("sanitize off");
    assert_eq!(n, 3, "{report}");
    for line in [
        "Invalid texture read",
        "Handle 0x4242 names no live texture object",
        "reads a CUDA array that was destroyed",
        "Invalid surface write of size 4 bytes",
        "is out of range (.trap)",
    ] {
        assert!(report.contains(line), "no `{line}` in:\n{report}");
    }
    no_leaks();
}
