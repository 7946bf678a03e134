//! The test harness: a `clawmcp serve` session over in-memory stdio pipes against the in-repo
//! fake gateway, and a minimal MCP client that keeps notifications apart from responses.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use clawmcp_serve::{ClaudeChannelMode, ConnectOverrides, Env, Secret, ServeError, ServeExit, ServeOptions};
use clawmcp_testkit::{FakeGateway, Reply};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The fake's default token.
pub const TOKEN: &str = "fake-gateway-token";

/// The seeded session of the golden transcripts.
pub const SESSION: &str = "agent:main:main";

/// Awaits `future`, failing the test after an hour of (virtual) time instead of hanging.
pub async fn within<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(3600), future).await.expect("the test waited an hour of virtual time")
}

/// A fake gateway that accepts `sessions.subscribe` like the real one.
pub async fn gateway() -> FakeGateway {
    gateway_with(clawmcp_testkit::FakeConfig::default()).await
}

pub async fn gateway_with(config: clawmcp_testkit::FakeConfig) -> FakeGateway {
    let fake = FakeGateway::start_with(config).await;
    fake.on("sessions.subscribe", |_| Reply::Ok(json!({"subscribed": true})));
    fake
}

/// The seeded row of the golden transcripts, as `sessions.list`/`sessions.describe` return it.
pub fn seeded_row() -> Value {
    json!({
        "key": SESSION, "kind": "direct", "displayName": "Harness Seeded Conversation",
        "derivedTitle": "Harness Seeded Conversation", "lastMessagePreview": "seeded image attachment",
        "channel": "imessage", "origin": {"provider": "imessage", "to": "+15551234567", "accountId": "imessage-default", "threadId": "thread-42"},
        "updatedAt": 1_795_991_581_121u64, "label": null,
        "deliveryContext": {"channel": "imessage", "to": "+15551234567", "accountId": "imessage-default", "threadId": "thread-42"},
        "lastChannel": "imessage", "lastTo": "+15551234567", "lastAccountId": "imessage-default", "lastThreadId": "thread-42",
    })
}

/// A `session.message` payload like the gateway's (top-level route fields, nested message).
pub fn session_message(role: &str, text: &str, owner: Option<bool>, message_id: &str) -> Value {
    let mut payload = json!({
        "sessionKey": SESSION, "agentId": "main",
        "message": {"role": role, "content": text, "timestamp": 1_795_991_619_866u64, "__openclaw": {"id": message_id, "seq": 5}},
        "messageId": message_id, "messageSeq": 5,
        "lastChannel": "imessage", "lastTo": "+15551234567", "lastAccountId": "imessage-default", "lastThreadId": "thread-42",
    });
    if let Some(owner) = owner {
        payload["senderIsOwner"] = owner.into();
    }
    payload
}

/// Options for `fake` with the right token, a fresh device key and `mode`.
pub fn options(fake: &FakeGateway, mode: ClaudeChannelMode) -> (ServeOptions, TempDir) {
    let identity = tempfile::tempdir().unwrap();
    let connect =
        ConnectOverrides { url: Some(fake.url()), token: Some(Secret::new(TOKEN)), ..ConnectOverrides::default() };
    let mut options = ServeOptions::new(connect, Env::default());
    options.claude_channel_mode = mode;
    options.identity_dir = Some(identity.path().join("serve"));
    (options, identity)
}

/// One running `clawmcp serve` session and the client end of its pipes.
pub struct Session {
    input: Option<DuplexStream>,
    output: Lines<BufReader<DuplexStream>>,
    done: Option<JoinHandle<Result<ServeExit, ServeError>>>,
    pub shutdown: CancellationToken,
    notifications: VecDeque<Value>,
    next_id: u64,
    _identity: Option<TempDir>,
}

impl Session {
    /// Starts with the defaults for `fake` (Claude mode `auto`) and initializes.
    pub async fn start(fake: &FakeGateway) -> Session {
        Session::start_mode(fake, ClaudeChannelMode::Auto).await
    }

    pub async fn start_mode(fake: &FakeGateway, mode: ClaudeChannelMode) -> Session {
        let (options, identity) = options(fake, mode);
        let mut session = Session::spawn(options, Some(identity));
        session.initialize().await;
        session
    }

    /// Starts without initializing.
    pub fn spawn(options: ServeOptions, identity: Option<TempDir>) -> Session {
        let (client_in, server_in) = tokio::io::duplex(1 << 22);
        let (server_out, client_out) = tokio::io::duplex(1 << 22);
        let shutdown = CancellationToken::new();
        let done = tokio::spawn(clawmcp_serve::run_with_io(options, server_in, server_out, shutdown.clone()));
        Session {
            input: Some(client_in),
            output: BufReader::new(client_out).lines(),
            done: Some(done),
            shutdown,
            notifications: VecDeque::new(),
            next_id: 0,
            _identity: identity,
        }
    }

    pub async fn initialize(&mut self) -> Value {
        let result = self
            .request("initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "0"}}))
            .await;
        self.notify("notifications/initialized", json!({})).await;
        result["result"].clone()
    }

    pub async fn send(&mut self, frame: &Value) {
        let input = self.input.as_mut().expect("stdin is open");
        input.write_all(format!("{frame}\n").as_bytes()).await.unwrap();
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params})).await;
    }

    /// Sends a request and returns its id, without waiting for the answer.
    pub async fn send_request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        id
    }

    /// The next line of stdout, which must be JSON.
    async fn read_frame(&mut self) -> Option<Value> {
        let line = within(self.output.next_line()).await.unwrap()?;
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout carried a non-JSON line {line:?}: {e}")))
    }

    /// Reads until the response to `id`, keeping notifications for [`Session::notification`].
    pub async fn response(&mut self, id: u64) -> Value {
        loop {
            let frame = self.read_frame().await.expect("stdout closed before the response");
            if frame.get("id") == Some(&json!(id)) {
                return frame;
            }
            assert!(frame.get("id").is_none(), "a response to another request: {frame}");
            self.notifications.push_back(frame);
        }
    }

    /// Reads until every request in `ids` has its response (in any order); returns them by id.
    pub async fn responses(&mut self, ids: &[u64]) -> std::collections::BTreeMap<u64, Value> {
        let mut seen = std::collections::BTreeMap::new();
        while seen.len() < ids.len() {
            let frame = self.read_frame().await.expect("stdout closed before every response arrived");
            match frame.get("id").and_then(Value::as_u64) {
                Some(id) if ids.contains(&id) => assert!(seen.insert(id, frame).is_none(), "two answers to {id}"),
                Some(_) => panic!("a response to another request: {frame}"),
                None => self.notifications.push_back(frame),
            }
        }
        seen
    }

    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params).await;
        self.response(id).await
    }

    /// `tools/call` and its `result`.
    pub async fn call(&mut self, name: &str, arguments: Value) -> Value {
        let response = self.request("tools/call", json!({"name": name, "arguments": arguments})).await;
        response
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("a JSON-RPC error instead of a tool result: {response}"))
    }

    /// Sends `tools/call` without waiting.
    pub async fn start_call(&mut self, name: &str, arguments: Value) -> u64 {
        self.send_request("tools/call", json!({"name": name, "arguments": arguments})).await
    }

    pub async fn result(&mut self, id: u64) -> Value {
        self.response(id).await["result"].clone()
    }

    /// Notifications received so far that nobody has taken (after a round trip, so everything
    /// the server sent before answering a ping is in).
    pub async fn pending_notifications(&mut self) -> Vec<Value> {
        self.request("ping", json!({})).await;
        self.notifications.drain(..).collect()
    }

    /// Closes stdin and returns how the session ended, checking stdout closed too.
    pub async fn finish(mut self) -> Result<ServeExit, ServeError> {
        self.input = None;
        let outcome = within(self.done.take().unwrap()).await.unwrap();
        while let Some(frame) = self.read_frame().await {
            assert!(frame.get("id").is_some() || frame.get("method").is_some(), "{frame}");
        }
        outcome
    }

    /// How the session ended, without closing stdin (it ended by itself or by `shutdown`).
    pub async fn ended(&mut self) -> Result<ServeExit, ServeError> {
        within(self.done.take().unwrap()).await.unwrap()
    }
}

/// The text of a tool result's first block.
pub fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text block in {result}"))
}

pub fn is_error(result: &Value) -> bool {
    result["isError"] == true
}

/// Waits until the bridge has asked the gateway for session events. From then on everything the
/// fake emits reaches the bridge (it subscribed to its own event stream before asking).
pub async fn subscribed(fake: &FakeGateway, count: usize) {
    within(fake.wait_for_request("sessions.subscribe", count)).await;
}

/// `events_wait` for the first event after `after_cursor` (of `session_key`, if given).
pub async fn wait_event(session: &mut Session, after_cursor: u64, session_key: Option<&str>) -> Value {
    let mut arguments = json!({"after_cursor": after_cursor, "timeout_ms": 300_000});
    if let Some(key) = session_key {
        arguments["session_key"] = key.into();
    }
    let result = session.call("events_wait", arguments).await;
    assert!(!result["structuredContent"]["event"].is_null(), "no event: {result}");
    result["structuredContent"]["event"].clone()
}

/// Emits a marker message on its own session and waits until it is queued. The bridge handles
/// gateway events one at a time in order, so everything emitted before has been fully handled
/// (queued, consumed, notified). Returns the marker's cursor.
pub async fn barrier(session: &mut Session, fake: &FakeGateway) -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let key = format!("it:barrier:{}", NEXT.fetch_add(1, Ordering::Relaxed));
    assert_eq!(
        fake.emit("session.message", json!({"sessionKey": key, "message": {"role": "system", "content": "barrier"}})),
        1
    );
    wait_event(session, 0, Some(&key)).await["cursor"].as_u64().unwrap()
}
