//! The stateless revision (2026-07-28) over HTTP: a request whose `_meta` names it is checked
//! against its routing headers before it runs, and its errors go out at the statuses that
//! revision gives them; legacy traffic on the same endpoint is untouched.

mod common;

use bytes::Bytes;
use common::Harness;
use http::StatusCode;
use http_body_util::Full;
use serde_json::{Value, json};

const MODERN: &str = "2026-07-28";

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    })
}

/// A stateless request: `params` gains the `_meta`, `headers` are sent as given.
async fn post(h: &Harness, method: &str, mut params: Value, headers: &[(&str, &str)]) -> common::Reply {
    params["_meta"] = meta();
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let mut request = h.client.post_json().header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    h.client.send(request.body(Full::new(Bytes::from(body.to_string()))).unwrap()).await
}

/// The headers a well-behaved client sends for `method` (and `name`, if it has one).
fn routing<'a>(method: &'a str, name: Option<&'a str>) -> Vec<(&'static str, &'a str)> {
    let mut headers = vec![("mcp-protocol-version", MODERN), ("mcp-method", method)];
    headers.extend(name.map(|name| ("mcp-name", name)));
    headers
}

#[tokio::test(start_paused = true)]
async fn discover_list_and_call_are_served_without_initialize() {
    let h = Harness::start().await;
    let discover = post(&h, "server/discover", json!({}), &routing("server/discover", None)).await;
    assert_eq!(discover.status, StatusCode::OK, "{}", discover.text());
    let result = &discover.json()["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"], json!([MODERN]));
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "test");
    assert_eq!((result["ttlMs"].clone(), result["cacheScope"].clone()), (json!(0), json!("private")));

    let list = post(&h, "tools/list", json!({}), &routing("tools/list", None)).await;
    assert_eq!(list.status, StatusCode::OK);
    let listed = &list.json()["result"];
    assert_eq!(listed["resultType"], "complete");
    assert_eq!(listed["tools"][0]["name"], "count");

    let call =
        post(&h, "tools/call", json!({"name": "count", "arguments": {}}), &routing("tools/call", Some("count"))).await;
    assert_eq!(call.status, StatusCode::OK, "{}", call.text());
    let called = &call.json()["result"];
    assert_eq!((called["resultType"].clone(), called["content"][0]["text"].clone()), (json!("complete"), json!("1")));
}

#[tokio::test(start_paused = true)]
async fn routing_headers_that_disagree_with_the_body_are_400_and_nothing_runs() {
    let h = Harness::start().await;
    let params = json!({"name": "count", "arguments": {}});
    let cases: [(Vec<(&str, &str)>, &str); 4] = [
        (routing("tools/call", Some("slow")), "Mcp-Name header value 'slow' does not match body value 'count'"),
        (routing("tools/list", Some("count")), "Mcp-Method header value 'tools/list'"),
        (vec![("mcp-method", "tools/call"), ("mcp-name", "count")], "MCP-Protocol-Version header missing"),
        (
            vec![
                ("mcp-protocol-version", MODERN),
                ("mcp-method", "tools/call"),
                ("mcp-name", "count"),
                ("mcp-name", "count"),
            ],
            "Mcp-Name header sent more than once",
        ),
    ];
    for (headers, expected) in cases {
        let reply = post(&h, "tools/call", params.clone(), &headers).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{expected}: {}", reply.text());
        let error = &reply.json()["error"];
        assert_eq!(error["code"], -32020);
        assert!(error["message"].as_str().unwrap().contains(expected), "{expected}: {error}");
        assert_eq!(reply.json()["id"], 7);
    }
    // None of them ran: the first call that does counts 1.
    let ran = post(&h, "tools/call", params, &routing("tools/call", Some("count"))).await;
    assert_eq!(ran.json()["result"]["content"][0]["text"], "1");
}

#[tokio::test(start_paused = true)]
async fn stateless_errors_carry_their_status_legacy_ones_stay_200() {
    let h = Harness::start().await;
    // Unknown and removed methods: 404.
    for method in ["no/such", "ping", "logging/setLevel"] {
        let reply = post(&h, method, json!({}), &routing(method, None)).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{method}: {}", reply.text());
        assert_eq!(reply.json()["error"]["code"], -32601, "{method}");
    }
    // A revision not served: 400 and -32022 naming what is.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2099-01-01",
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let request = h.client.post_json().header("mcp-protocol-version", "2099-01-01").header("mcp-method", "tools/list");
    let reply = h.client.send(request.body(Full::new(Bytes::from(body.to_string()))).unwrap()).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.text());
    let error = &reply.json()["error"];
    assert_eq!((error["code"].clone(), error["data"]["requested"].clone()), (json!(-32022), json!("2099-01-01")));
    assert!(error["data"]["supported"].as_array().unwrap().contains(&json!(MODERN)));
    // The header names the stateless revision but the body has no `_meta`: 400, -32602.
    let bare = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let request = h.client.post_json().header("mcp-protocol-version", MODERN).header("mcp-method", "tools/list");
    let reply = h.client.send(request.body(Full::new(Bytes::from(bare.to_string()))).unwrap()).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.text());
    assert_eq!(reply.json()["error"]["code"], -32602);
    assert!(reply.json()["error"]["message"].as_str().unwrap().contains("clientCapabilities"));
    // Legacy traffic on the same endpoint: an unknown method is a JSON-RPC error at 200, and an
    // old header value is tolerated.
    let legacy = json!({"jsonrpc": "2.0", "id": 3, "method": "no/such"});
    let request = h.client.post_json().header("mcp-protocol-version", "2025-06-18");
    let reply = h.client.send(request.body(Full::new(Bytes::from(legacy.to_string()))).unwrap()).await;
    assert_eq!((reply.status, reply.json()["error"]["code"].clone()), (StatusCode::OK, json!(-32601)));
    let ping = h.client.rpc(json!({"jsonrpc": "2.0", "id": 4, "method": "ping"})).await;
    assert_eq!((ping.status, ping.json()["result"].clone()), (StatusCode::OK, json!({})));
}
