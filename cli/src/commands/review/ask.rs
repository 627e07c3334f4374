//! What the review asks on the terminal: a verdict per call, an edit (in
//! `$EDITOR` when set, else on one line), and the one confirmation before
//! anything is recorded.

use std::collections::BTreeMap;
use std::io::Write as _;

use serde_json::Value;
use toolgate::identity::Operator;
use toolgate::run::ToolCall;
use toolgate::suspend::{AwaitingApproval, CallDecisions, CallVerdict, Refusal, Suspended};

use super::super::form::ask_line;
use crate::Failure;
use crate::output::say;

/// One of `options` (their first letters, or the whole words of the
/// prompt), asked until the answer is one of them.
pub(super) fn choice(prompt: &str, options: &[&str]) -> Result<String, Failure> {
    loop {
        let answer = ask_line(prompt)?;
        if let Some(option) = picked(prompt, options, &answer) {
            return Ok(option.to_owned());
        }
        say!("answer one of: {}", options.join(", "));
    }
}

/// The option an answer picks: its letter (`a`), or the word the prompt
/// spells around it (`approve` where it offers `[a]pprove`), in any case.
fn picked<'a>(prompt: &str, options: &[&'a str], answer: &str) -> Option<&'a str> {
    let answer = answer.to_lowercase();
    options
        .iter()
        .copied()
        .find(|o| answer.starts_with(o) && prompt.contains(&format!("[{o}]{}", &answer[o.len()..])))
}

/// What the reviewer does with the decision they were shown.
pub(super) enum Confirm {
    /// Record it.
    Record,
    /// Ask again from the first call.
    Again,
    /// Leave the run waiting.
    Leave,
}

/// The one confirmation: record the decision, decide again, or leave the
/// run.
pub(super) fn confirm(operator: &Operator) -> Result<Confirm, Failure> {
    let prompt = format!(
        "record it as {}? [y]es, [n]o (decide again) or [s]kip the run (nothing recorded)",
        operator.name()
    );
    Ok(match choice(&prompt, &["y", "n", "s"])?.as_str() {
        "y" => Confirm::Record,
        "n" => Confirm::Again,
        _ => Confirm::Leave,
    })
}

/// One call's verdict, asked until it is usable; `None` when the reviewer
/// skips the run. An edit whose arguments do not fit is asked again, and
/// the verdicts already `given` stay.
pub(super) fn verdict(
    pending: &Suspended<AwaitingApproval>,
    call: &ToolCall,
    given: &BTreeMap<String, CallVerdict>,
    operator: &Operator,
) -> Result<Option<CallVerdict>, Failure> {
    let prompt = format!(
        "{} ({}): [a]pprove, [d]eny, [e]dit or [s]kip the run?",
        call.id, call.name
    );
    loop {
        match choice(&prompt, &["a", "d", "e", "s"])?.as_str() {
            "a" => return Ok(Some(CallVerdict::Approve)),
            "d" => {
                let reason = ask_line("why (the model reads it; may be empty):")?;
                return Ok(Some(CallVerdict::Deny { reason }));
            }
            "e" => {
                if let Some(arguments) = edit(pending, call, given, operator)? {
                    return Ok(Some(CallVerdict::Edit { arguments }));
                }
                say!("  no edit; the call's verdict is asked again");
            }
            _ => return Ok(None),
        }
    }
}

/// New arguments for `call`, asked until they are JSON that fits the
/// tool's parameter schema as the reviewer was shown it; `None` — the
/// verdict is asked again — when nothing is typed (an empty line, a file
/// left empty), the model's arguments come back unchanged, or the editor
/// fails. So an edit the check can never take (a turn paused before
/// reviews were kept) always has a way out.
fn edit(
    pending: &Suspended<AwaitingApproval>,
    call: &ToolCall,
    given: &BTreeMap<String, CallVerdict>,
    operator: &Operator,
) -> Result<Option<Value>, Failure> {
    let editor = std::env::var("EDITOR")
        .ok()
        .filter(|e| !e.trim().is_empty());
    // What the editor opens with: the arguments, pretty, every hidden
    // character written as a `\u` escape — the same value, shown inert.
    let mut text = toolgate::visible::visible_json_text(
        &serde_json::to_string_pretty(&call.arguments).unwrap_or_else(|_| "{}".into()),
    )
    .into_owned();
    loop {
        let typed = if let Some(editor) = &editor {
            say!(
                "  editing the arguments in {} (a file left empty edits nothing)",
                editor
            );
            match in_editor(editor, &text) {
                Ok(typed) => typed,
                Err(why) => {
                    say!("  the editor `{}` failed: {}", editor, why);
                    return Ok(None);
                }
            }
        } else {
            say!("  current arguments: {}", call.arguments);
            ask_line("  arguments (JSON; an empty line edits nothing):")?
        };
        if typed.trim().is_empty() {
            return Ok(None);
        }
        let arguments = match serde_json::from_str::<Value>(&typed) {
            Ok(arguments) => arguments,
            Err(error) => {
                say!("  not JSON ({}); try again", error.to_string());
                text = typed;
                continue;
            }
        };
        if arguments == call.arguments {
            return Ok(None);
        }
        match edit_problems(pending, call, &arguments, given, operator) {
            None => return Ok(Some(arguments)),
            Some(problems) => {
                for problem in problems {
                    say!("  does not fit: {}", problem);
                }
                say!("  try again; the verdicts given so far stay");
                text = typed;
            }
        }
    }
}

/// Why `arguments` do not fit the parameter schema `call`'s tool was
/// reviewed with — the core's own check of a decision (`check_calls`), the
/// one the store applies when it records it; `None` when they fit. The
/// other calls are given their verdicts so far, or an approval, so that
/// only this edit is judged here; four eyes and the rest are judged when
/// the decision is recorded.
fn edit_problems(
    pending: &Suspended<AwaitingApproval>,
    call: &ToolCall,
    arguments: &Value,
    given: &BTreeMap<String, CallVerdict>,
    operator: &Operator,
) -> Option<Vec<String>> {
    let mut calls: BTreeMap<String, CallVerdict> = pending
        .pending()
        .iter()
        .enumerate()
        .filter(|(i, _)| pending.needs_verdict(*i))
        .map(|(_, c)| {
            let verdict = given.get(&c.id).cloned().unwrap_or(CallVerdict::Approve);
            (c.id.clone(), verdict)
        })
        .collect();
    calls.insert(
        call.id.clone(),
        CallVerdict::Edit {
            arguments: arguments.clone(),
        },
    );
    let probe = CallDecisions {
        calls,
        digest: pending.digest(),
        decided_by: operator.name().to_owned(),
        also_approved_by: Vec::new(),
    };
    match pending.check_calls(&probe) {
        Err(Refusal::InvalidEdit {
            call: id, errors, ..
        }) if id == call.id => Some(errors.iter().map(ToString::to_string).collect()),
        _ => None,
    }
}

/// `text` opened in the reviewer's editor (`$EDITOR`, run by the shell as
/// git runs it, so it may carry flags), and what it holds when the editor
/// exits. The file is private to the user (the arguments may be
/// confidential) and removed afterwards.
fn in_editor(editor: &str, text: &str) -> Result<String, String> {
    let mut file = tempfile::Builder::new()
        .prefix("toolgate-arguments-")
        .suffix(".json")
        .tempfile()
        .map_err(|e| format!("cannot create the file to edit: {e}"))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.write_all(b"\n"))
        .and_then(|()| file.flush())
        .map_err(|e| format!("cannot write the file to edit: {e}"))?;
    tracing::debug!(editor = %editor, "opening the arguments in the editor");
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg("$EDITOR \"$1\"")
        .arg("sh")
        .arg(file.path())
        .status()
        .map_err(|e| format!("cannot start it: {e}"))?;
    if !status.success() {
        return Err(format!("it ended with {status}"));
    }
    std::fs::read_to_string(file.path()).map_err(|e| format!("cannot read the edited file: {e}"))
}

#[cfg(test)]
mod tests {
    use super::picked;

    #[test]
    fn an_answer_picks_by_letter_or_by_the_word_offered() {
        let prompt = "call_2 (write_file): [a]pprove, [d]eny, [e]dit or [s]kip the run?";
        let options = ["a", "d", "e", "s"];
        for (answer, expected) in [
            ("a", Some("a")),
            ("Approve", Some("a")),
            ("deny", Some("d")),
            ("skip", Some("s")),
            ("", None),
            ("approved", None),
            ("x", None),
            ("yes", None),
        ] {
            assert_eq!(picked(prompt, &options, answer), expected, "{answer:?}");
        }
    }
}
