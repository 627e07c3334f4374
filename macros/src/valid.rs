//! Validation: the rules that the macros can see, reported under
//! the tokens the user wrote. The traits enforce the same rules on hand-written
//! impls; these errors come first and point more precisely.
//!
//! [`check`] holds the rules on declarations, for the derive and the attribute
//! alike; [`derive_input`] and [`function`] hold what only one of them can
//! get wrong.

use proc_macro2::Span;
use syn::{Attribute, DeriveInput, Ident, Pat, Type};

use crate::ast::{self, Declarations, Effect, Function};
use crate::errors::{Errors, Message};

/// What the declarations are attached to.
#[derive(Clone, Copy)]
pub(crate) enum Subject<'a> {
    /// A struct or enum with `#[derive(Tool)]`.
    Type(&'a Ident),
    /// An `async fn` with `#[toolgate::tool(...)]`.
    Function(&'a Ident),
}

impl<'a> Subject<'a> {
    fn ident(self) -> &'a Ident {
        match self {
            Subject::Type(ident) | Subject::Function(ident) => ident,
        }
    }

    /// A key as the user would add it, for an "add ..." help.
    fn key(self, key: &str) -> String {
        match self {
            Subject::Type(_) => format!("`#[tool({key})]`"),
            Subject::Function(_) => format!("`{key}` to `#[toolgate::tool(...)]`"),
        }
    }
}

/// The gate the expansion names, decided from validated declarations.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    Runs,
    ApprovalByMarker,
    ApprovalByEffect,
    ApprovalByOperator,
    WaitsForInput,
}

/// A declaration that passed every check.
pub(crate) struct Model {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) effect: Effect,
    pub(crate) effect_span: Span,
    pub(crate) remote: bool,
    pub(crate) marker: bool,
    pub(crate) input: Option<Type>,
    pub(crate) gate: Gate,
}

const INPUT_WHY: &str = "the approval scan runs before the input scan and the approval resume carries no input, so the tool would ask for approval on every turn and never run";

/// The rules on declarations. Returns the model when the declarations are
/// complete; whether they are lawful is for [`Errors::finish`] to say.
pub(crate) fn check(
    subject: Subject<'_>,
    decl: &Declarations,
    errors: &mut Errors,
) -> Option<Model> {
    let here = subject.ident();

    let effect = if let Some(e) = &decl.effect {
        e.value.0.map(|effect| (effect, e.value.1))
    } else {
        errors.spanned(
            here,
            Message::new(format_args!("`{here}` declares no effect"))
                .note("every tool must say what a call does")
                .help(format_args!(
                    "add {} with one of: {}",
                    subject.key("effect = ..."),
                    Effect::NAMES
                )),
        );
        None
    };

    let description = match (&decl.description, &decl.doc) {
        (Some(d), _) => Some(d.value.value().trim().to_owned()),
        (None, Some(doc)) => Some(doc.clone()),
        (None, None) => {
            errors.spanned(
                here,
                Message::new(format_args!("`{here}` has no description"))
                    .note("the model must be told what a tool does")
                    .help(format_args!(
                        "add a doc comment or {}",
                        subject.key("description = \"...\"")
                    )),
            );
            None
        }
    };

    check_origin(subject, decl, errors);
    check_input(decl, effect, errors);
    let name = tool_name(subject, decl, errors);

    let (effect, effect_span) = effect?;
    let remote = decl.remote.is_some();
    let gate = if decl.input.is_some() {
        Gate::WaitsForInput
    } else if decl.requires_approval.is_some() {
        Gate::ApprovalByMarker
    } else if decl.operator_approval.is_some() {
        Gate::ApprovalByOperator
    } else if !remote && effect.is_write() {
        Gate::ApprovalByEffect
    } else {
        Gate::Runs
    };
    Some(Model {
        name,
        description: description?,
        effect,
        effect_span,
        remote,
        marker: decl.requires_approval.is_some(),
        input: decl.input.as_ref().map(|i| i.value.clone()),
        gate,
    })
}

/// Rules 3 and 8 as the declarations show them: where the body lives, and
/// who decides on approval for a remote tool.
fn check_origin(subject: Subject<'_>, decl: &Declarations, errors: &mut Errors) {
    if let (Subject::Function(_), Some(remote)) = (subject, &decl.remote) {
        errors.spanned(
            &remote.key,
            Message::new("a tool function cannot be `remote`")
                .note("its body is this function, which runs here")
                .help("for a tool that lives on a server, derive `Tool` on a type and implement `RemoteTool`"),
        );
        return;
    }

    if let (Some(op), None) = (&decl.operator_approval, &decl.remote) {
        errors.spanned(
            &op.key,
            Message::new("`operator_approval` needs `remote`")
                .note("an operator's declaration stands in for reading the code only when the tool's body lives on a server; a builtin's approval follows from its effect or `requires_approval`"),
        );
    }

    if let Some(remote) = &decl.remote
        && decl.operator_approval.is_none()
        && decl.requires_approval.is_none()
    {
        errors.spanned(
            &remote.key,
            Message::new("a remote tool must name its approval source")
                .note("a server nobody has judged asks first")
                .help("add `operator_approval` (approval from the operator's per-server declaration, with `impl RemoteApproval`) or `requires_approval` (always ask)"),
        );
    }
}

/// The name the model calls the tool by, held to the tool-name rule whether
/// the user wrote it or it was derived.
///
/// A headline stays short: a long name is cut there (the span under it shows
/// the whole).
fn tool_name(subject: Subject<'_>, decl: &Declarations, errors: &mut Errors) -> String {
    if let Some(n) = &decl.name {
        let value = n.value.value();
        if let Some(problem) = name_problem(&value) {
            errors.spanned(
                &n.value,
                Message::new(format_args!(
                    "unusable tool name `{}`",
                    headline_name(&value.escape_debug().to_string())
                ))
                .note(problem),
            );
        }
        return value;
    }
    let (value, from) = match subject {
        Subject::Type(ident) => (ast::snake_case(ident), "the type's name in snake_case"),
        Subject::Function(ident) => (ast::unraw(ident), "the function's name"),
    };
    if let Some(problem) = name_problem(&value) {
        errors.spanned(
            subject.ident(),
            Message::new(format_args!(
                "unusable tool name `{}`",
                headline_name(&value)
            ))
            .note(format_args!("{problem}; the name defaults to {from}"))
            .help(format_args!("add {}", subject.key("name = \"...\""))),
        );
    }
    value
}

/// Rules 1, 2 and 5: nothing that approval binds may also require input.
fn check_input(decl: &Declarations, effect: Option<(Effect, Span)>, errors: &mut Errors) {
    let Some(input_key) = &decl.input else {
        return;
    };
    let key = &input_key.key;
    if let (Some(e), None) = (effect, &decl.remote)
        && e.0.is_write()
    {
        errors.spanned(
            key,
            Message::new(format_args!(
                "a tool that declares `{}` cannot require input",
                e.0.name()
            ))
            .note(format_args!("its write needs approval, and {INPUT_WHY}"))
            .help("remove `input`, or split the tool into one that asks for the data and one that writes"),
        );
        errors.at(e.1, "the write that needs approval is declared here");
    }
    if let Some(marker) = &decl.requires_approval {
        errors.spanned(
            key,
            Message::new("a tool with `requires_approval` cannot require input")
                .note(INPUT_WHY)
                .help("keep one of `requires_approval` and `input`"),
        );
        errors.spanned(&marker.key, "approval is required here");
    }
    if let Some(op) = &decl.operator_approval {
        errors.spanned(
            key,
            Message::new("a tool with `operator_approval` cannot require input")
                .note(format_args!(
                    "the operator's declaration defaults to \"approval required\", and {INPUT_WHY}"
                ))
                .help("remove `input` or `operator_approval`"),
        );
        errors.spanned(&op.key, "approval comes from the operator here");
    }
}

/// The tool-name rule (1–64 bytes of ASCII letters, digits, `_ - .`), checked
/// early on names known at compile time; the registry's boot check applies
/// `toolgate::registry::tool_name_problem` to every name at run time. The two
/// are held to one table of cases, `tool_name_cases.rs`.
fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("the name is empty")
    } else if name.len() > 64 {
        Some("the name is longer than 64 characters")
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    {
        Some("the name may only hold ASCII letters, digits, `_`, `-` and `.`")
    } else {
        None
    }
}

/// What only the derive can get wrong: the kind of type.
pub(crate) fn derive_input(input: &DeriveInput, errors: &mut Errors) {
    if let syn::Data::Union(_) = input.data {
        errors.spanned(
            &input.ident,
            Message::new("`#[derive(Tool)]` is for structs and enums")
                .note("a tool is a value the registry holds"),
        );
    }
}

/// A tool function's signature, once it passed every check: the arguments in
/// order, and what the function returns.
pub(crate) struct Signature {
    pub(crate) args: Vec<Arg>,
    pub(crate) output: Type,
}

/// One argument: the parameter's name and type, and the attributes its field
/// takes over.
pub(crate) struct Arg {
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
    pub(crate) attrs: Vec<Attribute>,
}

/// What only a tool function can get wrong: a signature the registry cannot
/// call with the model's arguments.
pub(crate) fn function(f: &Function, errors: &mut Errors) -> Option<Signature> {
    let sig = &f.item.sig;
    if sig.asyncness.is_none() {
        errors.spanned(
            sig.fn_token,
            Message::new("a tool function must be `async`")
                .note("the registry awaits every call")
                .help("write `async fn`"),
        );
    }
    if let Some(unsafety) = &sig.unsafety {
        errors.spanned(
            unsafety,
            Message::new("a tool function cannot be `unsafe`")
                .note("the registry calls it with whatever arguments the model sends"),
        );
    }
    let why_concrete = "each argument is deserialised from the model's JSON into one concrete type";
    if !sig.generics.params.is_empty() {
        errors.spanned(
            &sig.generics,
            Message::new("a tool function cannot be generic").note(why_concrete),
        );
    } else if let Some(clause) = &sig.generics.where_clause {
        errors.spanned(
            clause,
            Message::new("a tool function cannot have a `where` clause").note(why_concrete),
        );
    }
    if let Some(receiver) = sig.receiver() {
        errors.spanned(
            receiver,
            Message::new("a tool function cannot take `self`")
                .note("`#[toolgate::tool]` makes a tool type of its own from a free function, whose parameters are the tool's arguments")
                .help("move the function out of the `impl` block, or derive `Tool` on the type and implement `Execute`"),
        );
    }

    let mut args = Vec::new();
    for param in &f.params {
        for cfg in &param.cfg {
            errors.spanned(
                cfg,
                Message::new("a tool function's parameter cannot be conditional").note(
                    "each parameter is a field of the tool's arguments, which every call passes",
                ),
            );
        }
        match &param.ty {
            Type::Reference(_) => errors.spanned(
                &param.ty,
                Message::new("a tool function's parameter cannot borrow")
                    .note("arguments are deserialised from the model's JSON into owned values")
                    .help("take an owned type, such as `String` for `&str`"),
            ),
            Type::ImplTrait(_) => errors.spanned(
                &param.ty,
                Message::new("a tool function cannot be generic").note(why_concrete),
            ),
            _ => {}
        }
        match &param.pat {
            Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => args.push(Arg {
                ident: pat.ident.clone(),
                ty: param.ty.clone(),
                attrs: param.field_attrs.clone(),
            }),
            pat => errors.spanned(
                pat,
                Message::new("a tool function's parameter must be a plain name")
                    .note("each parameter is an argument the model fills in by its name")
                    .help("write `name: Type`, and destructure inside the function"),
            ),
        }
    }

    let output = match &sig.output {
        syn::ReturnType::Type(_, ty) => Some((**ty).clone()),
        syn::ReturnType::Default => {
            errors.spanned(
                &sig.ident,
                Message::new("a tool function must return `ToolOutput`")
                    .note("what it returns is what the model reads")
                    .help("add `-> toolgate::ToolOutput`"),
            );
            None
        }
    };
    Some(Signature {
        args,
        output: output?,
    })
}

/// A name as an error's headline shows it: at most 40 characters, cut with
/// `…`, so the headline stays within 100 characters.
fn headline_name(name: &str) -> String {
    if name.chars().count() <= 40 {
        name.to_owned()
    } else {
        let mut cut: String = name.chars().take(39).collect();
        cut.push('…');
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::name_problem;

    /// The same table `toolgate::registry::tool_name_problem` is tested
    /// against (ui-tests/tests/tool_names.rs).
    const CASES: &[(&str, Option<&str>)] = &include!("tool_name_cases.rs");

    #[test]
    fn name_rule_follows_the_shared_table() {
        for &(name, problem) in CASES {
            assert_eq!(name_problem(name), problem, "{name:?}");
        }
    }
}
