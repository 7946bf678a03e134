//! One WebSocket text frame from the OpenClaw gateway (`crates/gateway/src/frames.rs`):
//! `Frame::parse`, then what the client reads out of a parsed frame (the interim-accepted test,
//! error details, the `connect.challenge` and `hello-ok` payloads).
//!
//! Beyond "never panics": a parsed frame serialises and parses back to the same frame (the
//! client re-sends and logs frames it built from parsed ones, and outbound frames must be
//! closed objects without `null`s for absent fields).

#![no_main]

use clawmcp_gateway::frames::{ConnectChallenge, Frame};
use clawmcp_gateway::{ErrorShape, HelloOk};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    // WebSocket text frames are UTF-8 by the protocol; tungstenite refuses anything else.
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(frame) = Frame::parse(text) else { return };

    let again = Frame::parse(&frame.to_text()).expect("a serialised frame parses");
    assert_eq!(frame, again, "the round trip changed the frame");
    assert_closed(&frame);

    match &frame {
        Frame::Res(response) => {
            let _ = response.is_interim_accepted();
            if let Some(error) = &response.error {
                check_error(error);
            }
            if let Some(payload) = &response.payload
                && let Ok(hello) = HelloOk::parse(payload.clone())
            {
                assert_eq!(&hello.raw, payload, "hello-ok keeps the whole payload");
                let _ = hello.advertises_method("chat.send");
            }
        }
        Frame::Event(event) => {
            if let Some(payload) = &event.payload {
                let _ = serde_json::from_value::<ConnectChallenge>(payload.clone());
            }
        }
        Frame::Req(_) => {}
    }
});

fn check_error(error: &ErrorShape) {
    let shown = error.to_string();
    assert!(shown.contains(&error.message) && shown.contains(&error.code), "{shown}");
    if let Some(detail) = error.detail_code() {
        assert!(shown.contains(detail), "{shown}");
    }
}

/// Absent optional fields are left out, never written as `null`: the frame's own fields and
/// those of its error object. (`null` inside a payload is the payload's business.)
fn assert_closed(frame: &Frame) {
    let wire: Value = serde_json::from_str(&frame.to_text()).expect("a serialised frame is JSON");
    let error = wire.get("error").and_then(Value::as_object).into_iter().flatten();
    let fields = wire.as_object().expect("a frame is an object").iter().chain(error);
    for (name, value) in fields {
        assert!(!value.is_null(), "`{name}` serialised as null: {wire}");
    }
}
