//! The one streamed answer of the loopback server: a `tools/call` that carries a
//! `progressToken`, from a client that accepts `text/event-stream`, is answered as a short
//! Server-Sent Events stream: its progress notifications, then its JSON-RPC response, then the
//! end of the stream.
//!
//! Why it exists: real clients abandon a tool call after about 60 s unless progress for their
//! token arrives, and a plain JSON answer has nowhere to put progress. Everything else is plain
//! JSON (`docs/node-http.md` §7); this streaming-progress step is limited to this one case and
//! served on the same listener after every gate check (no second listener, no standalone
//! `GET` stream). Events have the form MCP's streamable-HTTP transport uses
//! (`event: message`, `data: <json>`), without event ids: there is nothing to resume.
//!
//! Bounds: progress goes through a queue of [`PROGRESS_QUEUE`] frames and is dropped when the
//! client does not keep up (it is advisory); the final response travels on its own one-shot
//! channel, so a full queue can delay it behind the queued progress but never drop it.

use std::convert::Infallible;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Either, Full, StreamBody};
use hyper::body::Frame;
use tokio::sync::{mpsc, oneshot};

use clawmcp_mcp::FrameSink;

/// Progress frames queued for one streamed answer. The dispatcher sends one every few seconds
/// and a tool rarely more than a few per second, so 32 is ample for a reading client and
/// caps what a client that stops reading can make us hold.
pub(crate) const PROGRESS_QUEUE: usize = 32;

/// The dispatcher's side of one streamed answer: queues progress frames without waiting.
pub(crate) struct ProgressSink(mpsc::Sender<String>);

impl FrameSink for ProgressSink {
    fn try_send(&self, frame: String) -> bool {
        self.0.try_send(frame).is_ok()
    }
}

/// The body every response of this server has: a whole JSON or text body, or an event stream
/// (boxed: only the rare streamed answer pays for the allocation).
pub(crate) type ResponseBody = Either<Full<Bytes>, UnsyncBoxBody<Bytes, Infallible>>;

/// Where a streamed answer's frames come from.
pub(crate) struct EventSources {
    /// Progress notifications, in the order they were sent.
    pub(crate) progress: mpsc::Receiver<String>,
    /// The JSON-RPC response. If its sender goes away without sending, `fallback` is sent
    /// instead, so the stream always ends with an answer to the request.
    pub(crate) response: oneshot::Receiver<String>,
    pub(crate) fallback: String,
}

/// A progress sink for the dispatcher and the receiving half for [`event_stream`].
pub(crate) fn progress_channel() -> (ProgressSink, mpsc::Receiver<String>) {
    let (tx, rx) = mpsc::channel(PROGRESS_QUEUE);
    (ProgressSink(tx), rx)
}

/// `200 text/event-stream`: every queued progress frame, then the response, then the end.
/// `held` lives as long as the body: the server passes the call's cancel guard (if the client
/// goes away mid-stream, hyper drops the body and the call is cancelled, exactly as when the
/// client leaves a plain request) and its connection's busy mark.
pub(crate) fn event_stream<H: Send + 'static>(sources: EventSources, held: H) -> Response<ResponseBody> {
    let EventSources { progress, response, fallback } = sources;
    let state = StreamState { progress, response: Some(response), fallback, _held: held };
    let events = futures_util::stream::unfold(state, |mut state| async move {
        let frame = state.next_frame().await?;
        Some((Ok::<_, Infallible>(Frame::data(sse_event(&frame))), state))
    });
    let mut answer = Response::new(Either::Right(StreamBody::new(events).boxed_unsync()));
    *answer.status_mut() = StatusCode::OK;
    let headers = answer.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    // Intermediaries and client caches must pass events through as they come.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    answer
}

struct StreamState<H> {
    progress: mpsc::Receiver<String>,
    /// `None` once the response was sent: the stream is over.
    response: Option<oneshot::Receiver<String>>,
    fallback: String,
    _held: H,
}

impl<H> StreamState<H> {
    /// Queued progress first, then the response (the dispatcher stops progress before it
    /// answers, so nothing can be queued behind the response).
    async fn next_frame(&mut self) -> Option<String> {
        let response = self.response.as_mut()?;
        let next = tokio::select! {
            biased;
            Some(frame) = self.progress.recv() => return Some(frame),
            response = response => response,
        };
        self.response = None;
        Some(next.unwrap_or_else(|_| std::mem::take(&mut self.fallback)))
    }
}

/// One SSE `message` event. A JSON frame from our serialiser never contains a newline, but
/// each line gets its own `data:` field all the same, as SSE requires, so the framing can
/// never be broken by the payload.
fn sse_event(frame: &str) -> Bytes {
    let mut event = String::with_capacity(frame.len() + 24);
    event.push_str("event: message\n");
    for line in frame.split('\n') {
        event.push_str("data: ");
        event.push_str(line.strip_suffix('\r').unwrap_or(line));
        event.push('\n');
    }
    event.push('\n');
    Bytes::from(event)
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;
    use tokio_util::sync::CancellationToken;

    use super::*;

    fn sources() -> (ProgressSink, oneshot::Sender<String>, EventSources) {
        let (sink, progress) = progress_channel();
        let (answer, response) = oneshot::channel();
        (sink, answer, EventSources { progress, response, fallback: "fallback".into() })
    }

    async fn body_text(response: Response<ResponseBody>) -> String {
        String::from_utf8(response.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap()
    }

    #[test]
    fn an_event_is_one_data_line_per_payload_line() {
        assert_eq!(sse_event(r#"{"a":1}"#), "event: message\ndata: {\"a\":1}\n\n");
        assert_eq!(sse_event("x\ny\r\nz"), "event: message\ndata: x\ndata: y\ndata: z\n\n");
    }

    #[tokio::test]
    async fn a_full_queue_drops_progress_but_never_the_response() {
        let (sink, answer, sources) = sources();
        for n in 0..PROGRESS_QUEUE {
            assert!(sink.try_send(format!("p{n}")), "frame {n} fits");
        }
        assert!(!sink.try_send("one too many".into()), "the queue is full at PROGRESS_QUEUE");
        answer.send("final".into()).unwrap();
        let response = event_stream(sources, CancellationToken::new().drop_guard());
        assert_eq!(response.headers()[header::CONTENT_TYPE], "text/event-stream");
        assert_eq!(response.headers()[header::CACHE_CONTROL], "no-cache");
        let mut expected: String = (0..PROGRESS_QUEUE).map(|n| format!("event: message\ndata: p{n}\n\n")).collect();
        expected.push_str("event: message\ndata: final\n\n");
        assert_eq!(body_text(response).await, expected, "queued progress in order, then the response, then the end");
    }

    #[tokio::test]
    async fn the_stream_ends_after_the_response_even_if_a_sink_survives() {
        let (sink, answer, sources) = sources();
        answer.send("final".into()).unwrap();
        // `sink` stays alive (a tool may keep a clone): the response still ends the stream.
        let text = body_text(event_stream(sources, CancellationToken::new().drop_guard())).await;
        assert_eq!(text, "event: message\ndata: final\n\n");
        drop(sink);
    }

    #[tokio::test]
    async fn a_lost_response_becomes_the_fallback() {
        let (_sink, answer, sources) = sources();
        drop(answer);
        let text = body_text(event_stream(sources, CancellationToken::new().drop_guard())).await;
        assert_eq!(text, "event: message\ndata: fallback\n\n");
    }

    #[tokio::test]
    async fn dropping_the_body_fires_the_cancel_guard() {
        let (_sink, _answer, sources) = sources();
        let cancel = CancellationToken::new();
        let response = event_stream(sources, cancel.clone().drop_guard());
        assert!(!cancel.is_cancelled());
        drop(response);
        assert!(cancel.is_cancelled(), "a client that leaves mid-stream cancels the call");
    }
}
