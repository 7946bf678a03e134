//! Asking the running gateway which tools it has and what their arguments are, so that an
//! OpenClaw upgrade needs no regeneration step.
//!
//! What the gateway offers (`docs/tools-bridge.md` §3, checked against 2026.9.6):
//! - `tools.effective {sessionKey}` (operator.read): the tools of that session with their full
//!   descriptions, but **no schemas**. It fails with "unknown session key" for a session that
//!   has no row yet (a fresh gateway has none). `tools.catalog` is a static list that includes
//!   tools this gateway does not build, so it is not used.
//! - `attach.grant {sessionKey, ttlMs}` (operator.admin): a token for the gateway's loopback MCP
//!   server, whose `tools/list` carries every gateway tool's `inputSchema`, as the gateway
//!   builds it. It serves the loopback tool set to a non-owner, so owner-only tools (`sessions`)
//!   are missing and HTTP-denied ones (`sessions_spawn`) present; the catalog module filters.
//!
//! One discovery = one operator WebSocket (`cli`/`cli`, shared secret, scopes read + admin),
//! both methods at once, the grant used for `initialize` + `tools/list` and then revoked, the
//! socket closed. Everything is bounded by one budget; a failed source is reported and the
//! catalog falls back to the snapshots. The grant is asked for only when the gateway itself is
//! on loopback (its MCP server listens on the gateway host's loopback), and its URL must be
//! loopback `http`: the token is only ever sent there. The MCP exchange is clawmcp's one HTTP
//! MCP client ([`clawmcp_http::client`]).

use std::time::Duration;

use clawmcp_gateway::{ClientOptions, GatewayClient, GatewayTarget};
use clawmcp_http::client::{McpClient, is_loopback_host};
use clawmcp_mcp::RequestId;
use clawmcp_mcp::client::Answer;
use serde_json::{Value, json};
use tokio::time::Instant;
use tracing::debug;

use super::snapshot::SnapshotTool;

/// Scopes asked for: `tools.effective` needs read, `attach.grant` admin. A loopback `cli`
/// client with the shared secret keeps what it asks for (`docs/gateway-protocol.md` §4.1).
pub const DISCOVERY_SCOPES: [&str; 2] = ["operator.read", "operator.admin"];

/// How long a grant lives: discovery needs seconds; revoked at once anyway.
const GRANT_TTL_MS: u64 = 60_000;

/// Largest loopback MCP response read (the real `tools/list` is ~45 KB).
pub const MAX_MCP_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

/// `tools/list` pages followed at most.
const MAX_LIST_PAGES: usize = 20;

/// The MCP protocol version the gateway's loopback server speaks.
const LOOPBACK_PROTOCOL: &str = "2025-03-26";

/// A tool of `tools.effective`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectiveTool {
    pub id: String,
    /// `rawDescription` (the model-facing text), else `description`.
    pub description: String,
}

/// What one discovery learned. A `None` source failed; `problems` says why.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveTools {
    /// `hello-ok.server.version`.
    pub gateway_version: Option<String>,
    pub effective: Option<Vec<EffectiveTool>>,
    /// The loopback MCP `tools/list` of an `attach.grant`.
    pub loopback: Option<Vec<SnapshotTool>>,
    pub problems: Vec<String>,
}

impl LiveTools {
    pub fn is_empty(&self) -> bool {
        self.effective.is_none() && self.loopback.is_none()
    }
}

/// Runs one discovery against `target` for `session_key` within `budget`.
pub async fn discover(
    target: &GatewayTarget,
    session_key: &str,
    agent_id: Option<&str>,
    budget: Duration,
) -> LiveTools {
    let deadline = Instant::now() + budget;
    let mut live = LiveTools::default();
    let mut options = ClientOptions::operator(&target.url, &target.credentials, &DISCOVERY_SCOPES);
    options.handshake_timeout = budget;
    options.request_timeout = budget;
    let client = match tokio::time::timeout_at(deadline, GatewayClient::connect(options)).await {
        Ok(Ok(client)) => client,
        Ok(Err(error)) => {
            live.problems.push(format!("cannot connect to the gateway: {error}"));
            return live;
        }
        Err(_) => {
            live.problems.push(format!("the gateway did not complete the handshake within {budget:?}"));
            return live;
        }
    };
    let hello = client.hello();
    live.gateway_version = hello.as_ref().map(|h| h.server.version.clone()).filter(|v| !v.is_empty());
    let admin = hello.as_ref().is_some_and(|h| h.auth.scopes.iter().any(|s| s == "operator.admin"));
    // The grant's MCP server listens on the gateway host's loopback: reachable (and the same
    // server) only when the gateway runs on this machine.
    let local_gateway =
        target.url.parse::<http::Uri>().is_ok_and(|url| is_loopback_host(url.host().unwrap_or_default()));

    let effective = async {
        let mut params = json!({"sessionKey": session_key});
        if let Some(agent_id) = agent_id {
            params["agentId"] = agent_id.into();
        }
        let payload = client.request("tools.effective", params).await.map_err(|e| e.to_string())?;
        parse_effective(&payload)
    };
    let loopback = async {
        if !local_gateway {
            return Err("the gateway is not on this machine, so its loopback MCP server is out of reach".to_owned());
        }
        if !admin {
            return Err("the gateway did not grant operator.admin, which attach.grant needs".to_owned());
        }
        let grant = client
            .request("attach.grant", json!({"sessionKey": session_key, "ttlMs": GRANT_TTL_MS}))
            .await
            .map_err(|e| e.to_string())?;
        let (server, token) = parse_grant(&grant)?;
        let server = server.with_timeout(deadline.saturating_duration_since(Instant::now()));
        let listed = list_loopback_tools(server).await;
        if let Err(error) = client.request("attach.revoke", json!({"token": token})).await {
            debug!(%error, "attach.revoke failed; the grant expires by itself");
        }
        listed
    };
    let (effective, loopback) =
        match tokio::time::timeout_at(deadline, async { tokio::join!(effective, loopback) }).await {
            Ok(both) => both,
            Err(_) => {
                let late = format!("no answer within {budget:?}");
                (Err(late.clone()), Err(late))
            }
        };
    match effective {
        Ok(tools) => live.effective = Some(tools),
        Err(error) => live.problems.push(format!("tools.effective: {error}")),
    }
    match loopback {
        Ok(tools) => live.loopback = Some(tools),
        Err(error) => live.problems.push(format!("attach.grant schemas: {error}")),
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), client.close()).await;
    live
}

/// `{groups:[{tools:[{id, rawDescription?, description?, deniedBySession?}]}]}`.
pub fn parse_effective(payload: &Value) -> Result<Vec<EffectiveTool>, String> {
    let groups = payload.get("groups").and_then(Value::as_array).ok_or("the answer has no `groups` array")?;
    let mut tools: Vec<EffectiveTool> = Vec::new();
    for tool in groups.iter().filter_map(|g| g.get("tools").and_then(Value::as_array)).flatten() {
        let Some(id) = tool.get("id").and_then(Value::as_str).map(str::trim).filter(|id| !id.is_empty()) else {
            continue;
        };
        if tool.get("deniedBySession").and_then(Value::as_bool) == Some(true) || tools.iter().any(|t| t.id == id) {
            continue;
        }
        let text = |key| tool.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
        let description = text("rawDescription").or_else(|| text("description")).unwrap_or_default().to_owned();
        tools.push(EffectiveTool { id: id.to_owned(), description });
    }
    Ok(tools)
}

/// The loopback MCP server (with the grant's bearer) and the token of an `attach.grant` answer.
pub fn parse_grant(grant: &Value) -> Result<(McpClient, String), String> {
    let token = grant.get("token").and_then(Value::as_str).filter(|t| !t.is_empty()).ok_or("the grant has no token")?;
    let url = grant
        .pointer("/mcpConfig/mcpServers/openclaw/url")
        .and_then(Value::as_str)
        .ok_or("the grant has no mcpConfig.mcpServers.openclaw.url")?;
    let refused = || format!("refusing to send the grant token to {url}: not a loopback http:// URL");
    let server = McpClient::new(url).map_err(|_| refused())?;
    if !server.is_loopback() {
        return Err(refused());
    }
    Ok((server.with_bearer(Some(token.to_owned())).with_max_response_bytes(MAX_MCP_RESPONSE_BYTES), token.to_owned()))
}

/// `initialize` then `tools/list` (following `nextCursor`) on the loopback MCP server.
async fn list_loopback_tools(mut server: McpClient) -> Result<Vec<SnapshotTool>, String> {
    let init = json!({
        "protocolVersion": LOOPBACK_PROTOCOL,
        "capabilities": {},
        "clientInfo": {"name": "clawmcp-tools", "version": env!("CARGO_PKG_VERSION")},
    });
    server.initialize(&init).await.map_err(|e| format!("initialize: {e}"))?;
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for page_number in 1..=MAX_LIST_PAGES {
        let params = cursor.as_ref().map_or_else(|| json!({}), |c| json!({"cursor": c}));
        let id = RequestId::number(page_number as i64);
        let page = match server.request(&id, "tools/list", Some(&params)).await {
            Ok(Answer::Result(page)) => page,
            Ok(Answer::Error(error)) => return Err(format!("tools/list: {error}")),
            Err(error) => return Err(format!("tools/list: {error}")),
        };
        let listed = page.get("tools").and_then(Value::as_array).ok_or("tools/list returned no `tools` array")?;
        for tool in listed {
            let tool: SnapshotTool =
                serde_json::from_value(tool.clone()).map_err(|e| format!("tools/list returned a bad tool: {e}"))?;
            tools.push(tool);
        }
        cursor = page.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
        if cursor.is_none() {
            return Ok(tools);
        }
    }
    Err(format!("tools/list had more than {MAX_LIST_PAGES} pages"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_keeps_order_skips_duplicates_denied_and_nameless() {
        let payload = json!({"agentId": "main", "groups": [
            {"id": "core", "tools": [
                {"id": "sessions_list", "description": "short", "rawDescription": "long text"},
                {"id": "tts", "description": "speak"},
                {"id": "sessions_list", "description": "again"},
                {"id": "secrets", "deniedBySession": true},
                {"description": "no id"}
            ]},
            {"id": "plugin", "tools": [{"id": "feishu_doc", "rawDescription": "  "}]}
        ]});
        let tools = parse_effective(&payload).unwrap();
        let pairs: Vec<(&str, &str)> = tools.iter().map(|t| (t.id.as_str(), t.description.as_str())).collect();
        assert_eq!(pairs, [("sessions_list", "long text"), ("tts", "speak"), ("feishu_doc", "")]);
        assert!(parse_effective(&json!({"profile": "full"})).is_err());
    }

    #[test]
    fn grants_are_used_only_on_loopback_http() {
        let grant = |url: &str| json!({"token": "t0k", "mcpConfig": {"mcpServers": {"openclaw": {"url": url}}}});
        for good in ["http://127.0.0.1:44289/mcp", "http://[::1]:1/mcp", "http://localhost:9/mcp"] {
            let (server, token) = parse_grant(&grant(good)).unwrap();
            assert_eq!((server.endpoint().as_str(), token.as_str()), (good, "t0k"));
            assert_eq!(server.bearer(), Some("t0k"));
        }
        for bad in ["https://127.0.0.1:1/mcp", "http://10.0.0.1:1/mcp", "http://example.com/mcp", "nope"] {
            assert!(parse_grant(&grant(bad)).is_err(), "{bad}");
        }
        assert!(parse_grant(&json!({"mcpConfig": {}})).is_err());
    }
}
