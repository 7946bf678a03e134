//! `POST /tools/invoke` on the gateway's HTTP port (the same port as the WebSocket).
//!
//! One call = one POST with `Authorization: Bearer <token or password>` and a JSON body
//! `{tool, args, sessionKey?, agentId?, action?, idempotencyKey?}`; absent fields are omitted.
//! There are no retries: tools are not idempotent, and a retried `sessions_spawn` spawns twice.
//!
//! The deadline is wall-clock and covers everything (connect, headers, body), so a gateway
//! that trickles bytes cannot hold a call open past it. The whole exchange is one future raced
//! against one timer: whichever finishes first is the only outcome, and losing the race drops
//! (aborts) the other side. That is the "single settle path" the upstream bridge builds by hand
//! with a `settled` flag (`docs/tools-bridge.md` §6).
//!
//! A response is returned as status + parsed JSON (or the raw text when the body is not JSON);
//! [`ToolsInvokeResponse::outcome`] applies the bridge's success/failure mapping, but checks the
//! HTTP status too (the upstream bridge does not, and turns HTML error pages into "results").

use std::time::Duration;

use reqwest::Url;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde::Serialize;
use serde_json::Value;

use crate::error::InvokeError;
use crate::secret::Secret;

/// The upstream bridge's default deadline (`OPENCLAW_MCP_GATEWAY_TOOL_TIMEOUT_MS`): long tool
/// runs finish, yet an MCP client's ~5 minute turn limit is not hit first.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(240);

/// Responses larger than this are refused rather than buffered; the gateway's own WebSocket
/// payload cap is 25 MiB, so a legitimate tool result fits comfortably.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;

#[derive(Debug, Clone, Copy)]
pub struct ToolsInvokeOptions {
    pub deadline: Duration,
    pub max_response_bytes: usize,
}

impl Default for ToolsInvokeOptions {
    fn default() -> Self {
        ToolsInvokeOptions { deadline: DEFAULT_DEADLINE, max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES }
    }
}

/// The request body. `args` non-objects are sent as-is; the gateway treats them as `{}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsInvokeRequest {
    pub tool: String,
    pub args: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

impl ToolsInvokeRequest {
    pub fn new(tool: impl Into<String>, args: Value) -> Self {
        ToolsInvokeRequest {
            tool: tool.into(),
            args,
            session_key: None,
            agent_id: None,
            action: None,
            idempotency_key: None,
        }
    }
}

/// The response body as received.
#[derive(Debug, Clone, PartialEq)]
pub enum InvokeBody {
    Json(Value),
    /// Not JSON (a proxy's HTML page, plain text); kept verbatim (lossy UTF-8).
    Text(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolsInvokeResponse {
    pub status: u16,
    pub body: InvokeBody,
}

/// What a tool call amounted to.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    /// `result` of `{ok:true, result}`, or the whole JSON when it has no `result`, or the raw
    /// text of a 2xx non-JSON body.
    Success(Value),
    /// `error.message` (or a description of the status) plus `error.type` when present.
    Failure { status: u16, kind: Option<String>, message: String },
}

impl ToolsInvokeResponse {
    pub fn outcome(&self) -> ToolOutcome {
        let success = (200..300).contains(&self.status);
        match &self.body {
            InvokeBody::Json(body) => {
                let error = body.get("error").filter(|e| !e.is_null());
                if success && body.get("ok") != Some(&Value::Bool(false)) && error.is_none() {
                    return ToolOutcome::Success(body.get("result").cloned().unwrap_or_else(|| body.clone()));
                }
                let text = |key| error.and_then(|e| e.get(key)).and_then(Value::as_str).map(str::to_owned);
                ToolOutcome::Failure {
                    status: self.status,
                    kind: text("type"),
                    message: text("message")
                        .unwrap_or_else(|| format!("Tool invocation failed (HTTP {})", self.status)),
                }
            }
            InvokeBody::Text(text) if success => ToolOutcome::Success(Value::String(text.clone())),
            InvokeBody::Text(text) => {
                let excerpt: String = text.trim().chars().take(200).collect();
                ToolOutcome::Failure {
                    status: self.status,
                    kind: None,
                    message: format!("HTTP {}: {excerpt}", self.status),
                }
            }
        }
    }
}

/// A client for one gateway's `/tools/invoke`. Cheap to clone (the connection pool is shared).
#[derive(Debug, Clone)]
pub struct ToolsInvokeClient {
    http: reqwest::Client,
    endpoint: Url,
    authorization: Option<HeaderValue>,
    options: ToolsInvokeOptions,
}

impl ToolsInvokeClient {
    /// `gateway_url` may be the WebSocket URL (`ws://host:port` becomes `http://host:port`,
    /// `wss` becomes `https`) or an http(s) URL; only scheme, host and port are used.
    pub fn new(gateway_url: &str, bearer: Option<&Secret>, options: ToolsInvokeOptions) -> Result<Self, InvokeError> {
        let endpoint = tools_invoke_url(gateway_url)?;
        let authorization = bearer
            .map(|secret| {
                let mut value = HeaderValue::from_str(&format!("Bearer {}", secret.expose()))
                    .map_err(|_| InvokeError::InvalidCredential)?;
                value.set_sensitive(true);
                Ok(value)
            })
            .transpose()?;
        // No proxy: the gateway is on loopback (or reached over wss), never via HTTP_PROXY.
        let http = reqwest::Client::builder().no_proxy().build().map_err(InvokeError::Client)?;
        Ok(ToolsInvokeClient { http, endpoint, authorization, options })
    }

    pub fn endpoint(&self) -> &str {
        self.endpoint.as_str()
    }

    /// Sends one invocation; any HTTP status is a response, only transport failures, the
    /// deadline and the size cap are errors.
    pub async fn invoke(&self, request: &ToolsInvokeRequest) -> Result<ToolsInvokeResponse, InvokeError> {
        let tool = request.tool.as_str();
        let body = serde_json::to_vec(request)
            .map_err(|e| InvokeError::Encode { tool: tool.to_owned(), reason: e.to_string() })?;
        let transport =
            |source| InvokeError::Transport { tool: tool.to_owned(), url: self.endpoint.to_string(), source };
        let exchange = async {
            let mut builder = self
                .http
                .post(self.endpoint.clone())
                .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                .body(body);
            if let Some(authorization) = &self.authorization {
                builder = builder.header(AUTHORIZATION, authorization.clone());
            }
            let mut response = builder.send().await.map_err(transport)?;
            let status = response.status().as_u16();
            let limit = self.options.max_response_bytes;
            let mut bytes = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(transport)? {
                if bytes.len() + chunk.len() > limit {
                    return Err(InvokeError::ResponseTooLarge { tool: tool.to_owned(), limit });
                }
                bytes.extend_from_slice(&chunk);
            }
            let body = match serde_json::from_slice(&bytes) {
                Ok(json) => InvokeBody::Json(json),
                Err(_) => InvokeBody::Text(String::from_utf8_lossy(&bytes).into_owned()),
            };
            Ok(ToolsInvokeResponse { status, body })
        };
        tokio::time::timeout(self.options.deadline, exchange)
            .await
            .unwrap_or_else(|_| Err(InvokeError::Timeout { tool: tool.to_owned(), after: self.options.deadline }))
    }
}

/// `ws://h:p/anything` -> `http://h:p/tools/invoke` (and `wss` -> `https`).
pub fn tools_invoke_url(gateway_url: &str) -> Result<Url, InvokeError> {
    gateway_http_url(gateway_url, "/tools/invoke")
}

/// The gateway's HTTP URL at `path` (its WebSocket and HTTP share the port): `ws://h:p/x` ->
/// `http://h:p/<path>`, `wss` -> `https`, with no query, fragment or user info.
pub fn gateway_http_url(gateway_url: &str, path: &str) -> Result<Url, InvokeError> {
    let invalid = |reason: &str| InvokeError::InvalidUrl { url: gateway_url.to_owned(), reason: reason.to_owned() };
    let mut url = Url::parse(gateway_url).map_err(|e| invalid(&e.to_string()))?;
    let scheme = match url.scheme() {
        "ws" | "http" => "http",
        "wss" | "https" => "https",
        _ => return Err(invalid("expected a ws://, wss://, http:// or https:// URL")),
    };
    if url.host_str().is_none() {
        return Err(invalid("it has no host"));
    }
    url.set_scheme(scheme).map_err(|()| invalid("cannot change the scheme"))?;
    url.set_path(path);
    url.set_query(None);
    url.set_fragment(None);
    let _ = url.set_username("");
    let _ = url.set_password(None);
    Ok(url)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn websocket_urls_map_to_the_http_endpoint() {
        let cases = [
            ("ws://127.0.0.1:18789", "http://127.0.0.1:18789/tools/invoke"),
            ("wss://gw.example:443/base?x=1", "https://gw.example/tools/invoke"),
            ("wss://gw.example:8443", "https://gw.example:8443/tools/invoke"),
            ("http://[::1]:9/x", "http://[::1]:9/tools/invoke"),
            ("ws://user:pw@127.0.0.1:1", "http://127.0.0.1:1/tools/invoke"),
        ];
        for (input, expected) in cases {
            assert_eq!(tools_invoke_url(input).unwrap().as_str(), expected, "{input}");
        }
        assert!(tools_invoke_url("ftp://x").is_err());
        assert!(tools_invoke_url("not a url").is_err());
    }

    #[test]
    fn body_omits_absent_fields() {
        let mut request = ToolsInvokeRequest::new("sessions_list", json!({}));
        assert_eq!(serde_json::to_value(&request).unwrap(), json!({"tool":"sessions_list","args":{}}));
        request.session_key = Some("agent:main:main".into());
        request.agent_id = Some("main".into());
        assert_eq!(
            serde_json::to_value(&request).unwrap(),
            json!({"tool":"sessions_list","args":{},"sessionKey":"agent:main:main","agentId":"main"})
        );
    }

    #[test]
    fn outcome_mapping() {
        let response = |status, body| ToolsInvokeResponse { status, body };
        let ok = response(200, InvokeBody::Json(json!({"ok":true,"result":{"content":[]}})));
        assert_eq!(ok.outcome(), ToolOutcome::Success(json!({"content":[]})));
        let bare = response(200, InvokeBody::Json(json!({"status":"error"})));
        assert_eq!(bare.outcome(), ToolOutcome::Success(json!({"status":"error"})));
        let not_found = response(
            404,
            InvokeBody::Json(json!({"ok":false,"error":{"type":"not_found","message":"Tool not available: x"}})),
        );
        assert_eq!(
            not_found.outcome(),
            ToolOutcome::Failure {
                status: 404,
                kind: Some("not_found".into()),
                message: "Tool not available: x".into()
            }
        );
        let unauthorized =
            response(401, InvokeBody::Json(json!({"error":{"message":"Unauthorized","type":"unauthorized"}})));
        assert!(
            matches!(unauthorized.outcome(), ToolOutcome::Failure { status: 401, ref message, .. } if message == "Unauthorized")
        );
        let ok_false_200 = response(200, InvokeBody::Json(json!({"ok":false})));
        assert!(matches!(ok_false_200.outcome(), ToolOutcome::Failure { status: 200, .. }));
        let html = response(502, InvokeBody::Text("<html>Bad Gateway</html>".into()));
        assert_eq!(
            html.outcome(),
            ToolOutcome::Failure { status: 502, kind: None, message: "HTTP 502: <html>Bad Gateway</html>".into() }
        );
        let text = response(200, InvokeBody::Text("plain".into()));
        assert_eq!(text.outcome(), ToolOutcome::Success(json!("plain")));
    }
}
