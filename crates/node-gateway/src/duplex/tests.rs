use serde_json::json;

use super::*;

#[test]
fn a_progress_counts_as_taken_only_when_the_gateway_took_it() {
    assert!(progress_taken(&json!({"ok": true})).is_ok());
    assert!(progress_taken(&json!({"ok": true, "ignored": false})).is_ok());
    let ignored = progress_taken(&json!({"ok": true, "ignored": true})).unwrap_err();
    assert!(ignored.contains("no longer pending"), "{ignored}");
    for odd in [json!({"ok": false}), json!({}), json!(null), json!({"ok": "true"})] {
        assert!(progress_taken(&odd).unwrap_err().contains("unexpected response"), "{odd}");
    }
}

#[test]
fn an_input_event_needs_its_id_seq_and_frame() {
    let event = json!({"id": "i", "nodeId": "n", "seq": 3, "payloadJSON": "{}"});
    assert_eq!(parse_input(&event), Ok(("i", 3, "{}")));
    // The gateway names the invoke `id` here, not `invokeId` as in progress and cancel.
    assert_eq!(parse_input(&json!({"invokeId": "i", "seq": 3, "payloadJSON": "{}"})), Err("no id"));
    assert_eq!(parse_input(&json!({"id": "i", "seq": -1, "payloadJSON": "{}"})), Err("no seq"));
    assert_eq!(parse_input(&json!({"id": "i", "seq": 0, "payloadJSON": {}})), Err("no payloadJSON"));
}
