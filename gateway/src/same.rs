//! What makes two calls the same call.

use serde_json::Value;

/// What makes a retry the same call, for every gateway process of a name:
/// the gateway's name, the requester (its user), the tool's local name, the
/// arguments' digest ([`toolgate::suspend::arguments_digest`]) and the name
/// the client declared — not its version, which changes when the client
/// updates itself. The held call's key in the store is the digest of these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SameCall<'a> {
    pub(crate) gateway: &'a str,
    pub(crate) requester: &'a str,
    pub(crate) tool: &'a str,
    pub(crate) arguments: &'a Value,
    pub(crate) client: Option<&'a str>,
}

impl SameCall<'_> {
    /// The key the store holds the call under.
    pub(crate) fn key(&self) -> String {
        toolgate::suspend::arguments_digest(&serde_json::json!([
            "toolgate/held-call",
            self.gateway,
            self.requester,
            self.tool,
            toolgate::suspend::arguments_digest(self.arguments),
            self.client,
        ]))
    }
}
