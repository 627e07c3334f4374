//! Webhooks signed per the Standard Webhooks specification, and Slack's
//! incoming webhooks: both a JSON POST.
//!
//! A webhook's body is `{"type", "id", "timestamp", "data"}` — the event's
//! data with `link` added where the inbox's address is known — and its
//! headers `webhook-id` (the event's stable id: the same on every attempt,
//! for de-duplication), `webhook-timestamp` (seconds) and
//! `webhook-signature` (`v1,` and the base64 HMAC-SHA256 of
//! `id.timestamp.body` under the shared secret).
//!
//! A Slack message is Block Kit. Everything a model, a server or a client
//! wrote goes in `plain_text` objects, which Slack renders as written:
//! no mentions (`<!channel>`, `<@U…>`), no links (`<url|label>`), no
//! formatting. The only `mrkdwn` text is toolgate's own words and the link
//! it builds, escaped (`&`, `<`, `>`) all the same.

use std::time::Duration;

use serde_json::{Value, json};

use crate::NotifyError;
use crate::message::{self, Outgoing};
use crate::settings::{SlackSettings, WebhookSettings};

/// How long one POST may take.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(10);

/// The fewest bytes a signing secret may hold: the specification's
/// smallest (24), below which a signature is guessable.
const MIN_SECRET_BYTES: usize = 24;

/// Why a signing secret (`whsec_` and base64, or the base64 alone) is
/// unusable; `None` when it is fine.
pub fn signing_secret_problem(secret: &str) -> Option<String> {
    let encoded = secret.strip_prefix("whsec_").unwrap_or(secret);
    let bytes = encoded.trim_end_matches('=').len() * 3 / 4;
    if standardwebhooks::Webhook::new(secret).is_err() {
        Some("it is not a signing secret (`whsec_` and base64)".to_owned())
    } else if bytes < MIN_SECRET_BYTES {
        Some(format!(
            "it holds {bytes} bytes, fewer than the {MIN_SECRET_BYTES} a signature needs not to be guessed (e.g. `whsec_` and the base64 of 32 random bytes: `openssl rand -base64 32`)"
        ))
    } else {
        None
    }
}

/// The body a webhook receiver is sent.
pub fn webhook_body(out: &Outgoing) -> Value {
    let event = &out.event;
    let mut data = serde_json::to_value(&event.data).unwrap_or(Value::Null);
    if let (Value::Object(map), Some(link)) = (&mut data, &out.link) {
        map.insert("link".to_owned(), Value::String(link.clone()));
    }
    if let (Value::Object(map), true) = (&mut data, out.withheld) {
        map.insert("arguments_withheld".to_owned(), Value::Bool(true));
    }
    json!({
        "type": event.kind.as_str(),
        "id": event.id,
        "timestamp": message::timestamp(event.at_ms),
        "data": data,
    })
}

/// Sends `out` to a webhook receiver, signed.
pub(crate) async fn send_webhook(
    http: &reqwest::Client,
    settings: &WebhookSettings,
    out: &Outgoing,
) -> Result<(), NotifyError> {
    let secret = settings.secret.read()?;
    if let Some(problem) = signing_secret_problem(&secret) {
        return Err(NotifyError::Secret {
            source_: settings.secret.to_string(),
            problem,
        });
    }
    let signer = standardwebhooks::Webhook::new(&secret).map_err(|_| NotifyError::Secret {
        source_: settings.secret.to_string(),
        problem: "it is not a signing secret (`whsec_` and base64)".to_owned(),
    })?;
    let body = json_bytes(&webhook_body(out))?;
    let timestamp = out.event.at_ms.div_euclid(1000).max(0);
    // Signed at sending time: receivers refuse a timestamp older than a few
    // minutes, and a retry may come much later than the event.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(timestamp, |d| {
            i64::try_from(d.as_secs()).unwrap_or(timestamp)
        });
    let signature = signer
        .sign(&out.event.id, now, &body)
        .map_err(|e| NotifyError::Send {
            reason: format!("the payload could not be signed: {e}"),
        })?;
    let request = http
        .post(settings.url.clone())
        .header(standardwebhooks::HEADER_WEBHOOK_ID, &out.event.id)
        .header(standardwebhooks::HEADER_WEBHOOK_TIMESTAMP, now.to_string())
        .header(standardwebhooks::HEADER_WEBHOOK_SIGNATURE, signature);
    post_json(request, body).await
}

/// A value as the bytes of its JSON.
fn json_bytes(value: &Value) -> Result<Vec<u8>, NotifyError> {
    serde_json::to_vec(value).map_err(|e| NotifyError::Send {
        reason: format!("the payload could not be written: {e}"),
    })
}

/// Sends `body` as JSON with `request`, within [`TIMEOUT`]: done when the
/// receiver answered 2xx.
async fn post_json(request: reqwest::RequestBuilder, body: Vec<u8>) -> Result<(), NotifyError> {
    let response = request
        .timeout(TIMEOUT)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| NotifyError::Send {
            reason: transport_error(e),
        })?;
    status_ok(response.status())
}

/// The Block Kit message for Slack.
pub fn slack_body(out: &Outgoing) -> Value {
    let event = &out.event;
    let plain =
        |text: &str| json!({"type": "plain_text", "text": clip(text, 2900), "emoji": false});
    let headline = format!(
        "Run {} {}",
        message::short_id(&event.data.run_id),
        message::what_happened(event)
    );
    let mut blocks = vec![
        // Slack takes at most 150 characters there, the ellipsis counted.
        json!({"type": "header", "text": plain(&clip(&headline, 149))}),
        json!({"type": "section", "fields": [
            plain(&format!("Requested by: {}", message::origin(event))),
            plain(&format!("Run: {}", event.data.run_id)),
        ]}),
    ];
    for call in event.data.calls.iter().take(10) {
        let server = call
            .server
            .as_deref()
            .map_or_else(|| "builtin".to_owned(), |s| format!("server {s}"));
        let summary = call.summary.as_deref().unwrap_or(message::WITHHELD);
        blocks.push(json!({"type": "section", "text": plain(&format!(
            "{} ({server}): {summary}",
            call.tool
        ))}));
    }
    if let Some(why) = &event.data.why {
        blocks.push(json!({"type": "context", "elements": [plain(why)]}));
    }
    if let Some(link) = &out.link {
        blocks.push(json!({"type": "section", "text": {
            "type": "mrkdwn",
            "text": format!("<{}|Open the run in the inbox>", slack_escape(link)),
        }}));
    }
    json!({
        // The notification's own text (shown where blocks are not): only
        // toolgate's words and the run's short id.
        "text": slack_escape(&format!(
            "toolgate: run {} {}",
            message::short_id(&event.data.run_id),
            match event.kind {
                toolgate_store::outbox::EventKind::Waiting => "waits",
                toolgate_store::outbox::EventKind::Decided => "was decided",
                toolgate_store::outbox::EventKind::Resumed => "was resumed",
                toolgate_store::outbox::EventKind::Expired => "expired",
            }
        )),
        "unfurl_links": false,
        "unfurl_media": false,
        "blocks": blocks,
    })
}

/// Sends `out` to Slack.
pub(crate) async fn send_slack(
    http: &reqwest::Client,
    settings: &SlackSettings,
    out: &Outgoing,
) -> Result<(), NotifyError> {
    let url = settings.url.read()?;
    let url = url::Url::parse(&url).map_err(|_| NotifyError::Secret {
        source_: settings.url.to_string(),
        problem: "it is not a URL".to_owned(),
    })?;
    post_json(http.post(url), json_bytes(&slack_body(out))?).await
}

/// Slack's escaping of text it parses: `&`, `<` and `>`.
pub fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn clip(text: &str, max: usize) -> String {
    let mut chars = text.chars();
    let cut: String = chars.by_ref().take(max).collect();
    if chars.next().is_some() {
        format!("{cut}…")
    } else {
        cut
    }
}

fn status_ok(status: reqwest::StatusCode) -> Result<(), NotifyError> {
    if status.is_success() {
        Ok(())
    } else {
        Err(NotifyError::Send {
            reason: format!("the receiver answered {status}"),
        })
    }
}

/// A transport error in words, without the URL (a Slack URL is a secret).
fn transport_error(error: reqwest::Error) -> String {
    let error = error.without_url();
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "could not connect"
    } else {
        "failed"
    };
    let mut reason = format!("the request {kind}");
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        reason.push_str(": ");
        reason.push_str(&cause.to_string());
        source = cause.source();
    }
    reason
}
