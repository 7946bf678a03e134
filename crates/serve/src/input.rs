//! The MCP client's input stream, reporting the moment it ends.
//!
//! Server-initiated notifications hold a handle on the session's output; the stdio transport
//! only finishes writing once every handle is gone. Learning about EOF as the transport reads
//! it lets the bridge drop its handle right away, so the process exits as soon as the client
//! closes stdin instead of waiting out the transport's writer grace period.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::CancellationToken;

pub(crate) struct InputEnd<R> {
    inner: R,
    ended: CancellationToken,
}

impl<R> InputEnd<R> {
    /// Wraps `inner`; `ended` fires at EOF or on a read error.
    pub(crate) fn new(inner: R, ended: CancellationToken) -> Self {
        InputEnd { inner, ended }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for InputEnd<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let had_room = buf.remaining() > 0;
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let read = buf.filled().len() - before;
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
