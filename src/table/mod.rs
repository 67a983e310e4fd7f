//! The driver-function table, generated from the one declarative list in `list.rs`.
//!
//! Each line of the list — `name @ version (params);` — becomes:
//! - a function-pointer type [`pfn`]`::name`,
//! - a slot in [`DriverTable`], filled the first time the function is asked for,
//! - an accessor `DriverTable::name()` that returns the pointer or
//!   [`CudaError::NotSupported`] naming the function and the driver version it needs,
//! - an [`Entry`] in [`ENTRIES`], which the loader and the tests walk.
//!
//! Slots are resolved lazily, as cudarc does: loading the driver asks it for nothing
//! but its version, and each function costs one `cuGetProcAddress` on its first use
//! (measured on the 535 driver: resolving all 459 lines of the 12.9 list up front was
//! 70–100 µs of a fresh process's start, `benches/init.rs`). After that an accessor is
//! one load and one compare, as an eager table's `Option` test was. Drivers without
//! `cuGetProcAddress` (before 11.3) are resolved by `dlsym`, all at load.
//!
//! Calling through a pointer is `unsafe`: the safe layer does it, once per operation.

use crate::error::CudaError;
use crate::version::DriverVersion;
use core::ffi::c_void;
use core::sync::atomic::{AtomicPtr, Ordering};

/// One line of the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The field name: the driver symbol's base name, suffixed `_v<version>` for an
    /// older ABI kept beside the newest (`cuCtxCreate_v3020`).
    pub name: &'static str,
    /// The CUDA version whose ABI the signature matches (`PFN_<base>_v<version>`).
    pub version: u32,
    /// The parameters as written in the list (`dptr : * mut CUdeviceptr, ...`).
    pub params: &'static str,
}

impl Entry {
    /// The name to ask the driver for: `name` without the `_v<version>` suffix.
    pub fn base_name(&self) -> &'static str {
        match self.name.rsplit_once("_v") {
            Some((base, v)) if v.parse() == Ok(self.version) => base,
            _ => self.name,
        }
    }

    /// The ABI version as a [`DriverVersion`].
    pub const fn needs(&self) -> DriverVersion {
        DriverVersion::from_raw(self.version)
    }

    /// How many parameters the signature has.
    pub fn arity(&self) -> usize {
        if self.params.trim().is_empty() {
            0
        } else {
            self.params.split(',').count()
        }
    }
}

/// A slot's value before the driver was asked.
const UNASKED: usize = 0;
/// A slot's value once the driver answered that it has no such function.
const ABSENT: usize = 1;

/// Fills a slot on first use: the driver's entry point for exactly the entry's symbol
/// at the entry's ABI version, null if the driver has none, or the code of a lookup
/// that failed (kept by no slot: the next use asks again).
pub(crate) type Lookup = dyn Fn(&Entry) -> Result<*mut c_void, crate::sys::CUresult> + Send + Sync;

/// Turns the declarative list into the table. See the module documentation.
macro_rules! driver_table {
    ($($name:ident @ $ver:literal ($($arg:ident : $ty:ty),* $(,)?);)*) => {
        /// One function-pointer type per line of the list.
        #[allow(non_camel_case_types)]
        pub mod pfn {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[doc = concat!("`PFN_", stringify!($name), "` (CUDA ", stringify!($ver), " ABI).")]
                pub type $name = unsafe extern "C" fn($($arg: $ty),*) -> $crate::sys::CUresult;
            )*
        }

        /// Every line of the list, in order.
        pub const ENTRIES: &[$crate::table::Entry] = &[
            $($crate::table::Entry { name: stringify!($name), version: $ver, params: stringify!($($arg: $ty),*) },)*
        ];

        /// How many lines the list has.
        pub const COUNT: usize = [$(stringify!($name)),*].len();

        /// Each line's index in [`ENTRIES`] and in the table's slots.
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        #[repr(usize)]
        pub(crate) enum Slot { $($name),* }

        #[allow(non_snake_case)]
        impl $crate::table::DriverTable {
            $(
                #[doc = concat!("`", stringify!($name), "` (CUDA ", stringify!($ver), " ABI), or the error naming it and the driver it needs.")]
                #[inline]
                pub fn $name(&self) -> Result<pfn::$name, $crate::error::CudaError> {
                    let p = self.slot(Slot::$name as usize)?;
                    // SAFETY: a slot holds null or what the lookup returned for its
                    // entry: the driver's function with this line's C signature (the
                    // lookup's contract, `DriverTable::lazy`/`eager`).
                    Ok(unsafe { core::mem::transmute::<*mut core::ffi::c_void, pfn::$name>(p) })
                }
            )*
        }
    };
}

/// The driver's functions, one slot per line of the list, each resolved on first use.
/// Obtain it from [`Driver::table`](crate::Driver::table).
pub struct DriverTable {
    slots: [AtomicPtr<c_void>; COUNT],
    /// Fills an unasked slot; `None` when every slot was filled at load.
    lookup: Option<Box<Lookup>>,
}

impl DriverTable {
    /// A table whose slots are filled on first use by `lookup`.
    ///
    /// `lookup` must return null or the driver's entry point for exactly the entry's
    /// symbol at the entry's ABI version, whose C signature is the line's, valid for as
    /// long as the table lives; it may be called from any thread, any number of times.
    pub(crate) fn lazy(lookup: Box<Lookup>) -> Self {
        Self {
            slots: core::array::from_fn(|_| {
                AtomicPtr::new(core::ptr::without_provenance_mut(UNASKED))
            }),
            lookup: Some(lookup),
        }
    }

    /// A table whose every slot is filled now by `lookup` (same contract as `lazy`).
    pub(crate) fn eager(mut lookup: impl FnMut(&Entry) -> *mut c_void) -> Self {
        let mut entries = ENTRIES.iter();
        Self {
            slots: core::array::from_fn(|_| {
                let p = entries.next().map_or(core::ptr::null_mut(), &mut lookup);
                AtomicPtr::new(known(p))
            }),
            lookup: None,
        }
    }

    /// Keeps `p` in slot `i`: a function the loader already has (the same contract as
    /// the lookup's, for that slot's entry).
    pub(crate) fn keep(&self, i: usize, p: *mut c_void) {
        self.slots[i].store(known(p), Ordering::Release);
    }

    /// Slot `i`'s pointer, asking the driver the first time.
    ///
    /// Inside a host callback every slot answers [`CudaError::InHostCallback`]: CUDA
    /// forbids driver calls there, and every driver call of the safe layer, its
    /// drops included, goes through here ([`crate::activity`]).
    #[inline(always)]
    fn slot(&self, i: usize) -> Result<*mut c_void, CudaError> {
        if crate::activity::in_host_callback() {
            return Err(refused_in_host_callback(i));
        }
        // Acquire, paired with the Release of the thread that filled the slot: what
        // the lookup set up for the function (an interposer's trampoline, an
        // in-process driver's state) is visible to the caller. On x86-64 a plain load.
        let p = self.slots[i].load(Ordering::Acquire);
        if p.addr() > ABSENT {
            return Ok(p);
        }
        // Two words back from the cold path, the error built by another cold call:
        // the hot path keeps no room for an error on the stack.
        match self.fill(i) {
            Ok(p) => Ok(p),
            Err(code) => Err(unavailable(i, code)),
        }
    }

    /// Slot `i` unasked or absent: ask the driver once. `Err(None)`: the driver has no
    /// such function; `Err(Some(code))`: the lookup failed (nothing kept). Out of line.
    #[cold]
    #[inline(never)]
    fn fill(&self, i: usize) -> Result<*mut c_void, Option<crate::sys::CUresult>> {
        let slot = &self.slots[i];
        let mut p = slot.load(Ordering::Acquire);
        if p.addr() == UNASKED {
            let found = self
                .lookup
                .as_ref()
                .map_or(Ok(core::ptr::null_mut()), |l| l(&ENTRIES[i]));
            let mine = known(found.map_err(Some)?);
            // The first answer stays: two threads asking at once use the same one.
            let unasked = core::ptr::without_provenance_mut(UNASKED);
            p = match slot.compare_exchange(unasked, mine, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => mine,
                Err(first) => first,
            };
        }
        if p.addr() > ABSENT { Ok(p) } else { Err(None) }
    }

    /// Whether each entry of [`ENTRIES`] resolves, in the same order. Asks the driver
    /// for every slot not asked for yet (a lookup that fails counts as unresolved).
    pub fn resolved(&self) -> impl Iterator<Item = (&'static Entry, bool)> + '_ {
        ENTRIES
            .iter()
            .enumerate()
            .map(|(i, e)| (e, self.slot(i).is_ok()))
    }
}

/// A looked-up pointer as a slot holds it: null becomes [`ABSENT`].
fn known(p: *mut c_void) -> *mut c_void {
    if p.is_null() {
        core::ptr::without_provenance_mut(ABSENT)
    } else {
        p
    }
}

/// The error of slot `i`: the failed lookup's code (as the driver's error: a sticky
/// one marks the bound context, as any driver call's would), or the function and the
/// driver version it needs. Out of line, off the hot path.
#[cold]
#[inline(never)]
fn unavailable(i: usize, code: Option<crate::sys::CUresult>) -> CudaError {
    match code {
        Some(code) => crate::error::driver_error(code),
        None => not_supported(ENTRIES[i].name, ENTRIES[i].version),
    }
}

/// The refusal of slot `i` inside a host callback, with a warning naming the function
/// (a drop that meets it leaks its object: the warning is all that is left of it).
#[cold]
#[inline(never)]
fn refused_in_host_callback(i: usize) -> CudaError {
    tracing::warn!(
        function = ENTRIES[i].name,
        "a driver call inside a host callback was refused (CUDA forbids driver calls there); \
         an object dropped there is leaked, not released"
    );
    CudaError::InHostCallback
}

/// The error of a table slot the driver left empty: out of line, off the hot path.
#[cold]
#[inline(never)]
pub(crate) fn not_supported(function: &'static str, needs: u32) -> CudaError {
    CudaError::NotSupported {
        function,
        needs: DriverVersion::from_raw(needs),
    }
}

mod list;
pub use list::{COUNT, ENTRIES, pfn};
pub(crate) use list::{DLSYM_SYMBOLS, PER_THREAD_VERSIONS, Slot};

impl core::fmt::Debug for DriverTable {
    /// How many slots were asked for and resolved so far (asks the driver nothing).
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let (mut asked, mut resolved) = (0, 0);
        for slot in &self.slots {
            let p = slot.load(Ordering::Relaxed).addr();
            asked += usize::from(p != UNASKED);
            resolved += usize::from(p > ABSENT);
        }
        write!(
            f,
            "DriverTable {{ {resolved} resolved of {asked} asked for, {COUNT} lines }}"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_names_strip_only_the_matching_version_suffix() {
        let e = |name, version| Entry {
            name,
            version,
            params: "",
        };
        assert_eq!(e("cuCtxCreate_v3020", 3020).base_name(), "cuCtxCreate");
        assert_eq!(e("cuCtxCreate", 12050).base_name(), "cuCtxCreate");
        assert_eq!(e("cuFoo_v2", 3020).base_name(), "cuFoo_v2");
    }

    #[test]
    fn every_versioned_field_names_an_existing_base() {
        for e in ENTRIES {
            let base = e.base_name();
            assert!(base.starts_with("cu"), "{}", e.name);
            if base != e.name {
                // An older ABI is kept only beside the newest one.
                let newest = ENTRIES.iter().find(|x| x.name == base);
                assert!(newest.is_some_and(|n| n.version > e.version), "{}", e.name);
            }
        }
    }

    #[test]
    fn the_list_covers_at_least_350_functions() {
        let mut bases: Vec<_> = ENTRIES.iter().map(Entry::base_name).collect();
        bases.sort_unstable();
        bases.dedup();
        assert!(bases.len() >= 350, "{} functions", bases.len());
    }

    #[test]
    fn an_absent_function_is_a_typed_error_naming_it() {
        let t = DriverTable::eager(|_| core::ptr::null_mut());
        match t.cuGraphAddNode_v12030() {
            Err(CudaError::NotSupported { function, needs }) => {
                assert_eq!(function, "cuGraphAddNode_v12030");
                assert_eq!(needs, DriverVersion::new(12, 3));
            }
            other => panic!("unexpected {:?}", other.map(|_| ())),
        }
        assert_eq!(t.resolved().filter(|(_, ok)| *ok).count(), 0);
    }
}
