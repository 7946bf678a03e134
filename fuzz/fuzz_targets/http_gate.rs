//! The HTTP gate's header handling (`crates/http/src/gate.rs`) on one request head.
//!
//! Input: the first byte picks the peer address (loopback or not, IPv4, IPv6 and IPv4-mapped);
//! the rest is a raw HTTP/1.1 request head, parsed with `httparse` (what hyper uses) and turned
//! into an `http::Request` the way hyper hands one to the server. `@TOKEN@` in the head is
//! replaced by the server's real bearer token, so inputs can reach the checks after the token.
//!
//! Each verdict is compared with a reference model of the rules of `docs/node-http.md` §2, written
//! out here independently: loopback peer, no browser signal (`Origin`, `Referer`,
//! `Sec-Fetch-Site`), exactly one loopback `Host` (and a loopback authority in an absolute-form
//! target), OAuth discovery answered 404 before the token, exactly one
//! `Authorization: Bearer <token>`; then the media type and the `Accept` rules. A disagreement is
//! a crash.

#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use clawmcp_http::fuzzing;
use clawmcp_http::token::{LiveToken, TOKEN_FILE_NAME};
use http::{HeaderMap, Method, Request};
use libfuzzer_sys::fuzz_target;

/// The peers the first input byte chooses from.
const PEERS: [IpAddr; 10] = [
    IpAddr::V4(Ipv4Addr::LOCALHOST),
    IpAddr::V6(Ipv6Addr::LOCALHOST),
    IpAddr::V6(Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0x7f00, 0x0001)),
    IpAddr::V4(Ipv4Addr::new(127, 9, 8, 7)),
    IpAddr::V4(Ipv4Addr::new(192, 168, 1, 20)),
    IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
    IpAddr::V6(Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0xc0a8, 0x0101)),
    IpAddr::V6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1)),
    IpAddr::V4(Ipv4Addr::UNSPECIFIED),
    IpAddr::V6(Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0x7f00, 0x0001)),
];

/// hyper's header count limit as the node configures it (`Limits::max_headers`).
const MAX_HEADERS: usize = 64;

const TOKEN_PLACEHOLDER: &[u8] = b"@TOKEN@";

/// The token file lives in a private temporary data dir for the whole run.
static TOKEN: LazyLock<(tempfile::TempDir, LiveToken)> = LazyLock::new(|| {
    let dir = tempfile::tempdir().expect("a temporary data dir");
    let live = LiveToken::load_or_create(&dir.path().join(TOKEN_FILE_NAME)).expect("a token file");
    (dir, live)
});

fuzz_target!(|data: &[u8]| {
    let Some((&peer_byte, head)) = data.split_first() else { return };
    let peer = PEERS[usize::from(peer_byte) % PEERS.len()];
    let (_, live) = &*TOKEN;
    let token = live.current();
    let head = replace_all(head, TOKEN_PLACEHOLDER, token.as_bytes());
    let Some(request) = as_hyper_would(&head) else { return };

    let admitted = fuzzing::admit(peer, &request, live).map_err(|(status, _)| status.as_u16());
    assert_eq!(admitted, reference_admit(peer, &request, token.as_bytes()), "admit breaks docs/node-http.md §2");

    let json = fuzzing::require_json(&request).map_err(|(status, _)| status.as_u16());
    assert_eq!(json, reference_require_json(request.headers()), "the media type check disagrees");

    let items = accept_items(request.headers());
    let accepts = items.iter().any(|item| item == "text/event-stream");
    assert_eq!(fuzzing::accepts_event_stream(&request), accepts);
    let plain_ok = items.iter().any(|item| ["text/plain", "text/*", "*/*"].contains(&item.as_str()));
    assert_eq!(fuzzing::wants_event_stream(&request), accepts && !plain_ok);
});

/// The request hyper would pass to the service, or `None` where hyper answers 400 itself.
fn as_hyper_would(head: &[u8]) -> Option<Request<()>> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut headers);
    if !parsed.parse(head).ok()?.is_complete() {
        return None;
    }
    let mut builder = Request::builder()
        .method(Method::from_bytes(parsed.method?.as_bytes()).ok()?)
        .uri(http::Uri::try_from(parsed.path?).ok()?);
    for header in parsed.headers.iter() {
        let name = http::HeaderName::from_bytes(header.name.as_bytes()).ok()?;
        let value = http::HeaderValue::from_bytes(header.value).ok()?;
        builder = builder.header(name, value);
    }
    builder.body(()).ok()
}

fn replace_all(haystack: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut rest = haystack;
    while !rest.is_empty() {
        if rest.starts_with(needle) {
            out.extend_from_slice(with);
            rest = &rest[needle.len()..];
        } else {
            out.push(rest[0]);
            rest = &rest[1..];
        }
    }
    out
}

/// The checks of `docs/node-http.md` §2.1-§2.5 in order, as status codes: 403 for peer, browser and
/// Host, 404 for OAuth discovery, 401 for the token.
fn reference_admit(peer: IpAddr, request: &Request<()>, token: &[u8]) -> Result<(), u16> {
    let loopback_peer = match peer {
        IpAddr::V4(v4) => v4.octets()[0] == 127,
        IpAddr::V6(v6) => v6 == Ipv6Addr::LOCALHOST || v6.to_ipv4_mapped().is_some_and(|v4| v4.octets()[0] == 127),
    };
    if !loopback_peer {
        return Err(403);
    }
    let headers = request.headers();
    if ["origin", "referer", "sec-fetch-site"].iter().any(|name| headers.contains_key(*name)) {
        return Err(403);
    }
    let hosts: Vec<_> = headers.get_all("host").iter().collect();
    let host_ok = hosts.len() == 1 && is_loopback_authority(hosts[0].as_bytes());
    let target_ok = request.uri().authority().is_none_or(|a| is_loopback_authority(a.as_str().as_bytes()));
    if !host_ok || !target_ok {
        return Err(403);
    }
    if request.method() == Method::GET && is_oauth_discovery_path(request.uri().path()) {
        return Err(404);
    }
    let credentials: Vec<_> = headers.get_all("authorization").iter().collect();
    let bearer_ok = credentials.len() == 1 && {
        let value = credentials[0].as_bytes();
        value.len() > 7
            && value[..6].eq_ignore_ascii_case(b"bearer")
            && value[6] == b' '
            && value[7..].trim_ascii() == token
    };
    if bearer_ok { Ok(()) } else { Err(401) }
}

/// `127.0.0.1`, `localhost` in any case, or `[::1]`, each with an optional `:<port>` (1-5 digits
/// that fit a u16).
fn is_loopback_authority(authority: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(authority) else { return false };
    let (name, port) = match text.strip_prefix("[::1]") {
        Some(port) => ("[::1]", port),
        None => text.split_at(text.find(':').unwrap_or(text.len())),
    };
    let port_ok = match port.strip_prefix(':') {
        None => port.is_empty(),
        Some(digits) => {
            !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && digits.parse::<u16>().is_ok()
        }
    };
    port_ok && (name == "127.0.0.1" || name == "[::1]" || name.eq_ignore_ascii_case("localhost"))
}

fn is_oauth_discovery_path(path: &str) -> bool {
    let documents = ["oauth-protected-resource", "oauth-authorization-server", "openid-configuration"];
    let at_root = documents.iter().any(|document| {
        let root = format!("/.well-known/{document}");
        path == root || path.starts_with(&format!("{root}/"))
    });
    at_root || path.ends_with("/.well-known/openid-configuration")
}

/// Check 7: one `Content-Type` whose media type is `application/json` (any case, parameters
/// ignored); 415 otherwise.
fn reference_require_json(headers: &HeaderMap) -> Result<(), u16> {
    let values: Vec<_> = headers.get_all("content-type").iter().collect();
    let ok = values.len() == 1
        && values[0].to_str().is_ok_and(|value| {
            let media = value.to_ascii_lowercase();
            media.split(';').next().is_some_and(|media| media.trim() == "application/json")
        });
    if ok { Ok(()) } else { Err(415) }
}

/// Every media type listed in every `Accept` header, lower-cased, parameters dropped.
fn accept_items(headers: &HeaderMap) -> Vec<String> {
    let mut items = Vec::new();
    for value in headers.get_all("accept") {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            let media = item.split(';').next().unwrap_or("");
            items.push(media.trim().to_ascii_lowercase());
        }
    }
    items
}
