//! The registry: builtins with their static types, providers asked lazily,
//! a boot check, allow-lists and `explain`.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::effect::Origin;
use crate::erased::{BoxFuture, DynTool, ErasedTool};
use crate::gate::IsLocal;
use crate::tool::Execute;

mod arguments;
mod boot;
mod explain;
mod spec;

pub use boot::{BootError, BootProblem, DropReason, DroppedTool, ProviderFailure};
pub use explain::Explanation;
pub use spec::ToolSpec;

/// Why a local tool may not take `name`, if it may not: a `.` marks a
/// server's tool (`server.tool`), and a local tool spelled like one could
/// pass for that server's tool — to a reviewer, and to any rule that finds
/// a server by a tool's name.
pub(crate) fn local_name_problem(name: &str) -> Option<&'static str> {
    name.contains('.').then_some(
        "a local tool's name may not hold `.`, which marks a server's tool (`server.tool`)",
    )
}

/// Why a tool name is unusable, if it is: a local name must be 1–64
/// characters of ASCII letters, digits, `_`, `-` and `.`. What a model or an
/// MCP client is sent is the tool's wire name ([`crate::wire`]), which holds
/// no dot and fits in 48 characters.
pub fn tool_name_problem(name: &str) -> Option<&'static str> {
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

/// Supplies tools that exist because configuration exists (an MCP server's
/// stored catalogue, say). Asked on first use of the registry, and again
/// when its revision moves.
///
/// Every provider says how its tools change: there is no default
/// [`revision`](ToolProvider::revision), so a provider whose tools follow an
/// operator's changes cannot be written (or wrapped) in a way that silently
/// never asks again. A shared provider is registered as an `Arc`, which
/// forwards all three methods:
///
/// ```
/// use std::sync::Arc;
/// use toolgate::erased::{BoxFuture, ErasedTool};
/// use toolgate::registry::{ProviderError, Registry, Revision, ToolProvider};
///
/// struct Fixed;
///
/// impl ToolProvider for Fixed {
///     fn name(&self) -> &str {
///         "fixed"
///     }
///     fn provide(&self) -> BoxFuture<'_, Result<Vec<ErasedTool>, ProviderError>> {
///         Box::pin(async { Ok(Vec::new()) })
///     }
///     fn revision(&self) -> BoxFuture<'_, Result<Revision, ProviderError>> {
///         Box::pin(async { Ok(Revision::Fixed) })
///     }
/// }
///
/// let shared = Arc::new(Fixed);
/// let registry = Registry::builder().provider(Arc::clone(&shared)).build();
/// assert!(registry.is_ok());
/// ```
pub trait ToolProvider: Send + Sync + 'static {
    /// A name for logs and `explain`.
    fn name(&self) -> &str;
    /// The provider's tools. A failure costs only this provider's tools.
    fn provide(&self) -> BoxFuture<'_, Result<Vec<ErasedTool>, ProviderError>>;

    /// How the provider's tools change: [`Revision::At`] a number that
    /// changes whenever what [`ToolProvider::provide`] would return may have
    /// changed — an operator's change to a server's declaration, data class
    /// or catalogue, say — or [`Revision::Fixed`] for tools that never change.
    /// The registry reads it once per offer (once per turn of a run, never
    /// per call) and asks the provider again when it moved, so that a
    /// tightening reaches a running host at its next turn. A revision that
    /// cannot be read counts as moved.
    ///
    /// A wrapper around another provider forwards this method: a wrapper
    /// that answered [`Revision::Fixed`] for a provider whose tools change
    /// would keep serving tools an operator revoked.
    fn revision(&self) -> BoxFuture<'_, Result<Revision, ProviderError>>;
}

/// How a provider's tools change; see [`ToolProvider::revision`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Revision {
    /// The tools never change while the provider lives: it is asked once.
    Fixed,
    /// The tools as of this number; a different number means they may have
    /// changed, and the provider is asked again.
    At(u64),
}

/// A shared provider: every method is the inner provider's, so a host that
/// keeps a handle (to close its connections, say) loses nothing by
/// registering it.
impl<P: ToolProvider + ?Sized> ToolProvider for Arc<P> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn provide(&self) -> BoxFuture<'_, Result<Vec<ErasedTool>, ProviderError>> {
        (**self).provide()
    }
    fn revision(&self) -> BoxFuture<'_, Result<Revision, ProviderError>> {
        (**self).revision()
    }
}

crate::error::message_error!(
    /// A provider could not supply its tools. Carries the provider's own
    /// error (a database's, a network's) as its source when there is one.
    ProviderError,
    ""
);

/// Where a tool came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolSource {
    /// Registered with the registry.
    Builtin,
    /// Supplied by the named provider.
    Provider(String),
}

struct Entry {
    tool: ErasedTool,
    source: ToolSource,
    /// Its wire name ([`crate::wire`]).
    wire: Box<str>,
    /// Its parameter schema, compiled the first time a call's arguments are
    /// checked against it ([`arguments`]).
    arguments: std::sync::OnceLock<arguments::Compiled>,
}

/// Where a tool sits in the catalogue, with its gate, decided once when the
/// tool was erased: the turn scan reads this slot and nothing else.
#[derive(Clone, Copy)]
pub(crate) struct Slot {
    index: usize,
    pub(crate) requires_approval: bool,
    pub(crate) requires_input: bool,
}

/// An offered tool with whether it needs approval, as the catalogue cached it.
#[derive(Clone, Copy)]
pub(crate) struct Gated<'a> {
    pub(crate) tool: &'a ErasedTool,
    pub(crate) requires_approval: bool,
}

/// The hasher of the catalogue's name indexes: foldhash, seeded per
/// process. A model chooses the names looked up, never the names inserted
/// (the registry's own, fixed when it is built), so flooding one bucket is
/// not in a model's reach; SipHash's defence against that costs about half
/// of the turn scan's time.
type Names = foldhash::fast::RandomState;

/// Every tool a registry knows, resolved once.
pub struct Catalogue {
    entries: Vec<Entry>,
    index: HashMap<Box<str>, Slot, Names>,
    /// Each wire name's entry.
    by_wire: HashMap<Box<str>, usize, Names>,
    dropped: Vec<DroppedTool>,
    failures: Vec<ProviderFailure>,
}

impl Catalogue {
    fn new() -> Self {
        Self {
            entries: Vec::new(),
            index: HashMap::default(),
            by_wire: HashMap::default(),
            dropped: Vec::new(),
            failures: Vec::new(),
        }
    }

    fn insert(&mut self, tool: ErasedTool, source: ToolSource) -> bool {
        if self.index.contains_key(tool.name()) {
            return false;
        }
        let slot = Slot {
            index: self.entries.len(),
            requires_approval: tool.ruling().requires_approval(),
            requires_input: tool.requires_input(),
        };
        self.index.insert(tool.name().into(), slot);
        self.entries.push(Entry {
            tool,
            source,
            wire: Box::from(""),
            arguments: std::sync::OnceLock::new(),
        });
        true
    }

    /// Gives every tool its wire name ([`crate::wire`]), once every tool is
    /// in; a provided tool none is free for is left out.
    fn name_for_the_wire(&mut self) {
        let wires = {
            let locals: Vec<&str> = self.entries.iter().map(|e| e.tool.name()).collect();
            let kept: Vec<bool> = self
                .entries
                .iter()
                .map(|e| e.source == ToolSource::Builtin)
                .collect();
            crate::wire::assign(&locals, &kept)
        };
        let entries = std::mem::take(&mut self.entries);
        for (entry, wire) in entries.into_iter().zip(wires) {
            match (wire, &entry.source) {
                (Some(wire), _) => self.entries.push(Entry {
                    wire: wire.into(),
                    ..entry
                }),
                (None, source) => {
                    let provider = match source {
                        ToolSource::Provider(name) => name.clone(),
                        ToolSource::Builtin => String::new(),
                    };
                    tracing::warn!(%provider, tool = entry.tool.name(), "provided tool left out: no wire name is free for it");
                    self.dropped.push(DroppedTool {
                        name: entry.tool.name().to_owned(),
                        provider,
                        reason: DropReason::WireNameTaken,
                    });
                }
            }
        }
        // The indexes are made anew, each in one pass, so that each one's
        // keys are allocated side by side — and before the old index is
        // dropped, so that they do not land in the old keys' freed places,
        // which lie between every tool's other allocations: the turn scan
        // compares the key it finds, and scattered keys cost it a cache miss
        // a call in a large catalogue.
        let mut index = HashMap::with_capacity_and_hasher(self.entries.len(), Names::default());
        for (at, entry) in self.entries.iter().enumerate() {
            index.insert(
                Box::<str>::from(entry.tool.name()),
                Slot {
                    index: at,
                    requires_approval: entry.tool.ruling().requires_approval(),
                    requires_input: entry.tool.requires_input(),
                },
            );
        }
        let mut by_wire = HashMap::with_capacity_and_hasher(self.entries.len(), Names::default());
        for (at, entry) in self.entries.iter().enumerate() {
            by_wire.insert(entry.wire.clone(), at);
        }
        self.index = index;
        self.by_wire = by_wire;
    }

    /// The tool of that local name.
    pub fn get(&self, name: &str) -> Option<&ErasedTool> {
        self.index
            .get(name)
            .map(|slot| &self.entries[slot.index].tool)
    }

    /// The tool whose wire name is `wire` — and only that: what an MCP
    /// client's `tools/call` names is looked up here.
    pub fn by_wire(&self, wire: &str) -> Option<&ErasedTool> {
        self.by_wire.get(wire).map(|&i| &self.entries[i].tool)
    }

    /// The wire name of the tool of that local name.
    pub fn wire_name(&self, name: &str) -> Option<&str> {
        self.index
            .get(name)
            .map(|slot| &*self.entries[slot.index].wire)
    }

    /// The local name a name read back from a model stands for: a wire name
    /// first, else a local name (the name a transcript keeps). No wire name
    /// is another tool's local name, so the two never disagree. `None` for
    /// a name that is neither.
    pub fn resolve(&self, name: &str) -> Option<&str> {
        self.by_wire(name)
            .or_else(|| self.get(name))
            .map(ErasedTool::name)
    }

    /// Every tool, builtins first, in registration order.
    pub fn tools(&self) -> impl Iterator<Item = &ErasedTool> {
        self.entries.iter().map(|e| &e.tool)
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Provided tools that were left out, with the reason.
    pub fn dropped(&self) -> &[DroppedTool] {
        &self.dropped
    }

    /// Providers that failed.
    pub fn failures(&self) -> &[ProviderFailure] {
        &self.failures
    }

    fn explanation(&self, index: usize) -> Explanation {
        let Entry {
            tool, source, wire, ..
        } = &self.entries[index];
        Explanation {
            name: tool.name().to_owned(),
            wire_name: wire.to_string(),
            origin: tool.origin(),
            effect: tool.effect(),
            server: tool.server().map(str::to_owned),
            declared_for: tool.declaration_scope(),
            ruling: tool.ruling(),
            source: source.clone(),
            hand_erased: tool.is_hand_erased(),
        }
    }
}

/// The tools one run may use: an allow-list over a catalogue.
#[derive(Clone)]
pub struct Offered {
    catalogue: Arc<Catalogue>,
    /// `None`: every tool. Otherwise one flag per catalogue entry.
    mask: Option<Arc<[bool]>>,
}

impl Offered {
    /// The offered tool of that name; `None` for an unknown or non-offered one.
    pub fn get(&self, name: &str) -> Option<&ErasedTool> {
        self.gated(name).map(|g| g.tool)
    }

    /// The offered tool of that name with its gate.
    pub(crate) fn gated(&self, name: &str) -> Option<Gated<'_>> {
        let slot = self.slot(name)?;
        Some(Gated {
            tool: self.tool_at(slot)?,
            requires_approval: slot.requires_approval,
        })
    }

    /// The offered tool of that name's slot, its gate with it: all the turn
    /// scan reads of a call that runs.
    #[inline]
    pub(crate) fn slot(&self, name: &str) -> Option<Slot> {
        let slot = *self.catalogue.index.get(name)?;
        match &self.mask {
            Some(mask) if !mask.get(slot.index).copied().unwrap_or(false) => None,
            _ => Some(slot),
        }
    }

    /// Why `arguments` do not fit the parameter schema of the offered tool
    /// of that name, if they do not ([`arguments`], the one check); `None`
    /// too for a tool not offered, which the caller answers as such.
    pub(crate) fn arguments_problem(&self, name: &str, arguments: &Value) -> Option<String> {
        let slot = self.slot(name)?;
        let entry = self.catalogue.entries.get(slot.index)?;
        let compiled = entry
            .arguments
            .get_or_init(|| arguments::compile(entry.tool.parameters()));
        arguments::problem(compiled, entry.tool.input_schema(), arguments)
    }

    /// The tool in `slot`.
    pub(crate) fn tool_at(&self, slot: Slot) -> Option<&ErasedTool> {
        self.catalogue.entries.get(slot.index).map(|e| &e.tool)
    }

    /// What the model is told of every offered tool: its wire name, its
    /// local name, its description and its schema.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.entries()
            .map(|e| ToolSpec {
                name: e.wire.to_string(),
                local_name: e.tool.name().to_owned(),
                description: e.tool.description().to_owned(),
                parameters: e.tool.parameters().as_value().clone(),
            })
            .collect()
    }

    /// Every offered tool.
    pub fn tools(&self) -> impl Iterator<Item = &ErasedTool> {
        self.entries().map(|e| &e.tool)
    }

    /// The catalogue's entries the offer holds, in catalogue order.
    fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.catalogue
            .entries
            .iter()
            .enumerate()
            .filter(|(i, _)| self.mask.as_ref().is_none_or(|m| m[*i]))
            .map(|(_, e)| e)
    }

    /// The catalogue behind the offer.
    pub fn catalogue(&self) -> &Catalogue {
        &self.catalogue
    }
}

/// Builds a [`Registry`].
#[derive(Default)]
pub struct RegistryBuilder {
    tools: Vec<ErasedTool>,
    providers: Vec<Arc<dyn ToolProvider>>,
}

impl RegistryBuilder {
    /// Adds a builtin with its static type. Only local tools are builtins.
    #[must_use]
    pub fn builtin<T>(mut self, tool: T) -> Self
    where
        T: Execute<Origin: IsLocal>,
    {
        self.tools.push(ErasedTool::new(tool));
        self
    }

    /// Adds a tool erased by hand. Its gate comes from its declared facts; the
    /// boot check refuses facts that break a rule.
    #[must_use]
    pub fn erased(mut self, tool: Arc<dyn DynTool>) -> Self {
        self.tools.push(ErasedTool::from_dyn(tool));
        self
    }

    /// Adds a provider, asked once on first use.
    #[must_use]
    pub fn provider(mut self, provider: impl ToolProvider) -> Self {
        self.providers.push(Arc::new(provider));
        self
    }

    /// Runs the boot check: unique and usable names, and no tool whose facts
    /// break a rule. Every problem is reported.
    pub fn build(self) -> Result<Registry, BootError> {
        let mut problems = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for tool in &self.tools {
            let name = tool.name();
            let local = tool.origin() == Origin::Local;
            if let Some(problem) = tool_name_problem(name)
                .or_else(|| local.then(|| local_name_problem(name)).flatten())
            {
                problems.push(BootProblem::InvalidName {
                    name: name.to_owned(),
                    problem,
                });
            }
            if !seen.insert(name) {
                problems.push(BootProblem::DuplicateName {
                    name: name.to_owned(),
                });
            }
            if tool.origin() == Origin::Remote {
                problems.push(BootProblem::RemoteBuiltin {
                    name: name.to_owned(),
                });
            } else if let Err(rule) = tool.judgement() {
                problems.push(BootProblem::BrokenRule {
                    name: name.to_owned(),
                    rule,
                });
            }
            // A tool that already breaks a rule is told that first.
            if let (Ok(_), Some(input)) = (tool.judgement(), tool.input_schema()) {
                let fields = crate::input::input_fields_not_taken(tool.parameters(), input);
                if !fields.is_empty() {
                    problems.push(BootProblem::InputNotTaken {
                        name: name.to_owned(),
                        fields,
                    });
                }
            }
        }
        let names: Vec<&str> = self.tools.iter().map(ErasedTool::name).collect();
        if let Some((first, second)) = crate::wire::builtin_clash(&names) {
            problems.push(BootProblem::WireNameClash {
                first: first.to_owned(),
                second: second.to_owned(),
            });
        }
        if !problems.is_empty() {
            return Err(BootError { problems });
        }
        Ok(Registry {
            builtins: self.tools,
            providers: self.providers,
            resolved: tokio::sync::Mutex::new(None),
        })
    }
}

/// The tools an agent may call, with the gate of each.
pub struct Registry {
    builtins: Vec<ErasedTool>,
    providers: Vec<Arc<dyn ToolProvider>>,
    resolved: tokio::sync::Mutex<Option<Resolved>>,
}

/// A catalogue and the providers' revisions it was built at (`None`: the
/// revision could not be read, so it counts as moved at the next offer).
struct Resolved {
    catalogue: Arc<Catalogue>,
    revisions: Vec<Option<Revision>>,
}

impl Registry {
    /// Starts a registry.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// Every tool. The providers are asked on the first call, and again
    /// whenever one's [revision](ToolProvider::revision) has moved since.
    pub async fn catalogue(&self) -> Arc<Catalogue> {
        let mut resolved = self.resolved.lock().await;
        if let Some(current) = resolved.as_ref()
            && !self.moved(&current.revisions).await
        {
            return Arc::clone(&current.catalogue);
        }
        // Revisions are read before the tools, so a change made while the
        // providers answer is seen at the next offer.
        let revisions = self.revisions().await;
        if resolved.is_some() {
            tracing::info!("a tool provider's revision moved; its tools are read again");
        }
        let catalogue = Arc::new(self.resolve().await);
        *resolved = Some(Resolved {
            catalogue: Arc::clone(&catalogue),
            revisions: revisions.into_iter().map(Result::ok).collect(),
        });
        catalogue
    }

    /// Each provider's revision; an unreadable one is `Err`.
    async fn revisions(&self) -> Vec<Result<Revision, ProviderError>> {
        let mut revisions = Vec::with_capacity(self.providers.len());
        for provider in &self.providers {
            revisions.push(provider.revision().await);
        }
        revisions
    }

    /// True when a provider's revision moved, or cannot be read, since
    /// `seen` (or could not be read then).
    async fn moved(&self, seen: &[Option<Revision>]) -> bool {
        for (provider, seen) in self.providers.iter().zip(seen) {
            match provider.revision().await {
                Ok(now) if Some(now) == *seen => {}
                Ok(_) => return true,
                Err(error) => {
                    tracing::warn!(provider = provider.name(), %error, "tool provider's revision unreadable; its tools are read again");
                    return true;
                }
            }
        }
        false
    }

    async fn resolve(&self) -> Catalogue {
        let mut catalogue = Catalogue::new();
        for tool in &self.builtins {
            catalogue.insert(tool.clone(), ToolSource::Builtin);
        }
        for provider in &self.providers {
            let provider_name = provider.name().to_owned();
            let tools = match provider.provide().await {
                Ok(tools) => tools,
                Err(error) => {
                    tracing::warn!(provider = %provider_name, %error, "tool provider failed; its tools are left out");
                    catalogue.failures.push(ProviderFailure {
                        provider: provider_name,
                        error: error.to_string(),
                    });
                    continue;
                }
            };
            for tool in tools {
                let reason = if let Some(problem) = tool_name_problem(tool.name()) {
                    Some(DropReason::InvalidName(problem))
                } else if let Some(problem) = (tool.origin() == Origin::Local)
                    .then(|| local_name_problem(tool.name()))
                    .flatten()
                {
                    Some(DropReason::InvalidName(problem))
                } else if let Err(rule) = tool.judgement() {
                    Some(DropReason::BrokenRule(rule))
                } else if tool.origin() == Origin::Remote
                    && tool.server().is_none_or(|s| s.trim().is_empty())
                {
                    Some(DropReason::NoServer)
                } else if catalogue
                    .insert(tool.clone(), ToolSource::Provider(provider_name.clone()))
                {
                    None
                } else {
                    Some(DropReason::NameTaken)
                };
                if let Some(reason) = reason {
                    tracing::warn!(provider = %provider_name, tool = tool.name(), %reason, "provided tool left out");
                    catalogue.dropped.push(DroppedTool {
                        name: tool.name().to_owned(),
                        provider: provider_name.clone(),
                        reason,
                    });
                }
            }
        }
        catalogue.name_for_the_wire();
        catalogue
    }

    /// Every tool of the catalogue, for a run with no allow-list:
    /// [`Registry::offer`] with `None`, which needs no type annotation.
    pub async fn offer_all(&self) -> Offered {
        self.offer::<&str>(None).await
    }

    /// The tools a run may use. `None` offers every tool ([`Registry::offer_all`]
    /// says so without a type annotation); an empty list offers none; names
    /// the registry does not know are dropped with a warning.
    pub async fn offer<S: AsRef<str>>(&self, allow: Option<&[S]>) -> Offered {
        let catalogue = self.catalogue().await;
        let mask = allow.map(|names| {
            let mut mask = vec![false; catalogue.len()];
            for name in names {
                let name = name.as_ref();
                match catalogue.index.get(name) {
                    Some(slot) => mask[slot.index] = true,
                    None => {
                        tracing::warn!(tool = name, "allow-list names an unknown tool; dropped");
                    }
                }
            }
            Arc::from(mask)
        });
        Offered { catalogue, mask }
    }

    /// The gate of one tool and its cause, in an operator's words.
    pub async fn explain(&self, name: &str) -> Option<Explanation> {
        let catalogue = self.catalogue().await;
        let slot = catalogue.index.get(name)?;
        Some(catalogue.explanation(slot.index))
    }

    /// The gate of every tool, in catalogue order.
    pub async fn explain_all(&self) -> Vec<Explanation> {
        let catalogue = self.catalogue().await;
        (0..catalogue.len())
            .map(|i| catalogue.explanation(i))
            .collect()
    }
}
