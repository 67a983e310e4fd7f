//! softcuda through its C ABI: the exported functions called as a C program would.
//! softcuda's state is process-wide, so every test takes `serial()` and leaves no
//! live object behind (checked at the end of each).

mod common;

use common::fault;
use common::{no_leaks, ok, serial};
use softcuda::api::{context::*, device::*, init::*, ipc::*, memory::*, module::*, stream::*};
use softcuda::control;
use softcuda::types::*;
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::{Arc, Mutex};

/// Runs `f` with device `dev`'s primary context current, then releases it.
fn with_primary<T>(dev: CUdevice, f: impl FnOnce(CUcontext) -> T) -> T {
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        let mut ctx = std::ptr::null_mut();
        ok(cuDevicePrimaryCtxRetain(&mut ctx, dev));
        ok(cuCtxPushCurrent_v2(ctx));
        let r = f(ctx);
        let mut popped = std::ptr::null_mut();
        ok(cuCtxPopCurrent_v2(&mut popped));
        assert_eq!(popped, ctx);
        ok(cuDevicePrimaryCtxRelease_v2(dev));
        r
    }
}

#[test]
fn version_and_error_strings() {
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        let _g = serial();
        let mut v = 0;
        ok(cuDriverGetVersion(&mut v));
        assert_eq!(v, 12090);
        let (mut name, mut text): (*const c_char, *const c_char) =
            (std::ptr::null(), std::ptr::null());
        ok(cuGetErrorName(code::NO_DEVICE, &mut name));
        ok(cuGetErrorString(code::NO_DEVICE, &mut text));
        assert_eq!(
            CStr::from_ptr(name).to_str().unwrap(),
            "CUDA_ERROR_NO_DEVICE"
        );
        assert_eq!(
            CStr::from_ptr(text).to_str().unwrap(),
            "no CUDA-capable device is detected"
        );
        assert_eq!(cuGetErrorName(4242, &mut name), code::INVALID_VALUE);
        assert_eq!(cuGetErrorName(0, std::ptr::null_mut()), code::INVALID_VALUE);
        assert_eq!(cuInit(1), code::INVALID_VALUE);
    }
}

#[test]
fn two_distinct_devices_answer_consistently() {
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        let _g = serial();
        let mut n = 0;
        ok(cuDeviceGetCount(&mut n));
        assert_eq!(n, 2);
        let attr = |a: c_uint, d: CUdevice| {
            let mut v = 0;
            ok(cuDeviceGetAttribute(&mut v, a, d));
            v
        };
        assert_eq!((attr(75, 0), attr(76, 0)), (9, 0));
        assert_eq!((attr(75, 1), attr(76, 1)), (8, 0));
        assert_ne!(attr(16, 0), attr(16, 1));
        let mut u0 = CUuuid::default();
        let mut u1 = CUuuid::default();
        ok(cuDeviceGetUuid(&mut u0, 0));
        ok(cuDeviceGetUuid_v2(&mut u1, 1));
        assert_ne!(u0, u1);
        let (mut m0, mut m1) = (0usize, 0usize);
        ok(cuDeviceTotalMem_v2(&mut m0, 0));
        ok(cuDeviceTotalMem_v2(&mut m1, 1));
        assert_ne!(m0, m1);
        let mut bus = [0 as c_char; 32];
        ok(cuDeviceGetPCIBusId(bus.as_mut_ptr(), 32, 1));
        let mut back = -1;
        ok(cuDeviceGetByPCIBusId(&mut back, bus.as_ptr()));
        assert_eq!(back, 1);
        let mut name = [0 as c_char; 64];
        ok(cuDeviceGetName(name.as_mut_ptr(), 64, 0));
        assert!(
            CStr::from_ptr(name.as_ptr())
                .to_str()
                .unwrap()
                .contains("sm_90")
        );
        let mut v = 0;
        assert_eq!(cuDeviceGetAttribute(&mut v, 1, 2), code::INVALID_DEVICE);
        assert_eq!(cuDeviceGetAttribute(&mut v, 9999, 0), code::INVALID_VALUE);
        let mut can = 0;
        ok(cuDeviceCanAccessPeer(&mut can, 0, 1));
        assert_eq!(can, 1);
        ok(cuDeviceCanAccessPeer(&mut can, 0, 0));
        assert_eq!(can, 0);
    }
}

#[test]
fn primary_context_reference_counting() {
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        let _g = serial();
        let (mut flags, mut active) = (0, 0);
        ok(cuDevicePrimaryCtxGetState(0, &mut flags, &mut active));
        assert_eq!(active, 0);
        let (mut a, mut b) = (std::ptr::null_mut(), std::ptr::null_mut());
        ok(cuDevicePrimaryCtxRetain(&mut a, 0));
        ok(cuDevicePrimaryCtxRetain(&mut b, 0));
        assert_eq!(a, b, "one primary context per device");
        ok(cuDevicePrimaryCtxGetState(0, &mut flags, &mut active));
        assert_eq!(active, 1);
        ok(cuDevicePrimaryCtxRelease_v2(0));
        assert_eq!(control::live_counts().contexts, 1);
        ok(cuDevicePrimaryCtxRelease_v2(0));
        assert_eq!(control::live_counts().contexts, 0);
        assert_eq!(cuDevicePrimaryCtxRelease_v2(0), code::INVALID_CONTEXT);
        assert_eq!(cuCtxDestroy_v2(a), code::INVALID_CONTEXT);
        no_leaks();
    }
}

#[test]
fn the_context_stack_behaves_as_the_drivers() {
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        let _g = serial();
        let mut cur = std::ptr::null_mut();
        ok(cuCtxGetCurrent(&mut cur));
        assert!(cur.is_null());
        assert_eq!(
            cuCtxPopCurrent_v2(&mut cur),
            code::INVALID_CONTEXT,
            "pop on an empty stack"
        );
        let mut dev = 0;
        assert_eq!(
            cuCtxGetDevice(&mut dev),
            code::INVALID_CONTEXT,
            "no current context"
        );

        let (mut c0, mut c1) = (std::ptr::null_mut(), std::ptr::null_mut());
        ok(cuCtxCreate_v2(&mut c0, 0, 0));
        ok(cuCtxCreate_v2(&mut c1, 0, 1));
        ok(cuCtxGetCurrent(&mut cur));
        assert_eq!(cur, c1, "create pushes");
        ok(cuCtxGetDevice(&mut dev));
        assert_eq!(dev, 1);
        ok(cuCtxPopCurrent_v2(&mut cur));
        assert_eq!(cur, c1);
        ok(cuCtxGetCurrent(&mut cur));
        assert_eq!(cur, c0, "pop restores the one below");
        ok(cuCtxSetCurrent(c1));
        ok(cuCtxGetCurrent(&mut cur));
        assert_eq!(cur, c1, "set replaces the top");
        // Other threads have stacks of their own.
        let seen = std::thread::scope(|s| {
            s.spawn(|| {
                let mut c = std::ptr::null_mut();
                ok(cuCtxGetCurrent(&mut c));
                c.is_null()
            })
            .join()
            .unwrap()
        });
        assert!(seen);
        ok(cuCtxDestroy_v2(c1));
        ok(cuCtxGetCurrent(&mut cur));
        assert!(cur.is_null(), "destroying the current context pops it");
        assert_eq!(
            cuCtxPushCurrent_v2(c1),
            code::INVALID_CONTEXT,
            "a destroyed context"
        );
        ok(cuCtxDestroy_v2(c0));
        no_leaks();
    }
}

#[test]
fn context_limits_and_cache_config() {
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        let _g = serial();
        with_primary(0, |_| {
            let mut v = 0usize;
            ok(cuCtxGetLimit(&mut v, 0));
            assert_eq!(v, 1024);
            ok(cuCtxSetLimit(0, 4096));
            ok(cuCtxGetLimit(&mut v, 0));
            assert_eq!(v, 4096);
            assert_eq!(cuCtxGetLimit(&mut v, 77), code::NOT_SUPPORTED);
            let mut c = 9;
            ok(cuCtxSetCacheConfig(2));
            ok(cuCtxGetCacheConfig(&mut c));
            assert_eq!(c, 2);
            let (mut least, mut greatest) = (1, 1);
            ok(cuCtxGetStreamPriorityRange(&mut least, &mut greatest));
            assert_eq!((least, greatest), (0, -5));
        });
        no_leaks();
    }
}

#[test]
fn memory_allocations_copies_and_sets() {
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        let _g = serial();
        with_primary(0, |ctx| {
            let (mut a, mut b) = (0, 0);
            ok(cuMemAlloc_v2(&mut a, 1000));
            ok(cuMemAlloc_v2(&mut b, 1000));
            assert!(a != 0 && b != 0 && a != b && a % 256 == 0);
            assert_eq!(cuMemAlloc_v2(&mut b, 0), code::INVALID_VALUE);
            let host: Vec<u32> = (0..250).collect();
            ok(cuMemcpyHtoD_v2(a, host.as_ptr().cast(), 1000));
            ok(cuMemcpyDtoD_v2(b, a, 1000));
            let mut back = vec![0u32; 250];
            ok(cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), b, 1000));
            assert_eq!(back, host);
            // Out of the allocation: refused, nothing copied.
            assert_eq!(
                cuMemcpyHtoD_v2(a + 900, host.as_ptr().cast(), 200),
                code::INVALID_VALUE
            );
            ok(cuMemsetD32_v2(a, 0xDEADBEEF, 250));
            ok(cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), a, 1000));
            assert!(back.iter().all(|v| *v == 0xDEADBEEF));
            ok(cuMemsetD16_v2(a, 0x1234, 2));
            ok(cuMemsetD8_v2(a + 4, 0xAB, 1));
            let mut bytes = [0u8; 6];
            ok(cuMemcpyDtoH_v2(bytes.as_mut_ptr().cast(), a, 6));
            assert_eq!(bytes, [0x34, 0x12, 0x34, 0x12, 0xAB, 0xBE]);
            // 2-D: a 4x3 box of bytes, pitch 16.
            ok(cuMemsetD8_v2(a, 0, 1000));
            ok(cuMemsetD2D8_v2(a, 16, 7, 4, 3));
            let mut grid = [0u8; 48];
            ok(cuMemcpyDtoH_v2(grid.as_mut_ptr().cast(), a, 48));
            for (i, v) in grid.iter().enumerate() {
                assert_eq!(*v, if i % 16 < 4 { 7 } else { 0 }, "byte {i}");
            }
            let mut pitched = [0u8; 12];
            let p = CUDA_MEMCPY2D {
                srcXInBytes: 0,
                srcY: 0,
                srcMemoryType: CU_MEMORYTYPE_DEVICE,
                srcHost: std::ptr::null(),
                srcDevice: a,
                srcArray: std::ptr::null_mut(),
                srcPitch: 16,
                dstXInBytes: 0,
                dstY: 0,
                dstMemoryType: CU_MEMORYTYPE_HOST,
                dstHost: pitched.as_mut_ptr().cast(),
                dstDevice: 0,
                dstArray: std::ptr::null_mut(),
                dstPitch: 4,
                WidthInBytes: 4,
                Height: 3,
            };
            ok(cuMemcpy2D_v2(&p));
            assert_eq!(pitched, [7; 12]);
            // Pointer attributes and address ranges.
            let mut mem_type: c_uint = 0;
            ok(cuPointerGetAttribute((&raw mut mem_type).cast(), 2, a + 10));
            assert_eq!(mem_type, CU_MEMORYTYPE_DEVICE);
            let mut owner: CUcontext = std::ptr::null_mut();
            ok(cuPointerGetAttribute((&raw mut owner).cast(), 1, a));
            assert_eq!(owner, ctx);
            let (mut base, mut size) = (0, 0);
            ok(cuMemGetAddressRange_v2(&mut base, &mut size, a + 999));
            assert_eq!((base, size), (a, 1000));
            let (mut free, mut total) = (0, 0);
            ok(cuMemGetInfo_v2(&mut free, &mut total));
            assert_eq!(total - free, 2000);
            // IPC within the process names the same memory.
            let mut h = CUipcMemHandle { reserved: [0; 64] };
            ok(cuIpcGetMemHandle(&mut h, a));
            let mut opened = 0;
            ok(cuIpcOpenMemHandle_v2(&mut opened, h, 1));
            assert_eq!(opened, a);
            ok(cuIpcCloseMemHandle(opened));
            ok(cuMemFree_v2(a));
            assert_eq!(
                cuMemFree_v2(a),
                code::INVALID_VALUE,
                "double free is refused"
            );
            assert_eq!(
                cuMemFree_v2(b + 8),
                code::INVALID_VALUE,
                "not a base address"
            );
            ok(cuMemFree_v2(b));
        });
        no_leaks();
    }
}

#[test]
fn device_memory_is_bounded_by_the_profile() {
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        let _g = serial();
        with_primary(1, |_| {
            let mut total = 0usize;
            ok(cuDeviceTotalMem_v2(&mut total, 1));
            let mut p = 0;
            assert_eq!(cuMemAlloc_v2(&mut p, total + 1), code::OUT_OF_MEMORY);
        });
        no_leaks();
    }
}

#[test]
fn pinned_and_registered_host_memory() {
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        let _g = serial();
        with_primary(0, |_| {
            let mut p: *mut c_void = std::ptr::null_mut();
            ok(cuMemHostAlloc(&mut p, 4096, 0x1));
            let mut flags = 0;
            ok(cuMemHostGetFlags(&mut flags, p));
            assert_eq!(flags, 0x1);
            let mut d = 0;
            ok(cuMemHostGetDevicePointer_v2(&mut d, p, 0));
            assert_eq!(d, p as u64);
            ok(cuMemFreeHost(p));
            let mut buf = vec![0u8; 8192];
            ok(cuMemHostRegister_v2(buf.as_mut_ptr().cast(), 8192, 0));
            assert_eq!(
                cuMemHostRegister_v2(buf.as_mut_ptr().cast(), 10, 0),
                code::HOST_MEMORY_ALREADY_REGISTERED
            );
            assert_eq!(control::live_counts().registrations, 1);
            ok(cuMemHostUnregister(buf.as_mut_ptr().cast()));
            assert_eq!(
                cuMemHostUnregister(buf.as_mut_ptr().cast()),
                code::HOST_MEMORY_NOT_REGISTERED
            );
        });
        no_leaks();
    }
}

extern "C" fn push_tag(data: *mut c_void) {
    // SAFETY: the test passes a pointer to a (Mutex<Vec<u32>>, u32, u64 ms) it keeps alive.
    let (log, tag, sleep_ms) = unsafe { &*data.cast::<(Arc<Mutex<Vec<u32>>>, u32, u64)>() };
    std::thread::sleep(std::time::Duration::from_millis(*sleep_ms));
    log.lock().unwrap().push(*tag);
}

#[test]
fn streams_run_in_order_and_events_order_streams() {
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        let _g = serial();
        with_primary(0, |_| {
            let (mut s1, mut s2) = (std::ptr::null_mut(), std::ptr::null_mut());
            ok(cuStreamCreate(&mut s1, 0x1));
            ok(cuStreamCreateWithPriority(&mut s2, 0x1, -9));
            let mut prio = 0;
            ok(cuStreamGetPriority(s2, &mut prio));
            assert_eq!(prio, -5, "priorities clamp to the device's range");
            let log: Arc<Mutex<Vec<u32>>> = Arc::new(Mutex::new(Vec::new()));
            // Long enough that s1 is still busy at the queries below, however slowly
            // this thread gets there (valgrind runs this suite too).
            let slow = (Arc::clone(&log), 1u32, 250u64);
            let after_slow = (Arc::clone(&log), 2u32, 0u64);
            let on_s2 = (Arc::clone(&log), 3u32, 0u64);
            let (mut start, mut done) = (std::ptr::null_mut(), std::ptr::null_mut());
            ok(cuEventCreate(&mut start, 0));
            ok(cuEventCreate(&mut done, 0));
            ok(cuEventRecord(start, s1));
            ok(cuLaunchHostFunc(
                s1,
                Some(push_tag),
                (&raw const slow).cast_mut().cast(),
            ));
            ok(cuLaunchHostFunc(
                s1,
                Some(push_tag),
                (&raw const after_slow).cast_mut().cast(),
            ));
            ok(cuEventRecord(done, s1));
            // s2 waits for `done`: its work comes after everything on s1.
            ok(cuStreamWaitEvent(s2, done, 0));
            ok(cuLaunchHostFunc(
                s2,
                Some(push_tag),
                (&raw const on_s2).cast_mut().cast(),
            ));
            assert_eq!(cuStreamQuery(s1), code::NOT_READY);
            assert_eq!(cuEventQuery(done), code::NOT_READY);
            ok(cuStreamSynchronize(s2));
            assert_eq!(*log.lock().unwrap(), [1, 2, 3]);
            ok(cuEventSynchronize(done));
            let mut ms = 0f32;
            ok(cuEventElapsedTime(&mut ms, start, done));
            assert!((245.0..10000.0).contains(&ms), "elapsed {ms} ms");
            let mut untimed = std::ptr::null_mut();
            ok(cuEventCreate(&mut untimed, 0x2));
            ok(cuEventRecord(untimed, s1));
            ok(cuEventSynchronize(untimed));
            assert_eq!(
                cuEventElapsedTime(&mut ms, start, untimed),
                code::INVALID_HANDLE
            );
            for e in [start, done, untimed] {
                ok(cuEventDestroy_v2(e));
            }
            ok(cuStreamDestroy_v2(s1));
            ok(cuStreamDestroy_v2(s2));
            assert_eq!(cuStreamDestroy_v2(s2), code::INVALID_HANDLE);
        });
        no_leaks();
    }
}

#[test]
fn the_legacy_stream_waits_for_blocking_streams() {
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        let _g = serial();
        with_primary(0, |_| {
            let mut s = std::ptr::null_mut();
            ok(cuStreamCreate(&mut s, 0));
            let log: Arc<Mutex<Vec<u32>>> = Arc::new(Mutex::new(Vec::new()));
            let slow = (Arc::clone(&log), 1u32, 40u64);
            let legacy = (Arc::clone(&log), 2u32, 0u64);
            ok(cuLaunchHostFunc(
                s,
                Some(push_tag),
                (&raw const slow).cast_mut().cast(),
            ));
            ok(cuLaunchHostFunc(
                std::ptr::null_mut(),
                Some(push_tag),
                (&raw const legacy).cast_mut().cast(),
            ));
            assert_eq!(*log.lock().unwrap(), [1, 2]);
            ok(cuStreamDestroy_v2(s));
        });
        no_leaks();
    }
}

#[test]
fn faults_budgets_and_the_call_log() {
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        let _g = serial();
        with_primary(0, |_| {
            control::inject_fault("cuMemAlloc", 2, code::OUT_OF_MEMORY);
            let (mut a, mut b) = (0, 0);
            ok(cuMemAlloc_v2(&mut a, 64));
            assert_eq!(cuMemAlloc_v2(&mut b, 64), code::OUT_OF_MEMORY);
            ok(cuMemAlloc_v2(&mut b, 64));
            ok(cuMemFree_v2(a));
            ok(cuMemFree_v2(b));
            control::fail_allocations_after(1000);
            ok(cuMemAlloc_v2(&mut a, 600));
            assert_eq!(cuMemAlloc_v2(&mut b, 600), code::OUT_OF_MEMORY);
            ok(cuMemFree_v2(a));
            control::clear_faults();
            control::log_calls(true);
            ok(cuMemAlloc_v2(&mut a, 8));
            ok(cuMemFree_v2(a));
            control::log_calls(false);
            assert_eq!(control::call_log(), ["cuMemAlloc", "cuMemFree"]);
        });
        no_leaks();
    }
}

#[test]
fn get_proc_address_follows_the_drivers_version_rules() {
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        use softcuda::api::proc::{cuGetProcAddress, cuGetProcAddress_v2};
        let _g = serial();
        let ask = |name: &CStr, version: c_int| {
            let mut p = std::ptr::null_mut();
            let mut st = 99;
            let r = cuGetProcAddress_v2(name.as_ptr(), &mut p, version, 0, &mut st);
            (r, st, p)
        };
        let (r, st, p) = ask(c"cuMemAlloc", 12090);
        assert_eq!((r, st), (code::SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS));
        assert_eq!(
            p as usize, cuMemAlloc_v2 as *const () as usize,
            "the 3.2 ABI is the newest at 12.9"
        );
        let (r, st, p) = ask(c"cuCtxCreate", 3020);
        assert_eq!(
            (r, st, p as usize),
            (
                code::SUCCESS,
                CU_GET_PROC_ADDRESS_SUCCESS,
                cuCtxCreate_v2 as *const () as usize
            )
        );
        // At 12.9 cuCtxCreate means the 12.5 ABI, which softcuda does not implement: not
        // found, rather than the older function.
        let (r, st, p) = ask(c"cuCtxCreate", 12090);
        assert_eq!(
            (r, st),
            (code::NOT_FOUND, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)
        );
        assert!(p.is_null());
        let (_, st, _) = ask(c"cuNoSuchFunction", 12090);
        assert_eq!(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
        let (_, st, _) = ask(c"cuMemAlloc", 3000);
        assert_eq!(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
        // A 12.2 driver does not offer 12.8 ABIs.
        let devices = control::config().devices;
        control::configure(12020, devices.clone()).unwrap();
        let (_, st, _) = ask(c"cuEventElapsedTime", 12090);
        assert_eq!(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
        let mut v = 0;
        ok(cuDriverGetVersion(&mut v));
        assert_eq!(v, 12020);
        control::configure(12090, devices).unwrap();
        let mut p = std::ptr::null_mut();
        ok(cuGetProcAddress(c"cuInit".as_ptr(), &mut p, 12090, 0));
        assert_eq!(p as usize, cuInit as *const () as usize);
    }
}

#[test]
fn configuration_is_refused_while_contexts_live() {
    let _g = serial();
    let devices = control::config().devices;
    with_primary(0, |_| {
        assert_eq!(
            control::configure(12090, devices.clone()),
            Err(code::ILLEGAL_STATE)
        );
    });
    control::configure(12090, devices).unwrap();
    no_leaks();
}

const VECTOR_ADD: &str = concat!(include_str!("../../kernels/vector_add.ptx"), "\0");

#[test]
fn a_ptx_kernel_runs_through_the_driver_api() {
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        let _g = serial();
        with_primary(0, |_| {
            let mut m = std::ptr::null_mut();
            ok(cuModuleLoadData(&mut m, VECTOR_ADD.as_ptr().cast()));
            let mut f = std::ptr::null_mut();
            ok(cuModuleGetFunction(&mut f, m, c"vector_add".as_ptr()));
            let mut again = std::ptr::null_mut();
            ok(cuModuleGetFunction(&mut again, m, c"vector_add".as_ptr()));
            assert_eq!(f, again);
            assert_eq!(
                cuModuleGetFunction(&mut again, m, c"nope".as_ptr()),
                code::NOT_FOUND
            );
            let (mut off, mut size) = (0, 0);
            ok(cuFuncGetParamInfo(f, 3, &mut off, &mut size));
            assert_eq!((off, size), (24, 4));
            assert_eq!(
                cuFuncGetParamInfo(f, 4, &mut off, &mut size),
                code::INVALID_VALUE
            );
            let n = 10_000usize;
            let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
            let b: Vec<f32> = (0..n).map(|i| 0.5 * i as f32).collect();
            let mut d = [0u64; 3];
            for p in &mut d {
                ok(cuMemAlloc_v2(p, n * 4));
            }
            ok(cuMemcpyHtoD_v2(d[0], a.as_ptr().cast(), n * 4));
            ok(cuMemcpyHtoD_v2(d[1], b.as_ptr().cast(), n * 4));
            let count = n as u32;
            let mut args: [*mut c_void; 4] = [
                (&raw const d[0]).cast_mut().cast(),
                (&raw const d[1]).cast_mut().cast(),
                (&raw const d[2]).cast_mut().cast(),
                (&raw const count).cast_mut().cast(),
            ];
            let mut s = std::ptr::null_mut();
            ok(cuStreamCreate(&mut s, 0));
            ok(cuLaunchKernel(
                f,
                count.div_ceil(128),
                1,
                1,
                128,
                1,
                1,
                0,
                s,
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            ));
            ok(cuStreamSynchronize(s));
            let mut c = vec![0f32; n];
            ok(cuMemcpyDtoH_v2(c.as_mut_ptr().cast(), d[2], n * 4));
            assert!((0..n).all(|i| c[i] == a[i] + b[i]));
            // Bad launches are refused at once.
            assert_eq!(
                cuLaunchKernel(
                    f,
                    1,
                    1,
                    1,
                    2048,
                    1,
                    1,
                    0,
                    s,
                    args.as_mut_ptr(),
                    std::ptr::null_mut()
                ),
                code::INVALID_VALUE
            );
            assert_eq!(
                cuLaunchKernel(
                    f,
                    1,
                    1,
                    1,
                    32,
                    1,
                    1,
                    0,
                    s,
                    std::ptr::null_mut(),
                    std::ptr::null_mut()
                ),
                code::INVALID_VALUE
            );
            let mut occ = 0;
            ok(cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut occ, f, 256, 0,
            ));
            assert!((1..=32).contains(&occ), "{occ}");
            let (mut grid, mut block) = (0, 0);
            ok(cuOccupancyMaxPotentialBlockSize(
                &mut grid, &mut block, f, None, 0, 0,
            ));
            assert!(block > 0 && block % 32 == 0 && grid > 0);
            ok(cuStreamDestroy_v2(s));
            for p in d {
                ok(cuMemFree_v2(p));
            }
            ok(cuModuleUnload(m));
            assert_eq!(
                cuModuleGetFunction(&mut again, m, c"vector_add".as_ptr()),
                code::INVALID_HANDLE
            );
        });
        no_leaks();
    }
}

#[test]
fn an_illegal_address_is_a_sticky_launch_error() {
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        let _g = serial();
        let mut ctx = std::ptr::null_mut();
        ok(cuCtxCreate_v2(&mut ctx, 0, 0));
        let mut m = std::ptr::null_mut();
        ok(cuModuleLoadData(&mut m, VECTOR_ADD.as_ptr().cast()));
        let mut f = std::ptr::null_mut();
        ok(cuModuleGetFunction(&mut f, m, c"vector_add".as_ptr()));
        let mut d = 0u64;
        ok(cuMemAlloc_v2(&mut d, 16));
        // The in-bounds reads must see written memory; only the overrun faults.
        ok(cuMemsetD32_v2(d, 0, 4));
        let count = 1024u32; // far beyond the 16-byte buffers
        let mut args: [*mut c_void; 4] = [
            (&raw const d).cast_mut().cast(),
            (&raw const d).cast_mut().cast(),
            (&raw const d).cast_mut().cast(),
            (&raw const count).cast_mut().cast(),
        ];
        assert_eq!(
            cuLaunchKernel(
                f,
                8,
                1,
                1,
                128,
                1,
                1,
                0,
                std::ptr::null_mut(),
                args.as_mut_ptr(),
                std::ptr::null_mut()
            ),
            fault()
        );
        let mut p = 0;
        assert_eq!(
            cuMemAlloc_v2(&mut p, 8),
            fault(),
            "the context is unusable now"
        );
        ok(cuCtxDestroy_v2(ctx));
        no_leaks();
    }
}

#[test]
fn jit_logs_and_refused_images() {
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        let _g = serial();
        with_primary(0, |_| {
            let bad = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n\tfrobnicate.u32 %r1;\n\tret;\n}\n\0";
            let mut err = vec![0 as c_char; 1024];
            let mut info = vec![0 as c_char; 1024];
            let mut opts = [5u32, 6, 3, 4];
            let mut vals: [*mut c_void; 4] = [
                err.as_mut_ptr().cast(),
                1024usize as *mut c_void,
                info.as_mut_ptr().cast(),
                1024usize as *mut c_void,
            ];
            let mut m = std::ptr::null_mut();
            let r = cuModuleLoadDataEx(
                &mut m,
                bad.as_ptr().cast(),
                4,
                opts.as_mut_ptr(),
                vals.as_mut_ptr(),
            );
            assert_eq!(r, code::INVALID_PTX);
            let log = CStr::from_ptr(err.as_ptr()).to_str().unwrap().to_owned();
            assert!(
                log.contains("ptxas") && log.contains("frobnicate") && log.contains("line 6"),
                "{log}"
            );
            assert_eq!(
                vals[1] as usize,
                log.len() + 1,
                "the log size is written back"
            );
            // Success with a verbose log fills the info log, as `ptxas -v` would.
            let mut opts = [5u32, 6, 3, 4, 12];
            let mut vals: [*mut c_void; 5] = [
                err.as_mut_ptr().cast(),
                1024usize as *mut c_void,
                info.as_mut_ptr().cast(),
                1024usize as *mut c_void,
                std::ptr::without_provenance_mut(1),
            ];
            ok(cuModuleLoadDataEx(
                &mut m,
                VECTOR_ADD.as_ptr().cast(),
                5,
                opts.as_mut_ptr(),
                vals.as_mut_ptr(),
            ));
            let log = CStr::from_ptr(info.as_ptr()).to_str().unwrap().to_owned();
            assert!(
                log.contains("ptxas info") && log.contains("vector_add"),
                "{log}"
            );
            ok(cuModuleUnload(m));
            // A cubin (ELF) is refused: softcuda runs PTX only.
            let elf = b"\x7fELF\x02\x01\x01\0\0\0\0\0";
            assert_eq!(
                cuModuleLoadData(&mut m, elf.as_ptr().cast()),
                code::NO_BINARY_FOR_GPU
            );
        });
        no_leaks();
    }
}

#[test]
fn reset_frees_everything_and_uninitialises() {
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        let _g = serial();
        let mut ctx = std::ptr::null_mut();
        ok(cuCtxCreate_v2(&mut ctx, 0, 1));
        let (mut p, mut s, mut e) = (0, std::ptr::null_mut(), std::ptr::null_mut());
        ok(cuMemAlloc_v2(&mut p, 4096));
        ok(cuStreamCreate(&mut s, 0));
        ok(cuEventCreate(&mut e, 0));
        let mut primary = std::ptr::null_mut();
        ok(cuDevicePrimaryCtxRetain(&mut primary, 0));
        let c = control::live_counts();
        assert_eq!(
            (c.contexts, c.allocations, c.streams, c.events),
            (2, 1, 1, 1)
        );
        control::reset();
        no_leaks();
        let mut n = 0;
        assert_eq!(cuDeviceGetCount(&mut n), code::NOT_INITIALIZED);
        ok(cuInit(0));
        assert_eq!(
            cuCtxPushCurrent_v2(ctx),
            code::INVALID_CONTEXT,
            "handles do not survive a reset"
        );
    }
}

#[test]
fn the_peer_topology_is_configurable() {
    let _g = serial();
    // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
    unsafe {
        control::set_peer_links(Some(vec![(0, 1)])).unwrap();
        let mut can = 9;
        ok(cuDeviceCanAccessPeer(&mut can, 0, 1));
        assert_eq!(can, 1);
        ok(cuDeviceCanAccessPeer(&mut can, 1, 0));
        assert_eq!(can, 0, "links are directed");
        // As the driver: a pair without access answers 0 (access, rank, atomics); a
        // device paired with itself is refused.
        let mut v = 9;
        ok(cuDeviceGetP2PAttribute(&mut v, 2, 1, 0));
        assert_eq!(v, 0);
        ok(cuDeviceGetP2PAttribute(&mut v, 2, 0, 1));
        assert_eq!(v, 1);
        assert_eq!(
            cuDeviceGetP2PAttribute(&mut v, 2, 0, 0),
            code::INVALID_DEVICE
        );
        let (mut c0, mut c1) = (std::ptr::null_mut(), std::ptr::null_mut());
        ok(cuCtxCreate_v2(&mut c1, 0, 1));
        ok(cuCtxCreate_v2(&mut c0, 0, 0));
        ok(cuCtxEnablePeerAccess(c1, 0));
        assert_eq!(
            cuCtxEnablePeerAccess(c1, 0),
            code::PEER_ACCESS_ALREADY_ENABLED
        );
        ok(cuCtxDisablePeerAccess(c1));
        assert_eq!(cuCtxDisablePeerAccess(c1), code::PEER_ACCESS_NOT_ENABLED);
        ok(cuCtxSetCurrent(c1));
        assert_eq!(
            cuCtxEnablePeerAccess(c0, 0),
            code::PEER_ACCESS_UNSUPPORTED,
            "no link from 1 to 0"
        );
        ok(cuCtxDestroy_v2(c0));
        ok(cuCtxDestroy_v2(c1));
        control::set_peer_links(None).unwrap();
        ok(cuDeviceCanAccessPeer(&mut can, 1, 0));
        assert_eq!(can, 1);
    }
    no_leaks();
}

#[test]
fn stream_attributes_are_kept() {
    let _g = serial();
    with_primary(0, |_| {
        // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
        unsafe {
            let (mut a, mut b) = (std::ptr::null_mut(), std::ptr::null_mut());
            ok(cuStreamCreateWithPriority(&mut a, 0, -3));
            ok(cuStreamCreate(&mut b, 0));
            let mut v = [0u8; 64];
            ok(cuStreamGetAttribute(a, 8, &mut v));
            assert_eq!(i32::from_le_bytes([v[0], v[1], v[2], v[3]]), -3);
            let mut policy = [0u8; 64];
            policy[0] = 2; // CU_SYNC_POLICY_YIELD
            ok(cuStreamSetAttribute(a, 3, &policy));
            ok(cuStreamCopyAttributes(b, a));
            ok(cuStreamGetAttribute(b, 3, &mut v));
            assert_eq!(v[0], 2);
            assert_eq!(
                cuStreamGetAttribute(a, 4, &mut v),
                code::INVALID_VALUE,
                "cluster dims are not a stream attribute"
            );
            ok(cuStreamDestroy_v2(a));
            ok(cuStreamDestroy_v2(b));
        }
    });
    no_leaks();
}

#[test]
fn freeing_waits_for_queued_work_that_may_use_the_memory() {
    let _g = serial();
    with_primary(0, |_| {
        // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
        unsafe {
            let mut s = std::ptr::null_mut();
            ok(cuStreamCreate(&mut s, 0x1));
            let mut p = 0;
            ok(cuMemAlloc_v2(&mut p, 1 << 20));
            let log: Arc<Mutex<Vec<u32>>> = Arc::new(Mutex::new(Vec::new()));
            let slow = (Arc::clone(&log), 1u32, 50u64);
            ok(cuLaunchHostFunc(
                s,
                Some(push_tag),
                (&raw const slow).cast_mut().cast(),
            ));
            ok(cuMemsetD8Async(p, 0xAB, 1 << 20, s));
            ok(cuMemFree_v2(p));
            assert_eq!(
                *log.lock().unwrap(),
                [1],
                "cuMemFree returned before the stream's work ran"
            );
            ok(cuStreamDestroy_v2(s));
        }
    });
    no_leaks();
}

/// A fatbin (the layout nvcc emits: a 16-byte header, then entries with a 64-byte
/// header each) holding vector_add's PTX for sm_80 and an ELF entry.
fn fatbin_with_ptx(ptx: &str) -> Vec<u8> {
    let entry = |kind: u16, arch: u32, payload: &[u8]| {
        let mut e = Vec::new();
        e.extend_from_slice(&kind.to_le_bytes());
        e.extend_from_slice(&0x0101u16.to_le_bytes());
        e.extend_from_slice(&64u32.to_le_bytes()); // header size
        e.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        e.extend_from_slice(&[0u8; 12]); // compressed size, unknown, version
        e.extend_from_slice(&arch.to_le_bytes());
        e.extend_from_slice(&[0u8; 8]); // name offset and length
        e.extend_from_slice(&0u64.to_le_bytes()); // flags: not compressed
        e.resize(64, 0);
        e.extend_from_slice(payload);
        e
    };
    let mut ptx_bytes = ptx.as_bytes().to_vec();
    ptx_bytes.push(0);
    let mut body = entry(2, 80, b"\x7fELF not runnable here");
    body.extend(entry(1, 80, &ptx_bytes));
    let mut fat = Vec::new();
    fat.extend_from_slice(&0xBA55ED50u32.to_le_bytes());
    fat.extend_from_slice(&1u16.to_le_bytes());
    fat.extend_from_slice(&16u16.to_le_bytes());
    fat.extend_from_slice(&(body.len() as u64).to_le_bytes());
    fat.extend(body);
    fat
}

#[test]
fn a_fatbin_embedding_ptx_runs_that_ptx() {
    let _g = serial();
    with_primary(0, |_| {
        // SAFETY: softcuda's exports, called as C would call them, with valid pointers.
        unsafe {
            let fat = fatbin_with_ptx(include_str!("../../kernels/vector_add.ptx"));
            let mut m = std::ptr::null_mut();
            ok(cuModuleLoadFatBinary(&mut m, fat.as_ptr().cast()));
            let mut f = std::ptr::null_mut();
            ok(cuModuleGetFunction(&mut f, m, c"vector_add".as_ptr()));
            ok(cuModuleUnload(m));
            // Only an ELF entry: nothing softcuda can run.
            let mut only_elf = fatbin_with_ptx("");
            only_elf.truncate(16 + 64 + 22);
            let len = (64 + 22) as u64;
            only_elf[8..16].copy_from_slice(&len.to_le_bytes());
            assert_eq!(
                cuModuleLoadFatBinary(&mut m, only_elf.as_ptr().cast()),
                code::NO_BINARY_FOR_GPU
            );
            // An entry whose payload runs past the fatbin is refused, not read.
            let mut lying = fatbin_with_ptx(include_str!("../../kernels/vector_add.ptx"));
            lying[24..32].copy_from_slice(&(1u64 << 40).to_le_bytes());
            assert_eq!(
                cuModuleLoadFatBinary(&mut m, lying.as_ptr().cast()),
                code::INVALID_IMAGE
            );
        }
    });
    no_leaks();
}
