//! The linker (`cuLink*`) through the C ABI: two `-rdc` PTX units resolved against
//! each other and launched; the logs of an unresolved symbol, a duplicate
//! definition and a syntax error; internal names kept apart; inputs softcuda cannot
//! link refused; the image self-contained; link states counted.

mod common;

use common::{no_leaks, ok, serial};
use softcuda::api::{context::*, link::*, memory::*, module::*};
use softcuda::control;
use softcuda::types::*;
use std::ffi::{CStr, c_char, c_uint, c_void};

const A: &str = include_str!("../../kernels/link_a.ptx");
const B: &str = include_str!("../../kernels/link_b.ptx");

const PTX: c_uint = 1;
const LOG: usize = 4096;

/// A link with error and info logs (verbose); the logs and option arrays live in the box.
struct Link {
    state: CUlinkState,
    error: Box<[c_char; LOG]>,
    info: Box<[c_char; LOG]>,
    _options: Box<[c_uint; 5]>,
    _values: Box<[*mut c_void; 5]>,
}

impl Link {
    fn new() -> Link {
        let mut error = Box::new([0 as c_char; LOG]);
        let mut info = Box::new([0 as c_char; LOG]);
        let mut options = Box::new([5, 6, 3, 4, 12]);
        let mut values = Box::new([
            error.as_mut_ptr().cast(),
            LOG as *mut c_void,
            info.as_mut_ptr().cast(),
            LOG as *mut c_void,
            std::ptr::without_provenance_mut(1), // CU_JIT_LOG_VERBOSE = 1
        ]);
        let mut state = std::ptr::null_mut();
        // SAFETY: valid arrays of 5 options, which outlive the link (boxed).
        ok(unsafe { cuLinkCreate_v2(5, options.as_mut_ptr(), values.as_mut_ptr(), &mut state) });
        Link {
            state,
            error,
            info,
            _options: options,
            _values: values,
        }
    }

    fn add(&self, kind: c_uint, data: &[u8], name: &CStr) -> CUresult {
        // SAFETY: `data` holds `data.len()` bytes; a NUL-terminated name; no options.
        unsafe {
            cuLinkAddData_v2(
                self.state,
                kind,
                data.as_ptr().cast_mut().cast(),
                data.len(),
                name.as_ptr(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        }
    }

    fn complete(&self) -> Result<Vec<u8>, CUresult> {
        let (mut image, mut size) = (std::ptr::null_mut(), 0usize);
        // SAFETY: valid out-pointers.
        let r = unsafe { cuLinkComplete(self.state, &mut image, &mut size) };
        if r != code::SUCCESS {
            return Err(r);
        }
        // SAFETY: the image holds `size` bytes until cuLinkDestroy.
        Ok(unsafe { std::slice::from_raw_parts(image.cast::<u8>(), size) }.to_vec())
    }

    fn log(buf: &[c_char; LOG]) -> String {
        // SAFETY: softcuda NUL-terminates what it writes; the buffer starts zeroed.
        unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        // SAFETY: the link this value created.
        ok(unsafe { cuLinkDestroy(self.state) });
    }
}

fn ctx(dev: CUdevice) -> CUcontext {
    let mut c = std::ptr::null_mut();
    // SAFETY: a valid out-pointer.
    ok(unsafe { cuCtxCreate_v2(&mut c, 0, dev) });
    c
}

/// Runs `name` of module `m` on (x, y) slices: y = f(x), one block of 32.
fn run(m: CUmodule, name: &CStr, x: &[f32], y_len: usize) -> Vec<f32> {
    // SAFETY: softcuda's exports with valid pointers; the parameters are two
    // {ptr, len} slices (or one for `read_factor`), as the kernels declare.
    unsafe {
        let mut f = std::ptr::null_mut();
        ok(cuModuleGetFunction(&mut f, m, name.as_ptr()));
        let (mut dx, mut dy) = (0, 0);
        ok(cuMemAlloc_v2(&mut dx, 4 * x.len().max(1)));
        ok(cuMemAlloc_v2(&mut dy, 4 * y_len));
        ok(cuMemcpyHtoD_v2(dx, x.as_ptr().cast(), 4 * x.len()));
        let mut sx: [u64; 2] = [dx, x.len() as u64];
        let mut sy: [u64; 2] = [dy, y_len as u64];
        let mut params: Vec<*mut c_void> = if x.is_empty() {
            vec![(&raw mut sy).cast()]
        } else {
            vec![(&raw mut sx).cast(), (&raw mut sy).cast()]
        };
        ok(cuLaunchKernel(
            f,
            1,
            1,
            1,
            32,
            1,
            1,
            0,
            std::ptr::null_mut(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        ));
        let mut y = vec![0f32; y_len];
        ok(cuMemcpyDtoH_v2(y.as_mut_ptr().cast(), dy, 4 * y_len));
        ok(cuMemFree_v2(dx));
        ok(cuMemFree_v2(dy));
        y
    }
}

fn load(image: &[u8]) -> CUmodule {
    let mut m = std::ptr::null_mut();
    // SAFETY: a NUL-terminated image (the linked image ends in NUL).
    ok(unsafe { cuModuleLoadData(&mut m, image.as_ptr().cast()) });
    m
}

#[test]
fn two_units_link_into_a_module_that_launches() {
    let _g = serial();
    let c = ctx(0);
    let image = {
        let link = Link::new();
        assert_eq!(control::live_counts().link_states, 1);
        ok(link.add(PTX, A.as_bytes(), c"link_a.ptx"));
        ok(link.add(PTX, B.as_bytes(), c"link_b.ptx"));
        let image = link.complete().unwrap();
        assert_eq!(Link::log(&link.error), "");
        let info = Link::log(&link.info);
        assert!(info.contains("Compiling entry function 'scale'"), "{info}");
        image
    };
    assert_eq!(control::live_counts().link_states, 0);
    // The image outlives its link: it is self-contained.
    let m = load(&image);
    let x = [1.0f32, 2.0, -1.0];
    assert_eq!(run(m, c"scale", &x, 3), [4.0, 7.0, -2.0]);
    assert_eq!(run(m, c"read_factor", &[], 1), [3.0]);
    let mut count = 0;
    // SAFETY: valid out-pointer and module.
    ok(unsafe { cuModuleGetFunctionCount(&mut count, m) });
    assert_eq!(count, 2);
    // SAFETY: the module and context this test made.
    unsafe {
        ok(cuModuleUnload(m));
        ok(cuCtxDestroy_v2(c));
    }
    no_leaks();
}

#[test]
fn an_unresolved_symbol_is_an_invalid_image_whose_log_names_it() {
    let _g = serial();
    let c = ctx(0);
    {
        let link = Link::new();
        ok(link.add(PTX, A.as_bytes(), c"link_a.ptx"));
        assert_eq!(link.complete(), Err(code::INVALID_IMAGE));
        let log = Link::log(&link.error);
        assert!(
            log.contains("nvlink error   : Undefined reference to 'scaled' in 'link_a.ptx'"),
            "{log}"
        );
        assert!(log.contains("'scale_factor'"), "{log}");
    }
    {
        let link = Link::new();
        ok(link.add(PTX, A.as_bytes(), c"link_a.ptx"));
        ok(link.add(PTX, B.as_bytes(), c"b1.ptx"));
        ok(link.add(PTX, B.as_bytes(), c"b2.ptx"));
        assert_eq!(link.complete(), Err(code::INVALID_IMAGE));
        let log = Link::log(&link.error);
        assert!(
            log.contains("Multiple definition of 'scaled' in 'b2.ptx', first defined in 'b1.ptx'"),
            "{log}"
        );
    }
    {
        // A declaration that disagrees with its definition.
        let bad_b = B.replace(".f32 scale_factor", ".u64 scale_factor");
        let link = Link::new();
        ok(link.add(PTX, A.as_bytes(), c"link_a.ptx"));
        ok(link.add(PTX, bad_b.as_bytes(), c"link_b.ptx"));
        assert_eq!(link.complete(), Err(code::INVALID_IMAGE));
        let log = Link::log(&link.error);
        assert!(
            log.contains("Declaration of 'scale_factor' in 'link_a.ptx' does not match"),
            "{log}"
        );
    }
    // SAFETY: the context this test made.
    ok(unsafe { cuCtxDestroy_v2(c) });
    no_leaks();
}

#[test]
fn input_errors_name_the_input_and_unlinkable_inputs_are_refused() {
    let _g = serial();
    let c = ctx(0);
    {
        let link = Link::new();
        let broken = A.replace("ret;", "frobnicate;");
        assert_eq!(
            link.add(PTX, broken.as_bytes(), c"broken.ptx"),
            code::SUCCESS
        );
        // Unknown instructions are found when the program is compiled: the log names
        // the input and its line.
        ok(link.add(PTX, B.as_bytes(), c"link_b.ptx"));
        assert_eq!(link.complete(), Err(code::INVALID_PTX));
        let log = Link::log(&link.error);
        assert!(log.contains("ptxas broken.ptx, line "), "{log}");
        assert!(log.contains("frobnicate"), "{log}");
    }
    {
        let link = Link::new();
        let syntax = A.replace(".visible .entry scale(", ".visible .entry scale((");
        assert_eq!(
            link.add(PTX, syntax.as_bytes(), c"syntax.ptx"),
            code::INVALID_PTX
        );
        assert!(Link::log(&link.error).contains("ptxas syntax.ptx, line 21"));
        // Inputs softcuda has no way to link.
        let elf = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0";
        for kind in [0, 3, 4] {
            assert_eq!(link.add(kind, elf, c"x.cubin"), code::NOT_SUPPORTED);
        }
        assert_eq!(link.add(5, b"BC\xc0\xde", c"x.nvvm"), code::NOT_SUPPORTED);
        assert_eq!(link.add(9, A.as_bytes(), c"x"), code::INVALID_VALUE);
        assert_eq!(
            link.add(2, b"not a fatbin at all", c"x.fatbin"),
            code::INVALID_IMAGE
        );
        // Nothing was added: completing links nothing.
        assert_eq!(link.complete(), Err(code::INVALID_IMAGE));
        assert!(Link::log(&link.error).contains("No input to link"));
    }
    // SAFETY: bad handles and pointers are refused, not dereferenced.
    unsafe {
        assert_eq!(cuLinkDestroy(std::ptr::null_mut()), code::INVALID_HANDLE);
        let mut s = std::ptr::null_mut();
        ok(cuLinkCreate_v2(
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut s,
        ));
        assert_eq!(
            cuLinkComplete(s, std::ptr::null_mut(), std::ptr::null_mut()),
            code::INVALID_VALUE
        );
        ok(cuLinkDestroy(s));
        assert_eq!(cuLinkDestroy(s), code::INVALID_HANDLE);
        ok(cuCtxDestroy_v2(c));
        // Without a context there is no device to link for.
        assert_eq!(
            cuLinkCreate_v2(0, std::ptr::null_mut(), std::ptr::null_mut(), &mut s),
            code::INVALID_CONTEXT
        );
    }
    no_leaks();
}

#[test]
fn internal_names_of_two_units_stay_apart_and_images_link_as_libraries() {
    let _g = serial();
    let c = ctx(0);
    let unit = |k: &str, v: u32| {
        format!(
            ".version 8.0\n.target sm_80\n.address_size 64\n\
             .global .align 4 .u32 counter = {v};\n\
             .func (.param .b32 r) get()\n{{\n.reg .b32 %r<2>;\nld.global.u32 %r1, [counter];\n\
             st.param.b32 [r], %r1;\nret;\n}}\n\
             .visible .entry {k}(.param .u64 out)\n{{\n.reg .b32 %r<2>;\n.reg .b64 %rd<2>;\n\
             ld.param.u64 %rd1, [out];\n{{\n.param .b32 rv;\ncall (rv), get, ();\n\
             ld.param.b32 %r1, [rv];\n}}\nst.global.u32 [%rd1], %r1;\nret;\n}}\n"
        )
    };
    let lib_image = {
        let link = Link::new();
        ok(link.add(PTX, unit("first", 11).as_bytes(), c"one.ptx"));
        link.complete().unwrap()
    };
    let link = Link::new();
    // A linked image is a library input (softcuda's own format).
    ok(link.add(4, &lib_image, c"lib"));
    ok(link.add(PTX, unit("second", 22).as_bytes(), c"two.ptx"));
    let m = load(&link.complete().unwrap());
    for (k, want) in [(c"first", 11u32), (c"second", 22)] {
        // SAFETY: softcuda's exports with valid pointers; one u64 parameter.
        unsafe {
            let mut f = std::ptr::null_mut();
            ok(cuModuleGetFunction(&mut f, m, k.as_ptr()));
            let mut d = 0;
            ok(cuMemAlloc_v2(&mut d, 4));
            let mut params = [(&raw mut d).cast::<c_void>()];
            ok(cuLaunchKernel(
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
            ));
            let mut v = 0u32;
            ok(cuMemcpyDtoH_v2((&raw mut v).cast(), d, 4));
            assert_eq!(v, want);
            ok(cuMemFree_v2(d));
        }
    }
    drop(link);
    // SAFETY: the module and context this test made.
    unsafe {
        ok(cuModuleUnload(m));
        ok(cuCtxDestroy_v2(c));
    }
    no_leaks();
}

#[test]
fn the_device_runtime_calls_of_conditional_ptx_are_builtins_at_link() {
    let _g = serial();
    let c = ctx(0);
    {
        let link = Link::new();
        ok(link.add(
            PTX,
            include_str!("../../kernels/conditional.ptx").as_bytes(),
            c"conditional.ptx",
        ));
        let m = load(&link.complete().unwrap());
        let mut f = std::ptr::null_mut();
        // SAFETY: valid out-pointer and module, a NUL-terminated name.
        ok(unsafe { cuModuleGetFunction(&mut f, m, c"countdown".as_ptr()) });
        // SAFETY: the module this test loaded.
        ok(unsafe { cuModuleUnload(m) });
    }
    // SAFETY: the context this test made.
    ok(unsafe { cuCtxDestroy_v2(c) });
    no_leaks();
}
