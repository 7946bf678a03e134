//! `app.*` and `app.connection.*`: the running node describing and managing itself, for local MCP
//! clients only (as the upstream tray's own tools: never registered with the gateway —
//! `ToolDef::local_only`).
//!
//! They live here, beside `clawmcp node`'s transports, because that is what they are about: the
//! MCP listener, the gateway link, the status the node publishes and the settings it reloads.
//! Most answer from the node itself. `app.nodes`, `app.sessions`, `app.agents`,
//! `app.connection.pendingApprovals` and the four pairing decisions act on the gateway as an
//! operator: a second, operator-role connection opened on first use with the node's shared
//! gateway secret ([`OperatorAccess`]); a node paired by setup code holds only its node
//! credential, and they then say which secret to give. That connection proves a device key of its
//! own (`<data-dir>/operator/`, never the node's: a key paired as one role needs a new approval
//! for the other), because a gateway keeps a device-less client's scopes only on direct loopback
//! and strips them for everyone else; a remote gateway then holds the operator device for one
//! `openclaw devices approve`, which the tools name. The tray's `app.navigate` and `app.menu`
//! have no headless meaning and say so. `app.chat.*` talk to a session through the gateway's
//! chat methods; `app.search` searches this node's own tools and settings (the headless
//! counterpart of the tray's command palette).
//!
//! `app.connection.applySetupCode` and `connectSharedToken` point this machine's node at the
//! gateway a client names: that gateway's operators then reach every command the node serves,
//! so they are served only while the owner's switch `AppConnectionChangesEnabled` is on (off by
//! default, read live; the upstream tray has no such switch). They join as `clawmcp node --pair` /
//! `--gateway-token-file` would: the new gateway is saved (the token in a 0600 file of the data
//! dir, never in settings.json), credentials and pins saved for the previous gateway are dropped,
//! the old link is closed only once the new one resolves, and the answer waits (bounded) for
//! the gateway's verdict: connected, paired, or the approval it waits for.
//!
//! `app.settings.set` only tightens: an agent can switch `system.run` off or shrink the sandbox's
//! limits, never the reverse (`Settings::widening_in`); the refusal names the `clawmcp settings
//! set` command the owner runs instead. It shares its parsing with that command.

use std::sync::{Arc, Weak};

use clap::ValueEnum;
use clawmcp_gateway::http::gateway_http_url;
use clawmcp_gateway::{
    ClientOptions, Credentials, DeviceIdentity, DeviceTokenStore, GatewayClient, GatewayError, TlsFingerprint,
    UpgradeHeader,
};
use clawmcp_mcp::ToolAnnotations;
use clawmcp_mcp::tool::codes::{INVALID_REQUEST, UNAVAILABLE};
use clawmcp_node::availability::{Gate, Switch};
use clawmcp_node::capability::Command;
use clawmcp_node::settings::{LiveSettings, Settings};
use clawmcp_node::{CapabilityError, CommandSpec, InvokeResult, Registry};
use clawmcp_node_gateway::status::{ConnectionState, GatewayStatus, Pairing};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::args::SettingKey;
use crate::commands::node_status::StatusView;
use crate::commands::settings::{apply, value_of};

/// What the app tools ask of the node's transport loop.
pub enum Control {
    /// Close the gateway link and open it again; the answer says what happened.
    ReconnectGateway { reply: oneshot::Sender<Result<String, String>> },
    /// Join another gateway (or the same one with new credentials); the answer is the new
    /// link's status to watch, or why nothing changed.
    Join { join: Join, reply: oneshot::Sender<Result<watch::Receiver<GatewayStatus>, String>> },
}

/// The gateway `app.connection.applySetupCode` / `connectSharedToken` name.
pub enum Join {
    /// A setup code (`oc-pair://...` or the bare code), as `clawmcp node --pair` takes it.
    SetupCode(String),
    /// A gateway URL and its shared token (`gateway.auth.token`).
    SharedToken { url: String, token: String },
}

/// What the app tools read and act on.
#[derive(Clone)]
pub struct AppContext {
    pub status: StatusView,
    pub settings: Arc<LiveSettings>,
    pub control: mpsc::Sender<Control>,
    /// Weak: the registry holds these tools.
    pub registry: Weak<Registry>,
    pub operator: Arc<OperatorAccess>,
}

/// Where the operator connection goes, with which secret and device key, resolved when first
/// needed.
pub struct OperatorTarget {
    pub url: String,
    pub credentials: Credentials,
    pub tls_fingerprint: Option<TlsFingerprint>,
    /// The node's `--gateway-header`s: a proxy in front of the gateway asks the operator
    /// connection for them too.
    pub headers: Vec<UpgradeHeader>,
    /// The operator's own device key (`<data-dir>/operator/device-identity.json`).
    pub device: Arc<DeviceIdentity>,
    /// Where the device token the gateway issues this operator device is kept.
    pub device_tokens: Arc<DeviceTokenStore>,
}

type ResolveTarget = dyn Fn() -> Result<OperatorTarget, String> + Send + Sync;

/// The node's operator-role connection to its gateway, opened on first use and kept.
pub struct OperatorAccess {
    target: Box<ResolveTarget>,
    client: tokio::sync::Mutex<Option<GatewayClient>>,
}

/// The scopes the operator tools use: reading nodes and sessions, chat, pairing decisions (and
/// admin, which approving a surface with `system.run` in it needs).
const OPERATOR_SCOPES: &[&str] = &["operator.read", "operator.write", "operator.pairing", "operator.admin"];

impl OperatorAccess {
    pub fn new(target: impl Fn() -> Result<OperatorTarget, String> + Send + Sync + 'static) -> Self {
        OperatorAccess { target: Box::new(target), client: tokio::sync::Mutex::new(None) }
    }

    /// Closes the operator connection, if open: the node now belongs to another gateway, and
    /// the next operator tool connects to that one.
    pub async fn forget(&self) {
        if let Some(client) = self.client.lock().await.take() {
            client.close().await;
        }
    }

    /// `method` on the gateway as an operator, for `tool`.
    async fn request(&self, tool: &str, method: &str, params: Value) -> InvokeResult {
        let mut slot = self.client.lock().await;
        if slot.as_ref().is_none_or(|client| !client.is_connected()) {
            let target = (self.target)().map_err(CapabilityError::new)?;
            // A device token issued to this operator device earlier is a credential of its own.
            if target.credentials.is_empty() && target.device_tokens.load().is_none() {
                return Err(CapabilityError::new(format!(
                    "{tool} acts on the gateway at {} as an operator, and this node holds only its node credential \
                     (a device token from pairing). Give it the gateway's shared secret: clawmcp node \
                     --gateway-token-file FILE (or --gateway-password-file).",
                    target.url
                )));
            }
            let mut options = ClientOptions::operator(target.url.clone(), &target.credentials, OPERATOR_SCOPES);
            options.tls_fingerprint = target.tls_fingerprint;
            // A setup code enrolls the node's device, once: never this one.
            options.auth.bootstrap_token = None;
            options.headers = target.headers;
            options.device = Some(target.device.clone());
            options.device_tokens = Some(target.device_tokens);
            let client = GatewayClient::connect(options)
                .await
                .map_err(|error| operator_refused(tool, &target.url, &target.device, &error))?;
            *slot = Some(client);
        }
        let client = slot.as_ref().expect("connected above");
        client.request(method, params).await.map_err(|error| {
            CapabilityError::new(format!("{tool}: the gateway refused {method}: {error}")).with_code(UNAVAILABLE)
        })
    }
}

/// Why the operator connection could not open, with the operator's next step. A gateway that
/// does not know this operator device yet (any but a direct-loopback one) holds it for approval
/// and names the request; the next call after `openclaw devices approve` gets in.
fn operator_refused(tool: &str, url: &str, device: &DeviceIdentity, error: &GatewayError) -> CapabilityError {
    let failure = match clawmcp_node_gateway::status::device_pairing_request(error) {
        Some(request_id) => format!(
            "{tool}: the gateway at {url} holds this node's operator device ({}) for approval: run `openclaw devices \
             approve {request_id}` on the gateway host, then call {tool} again ({error})",
            device.device_id()
        ),
        None if error.detail_code() == Some("PAIRING_REQUIRED") => format!(
            "{tool}: the gateway at {url} holds this node's operator device ({}) for approval: run `openclaw devices \
             list`, then `openclaw devices approve <requestId>` on the gateway host, and call {tool} again ({error})",
            device.device_id()
        ),
        None => format!("{tool}: cannot reach the gateway as an operator: {error}"),
    };
    CapabilityError::new(failure).with_code(UNAVAILABLE)
}

/// The app tools, local-only.
pub fn commands(context: AppContext) -> Vec<Command> {
    let headless = |name: &'static str, what: &'static str| {
        spec(name, what, no_args(), ToolAnnotations::READ_ONLY).with_handler(move |_request, _ctx| async move {
            Err(CapabilityError::new(format!(
                "{name} is not available on a headless node: it drives the Windows tray's {what}, which clawmcp has \
                 none of. `clawmcp node status` and app.connection.status show the node's state."
            )))
        })
    };
    let status = with(&context, |app, _| Ok(app_status(app)));
    let connection = with(&context, |app, _| Ok(connection_status(app)));
    let gateways = with(&context, |app, _| Ok(saved_gateways(&app.settings.current())));
    let settings_get = with(&context, |app, args| settings_get(&app.settings.current(), args));
    let settings_set = with(&context, |app, args| settings_set(&app.settings, args));
    let config_get = with(&context, |app, args| config_get(&app.settings.current(), args));
    let dashboard = with(&context, |app, args| dashboard_url(&app.settings.current(), args));
    let operator = |name: &'static str,
                    description: &'static str,
                    schema: Value,
                    annotations,
                    method: &'static str,
                    params: fn(&Map<String, Value>) -> Result<Value, CapabilityError>| {
        let access = context.operator.clone();
        spec(name, description, schema, annotations).with_handler(move |request, _ctx| {
            let access = access.clone();
            async move { access.request(name, method, params(&request.args)?).await }
        })
    };
    let pending = {
        let access = context.operator.clone();
        spec(
            "app.connection.pendingApprovals",
            "Pairing requests waiting on the gateway: devices (device.pair.list) and node command surfaces \
             (node.pair.list), each with the requestId the approve/reject tools take.",
            no_args(),
            ToolAnnotations::READ_ONLY,
        )
        .with_handler(move |_request, _ctx| {
            let access = access.clone();
            async move {
                let tool = "app.connection.pendingApprovals";
                let devices = access.request(tool, "device.pair.list", json!({})).await?;
                let nodes = access.request(tool, "node.pair.list", json!({})).await?;
                Ok(json!({"devices": devices["pending"], "nodes": nodes["pending"]}))
            }
        })
    };
    // Served only while the owner allows it: see the module's documentation.
    let changes = Gate::new(context.settings.clone(), Some(&Switch::APP_CONNECTION_CHANGES), || Ok(()));
    let join = |name: &'static str,
                description: &'static str,
                schema: Value,
                parse: fn(&Map<String, Value>) -> Result<Join, CapabilityError>| {
        let (control, gate) = (context.control.clone(), changes.clone());
        changes.apply(spec(name, description, schema, ToolAnnotations::DESTRUCTIVE).with_handler(
            move |request, ctx| {
                let (control, gate) = (control.clone(), gate.clone());
                async move {
                    gate.admit(name)?;
                    let join = parse(&request.args)?;
                    join_gateway(name, &control, join, &ctx.cancel).await
                }
            },
        ))
    };
    let session_schema = |extra: Value| {
        let mut properties = json!({"sessionKey": {"type": "string", "description": "Default agent:main:main."}});
        properties.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
        json!({"type": "object", "properties": properties, "additionalProperties": false})
    };
    let search = with(&context, search);
    let request_id = || {
        json!({"type": "object", "properties": {"requestId": {"type": "string", "minLength": 1},
                                                "id": {"type": "string", "minLength": 1, "description": "Alias of requestId."}},
               "additionalProperties": false})
    };
    let reconnect = |name: &'static str| {
        let control = context.control.clone();
        spec(name, RECONNECT, no_args(), ToolAnnotations::ADDITIVE).with_handler(move |_request, _ctx| {
            let control = control.clone();
            async move { reconnect_gateway(&control).await }
        })
    };
    [
        spec(
            "app.status",
            "Summary of this node: version, MCP listener, gateway link, tools served.",
            no_args(),
            ToolAnnotations::READ_ONLY,
        )
        .with_handler(status),
        spec(
            "app.connection.status",
            "Connection diagnostics of this node: the MCP listener and the gateway link (state, node id, pairing, \
             request id, last error, and the command that fixes it), as `clawmcp node status --json` shows them.",
            no_args(),
            ToolAnnotations::READ_ONLY,
        )
        .with_handler(connection),
        spec(
            "app.connection.gateways",
            "The gateway this node is set to join, with whether each credential is present and where it comes from; \
             never a secret's value.",
            no_args(),
            ToolAnnotations::READ_ONLY,
        )
        .with_handler(gateways),
        reconnect("app.connection.reconnect"),
        reconnect("app.connection.reconnectNode"),
        spec(
            "app.settings.get",
            "One setting by name (EnableNodeMode, EnableMcpServer, NodeSystemRunEnabled, SystemRunSandbox.*), or all \
             of them without a name.",
            json!({"type": "object", "properties": {"name": {"type": "string", "enum": setting_names()}},
                   "additionalProperties": false}),
            ToolAnnotations::READ_ONLY,
        )
        .with_handler(settings_get),
        spec(
            "app.settings.set",
            "Change one setting, applied at once. Only changes that tighten are accepted here (switch system.run or \
             a transport off, narrow the sandbox); widening ones are refused with the `clawmcp settings set` command \
             the machine's owner runs instead.",
            json!({"type": "object", "properties": {
                       "name": {"type": "string", "enum": setting_names()},
                       "value": {"type": ["string", "boolean", "integer", "null"],
                                 "description": "true/false, a number, none (no limit), or colon-separated paths"}},
                   "required": ["name", "value"], "additionalProperties": false}),
            ToolAnnotations::ADDITIVE,
        )
        .with_handler(settings_set),
        spec(
            "app.config.get",
            "This node's settings.json with defaults filled in, or the value at a dot path in it \
             (e.g. SystemRunSandbox.MemoryMiB).",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "additionalProperties": false}),
            ToolAnnotations::READ_ONLY,
        )
        .with_handler(config_get),
        spec(
            "app.dashboard.url",
            "The gateway's web dashboard URL (http(s) on the gateway's host and port), optionally at a path. No \
             token is put in the URL.",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "additionalProperties": false}),
            ToolAnnotations::READ_ONLY,
        )
        .with_handler(dashboard),
        operator(
            "app.nodes",
            "The nodes the gateway knows (node.list): ids, names, platforms, commands, connection and approval state.",
            no_args(),
            ToolAnnotations::READ_ONLY,
            "node.list",
            |_| Ok(json!({})),
        ),
        operator(
            "app.sessions",
            "The gateway's sessions (sessions.list), newest first, at most limit (default 50).",
            json!({"type": "object", "properties": {"limit": {"type": "integer", "minimum": 1, "maximum": 500}},
                   "additionalProperties": false}),
            ToolAnnotations::READ_ONLY,
            "sessions.list",
            |args| Ok(json!({"limit": args.get("limit").and_then(Value::as_u64).unwrap_or(50).clamp(1, 500)})),
        ),
        operator(
            "app.agents",
            "The gateway's agents (agents.list).",
            no_args(),
            ToolAnnotations::READ_ONLY,
            "agents.list",
            |_| Ok(json!({})),
        ),
        pending,
        operator(
            "app.connection.approveDevicePairing",
            "Approve a device's pairing request (device.pair.approve) by its requestId.",
            request_id(),
            ToolAnnotations::ADDITIVE,
            "device.pair.approve",
            request_id_params,
        ),
        operator(
            "app.connection.rejectDevicePairing",
            "Reject a device's pairing request (device.pair.reject) by its requestId.",
            request_id(),
            ToolAnnotations::ADDITIVE,
            "device.pair.reject",
            request_id_params,
        ),
        operator(
            "app.connection.approveNodePairing",
            "Approve a node's command surface (node.pair.approve) by its requestId.",
            request_id(),
            ToolAnnotations::ADDITIVE,
            "node.pair.approve",
            request_id_params,
        ),
        operator(
            "app.connection.rejectNodePairing",
            "Reject a node's command surface (node.pair.reject) by its requestId.",
            request_id(),
            ToolAnnotations::ADDITIVE,
            "node.pair.reject",
            request_id_params,
        ),
        operator(
            "app.chat.snapshot",
            "A session's recent transcript (chat.history), at most limit entries (default 50).",
            session_schema(json!({"limit": {"type": "integer", "minimum": 1, "maximum": 1000}})),
            ToolAnnotations::READ_ONLY,
            "chat.history",
            |args| {
                let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(50).clamp(1, 1000);
                Ok(json!({"sessionKey": chat_session(args), "limit": limit}))
            },
        ),
        operator(
            "app.chat.send",
            "Send a message to a session as the operator (chat.send); the session's agent answers there.",
            session_schema(json!({"message": {"type": "string", "minLength": 1}})),
            ToolAnnotations::ADDITIVE,
            "chat.send",
            |args| {
                let message = args.get("message").and_then(Value::as_str).filter(|m| !m.trim().is_empty());
                let message = message.ok_or_else(|| {
                    CapabilityError::new("message is required (the text to send)").with_code(INVALID_REQUEST)
                })?;
                Ok(json!({"sessionKey": chat_session(args), "message": message,
                          "idempotencyKey": clawmcp_node::registry::new_invoke_id()}))
            },
        ),
        operator(
            "app.chat.reset",
            "Start a session afresh (sessions.reset): its transcript is set aside and the next message begins anew.",
            session_schema(json!({})),
            ToolAnnotations::DESTRUCTIVE,
            "sessions.reset",
            |args| Ok(json!({"key": chat_session(args), "reason": "reset"})),
        ),
        spec(
            "app.search",
            "Search this node's tools and settings by name or description; at most 10 matches {title, subtitle, kind}.",
            json!({"type": "object", "properties": {"query": {"type": "string", "minLength": 1}},
                   "required": ["query"], "additionalProperties": false}),
            ToolAnnotations::READ_ONLY,
        )
        .with_handler(search),
        join(
            "app.connection.applySetupCode",
            "Join the gateway a setup code names (`openclaw qr --setup-code-only`, or Control UI > Devices > Node \
             host), as `clawmcp node --pair` does: the gateway's URL and pin are saved, its single-use bootstrap token \
             pairs this node, and the device token it issues is the credential from then on. Answers {outcome, \
             error, gatewayUrl, connected} once the gateway has answered (at most 10 s). Only while the owner has \
             turned AppConnectionChangesEnabled on.",
            json!({"type": "object", "properties": {"setupCode": {"type": "string", "minLength": 1,
                       "description": "oc-pair://<code> or the bare code"}},
                   "required": ["setupCode"], "additionalProperties": false}),
            setup_code_join,
        ),
        join(
            "app.connection.connectSharedToken",
            "Join the gateway at gatewayUrl with its shared token (gateway.auth.token), as `clawmcp node \
             --gateway-url URL --gateway-token-file FILE` does: the URL is saved, the token in a 0600 file of the data \
             dir (never in settings.json). Answers {outcome, error, gatewayUrl, connected} once the gateway has \
             answered (at most 10 s). Only while the owner has turned AppConnectionChangesEnabled on.",
            json!({"type": "object", "properties": {
                       "gatewayUrl": {"type": "string", "minLength": 1, "description": "wss://, or ws:// to a loopback host"},
                       "token": {"type": "string", "minLength": 1, "maxLength": MAX_SHARED_TOKEN_BYTES}},
                   "required": ["gatewayUrl", "token"], "additionalProperties": false}),
            shared_token_join,
        ),
        headless("app.navigate", "pages"),
        headless("app.menu", "tray menu"),
    ]
    .into_iter()
    .map(Command::local_only)
    .collect()
}

const RECONNECT: &str = "Close this node's gateway connection and open it again (a new handshake, the device token \
                         kept). This node holds one gateway connection, its node link, so reconnect and reconnectNode \
                         do the same.";

fn spec(name: &'static str, description: &'static str, schema: Value, annotations: ToolAnnotations) -> CommandSpec {
    CommandSpec {
        name,
        title: None,
        description: Some(description),
        input_schema: Some(schema.into()),
        output_schema: None,
        annotations,
    }
}

fn no_args() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

/// A synchronous handler over the context and the arguments.
fn with(
    context: &AppContext,
    answer: fn(&AppContext, &Map<String, Value>) -> InvokeResult,
) -> impl Fn(clawmcp_node::InvokeRequest, clawmcp_mcp::CallContext) -> std::future::Ready<InvokeResult> + Send + Sync + 'static
{
    let context = context.clone();
    move |request, _ctx| std::future::ready(answer(&context, &request.args))
}

fn app_status(app: &AppContext) -> Value {
    let status = app.status.json();
    let gateway = &status["gateway"];
    let summary: Map<String, Value> = ["state", "url", "nodeId", "displayName", "pairing"]
        .iter()
        .filter_map(|key| gateway.get(*key).map(|value| ((*key).to_owned(), value.clone())))
        .collect();
    let tools = app.registry.upgrade().map_or(0, |registry| registry.listed().len());
    json!({
        "version": status["version"],
        "pid": status["pid"],
        "startedAtMs": status["startedAtMs"],
        "mcp": status["mcp"],
        "gateway": summary,
        "tools": tools,
    })
}

fn connection_status(app: &AppContext) -> Value {
    let status = app.status.json();
    json!({"mcp": status["mcp"], "gateway": status["gateway"]})
}

/// Where a credential comes from, never its value.
fn credential(file: Option<&std::path::Path>, env: &str) -> Value {
    match file {
        Some(path) => {
            let present = std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.len() > 0);
            json!({"present": present, "source": "file", "file": path.display().to_string()})
        }
        None if std::env::var_os(env).is_some_and(|value| !value.is_empty()) => {
            json!({"present": true, "source": "environment", "variable": env})
        }
        None => json!({"present": false, "source": "none"}),
    }
}

fn saved_gateways(settings: &Settings) -> Value {
    let Some(url) = &settings.gateway_url else {
        return json!({"gateways": [], "note": "no gateway saved: `clawmcp node --gateway-url URL --gateway-token-file FILE` joins one"});
    };
    json!({"gateways": [{
        "url": url,
        "active": settings.enable_node_mode,
        "displayName": settings.node_display_name,
        "token": credential(settings.gateway_token_file.as_deref(), "OPENCLAW_GATEWAY_TOKEN"),
        "password": credential(settings.gateway_password_file.as_deref(), "OPENCLAW_GATEWAY_PASSWORD"),
    }]})
}

fn setting_names() -> Vec<String> {
    SettingKey::value_variants()
        .iter()
        .filter_map(|key| key.to_possible_value().map(|value| value.get_name().to_owned()))
        .collect()
}

fn setting_key(args: &Map<String, Value>) -> Result<Option<SettingKey>, CapabilityError> {
    match args.get("name") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(name)) => SettingKey::from_str(name, true).map(Some).map_err(|_| {
            CapabilityError::new(format!("Setting '{name}' is not accessible; known: {}", setting_names().join(", ")))
                .with_code(INVALID_REQUEST)
        }),
        Some(_) => Err(CapabilityError::new("name must be a string").with_code(INVALID_REQUEST)),
    }
}

fn settings_get(settings: &Settings, args: &Map<String, Value>) -> InvokeResult {
    match setting_key(args)? {
        Some(key) => Ok(json!({"name": name_of(key), "value": value_of(settings, key)})),
        None => {
            let all: Map<String, Value> =
                SettingKey::value_variants().iter().map(|key| (name_of(*key), value_of(settings, *key))).collect();
            Ok(json!({"settings": all}))
        }
    }
}

fn name_of(key: SettingKey) -> String {
    key.to_possible_value().map(|value| value.get_name().to_owned()).unwrap_or_default()
}

fn settings_set(live: &LiveSettings, args: &Map<String, Value>) -> InvokeResult {
    let invalid = |message: String| CapabilityError::new(message).with_code(INVALID_REQUEST);
    let key = setting_key(args)?.ok_or_else(|| invalid("name is required".into()))?;
    let text = match args.get("value") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Bool(on)) => on.to_string(),
        Some(Value::Number(number)) => number.to_string(),
        Some(Value::Null) => "none".into(),
        _ => return Err(invalid("value is required: true/false, a number, none, or paths".into())),
    };
    let before = live.current();
    let mut after = before.clone();
    apply(&mut after, key, &text).map_err(invalid)?;
    after.system_run_sandbox.validate().map_err(invalid)?;
    let name = name_of(key);
    if let Some(widened) = before.widening_in(&after) {
        return Err(CapabilityError::new(format!(
            "{name} = {text} would widen what this node lets run or reach ({widened}); an agent may only tighten \
             settings. The machine's owner can run: clawmcp settings set {name} {text}"
        ))
        .with_code(INVALID_REQUEST));
    }
    after.save(live.path()).map_err(|error| CapabilityError::new(error.to_string()))?;
    Ok(json!({"name": name, "value": value_of(&after, key), "saved": live.path().display().to_string()}))
}

fn config_get(settings: &Settings, args: &Map<String, Value>) -> InvokeResult {
    let document = serde_json::to_value(settings).map_err(|error| CapabilityError::new(error.to_string()))?;
    let Some(path) = args.get("path").and_then(Value::as_str).filter(|path| !path.is_empty()) else {
        return Ok(document);
    };
    let mut at = &document;
    for part in path.split('.') {
        at = at.get(part).ok_or_else(|| {
            CapabilityError::new(format!("settings.json has no `{path}` (no `{part}` there)"))
                .with_code(INVALID_REQUEST)
        })?;
    }
    Ok(json!({"path": path, "value": at}))
}

fn dashboard_url(settings: &Settings, args: &Map<String, Value>) -> InvokeResult {
    let Some(url) = &settings.gateway_url else {
        return Err(CapabilityError::new(
            "no gateway is saved for this node: `clawmcp node --gateway-url URL --gateway-token-file FILE` joins one",
        ));
    };
    let path = args.get("path").and_then(Value::as_str).unwrap_or("/");
    let web = gateway_http_url(url, path).map_err(|error| CapabilityError::new(error.to_string()))?;
    Ok(
        json!({"url": web.to_string(), "credentialSource": "none", "usesSharedGatewayToken": false, "hasTokenQuery": false}),
    )
}

/// The session the chat tools talk to when the call names none.
const MAIN_SESSION: &str = "agent:main:main";

fn chat_session(args: &Map<String, Value>) -> String {
    let named = args.get("sessionKey").and_then(Value::as_str).map(str::trim).filter(|key| !key.is_empty());
    named.unwrap_or(MAIN_SESSION).to_owned()
}

/// The most matches `app.search` answers, as the tray's palette shows.
const MAX_SEARCH_RESULTS: usize = 10;

fn search(app: &AppContext, args: &Map<String, Value>) -> InvokeResult {
    let query = args.get("query").and_then(Value::as_str).map(str::trim).unwrap_or_default().to_lowercase();
    if query.is_empty() {
        return Err(CapabilityError::new("query is required").with_code(INVALID_REQUEST));
    }
    let tools = app.registry.upgrade().map(|registry| registry.listed()).unwrap_or_default();
    let tool_hits = tools.iter().map(|command| command.tool()).filter_map(|tool| {
        let hit = tool.name.to_lowercase().contains(&query) || tool.description.to_lowercase().contains(&query);
        hit.then(|| json!({"title": tool.name, "subtitle": tool.description.chars().take(120).collect::<String>(), "kind": "tool"}))
    });
    let setting_hits = setting_names().into_iter().filter(|name| name.to_lowercase().contains(&query)).map(
        |name| json!({"title": name, "subtitle": "setting (app.settings.get / app.settings.set)", "kind": "setting"}),
    );
    let results: Vec<Value> = tool_hits.chain(setting_hits).take(MAX_SEARCH_RESULTS).collect();
    Ok(json!({"query": query, "results": results}))
}

/// `{requestId}` from `requestId` or its alias `id` (the tray takes either).
fn request_id_params(args: &Map<String, Value>) -> Result<Value, CapabilityError> {
    let id = ["requestId", "id"].iter().find_map(|key| args.get(*key).and_then(Value::as_str)).map(str::trim);
    match id.filter(|id| !id.is_empty()) {
        Some(id) => Ok(json!({"requestId": id})),
        None => Err(CapabilityError::new(
            "requestId is required: the id app.connection.pendingApprovals lists (or `openclaw devices|nodes pending`)",
        )
        .with_code(INVALID_REQUEST)),
    }
}

async fn reconnect_gateway(control: &mpsc::Sender<Control>) -> InvokeResult {
    let (reply, answer) = oneshot::channel();
    let gone = || CapabilityError::new("the node is shutting down");
    control.send(Control::ReconnectGateway { reply }).await.map_err(|_| gone())?;
    match answer.await.map_err(|_| gone())? {
        Ok(note) => Ok(json!({"reconnecting": true, "note": note})),
        Err(reason) => Err(CapabilityError::new(reason)),
    }
}

/// The longest shared token `connectSharedToken` takes (OpenClaw's are 32-64 characters): a
/// bound on what is written to the data dir.
const MAX_SHARED_TOKEN_BYTES: usize = 4096;

fn required_text<'a>(args: &'a Map<String, Value>, key: &str, what: &str) -> Result<&'a str, CapabilityError> {
    args.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .ok_or_else(|| CapabilityError::new(format!("Missing required arg: {key} ({what})")).with_code(INVALID_REQUEST))
}

fn setup_code_join(args: &Map<String, Value>) -> Result<Join, CapabilityError> {
    let code = required_text(args, "setupCode", "oc-pair://<code> from `openclaw qr --setup-code-only`")?;
    Ok(Join::SetupCode(code.to_owned()))
}

fn shared_token_join(args: &Map<String, Value>) -> Result<Join, CapabilityError> {
    let url = required_text(args, "gatewayUrl", "the gateway's wss:// URL, or ws:// on a loopback host")?;
    let token = required_text(args, "token", "the gateway's gateway.auth.token")?;
    // A token goes into a header and a file: one line of printable text, bounded.
    if token.len() > MAX_SHARED_TOKEN_BYTES || token.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(CapabilityError::new(format!(
            "token must be the gateway's shared token: one word of at most {MAX_SHARED_TOKEN_BYTES} bytes with no \
             spaces or control characters (`openclaw config get gateway.auth.token` on the gateway host shows it)"
        ))
        .with_code(INVALID_REQUEST));
    }
    Ok(Join::SharedToken { url: url.to_owned(), token: token.to_owned() })
}

/// How long a join waits for the gateway's verdict before answering with the state so far.
const JOIN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Whether `status` is the gateway's verdict on a new link: in and judged (paired, pending,
/// rejected), held for device approval, refused, or stopped for good.
fn settled(status: &GatewayStatus) -> bool {
    match status.state {
        ConnectionState::Stopped => true,
        ConnectionState::Connected => status.pairing != Pairing::Unknown,
        ConnectionState::Connecting => status.pairing == Pairing::DevicePending || status.last_error.is_some(),
    }
}

async fn join_gateway(
    tool: &str,
    control: &mpsc::Sender<Control>,
    join: Join,
    cancel: &CancellationToken,
) -> InvokeResult {
    let (reply, answer) = oneshot::channel();
    let gone = || CapabilityError::new("the node is shutting down");
    control.send(Control::Join { join, reply }).await.map_err(|_| gone())?;
    let mut status = answer.await.map_err(|_| gone())?.map_err(|reason| {
        CapabilityError::new(format!("{tool}: nothing changed: {reason}")).with_code(INVALID_REQUEST)
    })?;
    tokio::select! {
        () = cancel.cancelled() => {}
        _ = tokio::time::timeout(JOIN_WAIT, status.wait_for(settled)) => {}
    }
    let now = status.borrow().clone();
    if now.state == ConnectionState::Stopped {
        let why = now.last_error.unwrap_or_else(|| "the connection stopped".to_owned());
        let hint = now.hint.map(|hint| format!("; {hint}")).unwrap_or_default();
        return Err(CapabilityError::new(format!("{tool}: the gateway at {} refused this node: {why}{hint}", now.url))
            .with_code(UNAVAILABLE));
    }
    let connected = now.state == ConnectionState::Connected;
    let mut answer = json!({
        "outcome": "Success",
        "error": now.last_error,
        "gatewayUrl": now.url,
        "connected": connected,
        "state": now.state,
        "pairing": now.pairing,
    });
    if let Some(request_id) = now.request_id {
        answer["requestId"] = json!(request_id);
    }
    let hint = now.hint.or_else(|| {
        (!settled(&status.borrow()))
            .then(|| "still connecting; app.connection.status (or `clawmcp node status`) shows how it goes".to_owned())
    });
    if let Some(hint) = hint {
        answer["hint"] = json!(hint);
    }
    Ok(answer)
}
