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
use http::{Method, Response, StatusCode, Uri};
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
    /// Over the file allowance of a declared file command.
    FileEnvelopeTooLarge,
    /// `X-OpenClaw-File-Command` repeated, not ASCII, or naming no file command of this server.
    FileCommandUnknown,
    /// `X-OpenClaw-File-Command` names another command than the body's `tools/call`.
    FileCommandMismatch,
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
            Refusal::TooLarge | Refusal::FileEnvelopeTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Refusal::FileCommandUnknown | Refusal::FileCommandMismatch => StatusCode::BAD_REQUEST,
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
            Refusal::TooLarge => {
                "request body too large (over 4 MiB; a file command sent with X-OpenClaw-File-Command: <command> may \
                 carry up to 24 MiB)"
            }
            Refusal::FileEnvelopeTooLarge => "request body too large for a file command (over its 24 MiB allowance)",
            Refusal::FileCommandUnknown => {
                "X-OpenClaw-File-Command must be sent once and name a file command this server serves (file.fetch, \
                 file.write, ...: docs/node-http.md §12)"
            }
            Refusal::FileCommandMismatch => {
                "X-OpenClaw-File-Command names another command than the tools/call in the body: send the header only \
                 with a tools/call of that command"
            }
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
pub(crate) fn admit(
    peer: IpAddr,
    method: &Method,
    target: &Uri,
    headers: &Headers<'_>,
    token: &LiveToken,
) -> Result<u64, Refusal> {
    if !peer.to_canonical().is_loopback() {
        return Err(Refusal::NotLoopback);
    }
    if headers.origin {
        return Err(Refusal::OriginPresent);
    }
    if headers.browser_context {
        return Err(Refusal::BrowserContext);
    }
    let host_ok = headers.host.single().is_some_and(|host| is_loopback_host(host.as_bytes()))
        // An absolute-form target (`POST http://evil.example/`) overrides Host: check it too.
        && target.authority().is_none_or(|authority| is_loopback_host(authority.as_str().as_bytes()));
    if !host_ok {
        return Err(Refusal::HostNotAllowed);
    }
    if is_oauth_discovery(method, target) {
        return Err(Refusal::NoOAuth);
    }
    let presented = headers.authorization.single().and_then(|value| bearer_credential(value.as_bytes()));
    presented.and_then(|credential| token.admit(credential)).ok_or(Refusal::Unauthorized)
}

/// The request headers the gate and the dispatcher read, found in one pass over the header map.
///
/// Why one pass: a request carries a handful of headers, and the checks ask about a dozen names
/// (browser signals, `Host`, `Authorization`, `Content-Type`, `Accept`, the MCP routing headers);
/// a lookup per name hashed each name (and parsed the custom ones) on every request, which was
/// a visible share of a `ping`'s cost (bench/NODE_RESULTS.md). Comparing each present header's
/// name against the few we care about is cheaper than hashing each of those names once.
#[derive(Debug, Default)]
pub(crate) struct Headers<'a> {
    /// `Origin` is present (any value).
    origin: bool,
    /// `Referer` or `Sec-Fetch-Site` is present: headers only browsers send.
    browser_context: bool,
    host: Once<'a>,
    authorization: Once<'a>,
    content_type: Once<'a>,
    /// Some `Accept` value lists `text/event-stream`.
    accepts_event_stream: bool,
    /// Some `Accept` value lists `text/plain`, `text/*` or `*/*` (what the text probe answers).
    accepts_plain_text: bool,
    protocol_version: Once<'a>,
    mcp_method: Once<'a>,
    mcp_name: Once<'a>,
    file_command: Once<'a>,
}

/// A header that may appear at most once, as seen in the map.
#[derive(Debug, Default, Clone, Copy)]
enum Once<'a> {
    #[default]
    Absent,
    One(&'a HeaderValue),
    /// Sent more than once: the first value, for the one reader that is lenient about repeats.
    Repeated(&'a HeaderValue),
}

impl<'a> Once<'a> {
    fn see(&mut self, value: &'a HeaderValue) {
        *self = match *self {
            Once::Absent => Once::One(value),
            Once::One(first) | Once::Repeated(first) => Once::Repeated(first),
        };
    }

    /// The value of a header that must appear exactly once; a repeated one is as bad as none.
    fn single(self) -> Option<&'a HeaderValue> {
        match self {
            Once::One(value) => Some(value),
            Once::Absent | Once::Repeated(_) => None,
        }
    }

    fn first(self) -> Option<&'a HeaderValue> {
        match self {
            Once::One(value) | Once::Repeated(value) => Some(value),
            Once::Absent => None,
        }
    }

    /// The routing-header reading: a repeated or non-visible-ASCII value never matches.
    fn routing(self) -> Option<Result<&'a str, ()>> {
        match self {
            Once::Absent => None,
            Once::One(value) => Some(value.to_str().map_err(|_| ())),
            Once::Repeated(_) => Some(Err(())),
        }
    }
}

impl<'a> Headers<'a> {
    pub(crate) fn scan(map: &'a HeaderMap) -> Self {
        let mut seen = Headers::default();
        for (name, value) in map {
            // Standard names compare as a tag; the custom ones (HeaderName keeps them lowercase)
            // by their bytes.
            if name == header::HOST {
                seen.host.see(value);
            } else if name == header::AUTHORIZATION {
                seen.authorization.see(value);
            } else if name == header::CONTENT_TYPE {
                seen.content_type.see(value);
            } else if name == header::ACCEPT {
                seen.note_accept(value);
            } else if name == header::ORIGIN {
                seen.origin = true;
            } else if name == header::REFERER {
                seen.browser_context = true;
            } else {
                match name.as_str() {
                    "sec-fetch-site" => seen.browser_context = true,
                    "mcp-protocol-version" => seen.protocol_version.see(value),
                    "mcp-method" => seen.mcp_method.see(value),
                    "mcp-name" => seen.mcp_name.see(value),
                    "x-openclaw-file-command" => seen.file_command.see(value),
                    _ => {}
                }
            }
        }
        seen
    }

    /// The media types of one `Accept` value, without parameters, compared ignoring case.
    fn note_accept(&mut self, value: &HeaderValue) {
        let Ok(value) = value.to_str() else { return };
        for media in value.split(',').map(|item| item.split(';').next().unwrap_or_default().trim()) {
            if media.eq_ignore_ascii_case("text/event-stream") {
                self.accepts_event_stream = true;
            } else if media.eq_ignore_ascii_case("text/plain") || media.eq_ignore_ascii_case("text/*") || media == "*/*"
            {
                self.accepts_plain_text = true;
            }
        }
    }
}

/// The file command a request declares in `X-OpenClaw-File-Command` (`docs/node-http.md` §12),
/// if any; a repeated or non-visible-ASCII value is refused. Whether this server has the command
/// is the caller's check.
pub(crate) fn file_command<'a>(headers: &Headers<'a>) -> Result<Option<&'a str>, Refusal> {
    match headers.file_command {
        Once::Absent => Ok(None),
        Once::One(value) => value.to_str().map(Some).map_err(|_| Refusal::FileCommandUnknown),
        Once::Repeated(_) => Err(Refusal::FileCommandUnknown),
    }
}

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
fn is_oauth_discovery(method: &Method, target: &Uri) -> bool {
    if method != Method::GET {
        return false;
    }
    let path = target.path();
    let under_well_known = OAUTH_WELL_KNOWN
        .iter()
        .any(|document| path.strip_prefix(document).is_some_and(|rest| rest.is_empty() || rest.starts_with('/')));
    under_well_known || path.ends_with("/.well-known/openid-configuration")
}

/// Check 7: a POST's media type (before any `;` parameters) is `application/json`. A browser
/// cannot send that cross-origin without a preflight, which this server never honours.
pub(crate) fn require_json(headers: &Headers<'_>) -> Result<(), Refusal> {
    let media_type = headers
        .content_type
        .single()
        .and_then(|value| value.to_str().ok())
        .map(|value| value.split(';').next().unwrap_or_default().trim());
    match media_type {
        Some(media_type) if media_type.eq_ignore_ascii_case("application/json") => Ok(()),
        _ => Err(Refusal::UnsupportedMediaType),
    }
}

/// A `GET` asking only for an SSE stream (an MCP client's server-push channel) rather than the
/// text probe: `text/event-stream` is accepted and `text/plain` or `*/*` is not.
pub(crate) fn wants_event_stream(headers: &Headers<'_>) -> bool {
    headers.accepts_event_stream && !headers.accepts_plain_text
}

/// A `POST` whose client can read an SSE answer: `text/event-stream` is listed in `Accept`
/// (MCP clients send `application/json, text/event-stream`). Wildcards do not count: only a
/// client that names the stream type is known to parse it.
pub(crate) fn accepts_event_stream(headers: &Headers<'_>) -> bool {
    headers.accepts_event_stream
}

/// The revision the request's `MCP-Protocol-Version` header names, read leniently (never a
/// refusal: clients send a newer header than they negotiated, and a mismatch costs them nothing
/// but fields they can parse). `None` without the header.
pub(crate) fn protocol_version(headers: &Headers<'_>) -> Option<ProtocolVersion> {
    let value = headers.protocol_version.first()?;
    Some(value.to_str().map_or(ProtocolVersion::NEWEST, ProtocolVersion::from_header))
}

/// The headers a stateless (2026-07-28) request repeats from its body, borrowed from `headers`
/// (see `clawmcp_mcp::modern::check_routing_headers`). A value sent twice, or not visible ASCII,
/// never matches.
pub(crate) fn routing_headers<'a>(headers: &Headers<'a>) -> RoutingHeaders<'a> {
    RoutingHeaders {
        protocol_version: headers.protocol_version.routing(),
        method: headers.mcp_method.routing(),
        name: headers.mcp_name.routing(),
    }
}

/// Check 8, first half: a declared `Content-Length` over the cap is refused before a byte of the
/// body is read (hyper sends `100 Continue` only once the body is polled, so the client never
/// uploads). Streamed and chunked bodies are capped while reading.
pub(crate) fn refuse_declared_oversize<B: Body>(body: &B, max_body_bytes: usize) -> Result<(), Refusal> {
    if body.size_hint().lower() > max_body_bytes as u64 { Err(Refusal::TooLarge) } else { Ok(()) }
}

/// `127.0.0.1`, `localhost` (any case) or `[::1]`, optionally followed by `:<port>`. On bytes,
/// with no UTF-8 pass and no integer parse: it runs on every request.
fn is_loopback_host(host: &[u8]) -> bool {
    let name = match host.iter().rposition(|&b| b == b':') {
        // `[::1]` contains colons itself: only a colon after the bracket starts a port.
        Some(colon) if !host[colon..].contains(&b']') => {
            if !is_port(&host[colon + 1..]) {
                return false;
            }
            &host[..colon]
        }
        _ => host,
    };
    name == b"127.0.0.1" || name.eq_ignore_ascii_case(b"localhost") || name == b"[::1]"
}

/// Decimal digits (leading zeros allowed) naming 0..=65535.
fn is_port(digits: &[u8]) -> bool {
    !digits.is_empty()
        && digits
            .iter()
            .try_fold(0u32, |port, &digit| {
                let port = port * 10 + u32::from(digit.wrapping_sub(b'0'));
                (digit.is_ascii_digit() && port <= u32::from(u16::MAX)).then_some(port)
            })
            .is_some()
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

    use http::Request;

    use super::*;

    fn live_token(dir: &tempfile::TempDir) -> (LiveToken, String) {
        let path = dir.path().join(crate::token::TOKEN_FILE_NAME);
        let live = LiveToken::load_or_create(&path).unwrap();
        let token = live.current().to_string();
        (live, token)
    }

    // The checks as the server runs them: the headers scanned once, then each check.
    fn admit<B>(peer: IpAddr, request: &Request<B>, token: &LiveToken) -> Result<u64, Refusal> {
        super::admit(peer, request.method(), request.uri(), &Headers::scan(request.headers()), token)
    }

    fn require_json<B>(request: &Request<B>) -> Result<(), Refusal> {
        super::require_json(&Headers::scan(request.headers()))
    }

    fn accepts_event_stream<B>(request: &Request<B>) -> bool {
        super::accepts_event_stream(&Headers::scan(request.headers()))
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
        for ok in [
            "127.0.0.1",
            "127.0.0.1:8765",
            "localhost",
            "LocalHost:1",
            "[::1]",
            "[::1]:65535",
            "localhost:0080",
            "127.0.0.1:0",
        ] {
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
            "127.0.0.1:1a",
            "127.0.0.1:99999999999",
            "127.0.0.1:-1",
            "[::1]:",
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
        let get = |path: &str| is_oauth_discovery(&Method::GET, &path.parse().unwrap());
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
            let target = "/.well-known/oauth-protected-resource".parse().unwrap();
            assert!(!is_oauth_discovery(&method, &target), "{method}");
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
