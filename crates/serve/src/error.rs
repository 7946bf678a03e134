//! Why `clawmcp serve` ended with a failure. Each message says what failed and what to do;
//! startup failures keep upstream's wording (`MCP server failed to start: <err>. Run openclaw
//! gateway status --deep --require-rpc to inspect Gateway health.`) so existing troubleshooting
//! advice still applies.

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

    /// The gateway could not be reached, or refused us, before the bridge was ready.
    #[error("MCP server failed to start: {error}{hint}. {HEALTH_HINT}")]
    Startup { error: GatewayError, hint: String },

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

impl ServeError {
    /// A startup failure, with a pointer to the likely fix where the gateway said enough.
    pub(crate) fn startup(error: GatewayError, credentials: &Credentials) -> Self {
        let hint = match error.detail_code() {
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
        };
        ServeError::Startup { error, hint }
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
        let error = ServeError::startup(
            refused(json!({"code": "AUTH_TOKEN_MISMATCH"}), "unauthorized: gateway token mismatch"),
            &credentials,
        );
        let text = error.to_string();
        assert!(text.starts_with("MCP server failed to start: "), "{text}");
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
        let startup = ServeError::startup(GatewayError::Closed, &Credentials::default());
        assert!(std::error::Error::source(&startup).is_none());
    }

    #[test]
    fn pairing_required_says_how_to_approve() {
        let error = ServeError::startup(
            refused(
                json!({"code": "PAIRING_REQUIRED", "requestId": "req-1"}),
                "pairing required: device is not approved yet",
            ),
            &Credentials::default(),
        );
        assert!(error.to_string().contains("openclaw devices approve req-1"), "{error}");
    }
}
