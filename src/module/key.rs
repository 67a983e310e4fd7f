//! Declared kernels kept without a borrow: a [`FunctionKey`] names a kernel of one
//! [`Module`] with its checked signature, and a [`KernelKey`](crate::library::KernelKey)
//! one of a [`Library`](crate::library::Library). A key is plain data (`Send`,
//! `Sync`, `Copy`), so a struct can hold the module or library *and* the keys of its
//! kernels — what a kernel library keeps — where a `Function<'m, _>` beside its
//! `Module` would borrow its own neighbour. A key only launches through its owner
//! ([`Module::get`], [`Library::get`](crate::library::Library::get)), which checks
//! that the key is its own: every module and library has a process-unique
//! identity, so a key of an unloaded one can never reach a new one that got the
//! same driver handle ([`CudaError::ForeignKey`]).

use super::Module;
use crate::error::CudaError;
use crate::signature::{Cooperative, LaunchKind, Plain, Signature};
use crate::sys::CUfunction;
use core::marker::PhantomData;
use core::sync::atomic::{AtomicU64, Ordering};

/// The next process-unique identity of a module or library (never 0).
pub(crate) fn next_identity() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A kernel of one [`Module`], declared with its parameter types `S` (checked, as
/// for [`Module::function`]) and kind `K`, kept without borrowing the module. Made by
/// [`Module::function_key`]; launched through [`Module::get`], which gives the
/// [`Function`](crate::module::Function) for as long as the module is borrowed.
///
/// ```
/// # use oxicuda_driver::{CudaError, CurrentContext, launch::{In, Out}, module::{FunctionKey, JitOptions, Module}};
/// /// A small kernel library: the module and its kernels in one value.
/// struct Blas<'c> {
///     module: Module<'c>,
///     saxpy: FunctionKey<(f32, In<f32>, Out<f32>)>,
/// }
///
/// impl<'c> Blas<'c> {
///     fn load(cur: &'c CurrentContext<'_>, ptx: &str) -> Result<Self, CudaError> {
///         let module = cur.load_ptx(ptx, &JitOptions::default())?;
///         // SAFETY: saxpy writes its `Out` only below the length passed with it.
///         let saxpy = unsafe { module.function_key("saxpy")? };
///         Ok(Blas { module, saxpy })
///     }
/// }
/// # fn main() {}
/// ```
pub struct FunctionKey<S: Signature, K: LaunchKind = Plain> {
    module: u64,
    raw: CUfunction,
    _s: PhantomData<fn(S, K)>,
}

impl<S: Signature, K: LaunchKind> Clone for FunctionKey<S, K> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S: Signature, K: LaunchKind> Copy for FunctionKey<S, K> {}

impl<S: Signature, K: LaunchKind> core::fmt::Debug for FunctionKey<S, K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FunctionKey")
            .field("module", &self.module)
            .field("raw", &self.raw)
            .field("signature", &core::any::type_name::<S>())
            .finish()
    }
}

// SAFETY: a key is an identity and a handle, used only through the module it names
// (`Module::get`), on whichever thread holds that module; it reads nothing itself.
unsafe impl<S: Signature, K: LaunchKind> Send for FunctionKey<S, K> {}
// SAFETY: as above; `&FunctionKey` gives nothing but copies of those two values.
unsafe impl<S: Signature, K: LaunchKind> Sync for FunctionKey<S, K> {}

impl<'a> Module<'a> {
    /// The kernel `name` declared with its parameter types `S`, as a key kept
    /// without borrowing the module (see [`FunctionKey`]); checked as
    /// [`function`](Module::function) checks it.
    ///
    /// # Safety
    /// The contract of [`function`](Module::function).
    pub unsafe fn function_key<S: Signature>(
        &self,
        name: &str,
    ) -> Result<FunctionKey<S>, CudaError> {
        // SAFETY: the caller's promise, forwarded.
        let f = unsafe { self.function::<S>(name)? };
        Ok(FunctionKey {
            module: self.identity,
            raw: f.raw,
            _s: PhantomData,
        })
    }

    /// The kernel `name` declared as one that must run cooperatively (see
    /// [`cooperative_function`](Module::cooperative_function)), as a key: the
    /// function [`get`](Module::get) gives launches only cooperatively.
    ///
    /// # Safety
    /// The contract of [`cooperative_function`](Module::cooperative_function).
    pub unsafe fn cooperative_function_key<S: Signature>(
        &self,
        name: &str,
    ) -> Result<FunctionKey<S, Cooperative>, CudaError> {
        // SAFETY: the caller's promise, forwarded.
        let f = unsafe { self.cooperative_function::<S>(name)? };
        Ok(FunctionKey {
            module: self.identity,
            raw: f.raw,
            _s: PhantomData,
        })
    }

    /// The function `key` names, borrowing this module (no driver call).
    /// [`CudaError::ForeignKey`] when the key was declared in another module.
    pub fn get<S: Signature, K: LaunchKind>(
        &self,
        key: &FunctionKey<S, K>,
    ) -> Result<crate::module::Function<'_, S, K>, CudaError> {
        if key.module != self.identity {
            return Err(CudaError::ForeignKey);
        }
        Ok(crate::module::Function::from_raw(self.driver, key.raw))
    }
}

static_assertions::assert_impl_all!(FunctionKey<(u32,)>: Send, Sync, Copy);
