//! The record types of the ABI manifest (see `manifest.rs`).
#![allow(missing_docs)]

/// A constant as Rust sees it.
#[derive(Debug, Clone, Copy)]
pub struct Constant {
    pub c_name: &'static str,
    /// 12 or 13: the header that declares it (13.x additions are checked against the
    /// 13.x header).
    pub header: u32,
    pub value: i128,
}

impl Constant {
    pub const fn new(c_name: &'static str, value: i128) -> Self {
        Self {
            c_name,
            header: 12,
            value,
        }
    }
    pub const fn cuda13(c_name: &'static str, value: i128) -> Self {
        Self {
            c_name,
            header: 13,
            value,
        }
    }
}

/// A field at any depth of a struct: its C path (`res.array.hArray`), offset and size.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub c_path: &'static str,
    pub offset: usize,
    pub size: usize,
}

/// A struct or union as Rust lays it out.
#[derive(Debug, Clone)]
pub struct StructLayout {
    /// How C spells the type (`struct CUDA_MEMCPY2D_st`, `CUuuid`, ...).
    pub c_name: &'static str,
    pub size: usize,
    pub align: usize,
    pub fields: Vec<Field>,
}

/// The size of the place a raw pointer points to, without reading it.
pub const fn size_of_pointee<T>(_: *const T) -> usize {
    core::mem::size_of::<T>()
}

/// `field!(Type, "c.path", rust.path)`: offset and size of a (possibly nested) field.
macro_rules! field {
    ($t:ty, $c_path:literal, $($f:ident).+) => {{
        let v = core::mem::MaybeUninit::<$t>::uninit();
        let p = v.as_ptr();
        Field {
            c_path: $c_path,
            offset: core::mem::offset_of!($t, $($f).+),
            // SAFETY: only the address of the field is taken, nothing is read.
            size: $crate::sys::manifest_support::size_of_pointee(unsafe { &raw const (*p).$($f).+ }),
        }
    }};
}
pub(crate) use field;
