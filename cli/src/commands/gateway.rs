//! `toolgate gateway`: every registered server's tools as one MCP server
//! over stdio, each call through the gate (`toolgate_gateway`).

use std::time::Duration;

use rmcp::ServiceExt as _;
use toolgate_store::Store;

use crate::{Failure, GatewayArgs};

pub(super) async fn gateway(store: &Store, args: GatewayArgs) -> Result<(), Failure> {
    let gateway = toolgate_gateway::Gateway::builder(store.clone())
        .user(&args.user)
        .host(&args.name)
        .wait(Duration::from_secs(args.wait))
        .follow(Duration::from_millis(args.follow_ms))
        .lease(Duration::from_millis(args.lease_ms))
        .four_eyes(args.four_eyes)
        .approvals(args.approvals)
        .build()
        .map_err(|e| Failure::Refused(e.to_string()))?;
    tracing::info!(user = %args.user, host = %args.name, "gateway serving over stdio");
    let running = gateway
        .clone()
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| Failure::Error(format!("cannot serve over stdio: {e}")))?;
    let ended = running.waiting().await;
    gateway.close().await;
    ended
        .map(drop)
        .map_err(|e| Failure::Error(format!("the gateway stopped: {e}")))
}
