//! Start, readiness and exit: the gateway profile the bridge connects with, `initialize`
//! answered before the gateway is ready, startup failures (bad token, nothing listening, bad
//! config, a stalled subscription) and clean ends (EOF, shutdown).

use std::time::Duration;

use clawmcp_serve::{ClaudeChannelMode, ConnectOverrides, Env, Secret, ServeError, ServeExit, ServeOptions};
use clawmcp_testkit::{FakeAuth, FakeConfig, Reply, gateway_error};
use serde_json::{Value, json};

use crate::support::{Session, gateway, gateway_with, is_error, options, subscribed, text, within};

#[tokio::test(start_paused = true)]
async fn connects_with_the_real_bridges_profile_and_a_persistent_device() {
    let fake = gateway().await;
    let (options, identity) = options(&fake, ClaudeChannelMode::Auto);
    let mut session = Session::spawn(options.clone(), None);
    session.initialize().await;
    subscribed(&fake, 1).await;

    let connect = fake.requests("connect").remove(0);
    assert_eq!(connect["client"]["id"], "cli");
    assert_eq!(connect["client"]["mode"], "cli");
    assert_eq!(connect["client"]["displayName"], "OpenClaw MCP");
    assert_eq!(connect["caps"], json!(["approvals"]));
    assert_eq!(connect["role"], "operator");
    assert_eq!(connect["scopes"], json!(["operator.read", "operator.write", "operator.approvals"]));
    assert_eq!(connect["auth"], json!({"token": "fake-gateway-token"}));
    assert_eq!(fake.requests("sessions.subscribe"), [json!({})]);

    let stored: Value =
        serde_json::from_str(&std::fs::read_to_string(identity.path().join("serve/device-identity.json")).unwrap())
            .unwrap();
    assert_eq!(connect["device"]["id"], stored["deviceId"], "the key is kept in the identity dir");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&identity.path().join("serve/device-identity.json")), 0o600);
        assert_eq!(mode(&identity.path().join("serve")), 0o700);
    }
    assert_eq!(session.finish().await.unwrap(), ServeExit::InputClosed);

    let mut again = Session::spawn(options, None);
    again.initialize().await;
    subscribed(&fake, 2).await;
    assert_eq!(fake.requests("connect")[1]["device"]["id"], stored["deviceId"], "the same device reconnects");
    again.finish().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn eof_ends_cleanly_and_closes_the_gateway_connection() {
    let fake = gateway().await;
    let mut session = Session::start(&fake).await;
    subscribed(&fake, 1).await;
    let waiting = session.start_call("events_wait", json!({"timeout_ms": 300_000})).await;
    session.request("ping", json!({})).await;
    let _ = waiting;
    assert_eq!(session.finish().await.unwrap(), ServeExit::InputClosed);
    let closes = within(fake.wait_for_client_closes(1)).await;
    assert_eq!(closes[0].1, 1000, "a graceful close, not a dropped socket");
}

#[tokio::test(start_paused = true)]
async fn the_shutdown_token_ends_cleanly() {
    let fake = gateway().await;
    let mut session = Session::start(&fake).await;
    subscribed(&fake, 1).await;
    session.shutdown.cancel();
    assert_eq!(session.ended().await.unwrap(), ServeExit::Shutdown);
    assert_eq!(within(fake.wait_for_client_closes(1)).await[0].1, 1000);
}

/// A gateway that never answers the subscription: the session stays up (local tools answer,
/// gateway tools say why at once), and EOF still ends it cleanly.
#[tokio::test(start_paused = true)]
async fn initialize_does_not_wait_for_the_gateway_and_a_stalled_subscription_keeps_the_session_up() {
    let fake = gateway().await;
    fake.on("sessions.subscribe", |_| Reply::Stall);
    let (options, identity) = options(&fake, ClaudeChannelMode::Auto);
    let mut session = Session::spawn(options, Some(identity));
    let initialized = session.initialize().await;
    assert_eq!(initialized["serverInfo"]["name"], "openclaw");
    assert_eq!(session.request("tools/list", json!({})).await["result"]["tools"].as_array().unwrap().len(), 9);
    assert_eq!(text(&session.call("events_poll", json!({})).await), "events: 0", "local tools answer before readiness");

    subscribed(&fake, 1).await;
    tokio::time::advance(Duration::from_secs(10)).await;
    let waiting = session.start_call("conversations_list", json!({})).await;
    let failed = session.result(waiting).await;
    assert!(is_error(&failed), "{failed}");
    assert_eq!(
        text(&failed),
        "The OpenClaw gateway is not available: gateway method `sessions.subscribe` got no response within 180s; \
         this is not retried: fix it, then restart clawmcp serve (reconnect the MCP server in the client). \
         Run openclaw gateway status --deep --require-rpc to inspect Gateway health."
    );
    assert_eq!(text(&session.call("events_poll", json!({})).await), "events: 0", "still serving");
    let again = session.call("conversations_list", json!({})).await;
    assert_eq!(text(&again), text(&failed), "every gateway call answers at once with the reason");
    assert_eq!(session.finish().await.unwrap(), ServeExit::InputClosed);
}

/// A refused token keeps the session up: each gateway call says what failed, where the
/// credential came from and that it is not retried; the gateway is asked once.
#[tokio::test(start_paused = true)]
async fn a_bad_token_keeps_the_session_up_and_every_gateway_call_says_what_to_fix() {
    let fake = gateway().await;
    let (mut options, identity) = options(&fake, ClaudeChannelMode::Auto);
    options.connect.token = Some(Secret::new("wrong-token"));
    let mut session = Session::spawn(options, Some(identity));
    // Both lines are in the pipe before the bridge can have failed.
    let initialize =
        session.send_request("initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}})).await;
    let call = session.start_call("messages_read", json!({"session_key": "agent:main:main"})).await;
    assert!(session.response(initialize).await["result"]["serverInfo"].is_object());
    let refused = session.result(call).await;
    assert!(is_error(&refused));
    let error = text(&refused).to_owned();
    assert!(error.starts_with("The OpenClaw gateway is not available: the gateway at `ws://127.0.0.1:"), "{error}");
    assert!(error.contains("unauthorized: gateway token mismatch"), "{error}");
    assert!(error.contains("the credential came from --token"), "{error}");
    assert!(error.contains("this is not retried: fix it, then restart clawmcp serve"), "{error}");
    assert!(error.ends_with("Run openclaw gateway status --deep --require-rpc to inspect Gateway health."), "{error}");
    assert!(!error.contains("wrong-token"), "secrets never reach the message");
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert_eq!(fake.connect_attempts(), 1, "a refused token is not retried");
    let later = session.call("conversations_list", json!({})).await;
    assert_eq!(text(&later), error, "the session is still up and says the same");
    assert_eq!(session.finish().await.unwrap(), ServeExit::InputClosed);
}

/// Nothing listening: the session stays up, gateway calls name the URL and say it is retried.
#[tokio::test(start_paused = true)]
async fn nothing_listening_keeps_the_session_up_naming_the_url() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let connect = ConnectOverrides {
        url: Some(format!("ws://127.0.0.1:{port}")),
        token: Some(Secret::new("t")),
        ..ConnectOverrides::default()
    };
    let mut session = Session::spawn(ServeOptions::new(connect, Env::default()), None);
    session.initialize().await;
    let down = session.call("conversations_list", json!({})).await;
    assert!(is_error(&down), "{down}");
    let message = text(&down);
    assert!(
        message.starts_with(&format!(
            "The OpenClaw gateway is not available: cannot open a WebSocket to the gateway at `ws://127.0.0.1:{port}`"
        )),
        "{message}"
    );
    assert!(message.contains("keeps trying to connect in the background: call again once the gateway is up"));
    assert_eq!(session.finish().await.unwrap(), ServeExit::InputClosed);
}

/// A gateway that is down when the session starts (its upgrades answered 503) is tried again
/// until it is up; then the session connects and gateway calls work, without a restart.
#[tokio::test(start_paused = true)]
async fn a_gateway_down_at_start_is_retried_and_the_session_connects_once_it_is_up() {
    let fake = gateway().await;
    fake.set_accepting(false);
    fake.on("sessions.list", |_| Reply::Ok(json!({"sessions": []})));
    let (options, identity) = options(&fake, ClaudeChannelMode::Auto);
    let mut session = Session::spawn(options, Some(identity));
    session.initialize().await;
    let down = session.call("conversations_list", json!({})).await;
    assert!(is_error(&down) && text(&down).contains("keeps trying to connect in the background"), "{down}");
    fake.set_accepting(true);
    subscribed(&fake, 1).await;
    let up = session.call("conversations_list", json!({})).await;
    assert_eq!(text(&up), "conversations: 0\n\n{\n  \"conversations\": []\n}");
    assert_eq!(session.finish().await.unwrap(), ServeExit::InputClosed);
}

#[tokio::test(start_paused = true)]
async fn a_url_without_credentials_is_refused_before_serving() {
    let connect = ConnectOverrides { url: Some("ws://127.0.0.1:18789".into()), ..ConnectOverrides::default() };
    let env = Env::from_pairs([("OPENCLAW_GATEWAY_TOKEN", "from-env")]);
    let session = Session::spawn(ServeOptions::new(connect, env), None);
    let error = session.finish().await.unwrap_err();
    assert!(matches!(error, ServeError::Config(_)), "{error:?}");
    let text = error.to_string();
    assert!(text.starts_with("MCP server failed to start: no gateway credentials: --url was given"), "{text}");
}

#[tokio::test(start_paused = true)]
async fn token_files_and_passwords_are_read_like_upstream() {
    let fake = gateway().await;
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("gateway.token");
    std::fs::write(&token_file, "fake-gateway-token\n").unwrap();
    let connect =
        ConnectOverrides { url: Some(fake.url()), token_file: Some(token_file), ..ConnectOverrides::default() };
    let mut session = Session::spawn(ServeOptions::new(connect, Env::default()), None);
    session.initialize().await;
    subscribed(&fake, 1).await;
    assert_eq!(fake.requests("connect")[0]["auth"], json!({"token": "fake-gateway-token"}), "trimmed");
    session.finish().await.unwrap();

    let fake = gateway_with(FakeConfig { auth: FakeAuth::Password("pw-1".into()), ..FakeConfig::default() }).await;
    let connect =
        ConnectOverrides { url: Some(fake.url()), password: Some(Secret::new("pw-1")), ..ConnectOverrides::default() };
    let mut session = Session::spawn(ServeOptions::new(connect, Env::default()), None);
    session.initialize().await;
    subscribed(&fake, 1).await;
    assert_eq!(fake.requests("connect")[0]["auth"], json!({"password": "pw-1"}));
    session.finish().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_gateway_that_says_retry_is_retried_and_waiting_calls_then_succeed() {
    let fake = gateway().await;
    let mut starting = gateway_error("UNAVAILABLE", "gateway starting", Some(json!({"reason": "startup-sidecars"})));
    starting["retryable"] = true.into();
    starting["retryAfterMs"] = 2000.into();
    fake.refuse_auth(Some(starting));
    fake.on("sessions.list", |_| Reply::Ok(json!({"sessions": []})));
    let (options, identity) = options(&fake, ClaudeChannelMode::Auto);
    let mut session = Session::spawn(options, Some(identity));
    session.initialize().await;
    let waiting = session.start_call("conversations_list", json!({})).await;
    within(async {
        while fake.connect_attempts() < 3 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    fake.refuse_auth(None);
    let listed = session.result(waiting).await;
    assert_eq!(text(&listed), "conversations: 0\n\n{\n  \"conversations\": []\n}");
    session.finish().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn calls_waiting_on_a_gateway_that_keeps_saying_retry_time_out_clearly() {
    let fake = gateway().await;
    let mut starting = gateway_error("UNAVAILABLE", "gateway starting", None);
    starting["retryable"] = true.into();
    fake.refuse_auth(Some(starting));
    let (options, identity) = options(&fake, ClaudeChannelMode::Auto);
    let mut session = Session::spawn(options, Some(identity));
    session.initialize().await;

    let waited = session.call("conversations_list", json!({})).await;
    assert!(is_error(&waited));
    let message = text(&waited);
    assert!(message.starts_with("the OpenClaw gateway connection is not ready after 180s (last error: "), "{message}");
    assert!(message.contains("gateway starting"), "{message}");
    assert!(fake.connect_attempts() > 2, "still retrying");
    assert_eq!(session.finish().await.unwrap(), ServeExit::InputClosed, "retrying is not a failure");
}

/// A gateway that cannot be reached at start: everything the client sends at once is answered
/// (gateway tools with the reason), and the session stays up.
#[tokio::test]
async fn an_unreachable_gateway_at_start_answers_every_request_already_sent() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let connect = ConnectOverrides {
        url: Some(format!("ws://127.0.0.1:{port}")),
        token: Some(Secret::new("t")),
        ..ConnectOverrides::default()
    };
    let mut session = Session::spawn(ServeOptions::new(connect, Env::default()), None);
    let mut ids = Vec::new();
    for n in 0..200 {
        ids.push(match n % 3 {
            0 => session.send_request("ping", json!({})).await,
            1 => session.start_call("conversations_list", json!({})).await,
            _ => session.start_call("events_poll", json!({})).await,
        });
    }
    let responses = session.responses(&ids).await;
    assert_eq!(responses.len(), 200);
    for response in responses.values() {
        assert!(response.get("result").is_some(), "every request gets a result: {response}");
    }
    let gateway_call = &responses[&ids[1]]["result"];
    assert!(is_error(gateway_call) && text(gateway_call).contains("cannot open a WebSocket"), "{gateway_call}");
    assert_eq!(session.finish().await.unwrap(), ServeExit::InputClosed, "and the session is still up");
}
