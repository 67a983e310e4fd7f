//! `#[derive(DeviceCopy)]` for [oxicuda-driver](https://docs.rs/oxicuda-driver): the
//! `unsafe impl DeviceCopy` a kernel-argument or buffer-element struct needs, written
//! only when it holds. Use it through the crate's `derive` feature
//! (`oxicuda_driver::memory::DeviceCopy` is then the trait and the derive).
//!
//! The derive refuses, at compile time:
//! - an enum or a union (not every bit pattern is one of an enum's variants; a union's
//!   fields are not checked);
//! - a struct without `#[repr(C)]` or `#[repr(transparent)]` (the kernel's C struct
//!   must have the same layout; Rust's own layout is unspecified);
//! - a field whose type is not `DeviceCopy` itself (a `bool`, a reference, a pointer,
//!   a `Vec`): the error points at the field.
//!
//! The struct must also be `Copy` and `'static`, as the trait requires. Padding is
//! allowed: any bytes in it are valid.

use proc_macro::TokenStream;
use quote::quote;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, parse_macro_input, parse_quote, parse_quote_spanned};

/// Implements `oxicuda_driver::memory::DeviceCopy` for a `#[repr(C)]` (or
/// `#[repr(transparent)]`) struct whose every field is `DeviceCopy` (see the crate
/// docs for what is refused).
#[proc_macro_derive(DeviceCopy)]
pub fn derive_device_copy(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn expand(input: &DeriveInput) -> syn::Result<proc_macro2::TokenStream> {
    let fields = match &input.data {
        Data::Struct(s) => &s.fields,
        Data::Enum(e) => {
            return Err(syn::Error::new(
                e.enum_token.span,
                "DeviceCopy cannot be derived for an enum: the device may write any bits, and not every bit pattern is one of its variants",
            ));
        }
        Data::Union(u) => {
            return Err(syn::Error::new(
                u.union_token.span,
                "DeviceCopy cannot be derived for a union: implement it by hand, with a SAFETY comment",
            ));
        }
    };
    if !has_c_layout(input)? {
        return Err(syn::Error::new(
            input.ident.span(),
            "DeviceCopy needs #[repr(C)] (or #[repr(transparent)]): the kernel's struct must have the same layout, and Rust's own is unspecified",
        ));
    }
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let mut where_clause = where_clause.cloned().unwrap_or_else(|| parse_quote!(where));
    for field in fields {
        let ty = &field.ty;
        // Spanned at the field: an error names it.
        where_clause
            .predicates
            .push(parse_quote_spanned!(ty.span()=> #ty: ::oxicuda_driver::memory::DeviceCopy));
    }
    Ok(quote! {
        // The struct has C layout (checked by the derive), every field is DeviceCopy
        // (each bit pattern valid, no host resources: the bounds below), and padding
        // may hold any bytes: every bit pattern of the struct is a valid value.
        unsafe impl #impl_generics ::oxicuda_driver::memory::DeviceCopy for #name #ty_generics #where_clause {}
    })
}

/// Whether the struct is `#[repr(C)]` or `#[repr(transparent)]` (with `packed` or
/// `align(n)` beside, or not).
fn has_c_layout(input: &DeriveInput) -> syn::Result<bool> {
    let mut c = false;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("repr")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("C") || meta.path.is_ident("transparent") {
                c = true;
            } else if meta.input.peek(syn::token::Paren) {
                let _content;
                syn::parenthesized!(_content in meta.input);
            }
            Ok(())
        })?;
    }
    Ok(c)
}
