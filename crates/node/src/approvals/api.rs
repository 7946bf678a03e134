//! The terminal's approvals API: two local JSON-RPC methods served beside MCP.
//!
//! `clawmcp approvals` lists and answers prompts through these. They are deliberately not MCP
//! tools: they never appear in `tools/list`, so an agent driving the node cannot approve its
//! own commands through the tool surface.
//!
//! - `clawmcp/approvals/list`, no params -> `{pending: [PendingApproval...]}` (camelCase).
//! - `clawmcp/approvals/resolve`, `{id, decision: "allow-once"|"allow-always"|"deny"}` ->
//!   `{resolved: true}`; an unknown id or bad params is a JSON-RPC invalid-params error.

use std::sync::Arc;

use clawmcp_mcp::{ErrorCode, RpcError};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Decision, ExecApprovals};
use crate::registry::LocalMethods;

pub const LIST_METHOD: &str = "clawmcp/approvals/list";
pub const RESOLVE_METHOD: &str = "clawmcp/approvals/resolve";

/// Serves the approvals API for one [`ExecApprovals`].
pub struct ApprovalsApi(pub Arc<ExecApprovals>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResolveParams {
    id: String,
    decision: Decision,
}

impl ApprovalsApi {
    fn list(&self) -> Value {
        json!({"pending": self.0.pending()})
    }

    fn resolve(&self, params: Option<Value>) -> Result<Value, RpcError> {
        let params: ResolveParams = params.and_then(|p| serde_json::from_value(p).ok()).ok_or_else(|| {
            RpcError::new(
                ErrorCode::InvalidParams,
                r#"expected params {"id": "<pending id>", "decision": "allow-once" | "allow-always" | "deny"}"#,
            )
        })?;
        self.0
            .resolve(&params.id, params.decision)
            .map_err(|error| RpcError::new(ErrorCode::InvalidParams, error.to_string()))?;
        Ok(json!({"resolved": true}))
    }
}

impl LocalMethods for ApprovalsApi {
    fn handle<'a>(&'a self, method: &'a str, params: Option<Value>) -> Option<BoxFuture<'a, Result<Value, RpcError>>> {
        match method {
            LIST_METHOD => Some(futures_util::future::ready(Ok(self.list())).boxed()),
            RESOLVE_METHOD => Some(futures_util::future::ready(self.resolve(params)).boxed()),
            _ => None,
        }
    }
}
