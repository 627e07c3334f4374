//! The clients' shapes: which client, the event a hook reads on stdin, and
//! the answer it writes.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use toolgate::visible::visible;

/// The most bytes of an event a hook reads.
pub const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

/// A coding agent whose hooks toolgate answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Client {
    /// Claude Code.
    ClaudeCode,
    /// OpenAI's Codex CLI.
    Codex,
}

impl Client {
    /// Every client.
    pub const ALL: [Client; 2] = [Client::ClaudeCode, Client::Codex];

    /// The client's name, as its tools' source: `claude-code`, `codex`.
    pub const fn name(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::Codex => "codex",
        }
    }

    /// The client named `name`.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|client| client.name() == name)
    }

    /// The host name of the runs of its held calls.
    pub fn host(self) -> String {
        format!("gateway.hook.{}", self.name())
    }

    /// Whether `tool` is the client's shell, whose commands command rules
    /// match.
    pub fn is_shell(self, tool: &str) -> bool {
        tool == "Bash"
    }

    /// The fields of `tool`'s input that do not make a call another call,
    /// and are neither shown to the reviewer nor bound by an approval: for
    /// the shell, the model's `description` of the command and its
    /// `timeout`. Every other field — the command, a flag that leaves the
    /// client's sandbox, one a later version adds — is the call's.
    pub fn incidental(self, tool: &str) -> &'static [&'static str] {
        if self.is_shell(tool) {
            &["description", "timeout"]
        } else {
            &[]
        }
    }

    /// Whether the client can run a call with input other than the one it
    /// asked with: Claude Code can (`updatedInput`); Codex runs the
    /// original.
    pub const fn applies_edits(self) -> bool {
        matches!(self, Client::ClaudeCode)
    }
}

impl std::fmt::Display for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which hook asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookKind {
    /// Before a tool runs: judged.
    PreToolUse,
    /// After it ran: its outcome recorded against its run.
    PostToolUse,
}

/// A hook's event, as read from the JSON a client wrote on its stdin.
/// Fields it does not know are ignored; only a required field missing or
/// ill-typed refuses it.
#[derive(Debug, Clone, PartialEq)]
pub struct HookEvent {
    /// Which hook.
    pub kind: HookKind,
    /// The tool, as the client names it.
    pub tool: String,
    /// Its input.
    pub input: Map<String, Value>,
    /// The client's session, when it gave one.
    pub session: Option<String>,
    /// The working directory, when it gave one.
    pub cwd: Option<String>,
    /// The client's id for the call, when it gave one.
    pub tool_use_id: Option<String>,
    /// What the tool answered (`PostToolUse`).
    pub response: Option<Value>,
}

/// Why an event is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    /// Not JSON, or not an object.
    #[error("the hook's event does not read as a JSON object: {0}")]
    NotAnObject(String),
    /// Larger than [`MAX_EVENT_BYTES`].
    #[error("the hook's event is larger than {MAX_EVENT_BYTES} bytes")]
    TooLarge,
    /// A required field missing or of another type.
    #[error("the hook's event has no {field} {expected}")]
    Field {
        /// The field.
        field: &'static str,
        /// What it should be.
        expected: &'static str,
    },
    /// An event this hook does not answer.
    #[error("the hook answers `PreToolUse` and `PostToolUse`, not `{0}`")]
    Event(String),
}

impl HookEvent {
    /// Reads an event: `hook_event_name` (`PreToolUse` or `PostToolUse`),
    /// `tool_name` (text) and `tool_input` (an object) are required;
    /// `session_id`, `cwd`, `tool_use_id` are read when they are text and
    /// `tool_response` when present; anything else is ignored.
    pub fn parse(bytes: &[u8]) -> Result<Self, EventError> {
        if bytes.len() > MAX_EVENT_BYTES {
            return Err(EventError::TooLarge);
        }
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|error| EventError::NotAnObject(error.to_string()))?;
        let Value::Object(mut event) = value else {
            return Err(EventError::NotAnObject("it is not an object".to_owned()));
        };
        let text = |event: &Map<String, Value>, field: &'static str| {
            event.get(field).and_then(Value::as_str).map(str::to_owned)
        };
        let kind = match event.get("hook_event_name").and_then(Value::as_str) {
            Some("PreToolUse") => HookKind::PreToolUse,
            Some("PostToolUse") => HookKind::PostToolUse,
            Some(other) => return Err(EventError::Event(visible(other).into_owned())),
            None => {
                return Err(EventError::Field {
                    field: "`hook_event_name`",
                    expected: "as text",
                });
            }
        };
        let tool = text(&event, "tool_name").ok_or(EventError::Field {
            field: "`tool_name`",
            expected: "as text",
        })?;
        let Some(Value::Object(input)) = event.remove("tool_input") else {
            return Err(EventError::Field {
                field: "`tool_input`",
                expected: "as an object",
            });
        };
        Ok(Self {
            kind,
            tool,
            input,
            session: text(&event, "session_id"),
            cwd: text(&event, "cwd"),
            tool_use_id: text(&event, "tool_use_id"),
            response: event.remove("tool_response"),
        })
    }
}

/// toolgate's answer to a hook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Verdict {
    /// No decision of toolgate's: the gate lets the call run, and the
    /// client's own rules apply as they would without the hook.
    None {
        /// Why, for the log.
        why: String,
    },
    /// Approved: the client may run it — with `updated_input` in place of
    /// its input, when the approver edited it.
    Allow {
        /// Who decided, in words.
        reason: String,
        /// The input to run instead, when it was edited.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        updated_input: Option<Map<String, Value>>,
    },
    /// Not to run: denied, not decided in time, or anything that went wrong.
    Deny {
        /// What the model reads.
        reason: String,
    },
}

/// What a hook process does with a verdict: exit with `exit`, having
/// written `stdout` and `stderr`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The exit code: 0, or 2 for a deny — never another.
    pub exit: u8,
    /// What goes to stdout.
    pub stdout: String,
    /// What goes to stderr.
    pub stderr: String,
}

impl Verdict {
    /// A deny for what went wrong.
    pub fn failed(why: impl std::fmt::Display) -> Self {
        Verdict::Deny {
            reason: format!("toolgate could not judge this call, so it does not run: {why}"),
        }
    }

    /// The verdict in `client`'s shapes, for a `kind` hook. A deny is exit
    /// 2 with the reason on stderr, which both clients read as a block
    /// (Codex needs the reason non-empty: it always is). An allow is, for
    /// Claude Code, `permissionDecision: "allow"` with the reason and any
    /// edited input; for Codex, which takes no allow, exit 0 with nothing
    /// written. No decision is exit 0 with nothing written.
    pub fn render(&self, client: Client, kind: HookKind) -> Rendered {
        let quiet = Rendered {
            exit: 0,
            stdout: String::new(),
            stderr: String::new(),
        };
        match self {
            Verdict::None { .. } => quiet,
            Verdict::Deny { reason } => Rendered {
                exit: 2,
                stdout: String::new(),
                stderr: if reason.trim().is_empty() {
                    "toolgate denied this call".to_owned()
                } else {
                    format!("{reason}\n")
                },
            },
            Verdict::Allow { .. } if kind == HookKind::PostToolUse => quiet,
            Verdict::Allow {
                reason,
                updated_input,
            } => match client {
                Client::Codex => quiet,
                Client::ClaudeCode => {
                    let mut output = json!({
                        "hookEventName": "PreToolUse",
                        "permissionDecision": "allow",
                        "permissionDecisionReason": reason,
                    });
                    if let (Some(input), Some(map)) = (updated_input, output.as_object_mut()) {
                        map.insert("updatedInput".to_owned(), Value::Object(input.clone()));
                    }
                    Rendered {
                        exit: 0,
                        stdout: format!("{}\n", json!({ "hookSpecificOutput": output })),
                        stderr: String::new(),
                    }
                }
            },
        }
    }
}
