//! Context-independent loading (`cuLibrary*`, `cuKernel*`): a [`Library`] is loaded
//! once for the process, its [`Kernel`]s are declared with their typed signature,
//! and each kernel gives a [`Function`] in whichever context is current — launched
//! exactly like a module's.
//!
//! Lifetimes. A `Library` belongs to its [`Driver`] (which is `'static`), not to a
//! context: it has no lifetime parameter and lives until dropped (`cuLibraryUnload`).
//! A `Kernel<'lib, S>` borrows its library, so the library cannot be unloaded while
//! a kernel handle exists (CF24). [`Kernel::function`] materialises the kernel in the
//! current context and returns a `Function<'a, S>` that borrows both the library and
//! that context's [`CurrentContext`] token: it cannot outlive either (CF24, and the
//! token rules CF2/CF3 — inside a pushed context, the outer context's functions are
//! unusable). A library's variables exist once per context: [`Library::global`] is
//! the current context's copy, borrowing the library and the token the same way.
//! A library of one driver used with another driver's context is
//! [`CudaError::ForeignDriver`].
//!
//! A library is `Send` and `Sync` (a `cuLibrary` belongs to no context and the driver
//! API is thread-safe; the JIT buffers the driver may still write are never read by
//! the crate after the load), and so are its kernels: a library loaded once can live
//! in a `static` or an `Arc` shared by threads, each thread taking its functions in
//! its own current context. A struct that keeps the library beside its kernels holds
//! [`KernelKey`]s (plain data) instead of borrowing `Kernel`s: [`Library::get`] gives
//! the kernel back. Functions, like a module's, are neither `Send` nor `Sync` (they
//! belong to a context).
//!
//! Dropping a library while a kernel of it still runs (launched through a function
//! that is gone, on a stream not yet synchronised) relies on the driver, as dropping
//! a module does: `cuLibraryUnload` must not return while queued work may still use
//! the library's code and variables (listed in `docs/architecture.md`, "Assumed of
//! the driver"; softcuda drains the streams of the library's contexts first).
//!
//! The JIT options and log buffers of the load are kept with the library until after
//! `cuLibraryUnload`: with lazy loading (the default since CUDA 12.2) the driver may
//! compile — and write the logs and their sizes — at a kernel's first use, long
//! after `cuLibraryLoadData` returned. [`Library::info_log`] is what the load
//! itself reported.
//!
//! A kernel or variable name with a NUL byte is [`CudaError::InvalidArgument`]; JIT
//! options out of range are too ([`JitOptions`]), before any driver call.
//!
//! Signatures are checked as for [`Module::function`](crate::module::Module::function):
//! at [`Library::kernel`], against `cuKernelGetParamInfo` (drivers 12.4+, with the
//! count of `cuKernelGetParamCount` from 13.2) or, for a library loaded from PTX text,
//! the `.entry` parameter list.

use crate::context::CurrentContext;
use crate::device::Device;
use crate::error::{CudaError, check};
use crate::jit::{JitCall, JitLog, JitOptions};
use crate::launch::Signature;
use crate::loader::Driver;
use crate::memory::DeviceCopy;
use crate::module::file::read_image_file;
use crate::module::image::{Image, image_kind, invalid};
use crate::module::{
    DeviceGlobal, Function, aligned_copy, c_name, check_signature, collect_params, param_count,
};
use crate::sys::{CUfunction, CUfunction_attribute, CUkernel, CUlibrary, CUresult};
use core::ffi::{CStr, c_char, c_uint};
use core::marker::PhantomData;
use std::path::Path;

/// A loaded library, independent of contexts. Unloaded on drop (with its kernels
/// possibly still running: see the [module docs](self)). Made by
/// [`Driver::load_library`] (an image in memory) or
/// [`Driver::load_library_file`] (a file).
pub struct Library {
    driver: &'static Driver,
    raw: CUlibrary,
    info: JitLog,
    /// The PTX text, kept to check kernel signatures when the driver cannot.
    ptx: Option<String>,
    /// The load's option arrays and log buffers: with lazy loading the driver may
    /// compile, and write through them, at first use. Freed after `cuLibraryUnload`
    /// (fields drop after `Drop::drop`).
    /// Freed only after a successful `cuLibraryUnload`; leaked when the unload is
    /// refused (inside a host callback) or fails, since the driver may still write it.
    _jit: core::mem::ManuallyDrop<JitCall>,
    /// Process-unique: the owner of its [`KernelKey`]s.
    identity: u64,
}

impl core::fmt::Debug for Library {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Library")
            .field("raw", &self.raw)
            .field("from_ptx", &self.ptx.is_some())
            .finish()
    }
}

impl Driver {
    /// Loads a library: a cubin (ELF), a fatbin, or PTX text, told apart and checked
    /// as module images are
    /// ([`CurrentContext::load_module`](crate::CurrentContext::load_module)). No
    /// context is needed. A JIT failure is [`CudaError::JitFailed`] with its log.
    pub fn load_library(
        &'static self,
        image: &[u8],
        options: &JitOptions,
    ) -> Result<Library, CudaError> {
        let ptx = match image_kind(image)? {
            Image::Ptx => {
                let text = core::str::from_utf8(image)
                    .map_err(|_| invalid("neither a cubin, a fatbin, nor PTX text (UTF-8)"))?
                    .trim_end_matches('\0');
                if text.contains('\0') {
                    return Err(invalid("PTX text must not contain NUL characters"));
                }
                Some(text.to_owned())
            }
            Image::Cubin | Image::Fatbin => None,
        };
        let aligned = aligned_copy(image);
        let mut jit = JitCall::new(options)?;
        let mut raw = CUlibrary::NULL;
        // SAFETY: a NUL-terminated, 8-byte aligned copy of an image checked above;
        // `JitCall` holds keys and values of the same length and log buffers of the
        // sizes it announces, at fixed heap addresses; on success it moves into the
        // library and lives until after `cuLibraryUnload` (lazy loading may write the
        // logs at first use); no library options.
        let r = unsafe {
            self.table().cuLibraryLoadData()?(
                &mut raw,
                aligned.as_ptr().cast(),
                jit.keys(),
                jit.values(),
                jit.len(),
                core::ptr::null_mut(),
                core::ptr::null_mut(),
                0,
            )
        };
        if r != CUresult::CUDA_SUCCESS {
            return Err(jit.failure(r));
        }
        crate::leaks::created(crate::leaks::Kind::Libraries, raw);
        Ok(Library {
            driver: self,
            raw,
            info: jit.info_log(),
            ptx,
            _jit: core::mem::ManuallyDrop::new(jit),
            identity: crate::module::key::next_identity(),
        })
    }

    /// Loads the library in the file at `path` (see [`load_library`](Driver::load_library)).
    /// A path that is not a regular file, or a file over 1 GiB, is
    /// [`CudaError::InvalidArgument`]; one that cannot be read, [`CudaError::ReadFile`].
    pub fn load_library_file(
        &'static self,
        path: impl AsRef<Path>,
        options: &JitOptions,
    ) -> Result<Library, CudaError> {
        let image = read_image_file(path.as_ref())?;
        self.load_library(&image, options)
    }
}

/// Refuses a context of another driver than `driver`.
fn same_driver(driver: &'static Driver, ctx: &CurrentContext<'_>) -> Result<(), CudaError> {
    if core::ptr::eq(driver, ctx.driver()) {
        Ok(())
    } else {
        Err(CudaError::ForeignDriver)
    }
}

impl Library {
    /// The driver's handle.
    pub fn raw(&self) -> CUlibrary {
        self.raw
    }

    /// What the JIT reported when loading (with `JitOptions::verbose`).
    pub fn info_log(&self) -> &JitLog {
        &self.info
    }

    /// The number of kernels (`cuLibraryGetKernelCount`, drivers 12.4+).
    pub fn kernel_count(&self) -> Result<usize, CudaError> {
        let mut n: c_uint = 0;
        // SAFETY: a valid out-pointer.
        check(unsafe { self.driver.table().cuLibraryGetKernelCount()?(&mut n, self.raw) })?;
        Ok(n as usize)
    }

    /// The kernels' names, in the library's order (`cuLibraryEnumerateKernels` and
    /// `cuKernelGetName`, drivers 12.4+).
    pub fn kernel_names(&self) -> Result<Vec<String>, CudaError> {
        let n = self.kernel_count()?;
        let mut handles = vec![CUkernel::NULL; n];
        let count = c_uint::try_from(n)
            .map_err(|_| CudaError::Driver(CUresult::CUDA_ERROR_INVALID_VALUE))?;
        // SAFETY: room for `n` handles.
        check(unsafe {
            self.driver.table().cuLibraryEnumerateKernels()?(handles.as_mut_ptr(), count, self.raw)
        })?;
        handles
            .into_iter()
            .map(|k| kernel_name(self.driver, k))
            .collect()
    }

    /// The kernel `name`, declared with its parameter types `S`, checked against
    /// `cuKernelGetParamInfo` or the PTX `.entry` list: a different count, size or
    /// offset is [`CudaError::SignatureMismatch`]. Neither at hand (a binary image on a
    /// driver older than 12.4) is [`CudaError::NotSupported`]; use
    /// [`kernel_unchecked`](Library::kernel_unchecked) there.
    ///
    /// # Safety
    /// The contract of [`Module::function`](crate::module::Module::function), for every
    /// function this kernel gives, in every context.
    pub unsafe fn kernel<S: Signature>(&self, name: &str) -> Result<Kernel<'_, S>, CudaError> {
        // SAFETY: the caller's promise, forwarded; the layout is checked below before
        // the kernel is returned.
        let k = unsafe { self.kernel_unchecked::<S>(name)? };
        let t = self.driver.table();
        let reported = t.cuKernelGetParamInfo().ok().map(|info| {
            let count = param_count(t.cuKernelGetParamCount().ok().map(|get| {
                // SAFETY: a kernel of this library and a valid out-pointer.
                move |n: &mut usize| unsafe { get(k.raw, n) }
            }))?;
            // SAFETY: a kernel of this library and valid out-pointers; an index past
            // the last is INVALID_VALUE.
            collect_params(count, |i, o, s| unsafe { info(k.raw, i, o, s) })
        });
        check_signature::<S>(name, "cuKernelGetParamInfo", reported, self.ptx.as_deref())?;
        Ok(k)
    }

    /// The kernel `name`, declared with its parameter types `S` and not checked.
    ///
    /// # Safety
    /// As for [`kernel`](Library::kernel), and `S` must match the kernel's parameter
    /// list exactly: count, sizes and offsets.
    pub unsafe fn kernel_unchecked<S: Signature>(
        &self,
        name: &str,
    ) -> Result<Kernel<'_, S>, CudaError> {
        let cname = c_name(name)?;
        let mut raw = CUkernel::NULL;
        // SAFETY: a valid out-pointer and NUL-terminated name.
        let r = unsafe {
            self.driver.table().cuLibraryGetKernel()?(&mut raw, self.raw, cname.as_ptr())
        };
        crate::module::not_found(r, "kernel", name, "library", || {
            self.kernel_names().unwrap_or_default()
        })?;
        Ok(Kernel {
            driver: self.driver,
            raw,
            name: name.into(),
            _lib: PhantomData,
            _s: PhantomData,
        })
    }

    /// The current context's copy of the variable `name`, typed `T` (its size must be
    /// `size_of::<T>()`: [`CudaError::GlobalSizeMismatch`] otherwise). Borrows the
    /// library and the context token.
    pub fn global<'a, T: DeviceCopy>(
        &'a self,
        ctx: &'a CurrentContext<'_>,
        name: &str,
    ) -> Result<DeviceGlobal<'a, T>, CudaError> {
        same_driver(self.driver, ctx)?;
        let cname = c_name(name)?;
        let (mut ptr, mut bytes) = (0, 0usize);
        // SAFETY: valid out-pointers and a NUL-terminated name; `ctx` is current.
        let r = unsafe {
            self.driver.table().cuLibraryGetGlobal()?(
                &mut ptr,
                &mut bytes,
                self.raw,
                cname.as_ptr(),
            )
        };
        crate::module::not_found(r, "variable", name, "library", Vec::new)?;
        DeviceGlobal::from_raw(self.driver, name, ptr, bytes)
    }
}

fn kernel_name(driver: &'static Driver, k: CUkernel) -> Result<String, CudaError> {
    let mut p: *const c_char = core::ptr::null();
    // SAFETY: a valid out-pointer.
    check(unsafe { driver.table().cuKernelGetName()?(&mut p, k) })?;
    if p.is_null() {
        return Err(CudaError::Driver(CUresult::CUDA_ERROR_INVALID_VALUE));
    }
    // SAFETY: the driver's NUL-terminated name, valid while the library is loaded
    // (it is: the caller borrows it); copied at once.
    Ok(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

impl Drop for Library {
    fn drop(&mut self) {
        let Ok(unload) = self.driver.table().cuLibraryUnload() else {
            // Refused (inside a host callback) or absent: the library stays loaded and
            // the driver may still compile it and write its JIT arrays: they leak.
            return;
        };
        // SAFETY: this value owns the library; its kernels, functions and globals
        // borrow it, so none is alive. Work already queued may still run its code:
        // the driver's unload waits for it (an assumption, as for modules).
        let r = crate::wait::retry_relaxed(self.driver, || unsafe { unload(self.raw) });
        if check(r).is_err() {
            tracing::warn!(?r, "cuLibraryUnload failed: its JIT arrays are leaked");
            return;
        }
        crate::leaks::destroyed(crate::leaks::Kind::Libraries, self.raw);
        // SAFETY: the library is unloaded, so the driver no longer writes the JIT
        // arrays; `_jit` is dropped once, here, and never used again.
        unsafe { core::mem::ManuallyDrop::drop(&mut self._jit) };
    }
}

/// A kernel of a library, with its declared signature `S`. Borrows its library (CF24).
pub struct Kernel<'lib, S: Signature> {
    driver: &'static Driver,
    raw: CUkernel,
    name: std::sync::Arc<str>,
    _lib: PhantomData<&'lib Library>,
    _s: PhantomData<fn(S)>,
}

impl<S: Signature> core::fmt::Debug for Kernel<'_, S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let s = crate::memory::short_type_name::<S>();
        write!(f, "Kernel<{s}>({:?}, {:?})", self.name, self.raw)
    }
}

impl<'lib, S: Signature> Kernel<'lib, S> {
    /// The driver's handle.
    pub fn raw(&self) -> CUkernel {
        self.raw
    }

    /// Its name, as looked up.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kernel in the current context (materialised there on first use): a
    /// function launched like a module's, which cannot outlive the library nor the
    /// context token (CF24). [`CudaError::ForeignDriver`] for another driver's context.
    pub fn function<'a>(&self, ctx: &'a CurrentContext<'_>) -> Result<Function<'a, S>, CudaError>
    where
        'lib: 'a,
    {
        same_driver(self.driver, ctx)?;
        let mut raw = CUfunction::NULL;
        // SAFETY: a valid out-pointer; `ctx` is current.
        check(unsafe { self.driver.table().cuKernelGetFunction()?(&mut raw, self.raw) })?;
        // The signature was checked (or promised) when this kernel was declared.
        Ok(Function::from_raw(self.driver, raw))
    }

    /// A function attribute of the kernel on `device` (`cuKernelGetAttribute`).
    pub fn attribute(&self, attr: CUfunction_attribute, device: &Device) -> Result<i32, CudaError> {
        if !core::ptr::eq(self.driver, device.driver()) {
            return Err(CudaError::ForeignDriver);
        }
        let mut v = 0;
        // SAFETY: a valid out-pointer; plain values.
        check(unsafe {
            self.driver.table().cuKernelGetAttribute()?(&mut v, attr, self.raw, device.raw())
        })?;
        Ok(v)
    }

    /// Lets launches of this kernel's functions on `device` (in every context of it)
    /// use up to `bytes` of dynamic shared memory (`cuKernelSetAttribute`). More than
    /// `i32::MAX` is [`CudaError::InvalidArgument`]; more than the device allows, the
    /// driver's `CUDA_ERROR_INVALID_VALUE`.
    pub fn set_max_dynamic_shared_memory(
        &self,
        device: &Device,
        bytes: u32,
    ) -> Result<(), CudaError> {
        if !core::ptr::eq(self.driver, device.driver()) {
            return Err(CudaError::ForeignDriver);
        }
        let v = i32::try_from(bytes).map_err(|_| CudaError::InvalidArgument {
            parameter: "bytes",
            rule: "must be at most i32::MAX (the attribute is an int)",
        })?;
        let attr = CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        // SAFETY: plain values.
        check(unsafe {
            self.driver.table().cuKernelSetAttribute()?(attr, v, self.raw, device.raw())
        })
    }
}

// SAFETY: a `cuLibrary` belongs to no context and the driver API is thread-safe;
// after the load the crate reads only what it copied (`info`, `ptx`), never the JIT
// buffers in `_jit` (kept for the driver, freed after `cuLibraryUnload`), so moving
// the library or sharing `&Library` between threads shares no unsynchronised state.
unsafe impl Send for Library {}
// SAFETY: as above.
unsafe impl Sync for Library {}

/// A kernel of one [`Library`] with its checked signature `S`, kept without
/// borrowing the library (plain data: `Send`, `Sync`, `Clone`; see
/// [`FunctionKey`](crate::module::FunctionKey) for why). Made by
/// [`Library::kernel_key`]; [`Library::get`] gives the [`Kernel`] back.
///
/// ```
/// # use oxicuda_driver::{CudaError, Driver, module::JitOptions, launch::{In, Out}, library::{KernelKey, Library}};
/// # use std::sync::Arc;
/// /// A kernel library shared by threads: the library and its kernels in one value.
/// struct Blas {
///     library: Library,
///     saxpy: KernelKey<(f32, In<f32>, Out<f32>)>,
/// }
///
/// fn load(driver: &'static Driver, ptx: &str) -> Result<Arc<Blas>, CudaError> {
///     let library = driver.load_library(ptx.as_bytes(), &JitOptions::default())?;
///     // SAFETY: saxpy writes its `Out` only below the length passed with it.
///     let saxpy = unsafe { library.kernel_key("saxpy")? };
///     Ok(Arc::new(Blas { library, saxpy }))
/// }
/// # fn main() {}
/// ```
pub struct KernelKey<S: Signature> {
    library: u64,
    raw: CUkernel,
    name: std::sync::Arc<str>,
    _s: PhantomData<fn(S)>,
}

impl<S: Signature> Clone for KernelKey<S> {
    fn clone(&self) -> Self {
        KernelKey {
            library: self.library,
            raw: self.raw,
            name: self.name.clone(),
            _s: PhantomData,
        }
    }
}

impl<S: Signature> core::fmt::Debug for KernelKey<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("KernelKey")
            .field("library", &self.library)
            .field("name", &self.name)
            .field("raw", &self.raw)
            .field("signature", &core::any::type_name::<S>())
            .finish()
    }
}

// SAFETY: an identity and a handle, used only through the library it names
// (`Library::get`); it reads nothing itself.
unsafe impl<S: Signature> Send for KernelKey<S> {}
// SAFETY: as above.
unsafe impl<S: Signature> Sync for KernelKey<S> {}

impl Library {
    /// The kernel `name` declared with its parameter types `S`, as a key kept
    /// without borrowing the library (see [`KernelKey`]); checked as
    /// [`kernel`](Library::kernel) checks it.
    ///
    /// # Safety
    /// The contract of [`kernel`](Library::kernel).
    pub unsafe fn kernel_key<S: Signature>(&self, name: &str) -> Result<KernelKey<S>, CudaError> {
        // SAFETY: the caller's promise, forwarded.
        let k = unsafe { self.kernel::<S>(name)? };
        Ok(KernelKey {
            library: self.identity,
            raw: k.raw,
            name: k.name,
            _s: PhantomData,
        })
    }

    /// The kernel `key` names, borrowing this library (no driver call, no allocation).
    /// [`CudaError::ForeignKey`] when the key was declared in another library.
    pub fn get<S: Signature>(&self, key: &KernelKey<S>) -> Result<Kernel<'_, S>, CudaError> {
        if key.library != self.identity {
            return Err(CudaError::ForeignKey);
        }
        Ok(Kernel {
            driver: self.driver,
            raw: key.raw,
            name: key.name.clone(),
            _lib: PhantomData,
            _s: PhantomData,
        })
    }
}

// SAFETY: a `CUkernel` is context-independent, as its library is (see `Library`'s
// impls); a kernel reads nothing of its own but its name. Its functions, which belong
// to a context, are not `Send`.
unsafe impl<S: Signature> Send for Kernel<'_, S> {}
// SAFETY: as above.
unsafe impl<S: Signature> Sync for Kernel<'_, S> {}

static_assertions::assert_impl_all!(Library: Send, Sync);
static_assertions::assert_impl_all!(Kernel<'static, (u32,)>: Send, Sync);
static_assertions::assert_impl_all!(KernelKey<(u32,)>: Send, Sync, Clone);
