//! Email over SMTP (`lettre`): a plain-text part and an HTML part with the
//! same content. Header values are single lines of visible characters
//! (a line break a model wrote is shown as `\n`, never a new header), and
//! the HTML escapes every value.

use std::fmt::Write as _;

use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use maud::html;

use crate::NotifyError;
use crate::message::{self, Outgoing};
use crate::settings::EmailSettings;

/// The message's subject, text and HTML.
pub fn email_parts(out: &Outgoing) -> (String, String, String) {
    let event = &out.event;
    let subject = toolgate::visible::visible(&message::subject(event)).into_owned();
    let mut text = format!(
        "Run {} {}.\n\nRequested by: {}\n",
        event.data.run_id,
        message::what_happened(event),
        message::origin(event)
    );
    for call in &event.data.calls {
        let server = call
            .server
            .as_deref()
            .map_or_else(|| "builtin".to_owned(), |s| format!("server {s}"));
        let summary = call.summary.as_deref().unwrap_or(message::WITHHELD);
        let _ = write!(text, "\n- {} ({server}): {summary}", call.tool);
    }
    if let Some(why) = &event.data.why {
        let _ = write!(text, "\n\n{why}");
    }
    if let Some(link) = &out.link {
        let _ = write!(text, "\n\nOpen it in the inbox: {link}");
    }
    text.push('\n');
    let markup = html! {
        p { "Run " code { (event.data.run_id) } " " (message::what_happened(event)) "." }
        p { "Requested by: " (message::origin(event)) }
        @if !event.data.calls.is_empty() {
            ul {
                @for call in &event.data.calls {
                    li {
                        code { (call.tool) }
                        " (" (call.server.as_deref().unwrap_or("builtin")) "): "
                        @match call.summary.as_deref() {
                            Some(summary) => code { (summary) },
                            None => em { (message::WITHHELD) },
                        }
                    }
                }
            }
        }
        @if let Some(why) = &event.data.why { p { (why) } }
        @if let Some(link) = &out.link {
            p { a href=(link) { "Open the run in the inbox" } }
        }
    };
    (subject, text, markup.into_string())
}

/// Sends `out` by email.
pub(crate) async fn send_email(
    settings: &EmailSettings,
    out: &Outgoing,
) -> Result<(), NotifyError> {
    let address = |text: &str, what: &str| {
        text.parse::<Mailbox>().map_err(|e| NotifyError::Send {
            reason: format!(
                "the {what} address `{}` is not usable: {e}",
                toolgate::visible::visible(text)
            ),
        })
    };
    let (subject, text, markup) = email_parts(out);
    let mut builder = Message::builder()
        .from(address(&settings.from, "sender")?)
        .subject(subject)
        .message_id(Some(format!("<{}@toolgate>", out.event.id)));
    for to in &settings.to {
        builder = builder.to(address(to, "recipient")?);
    }
    let email = builder
        .multipart(MultiPart::alternative_plain_html(text, markup))
        .map_err(|e| NotifyError::Send {
            reason: format!("the message could not be built: {e}"),
        })?;
    let mut transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(settings.smtp.as_str())
        .map_err(|e| NotifyError::Send {
            reason: format!("the relay's address is not usable: {e}"),
        })?
        .timeout(Some(crate::webhook::TIMEOUT));
    if let (Some(user), Some(password)) = (&settings.username, &settings.password) {
        transport = transport.credentials(Credentials::new(user.clone(), password.read()?));
    }
    transport
        .build()
        .send(email)
        .await
        .map_err(|e| NotifyError::Send {
            reason: format!("the relay refused or could not be reached: {e}"),
        })?;
    Ok(())
}
