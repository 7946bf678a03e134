//! Honest tool metadata and `--tools` for `clawmcp tools`: every advertised tool (local, ours,
//! and the gateway's from the bundled snapshot) has a description, an object input schema and
//! all four behaviour hints; `--tools` globs narrow both the list and the calls, intersected
//! with `OPENCLAW_MCP_ENABLED_TOOLS`; a pattern that matches nothing is reported; a tool
//! registered on the bridge is listed, filtered, checked and called like the built-in ones.

use crate::bridge_support;

use bridge_support::{Setup, call, names, text, within};
use clawmcp_mcp::{McpService, Tool, ToolAnnotations};
use clawmcp_tools::BridgeTool;
use clawmcp_tools::bridge::{ToolFilter, builtin_tools};
use futures_util::FutureExt;
use serde_json::{Value, json};

const HINTS: [&str; 4] = ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"];

#[tokio::test(start_paused = true)]
async fn every_advertised_tool_has_a_description_a_schema_and_all_four_hints() {
    let setup = Setup::new().await;
    let bridge = setup.bridge().await;
    let listed = serde_json::to_value(bridge.list_tools()).unwrap();
    let tools = listed.as_array().unwrap();
    let gateway_tools = bridge.catalog().current().tools.len();
    assert!(gateway_tools > 0, "the bundled snapshot's gateway tools are part of the walk");
    assert_eq!(tools.len(), builtin_tools().len() + gateway_tools);
    for tool in tools {
        let name = tool["name"].as_str().expect("a name");
        assert!(tool["description"].as_str().is_some_and(|d| !d.trim().is_empty()), "{name}: description");
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}: inputSchema");
        for hint in HINTS {
            assert!(tool["annotations"][hint].is_boolean(), "{name}: {hint}");
        }
        if tool["annotations"]["readOnlyHint"] == true {
            assert_eq!(tool["annotations"]["destructiveHint"], false, "{name}: a read-only tool cannot destroy");
        }
    }
    let hints = |name: &str| &tools.iter().find(|t| t["name"] == name).unwrap()["annotations"];
    assert_eq!(hints("sessions_list")["readOnlyHint"], true);
    assert_eq!(hints("sessions_yield")["readOnlyHint"], true);
    assert_eq!(hints("web_fetch")["openWorldHint"], true);
    assert_eq!(hints("message")["readOnlyHint"], false, "a tool not known to read may write");
    assert_eq!(hints("exec")["destructiveHint"], true);
}

fn filtered(setup: &Setup, patterns: &str) -> clawmcp_tools::bridge::BridgeOptions {
    let mut options = setup.options();
    options.tool_filter = ToolFilter::parse(patterns).expect("valid patterns");
    options
}

#[tokio::test(start_paused = true)]
async fn tools_globs_narrow_the_list_and_refuse_other_calls_unrun() {
    let setup = Setup::new().await;
    let bridge = setup.bridge_with(filtered(&setup, "read,sessions_{list,history}")).await;
    assert_eq!(names(&bridge.list_tools()), ["read", "sessions_history", "sessions_list"]);
    assert!(bridge.unmatched_tool_patterns().is_empty());

    let marker = setup.dir.path().join("ran");
    let refused =
        within(call(&bridge, "exec", json!({"command": format!("touch {}", marker.display()), "timeout": 5}))).await;
    assert!(refused.is_error);
    assert_eq!(
        text(&refused),
        "Tool exec is not served: clawmcp tools was started with --tools `read,sessions_{list,history}`, which does \
         not match it. Restart it with a --tools list that includes exec to use it."
    );
    assert!(!marker.exists(), "a refused exec ran nothing");
    for name in ["message", "sessions_yield"] {
        let refused = within(call(&bridge, name, json!({}))).await;
        assert!(text(&refused).starts_with(&format!("Tool {name} is not served")), "{}", text(&refused));
    }
    assert!(setup.fake.tool_calls().is_empty(), "refused calls never reach the gateway");
}

#[tokio::test(start_paused = true)]
async fn the_allowlist_and_the_globs_intersect() {
    let setup = Setup::new().await.with_env("OPENCLAW_MCP_ENABLED_TOOLS", "read,grep,sessions_list");
    let bridge = setup.bridge_with(filtered(&setup, "read,sessions_*")).await;
    assert_eq!(names(&bridge.list_tools()), ["read", "sessions_list"]);

    let by_globs = within(call(&bridge, "grep", json!({"pattern": "x"}))).await;
    assert!(text(&by_globs).starts_with("Tool grep is not served"), "{}", text(&by_globs));
    let by_allowlist = within(call(&bridge, "sessions_history", json!({"sessionKey": "main"}))).await;
    assert!(
        text(&by_allowlist).starts_with("Tool is disabled by the server-side allowlist: sessions_history."),
        "{}",
        text(&by_allowlist)
    );
    assert!(setup.fake.tool_calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn patterns_that_match_nothing_allowed_are_reported() {
    let setup = Setup::new().await.with_env("OPENCLAW_MCP_ENABLED_TOOLS", "read,grep,web_fetch");
    let bridge = setup.bridge_with(filtered(&setup, "read,raed,web_*,sessions_*")).await;
    assert_eq!(bridge.unmatched_tool_patterns(), ["raed", "sessions_*"], "sessions_* is outside the allowlist");
    assert_eq!(names(&bridge.list_tools()), ["read", "web_fetch"]);

    let setup = Setup::new().await;
    let bridge = setup.bridge_with(filtered(&setup, "read,raed,web_*,sessions_*")).await;
    assert_eq!(bridge.unmatched_tool_patterns(), ["raed"]);
    let unfiltered = setup.bridge().await;
    assert!(unfiltered.unmatched_tool_patterns().is_empty());
}

/// A tool that answers with its arguments; it takes one integer `x`.
fn throwaway() -> BridgeTool {
    let descriptor = Tool {
        name: "throwaway".into(),
        title: None,
        description: "Answers with its arguments (a test's tool).".into(),
        input_schema: json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"],
                             "additionalProperties": false})
        .into(),
        output_schema: None,
        annotations: Some(ToolAnnotations::READ_ONLY),
    };
    BridgeTool::new(descriptor, |arguments, _ctx| std::future::ready(Ok(Value::Object(arguments).into())).boxed())
}

#[tokio::test(start_paused = true)]
async fn a_registered_tool_is_listed_filtered_and_called_with_no_other_change() {
    let setup = Setup::new().await;
    let bridge = setup.bridge().await;
    let before = names(&bridge.list_tools()).len();
    bridge.register([throwaway()]);
    let listed = bridge.list_tools();
    assert_eq!(listed.len(), before + 1);
    let builtin = builtin_tools().len();
    assert_eq!(listed[builtin].name, "throwaway", "after the local tools and sessions_yield, before the gateway's");
    let ran = within(call(&bridge, "throwaway", json!({"x": 7}))).await;
    assert_eq!((ran.is_error, text(&ran)), (false, r#"{"x":7}"#));
    let refused = within(call(&bridge, "throwaway", json!({"y": 7}))).await;
    assert!(refused.is_error);
    assert!(text(&refused).starts_with("Invalid arguments for throwaway: "), "{}", text(&refused));
    assert!(text(&refused).contains("`x` is required"), "{}", text(&refused));
    assert!(text(&refused).contains("`y` is not an argument of this tool"), "{}", text(&refused));
    let typo = within(call(&bridge, "throwawya", json!({}))).await;
    assert!(text(&typo).starts_with("Unknown tool: throwawya. Did you mean `throwaway`?"), "{}", text(&typo));

    // --tools and the allowlist filter it as any other.
    let bridge = setup.bridge_with(filtered(&setup, "throw*")).await;
    bridge.register([throwaway()]);
    assert_eq!(names(&bridge.list_tools()), ["throwaway"]);
    assert!(bridge.unmatched_tool_patterns().is_empty());
    assert!(!within(call(&bridge, "throwaway", json!({"x": 1}))).await.is_error);
    assert!(text(&within(call(&bridge, "read", json!({"path": "x"}))).await).starts_with("Tool read is not served"));
    let setup = Setup::new().await.with_env("OPENCLAW_MCP_ENABLED_TOOLS", "read");
    let bridge = setup.bridge().await;
    bridge.register([throwaway()]);
    assert_eq!(names(&bridge.list_tools()), ["read"]);
    let refused = within(call(&bridge, "throwaway", json!({"x": 1}))).await;
    assert!(
        text(&refused).starts_with("Tool is disabled by the server-side allowlist: throwaway."),
        "{}",
        text(&refused)
    );
    assert!(setup.fake.tool_calls().is_empty(), "ours never reach the gateway");
}
