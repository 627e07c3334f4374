//! `toolgate notify`: the sinks people are told through when a run waits,
//! their deliveries, and the dispatcher (`toolgate_notify`).

use std::path::PathBuf;

use serde_json::json;
use toolgate_notify::{
    DispatchOptions, Dispatcher, EmailSettings, SecretSource, SinkSettings, SlackSettings,
    WebhookSettings,
};
use toolgate_store::outbox::NewSink;
use toolgate_store::{DataClass, Store};

use crate::Failure;
use crate::output::{Col, Out, say, say_err, timestamp};

/// `toolgate notify …`.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum NotifyCommand {
    /// Add a sink: every run that starts waiting, is decided, resumes or
    /// expires from now on is delivered to it.
    #[command(subcommand)]
    Add(AddSink),
    /// The sinks, with where each reads its secrets from (never a secret).
    List,
    /// Remove a sink, and every delivery it still had.
    Remove {
        /// The sink's name.
        name: String,
    },
    /// Where each sink's deliveries stand: pending, failing (and why),
    /// delivered, given up on.
    Status,
    /// Send a sample event to a sink now, to check its address and secrets.
    Test {
        /// The sink's name.
        name: String,
        /// The inbox's public address, for the sample's link.
        #[arg(long, value_name = "URL")]
        inbox_url: Option<url::Url>,
    },
    /// Deliver the outbox until stopped (Ctrl-C). `toolgate inbox` runs one
    /// too, unless started with `--no-notify`; several dispatchers share the
    /// work safely.
    Run {
        /// The inbox's public address, for links to runs in messages.
        #[arg(long, value_name = "URL")]
        inbox_url: Option<url::Url>,
        /// Deliver what is due once, then exit.
        #[arg(long)]
        once: bool,
        /// Seconds a delivery being sent is this dispatcher's: a dispatcher
        /// that stops mid-send leaves it to be sent again after this.
        #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
        lease_secs: u64,
        /// Milliseconds between reads of an empty outbox.
        #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(10..=60_000))]
        poll_ms: u64,
    },
}

/// `toolgate notify add …`.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum AddSink {
    /// A JSON POST signed per the Standard Webhooks specification
    /// (`webhook-id`, `webhook-timestamp`, `webhook-signature`).
    Webhook {
        /// The sink's name: lower-case letters, digits, `-`, `_`.
        name: String,
        /// Where events are POSTed.
        #[arg(long)]
        url: url::Url,
        #[command(flatten)]
        secret: SigningSecret,
        #[command(flatten)]
        common: Common,
    },
    /// A Slack incoming webhook: its URL is a secret, read from a file or
    /// the environment when a message is sent.
    Slack {
        /// The sink's name: lower-case letters, digits, `-`, `_`.
        name: String,
        #[command(flatten)]
        url: SlackUrl,
        #[command(flatten)]
        common: Common,
    },
    /// Email over SMTP.
    Email {
        /// The sink's name: lower-case letters, digits, `-`, `_`.
        name: String,
        /// The relay: `smtps://HOST[:PORT]` (TLS), `smtp://HOST[:PORT]?tls=required`
        /// (STARTTLS) or `smtp://HOST[:PORT]` (no TLS: loopback only).
        #[arg(long, value_name = "URL")]
        smtp: url::Url,
        /// The sender's address.
        #[arg(long)]
        from: String,
        /// A recipient's address (repeat for several).
        #[arg(long, required = true)]
        to: Vec<String>,
        /// The relay's user name.
        #[arg(long)]
        smtp_user: Option<String>,
        /// A file holding the relay's password.
        #[arg(long, conflicts_with = "password_env", requires = "smtp_user")]
        password_file: Option<PathBuf>,
        /// An environment variable holding the relay's password.
        #[arg(long, requires = "smtp_user")]
        password_env: Option<String>,
        #[command(flatten)]
        common: Common,
    },
}

/// Where a webhook's signing secret is read from.
#[derive(clap::Args, Debug)]
#[group(required = true, multiple = false)]
pub(crate) struct SigningSecret {
    /// A file holding the signing secret (`whsec_` and base64).
    #[arg(long)]
    secret_file: Option<PathBuf>,
    /// An environment variable holding the signing secret.
    #[arg(long)]
    secret_env: Option<String>,
}

/// Where a Slack webhook's URL is read from.
#[derive(clap::Args, Debug)]
#[group(required = true, multiple = false)]
pub(crate) struct SlackUrl {
    /// A file holding the incoming webhook's URL.
    #[arg(long)]
    url_file: Option<PathBuf>,
    /// An environment variable holding the incoming webhook's URL.
    #[arg(long)]
    url_env: Option<String>,
}

/// What every sink declares.
#[derive(clap::Args, Debug)]
pub(crate) struct Common {
    /// The highest data class the sink may be sent: a run whose servers'
    /// class is above it is notified without its arguments' summary. One
    /// of public_content, editor_content, source_code,
    /// internal_configuration, system_diagnostics, secret_adjacent.
    #[arg(long, value_name = "CLASS")]
    max_data_class: String,
    /// Who adds it. Without it: `TOOLGATE_OPERATOR`, else the operating
    /// system's user.
    #[arg(long = "as")]
    operator: Option<String>,
}

fn source(file: Option<PathBuf>, env: Option<String>) -> Option<SecretSource> {
    match (file, env) {
        (Some(file), _) => Some(SecretSource::File(file)),
        (None, Some(env)) => Some(SecretSource::Env(env)),
        (None, None) => None,
    }
}

pub(super) async fn notify(store: &Store, out: Out, command: NotifyCommand) -> Result<(), Failure> {
    match command {
        NotifyCommand::Add(add) => add_sink(store, add).await,
        NotifyCommand::List => list(store, out).await,
        NotifyCommand::Remove { name } => {
            store.remove_sink(&name).await?;
            say!("sink `{}` removed", name);
            Ok(())
        }
        NotifyCommand::Status => status(store, out).await,
        NotifyCommand::Test { name, inbox_url } => {
            let dispatcher = Dispatcher::new(
                store.clone(),
                DispatchOptions {
                    inbox_url,
                    ..DispatchOptions::default()
                },
            );
            dispatcher.send_test(&name).await.map_err(send_failure)?;
            say!("sink `{}`: a sample event was delivered", name);
            Ok(())
        }
        NotifyCommand::Run {
            inbox_url,
            once,
            lease_secs,
            poll_ms,
        } => {
            let dispatcher = Dispatcher::new(
                store.clone(),
                DispatchOptions {
                    inbox_url,
                    lease: std::time::Duration::from_secs(lease_secs),
                    poll: std::time::Duration::from_millis(poll_ms),
                    ..DispatchOptions::default()
                },
            );
            if once {
                let round = dispatcher.round().await.map_err(send_failure)?;
                say!(
                    "{} delivered, {} to retry, {} given up on",
                    round.delivered,
                    round.retrying,
                    round.given_up
                );
                return Ok(());
            }
            say_err!("delivering notifications; Ctrl-C stops");
            dispatcher
                .run(async {
                    let _ = tokio::signal::ctrl_c().await;
                })
                .await;
            Ok(())
        }
    }
}

fn send_failure(error: toolgate_notify::NotifyError) -> Failure {
    match error {
        toolgate_notify::NotifyError::NoSuchSink(_) => Failure::NotFound(error.to_string()),
        toolgate_notify::NotifyError::Store(error) => error.into(),
        other => Failure::Error(other.to_string()),
    }
}

async fn add_sink(store: &Store, add: AddSink) -> Result<(), Failure> {
    let (name, settings, common) = match add {
        AddSink::Webhook {
            name,
            url,
            secret,
            common,
        } => {
            let Some(secret) = source(secret.secret_file, secret.secret_env) else {
                return Err(Failure::Usage(
                    "a webhook needs --secret-file or --secret-env".into(),
                ));
            };
            (
                name,
                SinkSettings::Webhook(WebhookSettings { url, secret }),
                common,
            )
        }
        AddSink::Slack { name, url, common } => {
            let Some(url) = source(url.url_file, url.url_env) else {
                return Err(Failure::Usage("Slack needs --url-file or --url-env".into()));
            };
            (name, SinkSettings::Slack(SlackSettings { url }), common)
        }
        AddSink::Email {
            name,
            smtp,
            from,
            to,
            smtp_user,
            password_file,
            password_env,
            common,
        } => (
            name,
            SinkSettings::Email(EmailSettings {
                smtp,
                from,
                to,
                username: smtp_user,
                password: source(password_file, password_env),
            }),
            common,
        ),
    };
    let max_class: DataClass = common
        .max_data_class
        .parse()
        .map_err(|e: toolgate_store::UnknownDataClass| Failure::Usage(e.to_string()))?;
    settings.check().map_err(Failure::Usage)?;
    // A signing secret this process can read is checked now: a short one
    // makes every signature guessable.
    if let SinkSettings::Webhook(webhook) = &settings
        && let Ok(secret) = webhook.secret.read()
        && let Some(problem) = toolgate_notify::signing_secret_problem(&secret)
    {
        return Err(Failure::Usage(format!(
            "the signing secret from {} cannot be used: {problem}",
            webhook.secret
        )));
    }
    let operator = super::identity::operator_identity(common.operator.as_deref())?;
    store
        .add_sink(
            &NewSink {
                name: name.clone(),
                kind: settings.kind(),
                settings: settings.to_json(),
                max_class,
            },
            &operator,
        )
        .await?;
    say!(
        "sink `{}` added ({}, up to {}): runs that wait, are decided, resume or expire from now on are delivered to it by `toolgate inbox` or `toolgate notify run`",
        name,
        settings.kind().as_str(),
        max_class.as_str()
    );
    // A secret this process cannot read is said now, not at the first
    // event; the dispatcher may run elsewhere, so it is not refused.
    for secret in settings.secrets() {
        if let Err(error) = secret.read() {
            say_err!(
                "note: {} (the dispatcher must be able to read it)",
                error.to_string()
            );
        }
    }
    say!("check it with: toolgate notify test {}", name);
    Ok(())
}

/// Where a sink sends, in words: addresses and secrets' sources only.
fn target(settings: &SinkSettings) -> String {
    match settings {
        SinkSettings::Webhook(s) => {
            // A query may carry a receiver's token: its values are not shown.
            let mut url = s.url.clone();
            if url.query().is_some() {
                let keys: Vec<String> = url.query_pairs().map(|(k, _)| format!("{k}=…")).collect();
                url.set_query(Some(&keys.join("&")));
            }
            format!("{url} (signed; secret from {})", s.secret)
        }
        SinkSettings::Slack(s) => format!("URL from {}", s.url),
        SinkSettings::Email(s) => format!(
            "{} via {}{}",
            s.to.join(", "),
            s.smtp,
            s.password
                .as_ref()
                .map_or_else(String::new, |p| format!(" (password from {p})"))
        ),
    }
}

async fn list(store: &Store, out: Out) -> Result<(), Failure> {
    let sinks = store.sinks().await?;
    let rows: Vec<(String, String, String, String, String)> = sinks
        .iter()
        .map(|sink| {
            let target =
                SinkSettings::of(sink).map_or_else(|e| format!("unusable: {e}"), |s| target(&s));
            (
                sink.name.clone(),
                sink.kind.map_or("unknown", |k| k.as_str()).to_owned(),
                sink.max_class
                    .map_or("unreadable (no summaries)", DataClass::as_str)
                    .to_owned(),
                target,
                format!("{} by {}", timestamp(sink.created_at), sink.created_by),
            )
        })
        .collect();
    if out.json {
        return out.json(
            &rows
                .iter()
                .map(|(name, kind, max, target, added)| {
                    json!({"sink": name, "kind": kind, "max_data_class": max, "target": target, "added": added})
                })
                .collect::<Vec<_>>(),
        );
    }
    if rows.is_empty() {
        say!("no sink: add one with `toolgate notify add webhook|slack|email …`");
        return Ok(());
    }
    let mut table = out.table(&["SINK", "KIND", "UP TO", "SENDS TO", "ADDED"]);
    for (name, kind, max, target, added) in &rows {
        table.row([
            Col::from(name),
            Col::from(kind),
            Col::from(max),
            Col::from(target),
            Col::from(added),
        ]);
    }
    table.print();
    Ok(())
}

async fn status(store: &Store, out: Out) -> Result<(), Failure> {
    let statuses = store.notification_status().await?;
    if out.json {
        return out.json(
            &statuses
                .iter()
                .map(|s| {
                    json!({
                        "sink": s.name, "kind": s.kind, "pending": s.pending,
                        "failing": s.failing, "delivered": s.delivered,
                        "given_up": s.given_up, "last_error": s.last_error,
                        "next_at": s.next_at, "last_delivered_at": s.last_delivered_at,
                    })
                })
                .collect::<Vec<_>>(),
        );
    }
    if statuses.is_empty() {
        say!("no sink: add one with `toolgate notify add webhook|slack|email …`");
        return Ok(());
    }
    let mut table = out.table(&[
        "SINK",
        "PENDING",
        "FAILING",
        "DELIVERED",
        "GIVEN UP",
        "LAST DELIVERED",
        "NEXT TRY",
        "LAST ERROR",
    ]);
    for s in &statuses {
        table.row([
            Col::from(&s.name),
            Col::from(s.pending.to_string()),
            Col::from(s.failing.to_string()),
            Col::from(s.delivered.to_string()),
            Col::from(s.given_up.to_string()),
            Col::from(
                s.last_delivered_at
                    .map_or_else(|| "-".to_owned(), timestamp),
            ),
            Col::from(s.next_at.map_or_else(|| "-".to_owned(), timestamp)),
            Col::from(s.last_error.clone().unwrap_or_else(|| "-".to_owned())),
        ]);
    }
    table.print();
    Ok(())
}
