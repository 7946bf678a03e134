//! The fake's `connect` admission, in the real gateway's order (`docs/gateway-protocol.md` §3-§5,
//! checked against a live 2026.9.6 gateway): closed-object validation of the params, protocol
//! range, device proof, shared secret, then the scope decision. Refusals carry the real codes,
//! messages and close codes.
//!
//! Deviation: the real gateway's message for a device that sends no shared secret was not
//! observed; the fake answers `AUTH_TOKEN_MISSING` "unauthorized: gateway token missing".

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::config::{FakeAuth, FakeConfig};
use crate::reply::gateway_error;

/// `GATEWAY_CLIENT_IDS` (`packages/gateway-protocol/src/client-info.ts`).
const CLIENT_IDS: [&str; 17] = [
    "webchat-ui",
    "openclaw-control-ui",
    "openclaw-browser-copilot",
    "openclaw-tui",
    "webchat",
    "cli",
    "gateway-client",
    "openclaw-macos",
    "openclaw-linux",
    "openclaw-ios",
    "openclaw-watchos",
    "openclaw-android",
    "node-host",
    "openclaw-worker",
    "test",
    "fingerprint",
    "openclaw-probe",
];

const CLIENT_MODES: [&str; 8] = ["webchat", "cli", "ui", "backend", "node", "worker", "probe", "test"];

const PARAM_KEYS: [&str; 16] = [
    "minProtocol",
    "maxProtocol",
    "client",
    "caps",
    "commands",
    "permissions",
    "pathEnv",
    "role",
    "scopes",
    "device",
    "auth",
    "locale",
    "userAgent",
    "computerUse",
    "workerRuns",
    "modelCatalog",
];

const CLIENT_KEYS: [&str; 10] = [
    "id",
    "displayName",
    "version",
    "platform",
    "deviceFamily",
    "modelIdentifier",
    "mode",
    "instanceId",
    "buildId",
    "timeZone",
];

const DEVICE_KEYS: [&str; 5] = ["id", "publicKey", "signature", "signedAt", "nonce"];

const AUTH_KEYS: [&str; 6] =
    ["token", "bootstrapToken", "deviceToken", "password", "approvalRuntimeToken", "agentRuntimeIdentityToken"];

/// Allowed clock difference between `device.signedAt` and the gateway (±2 minutes).
const SIGNATURE_SKEW_MS: u64 = 120_000;

/// A connect that passed: what hello-ok reports.
#[derive(Debug, Clone)]
pub struct Admitted {
    pub role: String,
    pub scopes: Vec<String>,
    pub auth_method: &'static str,
    pub device_id: Option<String>,
}

/// A connect that failed: the `ErrorShape` to answer with and the close code that follows.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub error: Value,
    pub close_code: u16,
}

impl Refusal {
    fn new(code: &str, message: &str, details: Option<Value>) -> Refusal {
        Refusal { error: gateway_error(code, message, details), close_code: 1008 }
    }

    fn invalid_params(message: String) -> Refusal {
        Refusal::new("INVALID_REQUEST", &format!("invalid connect params: {message}"), None)
    }

    pub fn message(&self) -> String {
        self.error["message"].as_str().unwrap_or_default().to_owned()
    }
}

/// Runs admission for `params` against the challenge `nonce`. `device_token_known` says whether
/// a device token was issued by this fake; `spend_bootstrap` consumes a setup code's bootstrap
/// token, true only the first time for one the fake issued.
pub fn admit(
    params: &Value,
    nonce: &str,
    config: &FakeConfig,
    now_ms: u64,
    device_token_known: impl Fn(&str) -> bool,
    spend_bootstrap: impl Fn(&str) -> bool,
) -> Result<Admitted, Refusal> {
    let params = validate_shape(params)?;
    let min = params.get("minProtocol").and_then(Value::as_u64).unwrap_or(0);
    let max = params.get("maxProtocol").and_then(Value::as_u64).unwrap_or(0);
    let expected = u64::from(config.protocol);
    if !(min <= expected && expected <= max) {
        return Err(Refusal {
            error: gateway_error(
                "INVALID_REQUEST",
                "protocol mismatch",
                Some(
                    json!({"code":"PROTOCOL_MISMATCH","clientMinProtocol":min,"clientMaxProtocol":max,"expectedProtocol":expected}),
                ),
            ),
            close_code: 1002,
        });
    }
    let client = &params["client"];
    let client_id = client["id"].as_str().unwrap_or_default();
    let client_mode = client["mode"].as_str().unwrap_or_default();
    let role = params.get("role").and_then(Value::as_str).unwrap_or("operator").to_owned();
    let scopes: Vec<String> = params
        .get("scopes")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    let auth = params.get("auth").cloned().unwrap_or_else(|| json!({}));
    let secret = |key: &str| auth.get(key).and_then(Value::as_str);

    let device_id = match params.get("device") {
        Some(device) => Some(verify_device(device, params, nonce, now_ms, &role, &scopes, &auth)?),
        None => None,
    };
    let no_secret = config.auth != FakeAuth::None && auth.as_object().is_none_or(Map::is_empty);
    if device_id.is_none() && (role == "node" || config.require_device || no_secret) {
        return Err(Refusal::new(
            "NOT_PAIRED",
            "device identity required",
            Some(json!({"code":"DEVICE_IDENTITY_REQUIRED"})),
        ));
    }

    let auth_method = match &config.auth {
        FakeAuth::None => "none",
        _ if device_id.is_some() && secret("deviceToken").is_some_and(&device_token_known) => "device-token",
        // A setup code's bootstrap token admits a device once (single-use, as upstream).
        _ if device_id.is_some() && secret("bootstrapToken").is_some() => {
            match secret("bootstrapToken").is_some_and(&spend_bootstrap) {
                true => "bootstrap-token",
                false => {
                    // The real gateway's words (closes 1008 after it).
                    return Err(Refusal::new(
                        "INVALID_REQUEST",
                        "unauthorized: setup code invalid, expired, revoked, or already used (create a new code; \
                         review `openclaw devices list`)",
                        Some(json!({"code":"AUTH_BOOTSTRAP_TOKEN_INVALID","authReason":"bootstrap_token_invalid",
                                    "canRetryWithDeviceToken":false,"recommendedNextStep":"review_auth_configuration"})),
                    ));
                }
            }
        }
        FakeAuth::Token(expected) => {
            let offered = secret("token").or_else(|| secret("password"));
            match offered {
                Some(offered) if offered == expected => "token",
                // A device the gateway knows may come back with the token it was issued (the
                // real gateway's answer after a token rotation, `docs/gateway-protocol.md` §9.3).
                Some(_) if device_id.is_some() => return Err(token_mismatch_retry_with_device_token()),
                Some(_) => return Err(token_mismatch()),
                None => {
                    return Err(Refusal::new(
                        "INVALID_REQUEST",
                        "unauthorized: gateway token missing",
                        Some(json!({"code":"AUTH_TOKEN_MISSING","authReason":"token_missing"})),
                    ));
                }
            }
        }
        FakeAuth::Password(expected) => match secret("password").or_else(|| secret("token")) {
            Some(offered) if offered == expected => "password",
            _ => {
                return Err(Refusal::new(
                    "INVALID_REQUEST",
                    "unauthorized: gateway password mismatch (use this gateway's gateway.auth.password)",
                    Some(json!({"code":"AUTH_PASSWORD_MISMATCH","authReason":"password_mismatch",
                                "canRetryWithDeviceToken":false,"recommendedNextStep":"update_auth_credentials"})),
                ));
            }
        },
    };

    // Device-less clients keep their scopes only as cli/cli or gateway-client/backend.
    let keeps_scopes = device_id.is_some()
        || (client_id == "cli" && client_mode == "cli")
        || (client_id == "gateway-client" && client_mode == "backend");
    Ok(Admitted { role, scopes: if keeps_scopes { scopes } else { Vec::new() }, auth_method, device_id })
}

pub fn token_mismatch() -> Refusal {
    Refusal::new(
        "INVALID_REQUEST",
        "unauthorized: gateway token mismatch (use this gateway's gateway.auth.token or pair the device)",
        Some(json!({"code":"AUTH_TOKEN_MISMATCH","authReason":"token_mismatch",
                    "canRetryWithDeviceToken":false,"recommendedNextStep":"update_auth_credentials"})),
    )
}

pub fn token_mismatch_retry_with_device_token() -> Refusal {
    Refusal::new(
        "INVALID_REQUEST",
        "unauthorized: gateway token mismatch (provide gateway auth token)",
        Some(json!({"code":"AUTH_TOKEN_MISMATCH","authReason":"token_mismatch",
                    "canRetryWithDeviceToken":true,"recommendedNextStep":"retry_with_device_token"})),
    )
}

/// The `hello-ok` payload for an admitted connection.
pub fn hello_ok(config: &FakeConfig, admitted: &Admitted, conn_id: u64, device_token: Option<&str>) -> Value {
    let mut auth = json!({"method": admitted.auth_method, "role": admitted.role, "scopes": admitted.scopes});
    if let Some(token) = device_token {
        auth["deviceToken"] = json!(token);
        auth["issuedAtMs"] = json!(0);
    }
    json!({
        "type": "hello-ok",
        "protocol": config.protocol,
        "server": {"version": config.server_version, "connId": format!("fake-conn-{conn_id}")},
        "features": {"methods": config.methods, "events": config.events, "capabilities": []},
        "snapshot": {"presence": [], "health": {}, "stateVersion": {}, "uptimeMs": 0},
        "auth": auth,
        "policy": {
            "maxPayload": config.max_payload,
            "maxBufferedBytes": 52_428_800,
            "tickIntervalMs": config.tick_interval.as_millis() as u64,
        },
    })
}

/// Closed-object validation with the gateway's message style.
fn validate_shape(params: &Value) -> Result<&Map<String, Value>, Refusal> {
    let object = params.as_object().ok_or_else(|| Refusal::invalid_params("at root: must be object".to_owned()))?;
    closed(object, &PARAM_KEYS, "root")?;
    no_nulls(params, "")?;
    for key in ["minProtocol", "maxProtocol"] {
        if object.get(key).and_then(Value::as_u64).is_none_or(|v| v < 1) {
            return Err(Refusal::invalid_params(format!("at /{key}: must be integer >= 1")));
        }
    }
    let client = object
        .get("client")
        .and_then(Value::as_object)
        .ok_or_else(|| Refusal::invalid_params("at root: must have required property 'client'".to_owned()))?;
    closed(client, &CLIENT_KEYS, "/client")?;
    let client_str = |key: &str| client.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
    if !client_str("id").is_some_and(|id| CLIENT_IDS.contains(&id)) {
        return Err(Refusal::invalid_params("at /client/id: must be equal to one of the allowed values".to_owned()));
    }
    if !client_str("mode").is_some_and(|mode| CLIENT_MODES.contains(&mode)) {
        return Err(Refusal::invalid_params("at /client/mode: must be equal to one of the allowed values".to_owned()));
    }
    for key in ["version", "platform"] {
        if client_str(key).is_none() {
            return Err(Refusal::invalid_params(format!("at /client/{key}: must NOT have fewer than 1 characters")));
        }
    }
    if let Some(role) = object.get("role")
        && !matches!(role.as_str(), Some("operator" | "node"))
    {
        return Err(Refusal::invalid_params("at /role: must be equal to one of the allowed values".to_owned()));
    }
    if let Some(device) = object.get("device") {
        let device =
            device.as_object().ok_or_else(|| Refusal::invalid_params("at /device: must be object".to_owned()))?;
        closed(device, &DEVICE_KEYS, "/device")?;
    }
    if let Some(auth) = object.get("auth") {
        let auth = auth.as_object().ok_or_else(|| Refusal::invalid_params("at /auth: must be object".to_owned()))?;
        closed(auth, &AUTH_KEYS, "/auth")?;
    }
    Ok(object)
}

fn closed(object: &Map<String, Value>, allowed: &[&str], at: &str) -> Result<(), Refusal> {
    match object.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(Refusal::invalid_params(format!("at {at}: unexpected property '{key}'"))),
        None => Ok(()),
    }
}

/// The schema has no nullable fields: a `null` anywhere is a client bug.
fn no_nulls(value: &Value, at: &str) -> Result<(), Refusal> {
    match value {
        Value::Null => {
            Err(Refusal::invalid_params(format!("at {}: must not be null", if at.is_empty() { "root" } else { at })))
        }
        Value::Object(map) => map.iter().try_for_each(|(k, v)| no_nulls(v, &format!("{at}/{k}"))),
        Value::Array(items) => items.iter().enumerate().try_for_each(|(i, v)| no_nulls(v, &format!("{at}/{i}"))),
        _ => Ok(()),
    }
}

fn device_refusal(detail: &str, reason: &str, message: &str) -> Refusal {
    Refusal::new("INVALID_REQUEST", message, Some(json!({"code": detail, "reason": reason})))
}

/// Checks the device proof the way `connect-device-proof.ts` does; returns the device id.
fn verify_device(
    device: &Value,
    params: &Map<String, Value>,
    nonce: &str,
    now_ms: u64,
    role: &str,
    scopes: &[String],
    auth: &Value,
) -> Result<String, Refusal> {
    let field = |key: &str| device.get(key).and_then(Value::as_str).unwrap_or_default();
    let id = field("id");
    let signed_at = device.get("signedAt").and_then(Value::as_u64).unwrap_or(0);
    if field("nonce").is_empty() {
        return Err(device_refusal("DEVICE_AUTH_NONCE_REQUIRED", "device-nonce-missing", "device nonce required"));
    }
    if field("nonce") != nonce {
        return Err(device_refusal("DEVICE_AUTH_NONCE_MISMATCH", "device-nonce-mismatch", "device nonce mismatch"));
    }
    if signed_at.abs_diff(now_ms) > SIGNATURE_SKEW_MS {
        return Err(device_refusal(
            "DEVICE_AUTH_SIGNATURE_EXPIRED",
            "device-signature-stale",
            "device signature expired",
        ));
    }
    let decode = |text: &str| URL_SAFE_NO_PAD.decode(text).or_else(|_| STANDARD.decode(text)).ok();
    let key = decode(field("publicKey"))
        .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
        .and_then(|raw| VerifyingKey::from_bytes(&raw).ok().map(|key| (raw, key)))
        .ok_or_else(|| {
            device_refusal("DEVICE_AUTH_PUBLIC_KEY_INVALID", "device-public-key", "device public key invalid")
        })?;
    let derived: String = Sha256::digest(key.0).iter().map(|b| format!("{b:02x}")).collect();
    if derived != id {
        return Err(device_refusal("DEVICE_AUTH_DEVICE_ID_MISMATCH", "device-id-mismatch", "device identity mismatch"));
    }
    let auth_str = |key: &str| auth.get(key).and_then(Value::as_str);
    let token =
        auth_str("token").or_else(|| auth_str("deviceToken")).or_else(|| auth_str("bootstrapToken")).unwrap_or("");
    let client = &params["client"];
    let normalize = |key: &str| client.get(key).and_then(Value::as_str).unwrap_or("").trim().to_ascii_lowercase();
    let common = [
        id,
        client["id"].as_str().unwrap_or(""),
        client["mode"].as_str().unwrap_or(""),
        role,
        &scopes.join(","),
        &signed_at.to_string(),
        token,
        nonce,
    ]
    .join("|");
    let v3 = format!("v3|{common}|{}|{}", normalize("platform"), normalize("deviceFamily"));
    let v2 = format!("v2|{common}");
    let signature = decode(field("signature"))
        .and_then(|bytes| <[u8; 64]>::try_from(bytes).ok())
        .map(|b| Signature::from_bytes(&b));
    let valid =
        signature.is_some_and(|sig| [v3, v2].iter().any(|payload| key.1.verify(payload.as_bytes(), &sig).is_ok()));
    if !valid {
        return Err(device_refusal("DEVICE_AUTH_SIGNATURE_INVALID", "device-signature", "device signature invalid"));
    }
    Ok(id.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli_params() -> Value {
        json!({"minProtocol":4,"maxProtocol":4,
               "client":{"id":"cli","mode":"cli","version":"1","platform":"linux"},
               "role":"operator","scopes":["operator.read"],"auth":{"token":"fake-gateway-token"}})
    }

    fn admit_default(params: &Value) -> Result<Admitted, Refusal> {
        admit(params, "nonce", &FakeConfig::default(), 0, |_| false, |_| false)
    }

    #[test]
    fn cli_with_the_token_keeps_its_scopes() {
        let admitted = admit_default(&cli_params()).unwrap();
        assert_eq!(admitted.scopes, ["operator.read"]);
        assert_eq!(admitted.auth_method, "token");
    }

    #[test]
    fn other_device_less_clients_lose_their_scopes() {
        let mut params = cli_params();
        params["client"]["id"] = json!("test");
        params["client"]["mode"] = json!("test");
        assert!(admit_default(&params).unwrap().scopes.is_empty());
    }

    #[test]
    fn refusals_use_the_real_wording() {
        let mut params = cli_params();
        params["auth"]["token"] = json!("wrong");
        let refusal = admit_default(&params).unwrap_err();
        assert_eq!(refusal.error["details"]["code"], "AUTH_TOKEN_MISMATCH");
        assert_eq!(refusal.close_code, 1008);

        let mut params = cli_params();
        params["bogus"] = json!(1);
        assert_eq!(
            admit_default(&params).unwrap_err().message(),
            "invalid connect params: at root: unexpected property 'bogus'"
        );

        let mut params = cli_params();
        params["client"]["id"] = json!("my-bridge");
        assert!(admit_default(&params).unwrap_err().message().contains("/client/id"));

        let mut params = cli_params();
        params["client"]["displayName"] = Value::Null;
        assert!(admit_default(&params).unwrap_err().message().contains("must not be null"));

        let mut params = cli_params();
        params["maxProtocol"] = json!(3);
        params["minProtocol"] = json!(3);
        let refusal = admit_default(&params).unwrap_err();
        assert_eq!(refusal.close_code, 1002);
        assert_eq!(refusal.error["details"]["code"], "PROTOCOL_MISMATCH");

        let mut params = cli_params();
        params.as_object_mut().unwrap().remove("auth");
        assert_eq!(admit_default(&params).unwrap_err().error["code"], "NOT_PAIRED");
    }
}
