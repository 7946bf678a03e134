//! The v1 wire frames of the file channel (docs/node-http.md §12, "Frames match upstream 82df040c"; the real
//! node host's `node-duplex-framing`): `{v:1,kind:"ready"}` and
//! `{v:1,kind:"data",message,index,last,data}`, each one JSON text of at most
//! [`MAX_WIRE_FRAME_BYTES`] UTF-8 bytes.
//!
//! A logical message (a chunk of a file, an ack, the empty EOF) travels as fragments numbered
//! `index` 0, 1, ... within message number `message` 0, 1, ...; every fragment but the last
//! carries exactly [`FRAGMENT_BYTES`] bytes, the last at most that many (an empty message is one
//! empty last fragment). `data` is canonical padded base64 (what `STANDARD.encode` gives for the
//! bytes it decodes to, nothing else). The parser is strict about all of it: exactly these keys,
//! `v` 1, counters that are non-negative safe integers (JSON numbers up to 2^53 - 1, written as
//! integers), messages and fragments in order with no gap or repeat, and a message of at most
//! [`MAX_MESSAGE_BYTES`] (the file channel's cap; upstream's framing allows 100 MiB, the file
//! commands 1 MiB). Any breach is a [`FrameError`] naming it; the channel then closes the
//! transfer.

use std::sync::Arc;

use base64_simd::STANDARD;
use serde::Deserialize;
use serde_json::{Map, Value};

/// Bytes in every non-final fragment, exactly (docs/node-http.md §12: "8192-byte nonfinal fragments").
pub const FRAGMENT_BYTES: usize = 8192;
/// The most UTF-8 bytes one wire frame's JSON text may have (docs/node-http.md §12: "a 16384-byte UTF-8 wire
/// cap"; also the gateway's `payloadJSON` cap in node-host-commands.md).
pub const MAX_WIRE_FRAME_BYTES: usize = 16384;
/// The most bytes one logical file message may have (docs/node-http.md §12: "File logical messages cap at
/// 1 MiB").
pub const MAX_MESSAGE_BYTES: usize = 1024 * 1024;
/// The largest counter JavaScript holds exactly (`Number.MAX_SAFE_INTEGER`): the spec's "safe
/// integer counters".
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// One parsed frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Ready,
    Data { message: u64, index: u64, last: bool, data: Vec<u8> },
}

/// Why a frame was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("file channel frame refused: {0}")]
pub struct FrameError(pub String);

fn refused(why: impl Into<String>) -> FrameError {
    FrameError(why.into())
}

/// Parses one wire frame (a `payloadJSON` string), checking everything but its place in the
/// sequence (that is [`Reassembler`]'s).
pub fn parse(payload: &str) -> Result<Frame, FrameError> {
    if payload.len() > MAX_WIRE_FRAME_BYTES {
        return Err(refused(format!(
            "the frame is {} bytes, over the {MAX_WIRE_FRAME_BYTES}-byte wire cap",
            payload.len()
        )));
    }
    parse_plain_data(payload).unwrap_or_else(|| parse_careful(payload))
}

/// [`parse`] for any frame, the fault named.
fn parse_careful(payload: &str) -> Result<Frame, FrameError> {
    let value: Value =
        serde_json::from_str(payload).map_err(|error| refused(format!("the frame is not JSON: {error}")))?;
    let Value::Object(object) = value else { return Err(refused("the frame is not a JSON object")) };
    if object.get("v") != Some(&Value::from(1)) {
        return Err(refused("the frame's v must be 1"));
    }
    match object.get("kind").and_then(Value::as_str) {
        Some("ready") => {
            exact_keys(&object, &["v", "kind"])?;
            Ok(Frame::Ready)
        }
        Some("data") => {
            exact_keys(&object, &["v", "kind", "message", "index", "last", "data"])?;
            let message = counter(&object, "message")?;
            let index = counter(&object, "index")?;
            let Some(last) = object.get("last").and_then(Value::as_bool) else {
                return Err(refused("a data frame's last must be true or false"));
            };
            let Some(text) = object.get("data").and_then(Value::as_str) else {
                return Err(refused("a data frame's data must be a base64 string"));
            };
            data_frame(message, index, last, text)
        }
        _ => Err(refused("the frame's kind must be \"ready\" or \"data\"")),
    }
}

/// A data frame as every sender writes one: the six keys once each, no escapes in its strings.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainData<'a> {
    v: u64,
    kind: &'a str,
    message: u64,
    index: u64,
    last: bool,
    data: &'a str,
}

/// The common case in one pass, borrowing the base64 where it lies: a data frame read straight
/// into [`PlainData`] (every byte of a transfer goes through here; a `Value` map cost an
/// allocation per key and a copy of the base64 for every frame). `None` for anything
/// else (a ready frame, a key twice, an escape, an error), which [`parse`] then takes the careful
/// way, accepting or naming the fault: what this accepts, that accepts too, with the same result
/// (`the_fast_path_agrees_with_the_careful_one` checks it on every kind of frame and fault).
fn parse_plain_data(payload: &str) -> Option<Result<Frame, FrameError>> {
    let frame: PlainData<'_> = serde_json::from_str(payload).ok()?;
    if frame.v != 1 || frame.kind != "data" || frame.message > MAX_SAFE_INTEGER || frame.index > MAX_SAFE_INTEGER {
        return None;
    }
    Some(data_frame(frame.message, frame.index, frame.last, frame.data))
}

/// [`parse`] of a frame still in the JSON string literal that carried it (an input's `payloadJSON` as
/// it lies in the request's params, quotes and escapes included): a data frame written as every
/// sender writes one (`{\"v\":1,\"kind\":\"data\",\"message\":..,\"index\":..,\"last\":..,\"data\":\"..\"}`)
/// is read where it lies, its base64 decoded straight from the request; anything else is unescaped
/// and parsed as [`parse`] does. Unescaping every input into a string and reading the frame from
/// that were two more passes over each 11 KB input, a fifth of a creating node's work. Same results
/// as [`parse`] of the unescaped text (`a_literal_is_read_as_its_text_is`).
pub fn parse_literal(literal: &str) -> Result<Frame, FrameError> {
    if let Some(frame) = parse_plain_literal(literal) {
        return Ok(frame);
    }
    let text: String = serde_json::from_str(literal)
        .map_err(|error| refused(format!("payloadJSON must be a JSON string holding one frame: {error}")))?;
    parse(&text)
}

/// The plain data frame of [`parse_literal`], or `None` for anything that is not exactly one that
/// [`parse`] accepts (the careful path then gives the verdict, so a fault is named the same way
/// whichever path saw it). Its counters are decimal with no leading zero, as JSON writes them.
fn parse_plain_literal(literal: &str) -> Option<Frame> {
    // The unescaped frame is shorter than its literal, so a literal under the cap is a frame under it.
    if literal.len() > MAX_WIRE_FRAME_BYTES {
        return None;
    }
    let rest = literal.strip_prefix(r#""{\"v\":1,\"kind\":\"data\",\"message\":"#)?;
    let (message, rest) = leading_counter(rest)?;
    let rest = rest.strip_prefix(r#",\"index\":"#)?;
    let (index, rest) = leading_counter(rest)?;
    let rest = rest.strip_prefix(r#",\"last\":"#)?;
    let (last, rest) = match rest.strip_prefix("true") {
        Some(rest) => (true, rest),
        None => (false, rest.strip_prefix("false")?),
    };
    let base64 = rest.strip_prefix(r#",\"data\":\""#)?.strip_suffix(r#"\"}""#)?;
    // An escape in it (`\/`) is not base64, so the decoder refuses it and the careful path,
    // which unescapes first, reads it.
    data_frame(message, index, last, base64).ok()
}

/// A safe-integer counter at the start of `text` written as JSON writes it (`0`, or digits with no
/// leading zero), and what follows it.
fn leading_counter(text: &str) -> Option<(u64, &str)> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (number, rest) = text.split_at(digits);
    if digits == 0 || digits > 16 || (digits > 1 && number.starts_with('0')) {
        return None;
    }
    let value: u64 = number.parse().ok()?;
    (value <= MAX_SAFE_INTEGER).then_some((value, rest))
}

/// A data frame's fields checked: canonical base64 and the fragment size rules.
fn data_frame(message: u64, index: u64, last: bool, text: &str) -> Result<Frame, FrameError> {
    let data = decode_canonical(text)?;
    if !last && data.len() != FRAGMENT_BYTES {
        return Err(refused(format!(
            "a non-final fragment must carry exactly {FRAGMENT_BYTES} bytes, this one has {}",
            data.len()
        )));
    }
    if data.len() > FRAGMENT_BYTES {
        return Err(refused(format!("a fragment carries at most {FRAGMENT_BYTES} bytes, this one has {}", data.len())));
    }
    Ok(Frame::Data { message, index, last, data })
}

fn exact_keys(object: &Map<String, Value>, keys: &[&str]) -> Result<(), FrameError> {
    if let Some(extra) = object.keys().find(|key| !keys.contains(&key.as_str())) {
        return Err(refused(format!("unexpected key {extra:?} (a frame has exactly {})", keys.join(", "))));
    }
    if let Some(missing) = keys.iter().find(|key| !object.contains_key(**key)) {
        return Err(refused(format!("missing key {missing:?}")));
    }
    Ok(())
}

fn counter(object: &Map<String, Value>, key: &str) -> Result<u64, FrameError> {
    match object.get(key).and_then(Value::as_u64) {
        Some(number) if number <= MAX_SAFE_INTEGER => Ok(number),
        _ => Err(refused(format!("{key} must be an integer from 0 to {MAX_SAFE_INTEGER}"))),
    }
}

/// `text` decoded, refused unless it is exactly the padded base64 of what it decodes to (no
/// missing padding, no non-zero trailing bits, no whitespace). base64-simd's `STANDARD` decoder
/// is that strict (canonical padding required, trailing bits refused, only the alphabet), so no
/// re-encoding is needed to compare. `decoding_is_exactly_canonical` checks the equivalence
/// exhaustively on short inputs, against the `base64` crate's encoder as the oracle.
fn decode_canonical(text: &str) -> Result<Vec<u8>, FrameError> {
    STANDARD.decode_to_vec(text).map_err(|_| refused("data is not canonical padded base64"))
}

/// The ready frame.
pub fn ready() -> String {
    r#"{"v":1,"kind":"ready"}"#.to_owned()
}

/// One data frame.
pub fn data(message: u64, index: u64, last: bool, bytes: &[u8]) -> String {
    let mut text = String::with_capacity(data_capacity(bytes.len()));
    write_data(&mut text, "\"", message, index, last, |out| STANDARD.encode_append(bytes, out));
    text
}

/// Appends one data frame as a JSON string literal (the frame's text, quoted, its quotes escaped)
/// to `out`: written that way at once, where escaping the text after was a scan and a copy of 11 KB
/// per frame (a creating client sends one per 8 KiB).
pub fn push_data_literal(out: &mut String, message: u64, index: u64, last: bool, bytes: &[u8]) {
    push_literal_with(out, message, index, last, |out| STANDARD.encode_append(bytes, out));
}

/// [`push_data_literal`] with the base64 written by `data`.
fn push_literal_with(out: &mut String, message: u64, index: u64, last: bool, data: impl FnOnce(&mut String)) {
    out.push('"');
    write_data(out, "\\\"", message, index, last, data);
    out.push('"');
}

/// Room for a data frame of `bytes` bytes, as text or as a literal (keys, counters up to 2^53,
/// escapes).
fn data_capacity(bytes: usize) -> usize {
    STANDARD.encoded_length(bytes) + 128
}

/// Appends a data frame whose base64 `data` writes, with `quote` for each of its quotes (`"` for
/// the frame's text, `\"` for its literal: keys, `kind`, counters and base64 have nothing else a
/// JSON string must escape).
fn write_data(out: &mut String, quote: &str, message: u64, index: u64, last: bool, data: impl FnOnce(&mut String)) {
    use std::fmt::Write as _;
    let q = quote;
    // Writing to a String cannot fail.
    let _ = write!(
        out,
        "{{{q}v{q}:1,{q}kind{q}:{q}data{q},{q}message{q}:{message},{q}index{q}:{index},{q}last{q}:{last},{q}data{q}:{q}"
    );
    data(out);
    out.push_str(q);
    out.push('}');
}

/// A frame made for the output queue: its JSON text (a gateway progress chunk carries it) and
/// the same text as a JSON string literal (what a poll's answer carries in `payloadJSON`), made
/// together, so no poll escapes the frame again: that was over a quarter of a fetching node's
/// work, on the path between a poll and its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    pub text: Arc<str>,
    pub literal: Arc<str>,
}

/// A frame this module made as a JSON string literal: its only characters that a JSON string must
/// escape are its quotes (keys, `kind`, base64 and numbers need none), so escaping them is the
/// whole literal.
fn literal(text: &str) -> String {
    let literal = format!("\"{}\"", text.replace('"', "\\\""));
    debug_assert_eq!(serde_json::to_string(text).ok().as_deref(), Some(literal.as_str()));
    literal
}

impl Outgoing {
    pub fn ready() -> Self {
        let text = ready();
        let literal = literal(&text);
        Outgoing { text: text.into(), literal: literal.into() }
    }

    /// A data frame: its literal copies the text's base64 (the text ends with it and `"}`) rather
    /// than scanning the text for quotes.
    fn data(message: u64, index: u64, last: bool, bytes: &[u8]) -> Self {
        let text = data(message, index, last, bytes);
        let base64 = &text[text.len() - 2 - STANDARD.encoded_length(bytes.len())..text.len() - 2];
        let mut literal = String::with_capacity(data_capacity(bytes.len()) + 16);
        push_literal_with(&mut literal, message, index, last, |out| out.push_str(base64));
        Outgoing { text: text.into(), literal: literal.into() }
    }
}

/// The frames of logical message number `message`: full [`FRAGMENT_BYTES`] fragments, the last
/// carrying the remainder (a message of exactly n full fragments ends on a full last one; an
/// empty message is one empty last fragment).
pub fn fragments(message: u64, bytes: &[u8]) -> Vec<String> {
    encode_fragments(message, bytes).collect()
}

/// [`encode_fragments`] made for the output queue.
pub fn outgoing_fragments(message: u64, bytes: &[u8]) -> impl Iterator<Item = Outgoing> + '_ {
    fragment_chunks(bytes).map(move |(index, last, chunk)| Outgoing::data(message, index, last, chunk))
}

/// [`fragments`], each encoded only when it is taken: a sender queues the first frames while the
/// rest are still bytes.
pub fn encode_fragments(message: u64, bytes: &[u8]) -> impl Iterator<Item = String> + '_ {
    fragment_chunks(bytes).map(move |(index, last, chunk)| data(message, index, last, chunk))
}

/// How a logical message of `bytes` is cut into fragments: `(index, last, bytes)` of each.
pub fn fragment_chunks(bytes: &[u8]) -> impl Iterator<Item = (u64, bool, &[u8])> + '_ {
    let count = bytes.len().div_ceil(FRAGMENT_BYTES).max(1);
    // An empty message is one empty last fragment (`chunks` of nothing yields nothing).
    let empty: &[u8] = &[];
    let chunks = bytes.chunks(FRAGMENT_BYTES).chain(bytes.is_empty().then_some(empty));
    chunks.enumerate().map(move |(index, chunk)| (index as u64, index + 1 == count, chunk))
}

/// Puts logical messages back together from frames in strict order, holding at most one
/// unfinished message.
#[derive(Debug, Default)]
pub struct Reassembler {
    /// The message number expected next.
    message: u64,
    /// The fragment index expected next within it.
    index: u64,
    /// What the unfinished message holds so far.
    partial: Vec<u8>,
    /// Whether a ready frame may still come (only before any data).
    seen_data: bool,
}

impl Reassembler {
    /// Takes one parsed frame; `Some(message)` when it completed one.
    pub fn push(&mut self, frame: Frame) -> Result<Option<Vec<u8>>, FrameError> {
        let (message, index, last, data) = match frame {
            // The client need not send readiness (docs/node-http.md §12); one before any data is accepted
            // and means nothing.
            Frame::Ready if !self.seen_data => return Ok(None),
            Frame::Ready => return Err(refused("a ready frame after data")),
            Frame::Data { message, index, last, data } => (message, index, last, data),
        };
        if message != self.message || index != self.index {
            return Err(refused(format!(
                "out of order: expected message {} fragment {}, got message {message} fragment {index}",
                self.message, self.index
            )));
        }
        if self.partial.len() + data.len() > MAX_MESSAGE_BYTES {
            return Err(refused(format!("a logical message may have at most {MAX_MESSAGE_BYTES} bytes")));
        }
        self.seen_data = true;
        if index == 0 && !last {
            // A message of several fragments: room for the most it may hold, at once, rather than
            // doubling eight times (a copy and fresh pages each) on the way to a 1 MiB chunk.
            self.partial.reserve_exact(MAX_MESSAGE_BYTES);
        }
        self.partial.extend_from_slice(&data);
        if !last {
            self.index += 1;
            return Ok(None);
        }
        if self.message == MAX_SAFE_INTEGER {
            return Err(refused("the message counter is exhausted"));
        }
        self.message += 1;
        self.index = 0;
        Ok(Some(std::mem::take(&mut self.partial)))
    }

    /// Bytes of the unfinished message, for the buffering caps.
    pub fn partial_bytes(&self) -> usize {
        self.partial.len()
    }

    /// Whether a message is under way.
    pub fn in_progress(&self) -> bool {
        self.index > 0
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD as ORACLE;

    use super::*;

    fn reassemble(frames: &[String]) -> Result<Vec<Vec<u8>>, FrameError> {
        let mut reassembler = Reassembler::default();
        let mut messages = Vec::new();
        for frame in frames {
            if let Some(message) = reassembler.push(parse(frame)?)? {
                messages.push(message);
            }
        }
        Ok(messages)
    }

    fn bytes(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 31 % 251) as u8).collect()
    }

    #[test]
    fn ready_and_data_frames_round_trip_exactly() {
        assert_eq!(parse(&ready()), Ok(Frame::Ready));
        assert_eq!(ready(), r#"{"v":1,"kind":"ready"}"#);
        assert_eq!(data(3, 0, true, b"hi"), r#"{"v":1,"kind":"data","message":3,"index":0,"last":true,"data":"aGk="}"#);
        assert_eq!(
            parse(&data(3, 0, true, b"hi")),
            Ok(Frame::Data { message: 3, index: 0, last: true, data: b"hi".to_vec() })
        );
    }

    #[test]
    fn an_outgoing_frames_literal_is_its_text_as_a_json_string() {
        let mut frames = vec![Outgoing::ready()];
        for size in [0, 1, 2, 3, 8191, 8192, 3 * 8192 + 7] {
            frames.extend(outgoing_fragments(u64::from(size as u32 % 5), &bytes(size)));
        }
        frames.extend(outgoing_fragments(MAX_SAFE_INTEGER, &[0xff; 300]));
        for frame in frames {
            assert_eq!(&*frame.literal, serde_json::to_string(&*frame.text).unwrap(), "{}", frame.text);
            assert_eq!(serde_json::from_str::<String>(&frame.literal).unwrap(), &*frame.text);
        }
        // The literal a creating client writes straight into its params is the same string.
        for (message, index, last, size) in
            [(0, 0, true, 0), (1, 5, false, 8192), (MAX_SAFE_INTEGER, MAX_SAFE_INTEGER, true, 7)]
        {
            let mut literal = String::from("prefix:");
            push_data_literal(&mut literal, message, index, last, &bytes(size));
            let text = data(message, index, last, &bytes(size));
            assert_eq!(literal, format!("prefix:{}", serde_json::to_string(&text).unwrap()));
        }
    }

    #[test]
    fn fragments_are_8192_bytes_and_the_last_carries_the_rest() {
        for size in [0, 1, 8191, 8192, 8193, 3 * 8192, MAX_MESSAGE_BYTES] {
            let payload = bytes(size);
            let frames = fragments(0, &payload);
            assert_eq!(frames.len(), size.div_ceil(FRAGMENT_BYTES).max(1), "size {size}");
            assert!(frames.iter().all(|frame| frame.len() <= MAX_WIRE_FRAME_BYTES));
            assert_eq!(reassemble(&frames).unwrap(), vec![payload], "size {size}");
        }
    }

    #[test]
    fn a_non_final_fragment_must_be_exactly_8192_bytes() {
        assert!(parse(&data(0, 0, false, &bytes(8192))).is_ok());
        let short = parse(&data(0, 0, false, &bytes(8191))).unwrap_err();
        assert!(short.0.contains("exactly 8192"), "{short}");
        // A final fragment holds at most 8192: 8193 is refused even as the last.
        let long = parse(&data(0, 0, true, &bytes(8193))).unwrap_err();
        assert!(long.0.contains("at most 8192"), "{long}");
        assert!(parse(&data(0, 0, true, &bytes(8192))).is_ok());
    }

    #[test]
    fn the_wire_cap_is_16384_utf8_bytes() {
        // A frame padded with JSON whitespace to exactly the cap parses; one byte more does not.
        let frame = data(0, 0, true, b"x");
        let at_cap = format!("{frame}{}", " ".repeat(MAX_WIRE_FRAME_BYTES - frame.len()));
        assert_eq!(at_cap.len(), 16384);
        assert!(parse(&at_cap).is_ok());
        let over = format!("{at_cap} ");
        assert!(parse(&over).unwrap_err().0.contains("16384-byte wire cap"));
        // Counted in UTF-8 bytes, not characters: 16383 characters of which one is 'é' (two
        // bytes) are 16384 bytes, one more character is over.
        let wide = format!("{frame}{}\u{e9}", " ".repeat(MAX_WIRE_FRAME_BYTES - frame.len() - 2));
        assert_eq!((wide.chars().count(), wide.len()), (16383, 16384));
        assert!(!parse(&wide).unwrap_err().0.contains("wire cap"), "at the cap: refused for the stray character only");
        let wider = format!("{wide} ");
        assert!(parse(&wider).unwrap_err().0.contains("16384-byte wire cap"));
    }

    #[test]
    fn a_message_may_hold_1_mib_and_not_one_byte_more() {
        let mut frames = fragments(0, &bytes(MAX_MESSAGE_BYTES));
        assert_eq!(reassemble(&frames).unwrap()[0].len(), MAX_MESSAGE_BYTES);
        // 1 MiB + 1: the 129th fragment (full so far) must be non-final, then one more byte.
        let last = frames.len() - 1;
        frames[last] = data(0, last as u64, false, &bytes(FRAGMENT_BYTES));
        frames.push(data(0, frames.len() as u64, true, b"!"));
        let error = reassemble(&frames).unwrap_err();
        assert!(error.0.contains("at most 1048576 bytes"), "{error}");
    }

    #[test]
    fn decoding_is_exactly_canonical() {
        // Every string of up to 4 characters over an alphabet with padding, a space, characters
        // of every trailing-bit pattern and both special characters, alone and after a valid
        // quantum: accepted exactly when it is the encoding of what it decodes to.
        let alphabet = ['A', 'B', 'Q', 'g', 'w', '+', '/', '=', ' '];
        let mut checked = 0;
        for prefix in ["", "QUJD"] {
            for len in 0..=4u32 {
                for mut code in 0..alphabet.len().pow(len) {
                    let mut text = prefix.to_owned();
                    for _ in 0..len {
                        text.push(alphabet[code % alphabet.len()]);
                        code /= alphabet.len();
                    }
                    let canonical = ORACLE.decode(&text).is_ok_and(|bytes| ORACLE.encode(bytes) == text);
                    assert_eq!(decode_canonical(&text).is_ok(), canonical, "{text:?}");
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 2 * (1 + 9 + 81 + 729 + 6561));
    }

    #[test]
    fn keys_version_kind_and_counters_are_exact() {
        let cases = [
            (r#"{"v":1,"kind":"ready","x":1}"#, "unexpected key"),
            (r#"{"v":2,"kind":"ready"}"#, "v must be 1"),
            (r#"{"v":1,"kind":"other"}"#, "kind must be"),
            (r#"{"v":1,"kind":"data","message":0,"index":0,"last":true}"#, "missing key \"data\""),
            (r#"{"v":1,"kind":"data","message":-1,"index":0,"last":true,"data":""}"#, "message must be"),
            (r#"{"v":1,"kind":"data","message":1.5,"index":0,"last":true,"data":""}"#, "message must be"),
            (r#"{"v":1,"kind":"data","message":9007199254740992,"index":0,"last":true,"data":""}"#, "message must be"),
            (r#"{"v":1,"kind":"data","message":0,"index":"0","last":true,"data":""}"#, "index must be"),
            (r#"{"v":1,"kind":"data","message":0,"index":0,"last":1,"data":""}"#, "last must be"),
            (r#"{"v":1,"kind":"data","message":0,"index":0,"last":true,"data":"aGk"}"#, "canonical padded base64"),
            (r#"{"v":1,"kind":"data","message":0,"index":0,"last":true,"data":"aGl="}"#, "canonical padded base64"),
            (r#"{"v":1,"kind":"data","message":0,"index":0,"last":true,"data":"aG k="}"#, "canonical padded base64"),
            ("[1]", "not a JSON object"),
            ("{", "not JSON"),
        ];
        for (frame, expected) in cases {
            let error = parse(frame).expect_err(frame);
            assert!(error.0.contains(expected), "{frame}: {error}");
        }
        let max = format!(r#"{{"v":1,"kind":"data","message":{MAX_SAFE_INTEGER},"index":0,"last":true,"data":""}}"#);
        assert!(parse(&max).is_ok());
    }

    /// Plain data frames (the fast paths take them) and frames of every other kind and fault.
    fn frames_of_every_kind() -> (Vec<String>, Vec<String>) {
        let frame = |fields: &str| format!(r#"{{"v":1,"kind":"data",{fields}}}"#);
        let full = STANDARD.encode_to_string(bytes(FRAGMENT_BYTES));
        let plain = [
            data(0, 0, true, b""),
            data(5, 9, true, b"hi"),
            data(MAX_SAFE_INTEGER, MAX_SAFE_INTEGER, false, &bytes(FRAGMENT_BYTES)),
            frame(r#""data":"aGk=","last":true,"index":0,"message":0"#),
            format!(" {}\n", data(0, 1, true, b"x")),
        ];
        let others = [
            ready(),
            r#"{"v":1,"v":1,"kind":"ready"}"#.to_owned(),
            frame(r#""message":0,"message":0,"index":0,"last":true,"data":"aGk=""#),
            frame(r#""message":0,"index":0,"last":true,"data":"aGk\u003d""#),
            r#"{"v":1,"kind":"d\u0061ta","message":0,"index":0,"last":true,"data":"aGk="}"#.to_owned(),
            r#"{"v":1.0,"kind":"data","message":0,"index":0,"last":true,"data":"aGk="}"#.to_owned(),
            r#"{"v":2,"kind":"data","message":0,"index":0,"last":true,"data":"aGk="}"#.to_owned(),
            r#"{"v":1,"kind":"ready","message":0,"index":0,"last":true,"data":"aGk="}"#.to_owned(),
            frame(r#""message":null,"index":0,"last":true,"data":"aGk=""#),
            frame(r#""message":0,"index":0,"last":null,"data":"aGk=""#),
            frame(r#""message":0,"index":0,"last":true,"data":null"#),
            frame(r#""message":0,"index":0,"last":true"#),
            frame(r#""message":0,"index":0,"last":true,"data":"aGk=","extra":1"#),
            frame(r#""message":9007199254740992,"index":0,"last":true,"data":"""#),
            frame(r#""message":0,"index":9007199254740992,"last":true,"data":"""#),
            frame(r#""message":-1,"index":0,"last":true,"data":"""#),
            frame(r#""message":0,"index":0,"last":true,"data":"aGl=""#),
            frame(r#""message":0,"index":0,"last":false,"data":"aGk=""#),
            frame(&format!(r#""message":0,"index":0,"last":true,"data":"{full}QQ==""#)),
            "[1]".to_owned(),
            "{".to_owned(),
        ];
        (plain.to_vec(), others.to_vec())
    }

    #[test]
    fn the_fast_path_agrees_with_the_careful_one() {
        let (plain, others) = frames_of_every_kind();
        for payload in plain.iter().chain(&others) {
            let careful = parse_careful(payload);
            match parse_plain_data(payload) {
                Some(fast) => assert_eq!(fast, careful, "{payload}"),
                None => assert!(!plain.contains(payload), "a plain data frame takes the fast path: {payload}"),
            }
            assert_eq!(parse(payload), careful, "{payload}");
        }
        assert!(plain.iter().all(|payload| parse(payload).is_ok()));
    }

    #[test]
    fn a_literal_is_read_as_its_text_is() {
        let (plain, others) = frames_of_every_kind();
        for payload in plain.iter().chain(&others) {
            let literal = serde_json::to_string(payload).unwrap();
            assert_eq!(parse_literal(&literal), parse(payload), "{literal}");
        }
        // What senders write (this module's writer, as the client sends it) is read where it lies.
        let sent =
            [(0, 0, true, bytes(0)), (7, 3, false, bytes(FRAGMENT_BYTES)), (MAX_SAFE_INTEGER, 1, true, bytes(5))];
        for (message, index, last, data) in sent {
            let mut literal = String::new();
            push_data_literal(&mut literal, message, index, last, &data);
            let expected = Frame::Data { message, index, last, data };
            assert_eq!(parse_plain_literal(&literal), Some(expected.clone()), "{literal}");
            assert_eq!(parse_literal(&literal), Ok(expected));
        }
        // Spellings only the careful path reads, and literals that hold no frame.
        let escaped_slash =
            r#""{\"v\":1,\"kind\":\"data\",\"message\":0,\"index\":0,\"last\":true,\"data\":\"\/w==\"}""#;
        assert_eq!(parse_plain_literal(escaped_slash), None);
        assert_eq!(
            parse_literal(escaped_slash),
            Ok(Frame::Data { message: 0, index: 0, last: true, data: vec![0xff] })
        );
        let leading_zero = r#""{\"v\":1,\"kind\":\"data\",\"message\":01,\"index\":0,\"last\":true,\"data\":\"\"}""#;
        assert_eq!(parse_plain_literal(leading_zero), None);
        assert!(parse_literal(leading_zero).unwrap_err().0.contains("not JSON"));
        for not_a_string in ["5", "null", "{}", "\"unterminated"] {
            let error = parse_literal(not_a_string).unwrap_err();
            assert!(error.0.contains("payloadJSON must be a JSON string"), "{not_a_string}: {error}");
        }
        // The wire cap is the unescaped frame's: a literal over it whose text is at the cap passes.
        let padded =
            format!("{}{}", " ".repeat(MAX_WIRE_FRAME_BYTES - data(0, 0, true, b"a").len()), data(0, 0, true, b"a"));
        let literal = serde_json::to_string(&padded).unwrap();
        assert!(literal.len() > MAX_WIRE_FRAME_BYTES);
        assert_eq!(parse_literal(&literal), parse(&padded));
        assert!(parse_literal(&literal).is_ok());
        let over = serde_json::to_string(&format!(" {padded}")).unwrap();
        assert!(parse_literal(&over).unwrap_err().0.contains("wire cap"));
    }

    #[test]
    fn order_is_strict_within_and_across_messages() {
        let gap = [data(0, 0, true, b"a"), data(2, 0, true, b"b")];
        assert!(reassemble(&gap).unwrap_err().0.contains("expected message 1 fragment 0"));
        let repeat = [data(0, 0, true, b"a"), data(0, 0, true, b"a")];
        assert!(reassemble(&repeat).is_err());
        let skipped = [data(0, 0, false, &bytes(8192)), data(0, 2, true, b"b")];
        assert!(reassemble(&skipped).unwrap_err().0.contains("expected message 0 fragment 1"));
        let late_ready = [data(0, 0, true, b"a"), ready()];
        assert!(reassemble(&late_ready).unwrap_err().0.contains("ready frame after data"));
        let early_ready = [ready(), data(0, 0, true, b"a"), data(1, 0, true, b"")];
        assert_eq!(reassemble(&early_ready).unwrap(), vec![b"a".to_vec(), vec![]]);
    }
}
