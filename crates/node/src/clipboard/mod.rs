//! `clipboard.read` and `clipboard.write`: this machine's clipboard (the X11 CLIPBOARD
//! selection, what Ctrl+C / Ctrl+V use), text and PNG images (category `clipboard`).
//!
//! | file | what it does |
//! | --- | --- |
//! | [`x11`] | the selection protocol: a bounded read from whichever program owns it, and the node's long-lived owner |
//! | this file | arguments, bounds, the answers |
//!
//! No upstream node has a clipboard, so the shapes are clawmcp's own:
//! - `clipboard.read {format: text|image|auto, maxWidth?}`: text comes back in the JSON
//!   (`{empty:false, format:"text", text, bytes, truncated, offered}`), cut to
//!   [`MAX_TEXT_WIRE_BYTES`] once JSON-encoded (`truncated:true` and the full size then); an
//!   image as an MCP image block (PNG, kept under the same ~1.15 MP as `screen.snapshot` unless
//!   `maxWidth` says otherwise) plus `{format:"image", mimeType, width, height, ...}`. An empty
//!   clipboard is an answer (`{empty:true}`), and so is one that holds nothing of the kind asked
//!   (the message says what it offers). `auto` takes an image when one is offered, else text.
//!   Behind the owner's switch `NodeClipboardReadEnabled` (off by default: a clipboard holds
//!   passwords).
//! - `clipboard.write {text}` or `{image: {data: base64 PNG, mimeType: "image/png"}}`: no switch
//!   (writing discloses nothing). X selections live in their owner, so the node keeps serving
//!   what it wrote after the call returns, until another program copies or the node stops.
//!
//! Every X wait is bounded ([`DEFAULT_TIMEOUT`]): a clipboard owner that never answers fails the
//! call with a message naming it. Wayland without Xwayland (`wl-copy`/`wl-paste`) is not served
//! yet: the commands are then unlisted and say so.

mod x11;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use clawmcp_mcp::tool::codes::{INVALID_REQUEST, UNAVAILABLE};
use clawmcp_mcp::wire_size::{self, Nesting};
use clawmcp_mcp::{Content, ToolAnnotations, ToolFailure, ToolOutcome, ToolOutput};
use serde_json::{Map, Value, json};

use crate::availability::{Gate, MissingBackend, Switch};
use crate::capability::{Capability, Command, CommandSpec};
use crate::imaging::{self, MAX_WIDTH, MIN_WIDTH};
use crate::settings::LiveSettings;

/// Text a read returns at most, measured as it travels (a string inside a JSON text block):
/// plain text up to 1 MiB, less when it holds characters JSON escapes.
pub const MAX_TEXT_WIRE_BYTES: usize = 1024 * 1024;
/// Text a write takes at most, in UTF-8 bytes.
pub const MAX_WRITE_TEXT_BYTES: usize = 1024 * 1024;
/// A PNG a write takes at most (decoded from base64): its base64 then fits the HTTP
/// transport's 4 MiB body with room to spare.
pub const MAX_WRITE_PNG_BYTES: usize = 2 * 1024 * 1024;
/// A PNG a read takes from the clipboard at most (a 4K screenshot is a few MiB).
pub const MAX_READ_PNG_BYTES: usize = 32 * 1024 * 1024;
/// Pixels decoded at most, either way (8K; 133 MB as RGBA).
pub const MAX_DECODED_PIXELS: u64 = 7680 * 4320;
/// How long the clipboard's owner (another program, or the node's own owner thread) has to
/// answer a call.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// The `clipboard` capability.
pub struct ClipboardCapability {
    commands: Vec<Command>,
    #[cfg(test)]
    owner: Arc<x11::Owner>,
}

impl ClipboardCapability {
    /// The clipboard of the display `DISPLAY` names.
    pub fn new(settings: Arc<LiveSettings>) -> Self {
        ClipboardCapability::for_display(settings, None, DEFAULT_TIMEOUT)
    }

    /// The clipboard of `display` (`:99`), or the one `DISPLAY` names when `None`, with
    /// `timeout` for every call.
    pub fn for_display(settings: Arc<LiveSettings>, display: Option<String>, timeout: Duration) -> Self {
        let backend = {
            let display = display.clone();
            move || MissingBackend::x11_display(display.as_deref(), "wl-clipboard is not supported yet")
        };
        let read_gate = Gate::new(settings.clone(), Some(&Switch::CLIPBOARD_READ), backend.clone());
        let write_gate = Gate::new(settings, None, backend);
        let owner = Arc::new(x11::Owner::new(display.clone()));
        let read = read_spec().with_output_handler({
            let gate = read_gate.clone();
            move |request, ctx| {
                let (gate, display) = (gate.clone(), display.clone());
                async move {
                    gate.admit("clipboard.read")?;
                    let args = ReadArgs::parse(&request.args)?;
                    let work = tokio::task::spawn_blocking(move || read(display.as_deref(), &args, timeout));
                    finish(work, &ctx.cancel, timeout).await
                }
            }
        });
        let write = write_spec().with_output_handler({
            let (gate, owner) = (write_gate.clone(), owner.clone());
            move |request, ctx| {
                let (gate, owner) = (gate.clone(), owner.clone());
                async move {
                    gate.admit("clipboard.write")?;
                    let work = tokio::task::spawn_blocking(move || write(&owner, &request.args, timeout));
                    finish(work, &ctx.cancel, timeout).await
                }
            }
        });
        ClipboardCapability {
            commands: vec![read_gate.apply(read), write_gate.apply(write)],
            #[cfg(test)]
            owner,
        }
    }
}

impl Capability for ClipboardCapability {
    fn commands(&self) -> Vec<Command> {
        self.commands.clone()
    }
}

/// A blocking clipboard job's answer: cancelled callers stop waiting, and even an X server
/// that stopped answering (which the job's own deadline cannot cover) fails the call soon
/// after `timeout`.
async fn finish(
    work: tokio::task::JoinHandle<ToolOutcome>,
    cancel: &tokio_util::sync::CancellationToken,
    timeout: Duration,
) -> ToolOutcome {
    tokio::select! {
        () = cancel.cancelled() => Err(clawmcp_mcp::CANCELLED.into()),
        done = tokio::time::timeout(timeout + Duration::from_secs(1), work) => match done {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(error)) => Err(ToolFailure::new(format!("Clipboard failed: {error}"))),
            Err(_) => Err(ToolFailure::new(format!(
                "Clipboard failed: the X server did not answer within {} s",
                timeout.as_secs_f32()
            ))
            .with_code(UNAVAILABLE)),
        },
    }
}

fn read_spec() -> CommandSpec {
    CommandSpec {
        name: "clipboard.read",
        title: Some("Read the clipboard"),
        description: Some(
            "Read this machine's clipboard (what Ctrl+V would paste; X11). format text (default), image, or auto \
             (an image when the clipboard holds one, else text). Text: {empty:false, format:\"text\", text, bytes, \
             truncated, offered}; text longer than 1 MiB is cut (truncated:true, bytes = the full size). Image: a \
             PNG image block plus {format:\"image\", mimeType, width, height, sourceWidth, sourceHeight, scale}, \
             kept under about 1.15 megapixels unless maxWidth (16..7680) says otherwise. An empty clipboard answers \
             {empty:true}; one holding nothing of the kind asked says what it offers.",
        ),
        input_schema: Some(
            json!({
                "type": "object",
                "properties": {
                    "format": {"type": "string", "enum": ["text", "image", "auto"], "default": "text"},
                    "maxWidth": {"type": "integer", "minimum": MIN_WIDTH, "maximum": MAX_WIDTH,
                                 "description": "Scale an image down to this width."}
                },
                "additionalProperties": false
            })
            .into(),
        ),
        output_schema: None,
        annotations: ToolAnnotations::READ_ONLY,
    }
}

fn write_spec() -> CommandSpec {
    CommandSpec {
        name: "clipboard.write",
        title: Some("Write the clipboard"),
        description: Some(
            "Put text or a PNG image on this machine's clipboard (X11), replacing what was copied before; other \
             programs paste it while the node runs, until something else is copied. Give text (a string, at most \
             1 MiB) or image {data: base64 PNG (at most 2 MiB), mimeType: \"image/png\"}. Returns {written, bytes} \
             (and width, height for an image).",
        ),
        input_schema: Some(
            json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string", "maxLength": MAX_WRITE_TEXT_BYTES},
                    "image": {
                        "type": "object",
                        "properties": {
                            "data": {"type": "string", "description": "The PNG file, base64 (a data: URL is accepted)."},
                            "mimeType": {"type": "string", "enum": ["image/png"], "default": "image/png"}
                        },
                        "required": ["data"],
                        "additionalProperties": false
                    }
                },
                "additionalProperties": false
            })
            .into(),
        ),
        output_schema: None,
        // Replaces what the user had copied (that is gone); writing the same again changes nothing.
        annotations: ToolAnnotations {
            read_only_hint: false,
            destructive_hint: true,
            idempotent_hint: true,
            open_world_hint: false,
        },
    }
}

fn invalid(message: impl Into<String>) -> ToolFailure {
    ToolFailure::new(message).with_code(INVALID_REQUEST)
}

/// `clipboard.read`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ReadArgs {
    want: x11::Want,
    max_width: Option<u32>,
}

impl ReadArgs {
    fn parse(args: &Map<String, Value>) -> Result<ReadArgs, ToolFailure> {
        let want = match args.get("format") {
            None | Some(Value::Null) => x11::Want::Text,
            Some(Value::String(text)) => match text.trim().to_ascii_lowercase().as_str() {
                "" | "text" => x11::Want::Text,
                "image" | "png" => x11::Want::Image,
                "auto" => x11::Want::Auto,
                _ => {
                    return Err(invalid(format!(
                        "Unsupported clipboard format `{text}`. Supported: text, image, auto."
                    )));
                }
            },
            Some(_) => return Err(invalid("format must be a string: text, image or auto")),
        };
        let max_width = match args.get("maxWidth") {
            None | Some(Value::Null) => None,
            Some(value) => Some(
                value
                    .as_i64()
                    .or_else(|| value.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
                    .ok_or_else(|| invalid("maxWidth must be a whole number"))?
                    .clamp(i64::from(MIN_WIDTH), i64::from(MAX_WIDTH)) as u32,
            ),
        };
        Ok(ReadArgs { want, max_width })
    }
}

fn read(display: Option<&str>, args: &ReadArgs, timeout: Duration) -> ToolOutcome {
    // A few bytes past the budget: enough to finish a cut UTF-8 character and to know there is more.
    let limits = x11::ReadLimits { text_bytes: MAX_TEXT_WIRE_BYTES + 4, image_bytes: MAX_READ_PNG_BYTES, timeout };
    let reading = x11::read(display, args.want, limits)
        .map_err(|error| ToolFailure::new(format!("Clipboard read failed: {error}")).with_code(UNAVAILABLE))?;
    let offered = reading.offered.unwrap_or_default();
    match reading.found {
        x11::Found::Empty => {
            Ok(json!({"empty": true, "message": "The clipboard is empty: no program holds anything to paste."}).into())
        }
        x11::Found::Nothing => {
            let kind = match args.want {
                x11::Want::Text => "no text",
                x11::Want::Image => "no PNG image",
                x11::Want::Auto => "neither text nor a PNG image",
            };
            let hint = match (args.want, offered.iter().any(|target| target == "image/png")) {
                (x11::Want::Text, true) => " Read it with format image (or auto).",
                _ => "",
            };
            let offers = match offered.is_empty() {
                true => "nothing it names".to_owned(),
                false => offered.join(", "),
            };
            Ok(json!({
                "empty": false,
                "offered": offered,
                "message": format!("The clipboard holds {kind}; it offers {offers}.{hint}"),
            })
            .into())
        }
        x11::Found::Text(transfer) => Ok(text_answer(transfer, offered).into()),
        x11::Found::Png(transfer) => image_answer(transfer, offered, args.max_width),
    }
}

fn text_answer(transfer: x11::Transfer, offered: Vec<String>) -> Value {
    let cut_at_read = transfer.total > transfer.bytes.len() as u64;
    let text = match transfer.latin1 {
        true => transfer.bytes.iter().map(|&byte| char::from(byte)).collect::<String>(),
        false => {
            let mut bytes = transfer.bytes;
            if cut_at_read {
                // Drop a character the cap cut in two rather than show a replacement for it.
                if let Err(error) = std::str::from_utf8(&bytes)
                    && error.error_len().is_none()
                {
                    bytes.truncate(error.valid_up_to());
                }
            }
            String::from_utf8(bytes).unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
        }
    };
    let returned = wire_size::prefix_within(&text, MAX_TEXT_WIRE_BYTES, Nesting::Twice);
    let truncated = cut_at_read || returned.len() < text.len();
    let mut answer = json!({"empty": false, "format": "text", "text": returned, "truncated": truncated});
    let size_key = if transfer.exact { "bytes" } else { "bytesAtLeast" };
    answer[size_key] = transfer.total.into();
    if truncated {
        answer["returnedBytes"] = returned.len().into();
        answer["note"] = format!(
            "The clipboard holds {}{} bytes of text; this is the first {} (an answer keeps text under {MAX_TEXT_WIRE_BYTES} \
             bytes once JSON-encoded).",
            if transfer.exact { "" } else { "at least " },
            transfer.total,
            returned.len()
        )
        .into();
    }
    answer["offered"] = offered.into();
    answer
}

fn image_answer(transfer: x11::Transfer, offered: Vec<String>, max_width: Option<u32>) -> ToolOutcome {
    let failed = |message: String| ToolFailure::new(format!("Clipboard read failed: {message}"));
    if transfer.total > transfer.bytes.len() as u64 {
        return Err(failed(format!(
            "the clipboard's image is {} bytes, more than the {MAX_READ_PNG_BYTES} bytes this node reads",
            transfer.total
        )));
    }
    let source = imaging::decode_png(&transfer.bytes, MAX_DECODED_PIXELS)
        .map_err(|error| failed(format!("the program that copied the image sent {error}")))?;
    let (source_width, source_height) = (source.width, source.height);
    let pixels = imaging::fit(source, max_width).map_err(failed)?;
    let png = imaging::encode_png(&pixels).map_err(failed)?;
    let scale = f64::from(pixels.width) / f64::from(source_width);
    tracing::info!(width = pixels.width, height = pixels.height, bytes = png.len(), "clipboard image read");
    let meta = json!({
        "empty": false,
        "format": "image",
        "mimeType": "image/png",
        "width": pixels.width,
        "height": pixels.height,
        "sourceWidth": source_width,
        "sourceHeight": source_height,
        "scale": (scale * 1e6).round() / 1e6,
        "bytes": png.len(),
        "offered": offered,
    });
    let base64 = STANDARD.encode(&png);
    let mut gateway = meta.clone();
    gateway["base64"] = base64.clone().into();
    Ok(ToolOutput::from(meta)
        .with_block(Content::Image { data: base64, mime_type: "image/png".into() })
        .with_gateway_payload(gateway))
}

/// `clipboard.write`'s arguments, checked: what to put on the clipboard and what to answer.
fn parse_write(args: &Map<String, Value>) -> Result<(x11::Content, Value), ToolFailure> {
    let usage = "clipboard.write takes text (a string) or image ({data: base64 PNG, mimeType: \"image/png\"})";
    match (args.get("text").filter(|v| !v.is_null()), args.get("image").filter(|v| !v.is_null())) {
        (Some(_), Some(_)) => Err(invalid(format!("{usage}, not both"))),
        (None, None) => Err(invalid(format!("{usage}; neither was given"))),
        (Some(text), None) => {
            let Some(text) = text.as_str() else { return Err(invalid("text must be a string")) };
            if text.len() > MAX_WRITE_TEXT_BYTES {
                return Err(invalid(format!(
                    "text is {} bytes; clipboard.write takes at most {MAX_WRITE_TEXT_BYTES} bytes (1 MiB) of text",
                    text.len()
                )));
            }
            let answer = json!({"written": "text", "bytes": text.len(), "chars": text.chars().count()});
            Ok((x11::Content::Text(text.to_owned()), answer))
        }
        (None, Some(image)) => {
            let Some(image) = image.as_object() else {
                return Err(invalid("image must be an object {data: base64 PNG, mimeType: \"image/png\"}"));
            };
            match image.get("mimeType").filter(|v| !v.is_null()) {
                None => {}
                Some(Value::String(mime)) if mime.trim().eq_ignore_ascii_case("image/png") => {}
                Some(other) => {
                    return Err(invalid(format!(
                        "image.mimeType {other} is not supported: clipboard.write takes image/png only (convert the \
                         image to PNG first)"
                    )));
                }
            }
            let Some(data) = image.get("data").and_then(Value::as_str) else {
                return Err(invalid("image.data must be the PNG file as a base64 string"));
            };
            let data = data.trim();
            let data = data.strip_prefix("data:image/png;base64,").unwrap_or(data);
            let png =
                STANDARD.decode(data).map_err(|error| invalid(format!("image.data is not valid base64: {error}")))?;
            if png.len() > MAX_WRITE_PNG_BYTES {
                return Err(invalid(format!(
                    "the image is {} bytes; clipboard.write takes a PNG of at most {MAX_WRITE_PNG_BYTES} bytes (2 MiB): \
                     scale it down first",
                    png.len()
                )));
            }
            let pixels = imaging::decode_png(&png, MAX_DECODED_PIXELS)
                .map_err(|error| invalid(format!("image.data is {error}")))?;
            let answer = json!({
                "written": "image",
                "mimeType": "image/png",
                "width": pixels.width,
                "height": pixels.height,
                "bytes": png.len(),
            });
            Ok((x11::Content::Png(png), answer))
        }
    }
}

fn write(owner: &x11::Owner, args: &Map<String, Value>, timeout: Duration) -> ToolOutcome {
    let (content, answer) = parse_write(args)?;
    owner
        .offer(content, timeout)
        .map_err(|error| ToolFailure::new(format!("Clipboard write failed: {error}")).with_code(UNAVAILABLE))?;
    tracing::info!(written = %answer["written"], bytes = %answer["bytes"], "clipboard written");
    Ok(answer.into())
}

#[cfg(test)]
mod tests;
