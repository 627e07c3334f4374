//! The script: the answers to give, one step per valid request, in order.
//!
//! A script is a JSON array of steps. Each step has exactly one of
//!
//! - `body` (with `status`): answer with this JSON body;
//! - `raw` (with `status`): answer with this text as the body;
//! - `truncate` (with `status`): write the first half of this JSON body,
//!   then close the connection;
//! - `hang_ms`: answer nothing for this many milliseconds, then 500;
//! - `reset: true`: close the connection without answering;
//!
//! and may have `headers` (an object of names to string values, added to the
//! answer), `expect` (`"openai"` or `"anthropic"`: the protocol the request
//! must come on), `stream` (how the answer is cut into server-sent events
//! when the request asks for a stream: see [`crate::stream`]) and `repeat` (`true` on the last step only: the step
//! answers every request that reaches it and is never used up, for a suite
//! that sends as many requests as it generates).

use std::time::Duration;

use axum::http::{HeaderName, HeaderValue, StatusCode};
use serde_json::{Map, Value};

use crate::server::Protocol;

/// What a step does with the request it answers.
#[derive(Debug, Clone)]
pub(crate) enum Action {
    /// Answer with this status and body (JSON text, or raw text for malformed bodies).
    Send {
        /// The status.
        status: StatusCode,
        /// The body's bytes.
        body: Vec<u8>,
        /// Whether to write only the first half of the body and then close the connection.
        truncate: bool,
    },
    /// Answer nothing for this long, then 500.
    Hang(Duration),
    /// Close the connection without answering.
    Reset,
}

/// One step of the script.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    /// What to answer.
    pub(crate) action: Action,
    /// Headers to add to the answer.
    pub(crate) headers: Vec<(HeaderName, HeaderValue)>,
    /// The protocol the request must have come on.
    pub(crate) expect: Option<Protocol>,
    /// How a streamed answer is cut and paced ([`crate::stream`]); a step
    /// without it streams in the default shape when the request asks.
    pub(crate) stream: crate::stream::Shape,
}

/// The steps a script file holds, read: the steps in order, and whether
/// the last one repeats.
#[derive(Debug)]
pub(crate) struct Steps {
    list: Vec<Step>,
    /// Whether the last step answers every request that reaches it.
    repeat_last: bool,
}

impl std::ops::Deref for Steps {
    type Target = [Step];

    fn deref(&self) -> &[Step] {
        &self.list
    }
}

/// The steps, and how many have been used.
#[derive(Debug)]
pub(crate) struct Script {
    steps: Vec<Step>,
    next: usize,
    repeat_last: bool,
}

impl Script {
    /// A script of these steps, none used yet.
    pub(crate) fn new(steps: Steps) -> Self {
        Self {
            steps: steps.list,
            next: 0,
            repeat_last: steps.repeat_last,
        }
    }

    /// The next step and its index, using it up unless it is a last step
    /// that repeats; `None` once all are used.
    pub(crate) fn take(&mut self) -> Option<(usize, Step)> {
        let step = self.steps.get(self.next)?.clone();
        let index = self.next;
        let repeats = self.repeat_last && index + 1 == self.steps.len();
        if !repeats {
            self.next += 1;
        }
        Some((index, step))
    }

    /// How many steps the script has.
    pub(crate) fn len(&self) -> usize {
        self.steps.len()
    }
}

/// The keys a step may have.
const STEP_KEYS: &[&str] = &[
    "status", "body", "raw", "truncate", "hang_ms", "reset", "headers", "expect", "repeat",
    "stream",
];

/// Reads a script: a JSON array of steps.
pub(crate) fn parse(text: &str) -> Result<Steps, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|error| format!("not valid JSON: {error}"))?;
    let Value::Array(steps) = value else {
        return Err("must be a JSON array of steps".to_owned());
    };
    let final_index = steps.len().saturating_sub(1);
    let mut repeat_last = false;
    for (i, step) in steps.iter().enumerate() {
        match step.get("repeat") {
            None | Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) if i == final_index => repeat_last = true,
            Some(Value::Bool(true)) => {
                return Err(format!(
                    "step {i}: only the last step may repeat (the steps after it would never be used)"
                ));
            }
            Some(other) => return Err(format!("step {i}: repeat must be a boolean, not {other}")),
        }
    }
    let list = steps
        .iter()
        .enumerate()
        .map(|(i, step)| parse_step(step).map_err(|error| format!("step {i}: {error}")))
        .collect::<Result<_, _>>()?;
    Ok(Steps { list, repeat_last })
}

/// Reads one step.
fn parse_step(value: &Value) -> Result<Step, String> {
    let Value::Object(step) = value else {
        return Err("must be an object".to_owned());
    };
    if let Some(unknown) = step.keys().find(|key| !STEP_KEYS.contains(&key.as_str())) {
        return Err(format!(
            "unknown key `{unknown}` (a step has {})",
            STEP_KEYS.join(", ")
        ));
    }
    let kinds: Vec<&str> = ["body", "raw", "truncate", "hang_ms", "reset"]
        .into_iter()
        .filter(|kind| step.contains_key(*kind))
        .collect();
    let [kind] = kinds.as_slice() else {
        return Err(format!(
            "must have exactly one of body, raw, truncate, hang_ms, reset (has {})",
            if kinds.is_empty() {
                "none".to_owned()
            } else {
                kinds.join(", ")
            }
        ));
    };
    let action = action(step, kind)?;
    let headers = match step.get("headers") {
        None => Vec::new(),
        Some(_) if matches!(action, Action::Reset) => {
            return Err("headers have no effect on a reset step".to_owned());
        }
        Some(headers) => parse_headers(headers)?,
    };
    let expect = match step.get("expect") {
        None => None,
        Some(Value::String(name)) if name == "openai" => Some(Protocol::OpenAi),
        Some(Value::String(name)) if name == "anthropic" => Some(Protocol::Anthropic),
        Some(other) => {
            return Err(format!(
                "expect must be \"openai\" or \"anthropic\", not {other}"
            ));
        }
    };
    let stream = match step.get("stream") {
        None => crate::stream::Shape::default(),
        Some(_) if !matches!(action, Action::Send { .. }) => {
            return Err("stream has no effect on a step that sends no body".to_owned());
        }
        Some(shape) => crate::stream::parse_shape(shape)?,
    };
    Ok(Step {
        action,
        headers,
        expect,
        stream,
    })
}

/// The action of a step whose kind key is `kind`.
fn action(step: &Map<String, Value>, kind: &str) -> Result<Action, String> {
    let status = match step.get("status") {
        Some(_) if matches!(kind, "hang_ms" | "reset") => {
            return Err(format!("status has no effect on a {kind} step"));
        }
        Some(status) => Some(parse_status(status)?),
        None => None,
    };
    let need_status = || status.ok_or_else(|| format!("a {kind} step needs a status"));
    match (kind, step.get(kind)) {
        ("body", Some(body)) => Ok(Action::Send {
            status: need_status()?,
            body: serialize(body)?,
            truncate: false,
        }),
        ("truncate", Some(body)) => Ok(Action::Send {
            status: need_status()?,
            body: serialize(body)?,
            truncate: true,
        }),
        ("raw", Some(Value::String(text))) => Ok(Action::Send {
            status: need_status()?,
            body: text.clone().into_bytes(),
            truncate: false,
        }),
        ("raw", Some(_)) => Err("raw must be a string".to_owned()),
        ("hang_ms", Some(ms)) => ms
            .as_u64()
            .map(|ms| Action::Hang(Duration::from_millis(ms)))
            .ok_or_else(|| "hang_ms must be a whole number of milliseconds".to_owned()),
        ("reset", Some(Value::Bool(true))) => Ok(Action::Reset),
        _ => Err(format!("{kind} has a value this step cannot use")),
    }
}

/// A status code from 100 to 999.
fn parse_status(value: &Value) -> Result<StatusCode, String> {
    value
        .as_u64()
        .and_then(|code| u16::try_from(code).ok())
        .and_then(|code| StatusCode::from_u16(code).ok())
        .ok_or_else(|| format!("status must be an HTTP status code, not {value}"))
}

/// A body as the JSON text to send.
fn serialize(body: &Value) -> Result<Vec<u8>, String> {
    serde_json::to_vec(body).map_err(|error| format!("cannot serialize the body: {error}"))
}

/// `headers`: an object of header names to string values.
fn parse_headers(value: &Value) -> Result<Vec<(HeaderName, HeaderValue)>, String> {
    let Value::Object(headers) = value else {
        return Err("headers must be an object of names to string values".to_owned());
    };
    headers
        .iter()
        .map(|(name, value)| {
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("`{name}` is not a valid header name"))?;
            let text = value
                .as_str()
                .ok_or_else(|| format!("header `{name}` must have a string value"))?;
            let value = HeaderValue::from_str(text)
                .map_err(|_| format!("header `{name}` has a value that cannot be sent"))?;
            Ok((header, value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn every_kind_of_step_reads() {
        let steps = parse(
            r#"[
                {"status": 200, "body": {"ok": true}, "headers": {"retry-after": "1"}, "expect": "openai"},
                {"status": 200, "raw": "{oops"},
                {"status": 200, "truncate": {"long": "body"}},
                {"hang_ms": 300},
                {"reset": true}
            ]"#,
        )
        .unwrap();
        assert_eq!(steps.len(), 5);
        assert!(matches!(
            &steps[0].action,
            Action::Send { status, body, truncate: false } if *status == StatusCode::OK && body == br#"{"ok":true}"#
        ));
        assert_eq!(steps[0].headers[0].0, "retry-after");
        assert_eq!(steps[0].expect, Some(Protocol::OpenAi));
        assert!(matches!(&steps[1].action, Action::Send { body, .. } if body == b"{oops"));
        assert!(matches!(
            &steps[2].action,
            Action::Send { truncate: true, .. }
        ));
        assert!(matches!(steps[3].action, Action::Hang(d) if d == Duration::from_millis(300)));
        assert!(matches!(steps[4].action, Action::Reset));
    }

    #[test]
    fn a_last_step_that_repeats_is_never_used_up() {
        let steps = parse(
            r#"[
                {"status": 500, "body": {"first": true}},
                {"status": 200, "body": {"again": true}, "repeat": true}
            ]"#,
        )
        .unwrap();
        let mut script = Script::new(steps);
        let taken: Vec<usize> = (0..5).map(|_| script.take().unwrap().0).collect();
        assert_eq!(taken, [0, 1, 1, 1, 1]);
        assert_eq!(script.len(), 2);

        let mut once =
            Script::new(parse(r#"[{"status": 200, "body": 1, "repeat": false}]"#).unwrap());
        assert_eq!(once.take().unwrap().0, 0);
        assert!(once.take().is_none());
    }

    #[test]
    fn mistakes_are_named() {
        for (script, expected) in [
            ("{}", "must be a JSON array of steps"),
            (r#"[{"body": {}}]"#, "step 0: a body step needs a status"),
            (
                r#"[{"status": 200}]"#,
                "step 0: must have exactly one of body, raw, truncate, hang_ms, reset (has none)",
            ),
            (
                r#"[{"status": 200, "body": 1, "raw": "x"}]"#,
                "step 0: must have exactly one of body, raw, truncate, hang_ms, reset (has body, raw)",
            ),
            (
                r#"[{"reset": true, "headers": {}}]"#,
                "step 0: headers have no effect on a reset step",
            ),
            (
                r#"[{"status": 42, "body": 1}]"#,
                "step 0: status must be an HTTP status code, not 42",
            ),
            (
                r#"[{"status": 200, "body": 1, "expect": "gemini"}]"#,
                "step 0: expect must be \"openai\" or \"anthropic\", not \"gemini\"",
            ),
            (
                r#"[{"status": 200, "body": 1, "delay": 1}]"#,
                "step 0: unknown key `delay` (a step has status, body, raw, truncate, hang_ms, reset, headers, expect, repeat, stream)",
            ),
            (
                r#"[{"status": 200, "body": 1, "repeat": true}, {"reset": true}]"#,
                "step 0: only the last step may repeat (the steps after it would never be used)",
            ),
            (
                r#"[{"status": 200, "body": 1, "repeat": "yes"}]"#,
                "step 0: repeat must be a boolean, not \"yes\"",
            ),
        ] {
            assert_eq!(parse(script).unwrap_err(), expected, "{script}");
        }
    }
}
