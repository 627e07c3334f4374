//! The arguments of `toolgate runs`: listing, showing, reviewing and
//! deciding suspended runs, and choosing for a call whose outcome is
//! unknown.

use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub(crate) enum RunsCommand {
    /// List the runs that are not done: waiting for a decision, decided and
    /// waiting for their host, executing, or with an outcome unknown.
    List {
        /// Every run, done ones included.
        #[arg(long)]
        all: bool,
    },
    /// Show a run: its pending turn and digest, its host and state, every
    /// decision (voided ones too) and every call its host ran.
    Show {
        /// The run.
        run: String,
        /// Also show each reviewed tool's whole description and parameter
        /// schema, as the model read them.
        #[arg(long)]
        schema: bool,
    },
    /// Approve a run's pending turn — every call, or call by call with
    /// `--call`, `--deny` and `--edit` (recorded; the run's host resumes it).
    Approve(ApproveArgs),
    /// Deny a run's pending turn — every call, or those named with `--call`
    /// (recorded; the run's host resumes it).
    Deny(DenyArgs),
    /// Approve a run's pending turn with one call's arguments edited; the
    /// edit is checked against the tool's parameter schema first.
    Edit {
        #[command(flatten)]
        decide: DecideArgs,
        /// The call whose arguments change.
        call: String,
        /// The arguments to run it with: JSON, `@FILE`, or `-` for standard
        /// input.
        #[arg(long)]
        args: String,
    },
    /// Ask an expired turn again: its time limit starts over, with a new
    /// digest.
    AskAgain {
        /// The run.
        run: String,
        /// Who asks (as for `approve`).
        #[arg(long = "as")]
        operator: Option<String>,
    },
    /// Run again a call whose outcome is unknown (its host stopped while it
    /// ran). A decision as grave as an approval: under four eyes, or when the
    /// run needs several approvers, not the requester's, and it stands once
    /// as many people as the run's approvals chose it.
    Rerun(ChooseArgs),
    /// Do not run again a call whose outcome is unknown; the model is told.
    /// It cannot make anything run, so anyone may choose it, at once.
    Skip(ChooseArgs),
    /// Submit input for a run waiting for it (recorded; the run's host
    /// resumes it).
    Input {
        #[command(flatten)]
        decide: DecideArgs,
        /// The input: JSON, `@FILE`, or `-` for standard input.
        #[arg(long)]
        data: String,
    },
    /// Review waiting runs on this terminal: each call shown with its gate,
    /// a verdict asked per call (approve, deny with a reason, edit, skip),
    /// input asked field by field, a call whose outcome is unknown rerun or
    /// skipped; one confirmation records the decision bound to what was
    /// shown. Then the next waiting run. Needs a terminal.
    Review(ReviewArgs),
}

#[derive(clap::Args, Debug)]
pub(crate) struct ReviewArgs {
    /// The run to review first; without it, the oldest that waits.
    pub(crate) run: Option<String>,
    /// Who decides (as for `approve`).
    #[arg(long = "as")]
    pub(crate) operator: Option<String>,
}

#[derive(clap::Args, Debug)]
pub(crate) struct ApproveArgs {
    #[command(flatten)]
    pub(crate) decide: DecideArgs,
    /// Approve this call (by its id); repeat for more. Without `--call`,
    /// `--deny` or `--edit`, every call is approved.
    #[arg(long = "call", value_name = "ID")]
    pub(crate) calls: Vec<String>,
    /// Deny this call, with the reason the model reads: `ID` or
    /// `ID=REASON`; repeat for more.
    #[arg(long = "deny", value_name = "ID[=REASON]")]
    pub(crate) denials: Vec<String>,
    /// Approve this call with other arguments: `ID=JSON` or `ID=@FILE`;
    /// repeat for more.
    #[arg(long = "edit", value_name = "ID=JSON")]
    pub(crate) edits: Vec<String>,
    /// And from now on: also declare this tool (`SERVER.TOOL`, a tool the
    /// approved calls name) "no approval", bound to its definition as it
    /// is now — its calls to come run unattended until its definition
    /// changes. Refused on a run under four eyes or needing several
    /// approvers.
    #[arg(long = "allow-tool", value_name = "SERVER.TOOL")]
    pub(crate) allow_tool: Option<String>,
}

#[derive(clap::Args, Debug)]
pub(crate) struct DenyArgs {
    #[command(flatten)]
    pub(crate) decide: DecideArgs,
    /// Deny only this call (by its id); repeat for more. Without it, every
    /// call is denied.
    #[arg(long = "call", value_name = "ID")]
    pub(crate) calls: Vec<String>,
    /// Why, for the model.
    #[arg(long)]
    pub(crate) reason: Option<String>,
}

#[derive(clap::Args, Debug)]
pub(crate) struct DecideArgs {
    /// The run.
    pub(crate) run: String,
    /// The digest of the turn you reviewed (`toolgate runs show`).
    #[arg(long)]
    pub(crate) digest: Option<String>,
    /// Who decides. Without it: `TOOLGATE_OPERATOR`, else the account of
    /// this process's user id (`uid-N` where it has none). The decision
    /// record says which.
    #[arg(long = "as")]
    pub(crate) operator: Option<String>,
}

#[derive(clap::Args, Debug)]
pub(crate) struct ChooseArgs {
    /// The run.
    pub(crate) run: String,
    /// The call whose outcome is unknown, by its id (`toolgate runs show`).
    #[arg(long = "call", value_name = "ID")]
    pub(crate) call: String,
    /// The digest shown beside that call (`toolgate runs show`).
    #[arg(long)]
    pub(crate) digest: String,
    /// Why, for the record.
    #[arg(long)]
    pub(crate) reason: String,
    /// Who chooses (as for `approve`).
    #[arg(long = "as")]
    pub(crate) operator: Option<String>,
}
