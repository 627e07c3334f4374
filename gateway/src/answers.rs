//! What a client is told: a call's answer as the run recorded it, and the
//! words for a call that waits, a run that gave no answer, and progress.

use rmcp::RoleServer;
use rmcp::model::{CallToolResult, ContentBlock, ProgressNotificationParam, ProgressToken};
use toolgate::run::{Message, RunError, RunState};
use toolgate_store::Ended;

use crate::{HeldCall, PROGRESS_EVERY};

/// The call's result as the run recorded it: what the tool answered —
/// images, resources and structured content as it gave them, when it gave
/// any, else its text — an error when it failed or was denied.
pub(crate) fn answer(state: &RunState) -> CallToolResult {
    let result = state.transcript.iter().rev().find_map(|m| match m {
        Message::Tool {
            content,
            is_error,
            rich,
            ..
        } => Some((content, *is_error, rich)),
        _ => None,
    });
    match result {
        Some((content, false, Some(rich))) => {
            let blocks: Vec<ContentBlock> = rich
                .blocks
                .iter()
                .map(|block| {
                    serde_json::from_value(block.clone())
                        .unwrap_or_else(|_| ContentBlock::text(block.to_string()))
                })
                .collect();
            let mut result = CallToolResult::success(if blocks.is_empty() {
                vec![ContentBlock::text(content.clone())]
            } else {
                blocks
            });
            result.structured_content.clone_from(&rich.structured);
            result
        }
        Some((content, false, None)) => {
            CallToolResult::success(vec![ContentBlock::text(content.clone())])
        }
        // An error result — a failed call, a denial with a person's reason —
        // reaches the model with its hidden characters shown, not acted on.
        Some((content, true, _)) => CallToolResult::error(vec![ContentBlock::text(
            toolgate::visible::visible(content).into_owned(),
        )]),
        None => refusal("the call has no result".to_owned()),
    }
}

/// An error result the model reads.
pub(crate) fn refusal(text: String) -> CallToolResult {
    tracing::warn!(%text, "a call was answered with an error");
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// The text of a result's content, its blocks of text joined by lines.
pub(crate) fn text_of(result: &CallToolResult) -> String {
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.as_str()))
        .collect();
    if texts.is_empty() {
        "the call was answered without a text".to_owned()
    } else {
        texts.join("\n")
    }
}

pub(crate) fn run_error(error: &RunError) -> String {
    format!("the call could not be made: {error}")
}

/// The answer to a held call whose outcome is unknown, not chosen in time.
pub(crate) fn waits_for_a_choice(held: &HeldCall) -> CallToolResult {
    refusal(format!(
        "run `{run}`: the call's outcome is unknown; it may have run. A person chooses to run it again or not (`toolgate runs show {run}`); asked again once chosen, the same call is answered by that choice",
        run = held.run_id,
    ))
}

/// The answer to a call whose outcome became unknown — it reached its
/// server and its answer was lost, or its gateway stopped while it ran —
/// `why`, in words: it may have run, a person chooses, and the same call
/// asked again is answered by that choice.
pub(crate) fn outcome_unknown(run_id: &str, why: &str) -> CallToolResult {
    refusal(format!(
        "run `{run_id}`: the call's outcome is unknown ({why}); it may have run. A person chooses to run it again or not (`toolgate runs show {run_id}`); asked again, the same call is answered by that choice"
    ))
}

/// Why a resumed run of one call gave no answer, in words.
pub(crate) fn not_finished(run_id: &str, ended: &Ended) -> String {
    match ended {
        Ended::Refused { reason } => format!(
            "the decision on run `{run_id}` was refused when the call was to run: {reason}. It was not run; the run waits for a fresh decision (`toolgate runs show {run_id}`)"
        ),
        Ended::Suspended { status } => format!(
            "run `{run_id}` waits again ({}); it was not run (`toolgate runs show {run_id}`)",
            status.as_str()
        ),
        Ended::Failed { error } => format!("run `{run_id}` failed: {error}"),
        Ended::Interrupted { error } => format!(
            "run `{run_id}` stopped: its record could not be written ({error}); a gateway of this name picks it up from its journal once its lease runs out"
        ),
        Ended::Lost => format!(
            "run `{run_id}` was taken over by another gateway of this name; `toolgate runs show {run_id}` tells how it ended"
        ),
        _ => format!("run `{run_id}` ended without an answer (`toolgate runs show {run_id}`)"),
    }
}

/// The answer to a held call not decided in time.
///
/// It names the run, never the digest a decision carries or the command
/// that decides it: what the client reads, the model reads, and a decision
/// is an operator's to take, from what `toolgate runs show` shows them.
pub(crate) fn waits_for_approval(held: &HeldCall) -> CallToolResult {
    refusal(format!(
        "the call waits for approval: run `{run}`; it was not run. A person decides it (`toolgate runs show {run}`); asked again once decided, the same call is answered by that decision",
        run = held.run_id,
    ))
}

/// The answer to a held call whose run was decided and runs its call now,
/// not done within the wait: what is true — it runs, once — and how the
/// result is had.
pub(crate) fn is_running(held: &HeldCall) -> CallToolResult {
    refusal(format!(
        "run `{run}` is running its call now (it was decided); its result was not ready within the wait. It runs once: asked again, the same call is answered with its result (`toolgate runs show {run}`)",
        run = held.run_id,
    ))
}

/// Tells a client that asked for progress, every few seconds, that its
/// call still waits; never resolves.
pub(crate) async fn progress(held: &HeldCall, to: Option<(ProgressToken, rmcp::Peer<RoleServer>)>) {
    let Some((token, peer)) = to else {
        return std::future::pending().await;
    };
    let mut ticks = 0u32;
    loop {
        tokio::time::sleep(PROGRESS_EVERY).await;
        ticks += 1;
        let message = format!(
            "waits for a person's decision: run `{}` (`toolgate runs show {}`)",
            held.run_id, held.run_id
        );
        let sent = peer
            .notify_progress(
                ProgressNotificationParam::new(token.clone(), f64::from(ticks))
                    .with_message(message),
            )
            .await;
        if sent.is_err() {
            // The client is gone; the wait goes on until it ends.
            return std::future::pending().await;
        }
    }
}
