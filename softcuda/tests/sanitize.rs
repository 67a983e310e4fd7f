//! softcuda's sanitizer (`SOFTCUDA_SANITIZE`, `control::set_sanitize`): each memcheck
//! finding produced by a kernel (or host call) written for it, and absent from its
//! clean twin, asserted on the report's text (compute-sanitizer's `========= `
//! lines) and on the error count of `ERROR SUMMARY`.

mod common;

use common::{function, launch_kernel, ok, serial};
use softcuda::api::{context::*, memory::*, module::*};
use softcuda::control;
use softcuda::types::*;
use std::ffi::{CStr, c_void};
use std::sync::MutexGuard;

/// The kernels: `fill(p)` stores `%tid.x` at `p[%tid.x]`; `copy(d, s)` loads
/// `s[%tid.x]` into `d[%tid.x]`; `bump(p)` adds 1 at `p[%tid.x]` atomically;
/// `shared_fill(out)` stores into a 64-byte static shared array at `4 * %tid.x`,
/// then thread 0 copies its first word to `out`; `dyn_fill()` stores at
/// `4 * %tid.x` of the dynamic shared memory; `param_store(v)` stores into its own
/// parameter (generic address of the parameter window); `early_exit(out)`: threads
/// 16 and up exit, the others meet at `bar.sync 0`; `two_bars()`: threads below 16
/// wait at one `bar.sync 0`, the others at another; `shfl_all(out)`: a
/// `shfl.sync` over the full mask; `vote_exit(out, mask)`: threads 16 and up
/// exit, the others `vote.sync.ballot` with `mask`; `loc_fill(p)`: `fill` with
/// `.loc` directives naming `/src/vec.cu`; `race_shared(out, mode)`: each thread
/// stores to its word of a shared array, then (mode 1: after `bar.sync`, mode 2:
/// after `bar.warp.sync`, mode 0: at once) loads its right neighbour's word;
/// `shared_atomic(out)`: every thread adds 1 to one shared word atomically.
const PTX: &str = concat!(
    ".version 8.0\n.target sm_80\n.address_size 64\n",
    ".visible .entry fill(.param .u64 fill_p)\n{\n",
    ".reg .b32 %r<2>;\n.reg .b64 %rd<4>;\n",
    "ld.param.u64 %rd1, [fill_p];\n",
    "mov.u32 %r1, %tid.x;\n",
    "mul.wide.u32 %rd2, %r1, 4;\n",
    "add.s64 %rd3, %rd1, %rd2;\n",
    "st.global.u32 [%rd3], %r1;\n",
    "ret;\n}\n",
    ".visible .entry copy(.param .u64 copy_d, .param .u64 copy_s)\n{\n",
    ".reg .b32 %r<3>;\n.reg .b64 %rd<6>;\n",
    "ld.param.u64 %rd1, [copy_d];\n",
    "ld.param.u64 %rd2, [copy_s];\n",
    "mov.u32 %r1, %tid.x;\n",
    "mul.wide.u32 %rd3, %r1, 4;\n",
    "add.s64 %rd4, %rd2, %rd3;\n",
    "ld.global.u32 %r2, [%rd4];\n",
    "add.s64 %rd5, %rd1, %rd3;\n",
    "st.global.u32 [%rd5], %r2;\n",
    "ret;\n}\n",
    ".visible .entry bump(.param .u64 bump_p)\n{\n",
    ".reg .b32 %r<3>;\n.reg .b64 %rd<4>;\n",
    "ld.param.u64 %rd1, [bump_p];\n",
    "mov.u32 %r1, %tid.x;\n",
    "mul.wide.u32 %rd2, %r1, 4;\n",
    "add.s64 %rd3, %rd1, %rd2;\n",
    "atom.global.add.u32 %r2, [%rd3], 1;\n",
    "ret;\n}\n",
    ".visible .entry shared_fill(.param .u64 sf_out)\n{\n",
    ".reg .pred %p<2>;\n.reg .b32 %r<4>;\n.reg .b64 %rd<2>;\n",
    ".shared .align 4 .b8 buf[64];\n",
    "mov.u32 %r1, %tid.x;\n",
    "shl.b32 %r2, %r1, 2;\n",
    "mov.u32 %r3, buf;\n",
    "add.s32 %r3, %r3, %r2;\n",
    "st.shared.u32 [%r3], %r1;\n",
    "bar.sync 0;\n",
    "setp.ne.u32 %p1, %r1, 0;\n",
    "@%p1 bra DONE;\n",
    "ld.shared.u32 %r2, [buf];\n",
    "ld.param.u64 %rd1, [sf_out];\n",
    "st.global.u32 [%rd1], %r2;\n",
    "DONE:\nret;\n}\n",
    ".extern .shared .align 16 .b8 dyn[];\n",
    ".visible .entry dyn_fill()\n{\n",
    ".reg .b32 %r<4>;\n",
    "mov.u32 %r1, %tid.x;\n",
    "shl.b32 %r2, %r1, 2;\n",
    "mov.u32 %r3, dyn;\n",
    "add.s32 %r3, %r3, %r2;\n",
    "st.shared.u32 [%r3], %r1;\n",
    "ret;\n}\n",
    ".visible .entry param_store(.param .u32 ps_v)\n{\n",
    ".reg .b32 %r<2>;\n.reg .b64 %rd<3>;\n",
    "mov.u64 %rd1, ps_v;\n",
    "cvta.param.u64 %rd2, %rd1;\n",
    "mov.u32 %r1, 7;\n",
    "st.u32 [%rd2], %r1;\n",
    "ret;\n}\n",
    ".visible .entry early_exit(.param .u64 ee_out)\n{\n",
    ".reg .pred %p<2>;\n.reg .b32 %r<2>;\n.reg .b64 %rd<4>;\n",
    "mov.u32 %r1, %tid.x;\n",
    "setp.ge.u32 %p1, %r1, 16;\n",
    "@%p1 bra DONE;\n",
    "bar.sync 0;\n",
    "ld.param.u64 %rd1, [ee_out];\n",
    "mul.wide.u32 %rd2, %r1, 4;\n",
    "add.s64 %rd3, %rd1, %rd2;\n",
    "st.global.u32 [%rd3], %r1;\n",
    "DONE:\nret;\n}\n",
    ".visible .entry two_bars()\n{\n",
    ".reg .pred %p<2>;\n.reg .b32 %r<2>;\n",
    "mov.u32 %r1, %tid.x;\n",
    "setp.ge.u32 %p1, %r1, 16;\n",
    "@%p1 bra HIGH;\n",
    "bar.sync 0;\n",
    "bra.uni DONE;\n",
    "HIGH:\nbar.sync 0;\n",
    "DONE:\nret;\n}\n",
    ".visible .entry shfl_all(.param .u64 sa_out)\n{\n",
    ".reg .b32 %r<3>;\n.reg .b64 %rd<4>;\n",
    "mov.u32 %r1, %tid.x;\n",
    "shfl.sync.idx.b32 %r2, %r1, 0, 31, 0xffffffff;\n",
    "ld.param.u64 %rd1, [sa_out];\n",
    "mul.wide.u32 %rd2, %r1, 4;\n",
    "add.s64 %rd3, %rd1, %rd2;\n",
    "st.global.u32 [%rd3], %r2;\n",
    "ret;\n}\n",
    ".visible .entry vote_exit(.param .u64 ve_out, .param .u32 ve_mask)\n{\n",
    ".reg .pred %p<3>;\n.reg .b32 %r<4>;\n.reg .b64 %rd<2>;\n",
    "mov.u32 %r1, %tid.x;\n",
    "setp.ge.u32 %p1, %r1, 16;\n",
    "@%p1 bra DONE;\n",
    "ld.param.u32 %r2, [ve_mask];\n",
    "setp.ne.u32 %p2, %r1, 3;\n",
    "vote.sync.ballot.b32 %r3, %p2, %r2;\n",
    "ld.param.u64 %rd1, [ve_out];\n",
    "st.global.u32 [%rd1], %r3;\n",
    "DONE:\nret;\n}\n",
    ".file 1 \"/src/vec.cu\"\n",
    ".visible .entry loc_fill(.param .u64 lf_p)\n{\n",
    ".reg .b32 %r<2>;\n.reg .b64 %rd<4>;\n",
    ".loc 1 5 0\n",
    "ld.param.u64 %rd1, [lf_p];\n",
    "mov.u32 %r1, %tid.x;\n",
    "mul.wide.u32 %rd2, %r1, 4;\n",
    "add.s64 %rd3, %rd1, %rd2;\n",
    ".loc 1 7 3\n",
    "st.global.u32 [%rd3], %r1;\n",
    "ret;\n}\n",
    ".visible .entry race_shared(.param .u64 rs_out, .param .u32 rs_mode)\n{\n",
    ".reg .pred %p<3>;\n.reg .b32 %r<9>;\n.reg .b64 %rd<4>;\n",
    ".shared .align 4 .b8 rs[256];\n",
    "mov.u32 %r1, %tid.x;\n",
    "shl.b32 %r2, %r1, 2;\n",
    "mov.u32 %r3, rs;\n",
    "add.s32 %r4, %r3, %r2;\n",
    "st.shared.u32 [%r4], %r1;\n",
    "ld.param.u32 %r5, [rs_mode];\n",
    "setp.eq.u32 %p1, %r5, 1;\n",
    "@%p1 bar.sync 0;\n",
    "setp.eq.u32 %p2, %r5, 2;\n",
    "@%p2 bar.warp.sync 0xffffffff;\n",
    "add.u32 %r6, %r1, 1;\n",
    "mov.u32 %r7, %ntid.x;\n",
    "rem.u32 %r6, %r6, %r7;\n",
    "shl.b32 %r6, %r6, 2;\n",
    "add.s32 %r6, %r3, %r6;\n",
    "ld.shared.u32 %r8, [%r6];\n",
    "ld.param.u64 %rd1, [rs_out];\n",
    "mul.wide.u32 %rd2, %r1, 4;\n",
    "add.s64 %rd3, %rd1, %rd2;\n",
    "st.global.u32 [%rd3], %r8;\n",
    "ret;\n}\n",
    ".visible .entry shared_atomic(.param .u64 sa2_out)\n{\n",
    ".reg .pred %p<2>;\n.reg .b32 %r<4>;\n.reg .b64 %rd<2>;\n",
    ".shared .align 4 .b8 cnt[4];\n",
    "atom.shared.add.u32 %r1, [cnt], 1;\n",
    "bar.sync 0;\n",
    "mov.u32 %r2, %tid.x;\n",
    "setp.ne.u32 %p1, %r2, 0;\n",
    "@%p1 bra DONE;\n",
    "ld.shared.u32 %r3, [cnt];\n",
    "ld.param.u64 %rd1, [sa2_out];\n",
    "st.global.u32 [%rd1], %r3;\n",
    "DONE:\nret;\n}\n\0"
);

/// A context with the module loaded, memcheck on and the report empty.
struct Fixture {
    _g: MutexGuard<'static, ()>,
    ctx: CUcontext,
    module: CUmodule,
}

impl Fixture {
    fn new(tools: &str) -> Fixture {
        let g = serial();
        control::set_sanitize(tools).unwrap();
        control::sanitize_summary();
        control::sanitize_report();
        let mut ctx = std::ptr::null_mut();
        let mut module = std::ptr::null_mut();
        // SAFETY: valid out-pointers, a NUL-terminated PTX image.
        unsafe {
            ok(cuCtxCreate_v2(&mut ctx, 0, 0));
            ok(cuModuleLoadData(&mut module, PTX.as_ptr().cast()));
        }
        Fixture { _g: g, ctx, module }
    }

    fn alloc(&self, bytes: usize) -> CUdeviceptr {
        let mut p = 0;
        // SAFETY: a valid out-pointer; the context is current.
        ok(unsafe { cuMemAlloc_v2(&mut p, bytes) });
        p
    }

    /// Launches `name` with `threads` threads in one block and `shared` bytes of
    /// dynamic shared memory, then synchronises: the synchronisation's result.
    fn run(&self, name: &CStr, threads: u32, shared: u32, args: &[u64]) -> CUresult {
        let f = function(self.module, name);
        let mut vals = args.to_vec();
        let mut params: Vec<*mut c_void> = vals
            .iter_mut()
            .map(|v| (v as *mut u64).cast::<c_void>())
            .collect();
        let r = launch_kernel(
            f,
            [1, 1, 1],
            [threads, 1, 1],
            shared,
            std::ptr::null_mut(),
            &mut params,
        );
        if r != code::SUCCESS {
            return r;
        }
        // SAFETY: the context is current.
        unsafe { cuCtxSynchronize() }
    }

    /// The report so far and the error count (the summary, printed and reset).
    fn finish(self) -> (String, u64) {
        let n = control::sanitize_summary();
        let report = control::sanitize_report();
        // SAFETY: the context made by `new`, destroyed once.
        unsafe { cuCtxDestroy_v2(self.ctx) };
        control::set_sanitize("none").unwrap();
        (report, n)
    }
}

/// The report says nothing but a clean summary.
#[track_caller]
fn clean((report, n): (String, u64)) {
    assert_eq!(n, 0, "{report}");
    assert_eq!(report, "========= ERROR SUMMARY: 0 errors\n");
}

/// The report has exactly one error and holds each of `lines`, each line of the
/// report prefixed as compute-sanitizer's are.
#[track_caller]
fn one_error((report, n): (String, u64), lines: &[&str]) {
    assert_eq!(n, 1, "{report}");
    for l in lines {
        assert!(report.contains(l), "no `{l}` in:\n{report}");
    }
    assert!(
        report.lines().all(|l| l.starts_with("========= ")),
        "{report}"
    );
    assert!(
        report.ends_with("========= ERROR SUMMARY: 1 error\n"),
        "{report}"
    );
}

#[test]
fn a_global_write_past_the_end_is_reported_and_fails_the_launch() {
    let fx = Fixture::new("memcheck");
    let p = fx.alloc(256);
    assert_eq!(fx.run(c"fill", 65, 0, &[p]), code::LAUNCH_FAILED);
    // Sticky, as on a GPU.
    // SAFETY: the context is current.
    assert_eq!(unsafe { cuCtxSynchronize() }, code::LAUNCH_FAILED);
    let end = p + 256;
    one_error(
        fx.finish(),
        &[
            "========= Invalid __global__ write of size 4 bytes\n",
            "=========     at fill+0x4 (PTX line 12)\n",
            "=========     by thread (64,0,0) in block (0,0,0)\n",
            &format!("=========     Address {end:#x} is out of bounds\n"),
            &format!(
                "=========     and is 0 bytes after the nearest allocation at {p:#x} of size 256 bytes\n"
            ),
        ],
    );
}

#[test]
fn a_report_names_the_source_line_of_the_ptx_loc() {
    let fx = Fixture::new("memcheck");
    let p = fx.alloc(256);
    assert_eq!(fx.run(c"loc_fill", 65, 0, &[p]), code::LAUNCH_FAILED);
    one_error(
        fx.finish(),
        &["=========     at loc_fill+0x4 in /src/vec.cu:7 (PTX line 150)\n"],
    );
}

#[test]
fn a_global_write_inside_the_allocation_is_clean() {
    let fx = Fixture::new("memcheck");
    let p = fx.alloc(256);
    ok(fx.run(c"fill", 64, 0, &[p]));
    clean(fx.finish());
}

#[test]
fn a_global_read_past_the_end_is_reported() {
    let fx = Fixture::new("memcheck");
    let (d, s) = (fx.alloc(1024), fx.alloc(128));
    assert_eq!(fx.run(c"copy", 40, 0, &[d, s]), code::LAUNCH_FAILED);
    one_error(
        fx.finish(),
        &[
            "========= Invalid __global__ read of size 4 bytes\n",
            "=========     by thread (32,0,0) in block (0,0,0)\n",
            &format!("=========     Address {:#x} is out of bounds\n", s + 128),
            "of size 128 bytes\n",
        ],
    );
}

#[test]
fn a_global_read_inside_the_allocation_is_clean() {
    let fx = Fixture::new("memcheck");
    let (d, s) = (fx.alloc(1024), fx.alloc(128));
    ok(fx.run(c"copy", 32, 0, &[d, s]));
    clean(fx.finish());
}

#[test]
fn a_read_running_past_the_end_is_reported() {
    let fx = Fixture::new("memcheck");
    let (d, s) = (fx.alloc(1024), fx.alloc(130));
    assert_eq!(fx.run(c"copy", 33, 0, &[d, s]), code::LAUNCH_FAILED);
    one_error(
        fx.finish(),
        &[
            "========= Invalid __global__ read of size 4 bytes\n",
            "=========     by thread (32,0,0) in block (0,0,0)\n",
            &format!("=========     Address {:#x} is out of bounds\n", s + 128),
            &format!(
                "=========     and the access runs 2 bytes past the end of the allocation at {s:#x} of size 130 bytes\n"
            ),
        ],
    );
}

#[test]
fn a_read_ending_at_the_end_is_clean() {
    let fx = Fixture::new("memcheck");
    let (d, s) = (fx.alloc(1024), fx.alloc(130));
    ok(fx.run(c"copy", 32, 0, &[d, s]));
    clean(fx.finish());
}

#[test]
fn another_contexts_memory_is_reported_as_out_of_reach() {
    let fx = Fixture::new("memcheck");
    let mut other = std::ptr::null_mut();
    let mut popped = std::ptr::null_mut();
    // SAFETY: valid out-pointers; the new context is pushed, then popped again.
    let q = unsafe {
        ok(cuCtxCreate_v2(&mut other, 0, 0));
        let q = fx.alloc(64);
        ok(cuCtxPopCurrent_v2(&mut popped));
        q
    };
    assert_eq!(fx.run(c"fill", 1, 0, &[q]), code::LAUNCH_FAILED);
    // SAFETY: the context made above, destroyed once.
    ok(unsafe { cuCtxDestroy_v2(other) });
    one_error(
        fx.finish(),
        &[&format!(
            "=========     Address {q:#x} is 0 bytes inside the allocation at {q:#x} of size 64 bytes, which this kernel cannot access (another context's or device's memory, without peer access)\n"
        )],
    );
}

#[test]
fn a_write_to_freed_memory_is_reported() {
    let fx = Fixture::new("memcheck");
    let p = fx.alloc(256);
    // SAFETY: an allocation of this context, freed once.
    ok(unsafe { cuMemFree_v2(p) });
    assert_eq!(fx.run(c"fill", 1, 0, &[p]), code::LAUNCH_FAILED);
    one_error(
        fx.finish(),
        &[
            "========= Invalid __global__ write of size 4 bytes\n",
            &format!(
                "=========     Address {p:#x} is in freed memory: 0 bytes inside a freed allocation at {p:#x} of size 256 bytes\n"
            ),
        ],
    );
}

#[test]
fn a_misaligned_access_is_reported() {
    let fx = Fixture::new("memcheck");
    let p = fx.alloc(256);
    assert_eq!(fx.run(c"bump", 4, 0, &[p + 2]), code::LAUNCH_FAILED);
    one_error(
        fx.finish(),
        &[
            "========= Invalid __global__ atomic of size 4 bytes\n",
            "=========     by thread (0,0,0) in block (0,0,0)\n",
            &format!("=========     Address {:#x} is misaligned\n", p + 2),
        ],
    );
}

#[test]
fn an_aligned_atomic_is_clean() {
    let fx = Fixture::new("memcheck");
    let p = fx.alloc(256);
    ok(fx.run(c"bump", 4, 0, &[p + 4]));
    clean(fx.finish());
}

#[test]
fn a_shared_write_past_the_static_array_is_reported() {
    let fx = Fixture::new("memcheck");
    let out = fx.alloc(4);
    assert_eq!(fx.run(c"shared_fill", 17, 0, &[out]), code::LAUNCH_FAILED);
    one_error(
        fx.finish(),
        &[
            "========= Invalid __shared__ write of size 4 bytes\n",
            "=========     by thread (16,0,0) in block (0,0,0)\n",
            "=========     Address 0x40 is out of bounds\n",
            "=========     and is 0 bytes after the block's shared memory (static + dynamic) at 0x0 of size 64 bytes\n",
        ],
    );
}

#[test]
fn a_shared_write_inside_the_static_array_is_clean() {
    let fx = Fixture::new("memcheck");
    let out = fx.alloc(4);
    ok(fx.run(c"shared_fill", 16, 0, &[out]));
    clean(fx.finish());
}

#[test]
fn a_write_past_the_dynamic_shared_memory_is_reported() {
    let fx = Fixture::new("memcheck");
    assert_eq!(fx.run(c"dyn_fill", 33, 128, &[]), code::LAUNCH_FAILED);
    one_error(
        fx.finish(),
        &[
            "========= Invalid __shared__ write of size 4 bytes\n",
            "=========     by thread (32,0,0) in block (0,0,0)\n",
            "of size 128 bytes\n",
        ],
    );
}

#[test]
fn a_write_inside_the_dynamic_shared_memory_is_clean() {
    let fx = Fixture::new("memcheck");
    ok(fx.run(c"dyn_fill", 32, 128, &[]));
    clean(fx.finish());
}

#[test]
fn a_store_to_a_kernel_parameter_is_reported() {
    let fx = Fixture::new("memcheck");
    assert_eq!(fx.run(c"param_store", 1, 0, &[5]), code::LAUNCH_FAILED);
    one_error(
        fx.finish(),
        &[
            "========= Invalid __param__ write of size 4 bytes\n",
            "is in the kernel parameters, which are read-only\n",
        ],
    );
}

#[test]
fn a_double_free_is_reported() {
    let fx = Fixture::new("memcheck");
    let p = fx.alloc(256);
    // SAFETY: an allocation of this context; the second free is the finding.
    unsafe {
        ok(cuMemFree_v2(p));
        assert_eq!(cuMemFree_v2(p), code::INVALID_VALUE);
    }
    one_error(
        fx.finish(),
        &[
            "========= Invalid free: double free\n",
            "=========     by cuMemFree\n",
            &format!(
                "=========     Address {p:#x} is an allocation of size 256 bytes that was already freed\n"
            ),
            "on CUDA API call to cuMemFree.\n",
        ],
    );
}

#[test]
fn a_free_inside_an_allocation_is_reported() {
    let fx = Fixture::new("memcheck");
    let p = fx.alloc(256);
    // SAFETY: not an allocation's start: refused, nothing freed.
    assert_eq!(unsafe { cuMemFree_v2(p + 16) }, code::INVALID_VALUE);
    one_error(
        fx.finish(),
        &[
            "========= Invalid free: not the start of an allocation\n",
            &format!(
                "=========     Address {:#x} is 16 bytes inside the allocation at {p:#x} of size 256 bytes\n",
                p + 16
            ),
        ],
    );
}

#[test]
fn a_single_free_is_clean() {
    let fx = Fixture::new("memcheck");
    let p = fx.alloc(256);
    // SAFETY: an allocation of this context, freed once.
    ok(unsafe { cuMemFree_v2(p) });
    clean(fx.finish());
}

#[test]
fn repeated_reports_at_one_site_are_capped_and_counted() {
    let fx = Fixture::new("memcheck");
    let p = fx.alloc(256);
    for _ in 0..5 {
        // SAFETY: an address that is no allocation's start.
        assert_eq!(unsafe { cuMemFree_v2(p + 4) }, code::INVALID_VALUE);
    }
    let (report, n) = fx.finish();
    assert_eq!(n, 5, "{report}");
    assert_eq!(
        report
            .matches("========= Invalid free: not the start")
            .count(),
        3,
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "========= 2 more reports of \"Invalid free: not the start of an allocation\" at cuMemFree({:#x}) not shown\n",
            p + 4
        )),
        "{report}"
    );
    assert!(report.ends_with("========= ERROR SUMMARY: 5 errors\n"));
}

#[test]
fn without_the_sanitizer_nothing_is_reported_and_the_gpu_error_stays() {
    let fx = Fixture::new("none");
    let p = fx.alloc(256);
    assert_eq!(fx.run(c"fill", 65, 0, &[p]), code::ILLEGAL_ADDRESS);
    let (report, n) = fx.finish();
    assert_eq!(n, 0);
    assert!(!report.contains("Invalid"), "{report}");
}

#[test]
fn unknown_tools_are_refused() {
    let _g = serial();
    // The tools in force: none, or those `SOFTCUDA_SANITIZE` named (`scripts/sanitize.sh`)
    // when no test before this one has set them.
    let before = control::sanitize_tools();
    let e = control::set_sanitize("memcheck,leakcheck").unwrap_err();
    assert!(e.contains("unknown sanitizer tool 'leakcheck'"), "{e}");
    assert_eq!(
        control::sanitize_tools(),
        before,
        "a refused list changes nothing"
    );
    control::set_sanitize("all").unwrap();
    assert_eq!(
        control::sanitize_tools(),
        "memcheck,racecheck,synccheck,initcheck,streamcheck,delay"
    );
    let report = control::sanitize_report();
    assert!(!report.contains("not implemented"), "{report}");
    control::set_sanitize("").unwrap();
    assert_eq!(control::sanitize_tools(), "");
}

// ------------------------------------------------------------------ synccheck

#[test]
fn a_barrier_that_exited_threads_never_reach_is_reported() {
    let fx = Fixture::new("synccheck");
    let out = fx.alloc(128);
    ok(fx.run(c"early_exit", 32, 0, &[out]));
    one_error(
        fx.finish(),
        &[
            "========= Barrier error detected. Divergent thread(s) in block\n",
            "=========     at early_exit+0x3 (PTX line 89)\n",
            "=========     by thread (0,0,0) in block (0,0,0)\n",
            "=========     Barrier 0 released with 16 of 32 threads: 16 exited without reaching it\n",
        ],
    );
}

#[test]
fn a_barrier_the_whole_block_reaches_is_clean() {
    let fx = Fixture::new("synccheck");
    let out = fx.alloc(128);
    ok(fx.run(c"early_exit", 16, 0, &[out]));
    clean(fx.finish());
}

#[test]
fn a_barrier_awaited_at_two_instructions_is_reported() {
    let fx = Fixture::new("synccheck");
    ok(fx.run(c"two_bars", 32, 0, &[]));
    let (report, n) = fx.finish();
    assert_eq!(n, 1, "{report}");
    assert!(
        report.contains("Barrier 0 is awaited at two instructions: here and at two_bars+0x"),
        "{report}"
    );
    assert!(report.contains("Divergent thread(s) in block"), "{report}");
    assert!(!report.contains("exited"), "{report}");
}

#[test]
fn a_barrier_awaited_at_one_instruction_is_clean() {
    let fx = Fixture::new("synccheck");
    ok(fx.run(c"two_bars", 16, 0, &[]));
    clean(fx.finish());
}

#[test]
fn a_mask_naming_lanes_the_warp_lacks_is_reported() {
    let fx = Fixture::new("synccheck");
    let out = fx.alloc(128);
    ok(fx.run(c"shfl_all", 16, 0, &[out]));
    one_error(
        fx.finish(),
        &[
            "========= Barrier error detected. Invalid arguments\n",
            "=========     at shfl_all+0x1 (PTX line 116)\n",
            "=========     Member mask 0xffffffff of shfl.sync names lanes 0xffff0000, which this warp does not have\n",
        ],
    );
}

#[test]
fn a_full_mask_on_a_full_warp_is_clean() {
    let fx = Fixture::new("synccheck");
    let out = fx.alloc(128);
    ok(fx.run(c"shfl_all", 32, 0, &[out]));
    clean(fx.finish());
}

#[test]
fn a_mask_naming_exited_lanes_is_reported() {
    let fx = Fixture::new("synccheck");
    let out = fx.alloc(4);
    ok(fx.run(c"vote_exit", 32, 0, &[out, 0xffff_ffff]));
    one_error(
        fx.finish(),
        &[
            "========= Barrier error detected. Invalid arguments\n",
            "=========     by thread (0,0,0) in block (0,0,0)\n",
            "=========     Member mask 0xffffffff of vote.sync names lanes 0xffff0000, which have exited\n",
        ],
    );
}

#[test]
fn a_mask_naming_only_live_lanes_is_clean() {
    let fx = Fixture::new("synccheck");
    let out = fx.alloc(4);
    ok(fx.run(c"vote_exit", 32, 0, &[out, 0xffff]));
    clean(fx.finish());
}

#[test]
fn synccheck_is_off_unless_asked_for() {
    let fx = Fixture::new("memcheck");
    let out = fx.alloc(128);
    ok(fx.run(c"early_exit", 32, 0, &[out]));
    ok(fx.run(c"shfl_all", 16, 0, &[out]));
    clean(fx.finish());
}

// ------------------------------------------------------------------ initcheck

impl Fixture {
    /// `cuMemsetD32` of `words` words at `p`.
    fn memset(&self, p: CUdeviceptr, v: u32, words: usize) {
        // SAFETY: the caller's allocation holds `words` words at `p`.
        ok(unsafe { cuMemsetD32_v2(p, v, words) });
    }
}

#[test]
fn a_kernel_reading_memory_nothing_wrote_is_reported_and_goes_on() {
    let fx = Fixture::new("initcheck");
    let (d, s) = (fx.alloc(128), fx.alloc(128));
    ok(fx.run(c"copy", 32, 0, &[d, s]));
    let mut out = [1u32; 32];
    // SAFETY: 128 bytes into a 128-byte buffer: the kernel ran and copied zeros.
    ok(unsafe { cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), d, 128) });
    assert_eq!(out, [0; 32]);
    let (report, n) = fx.finish();
    assert_eq!(n, 32, "{report}");
    for l in [
        "========= Uninitialized __global__ memory read of size 4 bytes\n",
        "=========     at copy+0x5 (PTX line 24)\n",
        "=========     by thread (0,0,0) in block (0,0,0)\n",
        &format!(
            "=========     Address {s:#x} is 0 bytes inside the allocation at {s:#x} of size 128 bytes, not written since it was allocated\n"
        ),
        "========= 29 more reports of \"Uninitialized __global__ memory read of size 4 bytes\" at copy+0x5 not shown\n",
    ] {
        assert!(report.contains(l), "no `{l}` in:\n{report}");
    }
}

#[test]
fn a_read_of_memset_memory_is_clean() {
    let fx = Fixture::new("initcheck");
    let (d, s) = (fx.alloc(128), fx.alloc(128));
    fx.memset(s, 7, 32);
    ok(fx.run(c"copy", 32, 0, &[d, s]));
    clean(fx.finish());
}

#[test]
fn a_read_of_memory_a_kernel_wrote_is_clean() {
    let fx = Fixture::new("initcheck");
    let (d, s) = (fx.alloc(128), fx.alloc(128));
    ok(fx.run(c"fill", 32, 0, &[s]));
    ok(fx.run(c"copy", 32, 0, &[d, s]));
    clean(fx.finish());
}

#[test]
fn a_read_past_the_written_part_is_reported_from_there() {
    let fx = Fixture::new("initcheck");
    let (d, s) = (fx.alloc(128), fx.alloc(128));
    let host = [5u32; 16];
    // SAFETY: 64 bytes from a 64-byte host array into a 128-byte allocation.
    ok(unsafe { cuMemcpyHtoD_v2(s, host.as_ptr().cast(), 64) });
    ok(fx.run(c"copy", 32, 0, &[d, s]));
    let (report, n) = fx.finish();
    assert_eq!(n, 16, "{report}");
    assert!(
        report.contains("=========     by thread (16,0,0) in block (0,0,0)\n"),
        "{report}"
    );
    assert!(!report.contains("by thread (15,0,0)"), "{report}");
}

// ------------------------------------------------------------------ racecheck

#[test]
fn neighbours_without_a_barrier_race_on_shared_memory() {
    let fx = Fixture::new("racecheck");
    let out = fx.alloc(256);
    ok(fx.run(c"race_shared", 32, 0, &[out, 0]));
    let (report, n) = fx.finish();
    // Threads run one after another here: each loads its neighbour's word before
    // the neighbour stores it (31 write-after-read hazards), and the last loads
    // thread 0's word after thread 0 stored it (one read-after-write).
    assert_eq!(n, 32, "{report}");
    for l in [
        "========= Error: Race reported between Read access at race_shared+0x",
        "=========     write-after-read hazard on __shared__ memory at 0x4 (4 bytes) in block (0,0,0) of kernel race_shared, with no barrier between\n",
        "=========     Read by thread (0,0,0) at race_shared+0x",
        "=========     Write by thread (1,0,0) at race_shared+0x4 (PTX line 163)\n",
        "=========     read-after-write hazard on __shared__ memory at 0x0 (4 bytes)",
        "=========     Write by thread (0,0,0) at race_shared+0x4 (PTX line 163)\n",
        "=========     Read by thread (31,0,0) at race_shared+",
    ] {
        assert!(report.contains(l), "no `{l}` in:\n{report}");
    }
}

#[test]
fn neighbours_with_a_barrier_between_are_clean() {
    let fx = Fixture::new("racecheck");
    let out = fx.alloc(256);
    ok(fx.run(c"race_shared", 64, 0, &[out, 1]));
    clean(fx.finish());
}

#[test]
fn a_warp_sync_orders_lanes_of_one_warp() {
    let fx = Fixture::new("racecheck");
    let out = fx.alloc(256);
    ok(fx.run(c"race_shared", 32, 0, &[out, 2]));
    clean(fx.finish());
}

#[test]
fn a_warp_sync_does_not_order_two_warps() {
    let fx = Fixture::new("racecheck");
    let out = fx.alloc(256);
    ok(fx.run(c"race_shared", 64, 0, &[out, 2]));
    let (report, n) = fx.finish();
    // Thread 31 loads warp 1's first word before it is stored; thread 63 loads
    // thread 0's word: the only hazards, both across the two warps.
    assert_eq!(n, 2, "{report}");
    assert!(
        report.contains("=========     Read by thread (31,0,0) at race_shared+"),
        "{report}"
    );
    assert!(
        report.contains("=========     Write by thread (32,0,0) at race_shared+0x4 "),
        "{report}"
    );
    assert!(
        report.contains("=========     Read by thread (63,0,0) at race_shared+"),
        "{report}"
    );
}

#[test]
fn shared_atomics_are_not_hazards() {
    let fx = Fixture::new("racecheck");
    let out = fx.alloc(4);
    ok(fx.run(c"shared_atomic", 64, 0, &[out]));
    let mut v = 0u32;
    // SAFETY: 4 bytes into a u32.
    ok(unsafe { cuMemcpyDtoH_v2((&raw mut v).cast(), out, 4) });
    assert_eq!(v, 64);
    clean(fx.finish());
}

/// Creates a context, runs `f` in it, destroys it, and returns the report and the
/// error count, with `tools` on.
fn in_a_context(tools: &str, f: impl FnOnce()) -> (String, u64) {
    let _g = serial();
    control::set_sanitize(tools).unwrap();
    control::sanitize_summary();
    control::sanitize_report();
    let mut ctx = std::ptr::null_mut();
    // SAFETY: a valid out-pointer; the context made here is destroyed once.
    unsafe { ok(cuCtxCreate_v2(&mut ctx, 0, 0)) };
    f();
    // SAFETY: as above.
    unsafe { ok(cuCtxDestroy_v2(ctx)) };
    let n = control::sanitize_summary();
    let report = control::sanitize_report();
    control::set_sanitize("none").unwrap();
    (report, n)
}

#[test]
fn leak_reports_allocations_still_live_when_their_context_is_destroyed() {
    let mut kept = (0, 0);
    let (report, n) = in_a_context("memcheck,leak", || {
        let (mut a, mut b, mut freed) = (0, 0, 0);
        // SAFETY: valid out-pointers; the context is current.
        unsafe {
            ok(cuMemAlloc_v2(&mut a, 256));
            ok(softcuda::api::managed::cuMemAllocManaged(&mut b, 64, 1));
            ok(cuMemAlloc_v2(&mut freed, 32));
            ok(cuMemFree_v2(freed));
        }
        kept = (a, b);
    });
    assert_eq!(n, 2, "{report}");
    let (a, b) = kept;
    for line in [
        format!("========= Leaked 256 bytes at {a:#x}\n"),
        format!("========= Leaked 64 bytes at {b:#x}\n"),
        "=========     still allocated when cuCtxDestroy destroyed its context\n".to_owned(),
        "========= LEAK SUMMARY: 320 bytes leaked in 2 allocations\n".to_owned(),
    ] {
        assert!(report.contains(&line), "no `{line}` in:\n{report}");
    }
    assert!(
        report.ends_with("========= ERROR SUMMARY: 2 errors\n"),
        "{report}"
    );
}

#[test]
fn leak_is_silent_when_everything_is_freed_and_for_module_variables() {
    let (report, n) = in_a_context("memcheck,leak", || {
        let (mut p, mut module) = (0, std::ptr::null_mut());
        // SAFETY: valid out-pointers, a NUL-terminated PTX image with a module
        // variable; the context is current.
        unsafe {
            ok(cuMemAlloc_v2(&mut p, 256));
            ok(cuMemFree_v2(p));
            let ptx = c".version 8.0\n.target sm_80\n.address_size 64\n.global .u32 counter;\n.visible .entry k()\n{\nret;\n}\n";
            ok(cuModuleLoadData(&mut module, ptx.as_ptr().cast()));
        } // the module, with its variable, goes with the context
    });
    assert_eq!(n, 0, "{report}");
    assert_eq!(report, "========= ERROR SUMMARY: 0 errors\n");
    // And without `leak`, a live allocation at destruction is no finding.
    let (report, n) = in_a_context("memcheck", || {
        let mut p = 0;
        // SAFETY: a valid out-pointer; the context is current.
        unsafe { ok(cuMemAlloc_v2(&mut p, 16)) };
    });
    assert_eq!(
        (n, report.as_str()),
        (0, "========= ERROR SUMMARY: 0 errors\n")
    );
}
