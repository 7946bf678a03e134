//! Honest tool metadata on the wire: every tool `clawmcp serve` advertises, in every Claude
//! channel mode, has a description, an object input schema and all four behaviour hints, and
//! only the tools that change something outside say so.

use clawmcp_serve::ClaudeChannelMode;
use serde_json::Value;

use crate::support::{Session, gateway};

const HINTS: [&str; 4] = ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"];

#[tokio::test(start_paused = true)]
async fn every_advertised_tool_has_a_description_a_schema_and_all_four_hints() {
    for mode in [ClaudeChannelMode::Off, ClaudeChannelMode::On] {
        let fake = gateway().await;
        let mut session = Session::start_mode(&fake, mode).await;
        let listed = session.request("tools/list", serde_json::json!({})).await;
        let tools = listed["result"]["tools"].as_array().expect("a tools array");
        assert!(!tools.is_empty(), "{mode:?}: nothing advertised");
        let mut not_read_only = Vec::new();
        for tool in tools {
            let name = tool["name"].as_str().expect("a name");
            assert!(tool["description"].as_str().is_some_and(|d| !d.trim().is_empty()), "{mode:?} {name}: description");
            assert_eq!(tool["inputSchema"]["type"], "object", "{mode:?} {name}: inputSchema");
            let annotations = tool["annotations"].as_object().unwrap_or_else(|| panic!("{mode:?} {name}: annotations"));
            let mut keys: Vec<&str> = annotations.keys().map(String::as_str).collect();
            keys.sort_unstable();
            let mut expected = HINTS.to_vec();
            expected.sort_unstable();
            assert_eq!(keys, expected, "{mode:?} {name}: exactly the four hints");
            assert!(annotations.values().all(Value::is_boolean), "{mode:?} {name}: boolean hints");
            if annotations["readOnlyHint"] == false {
                not_read_only.push(name.to_owned());
            }
        }
        assert_eq!(not_read_only, ["messages_send", "permissions_respond"], "{mode:?}");
        session.finish().await.expect("a clean exit on EOF");
    }
}
