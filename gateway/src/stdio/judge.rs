//! What one line a client wrote says: a message for rmcp, or the answer the
//! transport gives in its place — found by one bounded pass where the line
//! does not read (see the [parent module](super)).

use rmcp::model::{ClientJsonRpcMessage, ErrorCode};
use serde_json::Value;

use super::MAX_ID_LENGTH;

/// What a line says.
pub(super) enum Heard {
    /// A message for rmcp.
    Message(Box<ClientJsonRpcMessage>),
    /// An answer of the wrapper's own: one line of JSON.
    Answer(Vec<u8>),
    /// Nothing to hand on or answer.
    Nothing,
}

/// Reads one line (its newline included, or not, at the end of the input).
pub(super) fn judge(line: &[u8]) -> Heard {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // RFC 8259 §8.1 lets a parser ignore a leading byte order mark; rmcp does.
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Heard::Nothing;
    }
    let error = match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(message) => return Heard::Message(Box::new(message)),
        Err(error) => error,
    };
    match error.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            // A client's reply to one of ours (an elicitation form's) that
            // does not read is not answered: an error under its id would
            // read as the answer to the client's own request of that id.
            if is_reply(line) {
                tracing::warn!(bytes = line.len(), %error, "a reply that is not JSON is not answered");
                return Heard::Nothing;
            }
            let id = recover_id(line);
            tracing::warn!(
                bytes = line.len(),
                id_recovered = id.is_some(),
                %error,
                "a line that is not JSON is answered"
            );
            Heard::Answer(answer(
                ErrorCode::PARSE_ERROR,
                "Parse error",
                id.as_deref(),
                &error.to_string(),
            ))
        }
        serde_json::error::Category::Data | serde_json::error::Category::Io => {
            not_a_message(line, &error)
        }
    }
}

/// JSON that does not read as a client's message: a batch, a request of
/// the wrong shape, or a notification or response that is not answered.
pub(super) fn not_a_message(line: &[u8], error: &serde_json::Error) -> Heard {
    let invalid = |id: Option<&str>, reason: &str| {
        tracing::warn!(id_recovered = id.is_some(), %reason, "an invalid request is answered");
        Heard::Answer(answer(
            ErrorCode::INVALID_REQUEST,
            "Invalid Request",
            id,
            reason,
        ))
    };
    match serde_json::from_slice::<Value>(line) {
        Ok(Value::Array(_)) => invalid(
            None,
            "a JSON array: batches are not part of MCP; send each message on a line of its own",
        ),
        Ok(Value::Object(object)) => {
            let id = match object.get("id") {
                // The id's own text, never the number read back: an integer
                // past 64 bits would come back as a float, another id.
                Some(Value::Number(_)) => recover_id(line),
                Some(Value::String(text)) if text.len() <= MAX_ID_LENGTH => {
                    serde_json::to_string(text).ok()
                }
                _ => None,
            };
            let method = object.contains_key("method");
            let response = object.contains_key("result") || object.contains_key("error");
            if !object.contains_key("id") && method {
                tracing::warn!(%error, "a notification that does not read is not answered");
                Heard::Nothing
            } else if !method && response {
                tracing::warn!(%error, "a response that does not read is not answered");
                Heard::Nothing
            } else if let (Some(Value::String(method)), Some(params)) =
                (object.get("method"), object.get("params"))
                && !matches!(params, Value::Object(_) | Value::Null)
            {
                // A request whose params are not an object never reaches a
                // handler (MCP's params are named, never by position): its
                // params are what is wrong.
                let reason = format!(
                    "the params of `{}` are {}, not an object",
                    toolgate::visible::visible(method),
                    match params {
                        Value::String(_) => "a string",
                        Value::Array(_) => "an array",
                        _ => "a number or a boolean",
                    }
                );
                tracing::warn!(id_recovered = id.is_some(), %reason, "a request's params are answered invalid");
                Heard::Answer(answer(
                    ErrorCode::INVALID_PARAMS,
                    &reason,
                    id.as_deref(),
                    &reason,
                ))
            } else if let Some(Value::Number(number)) = object.get("id")
                && number.as_i64().is_none()
            {
                invalid(
                    id.as_deref(),
                    "the id is a number outside the 64-bit integers (a fraction, or too large): use a string or an integer id",
                )
            } else {
                invalid(id.as_deref(), &error.to_string())
            }
        }
        Ok(_) => invalid(None, "not a JSON-RPC message: a message is a JSON object"),
        // Read once as a message, it should read as JSON; were it not to, it
        // is not JSON.
        Err(error) => Heard::Answer(answer(
            ErrorCode::PARSE_ERROR,
            "Parse error",
            recover_id(line).as_deref(),
            &error.to_string(),
        )),
    }
}

/// A JSON-RPC error answer, as one line: `id` is the JSON text of the id,
/// or `None` for `null`.
pub(super) fn answer(code: ErrorCode, message: &str, id: Option<&str>, reason: &str) -> Vec<u8> {
    let error = serde_json::json!({
        "code": code.0,
        "message": message,
        "data": {"reason": reason},
    });
    format!(
        r#"{{"jsonrpc":"2.0","id":{},"error":{error}}}"#,
        id.unwrap_or("null")
    )
    .into_bytes()
    .into_iter()
    .chain([b'\n'])
    .collect()
}

/// The JSON text of the `id` of the top-level object `line` holds, when it
/// is a number or a string: found by one pass over the line that reads
/// nothing but the top-level members before it, whatever the line holds
/// beyond (any depth, invalid UTF-8, an end cut short). `None` for anything
/// else — a line that is no object (a batch), an `id` of another kind, one
/// longer than [`MAX_ID_LENGTH`], or a number the line's end may have cut.
pub(super) fn recover_id(line: &[u8]) -> Option<String> {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let mut at = skip_space(line, 0);
    if line.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    loop {
        at = skip_space(line, at);
        if line.get(at) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(line, at)?;
        let is_id = line.get(at..key_end) == Some(b"\"id\"".as_slice());
        at = skip_space(line, key_end);
        if line.get(at) != Some(&b':') {
            return None;
        }
        at = skip_space(line, at + 1);
        if is_id {
            return id_token(line.get(at..)?);
        }
        at = skip_space(line, value_end(line, at)?);
        if line.get(at) != Some(&b',') {
            return None;
        }
        at += 1;
    }
}

/// Whether the top-level object `line` holds reads, as far as one pass
/// over its top-level members gets, as a reply: a `result` or an `error`
/// member and no `method` one.
pub(super) fn is_reply(line: &[u8]) -> bool {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let mut at = skip_space(line, 0);
    if line.get(at) != Some(&b'{') {
        return false;
    }
    at += 1;
    let mut reply = false;
    loop {
        at = skip_space(line, at);
        if line.get(at) != Some(&b'"') {
            return reply;
        }
        let Some(key_end) = string_end(line, at) else {
            return reply;
        };
        match line.get(at..key_end) {
            Some(b"\"method\"") => return false,
            Some(b"\"result\"" | b"\"error\"") => reply = true,
            _ => {}
        }
        at = skip_space(line, key_end);
        if line.get(at) != Some(&b':') {
            return reply;
        }
        at = skip_space(line, at + 1);
        let Some(end) = value_end(line, at) else {
            return reply;
        };
        at = skip_space(line, end);
        if line.get(at) != Some(&b',') {
            return reply;
        }
        at += 1;
    }
}

/// The first byte at or after `at` that is not JSON whitespace.
pub(super) fn skip_space(line: &[u8], at: usize) -> usize {
    line.get(at..)
        .and_then(|rest| {
            rest.iter()
                .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        })
        .map_or(line.len(), |skipped| at + skipped)
}

/// Just past the string that begins at `at` (a `"`), or `None` when the
/// line ends first.
pub(super) fn string_end(line: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    while let Some(&byte) = line.get(i) {
        match byte {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// Just past the value that begins at `at`: a string, an object or array
/// (its brackets counted, strings skipped — no recursion, so any depth), or
/// a scalar up to the next delimiter.
pub(super) fn value_end(line: &[u8], at: usize) -> Option<usize> {
    match line.get(at)? {
        b'"' => string_end(line, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while let Some(&byte) = line.get(i) {
                match byte {
                    b'"' => {
                        i = string_end(line, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let rest = line.get(at..)?;
            let length = rest
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'))?;
            (length > 0).then_some(at + length)
        }
    }
}

/// The id at the start of `rest`, as JSON text: a string that reads as one
/// (its escapes valid), or a number followed by a delimiter, so that one
/// the line's end cut is not taken for another.
pub(super) fn id_token(rest: &[u8]) -> Option<String> {
    match rest.first()? {
        b'"' => {
            let end = string_end(rest, 0)?;
            let token = rest.get(..end).filter(|t| t.len() <= MAX_ID_LENGTH)?;
            let text: String = serde_json::from_slice(token).ok()?;
            serde_json::to_string(&text).ok()
        }
        b'-' | b'0'..=b'9' => {
            let end = rest
                .iter()
                .position(|b| !matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))?;
            let after = skip_space(rest, end);
            if !matches!(rest.get(after), Some(b',' | b'}')) {
                return None;
            }
            let token = rest.get(..end).filter(|t| t.len() <= MAX_ID_LENGTH)?;
            // Checked as a JSON number and echoed as the client wrote it: a
            // number too large for a float is still the client's id.
            is_json_number(token).then(|| String::from_utf8_lossy(token).into_owned())
        }
        _ => None,
    }
}

/// Whether `token` is a JSON number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
pub(super) fn is_json_number(token: &[u8]) -> bool {
    let digits = |at: usize| {
        token.get(at..).map_or(0, |rest| {
            rest.iter().take_while(|b| b.is_ascii_digit()).count()
        })
    };
    let mut at = usize::from(token.first() == Some(&b'-'));
    match token.get(at) {
        Some(b'0') => at += 1,
        Some(b'1'..=b'9') => at += digits(at),
        _ => return false,
    }
    if token.get(at) == Some(&b'.') {
        let fraction = digits(at + 1);
        if fraction == 0 {
            return false;
        }
        at += 1 + fraction;
    }
    if matches!(token.get(at), Some(b'e' | b'E')) {
        at += 1;
        if matches!(token.get(at), Some(b'+' | b'-')) {
            at += 1;
        }
        let exponent = digits(at);
        if exponent == 0 {
            return false;
        }
        at += exponent;
    }
    at == token.len()
}
