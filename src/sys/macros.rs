//! The macros that spell the C ABI's shapes in Rust: opaque handles, C enums as
//! integer newtypes, flag sets as integer newtypes with set operations, and all-zero
//! `Default`s.

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
macro_rules! c_enum {
    (#[doc = $doc:expr] $name:ident : $repr:ty { $($c:ident = $v:expr,)* }) => {
        #[doc = $doc]
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub $repr);

        impl $name {
            $(
                #[doc = concat!("`", stringify!($c), "`")]
                pub const $c: Self = Self($v);
            )*
            /// Every enumerator of the header this mirrors (cuda.h 12.9, or nvml.h), as
            /// (C name, value), in header order.
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

/// A C flag set: a `#[repr(transparent)]` newtype over its C integer with one
/// associated constant per flag and the set operations (`|`, `&`, `contains`, ...).
/// Any bits a newer driver sets are kept (`from_bits_retain`).
macro_rules! c_flags {
    (#[doc = $doc:expr] $name:ident : $repr:ty { $($c:ident = $v:expr,)* }) => {
        #[doc = $doc]
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name($repr);

        impl $name {
            $(
                #[doc = concat!("`", stringify!($c), "`")]
                pub const $c: Self = Self($v);
            )*
            /// Every flag of the header this mirrors, as (C name, value), in header order.
            pub const KNOWN: &'static [(&'static str, Self)] = &[$((stringify!($c), Self::$c)),*];

            /// No flag set.
            #[inline]
            pub const fn empty() -> Self {
                Self(0)
            }
            /// The C integer.
            #[inline]
            pub const fn bits(self) -> $repr {
                self.0
            }
            /// The set of exactly these bits, known to the header or not.
            #[inline]
            pub const fn from_bits_retain(bits: $repr) -> Self {
                Self(bits)
            }
            /// Whether no bit is set.
            #[inline]
            pub const fn is_empty(self) -> bool {
                self.0 == 0
            }
            /// Whether every bit of `other` is set here.
            #[inline]
            pub const fn contains(self, other: Self) -> bool {
                self.0 & other.0 == other.0
            }
            /// Whether any bit of `other` is set here.
            #[inline]
            pub const fn intersects(self, other: Self) -> bool {
                self.0 & other.0 != 0
            }
            /// The bits of both.
            #[inline]
            pub const fn union(self, other: Self) -> Self {
                Self(self.0 | other.0)
            }
            /// Sets the bits of `other`.
            #[inline]
            pub fn insert(&mut self, other: Self) {
                self.0 |= other.0;
            }
            /// Clears the bits of `other`.
            #[inline]
            pub fn remove(&mut self, other: Self) {
                self.0 &= !other.0;
            }
        }

        impl core::ops::BitOr for $name {
            type Output = Self;
            #[inline]
            fn bitor(self, other: Self) -> Self {
                Self(self.0 | other.0)
            }
        }

        impl core::ops::BitOrAssign for $name {
            #[inline]
            fn bitor_assign(&mut self, other: Self) {
                self.0 |= other.0;
            }
        }

        impl core::ops::BitAnd for $name {
            type Output = Self;
            #[inline]
            fn bitand(self, other: Self) -> Self {
                Self(self.0 & other.0)
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                const NAMES: &[(&str, u64)] = &[$((stringify!($c), $v as u64)),*];
                $crate::sys::macros::fmt_flags(f, stringify!($name), self.0 as u64, NAMES)
            }
        }
    };
}

/// A flag set's `Debug`: `Type(A | B | 0x40)` — the named flags wholly set, then any
/// bits no name covers, in hex; `Type(0x0)` when empty.
pub(crate) fn fmt_flags(
    f: &mut core::fmt::Formatter<'_>,
    ty: &str,
    bits: u64,
    names: &[(&str, u64)],
) -> core::fmt::Result {
    write!(f, "{ty}(")?;
    let mut rest = bits;
    let mut first = true;
    for &(name, v) in names {
        if v != 0 && bits & v == v && rest & v != 0 {
            f.write_str(if first { "" } else { " | " })?;
            f.write_str(name)?;
            rest &= !v;
            first = false;
        }
    }
    if rest != 0 || first {
        write!(f, "{}{rest:#x}", if first { "" } else { " | " })?;
    }
    f.write_str(")")
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
    use crate::sys::{CUctx_flags, CUresult};

    #[test]
    fn flag_sets_print_their_names_and_keep_unknown_bits() {
        let f = CUctx_flags::CU_CTX_SCHED_YIELD | CUctx_flags::CU_CTX_MAP_HOST;
        assert_eq!(
            format!("{f:?}"),
            "CUctx_flags(CU_CTX_SCHED_YIELD | CU_CTX_MAP_HOST)"
        );
        let odd = CUctx_flags::from_bits_retain(CUctx_flags::CU_CTX_MAP_HOST.bits() | 0x8000_0000);
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
