//! Why `clawmcp serve` failed, or why its gateway tools cannot answer. Each message says what
//! failed and what to do; a bad configuration keeps upstream's `MCP server failed to start:`
//! prefix, and an unavailable gateway ends with upstream's advice (`Run openclaw gateway status
//! --deep --require-rpc to inspect Gateway health.`) so existing troubleshooting still applies.

use clawmcp_gateway::{ConfigError, Credentials, GatewayError, IdentityError};

/// Upstream's advice after a gateway failure at startup.
const HEALTH_HINT: &str = "Run openclaw gateway status --deep --require-rpc to inspect Gateway health.";

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The flags, environment or `openclaw.json` do not name a usable gateway or credential.
    #[error("MCP server failed to start: {0}")]
    Config(ConfigError),

    /// The device key could not be loaded or created.
    #[error("MCP server failed to start: {0}")]
    Identity(IdentityError),

    /// Reading the MCP client's input or writing its output failed.
    #[error("the MCP stdio transport failed: {0}")]
    Transport(String),
}

// Not `#[from]`: that would also make the inner error the `source`, and error reporters that
// print the chain would show its text twice.
impl From<ConfigError> for ServeError {
    fn from(error: ConfigError) -> Self {
        ServeError::Config(error)
    }
}

impl From<IdentityError> for ServeError {
    fn from(error: IdentityError) -> Self {
        ServeError::Identity(error)
    }
}

/// What a tool call that needs the gateway answers while it cannot be had (and what the WARN log
/// says): the failure in upstream's words, a pointer to the likely fix where the gateway said
/// enough, and what happens next — `retrying` in the background (call again once the gateway is
/// up), or not (fix it and restart).
pub(crate) fn gateway_unavailable(error: &GatewayError, credentials: &Credentials, retrying: bool) -> String {
    let next = match retrying {
        true => "clawmcp serve keeps trying to connect in the background: call again once the gateway is up",
        false => "this is not retried: fix it, then restart clawmcp serve (reconnect the MCP server in the client)",
    };
    format!("The OpenClaw gateway is not available: {error}{}; {next}. {HEALTH_HINT}", refusal_hint(error, credentials))
}

/// A pointer to the likely fix where the gateway said enough, else nothing.
fn refusal_hint(error: &GatewayError, credentials: &Credentials) -> String {
    {
        match error.detail_code() {
            Some(code) if code.starts_with("AUTH_") => {
                let sources: Vec<&str> = [credentials.token_source.as_deref(), credentials.password_source.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect();
                match sources.as_slice() {
                    [] => " (no gateway credential was found: pass --token-file or --password-file)".to_owned(),
                    sources => format!(
                        " (the credential came from {}; check it against the gateway's gateway.auth settings)",
                        sources.join(" and ")
                    ),
                }
            }
            Some("PAIRING_REQUIRED") => {
                let request = error
                    .error_shape()
                    .and_then(|shape| shape.details.as_ref())
                    .and_then(|details| details.get("requestId"))
                    .and_then(|id| id.as_str())
                    .unwrap_or("<requestId>");
                format!(" (this device must be approved once on the gateway host: openclaw devices approve {request})")
            }
            _ => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use clawmcp_gateway::{ErrorShape, Secret};
    use serde_json::json;

    use super::*;

    fn refused(detail: serde_json::Value, message: &str) -> GatewayError {
        let mut shape = ErrorShape::new("INVALID_REQUEST", message);
        shape.details = Some(detail);
        GatewayError::ConnectRejected { url: "ws://127.0.0.1:18789".into(), error: Box::new(shape) }
    }

    #[test]
    fn auth_failures_name_the_credential_source_and_keep_upstream_wording() {
        let credentials = Credentials {
            token: Some(Secret::new("t")),
            token_source: Some("--token-file `/x/gateway.token`".into()),
            ..Credentials::default()
        };
        let text = gateway_unavailable(
            &refused(json!({"code": "AUTH_TOKEN_MISMATCH"}), "unauthorized: gateway token mismatch"),
            &credentials,
            false,
        );
        assert!(text.starts_with("The OpenClaw gateway is not available: "), "{text}");
        assert!(text.contains("this is not retried: fix it, then restart clawmcp serve"), "{text}");
        assert!(text.contains("unauthorized: gateway token mismatch"), "{text}");
        assert!(text.contains("--token-file `/x/gateway.token`"), "{text}");
        assert!(
            text.ends_with(". Run openclaw gateway status --deep --require-rpc to inspect Gateway health."),
            "{text}"
        );
        assert!(!text.contains("\"t\""), "the secret itself is never printed");
    }

    #[test]
    fn messages_are_whole_so_chain_printers_do_not_repeat_them() {
        let config = ServeError::from(ConfigError::ConflictingFlags { flag: "token" });
        assert_eq!(config.to_string(), "MCP server failed to start: pass either --token or --token-file, not both");
        assert!(std::error::Error::source(&config).is_none());
    }

    #[test]
    fn an_unreachable_gateway_says_it_is_retried() {
        let text = gateway_unavailable(&GatewayError::Closed, &Credentials::default(), true);
        assert!(
            text.contains("keeps trying to connect in the background: call again once the gateway is up"),
            "{text}"
        );
    }

    #[test]
    fn pairing_required_says_how_to_approve() {
        let error = gateway_unavailable(
            &refused(
                json!({"code": "PAIRING_REQUIRED", "requestId": "req-1"}),
                "pairing required: device is not approved yet",
            ),
            &Credentials::default(),
            false,
        );
        assert!(error.contains("openclaw devices approve req-1"), "{error}");
    }
}
