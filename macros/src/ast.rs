//! Parsing: `#[tool(...)]` and doc comments into [`Declarations`], recording
//! every error instead of stopping at the first.

use proc_macro2::Span;
use syn::{Attribute, DeriveInput, Ident, LitStr, Path, Type};

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

    pub(crate) fn marker(self) -> &'static str {
        match self {
            Effect::ReadOnly => "ReadOnly",
            Effect::IdempotentWrite => "IdempotentWrite",
            Effect::NonIdempotentWrite => "NonIdempotentWrite",
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

/// Collects errors so a user with three mistakes sees three errors.
#[derive(Default)]
pub(crate) struct Errors(Vec<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        self.0.push(error);
    }

    pub(crate) fn spanned(
        &mut self,
        tokens: impl quote::ToTokens,
        message: impl std::fmt::Display,
    ) {
        self.0.push(syn::Error::new_spanned(tokens, message));
    }

    pub(crate) fn at(&mut self, span: Span, message: impl std::fmt::Display) {
        self.0.push(syn::Error::new(span, message));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn into_compile_errors(self) -> proc_macro2::TokenStream {
        self.0.into_iter().map(|e| e.to_compile_error()).collect()
    }
}

/// Stores `value` under `slot`, or reports the key as repeated (at both places).
fn set<T>(errors: &mut Errors, slot: &mut Option<Spanned<T>>, key: &Ident, value: T) {
    if let Some(first) = slot {
        errors.spanned(
            key,
            format_args!("duplicate `#[tool]` key `{key}`: each key may be given once"),
        );
        errors.spanned(&first.key, format_args!("`{key}` first given here"));
    } else {
        *slot = Some(Spanned {
            key: key.clone(),
            value,
        });
    }
}

pub(crate) fn parse(input: &DeriveInput, errors: &mut Errors) -> Declarations {
    let mut decl = Declarations {
        doc: doc_comment(&input.attrs),
        ..Declarations::default()
    };
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("tool")) {
        if let Err(error) = attr.parse_nested_meta(|meta| parse_key(&meta, &mut decl, errors)) {
            errors.push(error);
        }
    }
    decl
}

fn parse_key(
    meta: &syn::meta::ParseNestedMeta<'_>,
    decl: &mut Declarations,
    errors: &mut Errors,
) -> syn::Result<()> {
    let Some(key) = meta.path.get_ident().cloned() else {
        errors.spanned(
            &meta.path,
            format_args!("unknown `#[tool]` key; expected one of: {KEYS}"),
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
                    "the description is empty: tell the model what the tool does",
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
                format_args!(
                    "unknown `#[tool]` key `{other}`: approval cannot be switched off; a declared write always needs approval, and `requires_approval` only adds it to a `read_only` tool; expected one of: {KEYS}"
                ),
            );
            return skip_value(meta);
        }
        other => {
            errors.spanned(
                &key,
                format_args!("unknown `#[tool]` key `{other}`; expected one of: {KEYS}"),
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
            format_args!(
                "unknown effect `{ident}`; expected one of: {}",
                Effect::NAMES
            ),
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
            "approval cannot be switched off: a declared write always needs approval, and a `read_only` tool without `requires_approval` already runs unattended; remove `requires_approval = false`",
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

/// The span of the type's name, where errors about the whole declaration go.
pub(crate) fn ident_span(input: &DeriveInput) -> Span {
    input.ident.span()
}

/// `ReadFile` → `read_file`; `HTTPGet` → `http_get`.
pub(crate) fn snake_case(ident: &Ident) -> String {
    let name = ident.to_string();
    let name = name.strip_prefix("r#").unwrap_or(&name);
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
