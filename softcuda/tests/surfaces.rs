//! Surface objects and the PTX instructions that use them (`suld.b`, `sust.b`):
//! round trips in every geometry, vector width and element size, and `.trap`,
//! `.clamp` and `.zero` out of range, checked against the array's bytes read back
//! by copies. Every test ends with no live object.

#[path = "common/arrays.rs"]
mod arrays_common;
mod common;
#[path = "common/textures.rs"]
mod textures_common;

use arrays_common::{create, ctx, desc3, destroy, fill};
use common::{fault, no_leaks, ok, serial};
use softcuda::api::texture::*;
use softcuda::types::*;
use textures_common::*;

#[test]
fn surfaces_round_trip_with_trap_clamp_and_zero() {
    let _g = serial();
    let c = ctx();
    // A 2-D array of 6 x 4 texels of 4 x u16 (8 bytes): rows of 48 bytes.
    let (w, h, eb) = (6usize, 4usize, 8usize);
    let a = create(desc3(
        w,
        h,
        0,
        CU_AD_FORMAT_UNSIGNED_INT16,
        4,
        CUDA_ARRAY3D_SURFACE_LDST,
    ));
    let init = bytes_of(w * h * eb, 3, CU_AD_FORMAT_UNSIGNED_INT16);
    fill(a, &init, w * eb, h, 1);
    let s = try_surf(&res_array(a)).expect("surface");
    // suld.b.2d.v2.b32 at in-range byte offsets reads what is there.
    let input: Vec<[u32; 4]> = [(0, 0), (8, 1), (40, 3), (16, 2)]
        .iter()
        .map(|&(x, y)| [x, y, 0, 0])
        .collect();
    let got = run(&surf_body("suld", "2d", ".v2", "b32", ".trap"), s, &input).expect("launch");
    for (k, i) in input.iter().enumerate() {
        let at = i[1] as usize * w * eb + i[0] as usize;
        let word =
            |o: usize| u32::from_le_bytes(init[at + o..at + o + 4].try_into().unwrap_or([0; 4]));
        assert_eq!(got[k], [word(0), word(4), 0, 0], "{i:?}");
    }
    // Out of range: .zero reads 0, .clamp reads the nearest, .trap faults.
    let outside: Vec<[u32; 4]> = [(-8i32, 0i32), (48, 1), (44, 0), (8, 4), (8, -1)]
        .iter()
        .map(|&(x, y)| [x as u32, y as u32, 0, 0])
        .collect();
    let got = run(&surf_body("suld", "2d", ".v2", "b32", ".zero"), s, &outside).expect("launch");
    assert!(got.iter().all(|v| *v == [0; 4]), "{got:?}");
    let got = run(
        &surf_body("suld", "2d", ".v2", "b32", ".clamp"),
        s,
        &outside,
    )
    .expect("launch");
    for (k, i) in outside.iter().enumerate() {
        let x = (i[0] as i32).clamp(0, 40) as usize / 8 * 8;
        let y = (i[1] as i32).clamp(0, 3) as usize;
        let at = y * w * eb + x;
        let word =
            |o: usize| u32::from_le_bytes(init[at + o..at + o + 4].try_into().unwrap_or([0; 4]));
        assert_eq!(got[k], [word(0), word(4), 0, 0], "clamp {i:?}");
    }
    // sust with every vector width and type, read back by a copy.
    let mut want = init.clone();
    let mut put = |x: usize, y: usize, bytes: &[u8]| {
        let at = y * w * eb + x;
        want[at..at + bytes.len()].copy_from_slice(bytes);
    };
    for (vec, ty, n, tb) in [
        ("", "b8", 1, 1),
        (".v2", "b16", 2, 2),
        (".v4", "b32", 4, 4),
        (".v2", "b64", 2, 8),
        ("", "b32", 1, 4),
    ] {
        let size = n * tb;
        let (x, y) = ((size * 2) % (w * eb - size + 1), n % h);
        let input = [[x as u32, y as u32, 0, 0]];
        run(&surf_body("sust", "2d", vec, ty, ".trap"), s, &input).expect("sust");
        let vals = [
            x as u32 ^ 0x1111_1111,
            y as u32 ^ 0x2222_2222,
            x as u32 ^ 0x3333_3333,
            y as u32 ^ 0x4444_4444,
        ];
        let mut bytes = Vec::new();
        for (k, v) in vals.iter().enumerate().take(n) {
            // A b64 element takes the 32-bit register zero-extended.
            let wide = u64::from(*v);
            let _ = k;
            bytes.extend_from_slice(&wide.to_le_bytes()[..tb]);
        }
        put(x, y, &bytes);
        // .zero drops an out-of-range store; .clamp moves it to the nearest place.
        run(
            &surf_body("sust", "2d", vec, ty, ".zero"),
            s,
            &[[48, 9, 0, 0]],
        )
        .expect("zero");
    }
    let back = arrays_common::dump(a, w * eb, h, 1);
    assert_eq!(back, want);
    run(
        &surf_body("sust", "2d", "", "b32", ".clamp"),
        s,
        &[[1000, 7, 0, 0]],
    )
    .expect("clamp");
    let back = arrays_common::dump(a, w * eb, h, 1);
    let at = 3 * w * eb + 44;
    assert_eq!(&back[at..at + 4], &(1000u32 ^ 0x1111_1111).to_le_bytes());
    // .trap out of range: the sticky illegal address.
    let e = run(
        &surf_body("suld", "2d", "", "b32", ".trap"),
        s,
        &[[48, 0, 0, 0]],
    );
    assert_eq!(e, Err(fault()));
    ok(unsafe_ctx_destroy(c));
    no_leaks();
}

#[test]
fn layered_1d_and_3d_surfaces() {
    let _g = serial();
    let c = ctx();
    for (g, d) in [
        ("1d", desc3(10, 0, 0, CU_AD_FORMAT_FLOAT, 1, 0)),
        ("3d", desc3(4, 3, 2, CU_AD_FORMAT_FLOAT, 1, 0)),
        (
            "a1d",
            desc3(4, 0, 3, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED),
        ),
        (
            "a2d",
            desc3(4, 3, 2, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED),
        ),
    ] {
        let a = create(CUDA_ARRAY3D_DESCRIPTOR {
            Flags: d.Flags | CUDA_ARRAY3D_SURFACE_LDST,
            ..d
        });
        let s = try_surf(&res_array(a)).expect("surface");
        let (rows, slices) = (d.Height.max(1), d.Depth.max(1));
        let row = d.Width * 4;
        let mut input = Vec::new();
        for z in 0..slices {
            for y in 0..rows {
                for x in 0..d.Width {
                    // x in bytes; z is %r8 for 3d, the layer (%r9) for a1d/a2d.
                    input.push([(x * 4) as u32, y as u32, z as u32, z as u32]);
                }
            }
        }
        run(&surf_body("sust", g, "", "b32", ".trap"), s, &input).expect("sust");
        let back = arrays_common::dump(a, row, rows, slices);
        for i in &input {
            let at = (i[2] as usize * rows + i[1] as usize) * row + i[0] as usize;
            let v = u32::from_le_bytes(back[at..at + 4].try_into().unwrap_or([0; 4]));
            assert_eq!(v, i[0] ^ 0x1111_1111, "{g} {i:?}");
        }
        let got = run(&surf_body("suld", g, "", "b32", ".trap"), s, &input).expect("suld");
        for (k, i) in input.iter().enumerate() {
            assert_eq!(got[k][0], i[0] ^ 0x1111_1111, "{g} {i:?}");
        }
        // SAFETY: a live surface.
        ok(unsafe { cuSurfObjectDestroy(s) });
        destroy(a);
    }
    ok(unsafe_ctx_destroy(c));
    no_leaks();
}
