//! The file channel over real loopback HTTP: a node's registry served by the real HTTP transport
//! in-process, driven by the real HTTP MCP client as an OpenClaw client drives it (open, attach
//! to `tools/call`, poll and input while the call runs, close). Random files of every edge size
//! go both ways and are compared by sha256; a client that stops polling loses its lease at the
//! timeout and leaves nothing behind; a token rotation ends the channels of the old token.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use clawmcp_http::client::McpClient;
use clawmcp_http::{HttpConfig, Limits};
use clawmcp_mcp::client::Answer;
use clawmcp_mcp::{DuplicatePolicy, McpServer, RequestId, ServerInfo};
use clawmcp_node::approvals::ExecApprovals;
use clawmcp_node::files::channel::client::{ChannelClient, ChannelRpc, RpcFailure};
use clawmcp_node::files::channel::frame;
use clawmcp_node::settings::{DataDir, LiveSettings, Settings};
use clawmcp_node::{NodeMcpService, Registry};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

struct Node {
    _dir: tempfile::TempDir,
    root: PathBuf,
    token_path: PathBuf,
    registry: Arc<Registry>,
    port: u16,
    stop: CancellationToken,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
    ids: AtomicI64,
}

impl Node {
    /// A node whose file roots are one private directory, its MCP service with the file channel
    /// (as `clawmcp node` builds it), on 127.0.0.1 at a free port.
    async fn start() -> Node {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap().join("root");
        std::fs::create_dir(&root).unwrap();
        let data = DataDir::at(dir.path().join("data"));
        data.ensure().unwrap();
        let mut settings = Settings::default();
        settings.node_file_roots = Some(vec![root.clone()]);
        settings.save(&data.settings_path()).unwrap();
        let settings = Arc::new(LiveSettings::open(data.settings_path()).unwrap());
        let approvals = Arc::new(ExecApprovals::open(data.exec_approvals_path()));
        let registry = Arc::new(Registry::builtin(settings, approvals));
        let service = NodeMcpService::new(registry.clone()).with_file_channel();
        let info = ServerInfo { name: "clawmcp-test".into(), version: "0".into() };
        let mcp = Arc::new(McpServer::new(info, Arc::new(service), DuplicatePolicy::Allow));
        let token_path = data.token_path();
        let config = HttpConfig { port: 0, token_path: token_path.clone(), limits: Limits::default() };
        let server = clawmcp_http::bind(config).await.unwrap();
        let port = server.local_addr().port();
        let stop = CancellationToken::new();
        let served = tokio::spawn(server.serve(mcp, stop.clone()));
        Node { _dir: dir, root, token_path, registry, port, stop, served, ids: AtomicI64::new(1) }
    }

    fn client(&self) -> McpClient {
        let token = clawmcp_http::token::read_token_file(&self.token_path).unwrap().unwrap();
        McpClient::loopback(self.port).with_bearer(Some(token)).with_timeout(Duration::from_secs(120))
    }

    fn open_channels(&self) -> usize {
        self.registry.file_channels().unwrap().open_count()
    }

    async fn stop(self) {
        self.stop.cancel();
        self.served.await.unwrap().unwrap();
    }

    /// Every name in the root, recursively (temp files included).
    fn names(&self) -> Vec<String> {
        fn walk(dir: &Path, out: &mut Vec<String>, base: &Path) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                out.push(path.strip_prefix(base).unwrap().display().to_string());
                if path.is_dir() {
                    walk(&path, out, base);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.root, &mut out, &self.root);
        out.sort();
        out
    }
}

/// A JSON-RPC request: the result, or the error's message.
async fn rpc(client: &McpClient, id: RequestId, method: &str, params: Value) -> Result<Value, String> {
    match client.request(&id, method, Some(&params)).await.unwrap() {
        Answer::Result(result) => Ok(result),
        Answer::Error(error) => Err(error.message),
    }
}

async fn method(node: &Node, client: &McpClient, method: &str, params: Value) -> Result<Value, String> {
    let id = RequestId::number(node.ids.fetch_add(1, Ordering::Relaxed));
    rpc(client, id, method, params).await
}

fn random(size: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; size];
    getrandom::fill(&mut bytes).unwrap();
    bytes
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The test's connection, for the one client implementation of the channel protocol
/// (`files::channel::client`, which `clawmcp call` drives too).
struct Rpc(McpClient);

impl ChannelRpc for Rpc {
    async fn request(&self, id: RequestId, method: &str, params: Value) -> Result<Value, RpcFailure> {
        RpcFailure::outcome(self.0.request(&id, method, Some(&params)).await)
    }

    /// Pipelined, as `clawmcp call` sends them: the node's HTTP server takes a chunk's inputs
    /// written back to back on one connection, in order.
    async fn request_in_order<I>(&self, method: &'static str, requests: I) -> Result<Vec<Value>, RpcFailure>
    where
        I: Iterator<Item = (RequestId, String)> + Send,
    {
        RpcFailure::outcomes(self.0.request_pipelined(method, requests).await)
    }
}

impl Node {
    /// A connection with the current token, for the life of the test.
    fn rpc(&self) -> &'static Rpc {
        Box::leak(Box::new(Rpc(self.client())))
    }
}

async fn open(rpc: &'static Rpc, command: &str, request_id: &str, timeout_ms: u64) -> ChannelClient<'static, Rpc> {
    ChannelClient::open(rpc, command, request_id, Duration::from_millis(timeout_ms)).await.unwrap()
}

/// Starts the `tools/call` `channel` attaches to, as its own task.
fn start_call(
    rpc: &'static Rpc,
    channel: &ChannelClient<'static, Rpc>,
    request_id: &str,
    name: &str,
    arguments: Value,
) -> tokio::task::JoinHandle<Value> {
    let (key, attachment) = channel.attachment();
    let params = json!({"name": name, "arguments": arguments, "_meta": {key: attachment}});
    let id = RequestId::string(request_id);
    tokio::spawn(async move { self::rpc(&rpc.0, id, "tools/call", params).await.unwrap() })
}

/// The JSON of a tool result (its first text block).
fn result_json(result: &Value) -> Value {
    serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap()
}

/// Fetches `path` over a channel: the bytes and the call's result.
async fn fetch(node: &Node, path: &Path, request_id: &str) -> (Vec<u8>, Value) {
    let rpc = node.rpc();
    let mut channel = open(rpc, "file.fetch", request_id, 60_000).await;
    let call = start_call(rpc, &channel, request_id, "file.fetch", json!({"path": path, "transport": "binary"}));
    let mut bytes = Vec::new();
    let received = channel
        .receive_file(|message| {
            assert!(!message.is_empty() && message.len() <= frame::MAX_MESSAGE_BYTES, "{}", message.len());
            bytes.extend_from_slice(&message);
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(received, Some(bytes.len() as u64));
    let result = call.await.unwrap();
    channel.close().await.unwrap();
    (bytes, result)
}

/// Creates `path` with `content` over a channel; the call's result.
async fn create(node: &Node, path: &Path, content: &[u8], request_id: &str) -> Value {
    let rpc = node.rpc();
    let mut channel = open(rpc, "file.create", request_id, 60_000).await;
    let arguments = json!({"path": path, "sizeBytes": content.len(), "expectedSha256": sha256(content)});
    let call = start_call(rpc, &channel, request_id, "file.create", arguments);
    let mut source = content;
    let sent = channel.send_file(|buffer| std::io::Read::read(&mut source, buffer), |_| {}).await.unwrap();
    assert_eq!(sent, Some(content.len() as u64));
    let result = call.await.unwrap();
    channel.close().await.unwrap();
    result
}

const SIZES: [usize; 8] = [0, 1, 8191, 8192, 8193, 1024 * 1024, 1024 * 1024 + 1, 3 * 1024 * 1024 + 5];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_advertises_the_channel_and_only_the_node_http_service_serves_it() {
    let node = Node::start().await;
    let mut client = node.client();
    let init = client
        .initialize(
            &json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
        )
        .await
        .unwrap();
    let advertised = &init["capabilities"]["experimental"]["openclaw/file-channel"];
    assert_eq!(advertised["v"], 1);
    assert_eq!(advertised["commands"], json!(["file.fetch", "file.create"]));
    assert_eq!(advertised["maxLeases"], 4);
    node.stop().await;

    // A service without the channel (as every surface but the node's HTTP one) neither
    // advertises nor answers it.
    let dir = tempfile::tempdir().unwrap();
    let registry = Arc::new(Registry::builtin(
        Arc::new(LiveSettings::open(dir.path().join("settings.json")).unwrap()),
        Arc::new(ExecApprovals::open(dir.path().join("exec-approvals.json"))),
    ));
    use clawmcp_mcp::McpService;
    // The file allowance (X-OpenClaw-File-Command) is the channel's service's, for the
    // file-transfer commands only.
    let with_channel = NodeMcpService::new(registry.clone()).with_file_channel();
    for command in clawmcp_node::files::TRANSFER_COMMANDS {
        assert!(with_channel.is_file_command(command), "{command}");
    }
    for other in ["fs.listDir", "system.run", "screen.snapshot", "file.nope"] {
        assert!(!with_channel.is_file_command(other), "{other}");
    }
    let service = NodeMcpService::new(registry);
    assert!(!service.is_file_command("file.write"));
    assert!(service.capabilities().get("experimental").is_none());
    assert!(service.custom_request("openclaw/files/open", Some(json!({"v": 1}))).is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_fetch_sends_every_edge_size_exactly() {
    let node = Node::start().await;
    for (i, size) in SIZES.into_iter().enumerate() {
        let content = random(size);
        let path = node.root.join(format!("f{size}.bin"));
        std::fs::write(&path, &content).unwrap();
        let (bytes, result) = fetch(&node, &path, &format!("fetch-{i}")).await;
        assert_eq!(result["isError"], false, "{result}");
        let meta = result_json(&result);
        assert_eq!((bytes.len(), sha256(&bytes)), (size, sha256(&content)), "size {size}");
        assert_eq!(meta["sha256"], sha256(&content));
        assert_eq!(meta["size"], size);
        assert_eq!(meta["transport"], "binary");
    }
    assert_eq!(node.open_channels(), 0);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_writes_every_edge_size_exactly_0600_and_never_overwrites() {
    use std::os::unix::fs::PermissionsExt;
    let node = Node::start().await;
    for (i, size) in SIZES.into_iter().enumerate() {
        let content = random(size);
        let path = node.root.join(format!("c{size}.bin"));
        let result = create(&node, &path, &content, &format!("create-{i}")).await;
        assert_eq!(result["isError"], false, "{result}");
        let meta = result_json(&result);
        assert_eq!(meta["status"], "created");
        assert_eq!(meta["sha256"], sha256(&content));
        let written = std::fs::read(&path).unwrap();
        assert_eq!((written.len(), sha256(&written)), (size, sha256(&content)), "size {size}");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }
    // An existing file is answered "exists" at once, untouched (no ready, nothing read).
    let path = node.root.join("c1.bin");
    let before = std::fs::read(&path).unwrap();
    let rpc = node.rpc();
    let mut channel = open(rpc, "file.create", "again", 60_000).await;
    let arguments = json!({"path": path, "sizeBytes": 3, "expectedSha256": sha256(b"new")});
    let result = start_call(rpc, &channel, "again", "file.create", arguments).await.unwrap();
    assert_eq!(result_json(&result)["status"], "exists");
    assert!(channel.poll().await.unwrap() == 0 && channel.is_completed() && !channel.is_ready());
    assert_eq!(std::fs::read(&path).unwrap(), before);
    channel.close().await.unwrap();
    // No temp file anywhere.
    assert!(node.names().iter().all(|name| !name.ends_with(".clawmcp-tmp")), "{:?}", node.names());
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_hash_or_size_at_eof_leaves_no_file() {
    let node = Node::start().await;
    let content = random(10_000);
    for (i, (size, hash)) in
        [(content.len(), sha256(b"other")), (content.len() + 1, sha256(&content))].into_iter().enumerate()
    {
        let id = format!("bad-{i}");
        let path = node.root.join("bad.bin");
        let rpc = node.rpc();
        let mut channel = open(rpc, "file.create", &id, 60_000).await;
        let arguments = json!({"path": path, "sizeBytes": size, "expectedSha256": hash});
        let call = start_call(rpc, &channel, &id, "file.create", arguments);
        let mut source = &content[..];
        channel.send_file(|buffer| std::io::Read::read(&mut source, buffer), |_| {}).await.unwrap();
        let result = call.await.unwrap();
        assert_eq!(result["isError"], true);
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("INTEGRITY_FAILURE"), "{text}");
        channel.close().await.unwrap();
        assert_eq!(node.names(), Vec::<String>::new(), "nothing left behind");
    }
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_polling_loses_the_lease_at_the_timeout_and_leaves_no_partial_file() {
    let node = Node::start().await;
    let path = node.root.join("abandoned.bin");
    let rpc = node.rpc();
    let mut channel = open(rpc, "file.create", "abandon", 500).await;
    let content = random(3 * frame::FRAGMENT_BYTES);
    let arguments = json!({"path": path, "sizeBytes": content.len() * 2, "expectedSha256": sha256(&content)});
    let call = start_call(rpc, &channel, "abandon", "file.create", arguments);
    assert!(channel.until_ready().await.unwrap());
    channel.send(&content).await.unwrap();
    assert_eq!(node.open_channels(), 1);
    // The client goes quiet; the timeout ends the call and frees the lease.
    let result = call.await.unwrap();
    assert_eq!(result["isError"], true);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("CHANNEL_CLOSED") && text.contains("timeout of 500 ms"), "{text}");
    assert_eq!(node.open_channels(), 0);
    assert_eq!(node.names(), Vec::<String>::new(), "no partial file, no temp file");
    let late = channel.close().await.unwrap_err().to_string();
    assert!(late.contains("no open file channel"), "{late}");
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_rotation_ends_the_old_tokens_channels() {
    let node = Node::start().await;
    let path = node.root.join("rotated.bin");
    let rpc = node.rpc();
    let mut channel = open(rpc, "file.create", "rot", 60_000).await;
    let arguments = json!({"path": path, "sizeBytes": 10, "expectedSha256": sha256(&[0; 10])});
    let call = start_call(rpc, &channel, "rot", "file.create", arguments);
    assert!(channel.until_ready().await.unwrap());
    clawmcp_http::token::reset(&node.token_path).unwrap();
    std::thread::sleep(clawmcp_http::token::RECHECK_AFTER);
    // The old token is refused outright; the new one no longer finds the channel, and the
    // command has stopped.
    let old = rpc.0.request(&RequestId::number(99), "ping", None).await;
    assert!(old.is_err(), "the old token is refused");
    let fresh = node.client();
    let poll = method(&node, &fresh, "openclaw/files/poll", json!({"v": 1, "lease": channel.lease(), "ack": 1})).await;
    assert!(poll.unwrap_err().contains("no open file channel"));
    let result = call.await.unwrap();
    assert!(result["content"][0]["text"].as_str().unwrap().contains("rotated"), "{result}");
    assert_eq!(node.names(), Vec::<String>::new());
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_and_create_need_an_attached_channel() {
    let node = Node::start().await;
    let client = node.client();
    let path = node.root.join("x");
    std::fs::write(&path, b"x").unwrap();
    let call = |name: &str, arguments: Value| {
        method(&node, &client, "tools/call", json!({"name": name, "arguments": arguments}))
    };
    let fetched = call("file.fetch", json!({"path": path, "transport": "binary"})).await.unwrap();
    assert!(fetched["content"][0]["text"].as_str().unwrap().contains("requires duplex IO"), "{fetched}");
    let created =
        call("file.create", json!({"path": node.root.join("y"), "sizeBytes": 1, "expectedSha256": sha256(b"y")}))
            .await
            .unwrap();
    assert!(created["content"][0]["text"].as_str().unwrap().contains("requires duplex IO"), "{created}");
    // A lease opened for another request id does not attach.
    let rpc = node.rpc();
    let channel = open(rpc, "file.fetch", "the-open-id", 60_000).await;
    let other = start_call(rpc, &channel, "another-id", "file.fetch", json!({"path": path, "transport": "binary"}))
        .await
        .unwrap();
    assert!(other["content"][0]["text"].as_str().unwrap().contains("not the requestId"), "{other}");
    assert_eq!(node.open_channels(), 0);
    node.stop().await;
}
