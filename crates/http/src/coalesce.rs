//! Answers that a connection writes back to back leave in one write.
//!
//! hyper flushes each answer as soon as it is written: one `writev` per answer. For pipelined
//! requests (the file channel's inputs: a 1 MiB chunk is 128 of them) each write also wakes the
//! client, and on a virtual machine that wake-up is most of the write's cost: a quarter of a
//! creating node's CPU went to it. hyper's own remedy, `pipeline_flush`, also lifts its cap on
//! a connection's write buffer (a slow reader of a streamed answer would grow the node's memory),
//! so the batching is done here instead, below hyper, with a bound of its own.
//!
//! [`CoalescedWrites`] takes small writes into a buffer of at most [`COALESCE_BYTES`]. A flush
//! that comes right after new bytes is put off by one pass: it wakes the connection's task and
//! reports done, so hyper goes on to the next pipelined request; the next flush that finds
//! nothing new (the next pass of hyper's loop, when it has no other answer ready) writes the
//! buffer out. So an answer waits at most one pass of the connection's task, never for another
//! request or for a timer. A write that does not fit first empties the buffer (backpressure from
//! the socket reaches hyper as before), and a large one goes to the socket unbuffered.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The most bytes held back: a burst's answers (about 250 bytes each) in a few writes, and
/// little memory per connection.
pub(crate) const COALESCE_BYTES: usize = 64 * 1024;

/// `io` with small writes gathered and their flush put off by one pass (see the module docs).
pub(crate) struct CoalescedWrites<IO> {
    io: IO,
    /// Bytes taken and not yet written: `held[written..]`.
    held: Vec<u8>,
    written: usize,
    /// Bytes were taken since the last flush was asked for.
    fresh: bool,
}

impl<IO> CoalescedWrites<IO> {
    pub(crate) fn new(io: IO) -> Self {
        CoalescedWrites { io, held: Vec::new(), written: 0, fresh: false }
    }
}

impl<IO: AsyncWrite + Unpin> CoalescedWrites<IO> {
    /// Writes out everything held.
    fn poll_write_held(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.held.len() {
            let wrote = ready!(Pin::new(&mut self.io).poll_write(cx, &self.held[self.written..]))?;
            if wrote == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += wrote;
        }
        self.held.clear();
        self.written = 0;
        Poll::Ready(Ok(()))
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for CoalescedWrites<IO> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for CoalescedWrites<IO> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[io::IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let total: usize = bufs.iter().map(|buf| buf.len()).sum();
        if this.held.len() + total > COALESCE_BYTES {
            ready!(this.poll_write_held(cx))?;
        }
        if total >= COALESCE_BYTES {
            return Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        }
        if this.held.capacity() == 0 {
            this.held.reserve_exact(COALESCE_BYTES);
        }
        for buf in bufs {
            this.held.extend_from_slice(buf);
        }
        this.fresh |= total > 0;
        Poll::Ready(Ok(total))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if std::mem::take(&mut self.fresh) {
            // Put off by one pass: the task runs again at once, and its next flush writes.
            cx.waker().wake_by_ref();
            return Poll::Ready(Ok(()));
        }
        ready!(self.poll_write_held(cx))?;
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_write_held(cx))?;
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Wake, Waker};

    use super::*;

    /// A socket that records each write it takes, and takes at most `room` more bytes (then
    /// answers `Pending`, as a full socket does).
    #[derive(Default)]
    struct Socket {
        writes: Vec<Vec<u8>>,
        room: usize,
        flushes: usize,
        shut: bool,
    }

    impl AsyncWrite for Socket {
        fn poll_write(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
            let took = buf.len().min(self.room);
            if took == 0 {
                return Poll::Pending;
            }
            self.room -= took;
            self.writes.push(buf[..took].to_vec());
            Poll::Ready(Ok(took))
        }

        fn poll_flush(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.flushes += 1;
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.shut = true;
            Poll::Ready(Ok(()))
        }
    }

    #[derive(Default)]
    struct Wakes(AtomicUsize);

    impl Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    struct Harness {
        io: CoalescedWrites<Socket>,
        wakes: Arc<Wakes>,
        waker: Waker,
    }

    impl Harness {
        fn with_room(room: usize) -> Self {
            let wakes = Arc::new(Wakes::default());
            let waker = Waker::from(wakes.clone());
            Harness { io: CoalescedWrites::new(Socket { room, ..Socket::default() }), wakes, waker }
        }

        fn write(&mut self, bytes: &[u8]) -> Poll<io::Result<usize>> {
            Pin::new(&mut self.io).poll_write(&mut Context::from_waker(&self.waker), bytes)
        }

        fn write_vectored(&mut self, slices: &[&[u8]]) -> Poll<io::Result<usize>> {
            let slices: Vec<io::IoSlice<'_>> = slices.iter().map(|s| io::IoSlice::new(s)).collect();
            Pin::new(&mut self.io).poll_write_vectored(&mut Context::from_waker(&self.waker), &slices)
        }

        fn flush(&mut self) -> Poll<io::Result<()>> {
            Pin::new(&mut self.io).poll_flush(&mut Context::from_waker(&self.waker))
        }

        fn shutdown(&mut self) -> Poll<io::Result<()>> {
            Pin::new(&mut self.io).poll_shutdown(&mut Context::from_waker(&self.waker))
        }

        fn writes(&self) -> &[Vec<u8>] {
            &self.io.io.writes
        }

        fn wakes(&self) -> usize {
            self.wakes.0.load(Ordering::SeqCst)
        }
    }

    fn took(polled: Poll<io::Result<usize>>) -> usize {
        match polled {
            Poll::Ready(Ok(took)) => took,
            other => panic!("expected a write taken, got {other:?}"),
        }
    }

    fn done(polled: Poll<io::Result<()>>) {
        assert!(matches!(polled, Poll::Ready(Ok(()))), "expected done, got {polled:?}");
    }

    #[test]
    fn answers_flushed_in_one_pass_leave_in_one_write_on_the_next() {
        let mut h = Harness::with_room(usize::MAX);
        // hyper's pass for each pipelined request: write the answer (head and body), flush.
        assert_eq!(took(h.write_vectored(&[b"head-1 ", b"body-1 "])), 14);
        done(h.flush());
        assert_eq!(took(h.write(b"answer-2 ")), 9);
        done(h.flush());
        assert_eq!(took(h.write(b"answer-3")), 8);
        done(h.flush());
        // Each put-off flush woke the task for one more pass; nothing has left yet.
        assert_eq!((h.writes().len(), h.wakes()), (0, 3));
        // That pass had nothing new: its flush writes all of it, once, and flushes the socket.
        done(h.flush());
        assert_eq!(h.writes(), [b"head-1 body-1 answer-2 answer-3".to_vec()]);
        assert_eq!((h.io.io.flushes, h.wakes()), (1, 3));
        // Nothing held: a flush is the socket's own, with no further wake.
        done(h.flush());
        assert_eq!((h.writes().len(), h.io.io.flushes, h.wakes()), (1, 2, 3));
    }

    #[test]
    fn at_most_coalesce_bytes_are_held_and_a_large_write_goes_straight_out() {
        let mut h = Harness::with_room(usize::MAX);
        let almost = vec![1u8; COALESCE_BYTES - 1];
        assert_eq!(took(h.write(&almost)), COALESCE_BYTES - 1);
        assert!(h.writes().is_empty(), "one byte under the bound is held");
        // One more byte fits exactly; two would not: what is held leaves first.
        assert_eq!(took(h.write(&[2])), 1);
        assert!(h.writes().is_empty(), "exactly the bound is held");
        assert_eq!(took(h.write(&[3, 3])), 2);
        assert_eq!(h.writes().len(), 1);
        assert_eq!(h.writes()[0].len(), COALESCE_BYTES);
        // A write of the bound itself is not copied: held bytes go first, then it, unbuffered.
        let large = vec![4u8; COALESCE_BYTES];
        assert_eq!(took(h.write(&large)), COALESCE_BYTES);
        assert_eq!(h.writes()[1..], [vec![3, 3], large]);
        assert!(h.io.held.is_empty());
        assert!(h.io.held.capacity() <= COALESCE_BYTES, "held {} bytes of room", h.io.held.capacity());
    }

    #[test]
    fn a_full_socket_holds_the_writer_back_and_loses_nothing() {
        let mut h = Harness::with_room(10);
        let first = vec![1u8; COALESCE_BYTES - 4];
        assert_eq!(took(h.write(&first)), first.len());
        // This one does not fit: the held bytes must leave first, and the socket takes only ten.
        assert!(h.write(&[2; 8]).is_pending());
        done(h.flush()); // put off by a pass, as after any new bytes
        assert!(h.flush().is_pending(), "a flush cannot finish while the socket is full");
        assert_eq!(h.writes().concat().len(), 10);
        assert!(h.io.held.len() <= COALESCE_BYTES);
        // Room again: the same write is taken, and the next flush sends everything in order.
        h.io.io.room = usize::MAX;
        assert_eq!(took(h.write(&[2; 8])), 8);
        done(h.flush());
        done(h.flush());
        let mut expected = first;
        expected.extend_from_slice(&[2; 8]);
        assert_eq!(h.writes().concat(), expected);
    }

    #[test]
    fn shutdown_writes_what_is_held_first() {
        let mut h = Harness::with_room(usize::MAX);
        assert_eq!(took(h.write(b"last answer")), 11);
        done(h.flush());
        assert!(h.writes().is_empty());
        done(h.shutdown());
        assert_eq!(h.writes(), [b"last answer".to_vec()]);
        assert!(h.io.io.shut);
    }
}
