//! The fake `POST /tools/invoke`, with the real gateway's checks in the real order
//! (as a real 2026.9.6 gateway answers; `docs/tools-bridge.md` §6): method (405), bearer (401),
//! body size (413) and JSON (400), `name`/`tool` (400), then the scripted tool or the 404 for an
//! unknown one. Scripted replies may stall or trickle to exercise client deadlines.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ALLOW, AUTHORIZATION, CONTENT_TYPE};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use serde_json::{Value, json};

use crate::config::FakeAuth;
use crate::gateway::{Body, State, ToolCall, json_response, text_response};
use crate::reply::ToolReply;

/// The gateway's `/tools/invoke` body limit (2 MB).
const MAX_BODY: usize = 2 * 1024 * 1024;

pub(crate) async fn handle(request: Request<Incoming>, state: &State) -> Response<Body> {
    if request.method() != Method::POST {
        let mut response = text_response(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
        response.headers_mut().insert(ALLOW, "POST".parse().expect("static header"));
        return response;
    }
    if !authorized(&request, state) {
        return json_response(
            StatusCode::UNAUTHORIZED,
            &json!({"error":{"message":"Unauthorized","type":"unauthorized"}}),
        );
    }
    let headers = request.headers().clone();
    let bytes = match Limited::new(request.into_body(), MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return json_response(
                StatusCode::PAYLOAD_TOO_LARGE,
                &json!({"error":{"message":"Payload Too Large","type":"payload_too_large"}}),
            );
        }
    };
    let body: Value = match serde_json::from_slice(&bytes) {
        Ok(body) => body,
        Err(error) => {
            return json_response(
                StatusCode::BAD_REQUEST,
                &json!({"error":{"message": error.to_string(), "type":"invalid_request_error"}}),
            );
        }
    };
    let name = ["name", "tool"].iter().find_map(|key| body.get(key).and_then(Value::as_str)).map(str::to_owned);
    let Some(tool) = name.filter(|n| !n.trim().is_empty()) else {
        return json_response(
            StatusCode::BAD_REQUEST,
            &json!({"ok":false,"error":{"type":"invalid_request","message":"tools.invoke requires name"}}),
        );
    };
    let call = ToolCall { tool: tool.clone(), body, headers };
    let reply = state.tool_reply_for(&call);
    state.record_tool_call(call);
    match reply {
        None => json_response(
            StatusCode::NOT_FOUND,
            &json!({"ok":false,"error":{"type":"not_found","message":format!("Tool not available: {tool}")}}),
        ),
        Some(reply) => respond(reply).await,
    }
}

/// `Authorization: Bearer <secret>` against the configured token or password.
fn authorized(request: &Request<Incoming>, state: &State) -> bool {
    let expected = match &state.config.auth {
        FakeAuth::None => return true,
        FakeAuth::Token(secret) | FakeAuth::Password(secret) => secret,
    };
    let offered =
        request.headers().get(AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    offered.is_some_and(|offered| offered.trim() == expected)
}

async fn respond(reply: ToolReply) -> Response<Body> {
    match reply {
        ToolReply::Json { status, body } => json_response(status_code(status), &body),
        ToolReply::Text { status, content_type, body } => Response::builder()
            .status(status_code(status))
            .header(CONTENT_TYPE, content_type)
            .body(Full::new(Bytes::from(body)).boxed())
            .expect("static response"),
        ToolReply::Stall => std::future::pending().await,
        ToolReply::Trickle { status, chunk, interval } => {
            let chunks = futures_util::stream::unfold((), move |()| {
                let chunk = Bytes::from(chunk.clone());
                async move {
                    tokio::time::sleep(interval.max(Duration::from_millis(1))).await;
                    Some((Ok::<_, Infallible>(Frame::data(chunk)), ()))
                }
            });
            Response::builder()
                .status(status_code(status))
                .header(CONTENT_TYPE, "application/json; charset=utf-8")
                .body(StreamBody::new(chunks).boxed())
                .expect("static response")
        }
    }
}

fn status_code(status: u16) -> StatusCode {
    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}
