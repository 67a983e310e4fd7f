//! The driver-function table, generated from the one declarative list in `list.rs`.
//!
//! Each line of the list — `name @ version (params);` — becomes:
//! - a function-pointer type [`pfn`]`::name`,
//! - a slot `DriverTable::name: Option<pfn::name>`, filled by the loader,
//! - an accessor `DriverTable::name()` that returns the pointer or
//!   [`CudaError::NotSupported`](crate::CudaError::NotSupported) naming the function and the driver version it needs,
//! - an [`Entry`] in [`ENTRIES`], which the loader and the tests walk.
//!
//! Calling through a pointer is `unsafe`: the safe layer does it, once per operation.

#[cfg(test)]
use crate::error::CudaError;
use crate::version::DriverVersion;

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

        /// The resolved driver functions: `None` where the driver does not provide the
        /// ABI the line names. `#[repr(C)]` with one nullable function pointer per line,
        /// in list order: it has the layout of `[*mut c_void; COUNT]`.
        #[allow(non_snake_case)]
        #[derive(Clone, Copy)]
        #[repr(C)]
        pub struct DriverTable {
            $(
                #[doc = concat!("`", stringify!($name), "`, CUDA ", stringify!($ver), " ABI.")]
                pub $name: Option<pfn::$name>,
            )*
        }

        #[allow(non_snake_case)]
        impl DriverTable {
            /// Fills every slot with what `lookup` returns for its entry (null: absent).
            ///
            /// `lookup` must return null or the driver's entry point for exactly the
            /// entry's symbol at the entry's ABI version, whose C signature is the line's.
            pub(crate) fn resolve(mut lookup: impl FnMut(&$crate::table::Entry) -> *mut core::ffi::c_void) -> Self {
                let mut slots = [core::ptr::null_mut(); COUNT];
                for (slot, entry) in slots.iter_mut().zip(ENTRIES) {
                    *slot = lookup(entry);
                }
                // SAFETY: `Self` is `#[repr(C)]`, its fields are `Option<fn>` (the layout
                // of a nullable pointer) in the order of ENTRIES, so it has the layout of
                // this array; each pointer has its line's signature (see above).
                unsafe { core::mem::transmute::<[*mut core::ffi::c_void; COUNT], Self>(slots) }
            }

            /// The slots in list order, as raw pointers.
            fn slots(&self) -> &[*mut core::ffi::c_void; COUNT] {
                // SAFETY: same layout, as in `resolve`; reading a fn pointer as a raw
                // pointer is sound.
                unsafe { &*(self as *const Self).cast::<[*mut core::ffi::c_void; COUNT]>() }
            }

            /// Whether each entry of [`ENTRIES`] was resolved, in the same order.
            pub fn resolved(&self) -> impl Iterator<Item = (&'static $crate::table::Entry, bool)> + '_ {
                ENTRIES.iter().zip(self.slots().iter().map(|p| !p.is_null()))
            }

            $(
                #[doc = concat!("`", stringify!($name), "`, or the error naming it and the driver it needs.")]
                #[inline]
                pub fn $name(&self) -> Result<pfn::$name, $crate::error::CudaError> {
                    // Not `ok_or(error)`: that builds and drops the error on every call
                    // (a call to its drop glue on the hot path; benches/callgrind.rs).
                    match self.$name {
                        Some(f) => Ok(f),
                        None => Err($crate::table::not_supported(stringify!($name), $ver)),
                    }
                }
            )*
        }
    };
}
/// The error of a table slot the driver left empty: out of line, off the hot path.
#[cold]
#[inline(never)]
pub(crate) fn not_supported(function: &'static str, needs: u32) -> crate::error::CudaError {
    crate::error::CudaError::NotSupported {
        function,
        needs: crate::version::DriverVersion::from_raw(needs),
    }
}

mod list;
pub use list::{COUNT, DriverTable, ENTRIES, pfn};
pub(crate) use list::{DLSYM_SYMBOLS, PER_THREAD_VERSIONS};

impl core::fmt::Debug for DriverTable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let resolved = self.resolved().filter(|(_, ok)| *ok).count();
        write!(
            f,
            "DriverTable {{ {resolved} of {} resolved }}",
            ENTRIES.len()
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
        let t = DriverTable::resolve(|_| core::ptr::null_mut());
        match t.cuGraphAddNode() {
            Err(CudaError::NotSupported { function, needs }) => {
                assert_eq!(function, "cuGraphAddNode");
                assert_eq!(needs, DriverVersion::new(12, 3));
            }
            other => panic!("unexpected {:?}", other.map(|_| ())),
        }
        assert_eq!(t.resolved().filter(|(_, ok)| *ok).count(), 0);
    }
}
