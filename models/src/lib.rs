//! LLM providers for toolgate's agent loop: each client is a
//! [`toolgate::run::Model`], so a real model drives
//! [`Agent`](toolgate::Agent) and every call it asks for goes through the
//! gate.
//!
//! - [`OpenAi`] (feature `openai`): OpenAI-compatible Chat Completions —
//!   OpenAI, Azure OpenAI, OpenRouter, Groq, and servers run locally:
//!   Ollama, vLLM, llama.cpp's server, LM Studio.
//! - [`Anthropic`] (feature `anthropic`): the Anthropic Messages API.
//!
//! Tools go out under their wire names and come back resolved by the run;
//! the model's call id is the id the gate, the turn digest and the
//! decisions use. What a model writes is handed on as it came: a call the
//! run cannot use (no id, arguments that are not a JSON object) is answered
//! with what was wrong, for the model to correct, and nothing of its turn
//! runs. Each answer's token usage is kept on it in the transcript.
//!
//! Every request has a deadline and is retried, with exponential backoff
//! and jitter, on 429, 5xx and cut connections, honouring `Retry-After`
//! ([`RetryPolicy`]); 401, 403 and 404 are errors that say which of the
//! key, the model or the URL is wrong ([`ProviderError`]). The key
//! ([`ApiKey`]) is read from the environment or a file and never printed.
//! Answers are read up to a bound (8 MiB by default), whole or — with
//! `.stream(true)` — as server-sent events assembled into the same
//! response, bounded by an idle and an overall limit and never sent again
//! once the answer began. Every request the clients build is one the
//! provider's API takes: the rules, and where each is enforced, are in the
//! crate's README.
//!
//! HTTPS goes through rustls with its default crypto provider, and the
//! operating system's trust store.
//!
//! ```no_run
//! # async fn example(registry: toolgate::Registry) -> Result<(), Box<dyn std::error::Error>> {
//! use toolgate::{Agent, run::RunRequest, testing::MemoryLog};
//! use toolgate_models::{ApiKey, OpenAi};
//!
//! let model = OpenAi::new("https://api.openai.com/v1", "gpt-4.1-mini")?
//!     .key(ApiKey::from_env("OPENAI_API_KEY")?);
//! let log = MemoryLog::default();
//! let outcome = Agent::new(&registry, &model, &log)
//!     .start(RunRequest::new("alice", "Summarise my notes."))
//!     .await?;
//! # let _ = outcome; Ok(()) }
//! ```

// With neither protocol, only the key and the errors are left.
#![cfg_attr(
    not(any(feature = "openai", feature = "anthropic")),
    allow(dead_code, unused_imports)
)]

#[cfg(feature = "anthropic")]
pub mod anthropic;
mod error;
mod http;
mod key;
#[cfg(feature = "openai")]
pub mod openai;
mod shared;

#[cfg(feature = "anthropic")]
pub use anthropic::Anthropic;
pub use error::ProviderError;
pub use http::RetryPolicy;
pub use key::{ApiKey, KeyError};
#[cfg(feature = "openai")]
pub use openai::OpenAi;
pub use shared::ToolChoice;
