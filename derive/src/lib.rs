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
//! - a field whose type is written with a macro (`my_type!()`): the derive checks the
//!   type it reads, and a macro could expand to another type at each use.
//!
//! The struct must also be `Copy` and `'static`, as the trait requires. Padding is
//! allowed: any bytes in it are valid. The `#[repr(C)]` check sees the attributes
//! written before the derive runs (an attribute macro after it could remove one): it
//! keeps the kernel's layout, not soundness — a struct of `DeviceCopy` fields is valid
//! for every bit pattern under any layout, and `Module::function` checks the size.
//! Deriving gives up any invariant a struct keeps between its private fields: the
//! device may write any valid value of each field.

use proc_macro::TokenStream;
use quote::{quote, quote_spanned};
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
    for field in fields {
        no_macro(&field.ty)?;
    }
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let mut where_clause = where_clause.cloned().unwrap_or_else(|| parse_quote!(where));
    for param in input.generics.type_params() {
        let p = &param.ident;
        where_clause.predicates.push(parse_quote!(#p: 'static));
    }
    for field in fields {
        let ty = &field.ty;
        // Spanned at the field: an error names it.
        where_clause
            .predicates
            .push(parse_quote_spanned!(ty.span()=> #ty: ::oxicuda_driver::memory::DeviceCopy));
    }
    // The fields' real types, read out of a value of the struct (by value: a packed
    // field cannot be borrowed), not the tokens copied into the bounds above: each
    // must be `DeviceCopy` under the same bounds.
    let checks = fields.iter().enumerate().map(|(i, field)| {
        let member: syn::Member = match &field.ident {
            Some(ident) => syn::Member::Named(ident.clone()),
            None => syn::Member::Unnamed(syn::Index::from(i)),
        };
        quote_spanned!(field.ty.span()=> __oxicuda_is_device_copy(value.#member);)
    });
    Ok(quote! {
        // The struct has C layout (checked by the derive), every field is DeviceCopy
        // (each bit pattern valid, no host resources: the bounds below, and the
        // fields' own types in the check after), and padding may hold any bytes: every
        // bit pattern of the struct is a valid value.
        #[allow(clippy::multiple_bound_locations)]
        unsafe impl #impl_generics ::oxicuda_driver::memory::DeviceCopy for #name #ty_generics #where_clause {}

        const _: () = {
            fn __oxicuda_is_device_copy<T: ::oxicuda_driver::memory::DeviceCopy>(_: T) {}
            #[allow(dead_code, clippy::multiple_bound_locations)]
            fn __oxicuda_fields #impl_generics (value: &#name #ty_generics) #where_clause {
                #(#checks)*
            }
        };
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
                // `align(n)`, `packed(n)`: read and set aside.
                let content;
                syn::parenthesized!(content in meta.input);
                content.parse::<proc_macro2::TokenStream>()?;
            }
            Ok(())
        })?;
    }
    Ok(c)
}

/// Refuses a type written with a macro, anywhere inside `ty`: a macro may expand to
/// another type each time, so the bound the derive writes could check a type other
/// than the field's.
fn no_macro(ty: &syn::Type) -> syn::Result<()> {
    use syn::Type;
    let macro_error = |span| {
        Err(syn::Error::new(
            span,
            "DeviceCopy cannot be derived with a field type written by a macro: name the type",
        ))
    };
    match ty {
        Type::Macro(m) => macro_error(m.span()),
        Type::Array(a) => no_macro(&a.elem),
        Type::Group(g) => no_macro(&g.elem),
        Type::Paren(p) => no_macro(&p.elem),
        Type::Ptr(p) => no_macro(&p.elem),
        Type::Reference(r) => no_macro(&r.elem),
        Type::Slice(s) => no_macro(&s.elem),
        Type::Tuple(t) => t.elems.iter().try_for_each(no_macro),
        Type::Path(p) => {
            if let Some(q) = &p.qself {
                no_macro(&q.ty)?;
            }
            for segment in &p.path.segments {
                if let syn::PathArguments::AngleBracketed(args) = &segment.arguments {
                    for arg in &args.args {
                        if let syn::GenericArgument::Type(t) = arg {
                            no_macro(t)?;
                        }
                    }
                }
            }
            Ok(())
        }
        Type::Verbatim(v) => macro_error(v.span()),
        // Trait objects, `impl Trait`, `!`, `_`: not `DeviceCopy`, refused by the bounds.
        _ => Ok(()),
    }
}
