//! What can go wrong talking to a provider, each case saying what to fix.

use std::time::Duration;

/// Why a provider gave no usable answer. A host sees it as the source of
/// the [`ModelError`](toolgate::run::ModelError) that ends a run (with the
/// run handed back), and can downcast to it. No case holds the API key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// 401: the key is wrong, expired or missing.
    #[error(
        "{provider} refused the API key (401 Unauthorized): the key is wrong, revoked or missing — check the key you gave{}{}",
        said(.message),
        request(.request_id)
    )]
    WrongKey {
        /// The provider.
        provider: &'static str,
        /// What it said, the key removed.
        message: String,
        /// The id the provider gave the request (`x-request-id`,
        /// `request-id`), when it answered with one.
        request_id: Option<String>,
    },
    /// 403: the key is valid but may not do this.
    #[error(
        "{provider} refused the request (403 Forbidden): the key is valid but may not use this model or endpoint — check the key's project, permissions or region{}{}",
        said(.message),
        request(.request_id)
    )]
    Forbidden {
        /// The provider.
        provider: &'static str,
        /// What it said.
        message: String,
        /// The id the provider gave the request (`x-request-id`,
        /// `request-id`), when it answered with one.
        request_id: Option<String>,
    },
    /// 404 naming the model: no such model, or not for this key.
    #[error(
        "{provider} has no model `{model}` (404 Not Found): check the model's name, or that the key may use it{}{}",
        said(.message),
        request(.request_id)
    )]
    WrongModel {
        /// The provider.
        provider: &'static str,
        /// The model asked for.
        model: String,
        /// What it said.
        message: String,
        /// The id the provider gave the request (`x-request-id`,
        /// `request-id`), when it answered with one.
        request_id: Option<String>,
    },
    /// 404 for anything else: the URL is not the API's.
    #[error(
        "{provider} answered {status} Not Found at `{url}`: the URL is wrong ({hint}){}{}",
        said(.message),
        request(.request_id)
    )]
    WrongUrl {
        /// The provider.
        provider: &'static str,
        /// The HTTP status (404).
        status: u16,
        /// The URL requested.
        url: String,
        /// What the protocol's base URL looks like.
        hint: &'static str,
        /// What it said.
        message: String,
        /// The id the provider gave the request (`x-request-id`,
        /// `request-id`), when it answered with one.
        request_id: Option<String>,
    },
    /// 3xx: the URL moved. Redirects are not followed: a request carries
    /// the key, and a POST is not replayed elsewhere unasked.
    #[error(
        "{provider} answered {status} at `{url}`, redirecting to `{location}`: give the URL it redirects to as the base URL{}",
        request(.request_id)
    )]
    Redirected {
        /// The provider.
        provider: &'static str,
        /// The HTTP status.
        status: u16,
        /// The URL requested.
        url: String,
        /// Where it redirects (`Location`), as it said.
        location: String,
        /// The id the provider gave the request (`x-request-id`,
        /// `request-id`), when it answered with one.
        request_id: Option<String>,
    },
    /// 400 and other refusals that retrying cannot fix.
    #[error("{provider} refused the request ({status}){}{}", said(.message),
        request(.request_id)
    )]
    Refused {
        /// The provider.
        provider: &'static str,
        /// The HTTP status.
        status: u16,
        /// What it said.
        message: String,
        /// The id the provider gave the request (`x-request-id`,
        /// `request-id`), when it answered with one.
        request_id: Option<String>,
    },
    /// 429 or a 5xx, still so when the retries ran out.
    #[error(
        "{provider} answered {status} on each of {attempts} attempts over {}{}{}{}",
        seconds(*.elapsed),
        .retry_after.map(|d| format!("; it asks to wait {} before the next", seconds(d))).unwrap_or_default(),
        said(.message),
        request(.request_id)
    )]
    Unavailable {
        /// The provider.
        provider: &'static str,
        /// The last status.
        status: u16,
        /// Attempts made.
        attempts: u32,
        /// Time spent, waits included.
        elapsed: Duration,
        /// What the last answer asked to wait, when it said.
        retry_after: Option<Duration>,
        /// What it said last.
        message: String,
        /// The id the provider gave the request (`x-request-id`,
        /// `request-id`), when it answered with one.
        request_id: Option<String>,
    },
    /// No answer within the request deadline, on every attempt.
    #[error(
        "{provider} did not answer within the {} deadline ({attempts} attempt{})",
        seconds(*.deadline),
        if *.attempts == 1 { "" } else { "s" }
    )]
    Deadline {
        /// The provider.
        provider: &'static str,
        /// The deadline of one attempt.
        deadline: Duration,
        /// Attempts made.
        attempts: u32,
    },
    /// The connection failed or was cut, on every attempt.
    #[error("the connection to {provider} at `{url}` failed or was cut ({attempts} attempt{}): {reason}{}", if *.attempts == 1 { "" } else { "s" }, request(.request_id))]
    Connection {
        /// The provider.
        provider: &'static str,
        /// The URL.
        url: String,
        /// Attempts made.
        attempts: u32,
        /// What failed last.
        reason: String,
        /// The id the provider gave the request, when its answer was cut
        /// after its headers.
        request_id: Option<String>,
    },
    /// The answer was longer than the client reads.
    #[error(
        "{provider}'s answer is larger than the {limit} bytes this client reads (`max_response_bytes`){}",
        request(.request_id)
    )]
    TooLarge {
        /// The provider.
        provider: &'static str,
        /// The limit.
        limit: usize,
        /// The id the provider gave the request (`x-request-id`,
        /// `request-id`), when it answered with one.
        request_id: Option<String>,
    },
    /// The answer is not the protocol's.
    #[error("{provider}'s answer is not a {protocol} response: {reason}{}",
        request(.request_id)
    )]
    Malformed {
        /// The provider.
        provider: &'static str,
        /// The protocol expected.
        protocol: &'static str,
        /// What is wrong with it.
        reason: String,
        /// The id the provider gave the request (`x-request-id`,
        /// `request-id`), when it answered with one.
        request_id: Option<String>,
    },
    /// The answer stopped at the output limit before anything usable.
    #[error(
        "{provider}'s answer was cut at the output limit of {limit} tokens before it ended; raise `max_output_tokens` or ask for less{}",
        request(.request_id)
    )]
    OutputLimit {
        /// The provider.
        provider: &'static str,
        /// The limit the request set.
        limit: u32,
        /// The id the provider gave the request (`x-request-id`,
        /// `request-id`), when it answered with one.
        request_id: Option<String>,
    },
    /// The provider declined to answer (a content filter, a refusal).
    #[error("{provider} declined to answer: {reason}{}",
        request(.request_id)
    )]
    Declined {
        /// The provider.
        provider: &'static str,
        /// Why, as it said.
        reason: String,
        /// The id the provider gave the request (`x-request-id`,
        /// `request-id`), when it answered with one.
        request_id: Option<String>,
    },
    /// The answer holds something the transcript cannot carry.
    #[error("{provider}'s answer holds {what}, which toolgate's transcript does not carry: {fix}{}",
        request(.request_id)
    )]
    Unsupported {
        /// The provider.
        provider: &'static str,
        /// What it holds.
        what: String,
        /// What to do.
        fix: &'static str,
        /// The id the provider gave the request (`x-request-id`,
        /// `request-id`), when it answered with one.
        request_id: Option<String>,
    },
    /// A streamed answer stopped before it ended: the connection was cut,
    /// the provider sent an error event, or no event came within the idle
    /// limit, after the model had started answering (or, for the limits,
    /// at any point). Not retried: the provider may have billed the answer,
    /// and a retry could pay for it again. Nothing of a cut answer is used —
    /// no text, no call.
    #[error("{provider}'s streamed answer stopped before it ended ({received}): {reason}{}",
        request(.request_id)
    )]
    Interrupted {
        /// The provider.
        provider: &'static str,
        /// What had arrived: how many events, and whether the answer had begun.
        received: String,
        /// Why it stopped.
        reason: String,
        /// The id the provider gave the request, when it answered with one.
        request_id: Option<String>,
    },
    /// The transcript holds nothing the provider would take as a request:
    /// refused here, before anything is sent (and before it is billed).
    #[error("nothing was sent to {provider}: {reason}")]
    Unsendable {
        /// The provider.
        provider: &'static str,
        /// What is wrong, and why the provider would refuse it.
        reason: String,
    },
    /// The client could not be built (a bad URL, say).
    #[error("the client for {provider} cannot be set up: {reason}")]
    Setup {
        /// The provider.
        provider: &'static str,
        /// Why.
        reason: String,
    },
}

fn said(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!("; it said: {message}")
    }
}

#[allow(clippy::ref_option, reason = "thiserror hands the field by reference")]
fn request(id: &Option<String>) -> String {
    id.as_deref()
        .map_or_else(String::new, |id| format!(" (request id `{id}`)"))
}

impl ProviderError {
    /// The id the provider gave the request, when it answered with one:
    /// what its support asks for.
    pub fn request_id(&self) -> Option<&str> {
        match self {
            Self::WrongKey { request_id, .. }
            | Self::Forbidden { request_id, .. }
            | Self::WrongModel { request_id, .. }
            | Self::WrongUrl { request_id, .. }
            | Self::Redirected { request_id, .. }
            | Self::Refused { request_id, .. }
            | Self::Unavailable { request_id, .. }
            | Self::TooLarge { request_id, .. }
            | Self::Malformed { request_id, .. }
            | Self::OutputLimit { request_id, .. }
            | Self::Declined { request_id, .. }
            | Self::Unsupported { request_id, .. }
            | Self::Interrupted { request_id, .. }
            | Self::Connection { request_id, .. } => request_id.as_deref(),
            Self::Deadline { .. } | Self::Unsendable { .. } | Self::Setup { .. } => None,
        }
    }

    /// The error with the request id the answer carried, for an error found
    /// in a body after the exchange ended; one it already has is kept.
    pub(crate) fn with_request_id(mut self, id: Option<&str>) -> Self {
        if let Some(slot) = self.request_id_slot_mut()
            && slot.is_none()
        {
            *slot = id.map(str::to_owned);
        }
        self
    }

    fn request_id_slot_mut(&mut self) -> Option<&mut Option<String>> {
        match self {
            Self::WrongKey { request_id, .. }
            | Self::Forbidden { request_id, .. }
            | Self::WrongModel { request_id, .. }
            | Self::WrongUrl { request_id, .. }
            | Self::Redirected { request_id, .. }
            | Self::Refused { request_id, .. }
            | Self::Unavailable { request_id, .. }
            | Self::TooLarge { request_id, .. }
            | Self::Malformed { request_id, .. }
            | Self::OutputLimit { request_id, .. }
            | Self::Declined { request_id, .. }
            | Self::Unsupported { request_id, .. }
            | Self::Interrupted { request_id, .. }
            | Self::Connection { request_id, .. } => Some(request_id),
            Self::Deadline { .. } | Self::Unsendable { .. } | Self::Setup { .. } => None,
        }
    }
}

fn seconds(duration: Duration) -> String {
    format!("{:.1} s", duration.as_secs_f64())
}

impl From<ProviderError> for toolgate::run::ModelError {
    fn from(error: ProviderError) -> Self {
        toolgate::run::ModelError::with_source(error.to_string(), error)
    }
}
