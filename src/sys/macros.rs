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
                Self::KNOWN.iter().find(|(_, v)| *v == self).map(|(n, _)| *n)
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match self.name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, concat!(stringify!($name), "({})"), self.0),
                }
            }
        }
    };
}

/// A C flag set: a `bitflags` type, `#[repr(transparent)]` over its C integer.
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
