//! OpenClaw's one-paste pairing code: `oc-pair://<setup-code>` or the bare code, as the Control
//! UI's Devices page and `openclaw qr` hand it out.
//!
//! The code is base64url (no padding) of `{url, urls?, bootstrapToken, expiresAtMs?,
//! tlsFingerprint?}`: the gateway's WebSocket URL, a short-lived single-use bootstrap token
//! (`connect.auth.bootstrapToken`), when it expires, and the certificate pin of a gateway that
//! serves TLS itself. Decoding follows upstream's rules (a plain ws/wss URL without credentials,
//! a token, an expiry in the future, a valid pin); every refusal says which part is wrong.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;

use crate::secret::Secret;
use crate::tls_pin::TlsFingerprint;

/// The URL form's prefix (matched without regard to case, as upstream does).
pub const SETUP_URL_PREFIX: &str = "oc-pair://";

/// The longest code accepted: real ones are a few hundred characters.
pub const MAX_SETUP_CODE_CHARS: usize = 8 * 1024;

/// A decoded setup code.
#[derive(Debug, Clone)]
pub struct SetupCode {
    pub url: String,
    pub bootstrap_token: Secret,
    pub expires_at_ms: Option<u64>,
    pub tls_fingerprint: Option<TlsFingerprint>,
}

impl SetupCode {
    /// Decodes `input` (`oc-pair://CODE` or `CODE`) as of `now_ms`.
    pub fn parse(input: &str, now_ms: u64) -> Result<SetupCode, String> {
        let trimmed = input.trim();
        let code = match trimmed.get(..SETUP_URL_PREFIX.len()) {
            Some(prefix) if prefix.eq_ignore_ascii_case(SETUP_URL_PREFIX) => &trimmed[SETUP_URL_PREFIX.len()..],
            _ => trimmed,
        };
        let malformed = "it is not an OpenClaw setup code (oc-pair://<base64url>); copy the whole command again from \
                         the Control UI's Devices page (Node host) or `openclaw qr`";
        if code.is_empty()
            || code.len() > MAX_SETUP_CODE_CHARS
            || !code.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(malformed.into());
        }
        let bytes = URL_SAFE_NO_PAD.decode(code.trim_end_matches('=')).map_err(|_| malformed.to_owned())?;
        let payload: Value = serde_json::from_slice(&bytes).map_err(|_| malformed.to_owned())?;
        let object = payload.as_object().ok_or_else(|| malformed.to_owned())?;
        let text = |key: &str| object.get(key).and_then(Value::as_str).map(str::trim).filter(|text| !text.is_empty());
        let url = text("url").ok_or("the setup code names no gateway url")?;
        check_gateway_url(url)?;
        let bootstrap_token = text("bootstrapToken").ok_or("the setup code carries no bootstrap token")?;
        let expires_at_ms = match object.get("expiresAtMs") {
            None => None,
            Some(value) => Some(value.as_u64().ok_or("the setup code's expiresAtMs is not a time")?),
        };
        if let Some(expiry) = expires_at_ms
            && expiry <= now_ms
        {
            return Err(format!(
                "the setup code expired {} s ago (codes last 10 minutes); make a new one on the gateway",
                (now_ms - expiry) / 1000
            ));
        }
        let tls_fingerprint = match object.get("tlsFingerprint") {
            None => None,
            Some(Value::String(pin)) => Some(TlsFingerprint::parse(pin)?),
            Some(_) => return Err("the setup code's tlsFingerprint is not a string".into()),
        };
        Ok(SetupCode {
            url: url.to_owned(),
            bootstrap_token: Secret::new(bootstrap_token),
            expires_at_ms,
            tls_fingerprint,
        })
    }
}

/// A `ws://` or `wss://` URL with a host and no user info, as upstream requires of a code.
fn check_gateway_url(url: &str) -> Result<(), String> {
    let parsed =
        reqwest::Url::parse(url).map_err(|error| format!("the setup code's url `{url}` is invalid: {error}"))?;
    if !matches!(parsed.scheme(), "ws" | "wss") || parsed.host_str().is_none() {
        return Err(format!("the setup code's url `{url}` is not a ws:// or wss:// gateway address"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(format!("the setup code's url `{url}` carries credentials, which a setup code never does"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const NOW: u64 = 1_800_000_000_000;

    fn code(payload: Value) -> String {
        URL_SAFE_NO_PAD.encode(payload.to_string())
    }

    #[test]
    fn the_url_form_and_the_bare_code_decode_alike() {
        let pin = "ab".repeat(32);
        let payload = json!({"url": "wss://gw.example:18789", "bootstrapToken": "boot-1", "expiresAtMs": NOW + 60_000,
                             "tlsFingerprint": format!("sha256:{pin}")});
        for input in [
            format!("oc-pair://{}", code(payload.clone())),
            format!("  OC-PAIR://{}\n", code(payload.clone())),
            code(payload.clone()),
        ] {
            let decoded = SetupCode::parse(&input, NOW).unwrap();
            assert_eq!(decoded.url, "wss://gw.example:18789");
            assert_eq!(decoded.bootstrap_token.expose(), "boot-1");
            assert_eq!(decoded.expires_at_ms, Some(NOW + 60_000));
            assert_eq!(decoded.tls_fingerprint.unwrap().as_hex(), pin);
        }
        let minimal =
            SetupCode::parse(&code(json!({"url": "ws://127.0.0.1:18789", "bootstrapToken": "b"})), NOW).unwrap();
        assert!(minimal.expires_at_ms.is_none() && minimal.tls_fingerprint.is_none());
    }

    #[test]
    fn every_bad_part_is_named() {
        let cases = [
            ("oc-pair://", "not an OpenClaw setup code"),
            ("oc-pair://not base64!", "not an OpenClaw setup code"),
            (&code(json!(["url"])), "not an OpenClaw setup code"),
            (&code(json!({"bootstrapToken": "b"})), "names no gateway url"),
            (&code(json!({"url": "http://h:1", "bootstrapToken": "b"})), "not a ws:// or wss://"),
            (&code(json!({"url": "ws://u:p@h:1", "bootstrapToken": "b"})), "carries credentials"),
            (&code(json!({"url": "ws://h:1"})), "no bootstrap token"),
            (&code(json!({"url": "ws://h:1", "bootstrapToken": "b", "expiresAtMs": NOW - 5_000})), "expired 5 s ago"),
            (&code(json!({"url": "ws://h:1", "bootstrapToken": "b", "expiresAtMs": "soon"})), "not a time"),
            (&code(json!({"url": "ws://h:1", "bootstrapToken": "b", "tlsFingerprint": "xyz"})), "SHA-256"),
        ];
        for (input, expected) in cases {
            let error = SetupCode::parse(input, NOW).unwrap_err();
            assert!(error.contains(expected), "{input}: {error}");
        }
        let long = "A".repeat(MAX_SETUP_CODE_CHARS + 1);
        assert!(SetupCode::parse(&long, NOW).unwrap_err().contains("not an OpenClaw setup code"));
    }
}
