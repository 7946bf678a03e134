//! The node's side of the one HTTP MCP client ([`clawmcp_http::client`]), for `call`,
//! `approvals` and the stdio relay (`call --stdio`): which endpoint and token, and the node's
//! wording for failures.
//!
//! It behaves like the upstream `winnode` client where users rely on it: the token comes from
//! the data dir's token file unless given; an auto-loaded token is never sent to a non-loopback
//! host; redirects are not followed; responses are capped at 16 MiB; every failure names the
//! endpoint and what to do.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use clawmcp_http::client::{self as http_client, BadUrl, McpClient, Reply};
use clawmcp_mcp::RequestId;
use clawmcp_mcp::client::Answer;
use serde_json::Value;

/// Where and how to reach the node.
#[derive(Debug, Clone)]
pub struct NodeClient {
    mcp: McpClient,
}

/// Where the token came from, for error hints.
#[derive(Debug, Clone)]
pub enum TokenSource {
    Flag,
    File(PathBuf),
    None,
}

/// Why a call did not produce a JSON-RPC answer: the client's error, in the node's words where
/// the user has something to do (start the node, fix the token).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "no clawmcp node is listening on {endpoint}\nhint: start one with `clawmcp node` (same --data-dir), or pass --port/--url"
    )]
    Refused { endpoint: String },
    #[error("the node at {endpoint} rejected the bearer token (HTTP 401){hint}")]
    Unauthorized { endpoint: String, hint: String },
    #[error(transparent)]
    Exchange(http_client::ClientError),
}

impl From<http_client::ClientError> for ClientError {
    fn from(error: http_client::ClientError) -> Self {
        match error {
            http_client::ClientError::Refused { endpoint } => ClientError::Refused { endpoint },
            http_client::ClientError::Unauthorized { endpoint } => {
                ClientError::Unauthorized { endpoint, hint: String::new() }
            }
            other => ClientError::Exchange(other),
        }
    }
}

impl ClientError {
    /// Adds a hint naming where the rejected token came from.
    pub fn with_token_hint(self, source: &TokenSource) -> Self {
        match self {
            ClientError::Unauthorized { endpoint, .. } => {
                let hint = match source {
                    TokenSource::Flag => "\nhint: the --token value (or $OPENCLAW_MCP_TOKEN) is wrong; drop it to use the token file".into(),
                    TokenSource::File(path) => format!(
                        "\nhint: the token in {} was rejected; if the node runs with another --data-dir, pass the same one (`clawmcp token` prints the path)",
                        path.display()
                    ),
                    TokenSource::None => "\nhint: no token was sent: start `clawmcp node` once to create the token file, or pass --data-dir/--token".into(),
                };
                ClientError::Unauthorized { endpoint, hint }
            }
            other => other,
        }
    }
}

impl NodeClient {
    /// `url` overrides `port`. Only plain `http://` is spoken: the node is loopback-only.
    pub fn new(url: Option<&str>, port: u16, timeout: Duration) -> Result<Self, BadUrl> {
        let mcp = match url {
            Some(url) => McpClient::new(url)?,
            None => McpClient::loopback(port),
        };
        Ok(NodeClient { mcp: mcp.with_timeout(timeout) })
    }

    /// True when the endpoint is this machine.
    pub fn is_loopback(&self) -> bool {
        self.mcp.is_loopback()
    }

    /// How long one exchange may take (`--timeout-ms`).
    pub fn timeout(&self) -> Duration {
        self.mcp.timeout()
    }

    pub fn has_token(&self) -> bool {
        self.mcp.bearer().is_some()
    }

    pub fn endpoint(&self) -> String {
        self.mcp.endpoint()
    }

    fn token(&self) -> Option<&str> {
        self.mcp.bearer()
    }

    fn with_bearer(self, token: String) -> Self {
        NodeClient { mcp: self.mcp.with_bearer(Some(token)) }
    }

    /// Chooses the token: the flag, else the token file. A token read from the file is only
    /// sent to loopback endpoints.
    pub fn with_token(self, flag: Option<String>, token_file: &Path) -> (Self, TokenSource) {
        if let Some(token) = flag.filter(|t| !t.trim().is_empty()) {
            if !self.is_loopback() {
                tracing::warn!("sending the --token bearer to non-loopback host {}", self.mcp.host());
            }
            return (self.with_bearer(token), TokenSource::Flag);
        }
        match clawmcp_http::token::read_token_file(token_file) {
            Ok(Some(token)) => {
                if self.is_loopback() {
                    (self.with_bearer(token), TokenSource::File(token_file.to_path_buf()))
                } else {
                    tracing::warn!(
                        "not sending the token from {} to non-loopback host {}; pass --token to do so",
                        token_file.display(),
                        self.mcp.host()
                    );
                    (self, TokenSource::None)
                }
            }
            Ok(None) => (self, TokenSource::None),
            Err(error) => {
                tracing::warn!("not using the token file: {error}");
                (self, TokenSource::None)
            }
        }
    }

    /// Re-reads the token file after the node refused our token (`clawmcp token --reset` while
    /// we run): a client holding a different token than the file, for a loopback endpoint, or
    /// `None` when there is nothing new to try.
    pub fn with_reloaded_token(&self, token_file: &Path) -> Option<Self> {
        if !self.is_loopback() {
            return None;
        }
        let fresh = clawmcp_http::token::read_token_file(token_file).ok()??;
        if self.token() == Some(fresh.as_str()) {
            return None;
        }
        Some(self.clone().with_bearer(fresh))
    }

    /// This client declaring `command` as a file command (`X-OpenClaw-File-Command`), for its
    /// `tools/call` only (see [`McpClient::declaring_file_command`]).
    pub fn declaring_file_command(&self, command: &str) -> Self {
        NodeClient { mcp: self.mcp.declaring_file_command(command) }
    }

    /// Sends `MCP-Protocol-Version` from now on (the relay, once it relayed `initialize`).
    pub fn set_protocol_version(&mut self, version: &str) {
        self.mcp.set_protocol_version(version);
    }

    /// Sends a request and waits, within the timeout, for its answer.
    pub async fn request(&self, id: &RequestId, method: &str, params: Option<&Value>) -> Result<Answer, ClientError> {
        Ok(self.mcp.request(id, method, params).await?)
    }

    /// Requests the node must take in order, their params JSON text already, pipelined on one
    /// connection (see `McpClient::request_pipelined`); their answers in order.
    pub async fn request_pipelined<P: AsRef<str>>(
        &self,
        method: &str,
        requests: impl IntoIterator<Item = (RequestId, P)>,
    ) -> Result<Vec<Answer>, ClientError> {
        Ok(self.mcp.request_pipelined(method, requests).await?)
    }

    /// [`request`](Self::request), with each progress `message` the node sends before its
    /// answer handed to `on_progress` as it arrives (only a call that carries a progress token
    /// gets any).
    pub async fn request_with_progress(
        &self,
        id: &RequestId,
        method: &str,
        params: Option<&Value>,
        mut on_progress: impl FnMut(&str),
    ) -> Result<Answer, ClientError> {
        let observe = |message: &clawmcp_mcp::client::ServerMessage| {
            if let clawmcp_mcp::client::ServerMessage::Notification { method, params: Some(params) } = message
                && method == "notifications/progress"
                && let Ok(progress) = serde_json::from_str::<Value>(params.get())
                && let Some(text) = progress.get("message").and_then(Value::as_str)
            {
                on_progress(text);
            }
        };
        Ok(self.mcp.request_observing(id, method, params, observe).await?)
    }

    /// Asks the node to cancel the request `id` (`notifications/cancelled`).
    pub async fn cancel(&self, id: &RequestId, reason: &str) -> Result<(), ClientError> {
        Ok(self.mcp.cancel(id, reason).await?)
    }

    /// Relays one JSON-RPC message exactly as given and returns the node's answer, streamed when
    /// the node streams it (a `tools/call` with a progress token is answered with its progress).
    /// Unbounded in time: the caller bounds the whole exchange, stream included, with
    /// [`timeout`](Self::timeout). Dropping the reply closes the connection, which cancels the
    /// call on the node.
    pub async fn post_message(&self, body: Bytes) -> Result<Reply, ClientError> {
        Ok(self.mcp.post(body).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_parsed_and_limited_to_http() {
        let client = NodeClient::new(Some("http://localhost:9000/mcp"), 1, Duration::from_secs(1)).unwrap();
        assert_eq!(client.endpoint(), "http://localhost:9000/mcp");
        assert!(client.is_loopback());
        let v6 = NodeClient::new(Some("http://[::1]:9000/"), 1, Duration::from_secs(1)).unwrap();
        assert!(v6.is_loopback());
        assert_eq!(v6.endpoint(), "http://[::1]:9000/");
        assert!(NodeClient::new(Some("https://127.0.0.1:1/"), 1, Duration::from_secs(1)).is_err());
        assert!(NodeClient::new(Some("not a url"), 1, Duration::from_secs(1)).is_err());
        let default = NodeClient::new(None, 8765, Duration::from_secs(1)).unwrap();
        assert_eq!(default.endpoint(), "http://127.0.0.1:8765/");
    }

    #[test]
    fn file_tokens_are_not_sent_off_the_machine() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mcp-token.txt");
        std::fs::write(&file, "tok\n").unwrap();
        let remote = NodeClient::new(Some("http://192.0.2.1:1/"), 1, Duration::from_secs(1)).unwrap();
        let (remote, source) = remote.with_token(None, &file);
        assert!(remote.token().is_none() && matches!(source, TokenSource::None));
        let local = NodeClient::new(None, 1, Duration::from_secs(1)).unwrap();
        let (local, source) = local.with_token(None, &file);
        assert_eq!(local.token(), Some("tok"));
        assert!(matches!(source, TokenSource::File(_)));
        let (flagged, source) =
            NodeClient::new(None, 1, Duration::from_secs(1)).unwrap().with_token(Some("x".into()), &file);
        assert_eq!(flagged.token(), Some("x"));
        assert!(matches!(source, TokenSource::Flag));
    }

    #[test]
    fn a_rotated_token_is_reloaded_only_when_it_changed_and_only_for_loopback() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mcp-token.txt");
        std::fs::write(&file, "old\n").unwrap();
        let (client, _) = NodeClient::new(None, 1, Duration::from_secs(1)).unwrap().with_token(None, &file);
        assert!(client.with_reloaded_token(&file).is_none(), "the same token is nothing new to try");
        std::fs::write(&file, "new\n").unwrap();
        let reloaded = client.with_reloaded_token(&file).expect("a new token");
        assert_eq!(reloaded.token(), Some("new"));
        assert_eq!(reloaded.endpoint(), client.endpoint());
        std::fs::write(&file, " \n").unwrap();
        assert!(client.with_reloaded_token(&file).is_none(), "a blank file is no token");
        std::fs::remove_file(&file).unwrap();
        assert!(client.with_reloaded_token(&file).is_none());
        std::fs::write(&file, "new\n").unwrap();
        let tokenless = NodeClient::new(None, 1, Duration::from_secs(1)).unwrap();
        assert_eq!(tokenless.with_reloaded_token(&file).and_then(|c| c.token().map(str::to_owned)), Some("new".into()));
        let remote = NodeClient::new(Some("http://192.0.2.1:1/"), 1, Duration::from_secs(1)).unwrap();
        assert!(remote.with_reloaded_token(&file).is_none(), "file tokens never go off the machine");
    }
}
