//! The MCP client's input stream, reporting the moment it ends.
//!
//! Server-initiated notifications hold a handle on the session's output; the stdio transport
//! only finishes writing once every handle is gone. Learning about EOF as the transport reads
//! it lets the bridge drop its handle right away, so the process exits as soon as the client
//! closes stdin instead of waiting out the transport's writer grace period.
//!
//! It also counts the bytes read, so a session that must end (the gateway refused us at start)
//! can first read and answer what the client already sent ([`InputActivity`]).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::CancellationToken;

pub(crate) struct InputEnd<R> {
    inner: R,
    ended: CancellationToken,
    activity: InputActivity,
}

/// How many bytes the session has read so far (a clone sees the same count).
#[derive(Clone, Default)]
pub(crate) struct InputActivity(Arc<AtomicU64>);

impl InputActivity {
    pub(crate) fn bytes_read(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl<R> InputEnd<R> {
    /// Wraps `inner`; `ended` fires at EOF or on a read error.
    pub(crate) fn new(inner: R, ended: CancellationToken) -> Self {
        InputEnd { inner, ended, activity: InputActivity::default() }
    }

    pub(crate) fn activity(&self) -> InputActivity {
        self.activity.clone()
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for InputEnd<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let had_room = buf.remaining() > 0;
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let read = buf.filled().len() - before;
        self.activity.0.fetch_add(read as u64, Ordering::Relaxed);
        match &polled {
            Poll::Ready(Ok(())) if had_room && read == 0 => self.ended.cancel(),
            Poll::Ready(Err(_)) => self.ended.cancel(),
            _ => {}
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[tokio::test]
    async fn fires_at_eof_only() {
        let (mut writer, reader) = tokio::io::duplex(64);
        let ended = CancellationToken::new();
        let mut input = InputEnd::new(reader, ended.clone());
        writer.write_all(b"line\n").await.unwrap();
        let mut buffer = [0u8; 16];
        assert_eq!(input.read(&mut buffer).await.unwrap(), 5);
        assert!(!ended.is_cancelled());
        drop(writer);
        assert_eq!(input.read(&mut buffer).await.unwrap(), 0);
        assert!(ended.is_cancelled());
    }
}
