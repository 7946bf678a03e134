//! Reading one request body, bounded in size and time.
//!
//! The size cap is enforced on the bytes actually received (`http_body_util::Limited`), not on
//! what the client declared, so chunked uploads and bodies whose framing disagrees with their
//! size hint are capped all the same. The time cap turns a stalled upload into `408` and frees
//! the ingress slot it holds.

use std::future::Future;
use std::task::Poll;

use bytes::Bytes;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::Body;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::gate::Refusal;

/// The whole body, or the refusal to answer with: `TooLarge` past `max_bytes`, `TimedOut` at
/// `deadline` or when the transport gives up (`cancel`: shutdown), `BadBody` if the client broke
/// the stream.
pub(crate) async fn read_body<B>(
    body: B,
    max_bytes: usize,
    deadline: Instant,
    cancel: &CancellationToken,
) -> Result<Bytes, Refusal>
where
    B: Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut collect = std::pin::pin!(Limited::new(body, max_bytes).collect());
    // A small body has usually arrived with the headers: one poll takes it, and then neither the
    // deadline's timer nor the cancellation future is even created.
    let collected = match std::future::poll_fn(|cx| Poll::Ready(collect.as_mut().poll(cx))).await {
        Poll::Ready(collected) => collected,
        Poll::Pending => tokio::select! {
            biased;
            collected = collect => collected,
            _ = tokio::time::sleep_until(deadline) => return Err(Refusal::TimedOut),
            _ = cancel.cancelled() => return Err(Refusal::TimedOut),
        },
    };
    match collected {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<LengthLimitError>() => Err(Refusal::TooLarge),
        Err(e) => {
            tracing::debug!(error = %e, "request body stream failed");
            Err(Refusal::BadBody)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use std::time::Duration;

    use hyper::body::{Frame, SizeHint};

    use super::*;

    /// A body that claims `declared` bytes but yields `chunks`: a lying Content-Length.
    struct LyingBody {
        declared: u64,
        chunks: Vec<Bytes>,
    }

    impl Body for LyingBody {
        type Data = Bytes;
        type Error = Infallible;

        fn poll_frame(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            Poll::Ready(if self.chunks.is_empty() { None } else { Some(Ok(Frame::data(self.chunks.remove(0)))) })
        }

        fn size_hint(&self) -> SizeHint {
            SizeHint::with_exact(self.declared)
        }
    }

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(3600)
    }

    #[tokio::test(start_paused = true)]
    async fn the_cap_counts_received_bytes_not_declared_ones() {
        let cancel = CancellationToken::new();
        let lying = LyingBody { declared: 10, chunks: vec![Bytes::from(vec![b' '; 8]), Bytes::from(vec![b' '; 9])] };
        assert_eq!(read_body(lying, 16, far(), &cancel).await, Err(Refusal::TooLarge));
        let at_cap = LyingBody { declared: 10, chunks: vec![Bytes::from(vec![b' '; 8]), Bytes::from(vec![b' '; 8])] };
        assert_eq!(read_body(at_cap, 16, far(), &cancel).await.map(|b| b.len()), Ok(16));
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_body_times_out_at_the_deadline() {
        let cancel = CancellationToken::new();
        let stalled =
            http_body_util::StreamBody::new(futures_util::stream::pending::<Result<Frame<Bytes>, Infallible>>());
        let started = Instant::now();
        let deadline = started + Duration::from_secs(2);
        assert_eq!(read_body(stalled, 16, deadline, &cancel).await, Err(Refusal::TimedOut));
        assert_eq!(Instant::now(), deadline, "gave up exactly at the deadline");
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_ends_a_body_read() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let stalled =
            http_body_util::StreamBody::new(futures_util::stream::pending::<Result<Frame<Bytes>, Infallible>>());
        assert_eq!(read_body(stalled, 16, far(), &cancel).await, Err(Refusal::TimedOut));
    }
}
