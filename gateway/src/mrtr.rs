//! The requester's own client asked to decide a held call on MCP's
//! stateless protocol (2026-07-28), where a server sends the client no
//! request of its own (`elicitation/create` is refused there): the
//! `tools/call` is answered `input_required`, carrying the form
//! [`elicit`](crate::elicit) sends and a sealed `requestState`, and the
//! client asks the call again with the form's answer and that state.
//!
//! The form is offered only where an `elicitation/create` form would be —
//! the store allows the requester to decide the run through the client
//! ([`toolgate_store::Store::elicitation_refused`]) and the client declared
//! it shows forms — and only when the store has an integrity key: the state
//! is sealed ([`RequestStateCodec`], HMAC-SHA-256) under a key derived from
//! it ([`toolgate::integrity::IntegrityKey::request_state_key`]). It holds
//! the run and the digest of the turn the form showed, and is bound to the
//! call's key — what makes a call the same call, the codec's associated
//! data, never written into the state — and to an expiry
//! ([`GatewayBuilder::answer_within`](crate::GatewayBuilder::answer_within)).
//!
//! Asked again, the state is opened first: one forged or altered, expired,
//! sealed for another call, or naming a run the call is no longer held
//! under is refused, and nothing is recorded or run. An accepted form with
//! "approve" or "deny" is recorded as an `elicitation/create` answer is —
//! the requester's, through the elicitation channel, by the single-winner
//! update of an operator's decision — and the call is then answered as a
//! held call is: run once when approved, the denial when denied. A declined
//! or cancelled form, or none, decides nothing: the call waits for the
//! operators. The same state with the same answer again is answered by the
//! run — its kept answer, never a second run; with another answer, or when
//! someone else decided first, it is refused as decided already.

use rmcp::model::{
    CallToolResult, ElicitRequest, ElicitResult, InputRequest, InputRequests, InputRequiredResult,
    InputResponses, RequestStateCodec, RequestStateError, SealOptions,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolgate::audit::DecisionRecord;
use toolgate::identity::DeclaredClient;
use toolgate::suspend::{SuspendedRun, TurnDigest};
use toolgate_store::{ClaimError, StoreError};

use crate::answers::refusal;
use crate::elicit::{FormAnswer, form};
use crate::held::Joined;
use crate::{Asker, Gateway, HeldCall};

/// The name of the one input request an `input_required` answer carries:
/// the form.
pub(crate) const FORM: &str = "approval";

/// What a sealed request state holds. The call's key is bound to it as the
/// codec's associated data, the expiry stamped by the codec.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Sealed {
    /// The run the form asks about.
    run: String,
    /// The digest of the turn the form showed: what its answer decides.
    digest: String,
}

/// Why a call asked again with a request state is refused: nothing was
/// recorded, and nothing ran.
#[derive(Debug, thiserror::Error)]
enum StateRefused {
    /// The gateway seals no state, so it opens none.
    #[error("this gateway reads no request state: its store has no integrity key")]
    Unkeyed,
    /// Answers without the state they answer.
    #[error("the call carries input responses but no request state")]
    NoState,
    /// Sealed longer ago than a form may take to be answered.
    #[error(
        "the request state expired: a form is answered within the time the gateway that sent it allows ({within} s on this one); asked again without it, the call is sent a new form"
    )]
    Expired {
        /// How long a form may take, in seconds.
        within: u64,
    },
    /// Not a state this gateway sealed for this call.
    #[error(
        "the request state does not verify: it was altered or forged, or sealed for another call"
    )]
    Forged,
    /// Sealed for this call, but it is held under another run now.
    #[error("the request state names run `{0}`, which this call is no longer held under")]
    OtherRun(String),
    /// The answer beside the state.
    #[error("the answer to the form `{FORM}` does not read: {0}")]
    Answer(serde_json::Error),
    /// The store could not tell.
    #[error("the store cannot be read: {0}")]
    Store(#[from] StoreError),
}

impl Gateway {
    /// The `input_required` answer that puts the held call to the client's
    /// own user: the form, and the state sealed for the call's key; `None`
    /// where no form is sent — no integrity key, the run decided already,
    /// or the store does not allow the requester to decide it.
    pub(crate) async fn input_required(&self, held: &HeldCall) -> Option<InputRequiredResult> {
        let key = held.key.as_deref()?;
        let Some(codec) = self.inner.states.as_ref() else {
            tracing::debug!(run = %held.run_id, "no integrity key: the client is not sent a form it would answer with a request state");
            return None;
        };
        let store = self.inner.host.store();
        // Decided already, waiting for input, or unreadable: no form.
        let Ok(run @ SuspendedRun::AwaitingApproval(_)) = store.load_suspended(&held.run_id).await
        else {
            return None;
        };
        match store.elicitation_refused(&run).await {
            Ok(None) => {}
            Ok(Some(why)) => {
                tracing::debug!(run = %held.run_id, %why, "the client is not asked to decide its call");
                return None;
            }
            Err(error) => {
                tracing::warn!(run = %held.run_id, %error, "cannot tell whether the client may decide its call; it is not asked");
                return None;
            }
        }
        let params = form(&run, self.inner.host.name())?;
        let state = seal(
            codec,
            &Sealed {
                run: held.run_id.clone(),
                digest: run.digest().as_str().to_owned(),
            },
            key,
            self.inner.answer_within,
        )?;
        tracing::info!(run = %held.run_id, "the client is asked to decide its held call, in the answer to it");
        let requests = InputRequests::from([(
            FORM.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        )]);
        Some(InputRequiredResult::new(Some(requests), Some(state)))
    }

    /// A `tools/call` asked again with the request state it was sent and,
    /// beside it, the answer to its form: the state checked, the answer
    /// recorded, and the call answered as a held call is (see the module).
    pub(crate) async fn answered(
        &self,
        wire_name: &str,
        arguments: &Value,
        client: Option<&DeclaredClient>,
        returned: (Option<String>, Option<InputResponses>),
        asker: Asker,
    ) -> CallToolResult {
        let key = match self
            .same_call(wire_name, arguments, client, &asker.requester)
            .await
        {
            Ok((_, key)) => key,
            Err(refused) => return refused,
        };
        let (state, responses) = returned;
        let (sealed, answer) = match self
            .opened(&key, state.as_deref(), responses.as_ref())
            .await
        {
            Ok(opened) => opened,
            Err(why) => {
                return refusal(format!(
                    "{why}: nothing was recorded, and the call was not run"
                ));
            }
        };
        match &answer {
            Some(answer) => {
                if let Err(refused) = self.decide_by_form(&sealed, answer).await {
                    return refused;
                }
            }
            None => {
                tracing::info!(run = %sealed.run, "the client's form decided nothing; the call waits for the operators");
            }
        }
        let held = HeldCall {
            run_id: sealed.run,
            key: Some(key),
        };
        match self.join(&held, asker).await {
            Joined::Answered(answer) => answer,
            Joined::Input(_) | Joined::Gone => refusal(format!(
                "run `{}` ended before its call was answered; `toolgate runs show {}` tells how",
                held.run_id, held.run_id
            )),
        }
    }

    /// The state opened for the call `key`, checked against the store, and
    /// what the answer beside it decides (`None`: nothing).
    async fn opened(
        &self,
        key: &str,
        state: Option<&str>,
        responses: Option<&InputResponses>,
    ) -> Result<(Sealed, Option<FormAnswer>), StateRefused> {
        let codec = self.inner.states.as_ref().ok_or(StateRefused::Unkeyed)?;
        let state = state.ok_or(StateRefused::NoState)?;
        let sealed: Sealed = codec
            .open_json_with(state, key.as_bytes())
            .map_err(|error| match error {
                RequestStateError::Expired => StateRefused::Expired {
                    within: self.inner.answer_within.as_secs(),
                },
                error => {
                    tracing::warn!(%error, "a request state that does not verify is refused");
                    StateRefused::Forged
                }
            })?;
        // Sealed for this call's key, and the key still names its run: a
        // newer run of the same call is decided apart.
        if self.inner.host.key_of(&sealed.run).await?.as_deref() != Some(key) {
            return Err(StateRefused::OtherRun(sealed.run));
        }
        let answer = match responses.and_then(|responses| responses.get(FORM)) {
            None => None,
            Some(response) => FormAnswer::of(
                &serde_json::from_value::<ElicitResult>(response.clone())
                    .map_err(StateRefused::Answer)?,
            ),
        };
        Ok((sealed, answer))
    }

    /// Records the form's answer on the run the state names, on the turn
    /// the form showed. The same answer recorded already — the state and
    /// answer sent again — stands; any other decision taken first refuses
    /// it, as decided already.
    async fn decide_by_form(
        &self,
        sealed: &Sealed,
        answer: &FormAnswer,
    ) -> Result<(), CallToolResult> {
        let store = self.inner.host.store();
        let run = store.latest_suspended(&sealed.run).await.map_err(|error| {
            refusal(format!(
                "the answer to the form cannot be recorded: {error}; the call was not run"
            ))
        })?;
        let digest = TurnDigest::from_text(sealed.digest.clone());
        let lost = match self.record_form(&run, &digest, answer).await {
            Ok(recorded) => {
                tracing::info!(run = %sealed.run, verdict = %recorded.record.verdict.as_str(), "the client's own user decided the held call");
                return Ok(());
            }
            Err(lost @ (ClaimError::AlreadyDecided { .. } | ClaimError::NotFound(_))) => lost,
            Err(error) => {
                return Err(refusal(format!(
                    "the answer to the form was refused: {error}; the call was not run"
                )));
            }
        };
        let decisions = store.decisions(&sealed.run).await.map_err(|error| {
            refusal(format!(
                "run `{}`: {lost}, and its decisions cannot be read ({error}); this answer was not recorded",
                sealed.run
            ))
        })?;
        if decisions
            .iter()
            .any(|record| record.digest == digest && answer.is_recorded_in(record))
        {
            tracing::info!(run = %sealed.run, "the same answer to the form again: the call is answered by its run");
            return Ok(());
        }
        tracing::info!(run = %sealed.run, "the run was decided first; the client's answer is not recorded");
        Err(refusal(decided_already(
            &sealed.run,
            decisions
                .iter()
                .rev()
                .find(|record| record.voided.is_none()),
        )))
    }
}

/// `sealed`, for the call `key`, valid for `within`; `None` when it cannot
/// be written.
fn seal(
    codec: &RequestStateCodec,
    sealed: &Sealed,
    key: &str,
    within: std::time::Duration,
) -> Option<String> {
    let options = SealOptions::new()
        .associated_data(key.as_bytes())
        .ttl(within);
    match codec.seal_json_with(sealed, &options) {
        Ok(state) => Some(state),
        Err(error) => {
            tracing::warn!(run = %sealed.run, %error, "the request state cannot be sealed; the client is not sent a form");
            None
        }
    }
}

/// The answer to a form whose run someone else decided first.
fn decided_already(run_id: &str, standing: Option<&DecisionRecord>) -> String {
    let by = standing.map_or_else(String::new, |record| {
        format!(
            " by `{}` ({})",
            toolgate::visible::visible(&record.decided_by),
            record.summary()
        )
    });
    format!(
        "run `{run_id}` was decided already{by}: this answer was not recorded, and the call was not run on it. Asked again without the form's answer, the same call is answered by that decision"
    )
}
