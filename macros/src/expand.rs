//! Expansion: the `Tool` impl (and marker impls) for a validated declaration,
//! or, after errors, a fail-closed stand-in so one mistake causes no cascade.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::{DeriveInput, Path};

use crate::ast::{self, Errors};
use crate::valid::{self, Gate};

pub(crate) fn derive(input: &DeriveInput) -> TokenStream {
    let mut errors = Errors::default();
    let decl = ast::parse(input, &mut errors);
    let krate: Path = decl
        .krate
        .as_ref()
        .map_or_else(|| syn::parse_quote!(::toolgate), |k| k.value.clone());
    match valid::check(input, &decl, &mut errors) {
        Some(model) if errors.is_empty() => expand(input, &krate, &model),
        _ => {
            let fallback = fallback(input, &krate, decl.remote.is_some());
            let errors = errors.into_compile_errors();
            quote! { #errors #fallback }
        }
    }
}

fn expand(input: &DeriveInput, krate: &Path, model: &valid::Model) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let origin = if model.remote {
        quote!(#krate::Remote)
    } else {
        quote!(#krate::Local)
    };
    let effect_marker = format_ident!("{}", model.effect.marker(), span = model.effect_span);
    let effect = quote_spanned!(model.effect_span=> #krate::#effect_marker);
    let gate = format_ident!("{}", model.gate.type_name());
    let name = &model.name;
    let description = &model.description;
    let marker = model.marker.then(|| {
        quote! {
            #[automatically_derived]
            impl #impl_generics #krate::RequiresApproval for #ident #ty_generics #where_clause {}
        }
    });
    let input_impl = model.input.as_ref().map(|ty| {
        quote_spanned! {syn::spanned::Spanned::span(ty)=>
            #[automatically_derived]
            impl #impl_generics #krate::RequiresInput for #ident #ty_generics #where_clause {
                type Input = #ty;
            }
        }
    });
    debug_assert!(model.input.is_none() || model.gate == Gate::WaitsForInput);
    quote! {
        #[automatically_derived]
        #[allow(clippy::all, clippy::pedantic)]
        impl #impl_generics #krate::Tool for #ident #ty_generics #where_clause {
            type Origin = #origin;
            type Effect = #effect;
            type Gate = #krate::gate::#gate;
            fn name(&self) -> &str {
                #name
            }
            fn description(&self) -> &str {
                #description
            }
        }
        #marker
        #input_impl
        const _: () = #krate::__private::VERSION_0_1;
    }
}

/// After an error: the strictest legal declaration (a write that always asks),
/// so uses of the type elsewhere do not add errors of their own.
fn fallback(input: &DeriveInput, krate: &Path, remote: bool) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let name = ast::snake_case(ident);
    let span = Span::call_site();
    let (origin, gate, marker) = if remote {
        (
            quote_spanned!(span=> #krate::Remote),
            quote_spanned!(span=> #krate::gate::ApprovalByMarker),
            quote_spanned! {span=>
                #[automatically_derived]
                impl #impl_generics #krate::RequiresApproval for #ident #ty_generics #where_clause {}
            },
        )
    } else {
        (
            quote_spanned!(span=> #krate::Local),
            quote_spanned!(span=> #krate::gate::ApprovalByEffect),
            TokenStream::new(),
        )
    };
    quote_spanned! {span=>
        #[automatically_derived]
        impl #impl_generics #krate::Tool for #ident #ty_generics #where_clause {
            type Origin = #origin;
            type Effect = #krate::NonIdempotentWrite;
            type Gate = #gate;
            fn name(&self) -> &str {
                #name
            }
            fn description(&self) -> &str {
                "(this tool's declaration has errors)"
            }
        }
        #marker
    }
}
