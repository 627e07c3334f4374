//! Expansion: the `Tool` impl (and marker impls) for a validated declaration,
//! the tool type, arguments and `Execute` impl of a tool function, or, after
//! errors, a fail-closed stand-in so one mistake causes no cascade.
//!
//! Generated code is a guest in the user's crate: absolute paths only, through
//! `crate = path` when given, and serde and schemars reached through
//! `toolgate::__private` so the user's crate need not depend on them.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::{DeriveInput, Generics, Ident, ItemFn, LitStr, Path};

use crate::ast::{self, Effect};
use crate::errors::{Errors, Message};
use crate::valid::{self, Gate, Model, Signature, Subject};

pub(crate) fn derive(input: &DeriveInput) -> TokenStream {
    let mut errors = Errors::new();
    valid::derive_input(input, &mut errors);
    let decl = ast::parse_derive(input, &mut errors);
    let krate = decl.krate();
    let model = valid::check(Subject::Type(&input.ident), &decl, &mut errors);
    match (errors.finish(), model) {
        (Ok(()), Some(model)) => tool_impl(&input.ident, &input.generics, &krate, &model),
        (Err(errors), _) => {
            let errors = errors.to_compile_error();
            let fallback =
                fallback_tool(&input.ident, &input.generics, &krate, decl.remote.is_some());
            quote! { #errors #fallback }
        }
        (Ok(()), None) => unreachable!("incomplete declarations always record an error"),
    }
}

pub(crate) fn function(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = match syn::parse2::<syn::Item>(item.clone()) {
        Ok(syn::Item::Fn(item)) => item,
        Ok(other) => {
            let error = not_a_function(&other).to_compile_error();
            return quote! { #error #other };
        }
        Err(error) => {
            let mut out = error.to_compile_error();
            out.extend(item);
            return out;
        }
    };
    let mut errors = Errors::new();
    let decl = ast::parse_attribute(args, &item.attrs, &mut errors);
    let f = ast::parse_function(item);
    let krate = decl.krate();
    let model = valid::check(Subject::Function(&f.item.sig.ident), &decl, &mut errors);
    let sig = valid::function(&f, &mut errors);
    let tool = ast::upper_camel_case(&f.item.sig.ident);
    match (errors.finish(), model, sig) {
        (Ok(()), Some(model), Some(sig)) => function_tool(&f.item, &tool, &krate, &model, &sig),
        (Err(errors), _, _) => {
            let errors = errors.to_compile_error();
            let fallback = fallback_function(&f.item, &tool, &krate);
            quote! { #errors #fallback }
        }
        (Ok(()), _, _) => unreachable!("an incomplete tool function always records an error"),
    }
}

fn not_a_function(item: &syn::Item) -> syn::Error {
    let span = match item {
        syn::Item::Struct(s) => s.ident.span(),
        syn::Item::Enum(e) => e.ident.span(),
        syn::Item::Union(u) => u.ident.span(),
        _ => Span::call_site(),
    };
    let message = Message::new("`#[toolgate::tool]` is for an `async fn`")
        .help("on a struct or enum, write `#[derive(Tool)]`, with `#[tool(...)]` below it");
    syn::Error::new(span, message)
}

fn effect_path(krate: &Path, effect: Effect, span: Span) -> TokenStream {
    match effect {
        Effect::ReadOnly => quote_spanned!(span=> #krate::ReadOnly),
        Effect::IdempotentWrite => quote_spanned!(span=> #krate::IdempotentWrite),
        Effect::NonIdempotentWrite => quote_spanned!(span=> #krate::NonIdempotentWrite),
    }
}

fn gate_path(krate: &Path, gate: Gate) -> TokenStream {
    match gate {
        Gate::Runs => quote!(#krate::gate::Runs),
        Gate::ApprovalByMarker => quote!(#krate::gate::ApprovalByMarker),
        Gate::ApprovalByEffect => quote!(#krate::gate::ApprovalByEffect),
        Gate::ApprovalByOperator => quote!(#krate::gate::ApprovalByOperator),
        Gate::WaitsForInput => quote!(#krate::gate::WaitsForInput),
    }
}

/// The `Tool` impl, and the marker impls, of a validated declaration: the one
/// expansion both the derive and the attribute use.
fn tool_impl(ident: &Ident, generics: &Generics, krate: &Path, model: &Model) -> TokenStream {
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let origin = if model.remote {
        quote!(#krate::Remote)
    } else {
        quote!(#krate::Local)
    };
    let effect = effect_path(krate, model.effect, model.effect_span);
    let gate = gate_path(krate, model.gate);
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
            type Gate = #gate;
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

/// The unit struct a tool function becomes, documented with the function's
/// doc comment.
fn tool_struct(item: &ItemFn, tool: &Ident) -> TokenStream {
    let vis = &item.vis;
    let docs = item.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let made_from = format!(
        "The tool made from `{}` by `#[toolgate::tool]`.",
        ast::unraw(&item.sig.ident)
    );
    quote! {
        #(#docs)*
        #[doc = ""]
        #[doc = #made_from]
        #[derive(
            ::core::clone::Clone,
            ::core::marker::Copy,
            ::core::fmt::Debug,
            ::core::default::Default,
        )]
        #vis struct #tool;
    }
}

fn function_tool(
    item: &ItemFn,
    tool: &Ident,
    krate: &Path,
    model: &Model,
    sig: &Signature,
) -> TokenStream {
    let vis = &item.vis;
    let function = &item.sig.ident;
    let tool_struct = tool_struct(item, tool);
    let tool_impl = tool_impl(tool, &Generics::default(), krate, model);
    let args_ty = format_ident!("{}Args", tool);
    let serde = crate_path(krate, "serde");
    let schemars = crate_path(krate, "schemars");
    let fields = sig.args.iter().map(|arg| {
        let (attrs, ident, ty) = (&arg.attrs, &arg.ident, &arg.ty);
        quote!(#(#attrs)* #vis #ident: #ty)
    });
    // Hygienic names, so a function called `args` or `output` is still called.
    let args = Ident::new("args", Span::mixed_site());
    let output = Ident::new("output", Span::mixed_site());
    let passed = sig.args.iter().map(|arg| {
        let ident = &arg.ident;
        quote!(#args.#ident)
    });
    let output_ty = &sig.output;
    let into = quote_spanned! {syn::spanned::Spanned::span(output_ty)=>
        <#output_ty as #krate::__private::ToolFunctionOutput>::into_tool_output(#output)
    };
    let async_span = item.sig.asyncness.map_or(item.sig.ident.span(), |a| a.span);
    let future = quote_spanned! {async_span=>
        impl ::core::future::Future<Output = #krate::ToolOutput> + ::core::marker::Send
    };
    quote! {
        // A tool function must be `async` (its future is what `Execute`
        // returns), so clippy's advice to drop an unused `async` cannot be
        // followed.
        #[allow(clippy::unused_async)]
        #item
        #tool_struct
        #tool_impl

        // Hidden rather than documented: schemars would send a doc comment
        // here to the model as the description of the arguments.
        #[doc(hidden)]
        #[derive(#krate::__private::serde::Deserialize, #krate::__private::schemars::JsonSchema)]
        #[serde(crate = #serde)]
        #[schemars(crate = #schemars)]
        #vis struct #args_ty {
            #(#fields,)*
        }

        #[automatically_derived]
        #[allow(clippy::all, clippy::pedantic)]
        impl #krate::Execute for #tool {
            type Args = #args_ty;
            fn execute(&self, #args: #args_ty) -> #future {
                async move {
                    let #output = #function(#(#passed),*).await;
                    #into
                }
            }
        }
    }
}

/// `#krate::__private::#name` as the string `#[serde(crate = "...")]` and
/// `#[schemars(crate = "...")]` take.
fn crate_path(krate: &Path, name: &str) -> LitStr {
    let name = Ident::new(name, Span::call_site());
    LitStr::new(
        &quote!(#krate::__private::#name).to_string(),
        Span::call_site(),
    )
}

/// After an error: the strictest legal declaration (a write that always asks),
/// so uses of the type elsewhere do not add errors of their own.
fn fallback_tool(ident: &Ident, generics: &Generics, krate: &Path, remote: bool) -> TokenStream {
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
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

/// After an error in a tool function: the function as written (it may be
/// unused now), and the tool type with the strictest legal declaration and an
/// `Execute` impl, so a registry that names the tool adds no errors of its
/// own. A function that takes `self` sits in an `impl` block, where no type can
/// be declared: it gets the function back alone.
fn fallback_function(item: &ItemFn, tool: &Ident, krate: &Path) -> TokenStream {
    if item.sig.receiver().is_some() {
        return quote!(#item);
    }
    let tool_struct = tool_struct(item, tool);
    let tool_impl = fallback_tool(tool, &Generics::default(), krate, false);
    let span = Span::call_site();
    quote_spanned! {span=>
        #[allow(dead_code)]
        #item
        #tool_struct
        #tool_impl
        #[automatically_derived]
        impl #krate::Execute for #tool {
            type Args = ();
            async fn execute(&self, _: ()) -> #krate::ToolOutput {
                #krate::ToolOutput::error("(this tool's declaration has errors)")
            }
        }
    }
}
