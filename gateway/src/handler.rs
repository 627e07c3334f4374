//! The MCP server side: what the gateway says of itself, its tools, its
//! calls, and the offer followed for the client.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorData, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{RoleServer, ServerHandler};
use serde_json::Value;
use toolgate::identity::DeclaredClient;

use crate::{Asker, Gateway};

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
        // Runs whose gateway of this name stopped mid-call are picked up
        // too.
        let gateway = self.clone();
        tokio::spawn(async move {
            let mut last = None;
            let mut seen = gateway.fingerprint(&mut last).await;
            loop {
                gateway.recover().await;
                tokio::time::sleep(gateway.inner.changes).await;
                let now = gateway.fingerprint(&mut last).await;
                if now == seen {
                    continue;
                }
                seen = now;
                tracing::info!("the offer changed; the client is told");
                if context.peer.notify_tool_list_changed().await.is_err() {
                    // The client is gone.
                    break;
                }
            }
        });
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools().await))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
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
        let arguments = Value::Object(request.arguments.unwrap_or_default());
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
                tokio::select! {
                    () = cancelled => {}
                    () = gone => {}
                    _ = left.wait_for(|gone| *gone) => {}
                }
            }),
            progress: context
                .meta
                .get_progress_token()
                .map(|token| (token, context.peer.clone())),
        };
        Ok(self
            .asked(&request.name, arguments, client, asker)
            .await
            .into())
    }
}
