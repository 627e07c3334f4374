//! A sink's settings as the store keeps them, and where its secrets are
//! read from: a file or an environment variable, read when a message is
//! sent, never stored, logged or printed.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use toolgate_store::outbox::{SinkKind, SinkRecord};
use url::Url;

use crate::NotifyError;

/// Where a secret is read from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum SecretSource {
    /// An environment variable of the dispatcher's process.
    Env(String),
    /// A file, whose content (surrounding white space trimmed) is the
    /// secret.
    File(PathBuf),
}

impl SecretSource {
    /// Why the source cannot name a secret; `None` when it can.
    pub fn problem(&self) -> Option<String> {
        match self {
            SecretSource::Env(name) => {
                let usable = name
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                (!usable).then(|| {
                    format!(
                        "`{}` is not an environment variable's name (letters, digits and `_`, not starting with a digit)",
                        toolgate::visible::visible(name)
                    )
                })
            }
            SecretSource::File(path) => path
                .as_os_str()
                .is_empty()
                .then(|| "the secret's file is not named".to_owned()),
        }
    }

    /// Reads the secret. The error names the source, never a value.
    pub fn read(&self) -> Result<String, NotifyError> {
        let secret = match self {
            SecretSource::Env(name) => std::env::var(name).map_err(|_| NotifyError::Secret {
                source_: self.to_string(),
                problem: "it is not set, or not UTF-8".to_owned(),
            })?,
            SecretSource::File(path) => {
                std::fs::read_to_string(path).map_err(|e| NotifyError::Secret {
                    source_: self.to_string(),
                    problem: e.kind().to_string(),
                })?
            }
        };
        let secret = secret.trim();
        if secret.is_empty() {
            return Err(NotifyError::Secret {
                source_: self.to_string(),
                problem: "it is empty".to_owned(),
            });
        }
        Ok(secret.to_owned())
    }
}

impl std::fmt::Display for SecretSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretSource::Env(name) => write!(f, "environment variable {name}"),
            SecretSource::File(path) => write!(f, "file {}", path.display()),
        }
    }
}

/// A webhook receiver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookSettings {
    /// Where events are POSTed.
    pub url: Url,
    /// The signing secret, `whsec_` and base64 as the Standard Webhooks
    /// specification writes it (or the base64 alone).
    pub secret: SecretSource,
}

/// A Slack incoming webhook. Its URL is a secret (anyone who has it can
/// post to the channel), so it is read like one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlackSettings {
    /// Where the webhook's URL is read from.
    pub url: SecretSource,
}

/// An SMTP relay and the addresses of a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmailSettings {
    /// The relay, without credentials: `smtps://host[:port]` (TLS),
    /// `smtp://host[:port]?tls=required` (STARTTLS), or
    /// `smtp://host[:port]` (no TLS: loopback or a trusted network only).
    pub smtp: Url,
    /// The sender.
    pub from: String,
    /// The recipients.
    pub to: Vec<String>,
    /// The relay's user name, if it takes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Where the relay's password is read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<SecretSource>,
}

/// A sink's settings, by its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinkSettings {
    /// A signed webhook.
    Webhook(WebhookSettings),
    /// Slack.
    Slack(SlackSettings),
    /// Email.
    Email(EmailSettings),
}

/// Whether the URL's host is this machine: `localhost`, 127.0.0.0/8 or
/// `::1`.
fn is_loopback(url: &Url) -> bool {
    match url.host() {
        // `smtp` is no scheme the URL standard knows, so its host is
        // opaque text, an address included.
        Some(url::Host::Domain(name)) => {
            name.eq_ignore_ascii_case("localhost")
                || name
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

impl SinkSettings {
    /// Where each of the sink's secrets is read from.
    pub fn secrets(&self) -> Vec<&SecretSource> {
        match self {
            SinkSettings::Webhook(s) => vec![&s.secret],
            SinkSettings::Slack(s) => vec![&s.url],
            SinkSettings::Email(s) => s.password.iter().collect(),
        }
    }

    /// The kind the store records.
    pub fn kind(&self) -> SinkKind {
        match self {
            SinkSettings::Webhook(_) => SinkKind::Webhook,
            SinkSettings::Slack(_) => SinkKind::Slack,
            SinkSettings::Email(_) => SinkKind::Email,
        }
    }

    /// The settings as the store keeps them.
    pub fn to_json(&self) -> serde_json::Value {
        let value = match self {
            SinkSettings::Webhook(s) => serde_json::to_value(s),
            SinkSettings::Slack(s) => serde_json::to_value(s),
            SinkSettings::Email(s) => serde_json::to_value(s),
        };
        value.unwrap_or(serde_json::Value::Null)
    }

    /// Reads a stored sink's settings; why they cannot be used, otherwise.
    pub fn of(sink: &SinkRecord) -> Result<Self, NotifyError> {
        let unusable = |problem: String| NotifyError::Settings {
            sink: sink.name.clone(),
            problem,
        };
        let Some(kind) = sink.kind else {
            return Err(unusable("its kind is not one this build knows".to_owned()));
        };
        let parsed = match kind {
            SinkKind::Webhook => serde_json::from_str(&sink.settings).map(SinkSettings::Webhook),
            SinkKind::Slack => serde_json::from_str(&sink.settings).map(SinkSettings::Slack),
            SinkKind::Email => serde_json::from_str(&sink.settings).map(SinkSettings::Email),
        };
        let settings = parsed.map_err(|e| unusable(e.to_string()))?;
        settings.check().map_err(unusable)?;
        Ok(settings)
    }

    /// Why the settings cannot be used; checked before a sink is added and
    /// each time it is read.
    pub fn check(&self) -> Result<(), String> {
        for secret in self.secrets() {
            if let Some(problem) = secret.problem() {
                return Err(problem);
            }
        }
        match self {
            SinkSettings::Webhook(s) => {
                match s.url.scheme() {
                    "https" | "http" => {}
                    other => {
                        return Err(format!(
                            "a webhook's URL must be http or https, not `{other}`"
                        ));
                    }
                }
                if !s.url.username().is_empty() || s.url.password().is_some() {
                    return Err(
                        "the webhook's URL carries credentials: the receiver checks the signature instead, so no password is stored"
                            .to_owned(),
                    );
                }
                Ok(())
            }
            SinkSettings::Slack(_) => Ok(()),
            SinkSettings::Email(s) => {
                match s.smtp.scheme() {
                    "smtp" | "smtps" => {}
                    other => {
                        return Err(format!(
                            "the relay must be `smtp://` or `smtps://`, not `{other}://`"
                        ));
                    }
                }
                if s.smtp.host_str().is_none() {
                    return Err("the relay's URL names no host".to_owned());
                }
                if !s.smtp.username().is_empty() || s.smtp.password().is_some() {
                    return Err(
                        "the relay's URL carries credentials: give --smtp-user and --password-file or --password-env instead, so no password is stored"
                            .to_owned(),
                    );
                }
                if s.to.is_empty() {
                    return Err("an email sink needs at least one recipient".to_owned());
                }
                for address in std::iter::once(&s.from).chain(&s.to) {
                    if let Err(error) = address.parse::<lettre::message::Mailbox>() {
                        return Err(format!(
                            "`{}` is not an email address: {error}",
                            toolgate::visible::visible(address)
                        ));
                    }
                }
                let query: Vec<(String, String)> = s
                    .smtp
                    .query_pairs()
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect();
                match query.as_slice() {
                    [] => {}
                    [(key, value)] if key == "tls" && value == "required" => {}
                    _ => {
                        return Err(
                            "the relay's URL takes no query but `?tls=required` (STARTTLS)"
                                .to_owned(),
                        );
                    }
                }
                if s.password.is_some() && s.username.is_none() {
                    return Err("a password without a user name".to_owned());
                }
                let tls = s.smtp.scheme() == "smtps"
                    || s.smtp
                        .query_pairs()
                        .any(|(k, v)| k == "tls" && v == "required");
                if s.password.is_some() && !tls {
                    return Err(
                        "a password would cross the network unencrypted: use `smtps://` or `?tls=required`"
                            .to_owned(),
                    );
                }
                if !tls && !is_loopback(&s.smtp) {
                    return Err(
                        "plain `smtp://` is for a relay on this machine (loopback) only: messages would cross the network unencrypted — use `smtps://` or `?tls=required`"
                            .to_owned(),
                    );
                }
                Ok(())
            }
        }
    }
}
