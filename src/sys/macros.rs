//! The macros that spell the C ABI's shapes in Rust: opaque handles, C enums as
//! integer newtypes, flag sets as `bitflags` types, and all-zero `Default`s.

/// An opaque driver handle: a `#[repr(transparent)]` newtype over the C pointer.
///
/// Handles are plain values: neither `Send` nor `Sync`, so that a safe wrapper holding
/// one must say on its own whether it may cross threads.
macro_rules! c_handle {
    ($name:ident, $tag:literal) => {
        #[doc = concat!("Opaque driver handle `", stringify!($name), "` (`struct ", $tag, " *` in C).")]
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name(pub *mut core::ffi::c_void);

        impl $name {
            /// The null handle.
            pub const NULL: Self = Self(core::ptr::null_mut());
            /// Whether this is the null handle.
            #[inline]
            pub fn is_null(self) -> bool {
                self.0.is_null()
            }
        }

        impl Default for $name {
            #[inline]
            fn default() -> Self {
                Self::NULL
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, concat!(stringify!($name), "({:p})"), self.0)
            }
        }
    };
}

/// A C enum: a `#[repr(transparent)]` integer newtype with one associated constant
/// per enumerator, so that any value a newer driver returns stays representable.
/// Attributes after the doc go on the type (`CUresult` derives `thiserror::Error`).
macro_rules! c_enum {
    (#[doc = $doc:expr] $(#[$attr:meta])* $name:ident : $repr:ty { $($c:ident = $v:expr,)* }) => {
        #[doc = $doc]
        $(#[$attr])*
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub $repr);

        impl $name {
            $(
                #[doc = concat!("`", stringify!($c), "`")]
                pub const $c: Self = Self($v);
            )*
            /// Every enumerator of the header this mirrors (cuda.h 12.9 with the values 13.5
            /// adds, or nvml.h), as (C name, value), in header order.
            pub const KNOWN: &'static [(&'static str, Self)] = &[$((stringify!($c), Self::$c)),*];

            /// The C name of this value, if the header knows it (the first, where
            /// several names share a value).
            pub fn name(self) -> Option<&'static str> {
                // One shared search for every enum (not a copy of `find` per type).
                const NAMES: &[(&str, i64)] = &[$((stringify!($c), $v as i64)),*];
                $crate::sys::macros::name_of(NAMES, self.0 as i64)
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                $crate::sys::macros::fmt_enum(f, stringify!($name), self.name(), self.0 as i64)
            }
        }
    };
}

/// The first name of `value` in `names`.
pub(crate) fn name_of(names: &[(&'static str, i64)], value: i64) -> Option<&'static str> {
    names.iter().find(|(_, v)| *v == value).map(|(n, _)| *n)
}

/// A C enum's `Debug`: its C name, or `Type(value)` for a value the header lacks.
pub(crate) fn fmt_enum(
    f: &mut core::fmt::Formatter<'_>,
    ty: &str,
    name: Option<&str>,
    value: i64,
) -> core::fmt::Result {
    match name {
        Some(n) => f.write_str(n),
        None => write!(f, "{ty}({value})"),
    }
}

/// A C flag set: a `bitflags` 2 type, `#[repr(transparent)]` over its C integer, with
/// one associated constant per flag of the header and the whole `bitflags` API (`|`,
/// `&`, `^`, `-`, `!`, `all`, `from_bits`, `from_bits_truncate`, `from_bits_retain`,
/// `set`, `toggle`, `iter`, `iter_names`, the `Flags` trait, ...).
///
/// The known bits are the header's flags only (no `const _ = !0`): `all()`, `!`
/// (`complement`), `from_bits` and `from_bits_truncate` speak of the flags this
/// crate's `cuda.h` names. Bits a newer driver sets are still kept wherever a value is
/// taken as it is — `from_bits_retain`, which the safe layer uses for every flag word
/// the driver returns, and `|`, `&`, `^`, `-`, `insert`, `remove`, `set`, `toggle` —
/// and `Debug` shows them in hex after the names.
macro_rules! c_flags {
    (#[doc = $doc:expr] $name:ident : $repr:ty { $($c:ident = $v:expr,)* }) => {
        bitflags::bitflags! {
            #[doc = $doc]
            #[repr(transparent)]
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
            pub struct $name: $repr {
                $(
                    #[doc = concat!("`", stringify!($c), "`")]
                    const $c = $v;
                )*
            }
        }
    };
}

/// `Default` as all-zero bytes, for C structs and unions: every field type the header
/// uses (integers, floats, raw pointers, handles, `Option` of function pointers, integer
/// enum newtypes) is valid when zeroed.
macro_rules! zeroed_default {
    ($($t:ty),* $(,)?) => {
        $(
            impl Default for $t {
                #[inline]
                fn default() -> Self {
                    // SAFETY: see the macro's doc: all-zero is a valid value of every field.
                    unsafe { core::mem::zeroed() }
                }
            }
        )*
    };
}

pub(crate) use {c_enum, c_flags, c_handle, zeroed_default};

#[cfg(test)]
mod tests {
    use crate::sys::{CUctx_flags, CUmemhostregister_flags, CUresult, CUstream_flags};

    #[test]
    fn flag_sets_print_their_names_and_keep_unknown_bits() {
        let f = CUctx_flags::CU_CTX_SCHED_YIELD | CUctx_flags::CU_CTX_MAP_HOST;
        assert_eq!(
            format!("{f:?}"),
            "CUctx_flags(CU_CTX_SCHED_YIELD | CU_CTX_MAP_HOST)"
        );
        let odd = CUctx_flags::from_bits_retain(CUctx_flags::CU_CTX_MAP_HOST.bits() | 0x8000_0000);
        assert_eq!(odd.bits(), 0x8000_0008);
        assert_eq!(
            format!("{odd:?}"),
            "CUctx_flags(CU_CTX_MAP_HOST | 0x80000000)"
        );
        assert_eq!(format!("{:?}", CUctx_flags::empty()), "CUctx_flags(0x0)");
        assert!(f.contains(CUctx_flags::CU_CTX_MAP_HOST) && !f.contains(odd));
        assert!(f.intersects(odd) && (f & odd) == CUctx_flags::CU_CTX_MAP_HOST);
        let mut g = f;
        g.remove(CUctx_flags::CU_CTX_MAP_HOST);
        assert_eq!(g, CUctx_flags::CU_CTX_SCHED_YIELD);
        g.insert(CUctx_flags::CU_CTX_MAP_HOST);
        assert_eq!(g, f.union(CUctx_flags::empty()));
        // Unknown bits survive the operations that take a value as it is.
        assert_eq!((odd | f).bits(), 0x8000_000a);
        assert_eq!((odd ^ f).bits(), 0x8000_0002);
        assert_eq!((odd - f).bits(), 0x8000_0000);
        let mut h = odd;
        h.set(CUctx_flags::CU_CTX_MAP_HOST, false);
        h.toggle(CUctx_flags::CU_CTX_SCHED_SPIN);
        assert_eq!(h.bits(), 0x8000_0001);
    }

    #[test]
    fn flag_sets_know_exactly_the_header_flags() {
        use bitflags::Flags as _;
        // The known bits are the header's: CU_CTX_FLAGS_MASK covers them all.
        assert_eq!(CUctx_flags::all(), CUctx_flags::CU_CTX_FLAGS_MASK);
        assert_eq!(CUctx_flags::all().bits(), 0xff);
        assert_eq!(
            CUctx_flags::from_bits(0x0a),
            Some(CUctx_flags::CU_CTX_SCHED_YIELD | CUctx_flags::CU_CTX_MAP_HOST)
        );
        assert_eq!(CUctx_flags::from_bits(0x8000_0008), None);
        assert_eq!(
            CUctx_flags::from_bits_truncate(0x8000_0008),
            CUctx_flags::CU_CTX_MAP_HOST
        );
        // `!` is the complement within the known bits: an unknown bit is dropped.
        let odd = CUctx_flags::from_bits_retain(0x8000_0008);
        assert_eq!((!odd).bits(), 0xf7);
        assert_eq!(
            !CUctx_flags::empty(),
            CUctx_flags::all(),
            "the complement of nothing is every known flag"
        );
        assert!(odd.contains_unknown_bits() && !CUctx_flags::all().contains_unknown_bits());
        assert_eq!(
            CUctx_flags::from_name("CU_CTX_MAP_HOST"),
            Some(CUctx_flags::CU_CTX_MAP_HOST)
        );
        assert_eq!(CUctx_flags::from_name("CU_CTX_NOPE"), None);
        assert_eq!(CUctx_flags::FLAGS.len(), 12);
        assert_eq!(CUctx_flags::FLAGS[0].name(), "CU_CTX_SCHED_AUTO");
    }

    #[test]
    fn flag_sets_iterate_named_flags_then_the_rest() {
        let f = CUmemhostregister_flags::CU_MEMHOSTREGISTER_PORTABLE
            | CUmemhostregister_flags::CU_MEMHOSTREGISTER_DEVICEMAP
            | CUmemhostregister_flags::from_bits_retain(0x4000_0000);
        let names: Vec<_> = f.iter_names().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [
                "CU_MEMHOSTREGISTER_PORTABLE",
                "CU_MEMHOSTREGISTER_DEVICEMAP"
            ]
        );
        // `iter` yields the named flags, then the unknown bits as one value.
        let bits: Vec<_> = f.iter().map(|x| x.bits()).collect();
        assert_eq!(bits, [1, 2, 0x4000_0000]);
        let back: CUmemhostregister_flags = f.iter().collect();
        assert_eq!(back, f);
        let mut e = CUmemhostregister_flags::empty();
        e.extend(f.iter());
        assert_eq!(e, f);
        // Names in header order, each once its bits are all set; an alias or mask
        // whose bits are already named (CU_CTX_BLOCKING_SYNC, CU_CTX_SCHED_MASK) is
        // not repeated.
        let m = CUctx_flags::from_bits_retain(0x0f);
        assert_eq!(
            format!("{m:?}"),
            "CUctx_flags(CU_CTX_SCHED_SPIN | CU_CTX_SCHED_YIELD | CU_CTX_SCHED_BLOCKING_SYNC | CU_CTX_MAP_HOST)"
        );
        assert!(m.contains(CUctx_flags::CU_CTX_SCHED_MASK));
    }

    #[test]
    fn flag_sets_are_their_c_integer() {
        assert_eq!(
            core::mem::size_of::<CUctx_flags>(),
            core::mem::size_of::<core::ffi::c_uint>()
        );
        assert_eq!(
            core::mem::align_of::<CUstream_flags>(),
            core::mem::align_of::<core::ffi::c_uint>()
        );
        assert_eq!(CUctx_flags::default(), CUctx_flags::empty());
    }

    #[test]
    fn enums_print_their_c_name_or_their_value() {
        assert_eq!(
            format!("{:?}", CUresult::CUDA_ERROR_NO_DEVICE),
            "CUDA_ERROR_NO_DEVICE"
        );
        assert_eq!(
            CUresult::CUDA_ERROR_NO_DEVICE.name(),
            Some("CUDA_ERROR_NO_DEVICE")
        );
        assert_eq!(format!("{:?}", CUresult(123_456)), "CUresult(123456)");
        assert_eq!(CUresult(123_456).name(), None);
    }
}
