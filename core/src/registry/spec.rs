//! What the model is told of each offered tool.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool as the model is told about it ([`Offered::specs`](super::Offered::specs)).
///
/// A model is sent `name`, the tool's wire name ([`crate::wire`]): letters,
/// digits, `_` and `-`, at most 48 characters, as every model API takes. The
/// transcript it is handed keeps local names (`local_name`, what the digest
/// and the decisions bind), so a model client writes each past call under
/// the wire name of its `local_name`; the calls it returns may name either,
/// and the run resolves them ([`Catalogue::resolve`](super::Catalogue::resolve)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name to call it by: its wire name.
    pub name: String,
    /// Its local name, as the transcript writes it.
    pub local_name: String,
    /// What it does.
    pub description: String,
    /// Its parameter schema.
    pub parameters: Value,
}

impl ToolSpec {
    /// The wire name of the tool a transcript names `local_name`, among
    /// `specs`; the name itself for a tool not among them (a call the model
    /// made to a tool it was not offered keeps the name it used).
    pub fn wire_name<'a>(specs: &'a [ToolSpec], local_name: &'a str) -> &'a str {
        specs
            .iter()
            .find(|spec| spec.local_name == local_name)
            .map_or(local_name, |spec| spec.name.as_str())
    }
}
