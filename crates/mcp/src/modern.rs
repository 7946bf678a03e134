//! The stateless MCP revision, 2026-07-28, served beside the `initialize` revisions (a
//! "dual-era" server).
//!
//! A 2026-07-28 request carries its revision and the client's capabilities in
//! `params._meta["io.modelcontextprotocol/protocolVersion"|"…/clientCapabilities"]` instead of an
//! `initialize` handshake, and there is no session. Such a request is served statelessly:
//! `server/discover` describes the server, every result carries `resultType: "complete"` and the
//! server's identity in `_meta`, lists carry cache hints, and the methods that revision removed
//! (`ping`, `logging/setLevel`, …) are unknown. A request without that `_meta` (and every
//! `initialize`) takes the legacy path untouched, so no existing client sees a change.
//!
//! Not served in this era: `subscriptions/listen` (so no `listChanged` is advertised here) and
//! multi-round-trip requests (no tool of ours needs client input mid-call).

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::jsonrpc::{ErrorCode, RpcError};

/// The stateless revisions served (only through per-request `_meta`, never `initialize`).
pub const MODERN_VERSIONS: &[&str] = &["2026-07-28"];

/// `_meta` key of the request's revision.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the client's capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the server's identity on results.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// Methods 2026-07-28 removed; under that revision they are unknown methods.
const REMOVED_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
    "notifications/initialized",
];

/// A request that speaks the stateless revision: the revision it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModernRequest {
    pub version: &'static str,
}

/// The era a request's `_meta` selects: `None` for the legacy path, the modern request, or the
/// error a malformed or unsupported modern request gets.
pub fn era_of(params: Option<&RawValue>) -> Option<Result<ModernRequest, RpcError>> {
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(rename = "_meta", borrow)]
        meta: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct Meta {
        #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
        version: Option<Value>,
        #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
        capabilities: Option<Value>,
    }
    let params = params?.get();
    // The common case, a legacy request, costs one byte scan (SIMD) rather than a parse. A key
    // spelt with escapes that reads `_meta` needs a `\u` escape (no short escape stands for any
    // of its letters), so only params with `_meta` or a `\u` take the parse: not every string
    // with a quote in it (a file channel input, whose frame is escaped JSON, is mostly such a
    // string).
    let bytes = params.as_bytes();
    let may_name_meta = memchr::memchr2_iter(b'_', b'\\', bytes).any(|at| match bytes[at] {
        b'_' => bytes[at + 1..].starts_with(b"meta"),
        _ => bytes.get(at + 1) == Some(&b'u'),
    });
    if !may_name_meta {
        return None;
    }
    let params: Params<'_> = serde_json::from_str(params).ok()?;
    let meta: Meta = serde_json::from_str(params.meta?.get()).ok()?;
    let requested = meta.version?;
    let Some(requested) = requested.as_str() else {
        return Some(Err(RpcError::new(
            ErrorCode::InvalidParams,
            format!("Invalid params: _meta.{META_PROTOCOL_VERSION} must be a string"),
        )));
    };
    let Some(version) = MODERN_VERSIONS.iter().find(|v| **v == requested) else {
        return Some(Err(unsupported_version(requested)));
    };
    if !meta.capabilities.as_ref().is_some_and(Value::is_object) {
        return Some(Err(RpcError::new(
            ErrorCode::InvalidParams,
            format!(
                "Invalid params: a {version} request must carry _meta.{META_CLIENT_CAPABILITIES} (an object; {{}} for none)"
            ),
        )));
    }
    Some(Ok(ModernRequest { version }))
}

/// The HTTP headers a stateless request repeats from its body (streamable HTTP, 2026-07-28),
/// as received (`None`: absent). A header sent twice is `Some(Err(()))`: first- and last-copy
/// readers would disagree, so it never matches.
#[derive(Debug, Default, Clone, Copy)]
pub struct RoutingHeaders<'a> {
    pub protocol_version: Option<Result<&'a str, ()>>,
    pub method: Option<Result<&'a str, ()>>,
    pub name: Option<Result<&'a str, ()>>,
}

impl RoutingHeaders<'_> {
    /// Whether the version header names a stateless revision (a request saying so must carry
    /// the `_meta` fields even when its body forgot them).
    pub fn names_modern_version(&self) -> bool {
        matches!(self.protocol_version, Some(Ok(version)) if MODERN_VERSIONS.contains(&version))
    }
}

/// The body parameter `Mcp-Name` repeats, for the methods that have one.
fn named_parameter(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    }
}

/// `-32020` unless the routing headers repeat the body exactly: `MCP-Protocol-Version` the
/// `_meta` revision, `Mcp-Method` the method, `Mcp-Name` the named parameter (plain, or
/// `=?base64?…?=` for values a header cannot carry). Checked before anything runs, so a proxy
/// that routes on headers and the server that runs the body always agree on what was asked.
pub fn check_routing_headers(
    request: &ModernRequest,
    method: &str,
    params: Option<&RawValue>,
    headers: &RoutingHeaders<'_>,
) -> Result<(), RpcError> {
    let mismatch = |what: &str| {
        RpcError::new(
            ErrorCode::HeaderMismatch,
            format!("Header mismatch: {what}; a {} request repeats its body in these headers", request.version),
        )
    };
    match headers.protocol_version {
        Some(Ok(version)) if version == request.version => {}
        Some(Ok(version)) => {
            return Err(mismatch(&format!(
                "MCP-Protocol-Version header value '{version}' does not match _meta.{META_PROTOCOL_VERSION} '{}'",
                request.version
            )));
        }
        Some(Err(())) => return Err(mismatch("MCP-Protocol-Version header sent more than once")),
        None => return Err(mismatch("MCP-Protocol-Version header missing")),
    }
    match headers.method {
        Some(Ok(value)) if value == method => {}
        Some(Ok(value)) => {
            return Err(mismatch(&format!("Mcp-Method header value '{value}' does not match body value '{method}'")));
        }
        Some(Err(())) => return Err(mismatch("Mcp-Method header sent more than once")),
        None => return Err(mismatch("Mcp-Method header missing")),
    }
    let Some(key) = named_parameter(method) else { return Ok(()) };
    let body_value = params
        .and_then(|params| serde_json::from_str::<serde_json::Map<String, Value>>(params.get()).ok()?.remove(key));
    // A body without the parameter fails on its own (invalid params); nothing to repeat.
    let Some(Value::String(body_value)) = body_value else { return Ok(()) };
    match headers.name {
        Some(Ok(value)) if decode_header_value(value).as_deref() == Some(body_value.as_str()) => Ok(()),
        Some(Ok(value)) => {
            Err(mismatch(&format!("Mcp-Name header value '{value}' does not match body value '{body_value}'")))
        }
        Some(Err(())) => Err(mismatch("Mcp-Name header sent more than once")),
        None => Err(mismatch("Mcp-Name header missing")),
    }
}

/// The routing headers a client sends with a stateless request (what
/// [`check_routing_headers`] checks on the server): its revision, method and, for the methods
/// that name something, that name encoded for a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatelessRouting {
    pub protocol_version: &'static str,
    pub method: String,
    pub name: Option<String>,
}

/// The routing headers `body` needs, when it is a well-formed stateless request (anything else,
/// every legacy request included, needs none). A relay passing requests through calls it per
/// message, so a stateless client's requests reach the server with the headers it would have
/// sent itself.
pub fn stateless_routing(body: &[u8]) -> Option<StatelessRouting> {
    // The common case, a legacy message, costs one byte scan rather than a parse (a vectorised
    // search: comparing every window was a quarter of `clawmcp call`'s CPU in a file upload).
    memchr::memmem::find(body, META_PROTOCOL_VERSION.as_bytes())?;
    let crate::jsonrpc::Incoming::Request { method, params, .. } = crate::jsonrpc::parse(body).ok()? else {
        return None;
    };
    let request = era_of(params.as_deref())?.ok()?;
    let name = named_parameter(&method).and_then(|key| {
        let params: serde_json::Map<String, Value> = serde_json::from_str(params.as_deref()?.get()).ok()?;
        params.get(key)?.as_str().map(encode_header_value)
    });
    Some(StatelessRouting { protocol_version: request.version, method, name })
}

/// `value` as a header carries it: verbatim when it is visible ASCII without edge spaces,
/// else `=?base64?<standard base64 of its UTF-8>?=` (so is a value that looks wrapped already).
pub fn encode_header_value(value: &str) -> String {
    use base64::Engine as _;
    let plain = value.bytes().all(|byte| (0x20..0x7f).contains(&byte))
        && value.trim() == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    match plain {
        true => value.to_owned(),
        false => format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode(value)),
    }
}

/// A header value as sent: verbatim, or the UTF-8 inside `=?base64?<standard base64>?=`
/// (`None` when that is malformed or not canonical, so a corrupt header never matches).
fn decode_header_value(value: &str) -> Option<String> {
    use base64::Engine as _;
    let Some(payload) = value.strip_prefix("=?base64?").and_then(|rest| rest.strip_suffix("?=")) else {
        return Some(value.to_owned());
    };
    let engine = base64::engine::general_purpose::STANDARD;
    let bytes = engine.decode(payload).ok()?;
    // The decoder tolerates non-zero trailing bits; only the canonical encoding matches.
    if engine.encode(&bytes) != payload {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// The HTTP status a stateless request's JSON-RPC error is sent with (streamable HTTP,
/// 2026-07-28): the request's own faults are 400, an unknown method 404, the rest 200.
pub fn http_status_of_error(code: i64) -> u16 {
    match code {
        -32700 | -32600 | -32602 | -32020 | -32021 | -32022 => 400,
        -32601 => 404,
        _ => 200,
    }
}

/// `-32022`: the revision a request named is not served; `data` lists what is.
pub fn unsupported_version(requested: &str) -> RpcError {
    let mut supported: Vec<&str> = MODERN_VERSIONS.to_vec();
    supported.extend(crate::version::ProtocolVersion::SUPPORTED.iter().map(|v| v.as_str()));
    let mut error = RpcError::new(ErrorCode::UnsupportedProtocolVersion, "Unsupported protocol version");
    error.data = Some(Box::new(json!({"supported": supported, "requested": requested})));
    error
}

/// Whether `method` exists in the stateless revision (removed ones are unknown there).
pub fn is_removed(method: &str) -> bool {
    REMOVED_METHODS.contains(&method)
}

/// The capabilities as the stateless revision states them: `listChanged` is only delivered on
/// a `subscriptions/listen` stream, which is not served, so it is not claimed.
pub fn capabilities(legacy: &Value) -> Value {
    let mut capabilities = legacy.clone();
    if let Some(map) = capabilities.as_object_mut() {
        for value in map.values_mut() {
            if let Some(inner) = value.as_object_mut() {
                inner.remove("listChanged");
            }
        }
    }
    capabilities
}

/// Cache hints on `tools/list` (and discover): the list is re-read live (a switch can hide a
/// tool between two lists), so clients are told not to cache it; `private` because what a
/// client sees depends on its token and the server's filter.
pub const CACHE_HINTS: &[(&str, &str)] = &[("ttlMs", "0"), ("cacheScope", "\"private\"")];

/// `result` with the fields every stateless result carries, plus `extra` (JSON texts), added
/// in front: `resultType` and `_meta` with the server's identity.
pub fn decorate(result: &RawValue, server_info: &Value, extra: &[(&str, &str)]) -> Result<Box<RawValue>, RpcError> {
    let body = result.get().trim();
    let Some(inner) = body.strip_prefix('{').and_then(|rest| rest.strip_suffix('}')) else {
        return Err(RpcError::internal());
    };
    let mut text = String::with_capacity(body.len() + 160);
    text.push_str("{\"resultType\":\"complete\"");
    for (key, value) in extra {
        text.push_str(&format!(",\"{key}\":{value}"));
    }
    let meta = json!({ META_SERVER_INFO: server_info });
    text.push_str(&format!(",\"_meta\":{meta}"));
    if !inner.trim().is_empty() {
        text.push(',');
        text.push_str(inner);
    }
    text.push('}');
    RawValue::from_string(text).map_err(|_| RpcError::internal())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn the_era_comes_from_meta_and_is_checked() {
        assert_eq!(era_of(None), None);
        assert_eq!(era_of(Some(&raw(r#"{"name":"x"}"#))), None, "no _meta: legacy");
        assert_eq!(era_of(Some(&raw(r#"{"_meta":{"progressToken":1}}"#))), None, "no version in _meta: legacy");
        let ok = raw(
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}"#,
        );
        assert_eq!(era_of(Some(&ok)), Some(Ok(ModernRequest { version: "2026-07-28" })));
        let old = raw(
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"1900-01-01","io.modelcontextprotocol/clientCapabilities":{}}}"#,
        );
        let error = era_of(Some(&old)).unwrap().unwrap_err();
        assert_eq!(error.code.code(), -32022);
        assert_eq!(error.data.unwrap()["requested"], "1900-01-01");
        let bare = raw(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#);
        let error = era_of(Some(&bare)).unwrap().unwrap_err();
        assert_eq!(error.code.code(), -32602);
        assert!(error.message.contains("clientCapabilities"), "{}", error.message);
    }

    #[test]
    fn a_meta_key_spelt_with_escapes_is_still_read() {
        // Every spelling of the key with any of its letters as a `\u` escape (hex in either
        // case) selects the era as the plain one does.
        let version = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        for mask in 0..32u32 {
            let key: String = "_meta"
                .chars()
                .enumerate()
                .map(|(at, letter)| match mask >> at & 1 {
                    1 if at % 2 == 0 => format!("\\u{:04x}", letter as u32),
                    1 => format!("\\u{:04X}", letter as u32),
                    _ => letter.to_string(),
                })
                .collect();
            let params = raw(&format!(r#"{{"name":"x\"y","{key}":{version}}}"#));
            assert_eq!(era_of(Some(&params)), Some(Ok(ModernRequest { version: "2026-07-28" })), "{key}");
        }
        // Strings with short escapes (quotes, backslashes) and no `_meta` at all: legacy.
        let escaped = raw(r#"{"payloadJSON":"{\"v\":1,\"data\":\"a\\/b\\n\\t\"}","lease":"l"}"#);
        assert_eq!(era_of(Some(&escaped)), None);
    }

    #[test]
    fn results_are_decorated_in_front_and_stay_valid_json() {
        let info = json!({"name": "s", "version": "1"});
        let decorated = decorate(&raw(r#"{"tools":[]}"#), &info, CACHE_HINTS).unwrap();
        let value: Value = serde_json::from_str(decorated.get()).unwrap();
        assert_eq!(
            value,
            json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                   "_meta": {META_SERVER_INFO: {"name": "s", "version": "1"}}, "tools": []})
        );
        let empty: Value = serde_json::from_str(decorate(&raw("{}"), &info, &[]).unwrap().get()).unwrap();
        assert_eq!(empty["resultType"], "complete");
        assert_eq!(capabilities(&json!({"tools": {"listChanged": true}})), json!({"tools": {}}));
    }

    fn modern() -> ModernRequest {
        ModernRequest { version: "2026-07-28" }
    }

    #[test]
    fn routing_headers_must_repeat_the_body() {
        let params = raw(r#"{"name":"device.info","arguments":{}}"#);
        let good = RoutingHeaders {
            protocol_version: Some(Ok("2026-07-28")),
            method: Some(Ok("tools/call")),
            name: Some(Ok("device.info")),
        };
        assert!(check_routing_headers(&modern(), "tools/call", Some(&params), &good).is_ok());
        let cases = [
            (RoutingHeaders { protocol_version: None, ..good }, "MCP-Protocol-Version header missing"),
            (RoutingHeaders { protocol_version: Some(Ok("2025-11-25")), ..good }, "'2025-11-25' does not match"),
            (RoutingHeaders { protocol_version: Some(Err(())), ..good }, "sent more than once"),
            (RoutingHeaders { method: Some(Ok("tools/list")), ..good }, "Mcp-Method header value 'tools/list'"),
            (RoutingHeaders { method: None, ..good }, "Mcp-Method header missing"),
            (RoutingHeaders { name: Some(Ok("system.run")), ..good }, "Mcp-Name header value 'system.run'"),
            (RoutingHeaders { name: None, ..good }, "Mcp-Name header missing"),
            (RoutingHeaders { name: Some(Err(())), ..good }, "Mcp-Name header sent more than once"),
        ];
        for (headers, expected) in cases {
            let error = check_routing_headers(&modern(), "tools/call", Some(&params), &headers).unwrap_err();
            assert_eq!(error.code.code(), -32020);
            assert!(error.message.contains(expected), "{expected}: {}", error.message);
        }
        // Methods without a named parameter need no Mcp-Name.
        let list = RoutingHeaders { method: Some(Ok("tools/list")), name: None, ..good };
        assert!(check_routing_headers(&modern(), "tools/list", None, &list).is_ok());
    }

    #[test]
    fn mcp_name_may_be_base64_wrapped_and_only_canonically() {
        let params = raw(r#"{"name":"héllo","arguments":{}}"#);
        let with_name = |name| RoutingHeaders {
            protocol_version: Some(Ok("2026-07-28")),
            method: Some(Ok("tools/call")),
            name: Some(Ok(name)),
        };
        // base64("héllo") = aMOpbGxv
        assert!(
            check_routing_headers(&modern(), "tools/call", Some(&params), &with_name("=?base64?aMOpbGxv?=")).is_ok()
        );
        assert!(
            check_routing_headers(&modern(), "tools/call", Some(&params), &with_name("=?base64?aMOpbGxv")).is_err()
        );
        assert!(check_routing_headers(&modern(), "tools/call", Some(&params), &with_name("=?base64?!!!?=")).is_err());
        // "a" is YQ==; YR== decodes to "a" too, with non-zero trailing bits: not canonical.
        let a = raw(r#"{"name":"a"}"#);
        assert!(check_routing_headers(&modern(), "tools/call", Some(&a), &with_name("=?base64?YQ==?=")).is_ok());
        assert!(check_routing_headers(&modern(), "tools/call", Some(&a), &with_name("=?base64?YR==?=")).is_err());
    }

    #[test]
    fn stateless_errors_map_to_the_specs_statuses() {
        let statuses: Vec<u16> = [-32700, -32600, -32602, -32020, -32021, -32022, -32601, -32603, -32800]
            .into_iter()
            .map(http_status_of_error)
            .collect();
        assert_eq!(statuses, [400, 400, 400, 400, 400, 400, 404, 200, 200]);
    }

    #[test]
    fn a_stateless_request_yields_the_headers_the_server_checks() {
        let body = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"h\u00e9llo","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
        let routing = stateless_routing(body).unwrap();
        assert_eq!(
            routing,
            StatelessRouting {
                protocol_version: "2026-07-28",
                method: "tools/call".into(),
                name: Some("=?base64?aMOpbGxv?=".into())
            }
        );
        // Round trip through the server's own check.
        let params = raw(r#"{"name":"h\u00e9llo","_meta":{}}"#);
        let headers = RoutingHeaders {
            protocol_version: Some(Ok(routing.protocol_version)),
            method: Some(Ok(&routing.method)),
            name: routing.name.as_deref().map(Ok),
        };
        assert!(check_routing_headers(&modern(), "tools/call", Some(&params), &headers).is_ok());
        assert_eq!(stateless_routing(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#), None);
        assert_eq!(stateless_routing(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#), None);
        assert_eq!(encode_header_value("device.info"), "device.info");
        assert_eq!(encode_header_value(" padded"), "=?base64?IHBhZGRlZA==?=");
        assert_eq!(decode_header_value(&encode_header_value("=?base64?x?=")).as_deref(), Some("=?base64?x?="));
    }
}
