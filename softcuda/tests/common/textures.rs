//! Helpers of the texture and surface tests (`tests/textures.rs`,
//! `tests/surfaces.rs`): descriptors, objects, a kernel harness that runs one
//! texture or surface instruction per thread, and the CPU reference of a fetch
//! (written independently of softcuda's sampler).
#![allow(dead_code)] // each test binary uses its own subset

use crate::arrays_common::{create, desc3, fill};
use crate::common::{function, launch_kernel, ok};
use softcuda::api::texture::*;
use softcuda::api::{context::*, memory::*, module::*};
use softcuda::types::*;
use std::ffi::c_void;
use std::ptr::{null, null_mut};

// ---------------------------------------------------------------- helpers

pub fn res_array(a: CUarray) -> CUDA_RESOURCE_DESC {
    let mut r = CUDA_RESOURCE_DESC {
        resType: CU_RESOURCE_TYPE_ARRAY,
        ..Default::default()
    };
    r.res.array = CUDA_RESOURCE_DESC_array { hArray: a };
    r
}

pub fn tex_desc(modes: [u32; 3], filter: u32, flags: u32, border: [f32; 4]) -> CUDA_TEXTURE_DESC {
    CUDA_TEXTURE_DESC {
        addressMode: modes,
        filterMode: filter,
        flags,
        borderColor: border,
        ..Default::default()
    }
}

pub fn try_tex(r: &CUDA_RESOURCE_DESC, t: &CUDA_TEXTURE_DESC) -> Result<u64, CUresult> {
    let mut h = 0;
    // SAFETY: valid pointers.
    match unsafe { cuTexObjectCreate(&mut h, r, t, null()) } {
        0 => Ok(h),
        e => Err(e),
    }
}

pub fn try_surf(r: &CUDA_RESOURCE_DESC) -> Result<u64, CUresult> {
    let mut h = 0;
    // SAFETY: valid pointers.
    match unsafe { cuSurfObjectCreate(&mut h, r) } {
        0 => Ok(h),
        e => Err(e),
    }
}

pub fn alloc(bytes: &[u8]) -> CUdeviceptr {
    let mut d = 0;
    // SAFETY: valid pointers and sizes.
    unsafe {
        ok(cuMemAlloc_v2(&mut d, bytes.len().max(4)));
        ok(cuMemcpyHtoD_v2(d, bytes.as_ptr().cast(), bytes.len()));
    }
    d
}

pub fn free(d: CUdeviceptr) {
    // SAFETY: a live allocation.
    ok(unsafe { cuMemFree_v2(d) });
}

pub fn read_back(d: CUdeviceptr, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    // SAFETY: a live allocation of at least `n` bytes.
    ok(unsafe { cuMemcpyDtoH_v2(v.as_mut_ptr().cast(), d, n) });
    v
}

pub const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

/// A kernel `k(handle, in, out, n)`: thread i loads 4 words of `in` (x, y, z, w),
/// runs `body` (which sees them in %r6..%r9 and the handle in %rd1) and stores
/// %r10..%r13 to `out`.
pub fn kernel(body: &str) -> String {
    format!(
        "{HEADER}.visible .entry k(.param .u64 h, .param .u64 src, .param .u64 dst, .param .u32 n)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<20>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [h];
    ld.param.u64 %rd2, [src];
    ld.param.u64 %rd3, [dst];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mad.lo.s32 %r5, %r3, %r4, %r2;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    mul.wide.u32 %rd4, %r5, 16;
    add.s64 %rd5, %rd2, %rd4;
    ld.global.v4.b32 {{%r6, %r7, %r8, %r9}}, [%rd5];
    mov.b32 %r10, 0;
    mov.b32 %r11, 0;
    mov.b32 %r12, 0;
    mov.b32 %r13, 0;
{body}
    add.s64 %rd6, %rd3, %rd4;
    st.global.v4.b32 [%rd6], {{%r10, %r11, %r12, %r13}};
DONE:
    ret;
}}
\0"
    )
}

pub fn load(ptx: &str) -> Result<CUmodule, CUresult> {
    let mut m = null_mut();
    // SAFETY: NUL-terminated text.
    match unsafe { cuModuleLoadData(&mut m, ptx.as_ptr().cast()) } {
        0 => Ok(m),
        e => Err(e),
    }
}

pub fn unload(m: CUmodule) {
    // SAFETY: a loaded module.
    ok(unsafe { cuModuleUnload(m) });
}

/// Runs `body` (see [`kernel`]) with `handle` for each input quadruple; the four
/// result words per input, or the launch's error.
pub fn run(body: &str, handle: u64, input: &[[u32; 4]]) -> Result<Vec<[u32; 4]>, CUresult> {
    let m = load(&kernel(body)).inspect_err(|e| eprintln!("load failed: {e}\n{body}"))?;
    let f = function(m, c"k");
    let bytes: Vec<u8> = input
        .iter()
        .flatten()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    let src = alloc(&bytes);
    let dst = alloc(&vec![0u8; bytes.len()]);
    let (mut h, mut s, mut d, mut n) = (handle, src, dst, input.len() as u32);
    let mut params: [*mut c_void; 4] = [
        (&raw mut h).cast(),
        (&raw mut s).cast(),
        (&raw mut d).cast(),
        (&raw mut n).cast(),
    ];
    let r = launch_kernel(
        f,
        [input.len().div_ceil(64) as u32, 1, 1],
        [64, 1, 1],
        0,
        null_mut(),
        &mut params,
    );
    // SAFETY: softcuda's export.
    let sync = unsafe { cuCtxSynchronize() };
    let out = if r != 0 {
        Err(r)
    } else if sync != 0 {
        Err(sync)
    } else {
        let v = read_back(dst, bytes.len());
        Ok(v.chunks(16)
            .map(|c| {
                let w = |k: usize| {
                    u32::from_le_bytes([c[4 * k], c[4 * k + 1], c[4 * k + 2], c[4 * k + 3]])
                };
                [w(0), w(1), w(2), w(3)]
            })
            .collect())
    };
    if out.is_ok() {
        free(src);
        free(dst);
        unload(m);
    }
    out
}

/// The coordinate vector of geometry `g` from %r6 (x), %r7 (y), %r8 (z), %r9 (layer).
pub fn coords(g: &str) -> &'static str {
    match g {
        "1d" => "{%r6}",
        "2d" => "{%r6, %r7}",
        "3d" => "{%r6, %r7, %r8, %r8}",
        "a1d" => "{%r9, %r6}",
        _ => "{%r9, %r6, %r7, %r8}",
    }
}

pub fn tex_body(g: &str, dty: &str, cty: &str) -> String {
    format!(
        "    tex.{g}.v4.{dty}.{cty} {{%r10, %r11, %r12, %r13}}, [%rd1, {}];",
        coords(g)
    )
}

// ---------------------------------------------------------------- reference

pub fn f16_to_f32(h: u16) -> f32 {
    let s = if h >> 15 == 1 { -1.0f32 } else { 1.0 };
    let e = i32::from(h >> 10 & 0x1f);
    let m = f32::from(h & 0x3ff);
    match e {
        0 => s * m * 2f32.powi(-24),
        31 if m == 0.0 => s * f32::INFINITY,
        31 => f32::NAN,
        _ => s * (1.0 + m / 1024.0) * 2f32.powi(e - 15),
    }
}

/// A texture as the reference sees it: its bytes and settings.
#[derive(Clone)]
pub struct Ref {
    pub format: u32,
    pub ch: usize,
    pub size: [usize; 3], // width, height, slices (layers or depth)
    pub bytes: Vec<u8>,
    pub modes: [u32; 3],
    pub linear: bool,
    pub flags: u32,
    pub border: [f32; 4],
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum V {
    F([f32; 4]),
    I([u32; 4]),
}

impl Ref {
    pub fn cbytes(&self) -> usize {
        match self.format {
            CU_AD_FORMAT_UNSIGNED_INT8 | CU_AD_FORMAT_SIGNED_INT8 => 1,
            CU_AD_FORMAT_UNSIGNED_INT16 | CU_AD_FORMAT_SIGNED_INT16 | CU_AD_FORMAT_HALF => 2,
            _ => 4,
        }
    }
    pub fn floats(&self) -> bool {
        matches!(self.format, CU_AD_FORMAT_HALF | CU_AD_FORMAT_FLOAT)
            || (self.cbytes() < 4 && self.flags & CU_TRSF_READ_AS_INTEGER == 0)
    }
    fn texel(&self, x: usize, y: usize, z: usize) -> V {
        let cb = self.cbytes();
        let at = ((z * self.size[1] + y) * self.size[0] + x) * cb * self.ch;
        let mut raw = [0u64; 4];
        for (c, r) in raw.iter_mut().enumerate().take(self.ch) {
            let mut b = [0u8; 8];
            b[..cb].copy_from_slice(&self.bytes[at + c * cb..at + (c + 1) * cb]);
            *r = u64::from_le_bytes(b);
        }
        let signed = matches!(
            self.format,
            CU_AD_FORMAT_SIGNED_INT8 | CU_AD_FORMAT_SIGNED_INT16 | CU_AD_FORMAT_SIGNED_INT32
        );
        let sx = |v: u64| -> i64 {
            let sh = 64 - 8 * cb as u32;
            ((v << sh) as i64) >> sh
        };
        if self.floats() {
            let mut o = [0.0, 0.0, 0.0, 1.0];
            for c in 0..self.ch {
                o[c] = match self.format {
                    CU_AD_FORMAT_FLOAT => f32::from_bits(raw[c] as u32),
                    CU_AD_FORMAT_HALF => f16_to_f32(raw[c] as u16),
                    _ if signed => {
                        let max = ((1i64 << (8 * cb - 1)) - 1) as f32;
                        (sx(raw[c]) as f32 / max).max(-1.0)
                    }
                    _ => raw[c] as f32 / ((1u64 << (8 * cb)) - 1) as f32,
                };
            }
            V::F(o)
        } else {
            let mut o = [0, 0, 0, 1];
            for c in 0..self.ch {
                o[c] = if signed {
                    sx(raw[c]) as i32 as u32
                } else {
                    raw[c] as u32
                };
            }
            V::I(o)
        }
    }
    fn border_v(&self) -> V {
        if self.floats() {
            V::F(self.border)
        } else {
            let signed = matches!(
                self.format,
                CU_AD_FORMAT_SIGNED_INT8 | CU_AD_FORMAT_SIGNED_INT16 | CU_AD_FORMAT_SIGNED_INT32
            );
            V::I(
                self.border
                    .map(|b| if signed { b as i32 as u32 } else { b as u32 }),
            )
        }
    }
    /// Index `i` along dimension `d` (None: border).
    fn wrap(&self, i: i64, d: usize) -> Option<usize> {
        let n = self.size[d] as i64;
        let mut mode = self.modes[d];
        if self.flags & CU_TRSF_NORMALIZED_COORDINATES == 0 && mode != CU_TR_ADDRESS_MODE_BORDER {
            mode = CU_TR_ADDRESS_MODE_CLAMP;
        }
        match mode {
            CU_TR_ADDRESS_MODE_WRAP => Some((((i % n) + n) % n) as usize),
            CU_TR_ADDRESS_MODE_MIRROR => {
                let period = ((i % (2 * n)) + 2 * n) % (2 * n);
                Some(if period < n {
                    period
                } else {
                    2 * n - 1 - period
                } as usize)
            }
            CU_TR_ADDRESS_MODE_CLAMP => Some(i.max(0).min(n - 1) as usize),
            _ => (i >= 0 && i < n).then_some(i as usize),
        }
    }
    fn at(&self, idx: [i64; 3], dims: usize, layer: usize) -> V {
        let mut p = [0, 0, layer];
        for d in 0..dims {
            match self.wrap(idx[d], d) {
                Some(v) => p[d] = v,
                None => return self.border_v(),
            }
        }
        self.texel(p[0], p[1], p[2])
    }
    /// The fetch at float coordinates `c`.
    pub fn fetch(&self, dims: usize, c: [f32; 3], layer: usize) -> [u32; 4] {
        let norm = self.flags & CU_TRSF_NORMALIZED_COORDINATES != 0;
        let u: Vec<f32> = (0..dims)
            .map(|d| {
                if norm {
                    c[d] * self.size[d] as f32
                } else {
                    c[d]
                }
            })
            .collect();
        let v = if self.linear && self.floats() {
            let mut lo = [0i64; 3];
            let mut a = [0u32; 3];
            for d in 0..dims {
                let b = u[d] - 0.5;
                lo[d] = b.floor() as i64;
                a[d] = ((b - b.floor()) * 256.0).round() as u32;
            }
            let mut acc = [0.0f32; 4];
            for corner in 0..1 << dims {
                let mut idx = lo;
                let mut w = 1u32;
                for d in 0..dims {
                    if corner >> d & 1 == 1 {
                        idx[d] += 1;
                        w *= a[d];
                    } else {
                        w *= 256 - a[d];
                    }
                }
                let wf = w as f32 / 256f32.powi(dims as i32);
                let V::F(t) = self.at(idx, dims, layer) else {
                    unreachable!()
                };
                for k in 0..4 {
                    acc[k] += wf * t[k];
                }
            }
            V::F(acc)
        } else {
            let mut idx = [0i64; 3];
            for d in 0..dims {
                idx[d] = u[d].floor() as i64;
            }
            self.at(idx, dims, layer)
        };
        match v {
            V::F(f) => f.map(f32::to_bits),
            V::I(i) => i,
        }
    }
}

pub fn bytes_of(n: usize, seed: u32, format: u32) -> Vec<u8> {
    // Pseudo-random bytes; float formats get finite values.
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(12345);
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    match format {
        CU_AD_FORMAT_FLOAT => (0..n / 4)
            .flat_map(|_| ((next() % 20001) as f32 / 100.0 - 100.0).to_le_bytes())
            .collect(),
        CU_AD_FORMAT_HALF => (0..n / 2)
            .flat_map(|_| {
                // sign, exponent 5..25, any mantissa: finite.
                let v = next();
                let h =
                    (v & 0x8000) as u16 | (((5 + v % 20) as u16) << 10) | (v >> 8) as u16 & 0x3ff;
                h.to_le_bytes()
            })
            .collect(),
        _ => (0..n).map(|_| next() as u8).collect(),
    }
}

pub const FORMATS: [u32; 8] = [
    CU_AD_FORMAT_UNSIGNED_INT8,
    CU_AD_FORMAT_UNSIGNED_INT16,
    CU_AD_FORMAT_UNSIGNED_INT32,
    CU_AD_FORMAT_SIGNED_INT8,
    CU_AD_FORMAT_SIGNED_INT16,
    CU_AD_FORMAT_SIGNED_INT32,
    CU_AD_FORMAT_HALF,
    CU_AD_FORMAT_FLOAT,
];

/// An array of `r`'s shape and format, filled with its bytes, with a texture.
pub fn make_tex(r: &Ref, layered: bool, dims: usize) -> (CUarray, u64) {
    let h = if dims >= 2 { r.size[1] } else { 0 };
    let d = if layered || dims == 3 { r.size[2] } else { 0 };
    let flags = if layered { CUDA_ARRAY3D_LAYERED } else { 0 };
    let a = create(desc3(
        r.size[0],
        h,
        d,
        r.format,
        r.ch as u32,
        flags | CUDA_ARRAY3D_SURFACE_LDST,
    ));
    let row = r.size[0] * r.cbytes() * r.ch;
    fill(a, &r.bytes, row, r.size[1], r.size[2]);
    let t = try_tex(
        &res_array(a),
        &tex_desc(r.modes, u32::from(r.linear), r.flags, r.border),
    )
    .expect("cuTexObjectCreate");
    (a, t)
}

pub fn destroy_tex(t: u64) {
    // SAFETY: softcuda's export.
    ok(unsafe { cuTexObjectDestroy(t) });
}

pub fn fbits(v: [f32; 4]) -> [u32; 4] {
    v.map(f32::to_bits)
}

pub fn unsafe_ctx_destroy(c: CUcontext) -> CUresult {
    // SAFETY: a live context.
    unsafe { cuCtxDestroy_v2(c) }
}

pub fn surf_body(op: &str, g: &str, vec: &str, ty: &str, mode: &str) -> String {
    let v = match vec {
        "" => "%r10",
        ".v2" => "{%r10, %r11}",
        _ => "{%r10, %r11, %r12, %r13}",
    };
    let c = coords(g);
    if op == "suld" {
        format!("    suld.b.{g}{vec}.{ty}{mode} {v}, [%rd1, {c}];")
    } else {
        // Stores %r9 ^ 0x5a5a5a5a-ish values derived from the coordinates.
        format!(
            "    xor.b32 %r10, %r6, 0x11111111;\n    xor.b32 %r11, %r7, 0x22222222;\n    xor.b32 %r12, %r6, 0x33333333;\n    xor.b32 %r13, %r7, 0x44444444;\n    sust.b.{g}{vec}.{ty}{mode} [%rd1, {c}], {v};"
        )
    }
}
