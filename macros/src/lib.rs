//! The `#[derive(Tool)]` macro of `toolgate`. Depend on `toolgate`, which
//! re-exports it and documents it; this crate is an implementation detail.

mod ast;
mod expand;
mod valid;

use proc_macro::TokenStream;

/// Derives `toolgate::Tool`. Documented on the re-export in `toolgate`.
#[proc_macro_derive(Tool, attributes(tool))]
pub fn derive_tool(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    expand::derive(&input).into()
}
