//! `cuLaunchKernelEx` and its attributes, cooperative launch and thread-block
//! clusters through the C ABI: the kernels of kernels/cluster.cu and
//! kernels/cooperative.cu (PTX by NVRTC 12.9 with the CUDA 12.9 cooperative_groups
//! headers) run and are checked, and every refusal returns the driver's error with
//! nothing queued.

mod common;

use common::fault;
use common::{function, launch_kernel, no_leaks, ok, serial};
use softcuda::api::launch_ex::{self, CUlaunchAttribute, CUlaunchConfig};
use softcuda::api::{context::*, device::*, memory::*, module::*, stream::*};
use softcuda::types::*;
use std::ffi::{CString, c_int, c_void};

const CLUSTER_PTX: &str = include_str!("../../kernels/cluster.ptx");
const COOP_PTX: &str = include_str!("../../kernels/cooperative.ptx");
const EMPTY_PTX: &str =
    ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry empty()\n{\nret;\n}\n";

/// A context on `dev` with module `ptx` loaded and a stream; `f` runs with them,
/// then everything is destroyed.
fn with_module(dev: CUdevice, ptx: &str, f: impl FnOnce(CUmodule, CUstream)) {
    let text = CString::new(ptx).unwrap();
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        let mut ctx = std::ptr::null_mut();
        ok(cuCtxCreate_v2(&mut ctx, 0, dev));
        let mut m = std::ptr::null_mut();
        ok(cuModuleLoadData(&mut m, text.as_ptr().cast()));
        let mut s = std::ptr::null_mut();
        ok(cuStreamCreate(&mut s, 0x1));
        f(m, s);
        ok(cuStreamDestroy_v2(s));
        ok(cuModuleUnload(m));
        ok(cuCtxDestroy_v2(ctx));
    }
    no_leaks();
}

/// A device buffer of `n` u32s (zeroed), as a kernel's Slice parameter.
struct Buf {
    ptr: CUdeviceptr,
    slice: [u64; 2],
}

impl Buf {
    fn new(n: usize) -> Buf {
        let mut ptr = 0;
        // SAFETY: valid out-pointer; then a memset of the allocation.
        unsafe {
            ok(cuMemAlloc_v2(&mut ptr, n * 4));
            ok(cuMemsetD8_v2(ptr, 0, n * 4));
        }
        Buf {
            ptr,
            slice: [ptr, n as u64],
        }
    }

    fn from(v: &[u32]) -> Buf {
        let b = Buf::new(v.len());
        // SAFETY: the allocation holds v.len() u32s.
        ok(unsafe { cuMemcpyHtoD_v2(b.ptr, v.as_ptr().cast(), v.len() * 4) });
        b
    }

    fn read(&self) -> Vec<u32> {
        let mut v = vec![0u32; self.slice[1] as usize];
        // SAFETY: as above.
        ok(unsafe { cuMemcpyDtoH_v2(v.as_mut_ptr().cast(), self.ptr, v.len() * 4) });
        v
    }

    /// The parameter pointer: the address, then the length — a Slice parameter, or
    /// (read as 8 bytes) a `.u64` address parameter.
    fn param(&mut self) -> *mut c_void {
        self.slice.as_mut_ptr().cast()
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        // SAFETY: our allocation.
        ok(unsafe { cuMemFree_v2(self.ptr) });
    }
}

fn attr(id: u32, words: &[u64]) -> CUlaunchAttribute {
    let mut value = [0u64; 8];
    value[..words.len()].copy_from_slice(words);
    CUlaunchAttribute {
        id,
        pad: [0; 4],
        value,
    }
}

fn cluster(x: u32, y: u32, z: u32) -> CUlaunchAttribute {
    attr(4, &[u64::from(x) | u64::from(y) << 32, u64::from(z)])
}

/// `cuLaunchKernelEx` of `f` with `attrs`.
fn launch_ex(
    f: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    s: CUstream,
    attrs: &mut [CUlaunchAttribute],
    params: &mut [*mut c_void],
) -> CUresult {
    let cfg = CUlaunchConfig {
        grid,
        block,
        shared_mem_bytes: 0,
        stream: s,
        attrs: attrs.as_mut_ptr(),
        num_attrs: attrs.len() as u32,
    };
    // SAFETY: a valid config; one pointer per kernel parameter.
    unsafe { launch_ex::cuLaunchKernelEx(&cfg, f, params.as_mut_ptr(), std::ptr::null_mut()) }
}

fn sync(s: CUstream) {
    // SAFETY: a live stream.
    ok(unsafe { cuStreamSynchronize(s) });
}

fn dev_attr(a: u32, dev: CUdevice) -> i32 {
    let mut v = 0;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuDeviceGetAttribute(&mut v, a, dev) });
    v
}

#[test]
fn device_attributes_say_cooperative_everywhere_and_clusters_on_9_0() {
    let _g = serial();
    assert_eq!(dev_attr(95, 0), 1); // COOPERATIVE_LAUNCH
    assert_eq!(dev_attr(95, 1), 1);
    assert_eq!(dev_attr(96, 0), 0); // COOPERATIVE_MULTI_DEVICE_LAUNCH
    assert_eq!(dev_attr(120, 0), 1); // CLUSTER_LAUNCH
    assert_eq!(dev_attr(120, 1), 0);
    // SAFETY: the deprecated multi-device launch, refused whatever its arguments.
    let r = unsafe { launch_ex::cuLaunchCooperativeKernelMultiDevice(std::ptr::null_mut(), 1, 0) };
    assert_eq!(r, code::NOT_SUPPORTED);
}

#[test]
fn a_cluster_launch_gives_each_block_its_cluster_registers_and_barrier() {
    let _g = serial();
    with_module(0, CLUSTER_PTX, |m, s| {
        let f = function(m, c"cluster_info");
        for (grid, c) in [(8u32, 4u32), (12, 2), (6, 1)] {
            let mut out = Buf::new(grid as usize * 8);
            let mut arrived = Buf::new((grid / c) as usize);
            let mut params = [out.param(), arrived.param()];
            ok(launch_ex(
                f,
                [grid, 1, 1],
                [64, 1, 1],
                s,
                &mut [cluster(c, 1, 1)],
                &mut params,
            ));
            sync(s);
            let v = out.read();
            for b in 0..grid {
                let row = &v[(b * 8) as usize..(b * 8 + 8) as usize];
                assert_eq!(
                    row,
                    [b / c, grid / c, b % c, c, b % c, c, 1, c],
                    "block {b} of grid {grid}, cluster {c}"
                );
            }
            assert_eq!(launch_ex::last_launch().unwrap().cluster, Some([c, 1, 1]));
        }
        // Without a cluster: every block is an implicit cluster of one.
        let mut out = Buf::new(4 * 8);
        let mut arrived = Buf::new(4);
        let mut params = [out.param(), arrived.param()];
        ok(launch_ex(f, [4, 1, 1], [32, 1, 1], s, &mut [], &mut params));
        sync(s);
        let v = out.read();
        for b in 0..4u32 {
            assert_eq!(
                &v[(b * 8) as usize..(b * 8 + 8) as usize],
                [b, 4, 0, 1, 0, 1, 0, 1]
            );
        }
    });
}

#[test]
fn cluster_shapes_are_validated() {
    let _g = serial();
    with_module(0, EMPTY_PTX, |m, s| {
        let f = function(m, c"empty");
        let bad = [
            ([6, 1, 1], cluster(4, 1, 1)),   // does not divide the grid
            ([16, 1, 1], cluster(16, 1, 1)), // above the portable 8
            ([8, 1, 1], cluster(0, 1, 1)),   // zero
            ([8, 3, 1], cluster(2, 2, 1)),   // y does not divide
        ];
        for (grid, a) in bad {
            let r = launch_ex(f, grid, [32, 1, 1], s, &mut [a], &mut []);
            assert_eq!(r, code::INVALID_CLUSTER_SIZE, "grid {grid:?}");
        }
        // Non-portable sizes once the function allows them.
        // SAFETY: a live function.
        unsafe {
            assert_eq!(cuFuncSetAttribute(f, 10, 1), code::INVALID_VALUE); // read-only
            assert_eq!(cuFuncSetAttribute(f, 14, 2), code::INVALID_VALUE);
            ok(cuFuncSetAttribute(f, 14, 1));
            let mut v = 0;
            ok(cuFuncGetAttribute(&mut v, 14, f));
            assert_eq!(v, 1);
        }
        ok(launch_ex(
            f,
            [16, 1, 1],
            [32, 1, 1],
            s,
            &mut [cluster(16, 1, 1)],
            &mut [],
        ));
        let r = launch_ex(
            f,
            [32, 1, 1],
            [32, 1, 1],
            s,
            &mut [cluster(32, 1, 1)],
            &mut [],
        );
        assert_eq!(r, code::INVALID_CLUSTER_SIZE);
        // A required cluster shape applies without the attribute, and a different
        // one is refused.
        // SAFETY: a live function.
        unsafe {
            ok(cuFuncSetAttribute(f, 11, 2));
            ok(cuFuncSetAttribute(f, 12, 1));
            ok(cuFuncSetAttribute(f, 13, 1));
        }
        ok(launch_ex(f, [4, 1, 1], [32, 1, 1], s, &mut [], &mut []));
        assert_eq!(launch_ex::last_launch().unwrap().cluster, Some([2, 1, 1]));
        let r = launch_ex(
            f,
            [4, 1, 1],
            [32, 1, 1],
            s,
            &mut [cluster(4, 1, 1)],
            &mut [],
        );
        assert_eq!(r, code::INVALID_CLUSTER_SIZE);
        sync(s);
    });
}

#[test]
fn clusters_and_other_9_0_features_are_refused_on_8_0() {
    let _g = serial();
    with_module(1, EMPTY_PTX, |m, s| {
        let f = function(m, c"empty");
        for a in [cluster(2, 1, 1), attr(6, &[1]), attr(7, &[0])] {
            let r = launch_ex(f, [4, 1, 1], [32, 1, 1], s, &mut [a], &mut []);
            assert_eq!(r, code::NOT_SUPPORTED, "attribute {}", a.id);
        }
        // SAFETY: a live function; valid pointers.
        unsafe {
            assert_eq!(cuFuncSetAttribute(f, 14, 1), code::NOT_SUPPORTED);
            let cfg = CUlaunchConfig {
                grid: [4, 1, 1],
                block: [32, 1, 1],
                shared_mem_bytes: 0,
                stream: s,
                attrs: std::ptr::null_mut(),
                num_attrs: 0,
            };
            let mut n = 0;
            assert_eq!(
                launch_ex::cuOccupancyMaxPotentialClusterSize(&mut n, f, &cfg),
                code::NOT_SUPPORTED
            );
        }
        sync(s);
    });
}

#[test]
fn attributes_are_validated_and_reach_the_driver() {
    let _g = serial();
    with_module(0, EMPTY_PTX, |m, s| {
        let f = function(m, c"empty");
        let mut attrs = [
            attr(8, &[(-3i32) as u32 as u64]),                  // PRIORITY
            attr(10, &[1]),                                     // MEM_SYNC_DOMAIN remote
            attr(9, &[0x0100]), // MEM_SYNC_DOMAIN_MAP default 0, remote 1
            attr(6, &[1]),      // PROGRAMMATIC_STREAM_SERIALIZATION
            attr(5, &[1]),      // CLUSTER_SCHEDULING_POLICY_PREFERENCE spread
            attr(14, &[50]),    // PREFERRED_SHARED_MEMORY_CARVEOUT
            attr(0, &[12345]),  // IGNORE
            attr(1, &[0x1000, 4096, 0x3f00_0000 | 1 << 32, 2]), // ACCESS_POLICY_WINDOW
        ];
        ok(launch_ex(f, [2, 1, 1], [32, 1, 1], s, &mut attrs, &mut []));
        let r = launch_ex::last_launch().unwrap();
        assert_eq!(r.priority, Some(-3));
        assert_eq!(r.mem_sync_domain, Some(1));
        assert_eq!(r.mem_sync_domain_map, Some((0, 1)));
        assert_eq!(r.programmatic_serialization, Some(true));
        assert_eq!(r.cluster_scheduling_policy, Some(1));
        assert_eq!(r.carveout, Some(50));
        assert_eq!(r.access_policy_window, Some((0x1000, 4096)));
        assert!(!r.cooperative && r.cluster.is_none());
        let refused = [
            (attr(10, &[2]), code::INVALID_VALUE),     // no domain 2
            (attr(9, &[0x0400]), code::INVALID_VALUE), // 4 domains: 0..4
            (attr(5, &[3]), code::INVALID_VALUE),      // no policy 3
            (attr(14, &[101]), code::INVALID_VALUE),   // carveout over 100 %
            (attr(1, &[0, 1 << 40, 0, 0]), code::INVALID_VALUE), // window too large
            (attr(3, &[1]), code::INVALID_VALUE),      // a stream attribute
            (attr(13, &[1]), code::INVALID_VALUE),     // graph nodes only
            (attr(99, &[1]), code::INVALID_VALUE),     // unknown
            (attr(11, &[1 | 1 << 32, 1]), code::NOT_SUPPORTED), // preferred cluster (10.0)
            (attr(12, &[0]), code::NOT_SUPPORTED),     // launch completion event
            (attr(7, &[0]), code::INVALID_HANDLE),     // programmatic event: no event
        ];
        for (a, want) in refused {
            let r = launch_ex(f, [2, 1, 1], [32, 1, 1], s, &mut [a], &mut []);
            assert_eq!(r, want, "attribute {}", a.id);
        }
        // A programmatic event is recorded after the kernel.
        // SAFETY: valid pointers, live handles.
        unsafe {
            let mut ev = std::ptr::null_mut();
            ok(cuEventCreate(&mut ev, 0));
            let mut a = [attr(7, &[ev as u64, 0])];
            ok(launch_ex(f, [2, 1, 1], [32, 1, 1], s, &mut a, &mut []));
            assert!(launch_ex::last_launch().unwrap().programmatic_event);
            ok(cuEventSynchronize(ev));
            ok(cuEventQuery(ev));
            ok(cuEventDestroy_v2(ev));
        }
        sync(s);
    });
}

fn reduce_input(n: usize) -> Vec<u32> {
    (0..n as u32).map(|i| i % 1000 + 1).collect()
}

#[test]
fn a_cooperative_launch_runs_grid_sync() {
    let _g = serial();
    with_module(0, COOP_PTX, |m, s| {
        let f = function(m, c"grid_reduce");
        for (grid, n, ex) in [(8u32, 10_000usize, false), (5, 777, true), (1, 3, false)] {
            let input = reduce_input(n);
            let mut inp = Buf::from(&input);
            let mut partial = Buf::new(grid as usize);
            let mut out = Buf::new(2);
            let mut seen = Buf::new(1);
            let mut params = [inp.param(), partial.param(), out.param(), seen.param()];
            if ex {
                ok(launch_ex(
                    f,
                    [grid, 1, 1],
                    [256, 1, 1],
                    s,
                    &mut [attr(2, &[1])],
                    &mut params,
                ));
                assert!(launch_ex::last_launch().unwrap().cooperative);
            } else {
                // SAFETY: one pointer per parameter.
                ok(unsafe {
                    launch_ex::cuLaunchCooperativeKernel(
                        f,
                        grid,
                        1,
                        1,
                        256,
                        1,
                        1,
                        0,
                        s,
                        params.as_mut_ptr(),
                    )
                });
            }
            sync(s);
            let o = out.read();
            let total = u64::from(o[0]) | u64::from(o[1]) << 32;
            assert_eq!(total, input.iter().map(|&x| u64::from(x)).sum::<u64>());
            assert_eq!(seen.read(), [grid], "every block saw every partial sum");
        }
        // is_valid(): only in a cooperative launch.
        let g = function(m, c"grid_valid");
        for coop in [false, true] {
            let mut out = Buf::new(3);
            let mut params = [out.param()];
            let mut a = [attr(2, &[u64::from(coop)])];
            ok(launch_ex(g, [3, 1, 1], [32, 1, 1], s, &mut a, &mut params));
            sync(s);
            assert_eq!(out.read(), [u32::from(coop); 3]);
        }
    });
}

#[test]
fn a_cooperative_grid_that_cannot_be_resident_is_refused() {
    let _g = serial();
    with_module(0, COOP_PTX, |m, s| {
        let f = function(m, c"grid_reduce");
        let mut per_sm = 0;
        // SAFETY: valid pointers.
        ok(unsafe { cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut per_sm, f, 256, 0) });
        let max = per_sm as u32 * dev_attr(16, 0) as u32;
        assert!(max > 0);
        let mut inp = Buf::new(1);
        let mut partial = Buf::new(max as usize + 1);
        let mut out = Buf::new(2);
        let mut seen = Buf::new(1);
        let mut params = [inp.param(), partial.param(), out.param(), seen.param()];
        let r = launch_ex(
            f,
            [max + 1, 1, 1],
            [256, 1, 1],
            s,
            &mut [attr(2, &[1])],
            &mut params,
        );
        assert_eq!(r, code::COOPERATIVE_LAUNCH_TOO_LARGE);
        // SAFETY: one pointer per parameter.
        let r = unsafe {
            launch_ex::cuLaunchCooperativeKernel(
                f,
                max + 1,
                1,
                1,
                256,
                1,
                1,
                0,
                s,
                params.as_mut_ptr(),
            )
        };
        assert_eq!(r, code::COOPERATIVE_LAUNCH_TOO_LARGE);
        sync(s);
        assert_eq!(seen.read(), [0], "nothing ran");
    });
}

#[test]
fn tiles_of_64_threads_use_the_reserved_shared_memory() {
    let _g = serial();
    with_module(1, COOP_PTX, |m, s| {
        let f = function(m, c"tile64");
        let input: Vec<u32> = (0..256).map(|i| i * 3 + 1).collect();
        let mut inp = Buf::from(&input);
        let mut sums = Buf::new(4);
        let mut ranks = Buf::new(256 * 4);
        let mut params = [inp.param(), sums.param(), ranks.param()];
        ok(launch_ex(
            f,
            [2, 1, 1],
            [128, 1, 1],
            s,
            &mut [],
            &mut params,
        ));
        sync(s);
        let want: Vec<u32> = input.chunks(64).map(|c| c.iter().sum()).collect();
        assert_eq!(sums.read(), want);
        let r = ranks.read();
        for i in 0..256usize {
            let t = i / 64;
            assert_eq!(
                &r[i * 4..i * 4 + 4],
                [(i % 64) as u32, (t % 2) as u32, 64, input[t * 64]],
                "thread {i}"
            );
        }
    });
}

#[test]
fn cluster_occupancy() {
    let _g = serial();
    with_module(0, EMPTY_PTX, |m, _s| {
        let f = function(m, c"empty");
        let mut per_sm = 0;
        // SAFETY: valid pointers and handles throughout.
        unsafe {
            ok(cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut per_sm,
                f,
                128,
                0,
            ));
            let mut a = [cluster(4, 1, 1)];
            let mut cfg = CUlaunchConfig {
                grid: [8, 1, 1],
                block: [128, 1, 1],
                shared_mem_bytes: 0,
                stream: std::ptr::null_mut(),
                attrs: a.as_mut_ptr(),
                num_attrs: 1,
            };
            let mut n: c_int = 0;
            ok(launch_ex::cuOccupancyMaxActiveClusters(&mut n, f, &cfg));
            let gpcs = dev_attr(16, 0) / launch_ex::SMS_PER_GPC as i32;
            assert_eq!(n, per_sm * launch_ex::SMS_PER_GPC as i32 / 4 * gpcs);
            ok(launch_ex::cuOccupancyMaxPotentialClusterSize(
                &mut n, f, &cfg,
            ));
            assert_eq!(n, 8);
            ok(cuFuncSetAttribute(f, 14, 1));
            ok(launch_ex::cuOccupancyMaxPotentialClusterSize(
                &mut n, f, &cfg,
            ));
            assert_eq!(n, 16);
            cfg.block = [2048, 1, 1];
            assert_eq!(
                launch_ex::cuOccupancyMaxActiveClusters(&mut n, f, &cfg),
                code::INVALID_VALUE
            );
            cfg.block = [128, 1, 1];
            cfg.num_attrs = 0;
            assert_eq!(
                launch_ex::cuOccupancyMaxActiveClusters(&mut n, f, &cfg),
                code::INVALID_CLUSTER_SIZE,
                "no cluster shape"
            );
        }
    });
}

#[test]
fn a_kernel_compiled_with_cluster_dims_runs_in_clusters_even_through_cu_launch_kernel() {
    let _g = serial();
    with_module(0, CLUSTER_PTX, |m, s| {
        let f = function(m, c"fixed_pairs");
        // SAFETY: live function; valid pointers.
        unsafe {
            let mut v = 0;
            ok(cuFuncGetAttribute(&mut v, 10, f)); // CLUSTER_SIZE_MUST_BE_SET
            assert_eq!(v, 1);
            ok(cuFuncGetAttribute(&mut v, 11, f)); // REQUIRED_CLUSTER_WIDTH
            assert_eq!(v, 2);
            assert_eq!(cuFuncSetAttribute(f, 11, 4), code::NOT_PERMITTED);
        }
        let mut out = Buf::new(6);
        let mut params = [out.param()];
        // SAFETY: one pointer per parameter.
        ok(unsafe {
            cuLaunchKernel(
                f,
                6,
                1,
                1,
                32,
                1,
                1,
                0,
                s,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        });
        sync(s);
        assert_eq!(out.read(), [2, 102, 2, 102, 2, 102]);
        // Through cuLaunchKernelEx: the same shape is fine, another is refused, and
        // a grid it does not divide is refused.
        ok(launch_ex(
            f,
            [4, 1, 1],
            [32, 1, 1],
            s,
            &mut [cluster(2, 1, 1)],
            &mut params,
        ));
        let r = launch_ex(
            f,
            [4, 1, 1],
            [32, 1, 1],
            s,
            &mut [cluster(4, 1, 1)],
            &mut params,
        );
        assert_eq!(r, code::INVALID_CLUSTER_SIZE);
        // SAFETY: as above.
        let r = unsafe {
            cuLaunchKernel(
                f,
                5,
                1,
                1,
                32,
                1,
                1,
                0,
                s,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        // As for the same shape given as a launch attribute.
        assert_eq!(r, code::INVALID_CLUSTER_SIZE);
        sync(s);
    });
}

#[test]
fn blocks_of_a_cluster_read_and_update_each_others_shared_memory() {
    let _g = serial();
    with_module(0, CLUSTER_PTX, |m, s| {
        let f = function(m, c"neighbour_shared");
        for (grid, c) in [(8u32, 4u32), (6, 2), (3, 1)] {
            let clusters = (grid / c) as usize;
            let mut out = Buf::new(64 * grid as usize + clusters);
            let mut params = [out.param()];
            ok(launch_ex(
                f,
                [grid, 1, 1],
                [64, 1, 1],
                s,
                &mut [cluster(c, 1, 1)],
                &mut params,
            ));
            sync(s);
            let v = out.read();
            for b in 0..grid {
                let rank = b % c;
                for t in 0..64 {
                    let want = 1000 * ((rank + 1) % c) + t;
                    assert_eq!(
                        v[(64 * b + t) as usize],
                        want,
                        "block {b}, thread {t}, cluster {c}"
                    );
                }
            }
            assert_eq!(
                &v[64 * grid as usize..],
                vec![c; clusters],
                "rank 0's counter"
            );
        }
        // Without a cluster (an implicit cluster of one), a block maps its own memory.
        let mut out = Buf::new(64 * 2 + 2);
        let mut params = [out.param()];
        ok(launch_ex(f, [2, 1, 1], [64, 1, 1], s, &mut [], &mut params));
        sync(s);
        let v = out.read();
        assert_eq!(v[5], 5);
        assert_eq!(&v[128..], [1, 1]);
    });
}

/// Hand-written: `mapa.shared::cluster.u32`, `getctarank` and `ld.shared::cluster`
/// on 32-bit cluster addresses, and the barrier's qualified forms.
const DSMEM_PTX: &str = r#".version 8.0
.target sm_90
.address_size 64
.visible .entry dsmem(.param .u64 out)
{
.reg .b32 %r<10>;
.reg .b64 %rd<4>;
.shared .align 4 .b32 buf;
mov.u32 %r1, %cluster_ctarank;
mov.u32 %r2, %cluster_nctarank;
mad.lo.u32 %r3, %r1, 10, 1;
st.shared.u32 [buf], %r3;
barrier.cluster.arrive;
barrier.cluster.wait;
add.u32 %r4, %r1, 1;
rem.u32 %r4, %r4, %r2;
mov.u32 %r5, buf;
mapa.shared::cluster.u32 %r6, %r5, %r4;
getctarank.shared::cluster.u32 %r7, %r6;
ld.shared::cluster.u32 %r8, [%r6];
barrier.cluster.arrive.release.aligned;
barrier.cluster.wait.acquire.aligned;
ld.param.u64 %rd1, [out];
mov.u32 %r9, %ctaid.x;
mul.wide.u32 %rd2, %r9, 8;
add.u64 %rd3, %rd1, %rd2;
st.global.v2.u32 [%rd3], {%r8, %r7};
ret;
}
"#;

#[test]
fn hand_written_cluster_addresses() {
    let _g = serial();
    with_module(0, DSMEM_PTX, |m, s| {
        let f = function(m, c"dsmem");
        let mut out = Buf::new(2 * 6);
        let mut params = [out.param()];
        ok(launch_ex(
            f,
            [6, 1, 1],
            [1, 1, 1],
            s,
            &mut [cluster(3, 1, 1)],
            &mut params,
        ));
        sync(s);
        let v = out.read();
        for b in 0..6u32 {
            let next = (b % 3 + 1) % 3;
            assert_eq!(
                &v[(2 * b) as usize..(2 * b + 2) as usize],
                [10 * next + 1, next],
                "block {b}"
            );
        }
    });
}

/// A context on device 0 in which `ptx` is loaded with an error log: the result
/// and the log (the module, if loaded, is unloaded).
fn load_with_log(ptx: &str) -> (CUresult, String) {
    let text = CString::new(ptx).unwrap();
    let mut err = vec![0u8; 4096];
    // SAFETY: softcuda's exports with valid pointers; the log buffer holds 4096
    // bytes, the size given.
    unsafe {
        let mut ctx = std::ptr::null_mut();
        ok(cuCtxCreate_v2(&mut ctx, 0, 0));
        let mut opts = [5u32, 6]; // ERROR_LOG_BUFFER, ERROR_LOG_BUFFER_SIZE_BYTES
        let mut vals: [*mut c_void; 2] = [err.as_mut_ptr().cast(), 4096usize as *mut c_void];
        let mut m = std::ptr::null_mut();
        let r = cuModuleLoadDataEx(
            &mut m,
            text.as_ptr().cast(),
            2,
            opts.as_mut_ptr(),
            vals.as_mut_ptr(),
        );
        if r == code::SUCCESS {
            ok(cuModuleUnload(m));
        }
        ok(cuCtxDestroy_v2(ctx));
        let log = std::ffi::CStr::from_ptr(err.as_ptr().cast())
            .to_string_lossy()
            .into_owned();
        (r, log)
    }
}

#[test]
fn cluster_features_below_sm_90_are_refused_at_load_as_ptxas_does() {
    let _g = serial();
    let ptx = |target: &str, directive: &str, inst: &str| {
        format!(
            ".version 8.0\n.target {target}\n.address_size 64\n.visible .entry k()\n{directive}\n{{\n.reg .b32 %r<4>;\n{inst}\nret;\n}}\n"
        )
    };
    let cases = [
        (".reqnctapercluster 2, 1, 1", "", ".reqnctapercluster", 5),
        (".explicitcluster", "", ".explicitcluster", 5),
        (".maxclusterrank 4", "", ".maxclusterrank", 5),
        (
            "",
            "mov.u32 %r1, %cluster_nctarank;",
            "%cluster_nctarank",
            8,
        ),
        ("", "mov.u32 %r1, %cluster_ctaid.x;", "%cluster_ctaid", 8),
        ("", "mov.u32 %r1, %clusterid.y;", "%clusterid", 8),
        ("", "mapa.shared::cluster.u32 %r1, %r2, %r3;", "mapa", 8),
        ("", "barrier.cluster.arrive;", "barrier.cluster", 8),
    ];
    for (directive, inst, feature, line) in cases {
        let (r, log) = load_with_log(&ptx("sm_80", directive, inst));
        assert_eq!(r, code::INVALID_PTX, "{feature}");
        let want =
            format!("line {line}; error   : Feature '{feature}' requires .target sm_90 or higher");
        assert!(log.contains(&want), "{feature}: {log}");
        // The same for sm_90 loads.
        let (r, log) = load_with_log(&ptx("sm_90", directive, inst));
        assert_eq!(r, code::SUCCESS, "{feature}: {log}");
    }
    no_leaks();
}

/// Compiled-in cluster shapes that no launch may use: 1024 × 1024 blocks (which
/// would make every block of the grid co-resident), and 32.
const BAD_CLUSTERS_PTX: &str = r#".version 8.0
.target sm_90
.address_size 64
.visible .entry huge(.param .u64 out)
.reqnctapercluster 1024, 1024, 1
{
ret;
}
.visible .entry big(.param .u64 out)
.reqnctapercluster 32, 1, 1
{
ret;
}
"#;

/// `cuLaunchKernel` of `f` (`grid` × `block`, no shared memory) with `params`.
fn launch_plain(
    f: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    s: CUstream,
    params: &mut [*mut c_void],
) -> CUresult {
    launch_kernel(f, grid, block, 0, s, params)
}

/// `cuLaunchCooperativeKernel` of `f` with `params`.
fn launch_coop(
    f: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    s: CUstream,
    params: &mut [*mut c_void],
) -> CUresult {
    // SAFETY: one pointer per kernel parameter.
    unsafe {
        launch_ex::cuLaunchCooperativeKernel(
            f,
            grid[0],
            grid[1],
            grid[2],
            block[0],
            block[1],
            block[2],
            0,
            s,
            params.as_mut_ptr(),
        )
    }
}

/// A graph with one kernel node of `f`: the result of adding it, and if added,
/// the result of instantiating and launching the graph on `s` and waiting.
fn graph_node(
    f: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    s: CUstream,
    params: &mut [*mut c_void],
) -> (CUresult, CUresult) {
    use softcuda::api::graph::*;
    // SAFETY: softcuda's exports with valid pointers; one pointer per parameter.
    unsafe {
        let mut g = std::ptr::null_mut();
        ok(cuGraphCreate(&mut g, 0));
        let kp = CUDA_KERNEL_NODE_PARAMS {
            func: f,
            gridDimX: grid[0],
            gridDimY: grid[1],
            gridDimZ: grid[2],
            blockDimX: block[0],
            blockDimY: block[1],
            blockDimZ: block[2],
            sharedMemBytes: 0,
            kernelParams: params.as_mut_ptr(),
            extra: std::ptr::null_mut(),
            kern: std::ptr::null_mut(),
            ctx: std::ptr::null_mut(),
        };
        let mut node = std::ptr::null_mut();
        let added = cuGraphAddKernelNode_v2(&mut node, g, std::ptr::null(), 0, &kp);
        let mut ran = code::SUCCESS;
        if added == code::SUCCESS {
            let mut exec = std::ptr::null_mut();
            ok(cuGraphInstantiateWithFlags(&mut exec, g, 0));
            ran = cuGraphLaunch(exec, s);
            if ran == code::SUCCESS {
                ran = cuStreamSynchronize(s);
            }
            ok(cuGraphExecDestroy(exec));
        }
        ok(cuGraphDestroy(g));
        (added, ran)
    }
}

#[test]
fn compiled_in_cluster_shapes_are_checked_on_every_launch_path() {
    let _g = serial();
    with_module(0, BAD_CLUSTERS_PTX, |m, s| {
        let mut out = Buf::new(4);
        let mut params = [out.param()];
        let huge = function(m, c"huge");
        // Before: a million co-resident blocks, an aborted process.
        let r = launch_plain(huge, [1024, 1024, 1], [32, 1, 1], s, &mut params);
        assert_eq!(r, code::INVALID_CLUSTER_SIZE);
        let big = function(m, c"big");
        let (g, b) = ([32, 1, 1], [32, 1, 1]);
        assert_eq!(
            launch_plain(big, g, b, s, &mut params),
            code::INVALID_CLUSTER_SIZE
        );
        assert_eq!(
            launch_coop(big, g, b, s, &mut params),
            code::INVALID_CLUSTER_SIZE
        );
        assert_eq!(
            launch_ex(big, g, b, s, &mut [], &mut params),
            code::INVALID_CLUSTER_SIZE
        );
        assert_eq!(
            launch_ex(big, g, b, s, &mut [cluster(32, 1, 1)], &mut params),
            code::INVALID_CLUSTER_SIZE
        );
        assert_eq!(
            graph_node(big, g, b, s, &mut params).0,
            code::INVALID_CLUSTER_SIZE
        );
        // Non-portable sizes allowed: 16 at most still.
        // SAFETY: a live function.
        ok(unsafe { cuFuncSetAttribute(big, 14, 1) });
        assert_eq!(
            launch_plain(big, g, b, s, &mut params),
            code::INVALID_CLUSTER_SIZE
        );
        sync(s);
    });
}

const NCTA_PTX: &str = r#".version 8.0
.target sm_90
.address_size 64
.visible .entry ncta(.param .u64 out)
{
.reg .b32 %r<4>;
.reg .b64 %rd<4>;
ld.param.u64 %rd1, [out];
mov.u32 %r1, %ctaid.x;
mov.u32 %r2, %cluster_nctarank;
mul.wide.u32 %rd2, %r1, 4;
add.u64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r2;
ret;
}
"#;

#[test]
fn a_cluster_shape_set_on_the_function_applies_to_every_launch_path() {
    let _g = serial();
    with_module(0, NCTA_PTX, |m, s| {
        let f = function(m, c"ncta");
        let mut out = Buf::new(4);
        let mut params = [out.param()];
        let (g4, g3, b) = ([4, 1, 1], [3, 1, 1], [32, 1, 1]);
        ok(launch_plain(f, g4, b, s, &mut params));
        sync(s);
        assert_eq!(out.read(), [1; 4], "no cluster yet");
        // SAFETY: a live function.
        unsafe {
            ok(cuFuncSetAttribute(f, 11, 2)); // REQUIRED_CLUSTER_WIDTH
            ok(cuFuncSetAttribute(f, 12, 1));
            ok(cuFuncSetAttribute(f, 13, 1));
        }
        type Launch = fn(CUfunction, [u32; 3], [u32; 3], CUstream, &mut [*mut c_void]) -> CUresult;
        let ex: Launch = |f, g, b, s, p| launch_ex(f, g, b, s, &mut [], p);
        let graph: Launch = |f, g, b, s, p| {
            let (added, ran) = graph_node(f, g, b, s, p);
            if added == code::SUCCESS { ran } else { added }
        };
        for (name, launch) in [
            ("cuLaunchKernel", launch_plain as Launch),
            ("cuLaunchCooperativeKernel", launch_coop),
            ("cuLaunchKernelEx", ex),
            ("graph kernel node", graph),
        ] {
            ok(unsafe { cuMemsetD8_v2(out.ptr, 0, 16) });
            ok(launch(f, g4, b, s, &mut params));
            sync(s);
            assert_eq!(out.read(), [2; 4], "{name}: clusters of 2");
            assert_eq!(
                launch(f, g3, b, s, &mut params),
                code::INVALID_CLUSTER_SIZE,
                "{name}: 2 does not divide 3"
            );
        }
        // A launch attribute must agree with it.
        assert_eq!(
            launch_ex(f, g4, b, s, &mut [cluster(4, 1, 1)], &mut params),
            code::INVALID_CLUSTER_SIZE
        );
        sync(s);
    });
}

fn cluster_occupancy_of(f: CUfunction, block: [u32; 3]) -> (CUresult, CUresult) {
    let mut a = [cluster(2, 1, 1)];
    let cfg = CUlaunchConfig {
        grid: [2, 1, 1],
        block,
        shared_mem_bytes: 0,
        stream: std::ptr::null_mut(),
        attrs: a.as_mut_ptr(),
        num_attrs: 1,
    };
    let mut n = -1;
    // SAFETY: a valid config and out-pointer.
    unsafe {
        (
            launch_ex::cuOccupancyMaxActiveClusters(&mut n, f, &cfg),
            launch_ex::cuOccupancyMaxPotentialClusterSize(&mut n, f, &cfg),
        )
    }
}

#[test]
fn cluster_occupancy_of_an_overflowing_block_is_invalid_value() {
    let _g = serial();
    with_module(0, CLUSTER_PTX, |m, _| {
        let f = function(m, c"cluster_info");
        for block in [
            [65536, 65536, 1],
            [2_147_483_712, 2, 1], // wraps to 128 in 32 bits
            [u32::MAX, u32::MAX, u32::MAX],
            [2048, 1, 1],
            [0, 1, 1],
        ] {
            assert_eq!(
                cluster_occupancy_of(f, block),
                (code::INVALID_VALUE, code::INVALID_VALUE),
                "{block:?}"
            );
        }
        let (a, p) = cluster_occupancy_of(f, [128, 1, 1]);
        assert_eq!((a, p), (code::SUCCESS, code::SUCCESS));
    });
}

/// 64 KiB of local memory per thread.
const LOCAL_PTX: &str = r#".version 8.0
.target sm_90
.address_size 64
.visible .entry loc(.param .u64 out)
{
.local .align 8 .b8 depot[65536];
.reg .b64 %rd<2>;
.reg .b32 %r<2>;
mov.u64 %rd1, depot;
mov.u32 %r1, %tid.x;
st.local.u32 [%rd1], %r1;
ret;
}
"#;

#[test]
fn co_resident_blocks_beyond_the_memory_limit_are_refused_before_allocating() {
    let _g = serial();
    with_module(0, LOCAL_PTX, |m, s| {
        let f = function(m, c"loc");
        let mut out = Buf::new(1);
        let mut params = [out.param()];
        // The review's case: a full co-resident grid of 1024 threads with 64 KiB
        // each is 16 GiB of stacks; refused at the launch, nothing allocated.
        let mut per_sm = 0;
        // SAFETY: a valid out-pointer and function.
        ok(unsafe { cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut per_sm, f, 1024, 0) });
        let grid = per_sm as u32 * dev_attr(16, 0) as u32; // MULTIPROCESSOR_COUNT
        assert!(u64::from(grid) * 1024 * 65536 > softcuda::ptx::resident_limit());
        assert_eq!(
            launch_coop(f, [grid, 1, 1], [1024, 1, 1], s, &mut params),
            code::LAUNCH_OUT_OF_RESOURCES
        );
        // A limit lowered to 1 MiB: 2 blocks of 32 threads (4 MiB) are refused as a
        // cooperative launch and as a cluster, and run block by block.
        softcuda::control::set_resident_memory_limit(Some(1 << 20));
        let (g, b) = ([2, 1, 1], [32, 1, 1]);
        let coop = launch_coop(f, g, b, s, &mut params);
        let clus = launch_ex(f, g, b, s, &mut [cluster(2, 1, 1)], &mut params);
        let plain = launch_plain(f, g, b, s, &mut params);
        softcuda::control::set_resident_memory_limit(None);
        assert_eq!(coop, code::LAUNCH_OUT_OF_RESOURCES);
        assert_eq!(clus, code::LAUNCH_OUT_OF_RESOURCES);
        assert_eq!(plain, code::SUCCESS);
        // The default limit: they run.
        ok(launch_coop(f, g, b, s, &mut params));
        ok(launch_ex(f, g, b, s, &mut [cluster(2, 1, 1)], &mut params));
        sync(s);
    });
}

/// Block 0 of a cluster of 2 reads its `buf` through `mapa` with rank `rank`.
const MAPA_PTX: &str = r#".version 8.0
.target sm_90
.address_size 64
.visible .entry probe(.param .u64 out, .param .u32 rank)
{
.reg .b32 %r<8>;
.reg .b64 %rd<2>;
.reg .pred %p<2>;
.shared .align 4 .b8 buf[64];
ld.param.u64 %rd1, [out];
ld.param.u32 %r1, [rank];
mov.u32 %r2, %cluster_ctarank;
setp.ne.u32 %p1, %r2, 0;
@%p1 bra DONE;
mov.u32 %r3, buf;
mapa.shared::cluster.u32 %r4, %r3, %r1;
ld.shared::cluster.u32 %r5, [%r4];
st.global.u32 [%rd1], %r5;
DONE:
ret;
}
"#;

#[test]
fn mapa_keeps_the_whole_rank_and_a_rank_outside_the_cluster_faults() {
    let _g = serial();
    for (rank, want) in [
        (1u32, code::SUCCESS),
        (2, fault()),
        (128, fault()), // was rank 0 (rank & 0x7f)
        (129, fault()), // was rank 1
        (u32::MAX, fault()),
    ] {
        let text = CString::new(MAPA_PTX).unwrap();
        // SAFETY: softcuda's exports with valid pointers; one pointer per parameter.
        unsafe {
            let mut ctx = std::ptr::null_mut();
            ok(cuCtxCreate_v2(&mut ctx, 0, 0));
            let mut m = std::ptr::null_mut();
            ok(cuModuleLoadData(&mut m, text.as_ptr().cast()));
            let f = function(m, c"probe");
            let mut ptr = 0;
            ok(cuMemAlloc_v2(&mut ptr, 4));
            let mut r = rank;
            let mut params = [(&raw mut ptr).cast::<c_void>(), (&raw mut r).cast()];
            let mut s = std::ptr::null_mut();
            ok(cuStreamCreate(&mut s, 0x1));
            ok(launch_ex(
                f,
                [2, 1, 1],
                [1, 1, 1],
                s,
                &mut [cluster(2, 1, 1)],
                &mut params,
            ));
            assert_eq!(cuStreamSynchronize(s), want, "rank {rank}");
            if want == code::SUCCESS {
                ok(cuStreamDestroy_v2(s));
                ok(cuMemFree_v2(ptr));
                ok(cuModuleUnload(m));
            }
            ok(cuCtxDestroy_v2(ctx));
        }
    }
    no_leaks();
}
