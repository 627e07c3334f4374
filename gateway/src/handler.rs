//! The MCP server side: what the gateway says of itself, its tools, its
//! calls, and the offer followed for the client.
//!
//! A tool is shown under its wire name, with its description and parameter
//! schema, the title its server gave it (in its annotations — what an
//! import keeps), and annotations the gateway writes itself: a server's own
//! hints never reach the client, since some clients skip their own
//! confirmation for a tool that says it only reads. A remote tool is shown
//! fail-closed — `readOnlyHint: false`, `destructiveHint: true`,
//! `idempotentHint: false`, `openWorldHint: true` — whatever its server
//! says; a typed local tool (a host's builtin) by the effect its type
//! declares, which the gate trusts: `read_only` reads only, an
//! `idempotent_write` is idempotent, and every builtin may reach the world.

use std::collections::HashMap;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, DiscoverResult,
    ErrorData, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities,
    ServerConfig, SubscriptionFilter, Tool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{RoleServer, ServerHandler};
use serde_json::Value;
use toolgate::erased::ErasedTool;
use toolgate::gate::{Effect, Origin};
use toolgate::identity::DeclaredClient;
use toolgate::registry::Offered;

use crate::{Asker, Gateway};

/// The titles of the stored catalogue's live tools, by server and local
/// name. The registry's tools carry no title; the import keeps it in the
/// tool's annotations, so it is read from the store beside the offer. A
/// store that cannot be read gives none: the tools are still shown.
pub(crate) async fn titles(store: &toolgate_store::Store) -> HashMap<(String, String), String> {
    let mut titles = HashMap::new();
    let read = store
        .each_live_tool(|row| {
            let title = row
                .annotations
                .as_deref()
                .and_then(|text| serde_json::from_str::<Value>(text).ok())
                .and_then(|annotations| match annotations.get("title") {
                    Some(Value::String(title)) if !title.trim().is_empty() => Some(title.clone()),
                    _ => None,
                });
            if let Some(title) = title {
                titles.insert((row.server_id, row.local_name), title);
            }
        })
        .await;
    if let Err(error) = read {
        tracing::warn!(%error, "cannot read the tools' titles; the tools are shown without");
    }
    titles
}

/// Each offered tool as the client is shown it, beside the tool itself.
pub(crate) fn shown<'a>(
    offered: &'a Offered,
    titles: &HashMap<(String, String), String>,
) -> Vec<(Tool, &'a ErasedTool)> {
    offered
        .tools()
        .filter_map(|tool| {
            let wire = offered.catalogue().wire_name(tool.name())?;
            // A registry's schemas are objects; one that is not is not served.
            let Value::Object(schema) = tool.parameters().as_value().clone() else {
                return None;
            };
            let title = match (tool.origin(), tool.server()) {
                (Origin::Remote, Some(server)) => titles
                    .get(&(server.to_owned(), tool.name().to_owned()))
                    // Remote text: shown with its hidden characters escaped,
                    // as the description is.
                    .map(|title| toolgate::visible::visible(title).into_owned()),
                _ => None,
            };
            let mut shown = Tool::new(
                wire.to_owned(),
                tool.description().to_owned(),
                std::sync::Arc::new(schema),
            );
            shown.annotations = Some(annotations(tool, title.clone()));
            shown.title = title;
            Some((shown, tool))
        })
        .collect()
}

/// The annotations the gateway writes for `tool` (see the module).
fn annotations(tool: &ErasedTool, title: Option<String>) -> ToolAnnotations {
    // (read only, destructive, idempotent); the world is always open.
    let (read_only, destructive, idempotent) =
        if tool.origin() == Origin::Local && !tool.is_hand_erased() {
            match tool.effect() {
                Effect::ReadOnly => (true, false, true),
                Effect::IdempotentWrite => (false, true, true),
                Effect::NonIdempotentWrite => (false, true, false),
            }
        } else {
            // A remote tool's, or a hand-erased tool's, effect is a claim.
            (false, true, false)
        };
    ToolAnnotations::from_raw(
        title,
        Some(read_only),
        Some(destructive),
        Some(idempotent),
        Some(true),
    )
}

/// What is wrong with the params of a `tools/call` that rmcp could not read
/// as [`CallToolRequestParams`].
fn call_params_problem(params: Option<&Value>) -> String {
    let kind = |value: &Value| match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    let Some(params) = params else {
        return "`tools/call` has no params: it needs an object with the tool's `name`".to_owned();
    };
    let Value::Object(fields) = params else {
        return format!(
            "the params of `tools/call` are {}, not an object with the tool's `name`",
            kind(params)
        );
    };
    match fields.get("name") {
        None => return "the params of `tools/call` have no `name`: the tool to call".to_owned(),
        Some(Value::String(_)) => {}
        Some(name) => return format!("`name` is {}, not a string", kind(name)),
    }
    match fields.get("arguments") {
        None | Some(Value::Null | Value::Object(_)) => {}
        Some(arguments) => return format!("`arguments` is {}, not an object", kind(arguments)),
    }
    match serde_json::from_value::<CallToolRequestParams>(params.clone()) {
        Err(error) => format!("the params of `tools/call` do not read: {error}"),
        Ok(_) => "the params of `tools/call` do not read".to_owned(),
    }
}

impl Gateway {
    /// Tells the client, through `tell`, each time what it is shown or a
    /// tool's gate changes ([`Gateway::fingerprint`]), read again every
    /// [`GatewayBuilder::changes`](crate::GatewayBuilder::changes); returns
    /// once `tell` fails: the client is gone.
    async fn tell_changes<F, Told>(&self, tell: F)
    where
        F: Fn() -> Told,
        Told: Future<Output = bool>,
    {
        let mut last = None;
        let mut seen = self.fingerprint(&mut last).await;
        loop {
            tokio::time::sleep(self.inner.changes).await;
            let now = self.fingerprint(&mut last).await;
            if now == seen {
                continue;
            }
            seen = now;
            tracing::info!("the offer changed; the client is told");
            if !tell().await {
                return;
            }
        }
    }
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::default();
        info.capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        info.instructions = Some(
            "toolgate: every tool call passes its gate; a write waits for a human's approval."
                .into(),
        );
        info
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // The offer follows the operator: when it changes (an import, an
        // approval changed, a tool accepted, a server disabled or removed),
        // the client is told to list it again.
        self.maintain();
        let gateway = self.clone();
        tokio::spawn(async move {
            gateway
                .tell_changes(|| async { context.peer.notify_tool_list_changed().await.is_ok() })
                .await;
        });
    }

    /// A client of the stateless protocol (2026-07-28) begins here, or with
    /// any request: it never initialises.
    async fn discover(&self, _: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData> {
        self.maintain();
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    /// Of what a client of the stateless protocol may listen for, the
    /// gateway tells one thing: that its tools changed.
    fn accepted_subscription_filter(&self, _: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    /// A client of the stateless protocol (2026-07-28) listening is told
    /// when the offer changes, as an initialised client is, until it stops
    /// listening or goes away.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        self.maintain();
        if context.accepted().tools_list_changed != Some(true) {
            context.cancelled().await;
            return Ok(());
        }
        let sink = context.sink().clone();
        let mut left = self.inner.left.subscribe();
        tokio::select! {
            () = context.cancelled() => {}
            _ = left.wait_for(|gone| *gone) => {}
            () = self.tell_changes(|| async { sink.notify_tool_list_changed().await.is_ok() }) => {}
        }
        Ok(())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.maintain();
        Ok(ListToolsResult::with_all_items(self.tools().await))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // A client that never initialises (a stateless one) still has the
        // runs a stopped gateway left picked up.
        self.maintain();
        // As the client declared itself: in this request, or at initialize.
        let client = context
            .meta
            .client_info()
            .or_else(|| {
                context
                    .peer
                    .peer_info()
                    .map(|info| info.client_info.clone())
            })
            .map(|info| DeclaredClient::new(&info.name, Some(&info.version)));
        // Over HTTP, the person of the request's token; else the
        // gateway's user.
        let asking = crate::http::asking(&context.extensions);
        let Some(requester) = asking.requester(&self.inner.user) else {
            return Ok(crate::answers::refusal(
                "the request carries no token's person: it is not served".to_owned(),
            )
            .into());
        };
        // Over HTTP, a held call stops waiting once its token is revoked or
        // its session ended.
        let revoked = match asking {
            crate::http::Asking::Person(person) => Some(person.gone()),
            _ => None,
        };
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        // A client of the stateless protocol is sent no request of the
        // gateway's own: its user is asked in the answer to the call.
        let stateless = context
            .protocol_version()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        let forms = crate::elicit::shows_forms(context.client_capabilities().as_ref());
        let gone = {
            let peer = context.peer.clone();
            let poll = self.inner.poll;
            async move {
                while !peer.is_transport_closed() {
                    tokio::time::sleep(poll).await;
                }
            }
        };
        let cancelled = context.ct.clone().cancelled_owned();
        let mut left = self.inner.left.subscribe();
        let asker = Asker {
            cancelled: Box::pin(async move {
                let revoked = async move {
                    match revoked {
                        Some(revoked) => revoked.await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    () = cancelled => {}
                    () = gone => {}
                    () = revoked => {}
                    _ = left.wait_for(|gone| *gone) => {}
                }
            }),
            progress: context
                .meta
                .get_progress_token()
                .map(|token| (token, context.peer.clone())),
            forms: (forms && !stateless).then(|| context.peer.clone()),
            input: forms && stateless,
            requester,
            context: None,
        };
        if request.request_state.is_some() || request.input_responses.is_some() {
            // Asked again with the answer to the form it was sent.
            let returned = (request.request_state, request.input_responses);
            return Ok(self
                .answered(&request.name, &arguments, client.as_ref(), returned, asker)
                .await
                .into());
        }
        Ok(self.asked(&request.name, arguments, client, asker).await)
    }

    /// A request rmcp could not read as one it knows. A `tools/call` or
    /// `tools/list` lands here when its params do not fit — answered
    /// `-32602` invalid params, naming what is wrong, rather than rmcp's
    /// `-32601` method not found; any other method is not found.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        match request.method.as_str() {
            "tools/call" => {
                let problem = call_params_problem(request.params.as_ref());
                tracing::warn!(%problem, "a `tools/call` whose params do not fit is refused");
                Err(ErrorData::invalid_params(problem, None))
            }
            "tools/list" => {
                let problem = match request.params_as::<PaginatedRequestParams>() {
                    Err(error) => format!("the params of `tools/list` do not read: {error}"),
                    Ok(_) => "the params of `tools/list` do not read".to_owned(),
                };
                Err(ErrorData::invalid_params(problem, None))
            }
            method => Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                method.to_owned(),
                None,
            )),
        }
    }
}
