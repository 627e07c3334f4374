//! Parsing: `#[tool(...)]` keys and doc comments into [`Declarations`], and a
//! tool function into [`Function`], recording every error instead of stopping
//! at the first. The derive and the attribute read their keys with the same
//! code, so a key means the same thing, and is refused the same way, in both.

use proc_macro2::{Span, TokenStream};
use syn::{Attribute, DeriveInput, FnArg, Ident, ItemFn, LitStr, Pat, Path, Type};

use crate::errors::{Errors, Message};

/// Every key `#[tool(...)]` accepts, as the "expected one of" list says them.
pub(crate) const KEYS: &str =
    "name, description, effect, requires_approval, input, remote, operator_approval, crate";

/// A value together with the key token that set it, for errors that point at
/// what the user wrote.
pub(crate) struct Spanned<T> {
    pub(crate) key: Ident,
    pub(crate) value: T,
}

/// The three effects, as written after `effect =`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    ReadOnly,
    IdempotentWrite,
    NonIdempotentWrite,
}

impl Effect {
    pub(crate) const NAMES: &'static str = "read_only, idempotent_write, non_idempotent_write";

    fn parse(name: &str) -> Option<Self> {
        match name {
            "read_only" => Some(Effect::ReadOnly),
            "idempotent_write" => Some(Effect::IdempotentWrite),
            "non_idempotent_write" => Some(Effect::NonIdempotentWrite),
            _ => None,
        }
    }

    pub(crate) fn is_write(self) -> bool {
        self != Effect::ReadOnly
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Effect::ReadOnly => "read_only",
            Effect::IdempotentWrite => "idempotent_write",
            Effect::NonIdempotentWrite => "non_idempotent_write",
        }
    }
}

/// Everything `#[tool(...)]` and the doc comment declared.
#[derive(Default)]
pub(crate) struct Declarations {
    pub(crate) name: Option<Spanned<LitStr>>,
    pub(crate) description: Option<Spanned<LitStr>>,
    /// The effect and the span of its value; `None` inside when the name was
    /// unknown (already reported).
    pub(crate) effect: Option<Spanned<(Option<Effect>, Span)>>,
    pub(crate) requires_approval: Option<Spanned<()>>,
    pub(crate) input: Option<Spanned<Type>>,
    pub(crate) remote: Option<Spanned<()>>,
    pub(crate) operator_approval: Option<Spanned<()>>,
    pub(crate) krate: Option<Spanned<Path>>,
    /// The doc comment, joined.
    pub(crate) doc: Option<String>,
}

impl Declarations {
    /// Where `toolgate` is: `crate = path`, or `::toolgate`.
    pub(crate) fn krate(&self) -> Path {
        self.krate
            .as_ref()
            .map_or_else(|| syn::parse_quote!(::toolgate), |k| k.value.clone())
    }
}

/// Stores `value` under `slot`, or reports the key as repeated (at both places).
fn set<T>(errors: &mut Errors, slot: &mut Option<Spanned<T>>, key: &Ident, value: T) {
    if let Some(first) = slot {
        errors.spanned(
            key,
            Message::new(format_args!("duplicate `#[tool]` key `{key}`"))
                .help("each key may be given once"),
        );
        errors.spanned(&first.key, format_args!("`{key}` first given here"));
    } else {
        *slot = Some(Spanned {
            key: key.clone(),
            value,
        });
    }
}

/// The derive: keys from every `#[tool(...)]` on the type.
pub(crate) fn parse_derive(input: &DeriveInput, errors: &mut Errors) -> Declarations {
    let mut decl = Declarations {
        doc: doc_comment(&input.attrs),
        ..Declarations::default()
    };
    parse_tool_attrs(&input.attrs, &mut decl, errors);
    decl
}

/// The attribute: keys from its arguments, then from any `#[tool(...)]`
/// below it on the function (which [`parse_function`] removes).
pub(crate) fn parse_attribute(
    args: TokenStream,
    attrs: &[Attribute],
    errors: &mut Errors,
) -> Declarations {
    let mut decl = Declarations {
        doc: doc_comment(attrs),
        ..Declarations::default()
    };
    let parser = syn::meta::parser(|meta| parse_key(&meta, &mut decl, errors));
    if let Err(error) = syn::parse::Parser::parse2(parser, args) {
        errors.push(error);
    }
    parse_tool_attrs(attrs, &mut decl, errors);
    decl
}

fn parse_tool_attrs(attrs: &[Attribute], decl: &mut Declarations, errors: &mut Errors) {
    for attr in attrs.iter().filter(|a| a.path().is_ident("tool")) {
        if let Err(error) = attr.parse_nested_meta(|meta| parse_key(&meta, decl, errors)) {
            errors.push(error);
        }
    }
}

fn parse_key(
    meta: &syn::meta::ParseNestedMeta<'_>,
    decl: &mut Declarations,
    errors: &mut Errors,
) -> syn::Result<()> {
    let Some(key) = meta.path.get_ident().cloned() else {
        errors.spanned(
            &meta.path,
            Message::new("unknown `#[tool]` key").help(format_args!("expected one of: {KEYS}")),
        );
        return skip_value(meta);
    };
    match key.to_string().as_str() {
        "name" => {
            let value: LitStr = meta.value()?.parse()?;
            set(errors, &mut decl.name, &key, value);
        }
        "description" => {
            let value: LitStr = meta.value()?.parse()?;
            if value.value().trim().is_empty() {
                errors.spanned(
                    &value,
                    Message::new("the description is empty")
                        .help("tell the model what the tool does"),
                );
            }
            set(errors, &mut decl.description, &key, value);
        }
        "effect" => parse_effect(meta, decl, &key, errors)?,
        "requires_approval" => {
            marker_value(meta, errors)?;
            set(errors, &mut decl.requires_approval, &key, ());
        }
        "input" => {
            let value: Type = meta.value()?.parse()?;
            set(errors, &mut decl.input, &key, value);
        }
        "remote" => {
            flag(meta, &key, errors)?;
            set(errors, &mut decl.remote, &key, ());
        }
        "operator_approval" => {
            flag(meta, &key, errors)?;
            set(errors, &mut decl.operator_approval, &key, ());
        }
        "crate" => {
            let value: Path = meta.value()?.parse()?;
            set(errors, &mut decl.krate, &key, value);
        }
        other if other.contains("approval") || other.contains("approve") => {
            errors.spanned(
                &key,
                Message::new(format_args!(
                    "unknown `#[tool]` key `{other}`: approval cannot be switched off"
                ))
                .note("a declared write always needs approval, and `requires_approval` only adds it to a `read_only` tool")
                .help(format_args!("expected one of: {KEYS}")),
            );
            return skip_value(meta);
        }
        other => {
            errors.spanned(
                &key,
                Message::new(format_args!("unknown `#[tool]` key `{other}`"))
                    .help(format_args!("expected one of: {KEYS}")),
            );
            return skip_value(meta);
        }
    }
    Ok(())
}

fn parse_effect(
    meta: &syn::meta::ParseNestedMeta<'_>,
    decl: &mut Declarations,
    key: &Ident,
    errors: &mut Errors,
) -> syn::Result<()> {
    let value = meta.value()?;
    if value.peek(LitStr) {
        let lit: LitStr = value.parse()?;
        errors.spanned(
            &lit,
            format_args!(
                "write the effect without quotes: `effect = {}`",
                lit.value()
            ),
        );
        let effect = Effect::parse(&lit.value());
        set(errors, &mut decl.effect, key, (effect, lit.span()));
        return Ok(());
    }
    let ident: Ident = value.parse()?;
    let effect = Effect::parse(&ident.to_string());
    if effect.is_none() {
        errors.spanned(
            &ident,
            Message::new(format_args!("unknown effect `{ident}`"))
                .help(format_args!("expected one of: {}", Effect::NAMES)),
        );
    }
    set(errors, &mut decl.effect, key, (effect, ident.span()));
    Ok(())
}

/// `requires_approval` is a flag; `= false` is an attempt to switch approval
/// off and gets a message saying it cannot be.
fn marker_value(meta: &syn::meta::ParseNestedMeta<'_>, errors: &mut Errors) -> syn::Result<()> {
    if !meta.input.peek(syn::Token![=]) {
        return Ok(());
    }
    let value: syn::Expr = meta.value()?.parse()?;
    let off =
        matches!(&value, syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Bool(b), .. }) if !b.value);
    if off {
        errors.spanned(
            &value,
            Message::new("approval cannot be switched off")
                .note("a declared write always needs approval, and a `read_only` tool without `requires_approval` already runs unattended")
                .help("remove `requires_approval = false`"),
        );
    } else {
        errors.spanned(
            &value,
            "`requires_approval` takes no value: write `#[tool(requires_approval)]`",
        );
    }
    Ok(())
}

fn flag(
    meta: &syn::meta::ParseNestedMeta<'_>,
    key: &Ident,
    errors: &mut Errors,
) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        let value: syn::Expr = meta.value()?.parse()?;
        errors.spanned(
            &value,
            format_args!("`{key}` takes no value: write `#[tool({key})]`"),
        );
    }
    Ok(())
}

/// Consumes `= value` or `(...)` after an unknown key so parsing goes on.
fn skip_value(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        let _: syn::Expr = meta.value()?.parse()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _ = meta.parse_nested_meta(|inner| skip_value(&inner));
    }
    Ok(())
}

/// The doc comment's text, lines trimmed and joined, or `None` when there is
/// none or it is blank.
fn doc_comment(attrs: &[Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("doc")) {
        if let syn::Meta::NameValue(nv) = &attr.meta
            && let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
        {
            lines.push(s.value().trim().to_owned());
        }
    }
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// A tool function, split into what stays on the function and what becomes
/// the tool's arguments.
pub(crate) struct Function {
    /// The function as it is emitted again: without the `#[tool(...)]`
    /// attributes (read into the declarations) and without the parameter
    /// attributes that belong to the arguments' fields (rustc refuses doc
    /// comments on parameters).
    pub(crate) item: ItemFn,
    /// Every parameter but a `self` receiver, in order.
    pub(crate) params: Vec<Param>,
}

/// One parameter of a tool function.
pub(crate) struct Param {
    /// `#[doc]`, `#[serde]` and `#[schemars]`: moved to the argument's field,
    /// where the doc comment becomes the schema's description.
    pub(crate) field_attrs: Vec<Attribute>,
    /// `#[cfg]` and `#[cfg_attr]`, which the arguments cannot follow.
    pub(crate) cfg: Vec<Attribute>,
    pub(crate) pat: Pat,
    pub(crate) ty: Type,
}

pub(crate) fn parse_function(mut item: ItemFn) -> Function {
    item.attrs.retain(|a| !a.path().is_ident("tool"));
    let mut params = Vec::new();
    for arg in &mut item.sig.inputs {
        match arg {
            FnArg::Typed(typed) => {
                let (field_attrs, kept): (Vec<_>, Vec<_>) = typed.attrs.drain(..).partition(|a| {
                    let path = a.path();
                    path.is_ident("doc") || path.is_ident("serde") || path.is_ident("schemars")
                });
                typed.attrs = kept;
                params.push(Param {
                    field_attrs,
                    cfg: typed
                        .attrs
                        .iter()
                        .filter(|a| a.path().is_ident("cfg") || a.path().is_ident("cfg_attr"))
                        .cloned()
                        .collect(),
                    pat: (*typed.pat).clone(),
                    ty: (*typed.ty).clone(),
                });
            }
            FnArg::Receiver(receiver) => receiver.attrs.retain(|a| !a.path().is_ident("doc")),
        }
    }
    Function { item, params }
}

/// `ReadFile` → `read_file`; `HTTPGet` → `http_get`.
pub(crate) fn snake_case(ident: &Ident) -> String {
    let name = unraw(ident);
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev_lower =
                i > 0 && (chars[i - 1].is_lowercase() || chars[i - 1].is_ascii_digit());
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let prev_upper = i > 0 && chars[i - 1].is_uppercase();
            if i > 0 && (prev_lower || (prev_upper && next_lower)) && !out.ends_with('_') {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `delete_file` → `DeleteFile`: the tool type made from a function.
pub(crate) fn upper_camel_case(ident: &Ident) -> Ident {
    let mut out = String::new();
    for word in unraw(ident).split('_').filter(|w| !w.is_empty()) {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
            out.push_str(chars.as_str());
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert_str(0, "Tool");
    }
    Ident::new(&out, ident.span())
}

/// The identifier as the model should read it: without `r#`.
pub(crate) fn unraw(ident: &Ident) -> String {
    let name = ident.to_string();
    match name.strip_prefix("r#") {
        Some(bare) => bare.to_owned(),
        None => name,
    }
}

#[cfg(test)]
mod tests {
    use super::{snake_case, upper_camel_case};
    use syn::Ident;

    fn ident(name: &str) -> Ident {
        syn::parse_str(name).expect("a valid identifier")
    }

    #[test]
    fn type_names_become_snake_case() {
        for (ty, name) in [
            ("ReadFile", "read_file"),
            ("HTTPGet", "http_get"),
            ("HTTPFetchPage", "http_fetch_page"),
            ("Sha256Sum", "sha256_sum"),
            ("r#Type", "type"),
        ] {
            assert_eq!(snake_case(&ident(ty)), name, "{ty}");
        }
    }

    #[test]
    fn function_names_become_upper_camel_case() {
        for (function, ty) in [
            ("delete_file", "DeleteFile"),
            ("read", "Read"),
            ("http_get_v2", "HttpGetV2"),
            ("_private_helper", "PrivateHelper"),
            ("r#type", "Type"),
            ("__", "Tool"),
        ] {
            assert_eq!(
                upper_camel_case(&ident(function)).to_string(),
                ty,
                "{function}"
            );
        }
    }
}
