//! The channel table at every limit's edge: leases, generations, the output queue and its
//! cursor, input order and retry, buffering caps, attach rules, timeout.

use std::time::Duration;

use clawmcp_mcp::jsonrpc::RequestId;
use clawmcp_mcp::{RequestFacts, RpcError};
use serde_json::{Value, json};

use super::frame::{self, FRAGMENT_BYTES, MAX_MESSAGE_BYTES};
use super::*;

const GEN: Option<u64> = Some(0);

fn open(channels: &Arc<FileChannels>, command: &str, id: &str) -> Result<String, RpcError> {
    channels
        .open(Some(json!({"v": 1, "command": command, "requestId": id, "timeoutMs": 60000})), GEN)
        .map(|answer| answer["lease"].as_str().unwrap().to_owned())
}

fn facts(id: &str) -> RequestFacts {
    RequestFacts { id: RequestId::string(id), auth_generation: GEN }
}

fn attach(channels: &FileChannels, lease: &str, id: &str, command: &str) -> Result<Option<Duplex>, String> {
    let meta = json!({EXTENSION: {"v": 1, "lease": lease}});
    channels.attach(Some(&meta), Some(&facts(id)), command)
}

fn poll(channels: &FileChannels, lease: &str, ack: u64) -> Result<Value, RpcError> {
    let answer = channels.poll(Some(json!({"v": 1, "lease": lease, "ack": ack})), GEN)?;
    Ok(serde_json::from_str(answer.get()).expect("a poll's answer is JSON"))
}

fn input(channels: &FileChannels, lease: &str, seq: u64, payload: &str) -> Result<Value, RpcError> {
    let params = serde_json::value::to_raw_value(&json!({"v": 1, "lease": lease, "seq": seq, "payloadJSON": payload}));
    channels.input(Some(&params.unwrap()), GEN)
}

/// Sends `message` as frames from input sequence `seq` on; returns the next sequence.
fn send_message(channels: &FileChannels, lease: &str, seq: u64, number: u64, message: &[u8]) -> Result<u64, RpcError> {
    let mut seq = seq;
    for payload in frame::fragments(number, message) {
        input(channels, lease, seq, &payload)?;
        seq += 1;
    }
    Ok(seq)
}

fn seqs(answer: &Value) -> Vec<u64> {
    answer["frames"].as_array().unwrap().iter().map(|f| f["seq"].as_u64().unwrap()).collect()
}

/// A channel opened and attached for `file.fetch`.
fn attached() -> (Arc<FileChannels>, String, Duplex) {
    let channels = FileChannels::new();
    let lease = open(&channels, "file.fetch", "call-1").unwrap();
    let duplex = attach(&channels, &lease, "call-1", "file.fetch").unwrap().unwrap();
    (channels, lease, duplex)
}

#[tokio::test]
async fn four_leases_at_most_the_fifth_refused_and_a_close_frees_one() {
    let channels = FileChannels::new();
    let leases: Vec<String> = (0..4).map(|i| open(&channels, "file.fetch", &format!("c{i}")).unwrap()).collect();
    let fifth = open(&channels, "file.create", "c4").unwrap_err();
    assert!(fifth.message.contains("4 file channels are open already"), "{}", fifth.message);
    // Unpredictable: 256 random bits, base64url, all different.
    assert!(leases.iter().all(|lease| lease.len() == 43));
    let mut unique = leases.clone();
    unique.dedup();
    assert_eq!(unique.len(), 4);
    channels.close(Some(json!({"v": 1, "lease": leases[0]})), GEN).unwrap();
    assert_eq!(channels.open_count(), 3);
    assert!(open(&channels, "file.create", "c4").is_ok());
    let gone = poll(&channels, &leases[0], 0).unwrap_err();
    assert!(gone.message.contains("no open file channel has this lease"), "{}", gone.message);
}

#[tokio::test]
async fn open_checks_its_params_and_clamps_the_timeout_to_ten_minutes() {
    let channels = FileChannels::new();
    let answer =
        channels.open(Some(json!({"v": 1, "command": "file.fetch", "requestId": 7, "timeoutMs": 600001})), GEN);
    assert_eq!(answer.unwrap()["timeoutMs"], 600000);
    let answer = channels.open(Some(json!({"v": 1, "command": "file.fetch", "requestId": 8})), GEN).unwrap();
    assert_eq!(answer["timeoutMs"], 60000);
    for (params, expected) in [
        (json!({"v": 2, "command": "file.fetch", "requestId": "a"}), "v must be 1"),
        (json!({"v": 1, "command": "system.run", "requestId": "a"}), "command must be one of file.fetch, file.create"),
        (json!({"v": 1, "command": "file.fetch"}), "requestId must be"),
        (json!({"v": 1, "command": "file.fetch", "requestId": "a", "timeoutMs": 0}), "timeoutMs must be"),
    ] {
        let error = channels.open(Some(params.clone()), GEN).unwrap_err();
        assert!(error.message.contains(expected), "{params}: {}", error.message);
    }
    let unauthenticated = channels.open(Some(json!({"v": 1, "command": "file.fetch", "requestId": "a"})), None);
    assert!(unauthenticated.unwrap_err().message.contains("authenticated loopback HTTP listener"));
}

#[tokio::test]
async fn a_rotation_ends_older_channels_and_older_requests_cannot_open_or_attach() {
    let channels = FileChannels::new();
    let old = open(&channels, "file.fetch", "old").unwrap();
    // A request of the next generation: the old channel is gone before it is served.
    let new = channels.open(Some(json!({"v": 1, "command": "file.fetch", "requestId": "new"})), Some(1)).unwrap();
    let new = new["lease"].as_str().unwrap().to_owned();
    assert_eq!(channels.open_count(), 1);
    let stale = channels.poll(Some(json!({"v": 1, "lease": old, "ack": 0})), Some(1)).unwrap_err();
    assert!(stale.message.contains("no open file channel"), "{}", stale.message);
    // A request still holding generation 0 (admitted before the rotation) cannot open ...
    let concurrent = open(&channels, "file.fetch", "late").unwrap_err();
    assert!(concurrent.message.contains("has since been replaced"), "{}", concurrent.message);
    // ... nor attach to the new generation's channel.
    let meta = json!({EXTENSION: {"v": 1, "lease": new}});
    let old_request = RequestFacts { id: RequestId::string("new"), auth_generation: Some(0) };
    let refused = channels.attach(Some(&meta), Some(&old_request), "file.fetch").err().unwrap();
    assert!(refused.contains("has since been replaced"), "{refused}");
    let current = RequestFacts { id: RequestId::string("new"), auth_generation: Some(1) };
    assert!(channels.attach(Some(&meta), Some(&current), "file.fetch").unwrap().is_some());
}

#[tokio::test]
async fn a_rotation_mid_transfer_ends_the_command() {
    let (channels, _lease, duplex) = attached();
    channels.open(Some(json!({"v": 1, "command": "file.fetch", "requestId": "x"})), Some(1)).unwrap();
    let ended = duplex.recv().await.unwrap_err();
    assert!(ended.0.contains("rotated"), "{ended}");
}

#[tokio::test]
async fn attach_once_with_the_exact_request_id_and_command() {
    let channels = FileChannels::new();
    let lease = open(&channels, "file.fetch", "call-1").unwrap();
    assert!(attach(&channels, "wrong-lease", "call-1", "file.fetch").err().unwrap().contains("no open file channel"));
    // No attach asked: nothing to do.
    assert!(channels.attach(Some(&json!({})), Some(&facts("call-1")), "file.fetch").unwrap().is_none());
    let bad = channels.attach(Some(&json!({EXTENSION: {"lease": lease}})), Some(&facts("call-1")), "file.fetch");
    assert!(bad.err().unwrap().contains("must be {v:1, lease}"));
    let first = attach(&channels, &lease, "call-1", "file.fetch").unwrap();
    assert!(first.is_some());
    let twice = attach(&channels, &lease, "call-1", "file.fetch").err().unwrap();
    assert!(twice.contains("attached already"), "{twice}");
    assert_eq!(channels.open_count(), 0, "a refused attach closes that channel");

    let lease = open(&channels, "file.fetch", "call-2").unwrap();
    let other_id = attach(&channels, &lease, "call-3", "file.fetch").err().unwrap();
    assert!(other_id.contains("not the requestId"), "{other_id}");
    let lease = open(&channels, "file.fetch", "call-4").unwrap();
    let other_command = attach(&channels, &lease, "call-4", "file.create").err().unwrap();
    assert!(other_command.contains("opened for file.fetch, not file.create"), "{other_command}");
    // Numbers match as JSON-RPC ids do: 1e2 is 100, "100" is not.
    let answer = channels.open(Some(json!({"v": 1, "command": "file.fetch", "requestId": 100})), GEN).unwrap();
    let meta = json!({EXTENSION: {"v": 1, "lease": answer["lease"]}});
    let string_id = RequestFacts { id: RequestId::string("100"), auth_generation: GEN };
    assert!(channels.attach(Some(&meta), Some(&string_id), "file.fetch").is_err());
}

#[tokio::test]
async fn sixteen_frames_wait_for_a_poll_and_a_lost_poll_gets_the_same_frames() {
    let (channels, lease, duplex) = attached();
    duplex.ready().await.unwrap();
    // ready + 15 fragments fill the queue; the 17th frame waits for an ack.
    let message = vec![7u8; 16 * FRAGMENT_BYTES];
    let mut send = Box::pin(duplex.send(&message));
    assert!(futures_util::poll!(send.as_mut()).is_pending());
    let first = poll(&channels, &lease, 0).unwrap();
    assert_eq!(seqs(&first), (0..16).collect::<Vec<_>>());
    assert_eq!(first["frames"][0]["payloadJSON"], frame::ready());
    assert_eq!(first["completed"], false);
    // The answer was lost: the same cursor gets the same frames, and the sender still waits.
    assert_eq!(poll(&channels, &lease, 0).unwrap(), first);
    assert!(futures_util::poll!(send.as_mut()).is_pending());
    // Acknowledging 5 frames lets the rest of the message in, and this very answer carries it
    // (not the next poll's): 11 retained and the 17th, sixteen in all.
    let second = poll(&channels, &lease, 5).unwrap();
    assert_eq!(seqs(&second), (5..17).collect::<Vec<_>>());
    assert!(futures_util::poll!(send.as_mut()).is_ready());
    let third = poll(&channels, &lease, 17).unwrap();
    assert_eq!(seqs(&third), Vec::<u64>::new());
    let mut fragments = Vec::new();
    let received = first["frames"].as_array().unwrap().iter().chain(second["frames"].as_array().unwrap()[11..].iter());
    for frame in received {
        if let frame::Frame::Data { data, .. } = frame::parse(frame["payloadJSON"].as_str().unwrap()).unwrap() {
            fragments.extend(data);
        }
    }
    assert_eq!(fragments, message);
    drop(send);
    drop(duplex);
    assert_eq!(poll(&channels, &lease, 17).unwrap()["completed"], true);
}

#[tokio::test]
async fn an_ack_behind_the_cursor_or_past_the_frames_closes_the_transfer() {
    let (channels, lease, duplex) = attached();
    duplex.ready().await.unwrap();
    duplex.send(b"x").await.unwrap();
    poll(&channels, &lease, 1).unwrap();
    let behind = poll(&channels, &lease, 0).unwrap_err();
    assert!(behind.message.contains("ack 0 is outside"), "{}", behind.message);
    assert!(duplex.send(b"y").await.is_err(), "the command sees the end");
    let (channels, lease, _duplex) = attached();
    let ahead = poll(&channels, &lease, 1).unwrap_err();
    assert!(ahead.message.contains("ack 1 is outside"), "{}", ahead.message);
    assert_eq!(channels.open_count(), 0);
}

#[tokio::test]
async fn the_identical_previous_input_is_idempotent_anything_else_closes() {
    let (channels, lease, duplex) = attached();
    duplex.ready().await.unwrap();
    let start = frame::data(0, 0, true, b"start");
    input(&channels, &lease, 0, &start).unwrap();
    input(&channels, &lease, 0, &start).unwrap();
    assert_eq!(duplex.recv().await.unwrap(), b"start");
    // Delivered once only.
    let ack = frame::data(1, 0, true, b"ack");
    input(&channels, &lease, 1, &ack).unwrap();
    assert_eq!(duplex.recv().await.unwrap(), b"ack");

    // A changed retry of the previous sequence closes.
    let changed = input(&channels, &lease, 1, &frame::data(1, 0, true, b"ACK")).unwrap_err();
    assert!(changed.message.contains("seq 1 is out of order or changed (expected 2"), "{}", changed.message);
    assert!(duplex.recv().await.unwrap_err().0.contains("out of order"));

    // A sequence skipped ahead closes too, and so does a frame out of order.
    let (channels, lease, _duplex) = attached();
    assert!(input(&channels, &lease, 1, &start).unwrap_err().message.contains("out of order"));
    let (channels, lease, _duplex) = attached();
    let wrong = input(&channels, &lease, 0, &frame::data(1, 0, true, b"x")).unwrap_err();
    assert!(wrong.message.contains("expected message 0 fragment 0"), "{}", wrong.message);
    assert_eq!(channels.open_count(), 0);
}

/// `openclaw/files/input` with its params written out as `text`.
fn input_text(channels: &FileChannels, text: &str) -> Result<Value, RpcError> {
    channels.input(Some(&RawValue::from_string(text.to_owned()).unwrap()), GEN)
}

#[tokio::test]
async fn input_params_spelt_any_way_are_read_as_written_plainly() {
    let (channels, lease, duplex) = attached();
    duplex.ready().await.unwrap();
    // The lease with an escape, keys in another order, an extra key: decoded and checked key by key.
    let escaped_lease = format!("\\u{:04x}{}", u32::from(lease.as_bytes()[0]), &lease[1..]);
    let start = serde_json::to_string(&frame::data(0, 0, true, b"start")).unwrap();
    let spelt = format!(r#"{{"payloadJSON":{start},"seq":0,"note":"x","lease":"{escaped_lease}","v":1}}"#);
    assert_eq!(input_text(&channels, &spelt).unwrap(), json!({"v": 1, "seq": 0}));
    // The same input again as a client writes it plainly is the idempotent retry, delivered once.
    input(&channels, &lease, 0, &frame::data(0, 0, true, b"start")).unwrap();
    assert_eq!(duplex.recv().await.unwrap(), b"start");
    // The next frame with an escape in its base64 (`\/`), and its plain spelling as the retry.
    let slashed = format!(
        r#"{{"v":1,"lease":"{lease}","seq":1,"payloadJSON":"{{\"v\":1,\"kind\":\"data\",\"message\":1,\"index\":0,\"last\":true,\"data\":\"\/w==\"}}"}}"#
    );
    input_text(&channels, &slashed).unwrap();
    input(&channels, &lease, 1, &frame::data(1, 0, true, &[0xff])).unwrap();
    assert_eq!(duplex.recv().await.unwrap(), [0xff]);

    // Faults are named whichever way the params are spelt.
    let faults = [
        (r#"{"v":2,"lease":"L","seq":0,"payloadJSON":"{}"}"#, "v must be 1"),
        (r#"{"v":1,"lease":"L","seq":9007199254740992,"payloadJSON":"{}"}"#, "no open file channel has this lease"),
        (r#"{"v":1,"lease":7,"seq":0,"payloadJSON":"{}"}"#, "lease (a string) is required"),
        (r#"[1]"#, "takes an object of params"),
    ];
    for (text, expected) in faults {
        let error = input_text(&channels, text).unwrap_err();
        assert!(error.message.contains(expected), "{text}: {}", error.message);
    }
    let numbered = format!(r#"{{"v":1,"lease":"{lease}","seq":2,"payloadJSON":5}}"#);
    assert!(input_text(&channels, &numbered).unwrap_err().message.contains("payloadJSON (a frame as a JSON string)"));
    let too_far = format!(r#"{{"v":1,"lease":"{lease}","seq":9007199254740992,"payloadJSON":"{{}}"}}"#);
    assert!(input_text(&channels, &too_far).unwrap_err().message.contains("seq must be an integer from 0 to"));
}

#[tokio::test]
async fn eight_messages_wait_before_the_command_listens_not_nine() {
    let (channels, lease, duplex) = attached();
    let mut seq = 0;
    for number in 0..8 {
        seq = send_message(&channels, &lease, seq, number, b"m").unwrap();
    }
    let ninth = send_message(&channels, &lease, seq, 8, b"m").unwrap_err();
    assert!(
        ninth.message.contains("9 messages (9 bytes) would be buffered before the command listens"),
        "{}",
        ninth.message
    );
    assert!(duplex.ready().await.is_err());
}

#[tokio::test]
async fn one_mib_waits_before_the_command_listens_unfinished_bytes_included() {
    let (channels, lease, _duplex) = attached();
    let seq = send_message(&channels, &lease, 0, 0, &vec![1u8; MAX_MESSAGE_BYTES]).unwrap();
    // One more byte, even of a message not finished yet, is over 1 MiB.
    let over = input(&channels, &lease, seq, &frame::data(1, 0, false, &[2u8; FRAGMENT_BYTES])).unwrap_err();
    let expected = format!("2 messages ({} bytes) would be buffered before", MAX_MESSAGE_BYTES + FRAGMENT_BYTES);
    assert!(over.message.contains(&expected), "{}", over.message);
    assert!(over.message.contains("at most 8 messages and 1048576 bytes"), "{}", over.message);
}

#[tokio::test]
async fn a_listening_command_may_have_two_mib_waiting_and_eight_messages() {
    let (channels, lease, duplex) = attached();
    duplex.ready().await.unwrap();
    let mut seq = send_message(&channels, &lease, 0, 0, &vec![1u8; MAX_MESSAGE_BYTES]).unwrap();
    seq = send_message(&channels, &lease, seq, 1, &vec![2u8; MAX_MESSAGE_BYTES]).unwrap();
    let over = input(&channels, &lease, seq, &frame::data(2, 0, true, b"!")).unwrap_err();
    assert!(
        over.message.contains("3 messages (2097153 bytes) would be buffered waiting for the command"),
        "{}",
        over.message
    );

    let (channels, lease, duplex) = attached();
    duplex.ready().await.unwrap();
    let mut seq = 0;
    for number in 0..8 {
        seq = send_message(&channels, &lease, seq, number, b"m").unwrap();
    }
    // Taking one makes room for one more.
    assert_eq!(duplex.recv().await.unwrap(), b"m");
    seq = send_message(&channels, &lease, seq, 8, b"m").unwrap();
    assert!(send_message(&channels, &lease, seq, 9, b"m").unwrap_err().message.contains("9 messages"));
}

#[tokio::test(start_paused = true)]
async fn the_timeout_frees_the_lease_and_ends_the_command() {
    let channels = FileChannels::new();
    let answer =
        channels.open(Some(json!({"v": 1, "command": "file.create", "requestId": "t", "timeoutMs": 1000})), GEN);
    let lease = answer.unwrap()["lease"].as_str().unwrap().to_owned();
    let duplex = attach(&channels, &lease, "t", "file.create").unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(999)).await;
    assert_eq!(channels.open_count(), 1);
    let ended = tokio::time::timeout(Duration::from_millis(2), duplex.recv()).await.unwrap().unwrap_err();
    assert!(ended.0.contains("timeout of 1000 ms passed"), "{ended}");
    assert_eq!(channels.open_count(), 0);
}

#[tokio::test]
async fn a_command_that_ends_the_channel_says_why_to_the_next_poll() {
    let (channels, lease, duplex) = attached();
    duplex.abort("the start message is not UTF-8");
    let error = poll(&channels, &lease, 0).unwrap_err();
    assert!(error.message.contains("closed: the start message is not UTF-8"), "{}", error.message);
    assert_eq!(channels.open_count(), 0);
}

#[tokio::test]
async fn gateway_transfers_share_the_four_leases_and_no_http_request_reaches_them() {
    let channels = FileChannels::new();
    let timeout = Duration::from_secs(60);
    let gateway = channels.open_for_gateway("file.create", "invoke-1", timeout).unwrap();
    let lease = gateway.meta()[EXTENSION]["lease"].as_str().unwrap().to_owned();
    // Its lease, though never disclosed, gets nothing over HTTP: poll, input, close, attach.
    for refused in [poll(&channels, &lease, 0), input(&channels, &lease, 0, &frame::ready())] {
        assert!(refused.unwrap_err().message.contains("no open file channel has this lease"));
    }
    assert!(channels.close(Some(json!({"v": 1, "lease": lease})), GEN).is_err());
    let Err(refused) = attach(&channels, &lease, "invoke-1", "file.create") else { panic!("an HTTP call attached it") };
    assert!(refused.contains("no open file channel"), "{refused}");
    // The gateway's own call attaches it (no HTTP generation).
    let duplex = channels.attach(Some(&gateway.meta()), Some(&gateway.request()), "file.create").unwrap().unwrap();
    // One limit for both transports: three more (HTTP or gateway), then the fifth is refused.
    let _http = [open(&channels, "file.fetch", "a").unwrap(), open(&channels, "file.fetch", "b").unwrap()];
    let _second = channels.open_for_gateway("file.fetch", "invoke-2", timeout).unwrap();
    assert!(open(&channels, "file.fetch", "c").unwrap_err().message.contains("4 file channels are open already"));
    assert!(channels.open_for_gateway("file.create", "invoke-3", timeout).is_err());
    // An MCP token rotation ends the HTTP channels, not the gateway's.
    assert!(channels.poll(Some(json!({"v": 1, "lease": "x", "ack": 0})), Some(1)).is_err());
    assert_eq!(channels.open_count(), 2);
    assert!(!duplex.ended().is_cancelled());
    // Dropping the gateway's end frees its lease.
    drop(gateway);
    assert!(duplex.ended().is_cancelled());
    assert_eq!(channels.open_count(), 1);
}

#[tokio::test]
async fn the_gateway_takes_output_sixteen_frames_at_a_time_and_input_breaches_close_the_transfer() {
    let channels = FileChannels::new();
    let gateway = channels.open_for_gateway("file.fetch", "invoke-1", Duration::from_secs(60)).unwrap();
    let duplex = channels.attach(Some(&gateway.meta()), Some(&gateway.request()), "file.fetch").unwrap().unwrap();
    duplex.ready().await.unwrap();
    gateway.output_ready().await;
    let first = gateway.take_output(OUTPUT_QUEUE_FRAMES);
    assert_eq!((first.frames.len(), first.done), (1, false));
    assert_eq!(&*first.frames[0], frame::ready());
    // A whole 1 MiB message is 128 frames: the queue holds 16, each take frees room.
    let sending = tokio::spawn(async move {
        duplex.send(&vec![7u8; MAX_MESSAGE_BYTES]).await.unwrap();
        duplex
    });
    let mut taken = 0;
    while taken < MAX_MESSAGE_BYTES / FRAGMENT_BYTES {
        gateway.output_ready().await;
        let output = gateway.take_output(OUTPUT_QUEUE_FRAMES);
        assert!(output.frames.len() <= OUTPUT_QUEUE_FRAMES);
        taken += output.frames.len();
    }
    let duplex = sending.await.unwrap();
    // The next input must be seq 0; seq 1 breaks the protocol and ends the transfer.
    assert!(gateway.input(1, &frame::data(0, 0, true, b"start")).unwrap_err().contains("out of order"));
    assert!(duplex.recv().await.unwrap_err().0.contains("out of order"));
    drop(duplex);
    assert!(gateway.take_output(OUTPUT_QUEUE_FRAMES).done);
}
