//! The macros of `toolgate`: `#[derive(Tool)]` and `#[toolgate::tool]`.
//! Depend on `toolgate`, which re-exports and documents them; this crate is an
//! implementation detail.
//!
//! Both read the same keys with the same code: parse (`ast`), validate
//! (`valid`), expand (`expand`), with every error recorded in one collector
//! (`errors`).

mod ast;
mod errors;
mod expand;
mod valid;

use proc_macro::TokenStream;

// The two macros are documented on their re-exports in `toolgate`; rustdoc
// appends an original's docs to an inlined re-export's, so these carry none.

#[allow(missing_docs, reason = "documented on the re-export in `toolgate`")]
#[proc_macro_derive(Tool, attributes(tool))]
pub fn derive_tool(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    expand::derive(&input).into()
}

#[allow(missing_docs, reason = "documented on the re-export in `toolgate`")]
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::function(args.into(), item.into()).into()
}
