//! Modules — from PTX text, cubin or fatbin, as bytes or from a file — and kernels
//! declared with their typed signature, and module-scope variables.
//!
//! Binary images are checked before the driver sees them, because
//! `cuModuleLoadData` takes a bare pointer: an ELF (cubin) whose program headers,
//! section headers, segments or sections, or a fatbin whose entries (and the
//! uncompressed ELF files inside them) lie past the end of the bytes, or an ELF whose
//! section-name table, string tables, symbol tables, relocation sections or the
//! indices between them are inconsistent, is [`CudaError::InvalidImage`]. Not
//! checked, and left to the driver's own parser: compressed fatbin entries, relocation
//! offsets, symbol values and sizes, and the `.nv.info` attributes — the crate relies
//! on the driver not to read or write outside the image for those (an assumption
//! listed in `docs/architecture.md`, "Soundness").
//! A file (`load_module_file`) must be a regular file of at most 1 GiB, and kernel and
//! variable names must not contain NUL: [`CudaError::InvalidArgument`] otherwise.
//!
//! Loading gives [`JitLog`] (defined in [`jit`](crate::jit), with [`JitOptions`]):
//! on failure inside [`CudaError::JitFailed`], whose `Display` shows the diagnostics;
//! on success from [`Module::info_log`]. Declaring a kernel's signature
//! ([`Module::function`]) is the one `unsafe` step of a launch; it is checked at once
//! against `cuFuncGetParamInfo` (drivers 12.4+; from 13.2 for exactly the number of
//! parameters `cuFuncGetParamCount` reports, so that a failed query is the driver's
//! error and never a shorter list) or, for modules from PTX text, the `.entry`
//! parameter list ([`entry_params`]): count, size and offset of every parameter, a
//! mismatch naming the parameter. A kernel that synchronises its whole
//! grid is declared with [`Module::cooperative_function`] instead, and launches only
//! cooperatively ([`Cooperative`]). Function attributes and occupancy queries are
//! methods of [`Function`] too.

mod attributes;
pub(crate) mod file;
pub(crate) mod image;
pub(crate) mod key;

pub use crate::jit::{JitDiagnostic, JitLog, JitOptions, Severity};
use crate::ptx_params::entry_names;
pub use crate::ptx_params::entry_params;
pub use key::FunctionKey;

use crate::context::CurrentContext;
use crate::context::Tied;
use crate::error::{CudaError, check};
use crate::jit::JitCall;
use crate::loader::Driver;
use crate::memory::{DeviceCopy, short_type_name};
use crate::signature::{Cooperative, LaunchKind, Plain, Signature};
use crate::sys::{CUdeviceptr, CUfunction, CUmodule, CUresult};
use crate::version::DriverVersion;
use core::marker::PhantomData;
use image::{Image, image_kind, invalid};
use std::ffi::CString;
use std::path::Path;

/// A loaded module of the current context.
pub struct Module<'a> {
    driver: &'static Driver,
    raw: CUmodule,
    info: JitLog,
    /// The PTX text, kept to check kernel signatures when the driver cannot.
    ptx: Option<String>,
    /// Process-unique: the owner of its [`FunctionKey`]s.
    identity: u64,
    _tied: Tied<'a>,
}

impl core::fmt::Debug for Module<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Module")
            .field("raw", &self.raw)
            .field("from_ptx", &self.ptx.is_some())
            .finish()
    }
}

impl<'ctx> CurrentContext<'ctx> {
    /// Loads PTX text, JIT-compiling it for the current device.
    pub fn load_ptx(&self, ptx: &str, options: &JitOptions) -> Result<Module<'_>, CudaError> {
        let text = ptx.trim_end_matches('\0');
        if text.contains('\0') {
            return Err(invalid("PTX text must not contain NUL characters"));
        }
        if image_kind(text.as_bytes()) != Ok(Image::Ptx) {
            return Err(invalid(
                "text that starts like a binary image (ELF or fatbin) is not PTX",
            ));
        }
        self.load(text.as_bytes(), Some(text.to_owned()), options)
    }

    /// Loads a module image: a cubin (ELF), a fatbin, or PTX text (UTF-8), told apart
    /// by their first bytes. Signatures of kernels from binary images are checked
    /// only where the driver has `cuFuncGetParamInfo` (12.4+); see
    /// [`Module::function`].
    pub fn load_module(&self, image: &[u8], options: &JitOptions) -> Result<Module<'_>, CudaError> {
        match image_kind(image)? {
            Image::Ptx => self.load_ptx(
                core::str::from_utf8(image)
                    .map_err(|_| invalid("neither a cubin, a fatbin, nor PTX text (UTF-8)"))?,
                options,
            ),
            _ => self.load(image, None, options),
        }
    }

    /// Loads the module image in the file at `path` (see
    /// [`load_module`](CurrentContext::load_module)). A path that is not a regular
    /// file, or a file over 1 GiB, is [`CudaError::InvalidArgument`]; one that cannot
    /// be read, [`CudaError::ReadFile`].
    pub fn load_module_file(
        &self,
        path: impl AsRef<Path>,
        options: &JitOptions,
    ) -> Result<Module<'_>, CudaError> {
        let image = file::read_image_file(path.as_ref())?;
        self.load_module(&image, options)
    }

    /// `cuModuleLoadDataEx` on a copy of `image`, 8-byte aligned and NUL-terminated.
    fn load(
        &self,
        image: &[u8],
        ptx: Option<String>,
        options: &JitOptions,
    ) -> Result<Module<'_>, CudaError> {
        load_image(self.driver(), image, ptx, options)
    }
}

/// `cuModuleLoadDataEx` on a copy of `image`, 8-byte aligned and NUL-terminated, into
/// the current context: the caller ties the module's lifetime `'a` to that context's
/// token. `image` is PTX text, or a binary image whose headers `image_kind` checked
/// against its length (or one the driver itself made: a completed link).
pub(crate) fn load_image<'a>(
    driver: &'static Driver,
    image: &[u8],
    ptx: Option<String>,
    options: &JitOptions,
) -> Result<Module<'a>, CudaError> {
    let aligned = aligned_copy(image);
    let mut jit = JitCall::new(options)?;
    let mut raw = CUmodule::NULL;
    // SAFETY: a NUL-terminated, 8-byte aligned image (see above); `JitCall` holds
    // keys and values of the same length, and log buffers of the sizes it announces,
    // which outlive the call.
    let r = unsafe {
        driver.table().cuModuleLoadDataEx()?(
            &mut raw,
            aligned.as_ptr().cast(),
            jit.len(),
            jit.keys(),
            jit.values(),
        )
    };
    if r != CUresult::CUDA_SUCCESS {
        return Err(jit.failure(r));
    }
    crate::leaks::created(crate::leaks::Kind::Modules, raw);
    Ok(Module {
        driver,
        raw,
        info: jit.info_log(),
        ptx,
        identity: key::next_identity(),
        _tied: PhantomData,
    })
}

/// `name` (of a kernel, a variable, a link input) as a C string for the driver: a NUL
/// byte in it is [`CudaError::InvalidArgument`] for `name`, found before any driver
/// call.
pub(crate) fn c_name(name: &str) -> Result<CString, CudaError> {
    CString::new(name).map_err(|_| CudaError::InvalidArgument {
        parameter: "name",
        rule: "must not contain a NUL byte",
    })
}

/// A copy of `image`, 8-byte aligned, with a NUL after it.
pub(crate) fn aligned_copy(image: &[u8]) -> Vec<u64> {
    let mut aligned = vec![0u64; image.len() / 8 + 1];
    // SAFETY: `aligned` has at least `image.len() + 1` bytes; the last stays NUL.
    unsafe {
        core::ptr::copy_nonoverlapping(
            image.as_ptr(),
            aligned.as_mut_ptr().cast::<u8>(),
            image.len(),
        )
    };
    aligned
}

impl Module<'_> {
    /// The driver's handle.
    pub fn raw(&self) -> CUmodule {
        self.raw
    }

    /// What the JIT reported on success (with `JitOptions::verbose`: registers used, ...).
    pub fn info_log(&self) -> &JitLog {
        &self.info
    }

    /// The kernel `name`, declared with its parameter types `S` — a tuple of
    /// [`launch`](crate::launch) parameter kinds such as `(In<f32>, Out<f32>, u32)`.
    /// The declaration is checked against the driver's parameter info, or the PTX
    /// `.entry` list: a different count, size or offset is
    /// [`CudaError::SignatureMismatch`] naming the parameter. When neither is at
    /// hand (a binary image on a driver older than 12.4) the lookup is
    /// [`CudaError::NotSupported`] for `cuFuncGetParamInfo`; use
    /// [`function_unchecked`](Module::function_unchecked) there. PTX whose `.entry`
    /// list cannot be read is [`CudaError::InvalidImage`].
    ///
    /// # Safety
    /// The driver cannot check what a kernel does, so the caller promises it. For
    /// **every** argument tuple that [`Function::launch`] accepts for `S` — any views,
    /// of any length including zero, for the buffer parameters; any values for the
    /// value parameters; any grid, block and dynamic shared memory size — the kernel:
    ///
    /// - reads an [`In`](crate::launch::In) parameter's memory only below the length
    ///   passed with it, and never writes it;
    /// - reads and writes an [`Out`](crate::launch::Out) parameter's memory only below
    ///   the length passed with it;
    /// - for a signature with raw pointer parameters and one
    ///   [`Len<I>`](crate::launch::Len) (the only pointer signatures the safe launches
    ///   take), reads a [`Ptr`](crate::launch::Ptr) parameter's memory, and reads and
    ///   writes a [`PtrMut`](crate::launch::PtrMut) parameter's memory, only at element
    ///   indices `i` with `0 <= i < n`, `n` the `Len` argument's value, and never
    ///   writes through a `Ptr` — for every launch the safe layer accepts: any
    ///   `n >= 0`, any views of at least `n` elements, any grid, block and dynamic
    ///   shared memory size whose threads in all (grid × block) number at most
    ///   `I::MAX`. `I` is exactly the C type of the kernel's parameter, signedness
    ///   included (`int` is `i32`, `unsigned` `u32`, `long long` `i64`, `size_t`
    ///   `u64`). The thread bound makes the usual `int i = blockIdx.x * blockDim.x +
    ///   threadIdx.x; if (i < n)` keep it. The bound follows the `Len`'s type, not
    ///   the kernel's index: an index that can still wrap does not keep it — an `int`
    ///   index under a `long long n` (`Len<i64>` admits 2^31 threads and more), two
    ///   or more elements per thread computed in `int`
    ///   (`2 * (blockIdx.x * blockDim.x) + threadIdx.x`), a grid-stride loop in `int` whose `i += stride` can pass
    ///   `INT_MAX` when `n` is near it. Compute such an index in a type as wide as
    ///   the length (and give the kernel a `long long n` with `Len<i64>` if needed).
    ///   Only sizes and offsets, and where the PTX is at hand that a pointer or a
    ///   length is one integer, are checked at lookup: signedness cannot be (NVRTC
    ///   writes `.u32` for `int`), so it is part of this promise;
    /// - dereferences no address it derives from a value parameter or reads from
    ///   memory, and touches no memory but those slices, its own shared and local
    ///   memory, its module's variables, and the arrays of its texture and surface
    ///   parameters (through them);
    /// - passes to `cudaGraphSetConditional` only a parameter declared
    ///   [`ConditionalHandle`](crate::graph::ConditionalHandle) (never a number: the
    ///   device runtime trusts the handle it is given).
    /// - for a tensor-map parameter declared
    ///   [`TensorMapIn<L>`](crate::tensor_map::TensorMapIn) or
    ///   [`TensorMapOut<L>`](crate::tensor_map::TensorMapOut), is correct for every map
    ///   of layout `L` (any dimensions, strides, address, pixel box, L2 promotion and
    ///   fill the builder accepts): it issues TMA operations of `L`'s kind and rank
    ///   with that descriptor only, stages each access in shared memory that holds what
    ///   one access of `L` writes, and stores through the map only when it is declared
    ///   `TensorMapOut<L>` (see [`TensorLayout`](crate::tensor_map::TensorLayout)).
    /// - for a parameter declared [`Texture<E>`](crate::texture::Texture) or
    ///   [`Surface<E>`](crate::texture::Surface), is correct for every object over an
    ///   array of `E`s (any shape, read mode, filtering and addressing): it uses a
    ///   texture handle only in texture instructions (`tex`, `tld4`, `txq`) and a
    ///   surface handle only in surface instructions (`suld`, `sust`, `suq`), stores
    ///   only through a `Surface<E>`, and never uses either handle as an address.
    ///
    /// A kernel that takes its bounds from a plain value parameter (`n` declared
    /// `u32`) cannot keep this: safe code may pass any `n`. Take them from the slices
    /// (`c.len`), as `kernels/slices.cu` does, or declare the pointers
    /// [`Ptr`](crate::launch::Ptr)/[`PtrMut`](crate::launch::PtrMut) and the length
    /// [`Len<I>`](crate::launch::Len), which each launch checks against the views; see
    /// [`launch`](crate::launch) for the C++ side. A pointer kernel no single `Len`
    /// bounds (2-D indexing, one output per block) is declared the same way and
    /// launched only through the `unsafe` `*_unchecked` forms, each of which carries
    /// the promise for its own launch. Nor
    /// can a kernel that synchronises its whole grid (`this_grid().sync()`): it is not
    /// correct for every grid; declare it with
    /// [`cooperative_function`](Module::cooperative_function).
    pub unsafe fn function<S: Signature>(&self, name: &str) -> Result<Function<'_, S>, CudaError> {
        // SAFETY: the caller's promise, forwarded.
        unsafe { self.declare::<S, Plain>(name) }
    }

    /// The kernel `name`, declared with its parameter types `S`, as one that must run
    /// cooperatively: a kernel that synchronises its whole grid
    /// (`cooperative_groups::this_grid().sync()`), which is correct only when every
    /// block of the grid is resident at once. The function it returns launches only
    /// cooperatively ([`Function::launch_cooperative`], or
    /// [`Function::launch_with`] with a cooperative configuration), each launch
    /// checking first that the grid can be resident
    /// ([`CudaError::CooperativeGridTooLarge`]); [`Function::launch`], graph kernel
    /// nodes and captured launches do not take it (CF31). The declaration is checked
    /// as for [`function`](Module::function).
    ///
    /// # Safety
    /// As for [`function`](Module::function), for every argument tuple, grid, block and
    /// dynamic shared memory size that the cooperative launch accepts — every grid
    /// whose blocks are all resident at once — rather than for every grid.
    pub unsafe fn cooperative_function<S: Signature>(
        &self,
        name: &str,
    ) -> Result<Function<'_, S, Cooperative>, CudaError> {
        // SAFETY: the caller's promise, forwarded.
        unsafe { self.declare::<S, Cooperative>(name) }
    }

    /// The kernel `name`, declared as one that must run cooperatively (see
    /// [`cooperative_function`](Module::cooperative_function)), with its parameter
    /// types `S` not checked against the kernel's parameters.
    ///
    /// # Safety
    /// As for [`cooperative_function`](Module::cooperative_function), and `S` must
    /// match the kernel's parameter list exactly: count, sizes and offsets.
    pub unsafe fn cooperative_function_unchecked<S: Signature>(
        &self,
        name: &str,
    ) -> Result<Function<'_, S, Cooperative>, CudaError> {
        // SAFETY: the caller's promise, forwarded.
        unsafe { self.lookup::<S, Cooperative>(name) }
    }

    /// The kernel `name` declared `S` of kind `K`, its layout checked (see
    /// [`function`](Module::function)).
    ///
    /// # Safety
    /// The contract of the public declaration of kind `K`.
    unsafe fn declare<S: Signature, K: LaunchKind>(
        &self,
        name: &str,
    ) -> Result<Function<'_, S, K>, CudaError> {
        // SAFETY: the caller's promise, forwarded; the layout is checked below before
        // the function is returned.
        let f = unsafe { self.lookup::<S, K>(name)? };
        let t = self.driver.table();
        let reported = t.cuFuncGetParamInfo().ok().map(|info| {
            let count = param_count(t.cuFuncGetParamCount().ok().map(|get| {
                // SAFETY: a function of this module and a valid out-pointer.
                move |n: &mut usize| unsafe { get(f.raw, n) }
            }))?;
            // SAFETY: a function of this module and valid out-pointers; an index past
            // the last is INVALID_VALUE.
            collect_params(count, |i, o, s| unsafe { info(f.raw, i, o, s) })
        });
        check_signature::<S>(name, "cuFuncGetParamInfo", reported, self.ptx.as_deref())?;
        Ok(f)
    }

    /// The kernel `name`, declared with its parameter types `S` and not checked
    /// against the kernel's parameters.
    ///
    /// # Safety
    /// As for [`function`](Module::function), and `S` must match the kernel's
    /// parameter list exactly: count, sizes and offsets.
    pub unsafe fn function_unchecked<S: Signature>(
        &self,
        name: &str,
    ) -> Result<Function<'_, S>, CudaError> {
        // SAFETY: the caller's promise, forwarded.
        unsafe { self.lookup::<S, Plain>(name) }
    }

    /// The kernel `name` declared `S` of kind `K`, not checked.
    ///
    /// # Safety
    /// The contract of the public unchecked declaration of kind `K`.
    unsafe fn lookup<S: Signature, K: LaunchKind>(
        &self,
        name: &str,
    ) -> Result<Function<'_, S, K>, CudaError> {
        let cname = c_name(name)?;
        let mut raw = CUfunction::NULL;
        // SAFETY: a valid out-pointer and NUL-terminated name.
        let r = unsafe {
            self.driver.table().cuModuleGetFunction()?(&mut raw, self.raw, cname.as_ptr())
        };
        not_found(r, "kernel", name, "module", || {
            self.ptx.as_deref().map(entry_names).unwrap_or_default()
        })?;
        Ok(Function {
            driver: self.driver,
            raw,
            _m: PhantomData,
            _s: PhantomData,
        })
    }
}

/// Checks the declared signature `S` of kernel `name` against its parameters
/// ((offset, size) each) as the driver reports them (`reported`; `None` when the driver
/// lacks `function`, which reports them), else as the `.entry` of the PTX text `ptx`
/// declares them; with neither, [`CudaError::NotSupported`] naming `function`. A
/// different count, size or offset is [`CudaError::SignatureMismatch`] naming the
/// parameter.
pub(crate) fn check_signature<S: Signature>(
    name: &str,
    function: &'static str,
    reported: Option<Result<Vec<(usize, usize)>, CudaError>>,
    ptx: Option<&str>,
) -> Result<(), CudaError> {
    let actual = match (reported, ptx) {
        (Some(r), _) => r?,
        (None, Some(ptx)) => entry_params(ptx, name).ok_or(invalid(
            "the kernel's `.entry` parameter list in the PTX text could not be read",
        ))?,
        (None, None) => {
            return Err(CudaError::NotSupported {
                function,
                needs: DriverVersion::new(12, 4),
            });
        }
    };
    let expected = crate::signature::layout::<S>();
    let mismatch = |parameter: usize, expected: String, found: String, hint: &'static str| {
        CudaError::SignatureMismatch {
            function: name.to_owned(),
            parameter,
            expected,
            found,
            hint,
        }
    };
    for (i, want) in expected.iter().enumerate() {
        match actual.get(i) {
            None => {
                return Err(mismatch(
                    i,
                    format!("{} bytes at offset {}", want.1, want.0),
                    "no such parameter".into(),
                    "",
                ));
            }
            Some(got) if got != want => {
                return Err(mismatch(
                    i,
                    format!("{} bytes at offset {}", want.1, want.0),
                    format!("{} bytes at offset {}", got.1, got.0),
                    size_hint(want.1, got.1),
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(extra) = actual.get(expected.len()) {
        return Err(mismatch(
            expected.len(),
            "no parameter".into(),
            format!("{} bytes at offset {}", extra.1, extra.0),
            "",
        ));
    }
    // Where the PTX is at hand (whatever reported the layout), a raw pointer or a
    // length must be one integer there (`.u64`, `.u32`, ...), not a float or an
    // array of the same size. Signedness cannot be read: NVRTC writes `.u32` for
    // `int` too, so `Len<i32>` against `Len<u32>` is the declarer's promise.
    let integers = ptx.and_then(|ptx| crate::ptx_params::entry_integers(ptx, name));
    if let Some(integers) = integers {
        for (i, must) in crate::signature::integers::<S>().into_iter().enumerate() {
            if must && integers.get(i) == Some(&false) {
                return Err(mismatch(
                    i,
                    "one integer (`.u64` for a raw pointer, `.u32`/`.s32`/`.u64`/`.s64` for a length)".into(),
                    "a float or an array in the PTX `.entry`".into(),
                    "",
                ));
            }
        }
    }
    Ok(())
}

/// What a parameter declared `declared` bytes that has `actual` bytes suggests: the
/// usual mix-up between the slice kinds (`In`/`Out`: a pointer and a length, 16
/// bytes) and a raw pointer (8 bytes), in either direction.
fn size_hint(declared: usize, actual: usize) -> &'static str {
    match (declared, actual) {
        (16, 8) => {
            "; `In<T>`/`Out<T>` are a `{ptr, len}` pair (16 bytes, `Slice<T>` in kernels/include/oxicuda.cuh): a kernel taking a raw pointer (`const T *`, `T *`) and a count is declared with `Ptr<T>`/`PtrMut<T>` and `Len<I>`"
        }
        (8, 16) => {
            "; the kernel takes 16 bytes here, as a `Slice<T>` `{ptr, len}` pair does: declare it `In<T>` (read) or `Out<T>` (written)"
        }
        _ => "",
    }
}

/// [`CudaError::NotFound`] for the driver's `CUDA_ERROR_NOT_FOUND` when looking up
/// the `what` `name` in a `place` that has the names `known` (computed only then);
/// any other failure as it is.
pub(crate) fn not_found(
    r: CUresult,
    what: &'static str,
    name: &str,
    place: &'static str,
    known: impl FnOnce() -> Vec<String>,
) -> Result<(), CudaError> {
    if r == CUresult::CUDA_ERROR_NOT_FOUND {
        return Err(CudaError::NotFound {
            what,
            name: name.to_owned(),
            place,
            known: known(),
        });
    }
    check(r)
}

/// More parameters than a kernel's parameter space (32 764 bytes) can hold.
const MAX_PARAMS: usize = 32_768;

/// The number of parameters `get` (a `cuFuncGetParamCount` or `cuKernelGetParamCount`
/// call, CUDA 13.2+) reports, or `None` when the driver lacks it (`get` is `None`).
pub(crate) fn param_count(
    get: Option<impl FnOnce(&mut usize) -> CUresult>,
) -> Result<Option<usize>, CudaError> {
    let Some(get) = get else {
        return Ok(None);
    };
    let mut n = 0usize;
    check(get(&mut n))?;
    Ok(Some(n))
}

/// (offset, size) of every parameter, from `info(index, &mut offset, &mut size)` (a
/// `cuFuncGetParamInfo` or `cuKernelGetParamInfo` call): for each of the `count`
/// parameters where the driver reports the count ([`param_count`]), so that every
/// failure is the driver's error; else until `info` answers `CUDA_ERROR_INVALID_VALUE`
/// past the last (a failure with that code reads as the end of the list).
pub(crate) fn collect_params(
    count: Option<usize>,
    info: impl Fn(usize, &mut usize, &mut usize) -> CUresult,
) -> Result<Vec<(usize, usize)>, CudaError> {
    if let Some(n) = count {
        if n >= MAX_PARAMS {
            return Err(invalid(
                "the driver reports more kernel parameters than a kernel can have",
            ));
        }
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let (mut offset, mut size) = (0usize, 0usize);
            check(info(i, &mut offset, &mut size))?;
            out.push((offset, size));
        }
        return Ok(out);
    }
    let mut out = Vec::new();
    for i in 0..MAX_PARAMS {
        let (mut offset, mut size) = (0usize, 0usize);
        match info(i, &mut offset, &mut size) {
            CUresult::CUDA_SUCCESS => out.push((offset, size)),
            CUresult::CUDA_ERROR_INVALID_VALUE => break,
            e => return Err(crate::error::driver_error(e)),
        }
    }
    if out.len() == MAX_PARAMS {
        return Err(invalid(
            "the driver reports more kernel parameters than a kernel can have",
        ));
    }
    Ok(out)
}

/// A module-scope `__device__` or `__constant__` variable of type `T`.
pub struct DeviceGlobal<'m, T: DeviceCopy> {
    driver: &'static Driver,
    ptr: CUdeviceptr,
    _m: PhantomData<(&'m (), *const (), T)>,
}

impl<T: DeviceCopy> core::fmt::Debug for DeviceGlobal<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "DeviceGlobal<{}>({:#x})",
            short_type_name::<T>(),
            self.ptr
        )
    }
}

impl<'a> Module<'a> {
    /// The variable `name`, typed `T`: its size must be `size_of::<T>()`
    /// ([`CudaError::GlobalSizeMismatch`] otherwise).
    pub fn global<T: DeviceCopy>(&self, name: &str) -> Result<DeviceGlobal<'_, T>, CudaError> {
        let cname = c_name(name)?;
        let (mut ptr, mut bytes) = (0, 0usize);
        // SAFETY: valid out-pointers and a NUL-terminated name.
        let r = unsafe {
            self.driver.table().cuModuleGetGlobal()?(&mut ptr, &mut bytes, self.raw, cname.as_ptr())
        };
        not_found(r, "variable", name, "module", Vec::new)?;
        DeviceGlobal::from_raw(self.driver, name, ptr, bytes)
    }
}

impl<T: DeviceCopy> DeviceGlobal<'_, T> {
    /// The variable `name` at `ptr`, of `bytes` bytes as the driver says:
    /// [`CudaError::GlobalSizeMismatch`] unless that is `size_of::<T>()`. The caller
    /// ties `'m` to what keeps the variable allocated.
    pub(crate) fn from_raw(
        driver: &'static Driver,
        name: &str,
        ptr: CUdeviceptr,
        bytes: usize,
    ) -> Result<Self, CudaError> {
        if bytes != size_of::<T>() {
            return Err(CudaError::GlobalSizeMismatch {
                name: name.to_owned(),
                expected: size_of::<T>(),
                found: bytes,
            });
        }
        Ok(DeviceGlobal {
            driver,
            ptr,
            _m: PhantomData,
        })
    }
}

impl<T: DeviceCopy> DeviceGlobal<'_, T> {
    /// Its device address.
    pub fn device_ptr(&self) -> CUdeviceptr {
        self.ptr
    }

    /// Reads it (synchronously).
    pub fn read(&self) -> Result<T, CudaError> {
        let mut v = core::mem::MaybeUninit::<T>::uninit();
        // SAFETY: the variable holds `size_of::<T>()` bytes (checked at lookup).
        check(unsafe {
            self.driver.table().cuMemcpyDtoH()?(v.as_mut_ptr().cast(), self.ptr, size_of::<T>())
        })?;
        // SAFETY: fully written by the copy; any bytes are a valid `T` (`DeviceCopy`).
        Ok(unsafe { v.assume_init() })
    }

    /// Writes it (synchronously).
    pub fn write(&mut self, value: &T) -> Result<(), CudaError> {
        // SAFETY: the variable holds `size_of::<T>()` bytes (checked at lookup).
        check(unsafe {
            self.driver.table().cuMemcpyHtoD()?(
                self.ptr,
                (value as *const T).cast(),
                size_of::<T>(),
            )
        })
    }
}

impl Drop for Module<'_> {
    fn drop(&mut self) {
        if let Ok(unload) = self.driver.table().cuModuleUnload() {
            // SAFETY: this value owns the module; its functions borrow it, so none is alive.
            let r = crate::wait::retry_relaxed(self.driver, || unsafe { unload(self.raw) });
            if check(r).is_err() {
                tracing::warn!(?r, "cuModuleUnload failed");
            } else {
                crate::leaks::destroyed(crate::leaks::Kind::Modules, self.raw);
            }
        }
    }
}

/// A kernel of a module, with its declared signature `S` and how it may be launched
/// `K`: [`Plain`] (the default: in every way) or
/// [`Cooperative`] (only cooperatively, see
/// [`Module::cooperative_function`]). Borrows its module (CF4).
pub struct Function<'m, S: Signature, K: LaunchKind = Plain> {
    pub(crate) driver: &'static Driver,
    pub(crate) raw: CUfunction,
    _m: PhantomData<(&'m (), *const ())>,
    _s: PhantomData<fn(S, K)>,
}

impl<S: Signature, K: LaunchKind> core::fmt::Debug for Function<'_, S, K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let (s, k) = (short_type_name::<S>(), short_type_name::<K>());
        write!(f, "Function<{s}, {k}>({:?})", self.raw)
    }
}

impl<S: Signature, K: LaunchKind> Function<'_, S, K> {
    /// Wraps the handle `raw` of a kernel whose signature is `S` (checked, or
    /// promised by the caller of an `unsafe` lookup); the caller ties `'m` to what
    /// keeps the handle valid.
    pub(crate) fn from_raw(driver: &'static Driver, raw: CUfunction) -> Self {
        Function {
            driver,
            raw,
            _m: PhantomData,
            _s: PhantomData,
        }
    }

    /// The driver's handle.
    pub fn raw(&self) -> CUfunction {
        self.raw
    }
}

static_assertions::assert_not_impl_any!(Module<'static>: Send, Sync);
static_assertions::assert_not_impl_any!(Function<'static, (u32,)>: Send, Sync);
static_assertions::assert_not_impl_any!(Function<'static, (u32,), crate::signature::Cooperative>: Send, Sync);
static_assertions::assert_not_impl_any!(DeviceGlobal<'static, u32>: Send, Sync);
// The kernel name is fetched lazily (`trace`): a `Function` stays two words.
static_assertions::assert_eq_size!(Function<'static, (u32,)>, [usize; 2]);
