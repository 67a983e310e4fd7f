//! `cuLaunchKernel` refuses, at once and with `CUDA_ERROR_INVALID_VALUE`, every
//! launch the driver refuses for its shape: a dimension of 0, a grid beyond the
//! device's `MAX_GRID_DIM_X/Y/Z`, a block beyond `MAX_BLOCK_DIM_X/Y/Z` or
//! `MAX_THREADS_PER_BLOCK`, or more shared memory than the function may use. Nothing
//! refused is queued: the stream stays idle and error-free.

mod common;

use common::{function, launch_kernel, ok, serial};
use softcuda::api::{context::*, device::*, module::*, stream::*};
use softcuda::control;
use softcuda::types::*;
use std::ffi::c_uint;

const KERNELS: &str = concat!(
    ".version 8.0\n.target sm_80\n.address_size 64\n",
    ".visible .entry empty()\n{\nret;\n}\n",
    ".visible .entry fixed() .reqntid 32, 1, 1\n{\nret;\n}\n",
    ".visible .entry with_shared()\n{\n.reg .b32 %r<2>;\n.shared .align 4 .b8 buf[4096];\n",
    "mov.u32 %r1, 1;\nst.shared.u32 [buf], %r1;\nret;\n}\n\0"
);

fn attr(a: c_uint, dev: CUdevice) -> u32 {
    let mut v = 0;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuDeviceGetAttribute(&mut v, a, dev) });
    u32::try_from(v).unwrap()
}

/// Launches `f` (no parameters) on `s`.
fn launch(f: CUfunction, grid: [u32; 3], block: [u32; 3], shared: u32, s: CUstream) -> CUresult {
    launch_kernel(f, grid, block, shared, s, &mut [])
}

#[test]
fn launches_beyond_the_devices_limits_are_refused_before_queuing() {
    let _g = serial();
    for dev in [0, 1] {
        // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
        unsafe {
            let mut ctx = std::ptr::null_mut();
            ok(cuCtxCreate_v2(&mut ctx, 0, dev));
            let mut m = std::ptr::null_mut();
            ok(cuModuleLoadData(&mut m, KERNELS.as_ptr().cast()));
            let (empty, fixed, with_shared) = (
                function(m, c"empty"),
                function(m, c"fixed"),
                function(m, c"with_shared"),
            );
            let mut s = std::ptr::null_mut();
            ok(cuStreamCreate(&mut s, 0x1));
            let threads = attr(1, dev);
            let (bx, by, bz) = (attr(2, dev), attr(3, dev), attr(4, dev));
            let (gx, gy, gz) = (attr(5, dev), attr(6, dev), attr(7, dev));
            assert_eq!((threads, bx, by, bz), (1024, 1024, 1024, 64));
            assert_eq!((gx, gy, gz), (i32::MAX as u32, 65_535, 65_535));
            let refused: [([u32; 3], [u32; 3]); 15] = [
                ([gx + 1, 1, 1], [1, 1, 1]), // 2^31 blocks in x
                ([u32::MAX, 1, 1], [1, 1, 1]),
                ([1, gy + 1, 1], [1, 1, 1]),
                ([1, 1, gz + 1], [1, 1, 1]),
                ([1, u32::MAX, u32::MAX], [1, 1, 1]),
                ([1, 1, 1], [bx + 1, 1, 1]),
                ([1, 1, 1], [1, by + 1, 1]),
                ([1, 1, 1], [1, 1, bz + 1]),
                ([1, 1, 1], [32, 33, 1]), // 1056 threads
                ([0, 1, 1], [1, 1, 1]),
                ([1, 0, 1], [1, 1, 1]),
                ([1, 1, 0], [1, 1, 1]),
                ([1, 1, 1], [0, 1, 1]),
                ([1, 1, 1], [1, 0, 1]),
                ([1, 1, 1], [1, 1, 0]),
            ];
            for (grid, block) in refused {
                assert_eq!(
                    launch(empty, grid, block, 0, s),
                    code::INVALID_VALUE,
                    "device {dev}: grid {grid:?} block {block:?}"
                );
            }
            // The kernel's own block shape (.reqntid) is checked at launch too.
            assert_eq!(
                launch(fixed, [1, 1, 1], [64, 1, 1], 0, s),
                code::INVALID_VALUE
            );
            // Shared memory: 48 KiB in all without opting in, at most the device's
            // opt-in maximum with it.
            let mut stat = 0;
            ok(cuFuncGetAttribute(&mut stat, 1, with_shared));
            assert_eq!(stat, 4096);
            let default = 48 * 1024 - 4096;
            assert_eq!(
                launch(with_shared, [1, 1, 1], [1, 1, 1], default + 1, s),
                code::INVALID_VALUE
            );
            let optin = attr(97, dev);
            assert_eq!(
                launch(with_shared, [1, 1, 1], [1, 1, 1], optin, s),
                code::INVALID_VALUE
            );
            ok(cuFuncSetAttribute(with_shared, 8, (optin - 4096) as i32));
            assert_eq!(
                launch(with_shared, [1, 1, 1], [1, 1, 1], optin - 4096 + 1, s),
                code::INVALID_VALUE
            );
            assert_eq!(
                launch(empty, [1, 1, 1], [1, 1, 1], optin + 1, s),
                code::INVALID_VALUE
            );
            // Nothing refused was queued.
            ok(cuStreamQuery(s));
            ok(cuStreamSynchronize(s));
            // The limits themselves are accepted.
            ok(launch(empty, [1, 1, 1], [bx, 1, 1], 0, s));
            ok(launch(empty, [1, 1, 1], [1, by, 1], 0, s));
            ok(launch(empty, [1, 1, 1], [1, 16, bz], 0, s));
            ok(launch(empty, [1, gy, 1], [1, 1, 1], 0, s));
            ok(launch(empty, [1, 1, gz], [1, 1, 1], 0, s));
            ok(launch(fixed, [2, 1, 1], [32, 1, 1], 0, s));
            ok(launch(with_shared, [1, 1, 1], [1, 1, 1], default, s));
            ok(launch(with_shared, [1, 1, 1], [1, 1, 1], optin - 4096, s));
            ok(cuStreamSynchronize(s));
            ok(cuStreamDestroy_v2(s));
            ok(cuCtxDestroy_v2(ctx));
        }
    }
    assert_eq!(control::live_counts(), control::Counts::default());
}
