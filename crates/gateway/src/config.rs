//! Which gateway to talk to and which secret opens it, resolved the way OpenClaw's own clients
//! do (`src/gateway/connection-details.ts`, `credentials.ts`, `src/config/paths.ts`), so a user's
//! existing flags, `OPENCLAW_*` variables and `openclaw.json` work unchanged.
//!
//! # URL
//! `--url` > `OPENCLAW_GATEWAY_URL` > `gateway.remote.url` when `gateway.mode == "remote"` >
//! `ws://127.0.0.1:<port>` (`wss://` when `gateway.tls.enabled`), port from
//! `OPENCLAW_GATEWAY_PORT` > `gateway.port` > 18789. Plaintext `ws://` to a non-loopback host is
//! refused unless `OPENCLAW_ALLOW_INSECURE_PRIVATE_WS=1` (OpenClaw's rule; with the variable set
//! we accept any host, where OpenClaw checks for a private address).
//!
//! # Credentials
//! - `--token`/`--token-file` and `--password`/`--password-file` win outright (files trimmed).
//! - A `--url` from the command line gets *only* explicit credentials: secrets from the
//!   environment or the config are never sent to a URL somebody typed (OpenClaw does the same).
//! - A URL from `OPENCLAW_GATEWAY_URL` uses `OPENCLAW_GATEWAY_TOKEN`/`_PASSWORD` only.
//! - Local mode: token = `OPENCLAW_GATEWAY_TOKEN` > `gateway.auth.token` > `gateway.remote.token`;
//!   password = `OPENCLAW_GATEWAY_PASSWORD` > `gateway.auth.password` > `gateway.remote.password`.
//! - Remote mode: token = `gateway.remote.token` > env > `gateway.auth.token`;
//!   password = env > `gateway.remote.password` > `gateway.auth.password`.
//! - Config values may be `${VAR}` strings (unresolved ones count as unset), or secret
//!   references `{source:"env", id}` / `{source:"file", provider, id}` (provider from
//!   `secrets.providers`, `mode:"json"` reads a JSON pointer). The documentation placeholder
//!   `change-me-to-a-long-random-token` counts as unset.
//! - With `gateway.auth.mode` `none` or `trusted-proxy` no credential is required; otherwise a
//!   missing one is an error naming everything that was tried.
//!
//! # Config file
//! `$OPENCLAW_CONFIG_PATH` > `$OPENCLAW_STATE_DIR/openclaw.json` > `<home>/.openclaw/openclaw.json`
//! where home is `$OPENCLAW_HOME` else `$HOME`. OpenClaw treats `OPENCLAW_HOME` as a replacement
//! `$HOME`, but the seed tools bridge read `$OPENCLAW_HOME/openclaw.json`; we accept both, the
//! OpenClaw location first, taking the first that exists. Parsed as JSON5. A missing file is not
//! an error (everything has a default); an unreadable or unparsable one is. Legacy names
//! (`.clawdbot`, `clawdbot.json`) are not searched.
//!
//! The environment is an explicit [`Env`] value so tests (and embedders) never mutate the
//! process environment.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use reqwest::Url;
use serde_json::Value;
use tracing::warn;

use crate::error::ConfigError;
use crate::secret::Secret;
use crate::tls_pin::TlsFingerprint;

/// The gateway's default port.
pub const DEFAULT_PORT: u16 = 18789;

/// The config file name inside a state directory.
pub const CONFIG_FILE: &str = "openclaw.json";

/// The example token from OpenClaw's docs; the gateway refuses it, so we treat it as unset.
/// The largest `openclaw.json` read (real ones are a few KiB): a device or a runaway file is an
/// error, not an unbounded read.
const MAX_CONFIG_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The largest secret file read (`--token-file`, `--password-file`, a secrets provider's file).
const MAX_SECRET_FILE_BYTES: u64 = 1024 * 1024;

const PLACEHOLDER_TOKEN: &str = "change-me-to-a-long-random-token";

/// A snapshot of environment variables. `Debug` lists names only, never values.
#[derive(Clone, Default)]
pub struct Env {
    vars: BTreeMap<String, String>,
}

impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.vars.keys()).finish()
    }
}

impl Env {
    /// The current process environment (non-UTF-8 values are converted lossily).
    pub fn from_process() -> Env {
        Env::from_pairs(
            std::env::vars_os().map(|(k, v)| (k.to_string_lossy().into_owned(), v.to_string_lossy().into_owned())),
        )
    }

    pub fn from_pairs<K: Into<String>, V: Into<String>>(pairs: impl IntoIterator<Item = (K, V)>) -> Env {
        Env { vars: pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect() }
    }

    /// The trimmed value of `name`, or `None` when unset or blank (OpenClaw's `trimToUndefined`).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())
    }

    /// `$OPENCLAW_HOME`, else `$HOME`.
    fn home(&self) -> Option<PathBuf> {
        self.get("OPENCLAW_HOME").or_else(|| self.get("HOME")).map(PathBuf::from)
    }

    /// `~` and `~/...` expanded against [`Env::home`]; other paths unchanged.
    fn expand_path(&self, path: &str) -> PathBuf {
        match (path.strip_prefix('~'), self.home()) {
            (Some(""), Some(home)) => home,
            (Some(rest), Some(home)) if rest.starts_with('/') => home.join(&rest[1..]),
            _ => PathBuf::from(path),
        }
    }
}

/// What the command line said (all optional).
#[derive(Debug, Clone, Default)]
pub struct ConnectOverrides {
    pub url: Option<String>,
    pub token: Option<Secret>,
    pub token_file: Option<PathBuf>,
    pub password: Option<Secret>,
    pub password_file: Option<PathBuf>,
    /// This device will present its own credential (a setup code's bootstrap token, or the
    /// device token a gateway issued it): a URL from the command line then needs no shared
    /// secret.
    pub device_credential: bool,
    /// A missing credential is not an error: the target then has none, and says why in
    /// [`GatewayTarget::missing_credentials`] (`clawmcp tools` serves its local tools only).
    pub credentials_optional: bool,
    /// What the caller's credential flags start with after `--`: empty for `serve` and `tools`
    /// (`--token`), `gateway-` for `node` (`--gateway-token`), so an error names flags the user
    /// can pass.
    pub flag_prefix: &'static str,
}

/// The OpenClaw config file as found (or not).
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    /// The file in effect, or the first candidate when none exists; `None` when no candidate
    /// could even be named (no `$HOME`).
    pub path: Option<PathBuf>,
    pub exists: bool,
    /// The parsed document (`Value::Null` when the file does not exist).
    pub value: Value,
}

impl LoadedConfig {
    /// Finds and parses the config file for `env`.
    pub fn load(env: &Env) -> Result<LoadedConfig, ConfigError> {
        let candidates = config_candidates(env);
        match candidates.iter().find(|path| path.is_file()) {
            Some(path) => LoadedConfig::from_file(path),
            None => Ok(LoadedConfig { path: candidates.into_iter().next(), exists: false, value: Value::Null }),
        }
    }

    /// Parses `path` as JSON5.
    pub fn from_file(path: &Path) -> Result<LoadedConfig, ConfigError> {
        let read_error = |source| ConfigError::ReadConfig { path: path.to_owned(), source };
        let text = clawmcp_fs::read_regular_file(path, MAX_CONFIG_FILE_BYTES)
            .and_then(clawmcp_fs::into_text)
            .map_err(read_error)?;
        let value: Value = json5::from_str(&text)
            .map_err(|error| ConfigError::ParseConfig { path: path.to_owned(), reason: error.to_string() })?;
        Ok(LoadedConfig { path: Some(path.to_owned()), exists: true, value })
    }

    /// The value at a dotted path (`gateway.auth.token`), if present and not `null`.
    pub fn get(&self, dotted: &str) -> Option<&Value> {
        dotted.split('.').try_fold(&self.value, |value, key| value.get(key)).filter(|v| !v.is_null())
    }

    /// The trimmed non-empty string at a dotted path.
    pub fn get_str(&self, dotted: &str) -> Option<&str> {
        self.get(dotted)?.as_str().map(str::trim).filter(|s| !s.is_empty())
    }

    fn display_path(&self) -> String {
        self.path.as_ref().map_or_else(|| "<no config path: $HOME is unset>".to_owned(), |p| p.display().to_string())
    }

    /// "config `/x/openclaw.json` has no gateway.auth.token" or "no config file at `/x/...`".
    fn lacks(&self, key: &str) -> String {
        if self.exists {
            format!("config `{}` has no {key}", self.display_path())
        } else {
            format!("no config file at `{}`", self.display_path())
        }
    }

    fn bad_value(&self, key: &str, expected: &'static str) -> ConfigError {
        ConfigError::BadConfigValue { path: self.path.clone().unwrap_or_default(), key: key.to_owned(), expected }
    }
}

/// The config file candidates for `env`, in the order they are tried.
pub fn config_candidates(env: &Env) -> Vec<PathBuf> {
    if let Some(path) = env.get("OPENCLAW_CONFIG_PATH") {
        return vec![env.expand_path(path)];
    }
    if let Some(state) = env.get("OPENCLAW_STATE_DIR") {
        return vec![env.expand_path(state).join(CONFIG_FILE)];
    }
    if let Some(home) = env.get("OPENCLAW_HOME") {
        let home = env.expand_path(home);
        return vec![home.join(".openclaw").join(CONFIG_FILE), home.join(CONFIG_FILE)];
    }
    env.get("HOME").map(|home| PathBuf::from(home).join(".openclaw").join(CONFIG_FILE)).into_iter().collect()
}

/// Where the URL came from; part of every error about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlSource {
    /// The command's URL flag: `--<prefix>url` (`--url`, `--gateway-url`).
    Flag {
        prefix: &'static str,
    },
    Env,
    RemoteConfig(PathBuf),
    Local,
}

impl fmt::Display for UrlSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlSource::Flag { prefix } => write!(f, "--{prefix}url"),
            UrlSource::Env => f.write_str("OPENCLAW_GATEWAY_URL"),
            UrlSource::RemoteConfig(path) => write!(f, "gateway.remote.url in `{}`", path.display()),
            UrlSource::Local => f.write_str("the local gateway default"),
        }
    }
}

/// The secrets to present, each with a description of where it came from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Credentials {
    pub token: Option<Secret>,
    pub password: Option<Secret>,
    pub token_source: Option<String>,
    pub password_source: Option<String>,
    /// A setup code's single-use bootstrap token (`--pair`): presented only while no device
    /// token is saved for the gateway (see [`crate::client`]'s connect).
    pub bootstrap_token: Option<Secret>,
}

impl Credentials {
    /// The value for `Authorization: Bearer` on the HTTP surface: the token, else the password
    /// (the gateway compares the bearer with whichever secret its auth mode uses).
    pub fn bearer(&self) -> Option<&Secret> {
        self.token.as_ref().or(self.password.as_ref())
    }

    pub fn is_empty(&self) -> bool {
        self.token.is_none() && self.password.is_none()
    }
}

/// A resolved gateway: URL, credentials, and the config they came from (the tools bridge
/// reads more keys from it, e.g. `agents.defaults.systemAgent.agentId`).
#[derive(Debug, Clone)]
pub struct GatewayTarget {
    pub url: String,
    pub url_source: UrlSource,
    pub credentials: Credentials,
    /// The certificate pin of a `wss://` gateway: `gateway.remote.tlsFingerprint` when the URL
    /// came from `gateway.remote.url` (callers may set one from a flag or a setup code).
    pub tls_fingerprint: Option<TlsFingerprint>,
    pub config: LoadedConfig,
    /// Why there are no credentials, when the caller allowed none
    /// ([`ConnectOverrides::credentials_optional`]) and none were found.
    pub missing_credentials: Option<String>,
}

impl GatewayTarget {
    /// Loads the config for `env` and resolves URL and credentials.
    pub fn resolve(overrides: &ConnectOverrides, env: &Env) -> Result<GatewayTarget, ConfigError> {
        GatewayTarget::resolve_with_config(overrides, env, LoadedConfig::load(env)?)
    }

    /// Resolves against an already loaded config.
    pub fn resolve_with_config(
        overrides: &ConnectOverrides,
        env: &Env,
        config: LoadedConfig,
    ) -> Result<GatewayTarget, ConfigError> {
        let explicit = explicit_credentials(overrides, env)?;
        let remote_mode = config.get_str("gateway.mode") == Some("remote");
        let (url, url_source) = resolve_url(overrides, env, &config, remote_mode)?;
        check_transport(&url, &url_source, env)?;
        let mut missing_credentials = None;
        let credentials = match (explicit.is_empty(), &url_source) {
            (false, _) => explicit,
            (true, UrlSource::Flag { .. }) if overrides.device_credential => Credentials::default(),
            (true, _) => match implicit_credentials(&url_source, env, &config, remote_mode, overrides.flag_prefix) {
                Err(ConfigError::NoCredentials(why)) if overrides.credentials_optional => {
                    missing_credentials = Some(why);
                    Credentials::default()
                }
                found => found?,
            },
        };
        let tls_fingerprint = match (&url_source, config.get_str("gateway.remote.tlsFingerprint")) {
            (UrlSource::RemoteConfig(_), Some(pin)) => Some(TlsFingerprint::parse(pin).map_err(|_| {
                config.bad_value("gateway.remote.tlsFingerprint", "a SHA-256 certificate fingerprint (64 hex digits)")
            })?),
            _ => None,
        };
        Ok(GatewayTarget { url, url_source, credentials, tls_fingerprint, config, missing_credentials })
    }
}

fn explicit_credentials(overrides: &ConnectOverrides, env: &Env) -> Result<Credentials, ConfigError> {
    let (token, token_source) =
        explicit_secret("token", overrides.token.as_ref(), overrides.token_file.as_deref(), env)?.unzip();
    let (password, password_source) =
        explicit_secret("password", overrides.password.as_ref(), overrides.password_file.as_deref(), env)?.unzip();
    Ok(Credentials { token, password, token_source, password_source, bootstrap_token: None })
}

fn explicit_secret(
    flag: &'static str,
    value: Option<&Secret>,
    file: Option<&Path>,
    env: &Env,
) -> Result<Option<(Secret, String)>, ConfigError> {
    match (value, file) {
        (Some(_), Some(_)) => Err(ConfigError::ConflictingFlags { flag }),
        (Some(value), None) => {
            let trimmed = value.expose().trim();
            Ok((!trimmed.is_empty()).then(|| (Secret::new(trimmed), format!("--{flag}"))))
        }
        (None, Some(file)) => {
            let path = env.expand_path(&file.to_string_lossy());
            let secret = read_secret_file(flag, &path)?;
            Ok(Some((secret, format!("--{flag}-file `{}`", path.display()))))
        }
        (None, None) => Ok(None),
    }
}

fn read_secret_file(what: &'static str, path: &Path) -> Result<Secret, ConfigError> {
    let read_error = |source| ConfigError::ReadSecretFile { what, path: path.to_owned(), source };
    let text = clawmcp_fs::read_regular_file(path, MAX_SECRET_FILE_BYTES)
        .and_then(clawmcp_fs::into_text)
        .map_err(read_error)?;
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(ConfigError::EmptySecretFile { what, path: path.to_owned() });
    }
    Ok(Secret::new(trimmed))
}

fn resolve_url(
    overrides: &ConnectOverrides,
    env: &Env,
    config: &LoadedConfig,
    remote_mode: bool,
) -> Result<(String, UrlSource), ConfigError> {
    if let Some(url) = overrides.url.as_deref().map(str::trim).filter(|u| !u.is_empty()) {
        return Ok((url.to_owned(), UrlSource::Flag { prefix: overrides.flag_prefix }));
    }
    if let Some(url) = env.get("OPENCLAW_GATEWAY_URL") {
        return Ok((url.to_owned(), UrlSource::Env));
    }
    if remote_mode {
        match config.get_str("gateway.remote.url") {
            Some(url) => {
                return Ok((url.to_owned(), UrlSource::RemoteConfig(config.path.clone().unwrap_or_default())));
            }
            None => warn!(
                config = %config.display_path(),
                "gateway.mode is \"remote\" but gateway.remote.url is missing; using the local gateway"
            ),
        }
    }
    let scheme = if config.get("gateway.tls.enabled").and_then(Value::as_bool) == Some(true) { "wss" } else { "ws" };
    Ok((format!("{scheme}://127.0.0.1:{}", local_port(env, config)?), UrlSource::Local))
}

fn local_port(env: &Env, config: &LoadedConfig) -> Result<u16, ConfigError> {
    if let Some(raw) = env.get("OPENCLAW_GATEWAY_PORT") {
        return raw
            .parse::<u16>()
            .ok()
            .filter(|port| *port > 0)
            .ok_or_else(|| ConfigError::BadPort { name: "OPENCLAW_GATEWAY_PORT".to_owned(), value: raw.to_owned() });
    }
    match config.get("gateway.port") {
        None => Ok(DEFAULT_PORT),
        Some(value) => value
            .as_u64()
            .and_then(|port| u16::try_from(port).ok())
            .filter(|port| *port > 0)
            .ok_or_else(|| config.bad_value("gateway.port", "a port number (1-65535)")),
    }
}

/// Refuses non-WebSocket schemes and plaintext to non-loopback hosts.
fn check_transport(url: &str, source: &UrlSource, env: &Env) -> Result<(), ConfigError> {
    let invalid = |reason: &str| ConfigError::InvalidUrl {
        url: url.to_owned(),
        origin: source.to_string(),
        reason: reason.to_owned(),
    };
    let parsed = Url::parse(url).map_err(|e| invalid(&e.to_string()))?;
    let host = parsed.host_str().ok_or_else(|| invalid("it has no host"))?;
    match parsed.scheme() {
        "wss" => Ok(()),
        "ws" if is_loopback(host) || env.get("OPENCLAW_ALLOW_INSECURE_PRIVATE_WS") == Some("1") => Ok(()),
        "ws" => Err(ConfigError::InsecureUrl { host: host.to_owned(), origin: source.to_string() }),
        _ => Err(invalid("the gateway URL must start with ws:// or wss://")),
    }
}

/// `localhost`, 127.0.0.0/8 and `::1` (brackets as `Url` prints IPv6 hosts).
pub(crate) fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost") || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// One place a credential may come from.
#[derive(Clone, Copy)]
enum Candidate {
    Env(&'static str),
    Config(&'static str),
}

fn implicit_credentials(
    source: &UrlSource,
    env: &Env,
    config: &LoadedConfig,
    remote_mode: bool,
    flag_prefix: &str,
) -> Result<Credentials, ConfigError> {
    use Candidate::{Config, Env as Var};
    let flag = |name: &str| format!("--{flag_prefix}{name}");
    let (token_flags, password_flags) = (
        format!("{}/{}", flag("token"), flag("token-file")),
        format!("{}/{}", flag("password"), flag("password-file")),
    );
    const TOKEN_ENV: &str = "OPENCLAW_GATEWAY_TOKEN";
    const PASSWORD_ENV: &str = "OPENCLAW_GATEWAY_PASSWORD";
    let (token_order, password_order): (&[Candidate], &[Candidate]) = match source {
        UrlSource::Flag { .. } => {
            return Err(ConfigError::NoCredentials(format!(
                "{} was given, so credentials must be explicit: pass {token_flags} or {password_flags} (secrets \
                 from the environment or the OpenClaw config are never sent to a URL given on the command line)",
                flag("url")
            )));
        }
        UrlSource::Env => (&[Var(TOKEN_ENV)], &[Var(PASSWORD_ENV)]),
        _ if remote_mode => (
            &[Config("gateway.remote.token"), Var(TOKEN_ENV), Config("gateway.auth.token")],
            &[Var(PASSWORD_ENV), Config("gateway.remote.password"), Config("gateway.auth.password")],
        ),
        _ => (
            &[Var(TOKEN_ENV), Config("gateway.auth.token"), Config("gateway.remote.token")],
            &[Var(PASSWORD_ENV), Config("gateway.auth.password"), Config("gateway.remote.password")],
        ),
    };
    let (token, token_source) = first_credential(token_order, env, config)?.unzip();
    let (password, password_source) = first_credential(password_order, env, config)?.unzip();
    let credentials = Credentials { token, password, token_source, password_source, bootstrap_token: None };
    if !credentials.is_empty() {
        return Ok(credentials);
    }
    let auth_mode = config.get_str("gateway.auth.mode");
    if matches!(auth_mode, Some("none" | "trusted-proxy")) && !matches!(source, UrlSource::Env) {
        return Ok(credentials);
    }
    Err(ConfigError::NoCredentials(match (source, auth_mode) {
        (UrlSource::Env, _) => format!(
            "OPENCLAW_GATEWAY_URL is set, so credentials come from OPENCLAW_GATEWAY_TOKEN or \
             OPENCLAW_GATEWAY_PASSWORD (or {token_flags}, {password_flags}); neither is set"
        ),
        (_, Some("password")) => format!(
            "no gateway password: pass {password_flags} or set OPENCLAW_GATEWAY_PASSWORD ({})",
            config.lacks(if remote_mode { "gateway.remote.password" } else { "gateway.auth.password" })
        ),
        _ => format!(
            "no gateway token: pass {token_flags} or set OPENCLAW_GATEWAY_TOKEN ({})",
            config.lacks(if remote_mode { "gateway.remote.token" } else { "gateway.auth.token" })
        ),
    }))
}

fn first_credential(
    order: &[Candidate],
    env: &Env,
    config: &LoadedConfig,
) -> Result<Option<(Secret, String)>, ConfigError> {
    for candidate in order {
        let found = match *candidate {
            Candidate::Env(name) => {
                env.get(name).filter(|v| *v != PLACEHOLDER_TOKEN).map(|v| (v.to_owned(), name.to_owned()))
            }
            Candidate::Config(key) => {
                config_secret(config, key, env)?.map(|v| (v, format!("{key} in `{}`", config.display_path())))
            }
        };
        if let Some((value, source)) = found {
            return Ok(Some((Secret::new(value), source)));
        }
    }
    Ok(None)
}

/// A credential value from the config: a string (with `${VAR}` substitution) or a secret ref.
fn config_secret(config: &LoadedConfig, key: &str, env: &Env) -> Result<Option<String>, ConfigError> {
    let Some(value) = config.get(key) else { return Ok(None) };
    let unresolvable = |reason: String| ConfigError::SecretRef {
        path: config.path.clone().unwrap_or_default(),
        key: key.to_owned(),
        reason,
    };
    let resolved = match value {
        Value::String(text) => substitute_env(text, env),
        Value::Object(reference) => {
            let field =
                |name: &str| reference.get(name).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
            match field("source") {
                Some("env") => {
                    let name = field("id")
                        .or_else(|| field("name"))
                        .ok_or_else(|| unresolvable("an env reference needs an `id`".to_owned()))?;
                    Some(
                        env.get(name)
                            .ok_or_else(|| unresolvable(format!("the variable {name} is not set")))?
                            .to_owned(),
                    )
                }
                Some("file") => Some(file_secret(config, env, field("provider"), field("id")).map_err(unresolvable)?),
                Some(other) => return Err(unresolvable(format!("source `{other}` is not supported"))),
                None => return Err(config.bad_value(key, "a string or a {source, id} secret reference")),
            }
        }
        _ => return Err(config.bad_value(key, "a string or a {source, id} secret reference")),
    };
    Ok(resolved.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty() && v != PLACEHOLDER_TOKEN))
}

/// Replaces each `${NAME}` with the variable's value; any unset variable makes the whole value
/// unset (a literal `${TOKEN}` must never be sent as the token).
fn substitute_env(text: &str, env: &Env) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start + 2..].find('}') else { break };
        let name = &rest[start + 2..start + 2 + len];
        let is_name = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        out.push_str(&rest[..start]);
        if is_name {
            out.push_str(env.get(name)?);
        } else {
            out.push_str(&rest[start..start + 3 + len]);
        }
        rest = &rest[start + 3 + len..];
    }
    out.push_str(rest);
    Some(out)
}

/// `{source:"file", provider, id}`: the provider's file, whole (trimmed) or at JSON pointer `id`.
fn file_secret(config: &LoadedConfig, env: &Env, provider: Option<&str>, id: Option<&str>) -> Result<String, String> {
    let provider = provider.ok_or("a file reference needs a `provider`")?;
    let settings = config
        .value
        .get("secrets")
        .and_then(|s| s.get("providers"))
        .and_then(|p| p.get(provider))
        .ok_or_else(|| format!("unknown secret provider `{provider}` (no secrets.providers.{provider})"))?;
    let path = settings
        .get("path")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("secrets.providers.{provider} has no `path`"))?;
    let path = env.expand_path(path);
    let text = clawmcp_fs::read_regular_file(&path, MAX_SECRET_FILE_BYTES)
        .and_then(clawmcp_fs::into_text)
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    if settings.get("mode").and_then(Value::as_str) != Some("json") {
        return Ok(text.trim().to_owned());
    }
    let document: Value = serde_json::from_str(&text).map_err(|e| format!("`{}` is not JSON: {e}", path.display()))?;
    let pointer = id.ok_or("a JSON file reference needs an `id` (a JSON pointer)")?;
    document
        .pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| format!("`{}` has no string at {pointer}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_substitution() {
        let env = Env::from_pairs([("TOKEN", "abc"), ("EMPTY", "  ")]);
        assert_eq!(substitute_env("${TOKEN}", &env).as_deref(), Some("abc"));
        assert_eq!(substitute_env("x-${TOKEN}-y", &env).as_deref(), Some("x-abc-y"));
        assert_eq!(substitute_env("${MISSING}", &env), None);
        assert_eq!(substitute_env("${EMPTY}", &env), None);
        assert_eq!(substitute_env("${lower}", &env).as_deref(), Some("${lower}"));
        assert_eq!(substitute_env("no refs", &env).as_deref(), Some("no refs"));
        assert_eq!(substitute_env("${UNTERMINATED", &env).as_deref(), Some("${UNTERMINATED"));
    }

    #[test]
    fn loopback_hosts() {
        for host in ["localhost", "LOCALHOST", "127.0.0.1", "127.8.9.10", "[::1]", "::1"] {
            assert!(is_loopback(host), "{host}");
        }
        for host in ["10.0.0.1", "gateway.example", "0.0.0.0", "[::]"] {
            assert!(!is_loopback(host), "{host}");
        }
    }

    #[test]
    fn tilde_expands_against_openclaw_home_then_home() {
        let env = Env::from_pairs([("HOME", "/home/u")]);
        assert_eq!(env.expand_path("~/t"), PathBuf::from("/home/u/t"));
        assert_eq!(env.expand_path("~"), PathBuf::from("/home/u"));
        assert_eq!(env.expand_path("/abs/~"), PathBuf::from("/abs/~"));
        assert_eq!(env.expand_path("~other/x"), PathBuf::from("~other/x"));
        let env = Env::from_pairs([("HOME", "/home/u"), ("OPENCLAW_HOME", "/oc")]);
        assert_eq!(env.expand_path("~/t"), PathBuf::from("/oc/t"));
    }

    #[test]
    fn env_debug_shows_names_only() {
        let env = Env::from_pairs([("OPENCLAW_GATEWAY_TOKEN", "very-secret")]);
        let shown = format!("{env:?}");
        assert!(shown.contains("OPENCLAW_GATEWAY_TOKEN") && !shown.contains("very-secret"));
    }
}
