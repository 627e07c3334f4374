//! The request log: one JSON line per request received, flushed as it is written.

use std::{
    collections::BTreeMap,
    fs::{File, OpenOptions},
    io::{self, Write},
    path::Path,
};

use serde_json::{Value, json};

/// What a request got, as the log line's `answered` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answered {
    /// An answer with this status (for a truncated body, the status it announced).
    Status(u16),
    /// Nothing yet: the step hangs before it answers.
    Hang,
    /// Nothing: the connection was closed instead.
    Reset,
}

impl Answered {
    fn to_json(self) -> Value {
        match self {
            Self::Status(status) => json!(status),
            Self::Hang => json!("hang"),
            Self::Reset => json!("reset"),
        }
    }
}

/// One request as the log records it.
#[derive(Debug)]
pub(crate) struct Entry<'a> {
    /// The request's index, from 0, over every request the server received.
    pub(crate) n: u64,
    /// The request's method.
    pub(crate) method: &'a str,
    /// The request's path.
    pub(crate) path: &'a str,
    /// `openai`, `anthropic` or `other`.
    pub(crate) protocol: &'a str,
    /// The headers, names lowercased; repeated headers joined with `, `.
    pub(crate) headers: &'a BTreeMap<String, String>,
    /// The body parsed as JSON, if it was JSON.
    pub(crate) body: Option<&'a Value>,
    /// The body's length in bytes.
    pub(crate) raw_len: usize,
    /// Everything wrong with the request.
    pub(crate) problems: &'a [String],
    /// The index of the script step it used, if it used one.
    pub(crate) step: Option<usize>,
    /// What it got.
    pub(crate) answered: Answered,
}

impl Entry<'_> {
    /// The entry as its JSON line's value.
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "n": self.n,
            "method": self.method,
            "path": self.path,
            "protocol": self.protocol,
            "headers": self.headers,
            "body": self.body,
            "raw_len": self.raw_len,
            "problems": self.problems,
            "step": self.step,
            "answered": self.answered.to_json(),
        })
    }
}

/// The log file, opened to append.
#[derive(Debug)]
pub(crate) struct RequestLog {
    file: File,
}

impl RequestLog {
    /// Opens (creating if need be) the log at `path` to append to it.
    pub(crate) fn open(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self { file })
    }

    /// Appends the entry as one line and flushes it.
    pub(crate) fn write(&mut self, entry: &Entry<'_>) -> io::Result<()> {
        let mut line = serde_json::to_vec(&entry.to_json()).map_err(io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn an_entry_has_every_field() {
        let headers = BTreeMap::from([("content-type".to_owned(), "application/json".to_owned())]);
        let body = json!({"model": "m"});
        let problems = vec!["model: required".to_owned()];
        let entry = Entry {
            n: 3,
            method: "POST",
            path: "/v1/messages",
            protocol: "anthropic",
            headers: &headers,
            body: Some(&body),
            raw_len: 13,
            problems: &problems,
            step: None,
            answered: Answered::Hang,
        };
        assert_eq!(
            entry.to_json(),
            json!({
                "n": 3, "method": "POST", "path": "/v1/messages", "protocol": "anthropic",
                "headers": {"content-type": "application/json"}, "body": {"model": "m"},
                "raw_len": 13, "problems": ["model: required"], "step": null, "answered": "hang"
            })
        );
    }
}
