//! What both protocols' clients share: their settings, the names and ids
//! written back to a provider, and the headers.

use std::borrow::Cow;
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

use crate::error::ProviderError;
use crate::http::{Answer, Assembler, Delivered, Exchange, Post, RetryPolicy};

/// Which tool, if any, the model must call. The protocol's default is
/// [`ToolChoice::Auto`], and a request for it says nothing.
///
/// A choice that needs a tool is checked against each turn's offer before
/// anything is sent: [`ToolChoice::Required`] with no tool offered, or
/// [`ToolChoice::Tool`] naming a tool that is not offered, is
/// [`ProviderError::Unsendable`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides: answer, or call tools.
    #[default]
    Auto,
    /// The model calls no tool (it still reads past calls).
    None,
    /// The model calls at least one tool (Anthropic's `any`).
    Required,
    /// The model calls this tool: its local name, as registered, or its
    /// wire name.
    Tool(String),
}

/// The settings every client has, with their builder methods.
#[derive(Debug, Clone)]
pub(crate) struct Common {
    pub(crate) exchange: Exchange,
    pub(crate) model: String,
    pub(crate) max_output_tokens: u32,
    pub(crate) temperature: Option<f64>,
    pub(crate) top_p: Option<f64>,
    pub(crate) stop: Vec<String>,
    pub(crate) tool_choice: ToolChoice,
    pub(crate) parallel_tool_calls: Option<bool>,
    pub(crate) stream: bool,
    /// Body fields the host added, merged into every request as given.
    pub(crate) extra: serde_json::Map<String, Value>,
    pub(crate) headers: HeaderMap,
}

impl Common {
    pub(crate) fn new(
        provider: &'static str,
        protocol: &'static str,
        url_hint: &'static str,
        model: String,
    ) -> Result<Self, ProviderError> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Ok(Self {
            exchange: Exchange::new(provider, protocol, url_hint)?,
            model,
            max_output_tokens: 4096,
            temperature: None,
            top_p: None,
            stop: Vec::new(),
            tool_choice: ToolChoice::Auto,
            parallel_tool_calls: None,
            stream: false,
            extra: serde_json::Map::new(),
            headers,
        })
    }

    pub(crate) fn set_deadline(&mut self, deadline: Duration) {
        self.exchange.deadline = deadline;
    }

    pub(crate) fn set_idle_limit(&mut self, limit: Duration) {
        self.exchange.idle_limit = limit;
    }

    pub(crate) fn set_overall_limit(&mut self, limit: Duration) {
        self.exchange.overall_limit = limit;
    }

    /// Adds a field to every request's body, unless the client owns it:
    /// `owned` pairs each such field with what sets it instead.
    pub(crate) fn add_body_field(
        &mut self,
        owned: &[(&str, &str)],
        name: &str,
        value: Value,
    ) -> Result<(), ProviderError> {
        if let Some((_, instead)) = owned.iter().find(|(field, _)| *field == name) {
            return Err(ProviderError::Setup {
                provider: self.exchange.provider,
                reason: format!("the body field `{name}` is the client's own: {instead}"),
            });
        }
        self.extra.insert(name.to_owned(), value);
        Ok(())
    }

    /// Refuses sampling settings the provider would refuse: a temperature
    /// outside `0..=max_temperature`, a `top_p` outside `0..=1`, a stop
    /// sequence that is empty — or only whitespace, unless `blank_stops` —
    /// more than `max_stops` of them.
    pub(crate) fn check_sampling(
        &self,
        max_temperature: f64,
        max_stops: Option<usize>,
        blank_stops: bool,
    ) -> Result<(), ProviderError> {
        let provider = self.exchange.provider;
        let unsendable = |reason: String| ProviderError::Unsendable { provider, reason };
        if let Some(t) = self.temperature
            && !(0.0..=max_temperature).contains(&t)
        {
            return Err(unsendable(format!(
                "the temperature is {t}, and it takes 0 to {max_temperature}"
            )));
        }
        if let Some(p) = self.top_p
            && !(0.0..=1.0).contains(&p)
        {
            return Err(unsendable(format!("`top_p` is {p}, and it takes 0 to 1")));
        }
        // An empty stop sequence is no sequence; a blank one (`"\n"`) is
        // common, and refused only by a protocol that refuses it.
        if self
            .stop
            .iter()
            .any(|s| s.is_empty() || (!blank_stops && s.trim().is_empty()))
        {
            return Err(unsendable(
                "a stop sequence is blank, and every one must hold a visible character".to_owned(),
            ));
        }
        if let Some(max) = max_stops
            && self.stop.len() > max
        {
            return Err(unsendable(format!(
                "{} stop sequences are set, and it takes at most {max}",
                self.stop.len()
            )));
        }
        Ok(())
    }

    pub(crate) fn set_retry(&mut self, retry: RetryPolicy) {
        self.exchange.retry = retry;
    }

    pub(crate) fn set_max_response_bytes(&mut self, limit: usize) {
        self.exchange.max_response_bytes = limit;
    }

    /// Adds a header every request carries; refused when it is not a
    /// header, or is one the client sets itself.
    pub(crate) fn add_header(&mut self, name: &str, value: &str) -> Result<(), ProviderError> {
        let provider = self.exchange.provider;
        let setup = |reason: String| ProviderError::Setup { provider, reason };
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| setup(format!("`{name}` is not an HTTP header name")))?;
        let key_headers = ["authorization", "api-key", "x-api-key"];
        let reserved = [
            "content-type",
            "content-length",
            "host",
            "accept",
            "anthropic-version",
        ];
        if key_headers.contains(&name.as_str()) {
            return Err(setup(format!(
                "`{name}` carries the key, which the client sets itself; give the key with `.key(…)`"
            )));
        }
        if reserved.contains(&name.as_str()) {
            return Err(setup(format!(
                "`{name}` is set by the client itself, as the protocol it speaks needs"
            )));
        }
        let value = HeaderValue::from_str(value)
            .map_err(|_| setup(format!("the value of `{name}` cannot be sent in a header")))?;
        self.headers.insert(name, value);
        Ok(())
    }

    /// Posts `body` to `url` — the key, when there is one, under `name` as
    /// `prefix` + key, marked sensitive so no log of the HTTP stack shows
    /// it — and hands back the body of a 2xx answer.
    pub(crate) async fn post(
        &self,
        url: &url::Url,
        key: Option<&crate::ApiKey>,
        header: (HeaderName, &str),
        body: Vec<u8>,
    ) -> Result<Delivered<Vec<u8>>, ProviderError> {
        let post = self.request(url, key, header, body)?;
        self.exchange.send(post).await
    }

    /// As [`Common::post`], for a request that asks for a stream: the
    /// events read into an assembler from `assembler`.
    pub(crate) async fn post_streamed<A: Assembler + Send>(
        &self,
        url: &url::Url,
        key: Option<&crate::ApiKey>,
        header: (HeaderName, &str),
        body: Vec<u8>,
        assembler: &(dyn Fn() -> A + Sync),
    ) -> Result<Delivered<Answer<A>>, ProviderError> {
        let mut post = self.request(url, key, header, body)?;
        post.headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        self.exchange.send_streamed(post, assembler).await
    }

    fn request<'a>(
        &'a self,
        url: &'a url::Url,
        key: Option<&'a crate::ApiKey>,
        (name, prefix): (HeaderName, &str),
        body: Vec<u8>,
    ) -> Result<Post<'a>, ProviderError> {
        let mut headers = self.headers.clone();
        if let Some(key) = key {
            let mut value =
                HeaderValue::from_str(&format!("{prefix}{}", key.expose())).map_err(|_| {
                    ProviderError::Setup {
                        provider: self.exchange.provider,
                        reason: "the API key cannot be sent in a header".to_owned(),
                    }
                })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        Ok(Post {
            url,
            headers,
            body,
            model: &self.model,
            key,
        })
    }
}

/// A base URL with the API's path joined: `https://api.openai.com/v1` and
/// `chat/completions` give `https://api.openai.com/v1/chat/completions`.
pub(crate) fn endpoint(
    provider: &'static str,
    base: &str,
    path: &str,
) -> Result<url::Url, ProviderError> {
    let setup = |reason: String| ProviderError::Setup { provider, reason };
    let mut base =
        url::Url::parse(base).map_err(|e| setup(format!("`{base}` is not a URL: {e}")))?;
    if !matches!(base.scheme(), "http" | "https") {
        return Err(setup(format!("`{base}` is not an http or https URL")));
    }
    if !base.username().is_empty() || base.password().is_some() {
        return Err(setup(
            "the URL holds a user name or password; give the key with `.key(…)`, which is never shown"
                .to_owned(),
        ));
    }
    if base.query().is_some() {
        return Err(setup(format!(
            "`{base}` holds a query; give the full endpoint URL instead"
        )));
    }
    if !base.path().ends_with('/') {
        let path = format!("{}/", base.path());
        base.set_path(&path);
    }
    base.join(path)
        .map_err(|e| setup(format!("`{base}` cannot take the path `{path}`: {e}")))
}

/// A tool name as both providers take one (`^[a-zA-Z0-9_-]{1,64}$`): a
/// name the model was offered is already one; a name it made up (answered
/// as an unknown tool) is written back with other characters as `_`.
pub(crate) fn wire_safe(name: &str) -> Cow<'_, str> {
    let fits = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !name.is_empty() && name.len() <= 64 && name.chars().all(fits) {
        return Cow::Borrowed(name);
    }
    let mut safe: String = name
        .chars()
        .map(|c| if fits(c) { c } else { '_' })
        .take(64)
        .collect();
    if safe.is_empty() {
        safe.push_str("unnamed");
    }
    Cow::Owned(safe)
}

/// The text an error result that said nothing is sent with: a provider
/// may refuse an error without content (Anthropic does), and a model reads
/// an empty error as nothing at all.
pub(crate) const EMPTY_ERROR: &str = "the call failed without saying why";

/// A tool's parameter schema as both providers take one: a JSON Schema
/// object whose top level is `"type": "object"` with `properties`. OpenAI
/// refuses an object schema without `properties` (`invalid_function_parameters`),
/// and Anthropic one without `type`. A schema that already fits is sent as it
/// is; one with no `type` or no `properties` gains them; one whose top level
/// is not an object schema (a boolean schema, `"type": "string"`) is sent as
/// an object with no properties — the run checks the arguments the model
/// then sends against the tool's real schema, so nothing unchecked runs.
pub(crate) fn object_schema(schema: &Value) -> Cow<'_, Value> {
    let Some(object) = schema.as_object() else {
        return Cow::Owned(json!({"type": "object", "properties": {}}));
    };
    let typed = match object.get("type") {
        None => false,
        Some(Value::String(kind)) if kind == "object" => true,
        // `["object", "null"]`: the arguments are always an object.
        Some(Value::Array(kinds)) if kinds.iter().any(|k| k == "object") => false,
        Some(_) => return Cow::Owned(json!({"type": "object", "properties": {}})),
    };
    let has_properties = object.get("properties").is_some_and(Value::is_object);
    if typed && has_properties {
        return Cow::Borrowed(schema);
    }
    let mut object = object.clone();
    object.insert("type".into(), Value::String("object".into()));
    if !has_properties {
        object.insert("properties".into(), Value::Object(serde_json::Map::new()));
    }
    Cow::Owned(Value::Object(object))
}

/// The name a past call is written back under: its wire name when the
/// tool is offered, made safe either way.
pub(crate) fn past_call_name<'a>(
    tools: &'a [toolgate::run::ToolSpec],
    local: &'a str,
) -> Cow<'a, str> {
    wire_safe(toolgate::run::ToolSpec::wire_name(tools, local))
}

/// The builder methods every client has, over its `common`, `url` and
/// `key`.
macro_rules! settings {
    () => {
        /// The key to send, in the header the protocol names. Without one,
        /// no key is sent (a local server). A key bound for plain `http` to
        /// another machine is logged as a warning.
        #[must_use]
        pub fn key(mut self, key: crate::ApiKey) -> Self {
            crate::shared::warn_if_clear(&self.url);
            self.key = Some(key);
            self
        }

        /// The most tokens an answer may have (`max_tokens`, or OpenAI's
        /// `max_completion_tokens`). Default: 4096.
        #[must_use]
        pub fn max_output_tokens(mut self, limit: u32) -> Self {
            self.common.max_output_tokens = limit;
            self
        }

        /// The sampling temperature; the server's default when not set.
        #[must_use]
        pub fn temperature(mut self, temperature: f64) -> Self {
            self.common.temperature = Some(temperature);
            self
        }

        /// The nucleus-sampling mass (`top_p`, 0 to 1); the server's
        /// default when not set.
        #[must_use]
        pub fn top_p(mut self, top_p: f64) -> Self {
            self.common.top_p = Some(top_p);
            self
        }

        /// Sequences that end the answer where they appear.
        #[must_use]
        pub fn stop<S: Into<String>>(mut self, sequences: impl IntoIterator<Item = S>) -> Self {
            self.common.stop = sequences.into_iter().map(Into::into).collect();
            self
        }

        /// Which tool, if any, the model must call. Default:
        /// [`ToolChoice::Auto`](crate::ToolChoice::Auto), sent as nothing.
        #[must_use]
        pub fn tool_choice(mut self, choice: crate::ToolChoice) -> Self {
            self.common.tool_choice = choice;
            self
        }

        /// Whether the model may call several tools in one turn; the
        /// provider's default (yes) when not set. Sent only with tools.
        #[must_use]
        pub fn parallel_tool_calls(mut self, parallel: bool) -> Self {
            self.common.parallel_tool_calls = Some(parallel);
            self
        }

        /// A field merged into every request's body as given — a
        /// provider's own setting the client has no method for. A field the
        /// client owns is refused, naming what sets it instead.
        pub fn body_field(
            mut self,
            name: &str,
            value: serde_json::Value,
        ) -> Result<Self, crate::ProviderError> {
            self.common.add_body_field(OWNED_FIELDS, name, value)?;
            Ok(self)
        }

        /// Whether answers are streamed (server-sent events), read event
        /// by event into the same [`Response`](toolgate::run::Response).
        /// Default: no.
        #[must_use]
        pub fn stream(mut self, stream: bool) -> Self {
            self.common.stream = stream;
            self
        }

        /// Without streaming: how long one attempt may take, its answer
        /// read included. Default: 2 minutes.
        #[must_use]
        pub fn deadline(mut self, deadline: std::time::Duration) -> Self {
            self.common.set_deadline(deadline);
            self
        }

        /// With streaming: the longest silence an attempt may have —
        /// before the answer's headers, and between two events. Default: 5
        /// minutes. A stream silent past it after its headers came is not
        /// sent again.
        #[must_use]
        pub fn idle_limit(mut self, limit: std::time::Duration) -> Self {
            self.common.set_idle_limit(limit);
            self
        }

        /// With streaming: the longest one attempt may take in all.
        /// Default: 30 minutes.
        #[must_use]
        pub fn overall_limit(mut self, limit: std::time::Duration) -> Self {
            self.common.set_overall_limit(limit);
            self
        }

        /// How failed requests are retried. Default:
        /// [`RetryPolicy::default`](crate::RetryPolicy::default).
        #[must_use]
        pub fn retry(mut self, retry: crate::RetryPolicy) -> Self {
            self.common.set_retry(retry);
            self
        }

        /// The largest answer read, in bytes. Default: 8 MiB.
        #[must_use]
        pub fn max_response_bytes(mut self, limit: usize) -> Self {
            self.common.set_max_response_bytes(limit);
            self
        }

        /// A header every request carries (OpenRouter's `HTTP-Referer`,
        /// Anthropic's `anthropic-beta`, say); the key's own header and
        /// `content-type` are refused.
        pub fn header(mut self, name: &str, value: &str) -> Result<Self, crate::ProviderError> {
            self.common.add_header(name, value)?;
            Ok(self)
        }

        /// The URL requests go to.
        pub fn url(&self) -> &str {
            self.url.as_str()
        }
    };
}
pub(crate) use settings;

/// `Model` for a client, through its `complete`.
macro_rules! model {
    ($client:ty) => {
        impl toolgate::run::Model for $client {
            fn respond<'a>(
                &'a self,
                transcript: &'a [toolgate::run::Message],
                tools: &'a [toolgate::run::ToolSpec],
            ) -> toolgate::erased::BoxFuture<
                'a,
                Result<toolgate::run::Response, toolgate::run::ModelError>,
            > {
                Box::pin(async move {
                    self.complete(transcript, tools)
                        .await
                        .map_err(toolgate::run::ModelError::from)
                })
            }
        }
    };
}
pub(crate) use model;

/// Warns when a key is about to travel in clear text to another machine:
/// plain `http` to a host that is not this one.
pub(crate) fn warn_if_clear(url: &url::Url) {
    let local = match url.host() {
        Some(url::Host::Domain(name)) => name == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => true,
    };
    if url.scheme() == "http" && !local {
        tracing::warn!(%url, "the API key will be sent over plain http to another machine; use https");
    }
}

/// The tool a [`ToolChoice::Tool`] names, among those offered: by its
/// local name, or by its wire name.
pub(crate) fn chosen_tool<'a>(
    tools: &'a [toolgate::run::ToolSpec],
    name: &str,
) -> Option<&'a toolgate::run::ToolSpec> {
    tools
        .iter()
        .find(|spec| spec.local_name == name)
        .or_else(|| tools.iter().find(|spec| spec.name == name))
}

/// A whole event-stream body read into `assembler`, as a live stream
/// would be: for a host that sent the request itself, and for the
/// benchmark. The error says what is wrong with the body.
pub(crate) fn assemble_body<A: Assembler>(body: &[u8], mut assembler: A) -> Result<A, String> {
    use futures_util::{FutureExt as _, StreamExt as _};

    let bytes = futures_util::stream::iter([Ok::<&[u8], std::convert::Infallible>(body)]);
    let mut events = std::pin::pin!(sse_stream::SseStream::from_bytes_stream(bytes));
    // Every piece is at hand: each poll is ready.
    while let Some(Some(next)) = events.next().now_or_never() {
        let event = next.map_err(|e| format!("its event stream does not read: {e}"))?;
        match assembler.event(event) {
            Ok(()) if assembler.ended() => return Ok(assembler),
            Ok(()) => {}
            Err(crate::http::StreamFault::Provider { message, .. }) => {
                return Err(format!("it holds an error event: {message}"));
            }
            Err(crate::http::StreamFault::Malformed(reason)) => return Err(reason),
        }
    }
    if assembler.may_end_here() {
        Ok(assembler)
    } else {
        Err("the stream ends before the event that ends the answer".to_owned())
    }
}

/// Refuses a transcript with nothing a provider would take as a request —
/// no user text, no model text or call, no result: the prompt was blank.
pub(crate) fn something_to_send(
    provider: &'static str,
    transcript: &[toolgate::run::Message],
) -> Result<(), ProviderError> {
    use toolgate::run::Message;
    let something = transcript.iter().any(|m| match m {
        Message::User { content } => !content.trim().is_empty(),
        Message::Assistant { content, calls, .. } => {
            !calls.is_empty() || content.as_deref().is_some_and(|c| !c.trim().is_empty())
        }
        Message::Tool { .. } => true,
        Message::System { .. } => false,
    });
    if something {
        Ok(())
    } else {
        Err(ProviderError::Unsendable {
            provider,
            reason: "the transcript holds no text and no call to send: the prompt was blank"
                .to_owned(),
        })
    }
}

/// Refuses settings no request may carry: an output limit of 0, a blank
/// model name.
pub(crate) fn check_settings(common: &Common) -> Result<(), ProviderError> {
    let provider = common.exchange.provider;
    if common.max_output_tokens == 0 {
        return Err(ProviderError::Unsendable {
            provider,
            reason:
                "the output limit (`max_output_tokens`) is 0, and an answer needs at least 1 token"
                    .to_owned(),
        });
    }
    if common.model.trim().is_empty() {
        return Err(ProviderError::Unsendable {
            provider,
            reason: "the model's name is blank".to_owned(),
        });
    }
    Ok(())
}
