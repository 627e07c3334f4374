//! The turn scan: approval first, then input — and the permits of a turn
//! it clears, the only way outside this crate to run a call.

use crate::erased::ErasedTool;
use crate::registry::Offered;
use crate::tool::ToolOutput;

use super::ToolCall;

/// What the turn scan found: approval first, then input.
#[derive(Debug)]
pub enum TurnScan<'a> {
    /// An offered call's tool needs approval: the whole turn waits — every
    /// call of it, a read beside the write too — and no call of it may run
    /// before a decision on the turn (the typed [`Suspended`](crate::suspend::Suspended) path).
    Approval,
    /// No approval binds, but an offered call's tool requires input.
    Input {
        /// The call's position in the turn.
        index: usize,
        /// Its tool.
        tool: &'a ErasedTool,
    },
    /// Every call may run now: their permits (unknown and non-offered calls
    /// get error results instead).
    Run(Cleared<'a>),
}

impl TurnScan<'_> {
    /// True when the turn may run now.
    pub fn is_run(&self) -> bool {
        matches!(self, TurnScan::Run(_))
    }
}

/// A turn the scan cleared to run now, and the only way outside this crate
/// to run its calls: [`Cleared::into_calls`] hands each call its [`Permit`].
pub struct Cleared<'a> {
    offered: &'a Offered,
    calls: &'a [ToolCall],
}

impl std::fmt::Debug for Cleared<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cleared")
            .field("calls", &self.calls)
            .finish_non_exhaustive()
    }
}

impl<'a> Cleared<'a> {
    /// Each call of the turn, in order, with its permit — or, for a call to a
    /// tool that is unknown or not offered to the run, the error result the
    /// model reads instead.
    pub fn into_calls(
        self,
    ) -> impl Iterator<Item = (&'a ToolCall, Result<Permit<'a>, ToolOutput>)> {
        let offered = self.offered;
        self.calls.iter().map(move |call| {
            let permit = match offered.get(&call.name) {
                Some(tool) => Ok(Permit { tool, call }),
                None => Err(not_offered(offered, call)),
            };
            (call, permit)
        })
    }
}

/// Leave to run one call of a turn, with its arguments as the model made
/// them. Only this crate makes one: the turn scan, for a call of a turn none
/// of whose calls needs approval or input ([`TurnScan::Run`]). A call that
/// needs a decision runs only through the typed [`Suspended`](crate::suspend::Suspended) path, which
/// the decision on the reviewed turn opens. An [`ErasedTool`] has no public
/// way to run without one.
///
/// This guards a host author against a mistake — a loop of their own that
/// runs an offered write unapproved — not against a hostile host, which can
/// always call its own tool's body.
#[derive(Debug)]
pub struct Permit<'a> {
    tool: &'a ErasedTool,
    call: &'a ToolCall,
}

impl<'a> Permit<'a> {
    /// The call this permit runs.
    pub fn call(&self) -> &'a ToolCall {
        self.call
    }

    /// Its tool.
    pub fn tool(&self) -> &'a ErasedTool {
        self.tool
    }

    /// Runs the call, once: the permit is used up.
    pub async fn run(self) -> ToolOutput {
        self.tool.execute(self.call.arguments.clone()).await
    }
}

/// Scans one turn: approval first, then input. One lookup per call, and
/// nothing allocated; a turn that may run is handed back with its permits.
#[inline]
pub fn scan_turn<'a>(offered: &'a Offered, calls: &'a [ToolCall]) -> TurnScan<'a> {
    match scan(offered, calls) {
        Scan::Approval => TurnScan::Approval,
        Scan::Input { index, tool } => TurnScan::Input { index, tool },
        Scan::Run => TurnScan::Run(Cleared { offered, calls }),
    }
}

/// The scan's verdict, borrowing only the offer.
pub(crate) enum Scan<'a> {
    Approval,
    Input { index: usize, tool: &'a ErasedTool },
    Run,
}

/// The turn scan, the one home of its rule: any approval-bound offered call
/// suspends the whole turn; otherwise the first offered call that requires
/// input waits for it.
#[inline]
pub(crate) fn scan<'a>(offered: &'a Offered, calls: &[ToolCall]) -> Scan<'a> {
    let mut input = None;
    for (index, call) in calls.iter().enumerate() {
        let Some(slot) = offered.slot(&call.name) else {
            continue;
        };
        // Any approval-bound call suspends the whole turn, wherever it is.
        if slot.requires_approval {
            return Scan::Approval;
        }
        if input.is_none() && slot.requires_input {
            input = Some((index, slot));
        }
    }
    // The tool itself is read only for the call that waits for input.
    match input {
        None => Scan::Run,
        Some((index, slot)) => match offered.tool_at(slot) {
            Some(tool) => Scan::Input { index, tool },
            // A slot always names an entry of its own catalogue; were it not
            // to, the turn waits for a person rather than run.
            None => Scan::Approval,
        },
    }
}

/// The error result for a call to a tool the run may not use.
pub(crate) fn not_offered(offered: &Offered, call: &ToolCall) -> ToolOutput {
    if offered.catalogue().get(&call.name).is_some() {
        ToolOutput::error(format!(
            "tool `{}` is not offered to this run; the call was not executed",
            call.name
        ))
    } else {
        ToolOutput::error(format!(
            "unknown tool `{}`; the call was not executed",
            call.name
        ))
    }
}
