//! Shared fixtures for the `clawmcp tools` bridge tests: a fake gateway with an `openclaw.json`
//! pointing at it, a bridge built through the public `bridge::prepare`, the gateway's real
//! result envelopes, and a stand-in for the gateway's loopback MCP server (`attach.grant`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use clawmcp_mcp::{CallContext, McpService, Tool, ToolResult};
use clawmcp_testkit::{FakeGateway, Reply};
use clawmcp_tools::bridge::{self, BridgeOptions, ConnectOverrides, Env, ToolsBridge};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// The fake gateway's default token.
pub const TOKEN: &str = "fake-gateway-token";

/// A fake gateway, a private directory (home, config, workspace) and the environment.
pub struct Setup {
    pub fake: FakeGateway,
    pub dir: tempfile::TempDir,
    /// `openclaw.json`, before the gateway port and token are added.
    pub config: Value,
    pub env: Vec<(String, String)>,
    /// What the bridge advertises and forwards; off = the snapshot catalog, settled at once.
    pub discover: bool,
    pub snapshot_path: Option<PathBuf>,
}

impl Setup {
    pub async fn new() -> Setup {
        Setup {
            fake: FakeGateway::start().await,
            dir: tempfile::tempdir().unwrap(),
            config: json!({}),
            env: Vec::new(),
            discover: false,
            snapshot_path: None,
        }
    }

    pub fn with_config(mut self, config: Value) -> Self {
        self.config = config;
        self
    }

    pub fn with_env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn discovering(mut self) -> Self {
        self.discover = true;
        self
    }

    pub fn workspace(&self) -> PathBuf {
        self.dir.path().join("workspace")
    }

    /// Writes `openclaw.json` (the fake's port and token merged in) and returns the options.
    pub fn options(&self) -> BridgeOptions {
        let mut config = self.config.clone();
        let gateway = config.as_object_mut().unwrap().entry("gateway").or_insert_with(|| json!({}));
        gateway["port"] = self.fake.addr().port().into();
        if gateway.get("auth").is_none() {
            gateway["auth"] = json!({"mode": "token", "token": TOKEN});
        }
        let config_path = self.dir.path().join("openclaw.json");
        std::fs::write(&config_path, serde_json::to_string_pretty(&config).unwrap()).unwrap();
        let mut env = vec![
            ("HOME".to_owned(), self.dir.path().join("home").display().to_string()),
            ("OPENCLAW_CONFIG_PATH".to_owned(), config_path.display().to_string()),
            ("OPENCLAW_WORKSPACE".to_owned(), self.workspace().display().to_string()),
        ];
        env.extend(self.env.iter().cloned());
        let mut options = BridgeOptions::new(ConnectOverrides::default(), Env::from_pairs(env), self.dir.path().into());
        options.discover = self.discover;
        options.snapshot_path = self.snapshot_path.clone();
        options.discovery_budget = Duration::from_secs(5);
        options.poll_interval = Duration::from_secs(5);
        options
    }

    /// A bridge whose catalog is settled (discovery, if on, has finished).
    pub async fn bridge(&self) -> Arc<ToolsBridge> {
        self.bridge_with(self.options()).await
    }

    pub async fn bridge_with(&self, options: BridgeOptions) -> Arc<ToolsBridge> {
        let prepared = bridge::prepare(&options).expect("the bridge prepares");
        prepared.start_discovery(&options, None).await.expect("discovery does not panic");
        assert!(prepared.bridge.catalog().is_settled());
        prepared.bridge.clone()
    }

    /// Scripts `tool` to answer `{ok:true, result:<OpenClaw jsonResult(details)>}`.
    pub fn tool_details(&self, tool: &str, details: Value) {
        self.fake.on_tool(tool, move |_| clawmcp_testkit::ToolReply::ok(json_result(&details)));
    }

    /// The bodies of every `/tools/invoke` call for `tool`.
    pub fn bodies(&self, tool: &str) -> Vec<Value> {
        self.fake.tool_calls().into_iter().filter(|c| c.tool == tool).map(|c| c.body).collect()
    }
}

/// OpenClaw's `jsonResult(payload)`: the payload as pretty JSON text, and as `details`.
pub fn json_result(details: &Value) -> Value {
    json!({"content": [{"type": "text", "text": serde_json::to_string_pretty(details).unwrap()}], "details": details})
}

/// The real 2026.9.6 `subagents list` details (openclaw-tools `createSubagentsTool`).
pub fn subagents_details(active: &[&str], recent: &[&str]) -> Value {
    let item = |id: &&str| json!({"runId": id, "sessionKey": format!("agent:main:subagent:{id}"), "status": "running"});
    json!({
        "status": "ok", "action": "list", "requesterSessionKey": "agent:main:main", "callerIsSubagent": false,
        "total": active.len() + recent.len(), "taskTotal": 0, "tasks": [],
        "active": active.iter().map(item).collect::<Vec<_>>(),
        "recent": recent.iter().map(item).collect::<Vec<_>>(),
        "text": "active subagents:"
    })
}

pub async fn call(bridge: &ToolsBridge, name: &str, args: Value) -> ToolResult {
    call_with(bridge, name, args, CallContext::detached()).await
}

pub async fn call_with(bridge: &ToolsBridge, name: &str, args: Value, ctx: CallContext) -> ToolResult {
    bridge.call_tool(name, args.as_object().cloned().expect("arguments are an object"), ctx).await
}

pub fn text(result: &ToolResult) -> &str {
    result.first_text().unwrap_or_default()
}

pub fn names(tools: &[Tool]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

/// Awaits `future`, failing the test after an hour of (virtual) time.
pub async fn within<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(3600), future).await.expect("the test waited an hour of virtual time")
}

/// Each request the loopback MCP stand-in received: its `Authorization` header and JSON body.
pub type RecordedRequests = Arc<Mutex<Vec<(Option<String>, Value)>>>;

/// The gateway's loopback MCP server as `attach.grant` hands it out: bearer-checked, stateless
/// JSON-RPC over `POST /mcp`, `initialize` and `tools/list`.
pub struct FakeLoopbackMcp {
    addr: SocketAddr,
    pub requests: RecordedRequests,
    task: JoinHandle<()>,
}

impl Drop for FakeLoopbackMcp {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeLoopbackMcp {
    pub async fn start(tools: Value, token: &'static str) -> FakeLoopbackMcp {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests: RecordedRequests = Arc::default();
        let recorded = requests.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                let _ = stream.set_nodelay(true);
                let (tools, recorded) = (tools.clone(), recorded.clone());
                tokio::spawn(async move {
                    let service = service_fn(move |request: Request<Incoming>| {
                        let (tools, recorded) = (tools.clone(), recorded.clone());
                        async move { Ok::<_, Infallible>(answer(request, &tools, token, &recorded).await) }
                    });
                    let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
                });
            }
        });
        FakeLoopbackMcp { addr, requests, task }
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Scripts `attach.grant` on `fake` to hand out this server, and `attach.revoke`.
    pub fn serve_grants(&self, fake: &FakeGateway, token: &'static str) {
        let url = self.url();
        fake.on("attach.grant", move |params| {
            Reply::Ok(json!({
                "sessionKey": params["sessionKey"], "token": token, "expiresAtMs": 1,
                "mcpConfig": {"mcpServers": {"openclaw": {"type": "http", "url": url, "alwaysLoad": true}}},
                "env": {"OPENCLAW_MCP_TOKEN": token}
            }))
        });
        fake.on("attach.revoke", |_| Reply::Ok(json!({"revoked": true})));
    }
}

async fn answer(
    request: Request<Incoming>,
    tools: &Value,
    token: &str,
    recorded: &Mutex<Vec<(Option<String>, Value)>>,
) -> Response<Full<Bytes>> {
    let bearer = request.headers().get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let body: Value =
        serde_json::from_slice(&request.into_body().collect().await.unwrap().to_bytes()).unwrap_or_default();
    recorded.lock().unwrap().push((bearer.clone(), body.clone()));
    let respond = |status: u16, body: Value| {
        Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap()
    };
    if bearer.as_deref() != Some(&format!("Bearer {token}")) {
        return respond(401, json!({"error": "unauthorized"}));
    }
    let id = body["id"].clone();
    match body["method"].as_str() {
        Some("initialize") => respond(
            200,
            json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": "2025-03-26", "capabilities": {"tools": {}}, "serverInfo": {"name": "openclaw", "version": "0.1.0"}}}),
        ),
        Some("tools/list") => respond(200, json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}})),
        _ if id.is_null() => respond(202, json!({})),
        _ => {
            respond(200, json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}))
        }
    }
}
