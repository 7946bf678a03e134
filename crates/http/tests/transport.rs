//! The gate and the JSON-RPC mapping, end to end against a bound server: every status code of
//! `docs/node-http.md` §2 in its order, header variants real clients and browsers send, and binding
//! errors.

mod common;

use bytes::Bytes;
use clawmcp_http::{BindError, HttpConfig, Limits, bind, token};
use common::{Harness, call, ping};
use http::header::{ALLOW, AUTHORIZATION, CONTENT_TYPE, HOST, RETRY_AFTER, WWW_AUTHENTICATE};
use http::{Method, Request, StatusCode};
use http_body_util::{Empty, Full};
use serde_json::json;

fn ping_body() -> Full<Bytes> {
    Full::new(Bytes::from(ping(1).to_string()))
}

#[tokio::test(start_paused = true)]
async fn get_is_the_probe_on_any_path() {
    let h = Harness::start().await;
    let expected = format!("OpenClaw MCP server. POST JSON-RPC to http://127.0.0.1:{}/", h.addr().port());
    for path in ["/", "/mcp", "/anything?x=1"] {
        let reply = h.client.send(h.client.request(Method::GET).uri(path).body(Empty::<Bytes>::new()).unwrap()).await;
        reply.assert_text(StatusCode::OK, &expected);
    }
}

#[tokio::test(start_paused = true)]
async fn a_get_that_wants_only_an_event_stream_is_405() {
    let h = Harness::start().await;
    let c = &h.client;
    let sse =
        c.send(c.request(Method::GET).header("accept", "text/event-stream").body(Empty::<Bytes>::new()).unwrap()).await;
    sse.assert_text(StatusCode::METHOD_NOT_ALLOWED, "POST only");
    // Anything that also accepts text (curl sends */*) still gets the probe.
    for accept in ["*/*", "text/plain", "text/event-stream, text/plain;q=0.5", "application/json"] {
        let reply = c.send(c.request(Method::GET).header("accept", accept).body(Empty::<Bytes>::new()).unwrap()).await;
        assert_eq!(reply.status, StatusCode::OK, "{accept}");
    }
}

#[tokio::test(start_paused = true)]
async fn auth_comes_before_dispatch_on_every_verb() {
    let h = Harness::start().await;
    let c = &h.client;
    for method in [Method::GET, Method::POST, Method::PUT, Method::DELETE, Method::OPTIONS] {
        let unauthenticated = Request::builder()
            .method(method.clone())
            .uri("/")
            .header(HOST, h.addr().to_string())
            .header(CONTENT_TYPE, "application/json")
            .body(ping_body())
            .unwrap();
        let reply = c.send(unauthenticated).await;
        reply.assert_text(StatusCode::UNAUTHORIZED, "missing or invalid bearer token");
        assert_eq!(reply.headers[WWW_AUTHENTICATE], "Bearer", "{method}");
    }
    for method in [Method::PUT, Method::DELETE, Method::OPTIONS, Method::PATCH] {
        let reply = c.send(c.post_json().method(method).body(ping_body()).unwrap()).await;
        reply.assert_text(StatusCode::METHOD_NOT_ALLOWED, "POST only");
        assert_eq!(reply.headers[ALLOW], "GET, POST");
    }
    let head = c.send(c.request(Method::HEAD).body(Empty::<Bytes>::new()).unwrap()).await;
    assert_eq!((head.status, &head.headers[ALLOW]), (StatusCode::METHOD_NOT_ALLOWED, &"GET, POST".parse().unwrap()));
}

#[tokio::test(start_paused = true)]
async fn bearer_variants() {
    let h = Harness::start().await;
    let c = &h.client;
    let token = &c.token;
    let wrong_last_char = format!("{}{}", &token[..token.len() - 1], if token.ends_with('A') { 'B' } else { 'A' });
    for refused in [
        format!("Bearer {wrong_last_char}"),
        format!("Bearer {}", &token[..token.len() - 1]),
        format!("Bearer {token}x"),
        format!("Basic {token}"),
        format!("Bearer{token}"),
        "Bearer ".to_owned(),
        token.clone(),
    ] {
        let mut request = c.post_json().body(ping_body()).unwrap();
        request.headers_mut().insert(AUTHORIZATION, refused.parse().unwrap());
        c.send(request).await.assert_text(StatusCode::UNAUTHORIZED, "missing or invalid bearer token");
    }
    for accepted in [format!("bearer {token}"), format!("BEARER   {token} ")] {
        let mut request = c.post_json().body(ping_body()).unwrap();
        request.headers_mut().insert(AUTHORIZATION, accepted.parse().unwrap());
        assert_eq!(c.send(request).await.status, StatusCode::OK, "{accepted}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_token_rotated_on_disk_applies_to_every_request_after_the_check_interval() {
    let h = Harness::start().await;
    let old = h.client.clone();
    let mut connection = old.connect().await;
    let probe = |client: &common::Client| client.request(Method::GET).body(Empty::<Bytes>::new()).unwrap();
    assert_eq!(connection.send(probe(&old)).await.status, StatusCode::OK);

    let new_token = token::reset(&h.token_path).unwrap();
    // The file is checked at most once per `RECHECK_AFTER` (real time, not the paused clock).
    std::thread::sleep(token::RECHECK_AFTER);
    assert_ne!(new_token, old.token);
    let new = common::Client { token: new_token, ..old.clone() };
    // Same keep-alive connection: the check is per request, not per connection.
    connection.send(probe(&old)).await.assert_text(StatusCode::UNAUTHORIZED, "missing or invalid bearer token");
    assert_eq!(connection.send(probe(&new)).await.status, StatusCode::OK);
    assert_eq!(new.rpc(ping(2)).await.status, StatusCode::OK);
}

#[tokio::test(start_paused = true)]
async fn browser_signals_are_refused_before_auth() {
    let h = Harness::start().await;
    let c = &h.client;
    for origin in ["https://evil.example", "null", "http://127.0.0.1:8765", ""] {
        let reply = c.send(c.post_json().header("origin", origin).body(ping_body()).unwrap()).await;
        reply.assert_text(StatusCode::FORBIDDEN, "origin not allowed");
    }
    let anonymous_browser = Request::post("/")
        .header(HOST, h.addr().to_string())
        .header("origin", "https://evil.example")
        .body(ping_body())
        .unwrap();
    c.send(anonymous_browser).await.assert_text(StatusCode::FORBIDDEN, "origin not allowed");
    for (name, value) in [("referer", "https://evil.example/page"), ("sec-fetch-site", "cross-site")] {
        let reply = c.send(c.post_json().header(name, value).body(ping_body()).unwrap()).await;
        reply.assert_text(StatusCode::FORBIDDEN, "browser context not allowed");
    }
    // Node's fetch (the TypeScript SDK) sends this on every request.
    let node_client = c.post_json().header("sec-fetch-mode", "cors").header("accept-language", "*").body(ping_body());
    assert_eq!(c.send(node_client.unwrap()).await.status, StatusCode::OK);
}

#[tokio::test(start_paused = true)]
async fn host_must_name_loopback() {
    let h = Harness::start().await;
    let c = &h.client;
    let port = h.addr().port();
    for host in [
        "evil.example".to_owned(),
        "evil.example:80".into(),
        format!("127.0.0.1.nip.io:{port}"),
        "127.0.0.1:abc".into(),
    ] {
        let mut request = c.post_json().body(ping_body()).unwrap();
        request.headers_mut().insert(HOST, host.parse().unwrap());
        c.send(request).await.assert_text(StatusCode::FORBIDDEN, "host not allowed");
    }
    let mut no_host = c.post_json().body(ping_body()).unwrap();
    no_host.headers_mut().remove(HOST);
    c.send(no_host).await.assert_text(StatusCode::FORBIDDEN, "host not allowed");
    for host in [format!("localhost:{port}"), "LOCALHOST".into(), format!("[::1]:{port}"), "127.0.0.1".into()] {
        let mut request = c.post_json().body(ping_body()).unwrap();
        request.headers_mut().insert(HOST, host.parse().unwrap());
        assert_eq!(c.send(request).await.status, StatusCode::OK, "{host}");
    }
}

#[tokio::test(start_paused = true)]
async fn post_needs_a_json_media_type() {
    let h = Harness::start().await;
    let c = &h.client;
    for media_type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
        let mut request = c.post_json().body(ping_body()).unwrap();
        request.headers_mut().insert(CONTENT_TYPE, media_type.parse().unwrap());
        c.send(request).await.assert_text(StatusCode::UNSUPPORTED_MEDIA_TYPE, "application/json required");
    }
    let untyped = c.request(Method::POST).body(ping_body()).unwrap();
    c.send(untyped).await.assert_text(StatusCode::UNSUPPORTED_MEDIA_TYPE, "application/json required");
    let mut with_charset = c.post_json().body(ping_body()).unwrap();
    with_charset.headers_mut().insert(CONTENT_TYPE, "application/json; charset=utf-8".parse().unwrap());
    let reply = c.send(with_charset).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json(), json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
}

#[tokio::test(start_paused = true)]
async fn jsonrpc_answers_are_200_json_and_notifications_202_empty() {
    let h = Harness::start().await;
    let c = &h.client;

    let pong = c.rpc(ping(7)).await;
    assert_eq!((pong.status, &pong.headers[CONTENT_TYPE]), (StatusCode::OK, &"application/json".parse().unwrap()));
    assert!(pong.headers.keys().all(|name| !name.as_str().starts_with("access-control-")));
    assert_eq!(pong.json(), json!({"jsonrpc": "2.0", "id": 7, "result": {}}));

    for no_answer in [
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 3, "result": {}}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}),
    ] {
        let reply = c.rpc(no_answer.clone()).await;
        assert_eq!((reply.status, reply.body.len()), (StatusCode::ACCEPTED, 0), "{no_answer}");
    }

    let garbage = c.send(c.post_json().body(Full::new(Bytes::from_static(b"{not json"))).unwrap()).await;
    assert_eq!(garbage.status, StatusCode::OK);
    assert_eq!((garbage.json()["error"]["code"].clone(), garbage.json()["id"].clone()), (json!(-32700), json!(null)));

    let batch = c.rpc(json!([ping(1), ping(2)])).await;
    assert_eq!(batch.status, StatusCode::OK);
    assert_eq!((batch.json()["error"]["code"].clone(), batch.json()["id"].clone()), (json!(-32600), json!(null)));

    // Not JSON-RPC 2.0: a request is refused with -32600 (and never runs), a notification is
    // dropped like any other.
    let versionless = c
        .rpc(
            call(json!(5), "count", json!({}))
                .as_object()
                .unwrap()
                .clone()
                .into_iter()
                .filter(|(key, _)| key != "jsonrpc")
                .collect(),
        )
        .await;
    assert_eq!(versionless.status, StatusCode::OK);
    assert_eq!(
        (versionless.json()["error"]["code"].clone(), versionless.json()["id"].clone()),
        (json!(-32600), json!(5))
    );
    let versionless_note = c.rpc(json!({"method": "notifications/initialized"})).await;
    assert_eq!((versionless_note.status, versionless_note.body.len()), (StatusCode::ACCEPTED, 0));

    let unknown = c.rpc(json!({"jsonrpc": "2.0", "id": "u", "method": "no/such/method"})).await;
    assert_eq!(unknown.status, StatusCode::OK, "TypeScript clients lose JSON-RPC errors sent with a non-2xx status");
    assert_eq!(unknown.json()["error"]["code"], -32601);

    let listed = c.rpc(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await;
    let names: Vec<_> =
        listed.json()["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].clone()).collect();
    assert_eq!(names, [json!("count"), json!("wait_for_cancel"), json!("slow"), json!("file.echo")]);

    assert_eq!(
        c.rpc(call(json!(1), "count", json!({}))).await.tool_outcome(),
        ("1".to_owned(), false),
        "the first count: the versionless call never ran"
    );
}

#[tokio::test(start_paused = true)]
async fn keep_alive_connections_serve_many_requests() {
    let h = Harness::start().await;
    let mut connection = h.client.connect().await;
    for id in 0..5 {
        let reply =
            connection.send(h.client.post_json().body(Full::new(Bytes::from(ping(id).to_string()))).unwrap()).await;
        assert_eq!(reply.json()["id"], id);
    }
    assert!(!connection.is_closed());
}

/// Pipelined requests on one connection: every answer arrives, in order, and none is held back
/// for a request after it that has not finished (the server gathers back-to-back answers into
/// one write, but only until its connection has nothing else ready).
#[tokio::test(start_paused = true)]
async fn pipelined_answers_arrive_in_order_and_none_waits_for_a_call_behind_it() {
    let h = Harness::start().await;
    let mut burst = String::new();
    let bodies =
        (0..40).map(|id| ping(id).to_string()).chain([call(json!(40), "wait_for_cancel", json!({})).to_string()]);
    for body in bodies {
        burst += &h.client.raw_post_head(&format!("Content-Length: {}\r\n", body.len()));
        burst += &body;
    }
    let mut stream = h.client.raw_open(burst.as_bytes()).await;
    // The clock is paused: a held answer times this out at once instead of hanging the test.
    let answers = common::read_until(&mut stream, r#""id":39"#);
    let received = tokio::time::timeout(std::time::Duration::from_secs(600), answers)
        .await
        .expect("the pings' answers were held back behind the unfinished call");
    let ids: Vec<usize> =
        (0..40).map(|id| received.find(&format!(r#""id":{id},"#)).expect("every ping answered")).collect();
    assert!(ids.is_sorted(), "answers out of order: {received}");
    assert_eq!(received.matches("HTTP/1.1 200 OK\r\n").count(), 40, "{received}");
    h.service.wait_started(1).await;
}

#[tokio::test(start_paused = true)]
async fn busy_answers_carry_retry_after() {
    // Zero tool slots: every tools/call is refused after the short wait, control still works.
    let h = Harness::with_limits(Limits { tool_slots: 0, ..Limits::default() }).await;
    let reply = h.client.rpc(call(json!(1), "count", json!({}))).await;
    reply.assert_text(StatusCode::SERVICE_UNAVAILABLE, "server busy");
    assert_eq!(reply.headers[RETRY_AFTER], "1");
    assert_eq!(h.service.counted.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert_eq!(h.client.rpc(ping(1)).await.status, StatusCode::OK);
}

#[tokio::test]
async fn bind_reports_a_port_in_use_and_only_listens_on_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let config = |port| HttpConfig { port, token_path: dir.path().join("mcp-token.txt"), limits: Limits::default() };
    let first = bind(config(0)).await.unwrap();
    let port = first.local_addr().port();
    assert_eq!(first.local_addr().ip().to_string(), "127.0.0.1");
    assert_eq!(first.endpoint(), format!("http://127.0.0.1:{port}/"));
    let error = bind(config(port)).await.err().expect("the port is taken");
    assert!(matches!(error, BindError::AddrInUse { port: p } if p == port), "{error:?}");
    assert_eq!(
        error.to_string(),
        format!("port {port} on 127.0.0.1 is already in use: stop the other process or pass --port")
    );
}

#[tokio::test]
async fn bind_refuses_to_start_with_an_unreadable_token_file() {
    let dir = tempfile::tempdir().unwrap();
    let token_path = dir.path().join("mcp-token.txt");
    std::fs::write(&token_path, [0xff, 0xfe, b'x']).unwrap();
    let error = bind(HttpConfig { port: 0, token_path: token_path.clone(), limits: Limits::default() }).await.err();
    assert!(matches!(error, Some(BindError::Token(token::TokenError::Read { .. }))), "{error:?}");
    assert_eq!(std::fs::read(&token_path).unwrap(), [0xff, 0xfe, b'x'], "the file was not replaced");
}
