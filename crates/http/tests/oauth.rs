//! OAuth discovery probes against a bound server: a client configured with a static bearer header
//! must learn "no OAuth here" (`404`, empty body) whatever token it sends, while the browser and
//! Host checks still come first and every other request still needs the token.
//!
//! The paths are the ones the TypeScript SDK 1.32 and the Python SDK 2.3 build for a server at
//! `http://127.0.0.1:<port>/` or `.../mcp` (RFC 9728 protected-resource metadata, RFC 8414
//! authorization-server metadata, OpenID Connect discovery, root and path-aware forms).

mod common;

use bytes::Bytes;
use common::{Client, Harness};
use http::header::{AUTHORIZATION, CONTENT_TYPE, HOST, WWW_AUTHENTICATE};
use http::{Method, Request, StatusCode};
use http_body_util::{Empty, Full};

const DISCOVERY_PATHS: &[&str] = &[
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-protected-resource/mcp",
    "/.well-known/oauth-authorization-server",
    "/.well-known/oauth-authorization-server/mcp",
    "/.well-known/openid-configuration",
    "/.well-known/openid-configuration/mcp",
    "/mcp/.well-known/openid-configuration",
];

/// How the SDKs send a discovery request: loopback Host, `MCP-Protocol-Version`, JSON wanted.
fn discovery(client: &Client, path: &str) -> http::request::Builder {
    Request::get(path)
        .header(HOST, client.addr.to_string())
        .header("mcp-protocol-version", "2025-11-25")
        .header("accept", "application/json")
}

fn assert_not_found_and_empty(reply: &common::Reply, what: &str) {
    assert_eq!(reply.status, StatusCode::NOT_FOUND, "{what}: {}", reply.text());
    assert!(reply.body.is_empty(), "{what}: a body was sent: {}", reply.text());
    assert!(reply.headers.get(CONTENT_TYPE).is_none(), "{what}");
    assert!(reply.headers.get(WWW_AUTHENTICATE).is_none(), "{what}: 404 must not ask for credentials");
    assert!(reply.headers.keys().all(|name| !name.as_str().starts_with("access-control-")), "{what}");
}

#[tokio::test(start_paused = true)]
async fn discovery_is_404_with_no_body_whatever_the_token() {
    let h = Harness::start().await;
    let c = &h.client;
    for path in DISCOVERY_PATHS {
        let without = c.send(discovery(c, path).body(Empty::<Bytes>::new()).unwrap()).await;
        assert_not_found_and_empty(&without, &format!("{path} without a token"));
        let wrong = discovery(c, path).header(AUTHORIZATION, "Bearer not-the-token");
        assert_not_found_and_empty(&c.send(wrong.body(Empty::<Bytes>::new()).unwrap()).await, &format!("{path} wrong"));
        let right = discovery(c, path).header(AUTHORIZATION, format!("Bearer {}", c.token));
        assert_not_found_and_empty(&c.send(right.body(Empty::<Bytes>::new()).unwrap()).await, &format!("{path} right"));
    }
}

#[tokio::test(start_paused = true)]
async fn browser_and_host_checks_still_come_first_on_discovery_paths() {
    let h = Harness::start().await;
    let c = &h.client;
    for path in DISCOVERY_PATHS {
        let origin = discovery(c, path).header("origin", format!("http://{}", c.addr));
        c.send(origin.body(Empty::<Bytes>::new()).unwrap())
            .await
            .assert_text(StatusCode::FORBIDDEN, "origin not allowed");
        let referer = discovery(c, path).header("referer", format!("http://{}/", c.addr));
        let reply = c.send(referer.body(Empty::<Bytes>::new()).unwrap()).await;
        reply.assert_text(StatusCode::FORBIDDEN, "browser context not allowed");
        let fetch_site = discovery(c, path).header("sec-fetch-site", "cross-site");
        let reply = c.send(fetch_site.body(Empty::<Bytes>::new()).unwrap()).await;
        reply.assert_text(StatusCode::FORBIDDEN, "browser context not allowed");
        let rebound = Request::get(*path).header(HOST, "evil.example").body(Empty::<Bytes>::new()).unwrap();
        c.send(rebound).await.assert_text(StatusCode::FORBIDDEN, "host not allowed");
    }
}

#[tokio::test(start_paused = true)]
async fn every_other_get_still_needs_the_token() {
    let h = Harness::start().await;
    let c = &h.client;
    let probe = format!("OpenClaw MCP server. POST JSON-RPC to http://127.0.0.1:{}/", c.addr.port());
    for path in ["/", "/mcp", "/.well-known/security.txt", "/mcp/.well-known/oauth-protected-resource", "/register"] {
        let anonymous = Request::get(path).header(HOST, c.addr.to_string()).body(Empty::<Bytes>::new()).unwrap();
        let reply = c.send(anonymous).await;
        reply.assert_text(StatusCode::UNAUTHORIZED, "missing or invalid bearer token");
        assert_eq!(reply.headers[WWW_AUTHENTICATE], "Bearer", "{path}");
        let authenticated = c.request(Method::GET).uri(path).body(Empty::<Bytes>::new()).unwrap();
        c.send(authenticated).await.assert_text(StatusCode::OK, &probe);
    }
}

#[tokio::test(start_paused = true)]
async fn only_get_is_the_exception_other_verbs_on_discovery_paths_need_the_token() {
    let h = Harness::start().await;
    let c = &h.client;
    for method in [Method::POST, Method::HEAD, Method::PUT, Method::DELETE, Method::OPTIONS] {
        let request = Request::builder()
            .method(method.clone())
            .uri("/.well-known/oauth-protected-resource")
            .header(HOST, c.addr.to_string())
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap();
        let reply = c.send(request).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{method}");
    }
    // What an OAuth client does after discovery found nothing: dynamic client registration at
    // `/register`. Without the token it is refused like any other request.
    let register = Request::post("/register")
        .header(HOST, c.addr.to_string())
        .header(CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from_static(br#"{"redirect_uris":["http://127.0.0.1:1/cb"]}"#)))
        .unwrap();
    c.send(register).await.assert_text(StatusCode::UNAUTHORIZED, "missing or invalid bearer token");
}

#[tokio::test(start_paused = true)]
async fn a_static_bearer_client_carries_on_after_its_probes() {
    let h = Harness::start().await;
    let c = &h.client;
    for path in DISCOVERY_PATHS {
        let probe = discovery(c, path).header(AUTHORIZATION, format!("Bearer {}", c.token));
        assert_eq!(c.send(probe.body(Empty::<Bytes>::new()).unwrap()).await.status, StatusCode::NOT_FOUND);
    }
    let reply = c.rpc(common::ping(7)).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["id"], 7);
    assert!(reply.json().get("result").is_some(), "{}", reply.text());
}
