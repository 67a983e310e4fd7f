//! The library API (`cuLibrary*`, `cuKernel*`) through the C ABI: loaded without a
//! context, materialised per context (a function and a copy of the variables in
//! each), kernel enumeration, names, parameters and per-device attributes, unload,
//! and the refusals.

mod common;

use common::{no_leaks, ok, serial};
use softcuda::api::{context::*, library::*, memory::*, module::*};
use softcuda::control;
use softcuda::types::*;
use std::ffi::{CStr, c_int, c_uint, c_void};

const LIB: &str = concat!(
    ".version 8.0\n.target sm_80\n.address_size 64\n",
    ".visible .global .align 4 .u32 counter = 5;\n",
    ".visible .entry bump(.param .u32 by)\n{\n.reg .b32 %r<4>;\n",
    "ld.param.u32 %r1, [by];\nld.global.u32 %r2, [counter];\nadd.u32 %r3, %r2, %r1;\n",
    "st.global.u32 [counter], %r3;\nret;\n}\n",
    ".visible .entry copy(.param .u64 out, .param .u64 n)\n{\n.reg .b32 %r<2>;\n.reg .b64 %rd<2>;\n",
    "ld.param.u64 %rd1, [out];\nld.global.u32 %r1, [counter];\nst.global.u32 [%rd1], %r1;\nret;\n}\n\0"
);

fn load_lib(text: &str) -> Result<CUlibrary, CUresult> {
    let mut l = std::ptr::null_mut();
    // SAFETY: NUL-terminated PTX; no options.
    let r = unsafe {
        cuLibraryLoadData(
            &mut l,
            text.as_ptr().cast(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    };
    if r == code::SUCCESS { Ok(l) } else { Err(r) }
}

fn kernel(l: CUlibrary, name: &CStr) -> Result<CUkernel, CUresult> {
    let mut k = std::ptr::null_mut();
    // SAFETY: valid out-pointer, NUL-terminated name.
    let r = unsafe { cuLibraryGetKernel(&mut k, l, name.as_ptr()) };
    if r == code::SUCCESS { Ok(k) } else { Err(r) }
}

fn function(k: CUkernel) -> Result<CUfunction, CUresult> {
    let mut f: CUfunction = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    let r = unsafe { cuKernelGetFunction(&mut f, k) };
    if r == code::SUCCESS { Ok(f) } else { Err(r) }
}

fn global(l: CUlibrary) -> (CUdeviceptr, usize) {
    let (mut p, mut n) = (0, 0);
    // SAFETY: valid out-pointers.
    ok(unsafe { cuLibraryGetGlobal(&mut p, &mut n, l, c"counter".as_ptr()) });
    (p, n)
}

fn launch(f: CUfunction, params: &mut [*mut c_void]) {
    // SAFETY: `params` matches the kernel's parameters (the callers' contract).
    ok(unsafe {
        cuLaunchKernel(
            f,
            1,
            1,
            1,
            1,
            1,
            1,
            0,
            std::ptr::null_mut(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    });
}

fn read_u32(p: CUdeviceptr) -> u32 {
    let mut v = 0u32;
    // SAFETY: 4 bytes of device memory at `p`.
    ok(unsafe { cuMemcpyDtoH_v2((&raw mut v).cast(), p, 4) });
    v
}

#[test]
fn a_library_is_loaded_once_and_materialised_in_each_context() {
    let _g = serial();
    // No context needed to load.
    let l = load_lib(LIB).unwrap();
    assert_eq!(control::live_counts().libraries, 1);
    assert_eq!(control::live_counts().modules, 0);
    let mut count: c_uint = 0;
    // SAFETY: valid out-pointers and handles throughout.
    unsafe {
        ok(cuLibraryGetKernelCount(&mut count, l));
        assert_eq!(count, 2);
        let mut ks = [std::ptr::null_mut(); 2];
        ok(cuLibraryEnumerateKernels(ks.as_mut_ptr(), 2, l));
        let bump = kernel(l, c"bump").unwrap();
        assert_eq!(ks[0], bump);
        assert_eq!(ks[1], kernel(l, c"copy").unwrap());
        let mut name = std::ptr::null();
        ok(cuKernelGetName(&mut name, bump));
        assert_eq!(CStr::from_ptr(name), c"bump");
        let mut back = std::ptr::null_mut();
        ok(cuKernelGetLibrary(&mut back, bump));
        assert_eq!(back, l);
        let (mut off, mut size) = (0, 0);
        ok(cuKernelGetParamInfo(ks[1], 1, &mut off, &mut size));
        assert_eq!((off, size), (8, 8));
        assert_eq!(
            cuKernelGetParamInfo(ks[1], 2, &mut off, &mut size),
            code::INVALID_VALUE
        );
        // Without a context there is nothing to materialise in.
        assert_eq!(function(bump), Err(code::INVALID_CONTEXT));

        let mut ctxs = [std::ptr::null_mut(); 2];
        let mut addrs = [0; 2];
        for dev in 0..2 {
            ok(cuCtxCreate_v2(&mut ctxs[dev], 0, dev as CUdevice));
            let f = function(bump).unwrap();
            assert_eq!(function(bump).unwrap(), f, "the same function every time");
            let (p, n) = global(l);
            assert_eq!(n, 4);
            addrs[dev] = p;
            assert_eq!(read_u32(p), 5);
            let mut by = 10u32 * (dev as u32 + 1);
            launch(f, &mut [(&raw mut by).cast()]);
            assert_eq!(read_u32(p), 5 + by);
            let mut m = std::ptr::null_mut();
            ok(cuLibraryGetModule(&mut m, l));
            let mut fm = std::ptr::null_mut();
            ok(cuFuncGetModule(&mut fm, f));
            assert_eq!(m, fm);
            ok(cuCtxPopCurrent_v2(&mut ctxs[dev]));
        }
        assert_ne!(addrs[0], addrs[1], "one copy of the variables per context");
        assert_eq!(control::live_counts().modules, 2);
        // Context 0's copy was not touched by context 1's launch.
        ok(cuCtxPushCurrent_v2(ctxs[0]));
        assert_eq!(read_u32(addrs[0]), 15);
        ok(cuCtxPopCurrent_v2(&mut ctxs[0]));

        ok(cuLibraryUnload(l));
        assert_eq!(control::live_counts().modules, 0);
        assert_eq!(function(bump), Err(code::INVALID_HANDLE));
        assert_eq!(cuLibraryUnload(l), code::INVALID_HANDLE);
        for c in ctxs {
            ok(cuCtxDestroy_v2(c));
        }
    }
    no_leaks();
}

#[test]
fn kernel_attributes_are_per_device() {
    let _g = serial();
    let l = load_lib(LIB).unwrap();
    let k = kernel(l, c"bump").unwrap();
    // SAFETY: valid out-pointers and handles throughout.
    unsafe {
        let mut v: c_int = 0;
        ok(cuKernelGetAttribute(&mut v, 4, k, 0)); // NUM_REGS
        assert!(v > 0);
        assert_eq!(cuKernelGetAttribute(&mut v, 4, k, 7), code::INVALID_DEVICE);
        assert_eq!(cuKernelGetAttribute(&mut v, 99, k, 0), code::INVALID_VALUE);
        ok(cuKernelSetAttribute(8, 100 * 1024, k, 0));
        ok(cuKernelGetAttribute(&mut v, 8, k, 0));
        assert_eq!(v, 100 * 1024);
        ok(cuKernelGetAttribute(&mut v, 8, k, 1));
        assert_eq!(v, 48 * 1024, "device 1 keeps the default");
        assert_eq!(cuKernelSetAttribute(8, 1 << 30, k, 0), code::INVALID_VALUE);
        assert_eq!(cuKernelSetAttribute(0, 1, k, 0), code::NOT_SUPPORTED);
        let mut c = std::ptr::null_mut();
        ok(cuCtxCreate_v2(&mut c, 0, 0));
        let f = function(k).unwrap();
        ok(cuFuncGetAttribute(&mut v, 8, f));
        assert_eq!(v, 100 * 1024, "the function of device 0 has the opt-in");
        ok(cuKernelSetAttribute(8, 64 * 1024, k, 0));
        ok(cuFuncGetAttribute(&mut v, 8, f));
        assert_eq!(v, 64 * 1024, "and follows it");
        ok(cuLibraryUnload(l));
        ok(cuCtxDestroy_v2(c));
    }
    no_leaks();
}

#[test]
fn refusals() {
    let _g = serial();
    // SAFETY: softcuda's exports with valid or deliberately bad arguments.
    unsafe {
        assert_eq!(load_lib("this is not PTX\0"), Err(code::INVALID_PTX));
        assert_eq!(load_lib("\x7fELF\0\0\0\0"), Err(code::NO_BINARY_FOR_GPU));
        let mut l = std::ptr::null_mut();
        let mut opt = [0 as c_uint];
        let mut val = [std::ptr::null_mut::<c_void>()];
        assert_eq!(
            cuLibraryLoadData(
                &mut l,
                LIB.as_ptr().cast(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
                opt.as_mut_ptr(),
                val.as_mut_ptr(),
                1,
            ),
            code::NOT_SUPPORTED
        );
        assert_eq!(
            cuLibraryLoadFromFile(
                &mut l,
                c"/nonexistent/lib.ptx".as_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            ),
            code::FILE_NOT_FOUND
        );
        // A library for sm_90 loads (device 0 is 9.0) but has no code for device 1 (8.0).
        let sm90 = LIB.replace("sm_80", "sm_90");
        let l = load_lib(&sm90).unwrap();
        assert_eq!(kernel(l, c"nope"), Err(code::NOT_FOUND));
        let k = kernel(l, c"copy").unwrap();
        let mut c = std::ptr::null_mut();
        ok(cuCtxCreate_v2(&mut c, 0, 1));
        assert_eq!(function(k), Err(code::NO_BINARY_FOR_GPU));
        ok(cuCtxDestroy_v2(c));
        ok(cuCtxCreate_v2(&mut c, 0, 0));
        function(k).unwrap();
        // Destroying the context takes its module; the library stays.
        ok(cuCtxDestroy_v2(c));
        assert_eq!(control::live_counts().modules, 0);
        ok(cuCtxCreate_v2(&mut c, 0, 0));
        function(k).unwrap();
        assert_eq!(control::live_counts().modules, 1);
        ok(cuLibraryUnload(l));
        ok(cuCtxDestroy_v2(c));
        assert_eq!(cuLibraryUnload(std::ptr::null_mut()), code::INVALID_HANDLE);
        assert_eq!(function(std::ptr::null_mut()), Err(code::INVALID_HANDLE));
    }
    no_leaks();
}

/// `cuLibraryLoadData` of `LIB` with one JIT option.
fn load_with(option: c_uint, value: usize) -> Result<CUlibrary, CUresult> {
    let mut l = std::ptr::null_mut();
    let mut opt = [option];
    let mut val = [std::ptr::without_provenance_mut::<c_void>(value)];
    // SAFETY: NUL-terminated PTX; one JIT option, alive during the call.
    let r = unsafe {
        cuLibraryLoadData(
            &mut l,
            LIB.as_ptr().cast(),
            opt.as_mut_ptr(),
            val.as_mut_ptr(),
            1,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    };
    if r == code::SUCCESS { Ok(l) } else { Err(r) }
}

#[test]
fn jit_options_out_of_range_are_invalid_values() {
    let _g = serial();
    const OPTIMIZATION_LEVEL: c_uint = 7;
    const TARGET: c_uint = 9;
    for (option, value) in [
        (OPTIMIZATION_LEVEL, 5),
        (OPTIMIZATION_LEVEL, 99),
        (TARGET, 10),
        (TARGET, 31),
        (TARGET, u32::MAX as usize),
        (TARGET, 0x1_0000 + 80), // sm_80a does not exist
        (TARGET, 0x2_0000 + 90), // nor sm_90f
        (TARGET, 0x3_0000 + 90),
    ] {
        assert_eq!(
            load_with(option, value),
            Err(code::INVALID_VALUE),
            "option {option} = {value:#x}"
        );
    }
    for (option, value) in [
        (OPTIMIZATION_LEVEL, 0),
        (OPTIMIZATION_LEVEL, 4),
        (TARGET, 80),
        (TARGET, 90),
        (TARGET, 0x1_0000 + 90),  // sm_90a, compiled as sm_90
        (TARGET, 0x2_0000 + 100), // sm_100f
    ] {
        let l = load_with(option, value).unwrap();
        // SAFETY: the library just loaded.
        ok(unsafe { cuLibraryUnload(l) });
    }
    no_leaks();
}
