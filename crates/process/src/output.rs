//! The one bounded output buffer, and how its bytes become text.
//!
//! A buffer keeps either the head of a stream (`system.run`: the first bytes, so the start of a
//! long listing reads as it was printed) or its tail (a job: a ring, so a long-running job shows
//! what it is doing now). Either way it counts every byte, so a reader learns how much was cut,
//! and it addresses bytes by their offset in the whole stream, so a job's output can be read
//! incrementally across a ring that keeps moving.
//!
//! Decoding is lossy UTF-8, but a cut never produces a replacement character: a character split
//! by the cap, or one whose last bytes have not been written yet, is left out (and delivered
//! whole by the next read when there is one).

use std::collections::VecDeque;

use tokio::io::{AsyncRead, AsyncReadExt};

/// Read buffer per stream.
const READ_CHUNK: usize = 16 * 1024;

/// One output stream as captured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedStream {
    /// The kept bytes, decoded as UTF-8 lossily.
    pub text: String,
    /// Every byte the command wrote to the stream, kept or not.
    pub total_bytes: u64,
    /// True when bytes beyond the cap were discarded.
    pub truncated: bool,
}

/// A piece of output read from a stream offset on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputChunk {
    /// The bytes available from the requested offset, decoded as UTF-8 lossily.
    pub text: String,
    /// The stream offset just past `text`: pass it as the next read's `from`.
    pub end: u64,
    /// Bytes after the requested offset that the cap discarded before they could be read.
    pub discarded: u64,
    /// Every byte written to the stream so far.
    pub total_bytes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    Head,
    Tail,
}

/// Keeps at most `limit` bytes of a stream (its head or its tail) and counts them all.
#[derive(Debug)]
pub(crate) struct OutputBuffer {
    kept: VecDeque<u8>,
    limit: usize,
    keep: Keep,
    total: u64,
}

impl OutputBuffer {
    /// Keeps the first `limit` bytes and discards the rest.
    pub(crate) fn keeping_head(limit: usize) -> Self {
        OutputBuffer { kept: VecDeque::new(), limit, keep: Keep::Head, total: 0 }
    }

    /// Keeps the last `limit` bytes: older bytes fall out as new ones arrive.
    pub(crate) fn keeping_tail(limit: usize) -> Self {
        OutputBuffer { kept: VecDeque::new(), limit, keep: Keep::Tail, total: 0 }
    }

    pub(crate) fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        match self.keep {
            Keep::Head => {
                let room = self.limit.saturating_sub(self.kept.len());
                self.kept.extend(&chunk[..room.min(chunk.len())]);
            }
            Keep::Tail => {
                let chunk = &chunk[chunk.len().saturating_sub(self.limit)..];
                let overflow = (self.kept.len() + chunk.len()).saturating_sub(self.limit);
                self.kept.drain(..overflow);
                self.kept.extend(chunk);
            }
        }
    }

    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// The stream offset of the first kept byte.
    fn kept_start(&self) -> u64 {
        match self.keep {
            Keep::Head => 0,
            Keep::Tail => self.total - self.kept.len() as u64,
        }
    }

    /// The kept bytes from stream offset `from` on. `stream_closed` says no byte will follow
    /// the ones written so far; until then a trailing incomplete character is held back.
    pub(crate) fn read_from(&self, from: u64, stream_closed: bool) -> OutputChunk {
        let kept_start = self.kept_start();
        let kept_end = kept_start + self.kept.len() as u64;
        let mut start = from.clamp(kept_start, kept_end);
        let mut bytes: Vec<u8> = self.kept.range(index(start - kept_start)..).copied().collect();
        if from < kept_start {
            // The cap cut just before `start`, possibly inside a character: drop its remains.
            let partial = bytes.iter().take(3).take_while(|&&byte| is_continuation(byte)).count();
            bytes.drain(..partial);
            start += partial as u64;
        }
        let more_follows = !stream_closed || kept_end < self.total;
        if more_follows {
            bytes.truncate(complete_utf8_prefix_len(&bytes));
        }
        let end = start + bytes.len() as u64;
        OutputChunk {
            text: String::from_utf8_lossy(&bytes).into_owned(),
            end,
            discarded: start.saturating_sub(from),
            total_bytes: self.total,
        }
    }

    /// Everything kept, once the stream has ended.
    pub(crate) fn finish(self) -> CapturedStream {
        let truncated = self.total > self.kept.len() as u64;
        CapturedStream { text: self.read_from(0, true).text, total_bytes: self.total, truncated }
    }
}

fn index(offset: u64) -> usize {
    usize::try_from(offset).expect("a kept offset fits in memory")
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

/// Reads to EOF, handing each chunk to `sink`. A read error ends the stream like EOF: what was
/// read is still reported.
pub(crate) async fn drain(reader: &mut (impl AsyncRead + Unpin), mut sink: impl FnMut(&[u8])) {
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) => return,
            Ok(n) => sink(&buf[..n]),
            Err(error) => {
                tracing::debug!(%error, "output pipe read failed; treating as end of stream");
                return;
            }
        }
    }
}

/// Length of `bytes` without a trailing incomplete UTF-8 sequence.
fn complete_utf8_prefix_len(bytes: &[u8]) -> usize {
    let len = bytes.len();
    for back in 1..=len.min(3) {
        let byte = bytes[len - back];
        if is_continuation(byte) {
            continue; // keep looking for the lead byte
        }
        let needed = match byte {
            0xF0.. => 4,
            0xE0.. => 3,
            0xC0.. => 2,
            _ => 1,
        };
        return if needed > back { len - back } else { len };
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_buffer_keeps_the_head_and_counts_everything() {
        let mut buffer = OutputBuffer::keeping_head(4);
        buffer.push(b"abc");
        buffer.push(b"def");
        let captured = buffer.finish();
        assert_eq!(captured, CapturedStream { text: "abcd".into(), total_bytes: 6, truncated: true });
    }

    #[test]
    fn a_character_split_by_the_cap_is_dropped_whole() {
        let mut buffer = OutputBuffer::keeping_head(4);
        buffer.push("ab€".as_bytes()); // € is three bytes: only one fits
        assert_eq!(buffer.finish().text, "ab");
        let mut buffer = OutputBuffer::keeping_head(5);
        buffer.push("ab€x".as_bytes()); // exactly fits
        assert_eq!(buffer.finish().text, "ab€");
    }

    #[test]
    fn invalid_utf8_is_decoded_lossily() {
        let mut buffer = OutputBuffer::keeping_head(16);
        buffer.push(b"\xff\xfeok");
        assert_eq!(buffer.finish().text, "\u{fffd}\u{fffd}ok");
    }

    #[test]
    fn a_tail_buffer_keeps_the_last_bytes_at_its_edge() {
        let mut buffer = OutputBuffer::keeping_tail(4);
        buffer.push(b"abcd");
        let at_limit = buffer.read_from(0, true);
        assert_eq!(at_limit, OutputChunk { text: "abcd".into(), end: 4, discarded: 0, total_bytes: 4 });
        buffer.push(b"e");
        let past_limit = buffer.read_from(0, true);
        assert_eq!(past_limit, OutputChunk { text: "bcde".into(), end: 5, discarded: 1, total_bytes: 5 });
        buffer.push(b"0123456789"); // one push larger than the whole ring
        assert_eq!(buffer.read_from(0, true).text, "6789");
        assert!(buffer.finish().truncated);
    }

    #[test]
    fn incremental_reads_resume_where_the_last_one_ended() {
        let mut buffer = OutputBuffer::keeping_tail(8);
        buffer.push(b"one ");
        let first = buffer.read_from(0, false);
        assert_eq!((first.text.as_str(), first.end), ("one ", 4));
        buffer.push(b"two");
        let second = buffer.read_from(first.end, false);
        assert_eq!((second.text.as_str(), second.end, second.discarded), ("two", 7, 0));
        let nothing_new = buffer.read_from(second.end, false);
        assert_eq!((nothing_new.text.as_str(), nothing_new.end), ("", 7));
        buffer.push(b" three!"); // the ring now holds "o three!": what was read fell out, nothing unread did
        let third = buffer.read_from(nothing_new.end, false);
        assert_eq!((third.text.as_str(), third.end, third.discarded), (" three!", 14, 0));
        buffer.push(b"0123456789");
        let fourth = buffer.read_from(third.end, false);
        assert_eq!((fourth.text.as_str(), fourth.end, fourth.discarded), ("23456789", 24, 2));
    }

    #[test]
    fn a_character_still_being_written_waits_for_the_next_read() {
        let mut buffer = OutputBuffer::keeping_tail(64);
        let euro = "€".as_bytes();
        buffer.push(b"price ");
        buffer.push(&euro[..2]);
        let first = buffer.read_from(0, false);
        assert_eq!((first.text.as_str(), first.end), ("price ", 6));
        buffer.push(&euro[2..]);
        assert_eq!(buffer.read_from(first.end, false).text, "€");
        // Once the stream is closed, an incomplete character is shown as what it is.
        let mut broken = OutputBuffer::keeping_tail(64);
        broken.push(&euro[..2]);
        assert_eq!(broken.read_from(0, true).text, "\u{fffd}");
    }

    #[test]
    fn the_remains_of_a_character_cut_by_the_ring_are_dropped() {
        let mut buffer = OutputBuffer::keeping_tail(4);
        buffer.push("a€bc".as_bytes()); // 6 bytes: the ring keeps the €'s last two bytes, "bc"
        let chunk = buffer.read_from(0, true);
        assert_eq!((chunk.text.as_str(), chunk.discarded, chunk.end), ("bc", 4, 6));
    }
}
