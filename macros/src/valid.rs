//! Validation: the rules of SPEC §3 that the derive can see, reported under
//! the tokens the user wrote. The traits enforce the same rules on hand-written
//! impls; these errors come first and point more precisely.

use proc_macro2::Span;
use syn::{DeriveInput, Type};

use crate::ast::{self, Declarations, Effect, Errors};

/// The gate the expansion names, decided from validated declarations.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    Runs,
    ApprovalByMarker,
    ApprovalByEffect,
    ApprovalByOperator,
    WaitsForInput,
}

impl Gate {
    pub(crate) fn type_name(self) -> &'static str {
        match self {
            Gate::Runs => "Runs",
            Gate::ApprovalByMarker => "ApprovalByMarker",
            Gate::ApprovalByEffect => "ApprovalByEffect",
            Gate::ApprovalByOperator => "ApprovalByOperator",
            Gate::WaitsForInput => "WaitsForInput",
        }
    }
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

pub(crate) fn check(
    input: &DeriveInput,
    decl: &Declarations,
    errors: &mut Errors,
) -> Option<Model> {
    let here = ast::ident_span(input);

    if !matches!(input.data, syn::Data::Struct(_) | syn::Data::Enum(_)) {
        errors.at(
            here,
            "`#[derive(Tool)]` is for structs and enums: a tool is a value the registry holds",
        );
    }

    let effect = if let Some(e) = &decl.effect {
        e.value.0.map(|effect| (effect, e.value.1))
    } else {
        {
            errors.at(
                here,
                format_args!(
                    "`{}` declares no effect: every tool must say what a call does; add `#[tool(effect = ...)]` with one of: {}",
                    input.ident,
                    Effect::NAMES
                ),
            );
            None
        }
    };

    let description = match (&decl.description, &decl.doc) {
        (Some(d), _) => Some(d.value.value().trim().to_owned()),
        (None, Some(doc)) => Some(doc.clone()),
        (None, None) => {
            errors.at(
                here,
                format_args!(
                    "`{}` has no description: the model must be told what a tool does; add a doc comment or `#[tool(description = \"...\")]`",
                    input.ident
                ),
            );
            None
        }
    };

    if let (Some(op), None) = (&decl.operator_approval, &decl.remote) {
        errors.spanned(
            &op.key,
            "`operator_approval` needs `remote`: an operator's declaration stands in for reading the code only when the tool's body lives on a server; a builtin's approval follows from its effect or `requires_approval`",
        );
    }

    if let Some(remote) = &decl.remote
        && decl.operator_approval.is_none()
        && decl.requires_approval.is_none()
    {
        errors.spanned(
            &remote.key,
            "a remote tool must name its approval source: a server nobody has judged asks first; add `operator_approval` (approval from the operator's per-server declaration, with `impl RemoteApproval`) or `requires_approval` (always ask)",
        );
    }

    check_input(decl, effect, errors);

    let name = match &decl.name {
        Some(n) => {
            let value = n.value.value();
            if let Some(problem) = name_problem(&value) {
                errors.spanned(
                    &n.value,
                    format_args!("unusable tool name `{value}`: {problem}"),
                );
            }
            value
        }
        None => ast::snake_case(&input.ident),
    };

    let (effect, effect_span) = effect?;
    let description = description?;
    if !errors.is_empty() {
        return None;
    }
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
        description,
        effect,
        effect_span,
        remote,
        marker: decl.requires_approval.is_some(),
        input: decl.input.as_ref().map(|i| i.value.clone()),
        gate,
    })
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
            format_args!(
                "a tool that declares `{}` cannot require input: its write needs approval, and {INPUT_WHY}; remove `input`, or split the tool into one that asks for the data and one that writes",
                e.0.name()
            ),
        );
        errors.at(e.1, "the write that needs approval is declared here");
    }
    if let Some(marker) = &decl.requires_approval {
        errors.spanned(
            key,
            format_args!(
                "a tool with `requires_approval` cannot require input: {INPUT_WHY}; keep one of `requires_approval` and `input`"
            ),
        );
        errors.spanned(&marker.key, "approval is required here");
    }
    if let Some(op) = &decl.operator_approval {
        errors.spanned(
            key,
            format_args!(
                "a tool with `operator_approval` cannot require input: the operator's declaration defaults to \"approval required\", and {INPUT_WHY}; remove `input` or `operator_approval`"
            ),
        );
        errors.spanned(&op.key, "approval comes from the operator here");
    }
}

/// The tool-name rule (1–64 ASCII letters, digits, `_ - .`), checked early on
/// literal names; the registry's boot check applies `toolgate::registry::tool_name_problem`
/// to every name at run time.
fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("a name must not be empty")
    } else if name.len() > 64 {
        Some("a name may be at most 64 characters long")
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    {
        Some("a name may only hold ASCII letters, digits, `_`, `-` and `.`")
    } else {
        None
    }
}
