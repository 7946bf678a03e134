//! The file channel's input side (`crates/node/src/files/channel/`): the input is wire frames
//! separated by 0xFF bytes, each a `payloadJSON` a client sent (a leading `R`: the command
//! listens first).
//!
//! Beyond "never panics": every frame `frame::parse` accepts is within the limits (a frame at
//! most 16384 bytes, a non-final fragment exactly 8192, any at most 8192) and re-encodes to
//! exactly its canonical text, which parses back to the same frame; read from its JSON string
//! literal (`frame::parse_literal`) it gets the same verdict; the reassembler never holds or
//! yields a message over 1 MiB. The same frames sent through `openclaw/files/input` of an attached
//! channel either are accepted with the sequence they were sent at, or are refused and that
//! channel is gone (every violation closes its transfer), and what the command receives is what
//! the reassembler yields.

#![no_main]

use clawmcp_mcp::RequestFacts;
use clawmcp_mcp::jsonrpc::RequestId;
use clawmcp_node::files::channel::frame::{self, Frame, Reassembler};
use clawmcp_node::files::channel::{EXTENSION, FileChannels};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    runtime.block_on(run(data));
});

async fn run(data: &[u8]) {
    let channels = FileChannels::new();
    let opened = channels
        .open(Some(json!({"v": 1, "command": "file.create", "requestId": "f"})), Some(0))
        .expect("the first open is served");
    let lease = opened["lease"].as_str().unwrap().to_owned();
    let meta = json!({EXTENSION: {"v": 1, "lease": lease}});
    let facts = RequestFacts { id: RequestId::string("f"), auth_generation: Some(0) };
    let duplex = channels.attach(Some(&meta), Some(&facts), "file.create").unwrap().unwrap();
    // A leading `R`: the command listens before the input comes (the active caps apply).
    let data = match data.split_first() {
        Some((b'R', rest)) => {
            duplex.ready().await.unwrap();
            rest
        }
        _ => data,
    };

    let mut model = Reassembler::default();
    let mut model_alive = true;
    let mut expected = Vec::new();
    let mut seq = 0u64;
    let mut open = true;
    for chunk in data.split(|byte| *byte == 0xFF) {
        let Ok(payload) = std::str::from_utf8(chunk) else { continue };
        let parsed = frame::parse(payload);
        // Read from the JSON string that carries it (as an HTTP input's params hold it), the
        // frame gets the same verdict.
        let literal = serde_json::to_string(payload).unwrap();
        assert_eq!(frame::parse_literal(&literal), parsed, "the literal path disagrees on {literal}");
        if let Ok(frame) = &parsed {
            check_frame(payload, frame);
        }
        if model_alive {
            match parsed.clone().and_then(|frame| model.push(frame)) {
                Ok(Some(message)) => {
                    assert!(message.len() <= frame::MAX_MESSAGE_BYTES);
                    expected.push(message);
                }
                Ok(None) => assert!(model.partial_bytes() <= frame::MAX_MESSAGE_BYTES),
                Err(_) => model_alive = false,
            }
        }
        if !open {
            continue;
        }
        let input = serde_json::value::to_raw_value(&json!({"v": 1, "lease": lease, "seq": seq, "payloadJSON": payload}));
        match channels.input(Some(&input.unwrap()), Some(0)) {
            Ok(answer) => {
                assert_eq!(answer["seq"], seq);
                assert!(parsed.is_ok(), "an unparsable frame was accepted");
                seq += 1;
            }
            Err(_) => {
                assert_eq!(channels.open_count(), 0, "a refused input closes the transfer");
                open = false;
            }
        }
    }
    // What the command gets is what an independent reassembler made of the accepted frames.
    if open {
        let mut received = Vec::new();
        while received.len() < expected.len() {
            received.push(duplex.recv().await.expect("accepted messages are delivered"));
        }
        assert_eq!(received, expected);
    }
}

fn check_frame(payload: &str, frame: &Frame) {
    assert!(payload.len() <= frame::MAX_WIRE_FRAME_BYTES);
    let canonical = match frame {
        Frame::Ready => frame::ready(),
        Frame::Data { message, index, last, data } => {
            assert!(data.len() <= frame::FRAGMENT_BYTES);
            assert!(*last || data.len() == frame::FRAGMENT_BYTES);
            assert!(*message <= frame::MAX_SAFE_INTEGER && *index <= frame::MAX_SAFE_INTEGER);
            frame::data(*message, *index, *last, data)
        }
    };
    assert_eq!(&frame::parse(&canonical).expect("the canonical text parses"), frame);
}
