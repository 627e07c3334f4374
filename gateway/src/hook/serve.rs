//! `POST /hook/CLIENT` on the gateway served over HTTP: a hook submits its
//! event with a token — which submits calls and never decides one — and is
//! answered with toolgate's [`Verdict`] as JSON, once the call is decided
//! or the wait is over. The token's person is the requester.

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use toolgate::visible::visible;
use toolgate_store::Store;

use super::{Client, HookEvent, HookGate, MAX_EVENT_BYTES, Verdict};
use crate::http::Person;

/// What a hook whose token was revoked while its call waited is told.
const REVOKED: &str = "the token this call was asked with was revoked while it waited: it does not run; ask an operator for a new token";

/// How a served gateway answers hooks.
#[derive(Clone)]
pub(crate) struct HookService {
    pub(crate) store: Store,
    pub(crate) wait: Duration,
    pub(crate) four_eyes: bool,
    pub(crate) approvals: u32,
}

/// The route, behind the gateway's layer (host, origin, token).
pub(crate) fn routes(service: HookService) -> axum::Router {
    axum::Router::new()
        .route("/hook/{client}", axum::routing::post(submitted))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_EVENT_BYTES))
        .with_state(service)
}

async fn submitted(
    State(service): State<HookService>,
    Path(client): Path<String>,
    person: Option<axum::Extension<Person>>,
    body: Bytes,
) -> Response {
    let Some(axum::Extension(person)) = person else {
        return (StatusCode::UNAUTHORIZED, "a hook submits with a token").into_response();
    };
    let Some(client) = Client::named(&client) else {
        return (
            StatusCode::NOT_FOUND,
            format!(
                "no client `{}`: this gateway answers the hooks of `claude-code` and `codex`",
                visible(&client)
            ),
        )
            .into_response();
    };
    let verdict = match HookEvent::parse(&body) {
        Ok(event) => {
            let gate = HookGate::new(service.store.clone(), client)
                .wait(service.wait)
                .four_eyes(service.four_eyes)
                .approvals(service.approvals);
            let answer = gate.answer(&event, person.name());
            // A token revoked while its call waits stops the wait.
            tokio::select! {
                verdict = answer => verdict,
                () = person.gone() => Verdict::Deny { reason: REVOKED.to_owned() },
            }
        }
        Err(error) => Verdict::failed(error),
    };
    // Nor is an allow given on a token revoked since it asked, however
    // recently.
    let verdict = match verdict {
        Verdict::Allow { .. } if person.revoked_now(&service.store).await => Verdict::Deny {
            reason: REVOKED.to_owned(),
        },
        verdict => verdict,
    };
    tracing::info!(%client, requester = %person.name(), verdict = ?verdict, "a hook was answered");
    axum::Json(verdict).into_response()
}
