//! Duplex invokes over the gateway's frames against the in-repo fake gateway, with the node's real
//! file commands: `file.create` and binary `file.fetch` move their bytes as wire frames in
//! `node.invoke.progress` chunks (out) and `node.invoke.input` events (in), in the message
//! protocols of the real node host (ready; `ack` per message; empty-message EOF for create;
//! `start` then acknowledged messages for fetch), and the result follows the last frame.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use clawmcp_node::Registry;
use clawmcp_node::files::channel::frame::{self, Frame, Reassembler};
use clawmcp_node::settings::DataDir;
use clawmcp_node_gateway::NodeLink;
use clawmcp_testkit::{FakeGateway, Reply};

use crate::common;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

struct Node {
    fake: FakeGateway,
    _link: NodeLink,
    registry: Arc<Registry>,
    /// The file root the node serves.
    root: tempfile::TempDir,
    _data: tempfile::TempDir,
}

/// A node serving `root` through the real file commands, joined to a fake gateway that answers
/// every progress with `progress`.
async fn node(progress: Value) -> Node {
    let fake = FakeGateway::start().await;
    fake.on("node.invoke.result", |_| Reply::Ok(json!({"ok": true})));
    fake.on("node.event", |_| Reply::Ok(json!({"ok": true})));
    fake.on("node.pluginTools.update", |params| Reply::Ok(json!({"nodeId": "n", "tools": params["tools"]})));
    fake.on("node.invoke.progress", move |_| Reply::Ok(progress.clone()));
    let data = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let dir = DataDir::at(data.path().join("data"));
    dir.ensure().unwrap();
    std::fs::write(dir.settings_path(), json!({"NodeFileRoots": [root.path()]}).to_string()).unwrap();
    let (link, registry) = common::builtin_node(&fake, &dir, "test-node").await;
    Node { fake, _link: link, registry, root, _data: data }
}

fn invoke(id: &str, command: &str, params: Value) -> Value {
    json!({"id": id, "nodeId": "ignored", "command": command, "paramsJSON": params.to_string(), "timeoutMs": 60_000})
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The progress the node sent for invoke `id`, once there are at least `count`.
async fn progress_of(fake: &FakeGateway, id: &str, count: usize) -> Vec<Value> {
    for _ in 0..6000 {
        let mine: Vec<Value> =
            fake.requests("node.invoke.progress").into_iter().filter(|p| p["invokeId"] == id).collect();
        if mine.len() >= count {
            return mine;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("invoke {id} sent fewer than {count} progress frames");
}

async fn result_of(fake: &FakeGateway, id: &str) -> Value {
    for _ in 0..6000 {
        if let Some(result) = fake.requests("node.invoke.result").into_iter().find(|r| r["id"] == id) {
            return result;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("invoke {id} never answered");
}

fn payload(result: &Value) -> Value {
    assert_eq!(result["ok"], true, "{result}");
    serde_json::from_str(result["payloadJSON"].as_str().unwrap()).unwrap()
}

/// The gateway's side: numbered input frames for one invoke.
struct Sender<'a> {
    fake: &'a FakeGateway,
    id: &'a str,
    seq: u64,
    message: u64,
}

impl Sender<'_> {
    fn frame(&mut self, payload: String) {
        self.fake
            .emit("node.invoke.input", json!({"id": self.id, "nodeId": "n", "seq": self.seq, "payloadJSON": payload}));
        self.seq += 1;
    }

    fn message(&mut self, bytes: &[u8]) {
        for fragment in frame::fragments(self.message, bytes) {
            self.frame(fragment);
        }
        self.message += 1;
    }
}

/// The node's data frames of progress `frames` put back together as messages (the ready frame
/// and heartbeats skipped), checking the sequence has no gap.
fn messages(frames: &[Value]) -> Vec<Vec<u8>> {
    let mut reassembler = Reassembler::default();
    let mut messages = Vec::new();
    for (expected, progress) in frames.iter().enumerate() {
        assert_eq!(progress["seq"], expected as u64, "progress seq must count from 0 with no gap: {progress}");
        let chunk = progress["chunk"].as_str().unwrap();
        assert!(chunk.len() <= frame::MAX_WIRE_FRAME_BYTES, "a chunk over the wire cap");
        if chunk.is_empty() {
            continue;
        }
        match frame::parse(chunk).unwrap() {
            Frame::Ready => assert_eq!(expected, 0, "ready is the first frame"),
            data => {
                if let Some(message) = reassembler.push(data).unwrap() {
                    messages.push(message);
                }
            }
        }
    }
    messages
}

fn is_ready(progress: &Value) -> bool {
    progress["chunk"] == r#"{"v":1,"kind":"ready"}"#
}

fn file_mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_create_moves_its_bytes_over_progress_and_input_and_answers_after_the_last_ack() {
    let node = node(json!({"ok": true})).await;
    let bytes: Vec<u8> = (0..1_300_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let target = node.root.path().join("made.bin");
    let params = json!({"path": target, "sizeBytes": bytes.len(), "expectedSha256": sha256_hex(&bytes)});
    node.fake.emit("node.invoke.request", invoke("c1", "file.create", params));
    let first = progress_of(&node.fake, "c1", 1).await;
    assert!(is_ready(&first[0]), "ready comes first: {}", first[0]);
    let mut sender = Sender { fake: &node.fake, id: "c1", seq: 0, message: 0 };
    // Two messages of at most 1 MiB, each acknowledged before the next, then the empty EOF.
    for (number, chunk) in bytes.chunks(frame::MAX_MESSAGE_BYTES).enumerate() {
        sender.message(chunk);
        let frames = progress_of(&node.fake, "c1", number + 2).await;
        assert_eq!(messages(&frames).len(), number + 1);
    }
    sender.message(b"");
    let result = payload(&result_of(&node.fake, "c1").await);
    assert_eq!(result["status"], "created", "{result}");
    assert_eq!(result["size"], bytes.len());
    assert_eq!(result["sha256"], sha256_hex(&bytes));
    assert_eq!(std::fs::read(&target).unwrap(), bytes);
    assert_eq!(file_mode(&target), 0o600);
    let frames = node.fake.requests("node.invoke.progress");
    let acks = messages(&frames);
    assert_eq!(acks, vec![b"ack".to_vec(), b"ack".to_vec()], "one literal `ack` per non-empty message");
    assert!(frames.iter().all(|p| p["nodeId"] != "ignored" && p["nodeId"].is_string()));
    assert_eq!(node.registry.file_channels().unwrap().open_count(), 0, "the lease is free again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_file_fetch_streams_acknowledged_messages_then_the_receipt() {
    let node = node(json!({"ok": true})).await;
    let bytes: Vec<u8> = (0..(2 * frame::MAX_MESSAGE_BYTES + 12_345)).map(|i| (i * 7 % 251) as u8).collect();
    let source = node.root.path().join("source.bin");
    std::fs::write(&source, &bytes).unwrap();
    node.fake.emit("node.invoke.request", invoke("f1", "file.fetch", json!({"path": source, "transport": "binary"})));
    assert!(is_ready(&progress_of(&node.fake, "f1", 1).await[0]));
    let mut sender = Sender { fake: &node.fake, id: "f1", seq: 0, message: 0 };
    sender.message(b"start");
    let mut received = Vec::new();
    for expected in 1..=3 {
        // Each message waits for our ack: the node never runs more than one ahead.
        let got = loop {
            let got = messages(&progress_of(&node.fake, "f1", 1).await);
            if got.len() >= expected {
                break got;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        assert_eq!(got.len(), expected, "the next message came before the ack");
        assert!(got[expected - 1].len() <= frame::MAX_MESSAGE_BYTES);
        received.extend_from_slice(&got[expected - 1]);
        sender.message(b"ack");
    }
    let result = payload(&result_of(&node.fake, "f1").await);
    assert_eq!(received, bytes);
    assert_eq!(result["transport"], "binary", "{result}");
    assert_eq!(result["size"], bytes.len());
    assert_eq!(result["sha256"], sha256_hex(&bytes));
    assert!(result.get("base64").is_none_or(|b| b == ""), "no bytes in the receipt: {result}");
    // The result was sent after the last frame's progress was answered.
    let received_order = node.fake.received();
    let last_progress = received_order.iter().rposition(|r| r.method() == Some("node.invoke.progress")).unwrap();
    let result_at = received_order.iter().position(|r| r.method() == Some("node.invoke.result")).unwrap();
    assert!(result_at > last_progress, "the result came before the last frame");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_out_of_order_closes_only_that_transfer_and_leaves_no_file() {
    let node = node(json!({"ok": true})).await;
    let target = node.root.path().join("never.bin");
    let params = json!({"path": target, "sizeBytes": 10, "expectedSha256": sha256_hex(&[0; 10])});
    node.fake.emit("node.invoke.request", invoke("c2", "file.create", params));
    assert!(is_ready(&progress_of(&node.fake, "c2", 1).await[0]));
    let mut sender = Sender { fake: &node.fake, id: "c2", seq: 1, message: 0 };
    sender.message(&[0; 10]);
    // File commands answer their failures in the payload, as the real node host does.
    let result = payload(&result_of(&node.fake, "c2").await);
    assert_eq!((&result["ok"], &result["code"]), (&json!(false), &json!("CHANNEL_CLOSED")), "{result}");
    assert!(result["message"].as_str().unwrap().contains("out of order"), "{result}");
    assert!(!target.exists());
    assert_eq!(node.registry.file_channels().unwrap().open_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_progress_the_gateway_ignores_ends_the_transfer() {
    let node = node(json!({"ok": true, "ignored": true})).await;
    let target = node.root.path().join("late.bin");
    let params = json!({"path": target, "sizeBytes": 3, "expectedSha256": sha256_hex(b"abc")});
    node.fake.emit("node.invoke.request", invoke("c3", "file.create", params));
    let result = payload(&result_of(&node.fake, "c3").await);
    assert_eq!((&result["ok"], &result["code"]), (&json!(false), &json!("CHANNEL_CLOSED")), "{result}");
    assert!(result["message"].as_str().unwrap().contains("ignored it"), "{result}");
    assert!(!target.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_transfer_sends_empty_heartbeats_in_the_same_sequence() {
    let node = node(json!({"ok": true})).await;
    let target = node.root.path().join("slow.bin");
    let params = json!({"path": target, "sizeBytes": 3, "expectedSha256": sha256_hex(b"abc")});
    node.fake.emit("node.invoke.request", invoke("c4", "file.create", params));
    // Real time: one heartbeat interval (duplex::HEARTBEAT) with no input.
    let frames = progress_of(&node.fake, "c4", 2).await;
    assert!(is_ready(&frames[0]));
    assert_eq!(frames[1]["chunk"], "", "{}", frames[1]);
    assert_eq!(frames[1]["seq"], 1);
    let mut sender = Sender { fake: &node.fake, id: "c4", seq: 0, message: 0 };
    sender.message(b"abc");
    sender.message(b"");
    assert_eq!(payload(&result_of(&node.fake, "c4").await)["status"], "created");
    assert_eq!(std::fs::read(&target).unwrap(), b"abc");
}
