//! The one HTTP exchange both protocols share: a POST under a deadline,
//! retried with backoff and jitter on what retrying can fix, the answer
//! read up to a bound, and a refusal turned into the error that names it.

use std::time::{Duration, Instant, SystemTime};

use reqwest::header::{HeaderMap, RETRY_AFTER};

use crate::error::ProviderError;
use crate::key::ApiKey;

mod stream;

use stream::Never;
pub(crate) use stream::{Answer, Assembler, StreamFault};

/// How a request is retried. A retry happens on 408, 409, 429, 500, 502,
/// 503, 504 and 529, on a connection that failed or was cut, and on an
/// attempt past its deadline; never on another refusal. The wait doubles
/// from `base_delay` up to `max_delay`, with half of it drawn at random;
/// a `Retry-After` (or `retry-after-ms`) the provider sends is waited
/// instead, when it is under an hour. No retry starts later than
/// `max_elapsed` after the first attempt did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included. Default: 4.
    pub max_attempts: u32,
    /// How long after the first attempt a retry may still start (the
    /// attempt then runs to its own deadline). Default: 5 minutes.
    pub max_elapsed: Duration,
    /// The wait before the first retry. Default: 500 ms.
    pub base_delay: Duration,
    /// The longest wait the backoff grows to. Default: 30 s.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            max_elapsed: Duration::from_mins(5),
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// One attempt, no retry.
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// The backoff before retry number `retry` (from 1), jittered: half
    /// fixed, half drawn.
    fn backoff(&self, retry: u32) -> Duration {
        let doubled = self
            .base_delay
            .saturating_mul(2_u32.saturating_pow(retry.saturating_sub(1)));
        let capped = doubled.min(self.max_delay);
        let half = capped / 2;
        let drawn = u64::try_from(half.as_millis()).unwrap_or(u64::MAX);
        half + Duration::from_millis(fastrand::u64(0..=drawn))
    }
}

/// Settings of the exchange, shared by both clients.
#[derive(Debug, Clone)]
pub(crate) struct Exchange {
    pub(crate) provider: &'static str,
    /// The protocol's name, for an answer that is not its.
    pub(crate) protocol: &'static str,
    /// What a 404 for the URL advises.
    pub(crate) url_hint: &'static str,
    pub(crate) client: reqwest::Client,
    pub(crate) deadline: Duration,
    pub(crate) idle_limit: Duration,
    pub(crate) overall_limit: Duration,
    pub(crate) retry: RetryPolicy,
    pub(crate) max_response_bytes: usize,
}

/// One request: where, with what, and for which model (to tell a wrong
/// model from a wrong URL).
pub(crate) struct Post<'a> {
    pub(crate) url: &'a url::Url,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
    pub(crate) model: &'a str,
    pub(crate) key: Option<&'a ApiKey>,
}

/// A 2xx answer, and the id the provider gave the request.
pub(crate) struct Delivered<T> {
    pub(crate) answer: T,
    pub(crate) request_id: Option<String>,
}

/// How one attempt ended, when it did not succeed.
enum Failed {
    Status {
        status: u16,
        message: String,
        retry_after: Option<Duration>,
        request_id: Option<String>,
    },
    /// No answer within this limit.
    Deadline(Duration),
    /// The connection failed or was cut — after the answer's headers, with
    /// the request id they carried.
    Connection(String, Option<String>),
    /// A stream that stopped before any of the answer arrived.
    Unstarted {
        reason: String,
        request_id: Option<String>,
    },
    Final(ProviderError),
}

const RETRYABLE: [u16; 8] = [408, 409, 429, 500, 502, 503, 504, 529];

/// The headers a provider names its request with: OpenAI's and most
/// compatible servers' `x-request-id`, Anthropic's `request-id`.
const REQUEST_ID_HEADERS: [&str; 2] = ["x-request-id", "request-id"];

impl Exchange {
    /// Builds the HTTP client: HTTPS through rustls, no redirects followed
    /// (a POST answered with a redirect is an error that names the URL).
    pub(crate) fn new(
        provider: &'static str,
        protocol: &'static str,
        url_hint: &'static str,
    ) -> Result<Self, ProviderError> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(15))
            .user_agent(concat!("toolgate-models/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ProviderError::Setup {
                provider,
                reason: e.to_string(),
            })?;
        Ok(Self {
            provider,
            protocol,
            url_hint,
            client,
            deadline: Duration::from_mins(2),
            idle_limit: Duration::from_mins(5),
            overall_limit: Duration::from_mins(30),
            retry: RetryPolicy::default(),
            max_response_bytes: 8 << 20,
        })
    }

    /// Sends `post`, retrying as the policy says; the body of a 2xx answer.
    pub(crate) async fn send(&self, post: Post<'_>) -> Result<Delivered<Vec<u8>>, ProviderError> {
        let delivered = self.send_with::<Never>(post, None).await?;
        match delivered.answer {
            Answer::Whole(body) => Ok(Delivered {
                answer: body,
                request_id: delivered.request_id,
            }),
            Answer::Streamed(never) => match never {},
        }
    }

    /// Sends `post`, which asks for a stream, and reads the events of a 2xx
    /// answer into an assembler from `assembler`, one for each attempt.
    pub(crate) async fn send_streamed<A: Assembler + Send>(
        &self,
        post: Post<'_>,
        assembler: &(dyn Fn() -> A + Sync),
    ) -> Result<Delivered<Answer<A>>, ProviderError> {
        self.send_with(post, Some(assembler)).await
    }

    async fn send_with<A: Assembler + Send>(
        &self,
        post: Post<'_>,
        assembler: Option<&(dyn Fn() -> A + Sync)>,
    ) -> Result<Delivered<Answer<A>>, ProviderError> {
        let started = Instant::now();
        let mut attempt = 0_u32;
        loop {
            attempt += 1;
            let failed = match self.attempt(&post, assembler).await {
                Ok(delivered) => return Ok(delivered),
                Err(Failed::Final(error)) => return Err(error),
                Err(failed) => failed,
            };
            let wait = match &failed {
                Failed::Status {
                    retry_after: Some(wait),
                    ..
                } => *wait,
                _ => self.retry.backoff(attempt),
            };
            let reason = describe(&failed);
            let out_of_time = started.elapsed() + wait > self.retry.max_elapsed;
            if attempt >= self.retry.max_attempts || out_of_time {
                return Err(self.give_up(failed, &post, attempt, started.elapsed()));
            }
            tracing::warn!(provider = self.provider, attempt, %reason, wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX), "model request failed; retrying");
            tokio::time::sleep(wait).await;
        }
    }

    /// One attempt. Without an assembler, the whole exchange is bounded by
    /// the deadline; with one, every silence by the idle limit and the
    /// whole by the overall limit.
    async fn attempt<A: Assembler + Send>(
        &self,
        post: &Post<'_>,
        assembler: Option<&(dyn Fn() -> A + Sync)>,
    ) -> Result<Delivered<Answer<A>>, Failed> {
        let request = self
            .client
            .post(post.url.clone())
            .headers(post.headers.clone())
            .body(post.body.clone());
        let Some(assembler) = assembler else {
            let exchange = async {
                let response = request.send().await.map_err(|e| connection(&e))?;
                self.read_whole(response, post).await
            };
            return tokio::time::timeout(self.deadline, exchange)
                .await
                .map_err(|_| Failed::Deadline(self.deadline))?;
        };
        // The request id, once the headers came: an attempt cut by the
        // overall limit still names it.
        let seen_id = std::sync::OnceLock::new();
        let exchange = async {
            let response = tokio::time::timeout(self.idle_limit, request.send())
                .await
                .map_err(|_| Failed::Deadline(self.idle_limit))?
                .map_err(|e| connection(&e))?;
            if let Some(id) = request_id(response.headers(), post.key) {
                let _ = seen_id.set(id);
            }
            let streams = response
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| {
                    v.split(';')
                        .next()
                        .is_some_and(|t| t.trim().eq_ignore_ascii_case("text/event-stream"))
                });
            if !(response.status().is_success() && streams) {
                return tokio::time::timeout(self.idle_limit, self.read_whole(response, post))
                    .await
                    .map_err(|_| Failed::Deadline(self.idle_limit))?;
            }
            self.read_events(response, post, assembler()).await
        };
        tokio::time::timeout(self.overall_limit, exchange)
            .await
            .map_err(|_| {
                Failed::Final(ProviderError::Interrupted {
                    provider: self.provider,
                    received: "an answer still streaming".to_owned(),
                    reason: format!(
                        "it took longer than the overall limit of {:.1} s (`overall_limit`)",
                        self.overall_limit.as_secs_f64()
                    ),
                    request_id: seen_id.get().cloned(),
                })
            })?
    }

    /// Reads an answer whole: the body of a 2xx, the error any other status
    /// stands for.
    async fn read_whole<A>(
        &self,
        mut response: reqwest::Response,
        post: &Post<'_>,
    ) -> Result<Delivered<Answer<A>>, Failed> {
        let status = response.status().as_u16();
        let request_id = request_id(response.headers(), post.key);
        let retry_after = retry_after(response.headers());
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .map(|l| String::from_utf8_lossy(l.as_bytes()).into_owned());
        let id = request_id.as_deref();
        if let Some(encoding) = response
            .headers()
            .get(reqwest::header::CONTENT_ENCODING)
            .map(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
            .filter(|e| !e.eq_ignore_ascii_case("identity"))
        {
            return Err(Failed::Final(
                ProviderError::Malformed {
                    provider: self.provider,
                    protocol: self.protocol,
                    reason: format!(
                        "its body is encoded (`Content-Encoding: {}`), which this client never asks for",
                        shown(&encoding, post.key)
                    ),
                    request_id: None,
                }
                .with_request_id(id),
            ));
        }
        if let Some(length) = response.content_length()
            && length > self.max_response_bytes as u64
        {
            return Err(Failed::Final(self.too_large(id)));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| Failed::Connection(with_causes(&e), request_id.clone()))?
        {
            if body.len() + chunk.len() > self.max_response_bytes {
                return Err(Failed::Final(self.too_large(id)));
            }
            body.extend_from_slice(&chunk);
        }
        if (200..300).contains(&status) {
            return Ok(Delivered {
                answer: Answer::Whole(body),
                request_id,
            });
        }
        let message = error_message(&body, post.key);
        if RETRYABLE.contains(&status) {
            return Err(Failed::Status {
                status,
                message,
                retry_after,
                request_id,
            });
        }
        Err(Failed::Final(
            self.refusal(status, message, location, post, &body)
                .with_request_id(id),
        ))
    }

    /// An answer that is not the protocol's, as an error repeats it.
    fn malformed(&self, reason: &str, key: Option<&ApiKey>, id: Option<&str>) -> ProviderError {
        ProviderError::Malformed {
            provider: self.provider,
            protocol: self.protocol,
            reason: shown(reason, key),
            request_id: None,
        }
        .with_request_id(id)
    }

    fn too_large(&self, request_id: Option<&str>) -> ProviderError {
        ProviderError::TooLarge {
            provider: self.provider,
            limit: self.max_response_bytes,
            request_id: None,
        }
        .with_request_id(request_id)
    }

    /// The error a non-retryable status stands for.
    fn refusal(
        &self,
        status: u16,
        message: String,
        location: Option<String>,
        post: &Post<'_>,
        body: &[u8],
    ) -> ProviderError {
        let provider = self.provider;
        let request_id = None;
        match status {
            401 => ProviderError::WrongKey {
                provider,
                message,
                request_id,
            },
            403 => ProviderError::Forbidden {
                provider,
                message,
                request_id,
            },
            404 if names_model(body, post.model) => ProviderError::WrongModel {
                provider,
                model: post.model.to_owned(),
                message,
                request_id,
            },
            404 => ProviderError::WrongUrl {
                provider,
                status,
                url: post.url.to_string(),
                hint: self.url_hint,
                message,
                request_id,
            },
            300..=399 => ProviderError::Redirected {
                provider,
                status,
                url: post.url.to_string(),
                location: location.map_or_else(String::new, |l| shown(&l, post.key)),
                request_id,
            },
            _ => ProviderError::Refused {
                provider,
                status,
                message,
                request_id,
            },
        }
    }

    fn give_up(
        &self,
        failed: Failed,
        post: &Post<'_>,
        attempts: u32,
        elapsed: Duration,
    ) -> ProviderError {
        let provider = self.provider;
        match failed {
            Failed::Status {
                status,
                message,
                retry_after,
                request_id,
            } => ProviderError::Unavailable {
                provider,
                status,
                attempts,
                elapsed,
                retry_after,
                message,
                request_id,
            },
            Failed::Deadline(deadline) => ProviderError::Deadline {
                provider,
                deadline,
                attempts,
            },
            Failed::Connection(reason, request_id) => ProviderError::Connection {
                provider,
                url: post.url.to_string(),
                attempts,
                reason,
                request_id,
            },
            Failed::Unstarted { reason, request_id } => ProviderError::Interrupted {
                provider,
                received: format!(
                    "none of the answer, on each of {attempts} attempt{}",
                    if attempts == 1 { "" } else { "s" }
                ),
                reason,
                request_id,
            },
            Failed::Final(error) => error,
        }
    }
}

/// The id the provider gave the request, as an error may repeat it.
fn request_id(headers: &HeaderMap, key: Option<&ApiKey>) -> Option<String> {
    REQUEST_ID_HEADERS.iter().find_map(|name| {
        let value = headers.get(*name)?;
        let id = shown(&String::from_utf8_lossy(value.as_bytes()), key);
        (!id.is_empty()).then_some(id)
    })
}

fn describe(failed: &Failed) -> String {
    match failed {
        Failed::Status { status, .. } => format!("status {status}"),
        Failed::Deadline(_) => "past the deadline".to_owned(),
        Failed::Connection(reason, _) | Failed::Unstarted { reason, .. } => reason.clone(),
        Failed::Final(error) => error.to_string(),
    }
}

/// A transport failure in words, its causes included (reqwest's own
/// message is only the outermost).
fn connection(error: &reqwest::Error) -> Failed {
    Failed::Connection(with_causes(error), None)
}

/// An error and each of its causes, joined by `: `.
fn with_causes(error: &(dyn std::error::Error + '_)) -> String {
    let mut reason = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        reason.push_str(": ");
        reason.push_str(&cause.to_string());
        source = cause.source();
    }
    reason
}

/// What the provider asks to wait: `retry-after-ms`, or `Retry-After` as
/// seconds or an HTTP date. Waits past an hour are not taken as meant.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let wait = if let Some(ms) = text("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        Duration::try_from_secs_f64(ms / 1000.0).ok()
    } else {
        let value = text(RETRY_AFTER.as_str())?.trim();
        match value.parse::<f64>() {
            Ok(seconds) => Duration::try_from_secs_f64(seconds).ok(),
            Err(_) => httpdate::parse_http_date(value)
                .ok()
                .map(|at| at.duration_since(SystemTime::now()).unwrap_or_default()),
        }
    }?;
    (wait <= Duration::from_hours(1)).then_some(wait)
}

/// The message of a provider's error body — `{"error": {"message": …}}`
/// in both protocols, a top-level `message` (vLLM) or a string `error` (LM
/// Studio) — or the start of the body, as [`shown`] writes it.
pub(crate) fn error_message(body: &[u8], key: Option<&ApiKey>) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let message = parsed
        .as_ref()
        .and_then(message_of)
        .map_or_else(|| String::from_utf8_lossy(body).into_owned(), str::to_owned);
    shown(&message, key)
}

fn message_of(body: &serde_json::Value) -> Option<&str> {
    body.pointer("/error/message")
        .or_else(|| body.get("message"))
        .or_else(|| body.get("error"))
        .and_then(serde_json::Value::as_str)
}

/// The longest text a server wrote that an error repeats, in characters.
const SHOWN_CHARS: usize = 500;

/// Text a server wrote, as an error may repeat it: cut to 2,000
/// characters; with a key, its hidden characters removed and then the key
/// ([`ApiKey::redact`]: removed first, so none can split a run of the key);
/// any hidden character left — there is none when a key is set — written
/// as an escape; at most 500 characters (`…` when cut).
pub(crate) fn shown(text: &str, key: Option<&ApiKey>) -> String {
    let text: String = text.trim().chars().take(4 * SHOWN_CHARS).collect();
    let text = match key {
        Some(key) => key.redact(&text),
        None => text,
    };
    let visible = toolgate::visible::visible(&text);
    let mut shown: String = visible.chars().take(SHOWN_CHARS).collect();
    if shown.len() < visible.len() {
        shown.push('…');
    }
    shown
}

/// Whether a 404's body says the model is missing rather than the URL:
/// OpenAI's `model_not_found`, Anthropic's `not_found_error` about
/// `model: …`, or a message that names the model asked for as not found or
/// not existing (vLLM, Ollama, LM Studio). A body that merely contains the
/// model's name (a URL echoed back) does not count.
fn names_model(body: &[u8], model: &str) -> bool {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return false;
    };
    if value.pointer("/error/code").and_then(|c| c.as_str()) == Some("model_not_found") {
        return true;
    }
    let message = message_of(&value).unwrap_or_default().to_lowercase();
    if message.starts_with("model:") {
        return true;
    }
    let model = model.to_lowercase();
    let names = !model.is_empty()
        && [
            format!("model `{model}`"),
            format!("model \"{model}\""),
            format!("model '{model}'"),
            format!("model {model} "),
        ]
        .iter()
        .any(|form| message.contains(form.as_str()) || message.ends_with(form.trim_end()));
    names && (message.contains("not found") || message.contains("does not exist"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn the_backoff_doubles_is_capped_and_keeps_half_fixed() {
        let policy = RetryPolicy {
            base_delay: Duration::from_millis(400),
            max_delay: Duration::from_secs(1),
            ..RetryPolicy::default()
        };
        for _ in 0..200 {
            let first = policy.backoff(1);
            assert!(first >= Duration::from_millis(200) && first <= Duration::from_millis(400));
            let second = policy.backoff(2);
            assert!(second >= Duration::from_millis(400) && second <= Duration::from_millis(800));
            let tenth = policy.backoff(10);
            assert!(tenth >= Duration::from_millis(500) && tenth <= Duration::from_secs(1));
        }
    }

    #[test]
    fn retry_after_is_read_in_its_three_forms() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, "2".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
        let mut headers = HeaderMap::new();
        let soon = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(30));
        headers.insert(RETRY_AFTER, soon.parse().unwrap());
        let wait = retry_after(&headers).unwrap();
        assert!(
            wait > Duration::from_secs(25) && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
        headers.insert(RETRY_AFTER, "86400".parse().unwrap());
        assert_eq!(retry_after(&headers), None, "a day is not a wait");
        headers.insert(RETRY_AFTER, "soon".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn error_messages_are_read_bounded_and_lose_the_key() {
        let key = ApiKey::new("sk-secret").unwrap();
        let body = br#"{"error":{"message":"Incorrect API key provided: sk-secret.","type":"invalid_request_error"}}"#;
        assert_eq!(
            error_message(body, Some(&key)),
            "Incorrect API key provided: [redacted key]."
        );
        let long = "x".repeat(2000);
        assert_eq!(error_message(long.as_bytes(), None).chars().count(), 501);
        assert!(names_model(
            br#"{"object":"error","message":"The model `llama3` does not exist.","type":"NotFoundError"}"#,
            "llama3"
        ));
        assert!(names_model(
            br#"{"error":"Model qwen2.5-7b not found"}"#,
            "qwen2.5-7b"
        ));
        assert!(!names_model(
            br#"{"error":{"message":"Invalid URL (POST /openai/deployments/gpt-4o/chat/completion)"}}"#,
            "gpt-4o"
        ));
        assert_eq!(error_message(b"\x1b[31mbad", None), "\\u{1b}[31mbad");
    }
}
