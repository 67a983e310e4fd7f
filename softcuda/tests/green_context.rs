//! Green contexts and device resources through the C ABI: the device's SM resource,
//! splits (granularity, group counts, the remainder, refusals of split outputs and
//! of forged structs), descriptors, a green context used as an ordinary context
//! (push, allocate, load, launch, read back), its smaller cooperative-launch and
//! occupancy limits, its streams and events, and its destruction (streams
//! detached). Every test ends with no live object, green contexts included.

mod common;

use common::{function, launch_kernel, no_leaks, ok, serial};
use softcuda::api::green::*;
use softcuda::api::launch_ex::{self, CUlaunchAttribute, CUlaunchConfig};
use softcuda::api::{context::*, device::*, memory::*, module::*, proc::*, stream::*};
use softcuda::control;
use softcuda::types::*;
use std::ffi::{CString, c_int, c_uint, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicU32, Ordering};

const PTX: &str = "
.version 8.0
.target sm_80
.address_size 64
.visible .entry fill(.param .u64 out, .param .u32 v)
{
    .reg .u64 %rd<4>;
    .reg .u32 %r<4>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [v];
    mov.u32 %r2, %tid.x;
    cvta.to.global.u64 %rd1, %rd1;
    mul.wide.u32 %rd2, %r2, 4;
    add.u64 %rd3, %rd1, %rd2;
    add.u32 %r3, %r1, %r2;
    st.global.u32 [%rd3], %r3;
    ret;
}
.visible .entry empty()
{
    ret;
}
";

/// The SM resource of device `dev`.
fn device_resource(dev: CUdevice) -> CUdevResource {
    let mut r = CUdevResource::zeroed();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuDeviceGetDevResource(dev, &mut r, CU_DEV_RESOURCE_TYPE_SM) });
    r
}

/// Splits `input` into at most `n` groups of `min` SMs: the groups, the remainder.
fn split(
    input: &CUdevResource,
    n: u32,
    flags: c_uint,
    min: c_uint,
) -> Result<(Vec<CUdevResource>, CUdevResource), CUresult> {
    let mut groups = vec![CUdevResource::zeroed(); n as usize];
    let mut rest = CUdevResource::zeroed();
    let mut nb = n;
    // SAFETY: `groups` holds `nb` resources; valid pointers.
    let r = unsafe {
        cuDevSmResourceSplitByCount(groups.as_mut_ptr(), &mut nb, input, &mut rest, flags, min)
    };
    if r != code::SUCCESS {
        return Err(r);
    }
    groups.truncate(nb as usize);
    Ok((groups, rest))
}

/// `cuDevResourceGenerateDesc` of `res`.
fn desc(res: &mut [CUdevResource]) -> Result<CUdevResourceDesc, CUresult> {
    let mut d = null_mut();
    // SAFETY: `res` holds `res.len()` resources.
    match unsafe { cuDevResourceGenerateDesc(&mut d, res.as_mut_ptr(), res.len() as c_uint) } {
        code::SUCCESS => Ok(d),
        e => Err(e),
    }
}

/// A green context of `sms` SMs (a split group of that size) on device 0.
fn green_of(sms: u32) -> CUgreenCtx {
    let (mut groups, _) = split(&device_resource(0), 1, 0, sms).unwrap();
    assert_eq!(groups[0].sm_count(), sms);
    let d = desc(&mut groups[..1]).unwrap();
    let mut g = null_mut();
    // SAFETY: valid pointers and descriptor.
    ok(unsafe { cuGreenCtxCreate(&mut g, d, 0, CU_GREEN_CTX_DEFAULT_STREAM) });
    g
}

/// The `CUcontext` of green context `g`.
fn ctx_of(g: CUgreenCtx) -> CUcontext {
    let mut c = null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuCtxFromGreenCtx(&mut c, g) });
    c
}

fn load(ptx: &str) -> CUmodule {
    let text = CString::new(ptx).unwrap();
    let mut m = null_mut();
    // SAFETY: a NUL-terminated PTX image; valid out-pointer.
    ok(unsafe { cuModuleLoadData(&mut m, text.as_ptr().cast()) });
    m
}

fn dev_attr(attr: c_uint, dev: CUdevice) -> c_int {
    let mut v = 0;
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuDeviceGetAttribute(&mut v, attr, dev) });
    v
}

#[test]
fn the_device_resource_is_every_sm_and_only_sm_resources_exist() {
    let _g = serial();
    assert_eq!(device_resource(0).sm_count(), dev_attr(16, 0) as u32);
    assert_eq!(device_resource(0).sm_count(), 132);
    assert_eq!(device_resource(1).sm_count(), 108);
    let mut r = CUdevResource::zeroed();
    // SAFETY (all below): softcuda's exports, called as C would call them.
    unsafe {
        assert_eq!(
            cuDeviceGetDevResource(0, &mut r, 2),
            code::INVALID_RESOURCE_TYPE
        );
        assert_eq!(code::INVALID_RESOURCE_TYPE, 914);
        assert_eq!(
            cuDeviceGetDevResource(0, null_mut(), CU_DEV_RESOURCE_TYPE_SM),
            code::INVALID_VALUE
        );
        assert_eq!(
            cuDeviceGetDevResource(7, &mut r, CU_DEV_RESOURCE_TYPE_SM),
            code::INVALID_DEVICE
        );
        // An ordinary context has the whole device.
        let mut ctx = null_mut();
        ok(cuCtxCreate_v2(&mut ctx, 0, 1));
        ok(cuCtxGetDevResource(ctx, &mut r, CU_DEV_RESOURCE_TYPE_SM));
        assert_eq!(r.sm_count(), 108);
        ok(cuCtxDestroy_v2(ctx));
        assert_eq!(
            cuCtxGetDevResource(ctx, &mut r, CU_DEV_RESOURCE_TYPE_SM),
            code::INVALID_CONTEXT
        );
        // Found through cuGetProcAddress at their versions; cuStreamGetCtx at 12.5
        // is the form with the green context.
        for (name, ver) in [
            (c"cuDevSmResourceSplitByCount", 12040),
            (c"cuGreenCtxStreamCreate", 12050),
            (c"cuGreenCtxGetId", 12090),
        ] {
            let mut f = null_mut();
            ok(cuGetProcAddress_v2(
                name.as_ptr(),
                &mut f,
                ver,
                0,
                null_mut(),
            ));
            assert!(!f.is_null(), "{name:?}");
        }
        let (mut old, mut new) = (null_mut(), null_mut());
        ok(cuGetProcAddress_v2(
            c"cuStreamGetCtx".as_ptr(),
            &mut old,
            12040,
            0,
            null_mut(),
        ));
        ok(cuGetProcAddress_v2(
            c"cuStreamGetCtx".as_ptr(),
            &mut new,
            12050,
            0,
            null_mut(),
        ));
        assert_eq!(new, cuStreamGetCtx_v2 as *mut c_void);
        assert_ne!(old, new);
    }
    no_leaks();
}

#[test]
fn splits_round_up_to_the_granularity_and_overwrite_the_group_count() {
    let _g = serial();
    let dev0 = device_resource(0);
    // 9.0: groups of 8. At most nbGroups groups; the rest is the remainder.
    let (groups, rest) = split(&dev0, 4, 0, 5).unwrap();
    assert_eq!(groups.len(), 4);
    assert!(groups.iter().all(|g| g.sm_count() == 8));
    assert_eq!(rest.sm_count(), 132 - 32);
    // More room than groups: *nbGroups becomes 16 (132 / 8), the remainder 4.
    let (groups, rest) = split(&dev0, 100, 0, 8).unwrap();
    assert_eq!(groups.len(), 16);
    assert_eq!(rest.sm_count(), 4);
    let (groups, rest) = split(&dev0, 100, 0, 9).unwrap();
    assert_eq!(
        (groups.len(), groups[0].sm_count(), rest.sm_count()),
        (8, 16, 4)
    );
    // minCount 0 is the granularity.
    assert_eq!(split(&dev0, 1, 0, 0).unwrap().0[0].sm_count(), 8);
    // Without co-scheduling, and below 9.0: pairs.
    assert_eq!(split(&dev0, 1, 1, 5).unwrap().0[0].sm_count(), 6);
    let dev1 = device_resource(1);
    let (groups, rest) = split(&dev1, 200, 0, 5).unwrap();
    assert_eq!(
        (groups.len(), groups[0].sm_count(), rest.sm_count()),
        (18, 6, 0)
    );
    // A whole split: the remainder is an empty SM resource.
    let (_, rest) = split(&dev1, 200, 0, 2).unwrap();
    assert_eq!((rest.type_, rest.sm_count()), (CU_DEV_RESOURCE_TYPE_SM, 0));
    // SAFETY (all below): softcuda's exports, called as C would call them.
    unsafe {
        // Simulation: how many, nothing written.
        let mut nb = 1;
        ok(cuDevSmResourceSplitByCount(
            null_mut(),
            &mut nb,
            &dev0,
            null_mut(),
            0,
            8,
        ));
        assert_eq!(nb, 16);
        ok(cuDevSmResourceSplitByCount(
            null_mut(),
            &mut nb,
            &dev1,
            null_mut(),
            0,
            8,
        ));
        assert_eq!(nb, 13);
        // remaining may be NULL.
        let mut g = [CUdevResource::zeroed(); 2];
        nb = 2;
        ok(cuDevSmResourceSplitByCount(
            g.as_mut_ptr(),
            &mut nb,
            &dev0,
            null_mut(),
            0,
            64,
        ));
        assert_eq!((nb, g[1].sm_count()), (2, 64));
        // Refusals.
        let mut one = [CUdevResource::zeroed(); 1];
        let mut nb = 1;
        let mut split_raw = |input: *const CUdevResource, nb: *mut c_uint, flags, min| {
            cuDevSmResourceSplitByCount(one.as_mut_ptr(), nb, input, null_mut(), flags, min)
        };
        assert_eq!(
            split_raw(&dev0, &mut nb, 0, 133),
            code::INVALID_RESOURCE_CONFIGURATION
        );
        assert_eq!(
            split_raw(&dev0, &mut nb, 3, 8),
            code::INVALID_VALUE,
            "flags"
        );
        assert_eq!(
            split_raw(&dev1, &mut nb, 2, 8),
            code::INVALID_VALUE,
            "9.0+ only"
        );
        ok(split_raw(&dev0, &mut nb, 2, 8));
        nb = 0;
        assert_eq!(
            split_raw(&dev0, &mut nb, 0, 8),
            code::INVALID_VALUE,
            "no room"
        );
        nb = 1;
        assert_eq!(split_raw(null_mut(), &mut nb, 0, 8), code::INVALID_VALUE);
        assert_eq!(split_raw(&dev0, null_mut(), 0, 8), code::INVALID_VALUE);
    }
    // Outputs of a split are not split again (group or remainder).
    let (groups, rest) = split(&dev0, 2, 0, 16).unwrap();
    assert_eq!(
        split(&groups[0], 1, 0, 8).err(),
        Some(code::INVALID_RESOURCE_CONFIGURATION)
    );
    assert_eq!(
        split(&rest, 1, 0, 8).err(),
        Some(code::INVALID_RESOURCE_CONFIGURATION)
    );
    // Forged, edited and zeroed structs.
    let mut forged = CUdevResource::zeroed();
    forged.type_ = CU_DEV_RESOURCE_TYPE_SM;
    forged.data[..4].copy_from_slice(&132u32.to_ne_bytes());
    assert_eq!(split(&forged, 1, 0, 8).err(), Some(code::INVALID_VALUE));
    let mut edited = groups[0];
    edited.data[..4].copy_from_slice(&32u32.to_ne_bytes());
    assert_eq!(split(&edited, 1, 0, 8).err(), Some(code::INVALID_VALUE));
    let mut edited = dev0;
    edited._internal_padding[30] ^= 1;
    assert_eq!(split(&edited, 1, 0, 8).err(), Some(code::INVALID_VALUE));
    assert_eq!(
        split(&CUdevResource::zeroed(), 1, 0, 8).err(),
        Some(code::INVALID_RESOURCE_TYPE)
    );
    // A copy is as good as the original.
    let copy = dev0;
    assert_eq!(split(&copy, 1, 0, 8).unwrap().0.len(), 1);
    no_leaks();
}

#[test]
fn descriptors_take_disjoint_outputs_of_one_split_on_one_device() {
    let _g = serial();
    let (a, a_rest) = split(&device_resource(0), 3, 0, 8).unwrap();
    let (b, _) = split(&device_resource(0), 1, 0, 8).unwrap();
    let (c, _) = split(&device_resource(1), 1, 0, 8).unwrap();
    assert!(desc(&mut []).is_err());
    assert_eq!(desc(&mut []).err(), Some(code::INVALID_VALUE));
    // SAFETY: softcuda's export; null pointers are refused.
    unsafe {
        let mut d = null_mut();
        assert_eq!(
            cuDevResourceGenerateDesc(&mut d, null_mut(), 1),
            code::INVALID_VALUE
        );
        let mut r = [a[0]];
        assert_eq!(
            cuDevResourceGenerateDesc(null_mut(), r.as_mut_ptr(), 1),
            code::INVALID_VALUE
        );
    }
    let bad = code::INVALID_RESOURCE_CONFIGURATION;
    assert_eq!(desc(&mut [a[0], b[0]]).err(), Some(bad), "two splits");
    assert_eq!(desc(&mut [a[0], a[0]]).err(), Some(bad), "overlap");
    assert_eq!(desc(&mut [a[0], c[0]]).err(), Some(bad), "two devices");
    assert_eq!(
        desc(&mut [a[0], device_resource(0)]).err(),
        Some(bad),
        "not a split output"
    );
    let mut forged = a[1];
    forged.data[0] = 16;
    assert_eq!(desc(&mut [forged]).err(), Some(code::INVALID_VALUE));
    let (_, empty) = split(&device_resource(1), 200, 0, 2).unwrap();
    assert_eq!(desc(&mut [empty]).err(), Some(bad), "no SMs");
    // Groups and the remainder of one split combine: a green context of them all.
    let d = desc(&mut [a[0], a[2], a_rest]).unwrap();
    assert!(desc(&mut [device_resource(1)]).is_ok());
    let mut g = null_mut();
    // SAFETY (all below): softcuda's exports, called as C would call them.
    unsafe {
        assert_eq!(
            cuGreenCtxCreate(&mut g, d, 0, 0),
            code::INVALID_VALUE,
            "flags 0"
        );
        assert_eq!(
            cuGreenCtxCreate(&mut g, d, 1, 1),
            code::INVALID_VALUE,
            "device"
        );
        assert_eq!(
            cuGreenCtxCreate(&mut g, null_mut(), 0, 1),
            code::INVALID_VALUE
        );
        ok(cuGreenCtxCreate(&mut g, d, 0, CU_GREEN_CTX_DEFAULT_STREAM));
        let mut r = CUdevResource::zeroed();
        ok(cuGreenCtxGetDevResource(g, &mut r, CU_DEV_RESOURCE_TYPE_SM));
        assert_eq!(r.sm_count(), 8 + 8 + (132 - 24));
        // A green context's resource splits again.
        let (groups, _) = split(&r, 100, 0, 8).unwrap();
        assert_eq!(groups.len(), (8 + 8 + 108) / 8);
        assert_eq!(control::live_counts().green_contexts, 1);
        ok(cuGreenCtxDestroy(g));
        assert_eq!(cuGreenCtxDestroy(g), code::INVALID_HANDLE);
    }
    no_leaks();
}

#[test]
fn a_green_context_allocates_loads_launches_and_shares_the_primary_contexts_memory() {
    let _g = serial();
    // SAFETY (all below): softcuda's exports, called as C would call them.
    unsafe {
        let mut primary = null_mut();
        ok(cuDevicePrimaryCtxRetain(&mut primary, 0));
        let g = green_of(8);
        let (mut flags, mut active) = (0, 0);
        ok(cuDevicePrimaryCtxGetState(0, &mut flags, &mut active));
        assert_eq!(active, 1);
        let ctx = ctx_of(g);
        assert_eq!(ctx_of(g), ctx, "the same handle each time");
        assert_ne!(ctx, primary);
        let g2 = green_of(16);
        let (mut id1, mut id2) = (0, 0);
        ok(cuGreenCtxGetId(g, &mut id1));
        ok(cuGreenCtxGetId(g2, &mut id2));
        assert_ne!(id1, id2);
        let mut r = CUdevResource::zeroed();
        ok(cuCtxGetDevResource(ctx, &mut r, CU_DEV_RESOURCE_TYPE_SM));
        assert_eq!(r.sm_count(), 8);
        ok(cuCtxGetDevResource(
            primary,
            &mut r,
            CU_DEV_RESOURCE_TYPE_SM,
        ));
        assert_eq!(r.sm_count(), 132);
        // Memory of the primary context, used from the green context.
        ok(cuCtxPushCurrent_v2(primary));
        let mut shared = 0;
        ok(cuMemAlloc_v2(&mut shared, 64 * 4));
        ok(cuCtxPushCurrent_v2(ctx));
        let mut cur = null_mut();
        ok(cuCtxGetCurrent(&mut cur));
        assert_eq!(cur, ctx);
        let mut own = 0;
        ok(cuMemAlloc_v2(&mut own, 64 * 4));
        let mut owner: CUcontext = null_mut();
        ok(cuPointerGetAttribute(
            (&mut owner as *mut CUcontext).cast(),
            1,
            own,
        ));
        assert_eq!(
            owner, primary,
            "green allocations are the primary context's"
        );
        let m = load(PTX);
        let f = function(m, c"fill");
        for (buf, v) in [(shared, 100u32), (own, 200)] {
            let (mut p, mut v) = (buf, v);
            let mut params = [(&mut p as *mut u64).cast(), (&mut v as *mut u32).cast()];
            ok(launch_kernel(
                f,
                [1, 1, 1],
                [64, 1, 1],
                0,
                null_mut(),
                &mut params,
            ));
        }
        ok(cuCtxSynchronize());
        let mut host = [0u32; 64];
        ok(cuMemcpyDtoH_v2(host.as_mut_ptr().cast(), shared, 256));
        assert_eq!(host[5], 105);
        ok(cuMemcpyDtoH_v2(host.as_mut_ptr().cast(), own, 256));
        assert_eq!(host[63], 263);
        // Destroyed only through cuGreenCtxDestroy.
        assert_eq!(cuCtxDestroy_v2(ctx), code::INVALID_CONTEXT);
        ok(cuModuleUnload(m));
        ok(cuCtxPopCurrent_v2(null_mut()));
        ok(cuGreenCtxDestroy(g));
        assert_eq!(cuCtxFromGreenCtx(&mut cur, g), code::INVALID_HANDLE);
        assert_eq!(cuCtxPushCurrent_v2(ctx), code::INVALID_CONTEXT);
        // What it allocated stays, the primary context's.
        ok(cuMemcpyDtoH_v2(host.as_mut_ptr().cast(), own, 256));
        assert_eq!(host[0], 200);
        ok(cuMemFree_v2(own));
        ok(cuMemFree_v2(shared));
        ok(cuCtxPopCurrent_v2(null_mut()));
        ok(cuGreenCtxDestroy(g2));
        ok(cuDevicePrimaryCtxRelease_v2(0));
        ok(cuDevicePrimaryCtxGetState(0, &mut flags, &mut active));
        assert_eq!(active, 0, "the green contexts released the primary context");
    }
    no_leaks();
}

#[test]
fn a_green_context_of_8_sms_has_smaller_launch_and_occupancy_limits() {
    let _g = serial();
    // SAFETY (all below): softcuda's exports, called as C would call them.
    unsafe {
        let mut ordinary = null_mut();
        ok(cuCtxCreate_v2(&mut ordinary, 0, 0));
        let m0 = load(PTX);
        let f0 = function(m0, c"empty");
        let g = green_of(8);
        ok(cuCtxPushCurrent_v2(ctx_of(g)));
        let m = load(PTX);
        let f = function(m, c"empty");
        let mut per_sm = 0;
        ok(cuOccupancyMaxActiveBlocksPerMultiprocessor(
            &mut per_sm,
            f,
            1024,
            0,
        ));
        assert!(per_sm > 0);
        let max = per_sm as u32 * 8;
        let coop = |f, grid| {
            launch_ex::cuLaunchCooperativeKernel(
                f,
                grid,
                1,
                1,
                1024,
                1,
                1,
                0,
                null_mut(),
                null_mut(),
            )
        };
        ok(coop(f, max));
        assert_eq!(coop(f, max + 1), code::COOPERATIVE_LAUNCH_TOO_LARGE);
        // The device attribute is the device's.
        assert_eq!(dev_attr(16, 0), 132);
        // Occupancy: grids fill 8 SMs; clusters fit on one GPC's worth.
        let (mut grid, mut block) = (0, 0);
        ok(cuOccupancyMaxPotentialBlockSize(
            &mut grid, &mut block, f, None, 0, 0,
        ));
        let green_grid = grid;
        let mut attr = CUlaunchAttribute {
            id: 4,
            pad: [0; 4],
            value: [2 | (1 << 32), 1, 0, 0, 0, 0, 0, 0],
        };
        let cfg = CUlaunchConfig {
            grid: [2, 1, 1],
            block: [128, 1, 1],
            shared_mem_bytes: 0,
            stream: null_mut(),
            attrs: &mut attr,
            num_attrs: 1,
        };
        let mut green_clusters = 0;
        ok(launch_ex::cuOccupancyMaxActiveClusters(
            &mut green_clusters,
            f,
            &cfg,
        ));
        ok(cuCtxSynchronize());
        ok(cuModuleUnload(m));
        ok(cuCtxPopCurrent_v2(null_mut()));
        // The ordinary context: the whole device.
        ok(coop(f0, max + 1));
        ok(cuOccupancyMaxPotentialBlockSize(
            &mut grid, &mut block, f0, None, 0, 0,
        ));
        assert_eq!(green_grid * 132, grid * 8);
        assert!(green_grid < grid);
        let mut clusters = 0;
        ok(launch_ex::cuOccupancyMaxActiveClusters(
            &mut clusters,
            f0,
            &cfg,
        ));
        assert!(
            green_clusters > 0 && green_clusters < clusters,
            "{green_clusters} {clusters}"
        );
        assert_eq!(
            clusters / green_clusters,
            132 / launch_ex::SMS_PER_GPC as c_int
        );
        ok(cuCtxSynchronize());
        ok(cuModuleUnload(m0));
        ok(cuCtxDestroy_v2(ordinary));
        ok(cuGreenCtxDestroy(g));
    }
    no_leaks();
}

static SLOW_DONE: AtomicU32 = AtomicU32::new(0);
static SEEN: AtomicU32 = AtomicU32::new(0);

extern "C" fn slow(_: *mut c_void) {
    std::thread::sleep(std::time::Duration::from_millis(150));
    SLOW_DONE.store(1, Ordering::SeqCst);
}

extern "C" fn look(_: *mut c_void) {
    SEEN.fetch_add(SLOW_DONE.load(Ordering::SeqCst), Ordering::SeqCst);
}

#[test]
fn green_streams_and_events_order_the_green_contexts_work() {
    let _g = serial();
    // SAFETY (all below): softcuda's exports, called as C would call them.
    unsafe {
        let mut primary = null_mut();
        ok(cuDevicePrimaryCtxRetain(&mut primary, 0));
        ok(cuCtxPushCurrent_v2(primary));
        let g = green_of(8);
        let mut s = null_mut();
        assert_eq!(cuGreenCtxStreamCreate(&mut s, g, 0, 0), code::INVALID_VALUE);
        assert_eq!(cuGreenCtxStreamCreate(&mut s, g, 3, 0), code::INVALID_VALUE);
        ok(cuGreenCtxStreamCreate(&mut s, g, 1, 0));
        let mut got = null_mut();
        ok(cuStreamGetGreenCtx(s, &mut got));
        assert_eq!(got, g);
        let (mut c, mut gc) = (null_mut(), null_mut());
        ok(cuStreamGetCtx(s, &mut c));
        assert_eq!(c, ctx_of(g));
        ok(cuStreamGetCtx_v2(s, &mut c, &mut gc));
        assert_eq!((c, gc), (ctx_of(g), g));
        let mut ps = null_mut();
        ok(cuStreamCreate(&mut ps, 1));
        ok(cuStreamGetGreenCtx(ps, &mut got));
        assert!(got.is_null(), "a primary context's stream");
        ok(cuStreamGetCtx_v2(ps, &mut c, &mut gc));
        assert_eq!((c, gc), (primary, null_mut()));
        ok(cuStreamGetGreenCtx(null_mut(), &mut got));
        assert!(got.is_null());
        // Record: the event waits for the slow work of the green stream.
        SLOW_DONE.store(0, Ordering::SeqCst);
        let mut ev = null_mut();
        ok(cuEventCreate(&mut ev, 0));
        ok(cuLaunchHostFunc(s, Some(slow), null_mut()));
        ok(cuGreenCtxRecordEvent(g, ev));
        ok(cuEventSynchronize(ev));
        assert_eq!(
            SLOW_DONE.load(Ordering::SeqCst),
            1,
            "the record came after it"
        );
        // Wait: the green context's work, on its streams old and new and on its
        // default stream, waits for slow work of the primary context.
        SLOW_DONE.store(0, Ordering::SeqCst);
        SEEN.store(0, Ordering::SeqCst);
        ok(cuLaunchHostFunc(ps, Some(slow), null_mut()));
        ok(cuEventRecord(ev, ps));
        ok(cuGreenCtxWaitEvent(g, ev));
        ok(cuLaunchHostFunc(s, Some(look), null_mut()));
        ok(cuCtxPushCurrent_v2(ctx_of(g)));
        let mut s2 = null_mut();
        ok(cuStreamCreate(&mut s2, 1));
        ok(cuStreamGetGreenCtx(s2, &mut got));
        assert_eq!(got, g, "made while the green context is current");
        ok(cuLaunchHostFunc(s2, Some(look), null_mut()));
        ok(cuLaunchHostFunc(null_mut(), Some(look), null_mut()));
        ok(cuCtxSynchronize());
        ok(cuCtxPopCurrent_v2(null_mut()));
        assert_eq!(
            SEEN.load(Ordering::SeqCst),
            3,
            "all three ran after the slow work"
        );
        // Destroyed: its streams are detached until destroyed.
        ok(cuGreenCtxDestroy(g));
        assert_eq!(code::STREAM_DETACHED, 917);
        assert_eq!(cuStreamSynchronize(s), code::STREAM_DETACHED);
        assert_eq!(cuStreamQuery(s2), code::STREAM_DETACHED);
        assert_eq!(cuStreamGetGreenCtx(s, &mut got), code::STREAM_DETACHED);
        assert_eq!(
            cuLaunchHostFunc(s, Some(look), null_mut()),
            code::STREAM_DETACHED
        );
        assert_eq!(cuEventRecord(ev, s2), code::STREAM_DETACHED);
        ok(cuStreamDestroy_v2(s));
        ok(cuStreamDestroy_v2(s2));
        assert_eq!(cuStreamDestroy_v2(s), code::INVALID_HANDLE);
        ok(cuStreamDestroy_v2(ps));
        ok(cuEventDestroy_v2(ev));
        ok(cuCtxPopCurrent_v2(null_mut()));
        ok(cuDevicePrimaryCtxRelease_v2(0));
    }
    no_leaks();
}
