//! The security gate: every check a request passes before its body is read, in the order of
//! `docs/node-http.md` §2, and the one table of refusals (status + short text body) the server can
//! answer with.
//!
//! Why each layer exists, given that the socket is bound to 127.0.0.1 only:
//! - a browser tab is also a loopback client, so any `Origin`, `Referer` or `Sec-Fetch-Site`
//!   (headers only browsers send) is refused, and no `Access-Control-*` header is ever emitted;
//! - DNS rebinding makes a browser send a foreign `Host`, so only loopback names pass;
//! - any local process can reach the port, so every verb needs the bearer token from a file
//!   only this user can read.
//!
//! `Sec-Fetch-Mode` is deliberately not a browser signal: Node's fetch (undici), which the
//! TypeScript MCP SDK uses, sends `sec-fetch-mode: cors`.
//!
//! # The one answer given before the token: OAuth discovery is `404`
//!
//! A `GET` for OAuth discovery metadata (RFC 9728 protected-resource metadata, RFC 8414
//! authorization-server metadata, OpenID Connect discovery; see [`is_oauth_discovery`]) is
//! answered `404` with an empty body once the peer, browser and Host checks passed, *before* the
//! bearer check. The node has no authorization server: its token comes from a file, and a client
//! configured with a static `Authorization` header needs to learn only that there is no OAuth
//! here. `404` is the answer both official SDKs read that way (TypeScript 1.32: protected-resource
//! metadata "not implemented", authorization-server metadata "try the next URL"; Python 2.3: "not
//! served at this URL, try the next candidate"). The alternatives break clients:
//! - `401` (the bearer check first) tells a client that probes before connecting, or without its
//!   configured headers, that discovery itself needs authorization;
//! - `200` with the text probe (what an authenticated `GET` gets) is not JSON: the TypeScript SDK
//!   throws parsing authorization-server metadata and aborts the connection;
//! - `5xx` makes the Python SDK stop with "metadata request failed".
//!
//! The exception reveals nothing (the paths are public, the answer is constant and empty) and
//! dispatches nothing; every other path and verb still needs the token first. The browser and
//! Host checks still come first, and no `Access-Control-*` header is emitted here either.

use std::net::IpAddr;

use bytes::Bytes;
use clawmcp_mcp::ProtocolVersion;
use clawmcp_mcp::modern::RoutingHeaders;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Body;

use crate::token::LiveToken;

/// Every way the server refuses a request, with its exact status and text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    NotLoopback,
    OriginPresent,
    BrowserContext,
    HostNotAllowed,
    /// OAuth discovery: there is no authorization server here (see the module docs).
    NoOAuth,
    Unauthorized,
    MethodNotAllowed,
    UnsupportedMediaType,
    TooLarge,
    TimedOut,
    Busy,
    BadBody,
    Internal,
}

impl Refusal {
    pub(crate) fn status(self) -> StatusCode {
        match self {
            Refusal::NotLoopback | Refusal::OriginPresent | Refusal::BrowserContext | Refusal::HostNotAllowed => {
                StatusCode::FORBIDDEN
            }
            Refusal::NoOAuth => StatusCode::NOT_FOUND,
            Refusal::Unauthorized => StatusCode::UNAUTHORIZED,
            Refusal::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Refusal::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Refusal::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Refusal::TimedOut => StatusCode::REQUEST_TIMEOUT,
            Refusal::Busy => StatusCode::SERVICE_UNAVAILABLE,
            Refusal::BadBody => StatusCode::BAD_REQUEST,
            Refusal::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub(crate) fn text(self) -> &'static str {
        match self {
            Refusal::NotLoopback => "loopback only",
            Refusal::OriginPresent => "origin not allowed",
            Refusal::BrowserContext => "browser context not allowed",
            Refusal::HostNotAllowed => "host not allowed",
            Refusal::NoOAuth => "no OAuth metadata: this server takes the bearer token from its token file",
            Refusal::Unauthorized => "missing or invalid bearer token",
            Refusal::MethodNotAllowed => "POST only",
            Refusal::UnsupportedMediaType => "application/json required",
            Refusal::TooLarge => "request body too large",
            Refusal::TimedOut => "request timed out",
            Refusal::Busy => "server busy",
            Refusal::BadBody => "request body could not be read",
            Refusal::Internal => "internal error",
        }
    }

    /// The header a client needs to act on this refusal, if any.
    fn extra_header(self) -> Option<(HeaderName, HeaderValue)> {
        match self {
            Refusal::Unauthorized => Some((header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"))),
            Refusal::MethodNotAllowed => Some((header::ALLOW, HeaderValue::from_static("GET, POST"))),
            Refusal::Busy => Some((header::RETRY_AFTER, HeaderValue::from_static("1"))),
            _ => None,
        }
    }

    pub(crate) fn into_response(self) -> Response<Full<Bytes>> {
        if self == Refusal::NoOAuth {
            // Empty: a client reads only the status, and the text (for our log) names the token file.
            let mut response = Response::new(Full::new(Bytes::new()));
            *response.status_mut() = self.status();
            return response;
        }
        let mut response = plain_text(self.status(), self.text().to_owned());
        if let Some((name, value)) = self.extra_header() {
            response.headers_mut().insert(name, value);
        }
        response
    }
}

/// A `text/plain` response.
pub(crate) fn plain_text(status: StatusCode, text: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(text)));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

/// The first checks of `docs/node-http.md` §2 (§2.1-§2.5): loopback peer, browser signals, Host,
/// bearer token. Applies to every verb, so nothing is dispatched, not even the GET probe, without
/// the token. The one exception, OAuth discovery, is refused with `404` between the Host and
/// token checks (see the module docs).
///
/// Admitted, the answer is the authentication generation of the token that matched (see
/// [`LiveToken::admit`]): the request carries that snapshot from here on.
pub(crate) fn admit<B>(peer: IpAddr, request: &Request<B>, token: &LiveToken) -> Result<u64, Refusal> {
    if !peer.to_canonical().is_loopback() {
        return Err(Refusal::NotLoopback);
    }
    let headers = request.headers();
    if headers.contains_key(header::ORIGIN) {
        return Err(Refusal::OriginPresent);
    }
    if headers.contains_key(header::REFERER) || headers.contains_key(SEC_FETCH_SITE) {
        return Err(Refusal::BrowserContext);
    }
    let host_ok = single(headers, header::HOST).is_some_and(|host| is_loopback_host(host.as_bytes()))
        // An absolute-form target (`POST http://evil.example/`) overrides Host: check it too.
        && request.uri().authority().is_none_or(|authority| is_loopback_host(authority.as_str().as_bytes()));
    if !host_ok {
        return Err(Refusal::HostNotAllowed);
    }
    if is_oauth_discovery(request) {
        return Err(Refusal::NoOAuth);
    }
    let presented = single(headers, header::AUTHORIZATION).and_then(|value| bearer_credential(value.as_bytes()));
    presented.and_then(|credential| token.admit(credential)).ok_or(Refusal::Unauthorized)
}

/// Sent by browsers only; a constant so the name is not parsed on every request.
const SEC_FETCH_SITE: HeaderName = HeaderName::from_static("sec-fetch-site");

/// Well-known documents OAuth clients fetch to find an authorization server: RFC 9728, RFC 8414,
/// OpenID Connect Discovery 1.0.
const OAUTH_WELL_KNOWN: [&str; 3] = [
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-authorization-server",
    "/.well-known/openid-configuration",
];

/// A `GET` for OAuth discovery metadata, in every form the SDKs build: a well-known document at
/// the root, with the resource's path after it (`/.well-known/oauth-protected-resource/mcp`, RFC
/// 9728 and RFC 8414 path insertion), or OpenID configuration appended to the path
/// (`/mcp/.well-known/openid-configuration`, OpenID Connect Discovery 1.0).
fn is_oauth_discovery<B>(request: &Request<B>) -> bool {
    if request.method() != Method::GET {
        return false;
    }
    let path = request.uri().path();
    let under_well_known = OAUTH_WELL_KNOWN
        .iter()
        .any(|document| path.strip_prefix(document).is_some_and(|rest| rest.is_empty() || rest.starts_with('/')));
    under_well_known || path.ends_with("/.well-known/openid-configuration")
}

/// Check 7: a POST's media type (before any `;` parameters) is `application/json`. A browser
/// cannot send that cross-origin without a preflight, which this server never honours.
pub(crate) fn require_json<B>(request: &Request<B>) -> Result<(), Refusal> {
    let media_type = single(request.headers(), header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(|value| value.split(';').next().unwrap_or_default().trim());
    match media_type {
        Some(media_type) if media_type.eq_ignore_ascii_case("application/json") => Ok(()),
        _ => Err(Refusal::UnsupportedMediaType),
    }
}

/// A `GET` asking only for an SSE stream (an MCP client's server-push channel) rather than the
/// text probe: `text/event-stream` is accepted and `text/plain` or `*/*` is not.
pub(crate) fn wants_event_stream<B>(request: &Request<B>) -> bool {
    accepted_media_types(request).any(|media| media.eq_ignore_ascii_case("text/event-stream"))
        && !accepted_media_types(request).any(|media| {
            media.eq_ignore_ascii_case("text/plain") || media.eq_ignore_ascii_case("text/*") || media == "*/*"
        })
}

/// A `POST` whose client can read an SSE answer: `text/event-stream` is listed in `Accept`
/// (MCP clients send `application/json, text/event-stream`). Wildcards do not count: only a
/// client that names the stream type is known to parse it.
pub(crate) fn accepts_event_stream<B>(request: &Request<B>) -> bool {
    accepted_media_types(request).any(|media| media.eq_ignore_ascii_case("text/event-stream"))
}

/// The revision the request's `MCP-Protocol-Version` header names, read leniently (never a
/// refusal: clients send a newer header than they negotiated, and a mismatch costs them nothing
/// but fields they can parse). `None` without the header.
pub(crate) fn protocol_version<B>(request: &Request<B>) -> Option<ProtocolVersion> {
    let value = request.headers().get("mcp-protocol-version")?;
    Some(value.to_str().map_or(ProtocolVersion::NEWEST, ProtocolVersion::from_header))
}

/// The headers a stateless (2026-07-28) request repeats from its body, borrowed from `headers`
/// (see `clawmcp_mcp::modern::check_routing_headers`). A value sent twice, or not visible ASCII,
/// never matches.
pub(crate) fn routing_headers(headers: &http::HeaderMap) -> RoutingHeaders<'_> {
    let one = |name: &str| {
        let mut values = headers.get_all(name).iter();
        let first = values.next()?;
        Some(match values.next() {
            Some(_) => Err(()),
            None => first.to_str().map_err(|_| ()),
        })
    };
    RoutingHeaders { protocol_version: one("mcp-protocol-version"), method: one("mcp-method"), name: one("mcp-name") }
}

/// The media types of every `Accept` header, without parameters (compare them ignoring case).
/// Borrowed from the headers: nothing is allocated per request.
fn accepted_media_types<B>(request: &Request<B>) -> impl Iterator<Item = &str> {
    request
        .headers()
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|item| item.split(';').next().unwrap_or_default().trim())
}

/// Check 8, first half: a declared `Content-Length` over the cap is refused before a byte of the
/// body is read (hyper sends `100 Continue` only once the body is polled, so the client never
/// uploads). Streamed and chunked bodies are capped while reading.
pub(crate) fn refuse_declared_oversize<B: Body>(body: &B, max_body_bytes: usize) -> Result<(), Refusal> {
    if body.size_hint().lower() > max_body_bytes as u64 { Err(Refusal::TooLarge) } else { Ok(()) }
}

/// The value of a header that must appear exactly once; a repeated one is as bad as none.
fn single(headers: &HeaderMap, name: HeaderName) -> Option<&HeaderValue> {
    let mut values = headers.get_all(name).iter();
    let first = values.next()?;
    values.next().is_none().then_some(first)
}

/// `127.0.0.1`, `localhost` (any case) or `[::1]`, optionally followed by `:<port>`.
fn is_loopback_host(host: &[u8]) -> bool {
    let Ok(host) = std::str::from_utf8(host) else {
        return false;
    };
    let name = match host.rsplit_once(':') {
        // `[::1]` contains colons itself: only a colon after the bracket starts a port.
        Some((name, port)) if !port.contains(']') => {
            if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) || port.parse::<u16>().is_err() {
                return false;
            }
            name
        }
        _ => host,
    };
    name == "127.0.0.1" || name.eq_ignore_ascii_case("localhost") || name == "[::1]"
}

/// The credential of `Bearer <credential>` (scheme in any case, credential trimmed).
fn bearer_credential(value: &[u8]) -> Option<&[u8]> {
    let space = value.iter().position(|&b| b == b' ')?;
    let (scheme, rest) = value.split_at(space);
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    let credential = rest.trim_ascii();
    (!credential.is_empty()).then_some(credential)
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;

    fn live_token(dir: &tempfile::TempDir) -> (LiveToken, String) {
        let path = dir.path().join(crate::token::TOKEN_FILE_NAME);
        let live = LiveToken::load_or_create(&path).unwrap();
        let token = live.current().to_string();
        (live, token)
    }

    fn request(token: &str) -> http::request::Builder {
        Request::post("/").header("host", "127.0.0.1:8765").header("authorization", format!("Bearer {token}"))
    }

    #[test]
    fn a_non_loopback_peer_is_refused_before_anything_else() {
        let dir = tempfile::tempdir().unwrap();
        let (live, token) = live_token(&dir);
        let ok = request(&token).body(()).unwrap();
        assert_eq!(admit(IpAddr::V4(Ipv4Addr::LOCALHOST), &ok, &live), Ok(0));
        assert_eq!(admit(IpAddr::V6(Ipv6Addr::LOCALHOST), &ok, &live), Ok(0));
        let mapped = IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped());
        assert_eq!(admit(mapped, &ok, &live), Ok(0));
        let lan = IpAddr::V4(Ipv4Addr::new(192, 168, 1, 20));
        assert_eq!(admit(lan, &ok, &live), Err(Refusal::NotLoopback));
        let hostile = request(&token).header("origin", "https://evil.example").body(()).unwrap();
        assert_eq!(admit(lan, &hostile, &live), Err(Refusal::NotLoopback));
    }

    #[test]
    fn loopback_host_names() {
        for ok in ["127.0.0.1", "127.0.0.1:8765", "localhost", "LocalHost:1", "[::1]", "[::1]:65535"] {
            assert!(is_loopback_host(ok.as_bytes()), "{ok}");
        }
        for bad in [
            "",
            "evil.example",
            "127.0.0.1.evil.example",
            "localhost.",
            "127.0.0.1:",
            "127.0.0.1:65536",
            "127.0.0.1:+80",
            "127.0.0.1:80:80",
            "::1",
            "[::2]",
            "127.0.0.2",
            "0.0.0.0",
        ] {
            assert!(!is_loopback_host(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn absolute_form_target_must_be_loopback_too() {
        let dir = tempfile::tempdir().unwrap();
        let (live, token) = live_token(&dir);
        let local = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let rebound = Request::post("http://evil.example/")
            .header("host", "127.0.0.1")
            .header("authorization", format!("Bearer {token}"))
            .body(())
            .unwrap();
        assert_eq!(admit(local, &rebound, &live), Err(Refusal::HostNotAllowed));
        let absolute_local = Request::post("http://localhost:9/")
            .header("host", "localhost:9")
            .header("authorization", format!("Bearer {token}"))
            .body(())
            .unwrap();
        assert_eq!(admit(local, &absolute_local, &live), Ok(0));
    }

    #[test]
    fn repeated_host_or_authorization_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (live, token) = live_token(&dir);
        let local = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let two_hosts = request(&token).header("host", "evil.example").body(()).unwrap();
        assert_eq!(admit(local, &two_hosts, &live), Err(Refusal::HostNotAllowed));
        let two_tokens = request(&token).header("authorization", "Bearer nope").body(()).unwrap();
        assert_eq!(admit(local, &two_tokens, &live), Err(Refusal::Unauthorized));
    }

    #[test]
    fn bearer_parsing() {
        assert_eq!(bearer_credential(b"Bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer_credential(b"bEaReR   abc \t"), Some(&b"abc"[..]));
        assert_eq!(bearer_credential(b"Bearer "), None);
        assert_eq!(bearer_credential(b"Bearer"), None);
        assert_eq!(bearer_credential(b"Basic abc"), None);
        assert_eq!(bearer_credential(b"Bearerabc"), None);
    }

    #[test]
    fn media_type_ignores_parameters_and_case() {
        let with = |value: &str| require_json(&Request::post("/").header("content-type", value).body(()).unwrap());
        assert_eq!(with("application/json"), Ok(()));
        assert_eq!(with(" Application/JSON ; charset=utf-8"), Ok(()));
        assert_eq!(with("text/plain"), Err(Refusal::UnsupportedMediaType));
        assert_eq!(with("application/json-seq"), Err(Refusal::UnsupportedMediaType));
        assert_eq!(require_json(&Request::post("/").body(()).unwrap()), Err(Refusal::UnsupportedMediaType));
    }

    #[test]
    fn an_event_stream_answer_needs_the_type_named_in_accept() {
        let with = |values: &[&str]| {
            let mut request = Request::post("/");
            for value in values {
                request = request.header("accept", *value);
            }
            accepts_event_stream(&request.body(()).unwrap())
        };
        assert!(with(&["application/json, text/event-stream"]));
        assert!(with(&["application/json", "Text/Event-Stream;q=0.9"]));
        assert!(!with(&["application/json"]));
        assert!(!with(&["*/*"]), "a wildcard is not a promise to parse SSE");
        assert!(!with(&["text/*"]));
        assert!(!with(&[]));
    }

    #[test]
    fn refusals_never_carry_cors_headers() {
        for refusal in [
            Refusal::NotLoopback,
            Refusal::OriginPresent,
            Refusal::BrowserContext,
            Refusal::HostNotAllowed,
            Refusal::NoOAuth,
            Refusal::Unauthorized,
            Refusal::MethodNotAllowed,
            Refusal::UnsupportedMediaType,
            Refusal::TooLarge,
            Refusal::TimedOut,
            Refusal::Busy,
            Refusal::BadBody,
            Refusal::Internal,
        ] {
            let response = refusal.into_response();
            assert_eq!(response.status(), refusal.status());
            assert!(response.headers().keys().all(|name| !name.as_str().starts_with("access-control-")));
            if refusal == Refusal::NoOAuth {
                assert!(response.headers().get(header::CONTENT_TYPE).is_none());
                assert_eq!(Body::size_hint(response.body()).exact(), Some(0));
            } else {
                assert_eq!(response.headers()[header::CONTENT_TYPE], "text/plain; charset=utf-8");
            }
        }
    }

    #[test]
    fn oauth_discovery_paths_in_every_form_the_sdks_build() {
        let get = |path: &str| is_oauth_discovery(&Request::get(path).body(()).unwrap());
        for path in [
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource/",
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-authorization-server",
            "/.well-known/oauth-authorization-server/tenant/1",
            "/.well-known/openid-configuration",
            "/.well-known/openid-configuration/mcp",
            "/mcp/.well-known/openid-configuration",
            "/.well-known/oauth-protected-resource?x=1",
        ] {
            assert!(get(path), "{path}");
        }
        for path in [
            "/",
            "/mcp",
            "/.well-known",
            "/.well-known/",
            "/.well-known/oauth-protected-resourcex",
            "/.well-known/oauth-authorization-server-x",
            "/mcp/.well-known/oauth-protected-resource",
            "/.well-known/openid-configuration.json",
            "/.well-known/security.txt",
        ] {
            assert!(!get(path), "{path}");
        }
        for method in [Method::POST, Method::HEAD, Method::PUT, Method::OPTIONS] {
            let request = Request::builder().method(method.clone()).uri("/.well-known/oauth-protected-resource");
            assert!(!is_oauth_discovery(&request.body(()).unwrap()), "{method}");
        }
    }

    #[test]
    fn oauth_discovery_is_answered_after_the_browser_and_host_checks_and_before_the_token() {
        let dir = tempfile::tempdir().unwrap();
        let (live, token) = live_token(&dir);
        let local = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let probe = || Request::get("/.well-known/oauth-protected-resource").header("host", "127.0.0.1:8765");
        assert_eq!(admit(local, &probe().body(()).unwrap(), &live), Err(Refusal::NoOAuth));
        let wrong_token = probe().header("authorization", "Bearer nope").body(()).unwrap();
        assert_eq!(admit(local, &wrong_token, &live), Err(Refusal::NoOAuth));
        let right_token = probe().header("authorization", format!("Bearer {token}")).body(()).unwrap();
        assert_eq!(admit(local, &right_token, &live), Err(Refusal::NoOAuth));
        let lan = IpAddr::V4(Ipv4Addr::new(192, 168, 1, 20));
        assert_eq!(admit(lan, &probe().body(()).unwrap(), &live), Err(Refusal::NotLoopback));
        let browser = probe().header("origin", "http://127.0.0.1:8765").body(()).unwrap();
        assert_eq!(admit(local, &browser, &live), Err(Refusal::OriginPresent));
        let referred = probe().header("referer", "http://127.0.0.1:8765/").body(()).unwrap();
        assert_eq!(admit(local, &referred, &live), Err(Refusal::BrowserContext));
        let rebound = Request::get("/.well-known/oauth-protected-resource").header("host", "evil.example");
        assert_eq!(admit(local, &rebound.body(()).unwrap(), &live), Err(Refusal::HostNotAllowed));
    }
}
