//! The lane engine (`ptx::exec::lanes`: a block's threads run together) against
//! the reference interpreter (one thread at a time): the same kernels, the same
//! randomized inputs, bit for bit the same outputs — for every class of
//! instruction the lane engine runs, each in three shapes: every thread on its own
//! inputs, every thread on the same inputs (the engine computes those once), and
//! inside a branch only some threads take (divergence). Then control flow
//! (loops of different trip counts, early exits, barriers, shared memory and
//! atomics) the same way. The reference runs when the memory asks for fault
//! descriptions (`CHECK_FAULT`), as the driver's does under memcheck.

use softcuda::ptx::{CHECK_FAULT, DeviceMemory, JitOptions, LaunchConfig, Module, launch};
use std::sync::RwLock;

/// Host memory as device memory; `reference` forces the one-thread-at-a-time path.
struct Dev {
    ranges: RwLock<Vec<(u64, u64)>>,
    reference: bool,
}

impl DeviceMemory for Dev {
    fn accessible(&self, addr: u64, len: u64) -> bool {
        let end = addr + len;
        let r = self.ranges.read().unwrap();
        r.iter().any(|&(s, e)| addr >= s && end <= e)
    }

    fn region(&self, addr: u64) -> Option<(u64, u64)> {
        let r = self.ranges.read().unwrap();
        r.iter().copied().find(|&(s, e)| addr >= s && addr < e)
    }

    fn checks(&self) -> u8 {
        if self.reference { CHECK_FAULT } else { 0 }
    }
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value with a fair share of the cases arithmetic gets wrong: zeros, ones,
    /// extremes, small numbers, float specials (NaN, infinities, denormals,
    /// negative zero) in both widths.
    fn value(&mut self) -> u64 {
        const SPECIAL: [u64; 16] = [
            0,
            1,
            u64::MAX,
            0x8000_0000,
            0x7fff_ffff,
            0xffff_ffff,
            0x8000_0000_0000_0000,
            0x7fc0_0000,           // f32 NaN
            0x7f80_0000,           // f32 +inf
            0xff80_0000,           // f32 -inf
            0x0000_0001,           // f32 smallest denormal
            0x8000_0000,           // f32 -0
            0x3f80_0000,           // f32 1.0
            0x7ff8_0000_0000_0000, // f64 NaN
            0x0000_0000_0000_0001, // f64 denormal
            0x3ff0_0000_0000_0000, // f64 1.0
        ];
        match self.next() % 8 {
            0 => SPECIAL[(self.next() % 16) as usize],
            1 => self.next() % 64,
            2 => u64::from((self.next() as f32 * 1e-3).to_bits()) | (self.next() << 32),
            3 => (self.next() as f64 / 7.0).to_bits(),
            _ => self.next(),
        }
    }
}

const THREADS: usize = 200; // two blocks of 128, the second partly out of range

/// The kernel `k(a, b, c, out, n)`: thread `i < n` loads `a[i]`, `b[i]`, `c[i]` (u64)
/// as `%rd1..3` (and their low halves `%r1..3`, as f32 `%f1..3`, as f64 `%fd1..3`,
/// predicates `%p1..3` = low bit set), runs `body` (which leaves its result in
/// `%rd4`) and stores `%rd4` at `out[i]`. `shape`: 0 straight, 1 inside a branch
/// taken by the threads whose `c` is odd (the others store `%rd4` = 0).
fn kernel(body: &str, shape: u8) -> String {
    let (pre, post) = match shape {
        1 => ("mov.u64 %rd4, 0;\n@!%p3 bra SKIP;\n", "SKIP:\n"),
        _ => ("", ""),
    };
    format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\
         .visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 po, .param .u32 pn)\n{{\n\
         .reg .pred %p<8>;\n.reg .b16 %h<8>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<20>;\n.reg .f32 %f<16>;\n.reg .f64 %fd<16>;\n\
         mov.u32 %r10, %tid.x;\nmov.u32 %r11, %ctaid.x;\nmov.u32 %r12, %ntid.x;\nmad.lo.u32 %r10, %r11, %r12, %r10;\n\
         ld.param.u32 %r13, [pn];\nsetp.ge.u32 %p7, %r10, %r13;\n@%p7 bra DONE;\n\
         mul.wide.u32 %rd10, %r10, 8;\n\
         ld.param.u64 %rd11, [pa];\nadd.s64 %rd11, %rd11, %rd10;\nld.global.u64 %rd1, [%rd11];\n\
         ld.param.u64 %rd12, [pb];\nadd.s64 %rd12, %rd12, %rd10;\nld.global.u64 %rd2, [%rd12];\n\
         ld.param.u64 %rd13, [pc];\nadd.s64 %rd13, %rd13, %rd10;\nld.global.u64 %rd3, [%rd13];\n\
         cvt.u32.u64 %r1, %rd1;\ncvt.u32.u64 %r2, %rd2;\ncvt.u32.u64 %r3, %rd3;\n\
         mov.b32 %f1, %r1;\nmov.b32 %f2, %r2;\nmov.b32 %f3, %r3;\n\
         mov.b64 %fd1, %rd1;\nmov.b64 %fd2, %rd2;\nmov.b64 %fd3, %rd3;\n\
         and.b32 %r14, %r1, 1;\nsetp.ne.u32 %p1, %r14, 0;\nand.b32 %r14, %r2, 1;\nsetp.ne.u32 %p2, %r14, 0;\n\
         and.b32 %r14, %r3, 1;\nsetp.ne.u32 %p3, %r14, 0;\n\
         {pre}{body}\n{post}\
         ld.param.u64 %rd14, [po];\nadd.s64 %rd14, %rd14, %rd10;\nst.global.u64 [%rd14], %rd4;\n\
         DONE:\nret;\n}}\n"
    )
}

/// Runs `ptx`'s kernel `k` over `THREADS` threads on inputs `ins` with one engine:
/// the outputs.
fn run(ptx: &str, ins: &[Vec<u64>; 3], reference: bool, block: u32) -> Vec<u64> {
    try_run(ptx, ins, reference, block).unwrap_or_else(|e| panic!("{e} in:\n{ptx}"))
}

/// [`run`], with the launch's error as text.
fn try_run(
    ptx: &str,
    ins: &[Vec<u64>; 3],
    reference: bool,
    block: u32,
) -> Result<Vec<u64>, String> {
    let (m, _log) =
        Module::load(ptx, &JitOptions::default()).unwrap_or_else(|e| panic!("{e:?} in:\n{ptx}"));
    let k = m.kernel("k").unwrap();
    assert!(k.lane_engine(), "not a lane-engine kernel:\n{ptx}");
    let mut bufs: Vec<Vec<u64>> = ins.to_vec();
    bufs.push(vec![0xdead_beef; THREADS]);
    let dev = Dev {
        ranges: RwLock::new(
            bufs.iter()
                .map(|b| (b.as_ptr() as u64, b.as_ptr() as u64 + 8 * b.len() as u64))
                .collect(),
        ),
        reference,
    };
    let mut params = Vec::new();
    for b in &bufs {
        params.extend_from_slice(&(b.as_ptr() as u64).to_le_bytes());
    }
    params.extend_from_slice(&(THREADS as u32 - 7).to_le_bytes());
    let blocks = (THREADS as u32).div_ceil(block);
    let cfg = LaunchConfig {
        grid: [blocks, 1, 1],
        block: [block, 1, 1],
        dynamic_shared_bytes: 0,
    };
    launch(&m, k, &cfg, &params, &[], &dev).map_err(|e| format!("{e:?}"))?;
    Ok(bufs.pop().unwrap())
}

/// A kernel `k(pa, pb, pc, po, pn)` with `body` (registers `%p`, `%r`, `%rd`
/// declared; `.shared` declarations in `shared`).
fn entry(shared: &str, body: &str) -> String {
    format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\
         .visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 po, .param .u32 pn)\n{{\n\
         .reg .pred %p<8>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<16>;\n{shared}\n{body}\n}}\n"
    )
}

/// Both engines, the three shapes, two rounds of random inputs: equal outputs.
#[track_caller]
fn same(body: &str) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ body.len() as u64);
    for round in 0..2 {
        for shape in [0, 1] {
            for uniform in [false, true] {
                let ins: [Vec<u64>; 3] = std::array::from_fn(|_| {
                    if uniform {
                        vec![rng.value(); THREADS]
                    } else {
                        (0..THREADS).map(|_| rng.value()).collect()
                    }
                });
                let ptx = kernel(body, shape);
                let lanes = run(&ptx, &ins, false, 128);
                let reference = run(&ptx, &ins, true, 128);
                if let Some(i) = (0..THREADS).find(|&i| lanes[i] != reference[i]) {
                    panic!(
                        "`{body}` (round {round}, shape {shape}, uniform {uniform}): thread {i} \
                         got {:#x} on the lane engine, {:#x} on the reference, inputs {:#x} {:#x} {:#x}",
                        lanes[i], reference[i], ins[0][i], ins[1][i], ins[2][i]
                    );
                }
            }
        }
    }
}

/// Each body leaves its result in `%rd4`.
const INT: &[&str] = &[
    "add.s32 %r4, %r1, %r2; cvt.u64.u32 %rd4, %r4;",
    "sub.s64 %rd4, %rd1, %rd2;",
    "add.sat.s32 %r4, %r1, %r2; cvt.u64.u32 %rd4, %r4;",
    "mul.lo.s32 %r4, %r1, %r2; cvt.u64.u32 %rd4, %r4;",
    "mul.hi.u32 %r4, %r1, %r2; cvt.u64.u32 %rd4, %r4;",
    "mul.hi.s64 %rd4, %rd1, %rd2;",
    "mul.wide.s32 %rd4, %r1, %r2;",
    "mul24.lo.u32 %r4, %r1, %r2; cvt.u64.u32 %rd4, %r4;",
    "mad.lo.s32 %r4, %r1, %r2, %r3; cvt.u64.u32 %rd4, %r4;",
    "mad.wide.u32 %rd4, %r1, %r2, %rd3;",
    "div.s32 %r4, %r1, %r2; cvt.u64.u32 %rd4, %r4;",
    "div.u64 %rd4, %rd1, %rd2;",
    "rem.s32 %r4, %r1, %r2; cvt.u64.u32 %rd4, %r4;",
    "min.s32 %r4, %r1, %r2; cvt.u64.u32 %rd4, %r4;",
    "max.u64 %rd4, %rd1, %rd2;",
    "and.b64 %rd4, %rd1, %rd2;",
    "or.b32 %r4, %r1, %r2; cvt.u64.u32 %rd4, %r4;",
    "xor.b64 %rd4, %rd1, %rd2;",
    "not.b32 %r4, %r1; cvt.u64.u32 %rd4, %r4;",
    "neg.s64 %rd4, %rd1;",
    "abs.s32 %r4, %r1; cvt.u64.u32 %rd4, %r4;",
    "shl.b32 %r4, %r1, %r2; cvt.u64.u32 %rd4, %r4;",
    "shr.s32 %r4, %r1, %r2; cvt.u64.u32 %rd4, %r4;",
    "shr.u64 %rd4, %rd1, %r2;",
    "popc.b64 %r4, %rd1; cvt.u64.u32 %rd4, %r4;",
    "clz.b32 %r4, %r1; cvt.u64.u32 %rd4, %r4;",
    "brev.b32 %r4, %r1; cvt.u64.u32 %rd4, %r4;",
    "bfind.u32 %r4, %r1; cvt.u64.u32 %rd4, %r4;",
    "bfe.s32 %r4, %r1, %r2, %r3; cvt.u64.u32 %rd4, %r4;",
    "bfi.b32 %r4, %r1, %r2, %r3, 5; cvt.u64.u32 %rd4, %r4;",
    "prmt.b32 %r4, %r1, %r2, %r3; cvt.u64.u32 %rd4, %r4;",
    "shf.l.wrap.b32 %r4, %r1, %r2, %r3; cvt.u64.u32 %rd4, %r4;",
    "shf.r.clamp.b32 %r4, %r1, %r2, %r3; cvt.u64.u32 %rd4, %r4;",
    "lop3.b32 %r4, %r1, %r2, %r3, 0xe8; cvt.u64.u32 %rd4, %r4;",
    "sad.u32 %r4, %r1, %r2, %r3; cvt.u64.u32 %rd4, %r4;",
    "add.cc.u32 %r4, %r1, %r2; addc.u32 %r5, %r3, 0; cvt.u64.u32 %rd4, %r5;",
    "mad.lo.cc.u32 %r4, %r1, %r2, %r3; madc.hi.u32 %r5, %r1, %r2, 0; cvt.u64.u32 %rd4, %r5;",
    "setp.lt.s32 %p4, %r1, %r2; selp.u64 %rd4, %rd1, %rd2, %p4;",
    "setp.hi.u64 %p4, %rd1, %rd2; setp.eq.and.u32 %p5, %r1, %r3, %p4; selp.u64 %rd4, 1, 2, %p5;",
    "cvt.s64.s16 %rd4, %rd1;",
    "cvt.u8.u32 %h1, %r1; cvt.u64.u16 %rd4, %h1;",
    "cvt.sat.s8.s32 %r4, %r1; cvt.u64.u32 %rd4, %r4;",
    "mov.b64 {%r4, %r5}, %rd1; add.u32 %r4, %r4, %r5; cvt.u64.u32 %rd4, %r4;",
    "mov.b64 %rd4, {%r2, %r1};",
];

const FLOAT: &[&str] = &[
    "add.f32 %f4, %f1, %f2; mov.b32 %r4, %f4; cvt.u64.u32 %rd4, %r4;",
    "sub.ftz.f32 %f4, %f1, %f2; mov.b32 %r4, %f4; cvt.u64.u32 %rd4, %r4;",
    "mul.rz.f32 %f4, %f1, %f2; mov.b32 %r4, %f4; cvt.u64.u32 %rd4, %r4;",
    "mul.sat.f32 %f4, %f1, %f2; mov.b32 %r4, %f4; cvt.u64.u32 %rd4, %r4;",
    "div.rn.f32 %f4, %f1, %f2; mov.b32 %r4, %f4; cvt.u64.u32 %rd4, %r4;",
    "div.approx.f32 %f4, %f1, %f2; mov.b32 %r4, %f4; cvt.u64.u32 %rd4, %r4;",
    "fma.rn.f32 %f4, %f1, %f2, %f3; mov.b32 %r4, %f4; cvt.u64.u32 %rd4, %r4;",
    "fma.rm.ftz.f32 %f4, %f1, %f2, %f3; mov.b32 %r4, %f4; cvt.u64.u32 %rd4, %r4;",
    "min.f32 %f4, %f1, %f2; mov.b32 %r4, %f4; cvt.u64.u32 %rd4, %r4;",
    "max.f64 %fd4, %fd1, %fd2; mov.b64 %rd4, %fd4;",
    "add.f64 %fd4, %fd1, %fd2; mov.b64 %rd4, %fd4;",
    "mul.rp.f64 %fd4, %fd1, %fd2; mov.b64 %rd4, %fd4;",
    "fma.rn.f64 %fd4, %fd1, %fd2, %fd3; mov.b64 %rd4, %fd4;",
    "div.rn.f64 %fd4, %fd1, %fd2; mov.b64 %rd4, %fd4;",
    "sqrt.rn.f32 %f4, %f1; mov.b32 %r4, %f4; cvt.u64.u32 %rd4, %r4;",
    "sqrt.rn.f64 %fd4, %fd1; mov.b64 %rd4, %fd4;",
    "rcp.rn.f32 %f4, %f1; mov.b32 %r4, %f4; cvt.u64.u32 %rd4, %r4;",
    "rsqrt.approx.f32 %f4, %f1; mov.b32 %r4, %f4; cvt.u64.u32 %rd4, %r4;",
    "sin.approx.f32 %f4, %f1; mov.b32 %r4, %f4; cvt.u64.u32 %rd4, %r4;",
    "ex2.approx.ftz.f32 %f4, %f1; mov.b32 %r4, %f4; cvt.u64.u32 %rd4, %r4;",
    "lg2.approx.f32 %f4, %f1; mov.b32 %r4, %f4; cvt.u64.u32 %rd4, %r4;",
    "neg.f32 %f4, %f1; abs.f32 %f5, %f2; add.f32 %f4, %f4, %f5; mov.b32 %r4, %f4; cvt.u64.u32 %rd4, %r4;",
    "copysign.f32 %f4, %f1, %f2; mov.b32 %r4, %f4; cvt.u64.u32 %rd4, %r4;",
    "testp.normal.f32 %p4, %f1; selp.u64 %rd4, 7, 9, %p4;",
    "setp.gtu.f32 %p4, %f1, %f2; selp.u64 %rd4, 1, 0, %p4;",
    "setp.nan.f64 %p4, %fd1, %fd2; selp.u64 %rd4, 1, 0, %p4;",
    "cvt.rni.s32.f32 %r4, %f1; cvt.u64.u32 %rd4, %r4;",
    "cvt.rzi.sat.u32.f64 %r4, %fd1; cvt.u64.u32 %rd4, %r4;",
    "cvt.rn.f32.s64 %f4, %rd1; mov.b32 %r4, %f4; cvt.u64.u32 %rd4, %r4;",
    "cvt.rn.f32.f64 %f4, %fd1; mov.b32 %r4, %f4; cvt.u64.u32 %rd4, %r4;",
    "cvt.f64.f32 %fd4, %f1; mov.b64 %rd4, %fd4;",
    "cvt.rn.f16.f32 %h1, %f1; cvt.f32.f16 %f4, %h1; mov.b32 %r4, %f4; cvt.u64.u32 %rd4, %r4;",
];

#[test]
fn integer_instructions_match_the_reference() {
    for body in INT {
        same(body);
    }
}

#[test]
fn float_instructions_match_the_reference() {
    for body in FLOAT {
        same(body);
    }
}

#[test]
fn control_flow_matches_the_reference() {
    for body in [
        // A loop whose trip count differs from thread to thread.
        "and.b32 %r4, %r1, 31; mov.u64 %rd4, 0;\nLOOP:\nsetp.eq.u32 %p4, %r4, 0;\n@%p4 bra OUT;\n\
         add.u64 %rd4, %rd4, %rd2; sub.u32 %r4, %r4, 1; bra LOOP;\nOUT:",
        // Nested divergence: if / else inside if.
        "mov.u64 %rd4, 5;\n@!%p1 bra ELSE;\n@%p2 bra INNER;\nadd.u64 %rd4, %rd1, 1;\nbra END;\n\
         INNER:\nadd.u64 %rd4, %rd2, 2;\nbra END;\nELSE:\nmul.lo.u64 %rd4, %rd3, 3;\nEND:",
        // Guarded operations and a guarded early exit (the survivors store).
        "mov.u64 %rd4, %rd1;\n@%p1 add.u64 %rd4, %rd4, %rd2;\n@!%p2 xor.b64 %rd4, %rd4, %rd3;",
        // Predicated stores into the output only (the others keep 0).
        "selp.u64 %rd4, %rd1, %rd2, %p2;",
        // A loop whose guarded branch back splits the group (those looping run
        // on, the others wait after it).
        "and.b32 %r4, %r1, 15; mov.u64 %rd4, 0;\nLOOP:\nadd.u64 %rd4, %rd4, %rd2;\n\
         setp.ne.u32 %p4, %r4, 0; sub.u32 %r4, %r4, 1;\n@%p4 bra LOOP;",
        // Two splits in a row, each meeting again after its branch.
        "mov.u64 %rd4, %rd2;\n@%p1 bra A;\nadd.u64 %rd4, %rd1, 3;\nA:\n@%p2 bra B;\n\
         xor.b64 %rd4, %rd4, %rd3;\nB:",
        // A split whose running group splits again and partly leaves the kernel.
        "mov.u64 %rd4, 1;\n@%p1 bra A;\n@%p2 bra DONE;\nadd.u64 %rd4, %rd4, %rd1;\nA:\n\
         add.u64 %rd4, %rd4, %rd2;",
    ] {
        same(body);
    }
}

/// Narrow and sign-extending loads, a register both read and written, and guards
/// that hold for every lane of a block without being known alike (the lane
/// engine's whole-block column loops and their per-lane fallbacks).
#[test]
fn column_paths_match_the_reference() {
    for body in [
        "ld.global.s8 %r4, [%rd11+1]; cvt.u64.u32 %rd4, %r4;",
        "ld.global.u8 %r4, [%rd12+7]; cvt.u64.u32 %rd4, %r4;",
        "ld.global.s16 %r4, [%rd13+2]; cvt.u64.u32 %rd4, %r4;",
        "ld.global.s32 %r4, [%rd11+4]; cvt.u64.u32 %rd4, %r4;",
        "ld.global.f32 %f4, [%rd12]; mov.b32 %r4, %f4; cvt.u64.u32 %rd4, %r4;",
        "ld.global.u64 %rd4, [%rd13]; add.u64 %rd4, %rd4, %rd4;",
        "mov.u64 %rd4, %rd1; mul.lo.u64 %rd4, %rd4, %rd2; sub.u64 %rd4, %rd3, %rd4;",
        "setp.lt.u32 %p4, %r10, 100000; mov.u64 %rd4, %rd1;\n\
         @%p4 add.u64 %rd4, %rd4, %rd2;\n@!%p4 add.u64 %rd4, %rd4, %rd3;",
        "setp.ne.u32 %p4, %r10, 7; mov.u64 %rd4, %rd1;\n@%p4 xor.b64 %rd4, %rd4, %rd2;",
        // A load into its own address register.
        "ld.global.u64 %rd11, [%rd11]; mov.u64 %rd4, %rd11;",
        // Loads from three buffers in turn (the checked range follows each).
        "ld.global.u64 %rd5, [%rd12]; ld.global.u64 %rd6, [%rd11]; ld.global.u64 %rd7, [%rd13];\n\
         ld.global.u64 %rd8, [%rd12]; xor.b64 %rd4, %rd5, %rd6; xor.b64 %rd4, %rd4, %rd7;\n\
         add.u64 %rd4, %rd4, %rd8;",
        // Both sources the destination, and one of two.
        "mov.u64 %rd4, %rd1; add.u64 %rd4, %rd4, %rd4; sub.u64 %rd4, %rd2, %rd4; xor.b64 %rd4, %rd4, %rd3;",
    ] {
        same(body);
    }
}

/// Shared loads of every width (signed ones widened) and shared stores, by every
/// thread of a block at once: each thread reads its neighbour's value.
#[test]
fn whole_block_shared_accesses_match_the_reference() {
    let body = "mov.u32 %r1, %tid.x;\nmov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\nmad.lo.u32 %r4, %r2, %r3, %r1;\n\
        ld.param.u32 %r5, [pn];\nsetp.lt.u32 %p1, %r4, %r5;\nmul.wide.u32 %rd1, %r4, 8;\n\
        ld.param.u64 %rd2, [pa];\nadd.s64 %rd2, %rd2, %rd1;\nmov.u64 %rd3, 0;\n@%p1 ld.global.u64 %rd3, [%rd2];\n\
        mul.wide.u32 %rd4, %r1, 8;\nmov.u64 %rd5, buf;\nadd.s64 %rd5, %rd5, %rd4;\nst.shared.u64 [%rd5], %rd3;\n\
        st.shared.u8 [%rd5+6], %r4;\nbar.sync 0;\n\
        xor.b32 %r6, %r1, 1;\nmul.wide.u32 %rd6, %r6, 8;\nmov.u64 %rd7, buf;\nadd.s64 %rd7, %rd7, %rd6;\n\
        ld.shared.s8 %r7, [%rd7+1];\nld.shared.s16 %r8, [%rd7+2];\nld.shared.u32 %r9, [%rd7+4];\nld.shared.u64 %rd8, [%rd7];\n\
        ld.shared.s8 %rd9, [%rd7+6];\n\
        cvt.u64.u32 %rd10, %r7;\nxor.b64 %rd8, %rd8, %rd10;\ncvt.u64.u32 %rd10, %r8;\nshl.b64 %rd10, %rd10, 8;\n\
        xor.b64 %rd8, %rd8, %rd10;\ncvt.u64.u32 %rd10, %r9;\nshl.b64 %rd10, %rd10, 16;\nxor.b64 %rd8, %rd8, %rd10;\n\
        add.u64 %rd8, %rd8, %rd9;\n\
        @!%p1 bra OUT;\nld.param.u64 %rd11, [po];\nadd.s64 %rd11, %rd11, %rd1;\nst.global.u64 [%rd11], %rd8;\nOUT:\nret;";
    let ptx = entry(".shared .align 8 .b8 buf[1024];", body);
    let mut rng = Rng(7);
    for round in 0..3 {
        let ins: [Vec<u64>; 3] =
            std::array::from_fn(|_| (0..THREADS).map(|_| rng.value()).collect());
        let lanes = run(&ptx, &ins, false, 128);
        let reference = run(&ptx, &ins, true, 128);
        assert_eq!(lanes, reference, "round {round}");
    }
}

/// Barriers, shared memory, atomics and early exits, over whole blocks: a block
/// sums its threads' values through shared memory (tree reduction with
/// `bar.sync`), counts odd values with a shared atomic, and a global atomic adds
/// each block's sum; threads past `n` exit before the first barrier.
#[test]
fn barriers_shared_memory_and_atomics_match_the_reference() {
    let ptx = ".version 8.0\n.target sm_90\n.address_size 64\n\
        .visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 po, .param .u32 pn)\n{\n\
        .reg .pred %p<4>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<16>;\n\
        .shared .align 8 .b8 sums[1024];\n.shared .align 4 .b8 odd[4];\n\
        mov.u32 %r1, %tid.x;\nmov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\nmad.lo.u32 %r4, %r2, %r3, %r1;\n\
        ld.param.u32 %r5, [pn];\nsetp.ge.u32 %p1, %r4, %r5;\n@%p1 exit;\n\
        setp.eq.u32 %p2, %r1, 0;\n@%p2 st.shared.u32 [odd], 0;\nbar.sync 0;\n\
        mul.wide.u32 %rd1, %r4, 8;\nld.param.u64 %rd2, [pa];\nadd.s64 %rd2, %rd2, %rd1;\nld.global.u64 %rd3, [%rd2];\n\
        mul.wide.u32 %rd4, %r1, 8;\nmov.u64 %rd5, sums;\nadd.s64 %rd5, %rd5, %rd4;\nst.shared.u64 [%rd5], %rd3;\n\
        cvt.u32.u64 %r6, %rd3;\nand.b32 %r6, %r6, 1;\natom.shared.add.u32 %r7, [odd], %r6;\nbar.sync 0;\n\
        mov.u32 %r8, 64;\n\
        RED:\nsetp.lt.u32 %p3, %r1, %r8;\n@!%p3 bra SKIP;\nadd.u32 %r9, %r1, %r8;\nsetp.ge.u32 %p3, %r9, %r3;\n@%p3 bra SKIP;\n\
        mul.wide.u32 %rd6, %r9, 8;\nmov.u64 %rd7, sums;\nadd.s64 %rd7, %rd7, %rd6;\nld.shared.u64 %rd8, [%rd7];\n\
        ld.shared.u64 %rd9, [%rd5];\nadd.u64 %rd9, %rd9, %rd8;\nst.shared.u64 [%rd5], %rd9;\n\
        SKIP:\nbar.sync 0;\nshr.u32 %r8, %r8, 1;\nsetp.ne.u32 %p3, %r8, 0;\n@%p3 bra RED;\n\
        ld.param.u64 %rd10, [po];\n@!%p2 bra OUT;\nld.shared.u64 %rd11, [sums];\natom.global.add.u64 %rd12, [%rd10], %rd11;\n\
        ld.shared.u32 %r10, [odd];\ncvt.u64.u32 %rd13, %r10;\nmul.wide.u32 %rd14, %r2, 8;\nadd.s64 %rd14, %rd10, %rd14;\n\
        atom.global.add.u64 %rd12, [%rd14+8], %rd13;\n\
        OUT:\nret;\n}\n";
    let mut rng = Rng(42);
    for round in 0..3 {
        let ins: [Vec<u64>; 3] =
            std::array::from_fn(|_| (0..THREADS).map(|_| rng.next() >> 8).collect());
        let lanes = run(ptx, &ins, false, 128);
        let reference = run(ptx, &ins, true, 128);
        assert_eq!(lanes, reference, "round {round}");
        let n = THREADS - 7;
        let total: u64 = ins[0][..n]
            .iter()
            .fold(0xdead_beef_u64, |s, &v| s.wrapping_add(v));
        assert_eq!(lanes[0], total, "the sum of every thread's value");
    }
}

/// Atomics by every thread of a block at once, many to one address, each
/// returning the old value (the order of the lanes shows in them): shared `add`,
/// `max`, `cas`, `exch`, `inc`, f32 `add`, one whose destination is its own
/// address register and a `red`; global `add`s of both widths. Each between
/// barriers, so that both engines apply one operation in thread order.
#[test]
fn whole_block_atomics_match_the_reference() {
    let body = "mov.u32 %r1, %tid.x;\nmov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\nmad.lo.u32 %r4, %r2, %r3, %r1;\n\
        ld.param.u32 %r5, [pn];\nsub.u32 %r6, %r5, 1;\nmin.u32 %r6, %r4, %r6;\n\
        mul.wide.u32 %rd1, %r6, 8;\nld.param.u64 %rd2, [pa];\nadd.s64 %rd2, %rd2, %rd1;\nld.global.u64 %rd3, [%rd2];\n\
        setp.lt.u32 %p1, %r1, 24;\nmul.wide.u32 %rd4, %r1, 8;\nmov.u64 %rd5, bins;\nadd.s64 %rd5, %rd5, %rd4;\n\
        @%p1 st.shared.u64 [%rd5], 0;\nbar.sync 0;\n\
        cvt.u32.u64 %r7, %rd3;\nand.b32 %r8, %r7, 7;\nshr.u64 %rd6, %rd3, 40;\ncvt.u32.u64 %r9, %rd6;\n\
        mul.wide.u32 %rd7, %r8, 8;\nmov.u64 %rd8, bins;\nadd.s64 %rd8, %rd8, %rd7;\n\
        atom.shared.add.u32 %r10, [%rd8], %r9;\nbar.sync 0;\n\
        atom.shared.max.s32 %r11, [%rd8+4], %r7;\nbar.sync 0;\n\
        atom.shared.cas.b32 %r12, [%rd8], %r10, %r1;\nbar.sync 0;\n\
        atom.shared.exch.b64 %rd9, [%rd8+64], %rd3;\nbar.sync 0;\n\
        mov.u64 %rd10, %rd8;\natom.shared.add.u64 %rd10, [%rd10+64], %rd3;\nbar.sync 0;\n\
        atom.shared.inc.u32 %r13, [%rd8+4], 100;\nbar.sync 0;\n\
        cvt.rn.f32.u32 %f1, %r9;\natom.shared.add.f32 %f2, [%rd8+128], %f1;\nbar.sync 0;\n\
        red.shared.add.u32 [%rd8], 1;\nbar.sync 0;\nld.shared.u32 %r14, [%rd8];\n\
        ld.param.u64 %rd11, [pb];\nadd.s64 %rd11, %rd11, %rd7;\n\
        atom.global.add.u64 %rd12, [%rd11], %rd3;\natom.global.add.u32 %r15, [%rd11+64], %r9;\n\
        xor.b64 %rd9, %rd9, %rd10;\nxor.b64 %rd9, %rd9, %rd12;\n\
        mov.b64 %rd13, {%r10, %r11};\nxor.b64 %rd9, %rd9, %rd13;\nmov.b64 %rd13, {%r12, %r13};\nshl.b64 %rd13, %rd13, 1;\n\
        xor.b64 %rd9, %rd9, %rd13;\nmov.b32 %r12, %f2;\nmov.b64 %rd13, {%r14, %r12};\nshl.b64 %rd13, %rd13, 2;\n\
        xor.b64 %rd9, %rd9, %rd13;\ncvt.u64.u32 %rd13, %r15;\nshl.b64 %rd13, %rd13, 3;\nxor.b64 %rd9, %rd9, %rd13;\n\
        setp.lt.u32 %p2, %r4, %r5;\n@!%p2 bra END;\n\
        ld.param.u64 %rd14, [po];\nmul.wide.u32 %rd15, %r4, 8;\nadd.s64 %rd14, %rd14, %rd15;\nst.global.u64 [%rd14], %rd9;\n\
        END:\nret;";
    let ptx = entry(".reg .f32 %f<4>;\n.shared .align 8 .b8 bins[192];", body);
    let mut rng = Rng(11);
    for round in 0..3 {
        let ins: [Vec<u64>; 3] =
            std::array::from_fn(|_| (0..THREADS).map(|_| rng.value()).collect());
        for block in [128, 64] {
            let lanes = run(&ptx, &ins, false, block);
            let reference = run(&ptx, &ins, true, block);
            assert_eq!(lanes, reference, "round {round}, block {block}");
        }
    }
    // One lane's atomic misaligned: both refuse the launch, with one error.
    let ptx = entry(
        ".shared .align 8 .b8 sh[64];",
        "mov.u32 %r1, %tid.x;\nsetp.eq.u32 %p1, %r1, 5;\nselp.u32 %r2, 2, 0, %p1;\n\
         mov.u32 %r3, sh;\nadd.u32 %r3, %r3, %r2;\natom.shared.add.u32 %r4, [%r3], 1;\nret;",
    );
    let ins: [Vec<u64>; 3] = std::array::from_fn(|_| vec![0; THREADS]);
    let lanes = try_run(&ptx, &ins, false, 128).unwrap_err();
    assert_eq!(lanes, try_run(&ptx, &ins, true, 128).unwrap_err());
    // The same for a global load one lane makes misaligned.
    let ptx = entry(
        "",
        "mov.u32 %r1, %tid.x;\nsetp.eq.u32 %p1, %r1, 5;\nselp.u32 %r2, 2, 0, %p1;\ncvt.u64.u32 %rd2, %r2;\n\
         ld.param.u64 %rd1, [pa];\nadd.s64 %rd1, %rd1, %rd2;\nld.global.u32 %r3, [%rd1];\nret;",
    );
    // (Each run has its own buffers: the addresses differ, not the error.)
    for reference in [false, true] {
        let e = try_run(&ptx, &ins, reference, 128).unwrap_err();
        assert!(
            e.starts_with("MisalignedAddress"),
            "reference {reference}: {e}"
        );
    }
}

/// Review findings, each a case the two engines once disagreed on.
#[test]
fn threads_that_return_before_a_barrier_do_not_strand_the_others() {
    // `if (tid >= 20) return; __syncthreads(); out[i] = 7;` with the return as a
    // branch to the final `ret`: the last runnable threads exit while the others
    // wait at the barrier.
    let ptx = entry(
        "",
        "mov.u32 %r1, %tid.x;\nmov.u32 %r2, %ctaid.x;\nmov.u32 %r3, %ntid.x;\nmad.lo.u32 %r4, %r2, %r3, %r1;\n\
         setp.ge.u32 %p1, %r1, 20;\n@%p1 bra END;\nbar.sync 0;\n\
         ld.param.u64 %rd1, [po];\nmul.wide.u32 %rd2, %r4, 8;\nadd.s64 %rd1, %rd1, %rd2;\nst.global.u64 [%rd1], 7;\n\
         END:\nret;",
    );
    let ins: [Vec<u64>; 3] = std::array::from_fn(|_| vec![0; THREADS]);
    let lanes = run(&ptx, &ins, false, 128);
    assert_eq!(lanes, run(&ptx, &ins, true, 128));
    assert_eq!(
        &lanes[..21],
        &[[7; 20].as_slice(), &[0xdead_beef]].concat()[..]
    );
}

#[test]
fn a_producer_between_two_spinning_groups_runs() {
    // Thread 1 writes a flag that threads 0, 2 and the rest spin on, from code before
    // and after the producer's.
    let ptx = entry(
        ".shared .align 4 .b8 sh[4];",
        "mov.u32 %r1, %tid.x;\nsetp.eq.u32 %p1, %r1, 0;\n@%p1 st.shared.u32 [sh], 0;\nbar.sync 0;\n\
         setp.eq.u32 %p2, %r1, 1;\n@%p2 bra PROD;\nsetp.eq.u32 %p3, %r1, 2;\n@%p3 bra W2;\n\
         W1:\nld.volatile.shared.u32 %r2, [sh];\nsetp.eq.u32 %p4, %r2, 0;\n@%p4 bra W1;\nbra DONE;\n\
         PROD:\nst.volatile.shared.u32 [sh], 1;\nbra DONE;\n\
         W2:\nld.volatile.shared.u32 %r3, [sh];\nsetp.eq.u32 %p5, %r3, 0;\n@%p5 bra W2;\n\
         DONE:\nmov.u32 %r4, %ctaid.x;\nmov.u32 %r5, %ntid.x;\nmad.lo.u32 %r6, %r4, %r5, %r1;\n\
         ld.param.u32 %r7, [pn];\nsetp.ge.u32 %p6, %r6, %r7;\n@%p6 bra END;\n\
         ld.param.u64 %rd1, [po];\nmul.wide.u32 %rd2, %r6, 8;\nadd.s64 %rd1, %rd1, %rd2;\nst.global.u64 [%rd1], 1;\n\
         END:\nret;",
    );
    let ins: [Vec<u64>; 3] = std::array::from_fn(|_| vec![0; THREADS]);
    let lanes = run(&ptx, &ins, false, 128);
    assert_eq!(lanes, run(&ptx, &ins, true, 128));
    assert!(lanes[..THREADS - 7].iter().all(|&v| v == 1));
}

#[test]
fn an_access_past_a_small_shared_memory_is_refused_by_both() {
    let ptx = entry(
        ".shared .align 4 .b8 sh[4];",
        "mov.u32 %r1, 0;\nld.shared.u64 %rd1, [%r1];\nst.shared.u64 [%r1], %rd1;\nret;",
    );
    let ins: [Vec<u64>; 3] = std::array::from_fn(|_| vec![0; THREADS]);
    let lanes = try_run(&ptx, &ins, false, 128).unwrap_err();
    assert_eq!(lanes, try_run(&ptx, &ins, true, 128).unwrap_err());
    assert!(lanes.contains("IllegalAddress"), "{lanes}");
}

/// Warp collectives: `shfl` in every mode (with and without its predicate),
/// `vote`, `redux`, `match` and `bar.warp.sync`, with full masks and with masks
/// that split each warp in halves, in the three shapes (in the divergent one the
/// lanes that skip exit, and the others' collectives fire without them).
#[test]
fn warp_collectives_match_the_reference() {
    const HALVES: &str = "mov.u32 %r6, %tid.x; and.b32 %r6, %r6, 16; setp.eq.u32 %p5, %r6, 0; \
                          selp.b32 %r7, 0xffff, 0xffff0000, %p5;\n";
    for body in [
        "shfl.sync.bfly.b32 %r4, %r1, 1, 0x1f, 0xffffffff; cvt.u64.u32 %rd4, %r4;".to_string(),
        "shfl.sync.down.b32 %r4|%p4, %r1, 3, 0x1f, 0xffffffff; selp.u32 %r5, 1, 0, %p4; \
         add.u32 %r4, %r4, %r5; cvt.u64.u32 %rd4, %r4;"
            .into(),
        "shfl.sync.up.b32 %r4|%p4, %r1, 5, 0, 0xffffffff; selp.u32 %r5, 1, 0, %p4; \
         add.u32 %r4, %r4, %r5; cvt.u64.u32 %rd4, %r4;"
            .into(),
        "shfl.sync.idx.b32 %r4, %r1, %r2, 0x1f, 0xffffffff; cvt.u64.u32 %rd4, %r4;".into(),
        "shfl.sync.idx.b32 %r4, %r1, %r2, 0x0c07, 0xffffffff; cvt.u64.u32 %rd4, %r4;".into(),
        "vote.sync.ballot.b32 %r4, %p1, 0xffffffff; cvt.u64.u32 %rd4, %r4;".into(),
        "vote.sync.all.pred %p4, %p1, 0xffffffff; vote.sync.any.pred %p5, %p2, 0xffffffff; \
         vote.sync.uni.pred %p6, %p1, 0xffffffff; selp.u64 %rd4, 1, 2, %p4; selp.u64 %rd5, 4, 8, %p5; \
         selp.u64 %rd6, 16, 32, %p6; add.u64 %rd4, %rd4, %rd5; add.u64 %rd4, %rd4, %rd6;"
            .into(),
        "redux.sync.add.u32 %r4, %r1, 0xffffffff; redux.sync.max.s32 %r5, %r2, 0xffffffff; \
         xor.b32 %r4, %r4, %r5; cvt.u64.u32 %rd4, %r4;"
            .into(),
        "and.b32 %r5, %r1, 3; match.any.sync.b32 %r4, %r5, 0xffffffff; cvt.u64.u32 %rd4, %r4;"
            .into(),
        "match.all.sync.b64 %r4|%p4, %rd1, 0xffffffff; selp.u32 %r5, 1, 0, %p4; \
         add.u32 %r4, %r4, %r5; cvt.u64.u32 %rd4, %r4;"
            .into(),
        "bar.warp.sync 0xffffffff; shfl.sync.bfly.b32 %r4, %r1, 16, 0x1f, 0xffffffff; \
         bar.warp.sync 0xffffffff; cvt.u64.u32 %rd4, %r4;"
            .into(),
        format!(
            "{HALVES}shfl.sync.bfly.b32 %r4, %r1, 2, 0x1f, %r7; vote.sync.ballot.b32 %r5, %p1, %r7; \
             add.u32 %r4, %r4, %r5; cvt.u64.u32 %rd4, %r4;"
        ),
        // A reduction loop: the collective inside a loop every lane runs.
        "mov.u32 %r4, %r1; mov.u32 %r5, 16;\nRED:\nshfl.sync.down.b32 %r6, %r4, %r5, 0x1f, 0xffffffff; \
         add.u32 %r4, %r4, %r6; shr.u32 %r5, %r5, 1; setp.ne.u32 %p4, %r5, 0;\n@%p4 bra RED;\n\
         cvt.u64.u32 %rd4, %r4;"
            .into(),
    ] {
        same(&body);
    }
}

/// A collective whose mask names a lane waiting at a block barrier never
/// completes: both engines report the deadlock instead of hanging.
#[test]
fn a_collective_waiting_for_a_lane_at_a_barrier_is_a_deadlock_on_both() {
    let ptx = entry(
        "",
        "mov.u32 %r1, %tid.x;\nsetp.eq.u32 %p1, %r1, 0;\n@%p1 bra B;\n\
         shfl.sync.bfly.b32 %r2, %r1, 1, 0x1f, 0xffffffff;\nbra END;\n\
         B:\nbar.sync 0;\nEND:\nret;",
    );
    // And two collectives of different kinds, each naming the other's lanes.
    let kinds = entry(
        "",
        "mov.u32 %r1, %tid.x;\nand.b32 %r2, %r1, 1;\nsetp.eq.u32 %p1, %r2, 0;\n@%p1 bra B;\n\
         shfl.sync.bfly.b32 %r3, %r1, 1, 0x1f, 0xffffffff;\nbra END;\n\
         B:\nvote.sync.ballot.b32 %r3, %p1, 0xffffffff;\nEND:\nret;",
    );
    let ins: [Vec<u64>; 3] = std::array::from_fn(|_| vec![0; THREADS]);
    for ptx in [ptx, kinds] {
        let lanes = try_run(&ptx, &ins, false, 128).unwrap_err();
        let reference = try_run(&ptx, &ins, true, 128).unwrap_err();
        assert!(lanes.contains("deadlock"), "{lanes}");
        assert_eq!(lanes, reference, "the same report, naming the same line");
    }
}

/// `fma.rn.f64` with two NaN operands: the NaN the result carries is the one the
/// reference's (the library's) fused multiply-add propagates, on the whole-block
/// column path too (a review finding; it shows in release builds).
#[test]
fn fma_f64_of_two_nans_matches_the_reference() {
    same(
        "or.b64 %rd5, %rd1, 0x7ff8000000000000; or.b64 %rd6, %rd2, 0x7ff8000000000000;\n\
         mov.b64 %fd5, %rd5; mov.b64 %fd6, %rd6; fma.rn.f64 %fd4, %fd5, %fd6, %fd3; mov.b64 %rd4, %fd4;",
    );
}

/// Whole-block atomics (many lanes to one address) whose destination is also an
/// operand: each lane reads its operands before it writes the old value.
#[test]
fn whole_block_atomics_whose_destination_is_an_operand() {
    for atom in [
        "atom.shared.add.u32 %r2, [%rd2], %r2;",
        "atom.shared.cas.b32 %r2, [%rd2], 3, %r2;",
        "atom.shared.dec.u32 %r2, [%rd2], %r2;",
        "cvta.shared.u64 %rd3, %rd2;\natom.add.u32 %r2, [%rd3], %r2;",
    ] {
        let ptx = entry(
            ".shared .align 8 .b8 sh[8];",
            &format!(
                "mov.u32 %r1, %tid.x;\nmov.u64 %rd2, sh;\nand.b32 %r2, %r1, 7;\n{atom}\nbar.sync 0;\nld.shared.u32 %r3, [sh];\n\
                 mov.b64 %rd4, {{%r2, %r3}};\nmov.u32 %r4, %ctaid.x;\nmov.u32 %r5, %ntid.x;\nmad.lo.u32 %r6, %r4, %r5, %r1;\n\
                 ld.param.u32 %r7, [pn];\nsetp.ge.u32 %p1, %r6, %r7;\n@%p1 bra END;\nld.param.u64 %rd5, [po];\n\
                 mul.wide.u32 %rd6, %r6, 8;\nadd.s64 %rd5, %rd5, %rd6;\nst.global.u64 [%rd5], %rd4;\nEND:\nret;"
            ),
        );
        let ins: [Vec<u64>; 3] = std::array::from_fn(|_| vec![0; THREADS]);
        assert_eq!(
            run(&ptx, &ins, false, 128),
            run(&ptx, &ins, true, 128),
            "{atom}"
        );
    }
}

/// A split's group run first meets the parked one right after an operation that
/// does nothing for it.
#[test]
fn a_split_meets_again_after_an_operation_that_does_nothing() {
    for op in [
        "@%p6 add.u64 %rd4, %rd4, 9;",
        "@%p1 ret;",
        "@%p1 bar.sync 0;",
        "@%p1 vote.sync.ballot.b32 %r4, %p2, 0xffffffff;",
        "@%p1 bra A;",
    ] {
        same(&format!(
            "mov.u64 %rd4, 2; setp.eq.u32 %p6, %r10, 0xffffffff;\n@%p1 bra A;\n\
             add.u64 %rd4, %rd4, %rd1;\n{op}\nA:\nadd.u64 %rd4, %rd4, %rd2;"
        ));
    }
}

/// Two groups of a split wait at different barriers: the same deadlock report.
#[test]
fn a_split_into_two_barriers_is_the_same_deadlock() {
    for (a, b) in [("@%p1 bra A;", ""), ("bra S;", "S:\n@%p1 bra A;\n")] {
        let ptx = entry(
            "",
            &format!(
                "mov.u32 %r1, %tid.x;\nsetp.lt.u32 %p1, %r1, 40;\n{a}\nbra S2;\n\
                 A:\nbar.sync 1;\nbra END;\nS2:\n{b}bar.sync 0;\nEND:\nret;"
            ),
        );
        let ins: [Vec<u64>; 3] = std::array::from_fn(|_| vec![0; THREADS]);
        let lanes = try_run(&ptx, &ins, false, 128).unwrap_err();
        assert!(lanes.contains("deadlock"), "{lanes}");
        assert_eq!(lanes, try_run(&ptx, &ins, true, 128).unwrap_err());
    }
}

/// f64 arithmetic with two NaN operands (quiet, signalling; random payloads): the
/// NaN the result carries does not depend on how each copy of the code was compiled.
#[test]
fn f64_arithmetic_of_two_nans_matches_the_reference() {
    const QNANS: &str =
        "or.b64 %rd5, %rd1, 0x7ff8000000000000; or.b64 %rd6, %rd2, 0x7ff8000000000000;\n";
    const SNANS: &str = "and.b64 %rd5, %rd1, 0x8007ffffffffffff; or.b64 %rd5, %rd5, 0x7ff0000000000001;\n\
                         and.b64 %rd6, %rd2, 0x8007ffffffffffff; or.b64 %rd6, %rd6, 0x7ff0000000000001;\n";
    for nans in [QNANS, SNANS] {
        for op in [
            "add", "mul", "sub", "div.rn", "add.rz", "mul.rm", "min", "max",
        ] {
            for (x, y) in [("%fd5", "%fd6"), ("%fd6", "%fd5"), ("%fd5", "%fd2")] {
                same(&format!(
                    "{nans}mov.b64 %fd5, %rd5; mov.b64 %fd6, %rd6;\n{op}.f64 %fd4, {x}, {y}; mov.b64 %rd4, %fd4;"
                ));
            }
        }
    }
}
