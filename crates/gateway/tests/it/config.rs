//! Config discovery against temp dirs and an explicit environment (the process environment is
//! never touched): URL, port, config path and credential precedence, JSON5, secret references,
//! and the wording of the failures.

use std::fs;
use std::path::{Path, PathBuf};

use clawmcp_gateway::{ConfigError, ConnectOverrides, Env, GatewayTarget, LoadedConfig, Secret, UrlSource};
use tempfile::TempDir;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, text).unwrap();
    path
}

fn env(pairs: &[(&str, &str)]) -> Env {
    Env::from_pairs(pairs.iter().copied())
}

fn resolve(overrides: &ConnectOverrides, env: &Env) -> Result<GatewayTarget, ConfigError> {
    GatewayTarget::resolve(overrides, env)
}

fn token_of(target: &GatewayTarget) -> &str {
    target.credentials.token.as_ref().map(Secret::expose).unwrap_or("<none>")
}

/// A state dir with `openclaw.json` = `config`, and the env pointing at it.
fn state_dir(config: &str) -> (TempDir, Env) {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "openclaw.json", config);
    let env = env(&[("OPENCLAW_STATE_DIR", dir.path().to_str().unwrap())]);
    (dir, env)
}

fn with(env: &Env, extra: &[(&str, &str)]) -> Env {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for name in ["OPENCLAW_STATE_DIR", "OPENCLAW_CONFIG_PATH", "OPENCLAW_HOME", "HOME"] {
        if let Some(value) = env.get(name) {
            pairs.push((name.to_owned(), value.to_owned()));
        }
    }
    pairs.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    Env::from_pairs(pairs)
}

#[test]
fn url_precedence_flag_env_remote_local() {
    let (_dir, base) = state_dir(
        r#"{ gateway: { mode: "remote", port: 19000, remote: { url: "wss://remote.example:443", token: "remote-tok" } } }"#,
    );
    let flag = ConnectOverrides {
        url: Some("wss://flag.example".into()),
        token: Some(Secret::new("t")),
        ..ConnectOverrides::default()
    };
    let env_url = with(&base, &[("OPENCLAW_GATEWAY_URL", "wss://env.example"), ("OPENCLAW_GATEWAY_TOKEN", "env-tok")]);

    let target = resolve(&flag, &env_url).unwrap();
    assert_eq!((target.url.as_str(), &target.url_source), ("wss://flag.example", &UrlSource::Flag { prefix: "" }));
    assert_eq!(target.url_source.to_string(), "--url");
    // `node` and `doctor` name the URL flag as they spell it.
    assert_eq!(UrlSource::Flag { prefix: "gateway-" }.to_string(), "--gateway-url");
    let target = resolve(&ConnectOverrides::default(), &env_url).unwrap();
    assert_eq!((target.url.as_str(), &target.url_source), ("wss://env.example", &UrlSource::Env));
    let target = resolve(&ConnectOverrides::default(), &base).unwrap();
    assert_eq!(target.url, "wss://remote.example:443");
    assert!(matches!(target.url_source, UrlSource::RemoteConfig(_)));
    assert!(target.url_source.to_string().contains("gateway.remote.url"));
}

#[test]
fn local_url_port_precedence_env_config_default() {
    let (_dir, base) = state_dir(r#"{ gateway: { mode: "local", port: 19001, auth: { token: "t" } } }"#);
    let target = resolve(&ConnectOverrides::default(), &base).unwrap();
    assert_eq!((target.url.as_str(), &target.url_source), ("ws://127.0.0.1:19001", &UrlSource::Local));
    let target = resolve(&ConnectOverrides::default(), &with(&base, &[("OPENCLAW_GATEWAY_PORT", "19002")])).unwrap();
    assert_eq!(target.url, "ws://127.0.0.1:19002");

    let (_dir, bare) = state_dir(r#"{ gateway: { auth: { token: "t" }, tls: { enabled: true } } }"#);
    assert_eq!(resolve(&ConnectOverrides::default(), &bare).unwrap().url, "wss://127.0.0.1:18789");

    let error = resolve(&ConnectOverrides::default(), &with(&base, &[("OPENCLAW_GATEWAY_PORT", "99999")])).unwrap_err();
    assert_eq!(error.to_string(), r#"OPENCLAW_GATEWAY_PORT="99999" is not a port number (1-65535)"#);
    let (_dir, bad) = state_dir(r#"{ gateway: { port: "x", auth: { token: "t" } } }"#);
    let error = resolve(&ConnectOverrides::default(), &bad).unwrap_err();
    assert!(error.to_string().contains("`gateway.port`"), "{error}");
}

#[test]
fn config_path_precedence() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let oc_home = root.path().join("oc-home");
    let state = root.path().join("state");
    let explicit = write(root.path(), "explicit.json", r#"{ gateway: { port: 1 } }"#);
    write(&state, "openclaw.json", r#"{ gateway: { port: 2 } }"#);
    write(&oc_home, "openclaw.json", r#"{ gateway: { port: 3 } }"#);
    write(&home.join(".openclaw"), "openclaw.json", r#"{ gateway: { port: 5 } }"#);
    let s = |p: &Path| p.to_str().unwrap().to_owned();

    let port = |pairs: &[(&str, String)]| {
        let env = Env::from_pairs(pairs.iter().map(|(k, v)| (*k, v.clone())));
        LoadedConfig::load(&env).unwrap().get("gateway.port").and_then(|v| v.as_u64())
    };
    let all = [
        ("OPENCLAW_CONFIG_PATH", s(&explicit)),
        ("OPENCLAW_STATE_DIR", s(&state)),
        ("OPENCLAW_HOME", s(&oc_home)),
        ("HOME", s(&home)),
    ];
    assert_eq!(port(&all), Some(1));
    assert_eq!(port(&all[1..]), Some(2));
    assert_eq!(port(&all[2..]), Some(3), "the seed bridge's $OPENCLAW_HOME/openclaw.json");
    write(&oc_home.join(".openclaw"), "openclaw.json", r#"{ gateway: { port: 4 } }"#);
    assert_eq!(port(&all[2..]), Some(4), "OpenClaw's $OPENCLAW_HOME/.openclaw/openclaw.json comes first");
    assert_eq!(port(&all[3..]), Some(5));

    let missing = Env::from_pairs([("OPENCLAW_STATE_DIR", s(&root.path().join("nowhere")))]);
    let loaded = LoadedConfig::load(&missing).unwrap();
    assert!(!loaded.exists);
    assert_eq!(loaded.path, Some(root.path().join("nowhere/openclaw.json")));
}

#[test]
fn json5_is_accepted_and_parse_errors_name_the_file() {
    let (dir, env) =
        state_dir("// comment\n{\n  gateway: {\n    auth: { token: 'json5-token', },  /* trailing comma */\n  },\n}\n");
    assert_eq!(token_of(&resolve(&ConnectOverrides::default(), &env).unwrap()), "json5-token");
    write(dir.path(), "openclaw.json", "{ gateway: ");
    let error = resolve(&ConnectOverrides::default(), &env).unwrap_err();
    assert!(matches!(error, ConfigError::ParseConfig { .. }));
    assert!(error.to_string().contains(dir.path().join("openclaw.json").to_str().unwrap()), "{error}");
}

#[test]
fn local_token_precedence_flag_file_env_config() {
    let (dir, base) = state_dir(r#"{ gateway: { auth: { token: "config-tok" }, remote: { token: "remote-tok" } } }"#);
    let file = write(dir.path(), "gateway.token", "  file-tok\n");
    let with_env = with(&base, &[("OPENCLAW_GATEWAY_TOKEN", "env-tok")]);

    let flag = ConnectOverrides { token: Some(Secret::new("flag-tok")), ..ConnectOverrides::default() };
    assert_eq!(token_of(&resolve(&flag, &with_env).unwrap()), "flag-tok");
    let from_file = ConnectOverrides { token_file: Some(file.clone()), ..ConnectOverrides::default() };
    let target = resolve(&from_file, &with_env).unwrap();
    assert_eq!(token_of(&target), "file-tok", "token files are trimmed");
    assert!(target.credentials.token_source.unwrap().contains("--token-file"));
    let target = resolve(&ConnectOverrides::default(), &with_env).unwrap();
    assert_eq!(
        (token_of(&target), target.credentials.token_source.as_deref()),
        ("env-tok", Some("OPENCLAW_GATEWAY_TOKEN"))
    );
    assert_eq!(token_of(&resolve(&ConnectOverrides::default(), &base).unwrap()), "config-tok");

    let (_dir, remote_only) = state_dir(r#"{ gateway: { remote: { token: "remote-tok" } } }"#);
    assert_eq!(token_of(&resolve(&ConnectOverrides::default(), &remote_only).unwrap()), "remote-tok");

    let both =
        ConnectOverrides { token: Some(Secret::new("a")), token_file: Some(file), ..ConnectOverrides::default() };
    assert_eq!(resolve(&both, &base).unwrap_err().to_string(), "pass either --token or --token-file, not both");
    let empty = write(dir.path(), "empty.token", " \n");
    let error =
        resolve(&ConnectOverrides { token_file: Some(empty), ..ConnectOverrides::default() }, &base).unwrap_err();
    assert!(matches!(error, ConfigError::EmptySecretFile { .. }), "{error}");
    let missing = dir.path().join("missing.token");
    let error =
        resolve(&ConnectOverrides { token_file: Some(missing), ..ConnectOverrides::default() }, &base).unwrap_err();
    assert!(error.to_string().contains("missing.token"), "{error}");
}

#[test]
fn remote_mode_prefers_the_remote_token_and_the_env_password() {
    let (_dir, base) = state_dir(
        r#"{ gateway: { mode: "remote", remote: { url: "wss://r.example", token: "remote-tok", password: "remote-pw" },
                        auth: { token: "local-tok", password: "local-pw" } } }"#,
    );
    let with_env = with(&base, &[("OPENCLAW_GATEWAY_TOKEN", "env-tok"), ("OPENCLAW_GATEWAY_PASSWORD", "env-pw")]);
    let target = resolve(&ConnectOverrides::default(), &with_env).unwrap();
    assert_eq!(token_of(&target), "remote-tok");
    assert_eq!(target.credentials.password.as_ref().map(Secret::expose), Some("env-pw"));
    let target = resolve(&ConnectOverrides::default(), &base).unwrap();
    assert_eq!(target.credentials.password.as_ref().map(Secret::expose), Some("remote-pw"));
}

#[test]
fn explicit_and_env_urls_do_not_receive_config_secrets() {
    let (_dir, base) = state_dir(r#"{ gateway: { auth: { token: "config-tok" } } }"#);
    let url_only = ConnectOverrides { url: Some("ws://127.0.0.1:1".into()), ..ConnectOverrides::default() };
    let error = resolve(&url_only, &with(&base, &[("OPENCLAW_GATEWAY_TOKEN", "env-tok")])).unwrap_err();
    assert!(error.to_string().contains("--url was given, so credentials must be explicit"), "{error}");

    let env_url = with(&base, &[("OPENCLAW_GATEWAY_URL", "ws://127.0.0.1:2")]);
    let error = resolve(&ConnectOverrides::default(), &env_url).unwrap_err();
    assert!(error.to_string().contains("OPENCLAW_GATEWAY_URL is set"), "{error}");
    let env_url =
        with(&env_url, &[("OPENCLAW_GATEWAY_URL", "ws://127.0.0.1:2"), ("OPENCLAW_GATEWAY_TOKEN", "env-tok")]);
    assert_eq!(token_of(&resolve(&ConnectOverrides::default(), &env_url).unwrap()), "env-tok");
}

/// The error names the caller's own flags (`node` spells them `--gateway-*`), and a caller that
/// allows no credentials gets a target without any and the reason.
#[test]
fn missing_credentials_name_the_callers_flags_and_may_be_allowed() {
    let (_dir, base) = state_dir(r#"{ gateway: { port: 18789 } }"#);
    let url = ConnectOverrides { url: Some("ws://127.0.0.1:1".into()), ..ConnectOverrides::default() };
    let node = ConnectOverrides { flag_prefix: "gateway-", ..url.clone() };
    let error = resolve(&node, &base).unwrap_err().to_string();
    assert!(
        error.contains(
            "--gateway-url was given, so credentials must be explicit: pass --gateway-token/--gateway-token-file or \
             --gateway-password/--gateway-password-file"
        ),
        "{error}"
    );
    assert!(resolve(&url, &base).unwrap_err().to_string().contains("pass --token/--token-file or"));
    let optional = ConnectOverrides { credentials_optional: true, ..url };
    let target = resolve(&optional, &base).unwrap();
    assert!(target.credentials.is_empty());
    assert!(target.missing_credentials.as_deref().is_some_and(|why| why.starts_with("--url was given")), "{target:?}");
    let with_token = ConnectOverrides { token: Some(Secret::new("t")), ..optional };
    assert_eq!(resolve(&with_token, &base).unwrap().missing_credentials, None);
}

#[test]
fn missing_credentials_say_what_was_tried() {
    let (dir, base) = state_dir(r#"{ gateway: { port: 18789 } }"#);
    let error = resolve(&ConnectOverrides::default(), &base).unwrap_err();
    let config = dir.path().join("openclaw.json");
    assert_eq!(
        error.to_string(),
        format!(
            "no gateway credentials: no gateway token: pass --token/--token-file or set OPENCLAW_GATEWAY_TOKEN \
             (config `{}` has no gateway.auth.token)",
            config.display()
        )
    );
    let nowhere = Env::from_pairs([("OPENCLAW_STATE_DIR", dir.path().join("none").to_str().unwrap().to_owned())]);
    let error = resolve(&ConnectOverrides::default(), &nowhere).unwrap_err();
    assert!(error.to_string().contains("(no config file at `"), "{error}");

    let (_dir, password_mode) = state_dir(r#"{ gateway: { auth: { mode: "password" } } }"#);
    let error = resolve(&ConnectOverrides::default(), &password_mode).unwrap_err();
    assert!(error.to_string().contains("no gateway password: pass --password/--password-file"), "{error}");

    let (_dir, open) = state_dir(r#"{ gateway: { auth: { mode: "none" } } }"#);
    assert!(resolve(&ConnectOverrides::default(), &open).unwrap().credentials.is_empty());
}

#[test]
fn config_secrets_substitution_refs_and_placeholders() {
    let dir = tempfile::tempdir().unwrap();
    let plain = write(dir.path(), "plain.secret", "file-secret\n");
    let json = write(dir.path(), "secrets.json", r#"{"gateway":{"token":"json-secret"}}"#);
    let config = format!(
        r#"{{ secrets: {{ providers: {{ plain: {{ path: "{}" }}, vault: {{ path: "{}", mode: "json" }} }} }},
             gateway: {{ auth: {{ token: TOKEN_VALUE }} }} }}"#,
        plain.display(),
        json.display()
    );
    let resolve_token = |value: &str, extra: &[(&str, &str)]| {
        write(dir.path(), "openclaw.json", &config.replace("TOKEN_VALUE", value));
        let mut pairs = vec![("OPENCLAW_STATE_DIR", dir.path().to_str().unwrap())];
        pairs.extend_from_slice(extra);
        resolve(&ConnectOverrides::default(), &env(&pairs)).map(|t| token_of(&t).to_owned())
    };
    assert_eq!(resolve_token(r#""${GW_TOKEN}""#, &[("GW_TOKEN", "from-var")]).unwrap(), "from-var");
    assert!(resolve_token(r#""${GW_TOKEN}""#, &[]).is_err(), "an unresolved ${{VAR}} is never sent");
    assert_eq!(resolve_token(r#"{ source: "env", id: "GW_TOKEN" }"#, &[("GW_TOKEN", "ref-var")]).unwrap(), "ref-var");
    assert_eq!(resolve_token(r#"{ source: "file", provider: "plain", id: "x" }"#, &[]).unwrap(), "file-secret");
    assert_eq!(
        resolve_token(r#"{ source: "file", provider: "vault", id: "/gateway/token" }"#, &[]).unwrap(),
        "json-secret"
    );
    assert!(
        resolve_token(r#""change-me-to-a-long-random-token""#, &[]).is_err(),
        "the docs placeholder is not a token"
    );

    let error = resolve_token(r#"{ source: "exec", id: "x" }"#, &[]).unwrap_err();
    assert!(error.to_string().contains("source `exec` is not supported"), "{error}");
    let error = resolve_token(r#"{ source: "file", provider: "nope", id: "x" }"#, &[]).unwrap_err();
    assert!(error.to_string().contains("unknown secret provider `nope`"), "{error}");
    let error = resolve_token(r#"{ source: "env", id: "UNSET_VAR" }"#, &[]).unwrap_err();
    assert!(error.to_string().contains("UNSET_VAR is not set"), "{error}");
}

#[test]
fn plaintext_to_a_remote_host_is_refused_unless_allowed() {
    let explicit = |url: &str| ConnectOverrides {
        url: Some(url.into()),
        token: Some(Secret::new("t")),
        ..ConnectOverrides::default()
    };
    let plain = env(&[]);
    let error = resolve(&explicit("ws://gateway.example:18789"), &plain).unwrap_err();
    assert!(matches!(error, ConfigError::InsecureUrl { .. }), "{error}");
    assert!(error.to_string().contains("OPENCLAW_ALLOW_INSECURE_PRIVATE_WS=1"));
    let allowed = env(&[("OPENCLAW_ALLOW_INSECURE_PRIVATE_WS", "1")]);
    assert!(resolve(&explicit("ws://10.0.0.5:18789"), &allowed).is_ok());
    for ok in ["wss://gateway.example", "ws://localhost:1", "ws://127.0.0.2:1", "ws://[::1]:1"] {
        assert!(resolve(&explicit(ok), &plain).is_ok(), "{ok}");
    }
    let error = resolve(&explicit("http://127.0.0.1:1"), &plain).unwrap_err();
    assert!(error.to_string().contains("must start with ws:// or wss://"), "{error}");
}

/// `mkfifo` from coreutils: a named pipe nobody will ever write to.
fn fifo(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let status = std::process::Command::new("mkfifo").arg(&path).status().expect("mkfifo (coreutils)");
    assert!(status.success());
    path
}

#[test]
fn secret_and_config_files_that_are_fifos_or_devices_are_refused_without_blocking() {
    let (dir, base) = state_dir("{}");
    for path in [fifo(dir.path(), "token.fifo"), PathBuf::from("/dev/zero")] {
        let overrides = ConnectOverrides { token_file: Some(path.clone()), ..ConnectOverrides::default() };
        let error = resolve(&overrides, &base).unwrap_err().to_string();
        assert!(error.contains("not a regular file") && error.contains(&path.display().to_string()), "{error}");
    }
    let big = write(dir.path(), "big.token", &"a".repeat(1024 * 1024 + 1));
    let error = resolve(&ConnectOverrides { token_file: Some(big), ..ConnectOverrides::default() }, &base).unwrap_err();
    assert!(error.to_string().contains("larger than 1048576 bytes"), "{error}");

    let config_dir = tempfile::tempdir().unwrap();
    fifo(config_dir.path(), "openclaw.json");
    let error = LoadedConfig::from_file(&config_dir.path().join("openclaw.json")).unwrap_err().to_string();
    assert!(error.contains("FIFO"), "{error}");
}
