//! `POST /tools/invoke` against the fake: body and auth on the wire, status and body mapping,
//! and the one deadline against a stalled and a trickling gateway.

use std::time::Duration;

use clawmcp_gateway::{
    InvokeBody, InvokeError, Secret, ToolOutcome, ToolsInvokeClient, ToolsInvokeOptions, ToolsInvokeRequest,
};
use clawmcp_testkit::{FakeAuth, FakeConfig, FakeGateway, ToolReply};
use serde_json::json;

use crate::support::{TOKEN, within};

fn client(fake: &FakeGateway, bearer: &str, options: ToolsInvokeOptions) -> ToolsInvokeClient {
    // The WebSocket URL is what callers have; the client derives the HTTP endpoint.
    ToolsInvokeClient::new(&fake.url(), Some(&Secret::new(bearer)), options).unwrap()
}

#[tokio::test(start_paused = true)]
async fn happy_path_sends_bearer_and_a_closed_body() {
    let fake = FakeGateway::start().await;
    fake.on_tool("sessions_list", |call| {
        ToolReply::ok(json!({"content": [{"type": "text", "text": "{}"}], "details": {"args": call.body["args"]}}))
    });
    let client = client(&fake, TOKEN, ToolsInvokeOptions::default());
    assert_eq!(client.endpoint(), format!("{}/tools/invoke", fake.http_url()));

    let mut request = ToolsInvokeRequest::new("sessions_list", json!({"limit": 1}));
    request.session_key = Some("agent:main:main".into());
    let response = within(client.invoke(&request)).await.unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(
        response.outcome(),
        ToolOutcome::Success(json!({"content": [{"type": "text", "text": "{}"}], "details": {"args": {"limit": 1}}}))
    );

    let call = fake.tool_calls().remove(0);
    assert_eq!(call.body, json!({"tool": "sessions_list", "args": {"limit": 1}, "sessionKey": "agent:main:main"}));
    assert_eq!(call.headers["authorization"], format!("Bearer {TOKEN}"));
    assert_eq!(call.headers["content-type"], "application/json");
}

#[tokio::test(start_paused = true)]
async fn the_password_is_sent_as_the_bearer() {
    let fake =
        FakeGateway::start_with(FakeConfig { auth: FakeAuth::Password("pw".into()), ..FakeConfig::default() }).await;
    fake.on_tool("session_status", |_| ToolReply::ok(json!({"ok": 1})));
    let response = within(
        client(&fake, "pw", ToolsInvokeOptions::default())
            .invoke(&ToolsInvokeRequest::new("session_status", json!({}))),
    )
    .await
    .unwrap();
    assert_eq!(response.status, 200);
}

#[tokio::test(start_paused = true)]
async fn unauthorized_and_unknown_tool_are_responses_not_errors() {
    let fake = FakeGateway::start().await;
    let wrong = within(
        client(&fake, "wrong", ToolsInvokeOptions::default())
            .invoke(&ToolsInvokeRequest::new("sessions_list", json!({}))),
    )
    .await
    .unwrap();
    assert_eq!(wrong.status, 401);
    assert_eq!(wrong.body, InvokeBody::Json(json!({"error": {"message": "Unauthorized", "type": "unauthorized"}})));
    assert!(
        matches!(wrong.outcome(), ToolOutcome::Failure { status: 401, ref message, .. } if message == "Unauthorized")
    );
    assert!(fake.tool_calls().is_empty());

    let missing = within(
        client(&fake, TOKEN, ToolsInvokeOptions::default()).invoke(&ToolsInvokeRequest::new("no_such_tool", json!({}))),
    )
    .await
    .unwrap();
    assert_eq!(missing.status, 404);
    assert_eq!(
        missing.outcome(),
        ToolOutcome::Failure {
            status: 404,
            kind: Some("not_found".into()),
            message: "Tool not available: no_such_tool".into()
        }
    );
}

#[tokio::test(start_paused = true)]
async fn a_non_json_body_is_kept_as_text() {
    let fake = FakeGateway::start().await;
    fake.on_tool("proxy_page", |_| ToolReply::text(502, "<html>Bad Gateway</html>"));
    let response = within(
        client(&fake, TOKEN, ToolsInvokeOptions::default()).invoke(&ToolsInvokeRequest::new("proxy_page", json!({}))),
    )
    .await
    .unwrap();
    assert_eq!(response.status, 502);
    assert_eq!(response.body, InvokeBody::Text("<html>Bad Gateway</html>".into()));
    assert!(matches!(response.outcome(), ToolOutcome::Failure { status: 502, .. }));
}

#[tokio::test(start_paused = true)]
async fn the_deadline_ends_a_stalled_call() {
    let fake = FakeGateway::start().await;
    fake.on_tool("slow_tool", |_| ToolReply::Stall);
    let options = ToolsInvokeOptions { deadline: Duration::from_secs(5), ..ToolsInvokeOptions::default() };
    let error = within(client(&fake, TOKEN, options).invoke(&ToolsInvokeRequest::new("slow_tool", json!({}))))
        .await
        .unwrap_err();
    assert!(matches!(error, InvokeError::Timeout { after, .. } if after == Duration::from_secs(5)), "{error:?}");
    assert_eq!(error.to_string(), "Gateway request timed out after 5000ms: slow_tool");
}

#[tokio::test(start_paused = true)]
async fn the_deadline_also_ends_a_trickling_body() {
    let fake = FakeGateway::start().await;
    fake.on_tool("trickle", |_| ToolReply::Trickle {
        status: 200,
        chunk: " ".into(),
        interval: Duration::from_secs(1),
    });
    let options = ToolsInvokeOptions { deadline: Duration::from_secs(5), ..ToolsInvokeOptions::default() };
    let started = tokio::time::Instant::now();
    let error =
        within(client(&fake, TOKEN, options).invoke(&ToolsInvokeRequest::new("trickle", json!({})))).await.unwrap_err();
    assert!(matches!(error, InvokeError::Timeout { .. }), "{error:?}");
    assert_eq!(started.elapsed(), Duration::from_secs(5), "bytes arriving do not extend the deadline (virtual clock)");
}

#[tokio::test(start_paused = true)]
async fn the_response_cap_applies_at_its_exact_edge() {
    let fake = FakeGateway::start().await;
    fake.on_tool("exact", |_| ToolReply::text(200, &"a".repeat(1024)));
    fake.on_tool("over", |_| ToolReply::text(200, &"a".repeat(1025)));
    let options = ToolsInvokeOptions { max_response_bytes: 1024, ..ToolsInvokeOptions::default() };
    let client = client(&fake, TOKEN, options);

    let exact = within(client.invoke(&ToolsInvokeRequest::new("exact", json!({})))).await.unwrap();
    assert_eq!(exact.body, InvokeBody::Text("a".repeat(1024)));
    let error = within(client.invoke(&ToolsInvokeRequest::new("over", json!({})))).await.unwrap_err();
    assert!(matches!(error, InvokeError::ResponseTooLarge { limit: 1024, .. }), "{error:?}");
}
