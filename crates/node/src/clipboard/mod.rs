//! `clipboard.read` and `clipboard.write`: this machine's clipboard (the X11 CLIPBOARD
//! selection or the Wayland clipboard, what Ctrl+C / Ctrl+V use), text and PNG images (category
//! `clipboard`).
//!
//! | file | what it does |
//! | --- | --- |
//! | [`selection`] | what a read asks for and finds, the same for both backends |
//! | [`x11`] | the X11 selection protocol: a bounded read from whichever program owns it, and the node's long-lived owner |
//! | [`wayland`] | a Wayland session without Xwayland: `wl-paste`, and a kept `wl-copy` as the node's source |
//! | this file | arguments, bounds, which backend, the answers |
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
//! Every wait is bounded ([`DEFAULT_TIMEOUT`]): a clipboard owner that never answers fails the
//! call with a message naming it. The backend is X11 when there is a display (`DISPLAY`), else
//! Wayland through wl-clipboard's programs when `WAYLAND_DISPLAY` is set; without either (or
//! without wl-clipboard installed) the commands are unlisted and say what is missing.

mod selection;
mod wayland;
mod x11;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use clawmcp_mcp::tool::codes::UNAVAILABLE;
use clawmcp_mcp::wire_size::{self, Nesting};
use clawmcp_mcp::{ToolAnnotations, ToolFailure, ToolOutcome, ToolOutput};
use serde_json::{Map, Value, json};

use tokio_util::sync::CancellationToken;

use self::selection::{Content, Found, ReadLimits, Reading, Transfer, Want};
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
    backends: Arc<Backends>,
}

/// Where the clipboard is: named at construction (tests, a node told its display), or found
/// in the node's environment on every call (`DISPLAY` first: with Xwayland the compositor
/// bridges the two clipboards).
#[derive(Debug, Clone)]
enum Place {
    Env,
    X11(String),
    /// A `WAYLAND_DISPLAY` value (a socket name or an absolute path).
    Wayland(String),
}

/// The backend one call uses.
enum Session {
    /// The display, `None` for the one `DISPLAY` names.
    X11(Option<String>),
    Wayland,
}

/// Both backends of one capability; each keeps what the node wrote alive in its own way.
struct Backends {
    place: Place,
    owner: x11::Owner,
    wayland: wayland::Wayland,
    timeout: Duration,
}

impl ClipboardCapability {
    /// The clipboard of the session the node runs in (`DISPLAY`, else `WAYLAND_DISPLAY`).
    pub fn new(settings: Arc<LiveSettings>) -> Self {
        ClipboardCapability::at(settings, Place::Env, DEFAULT_TIMEOUT)
    }

    /// The clipboard of the X display `display` (`:99`), with `timeout` for every call.
    pub fn for_display(settings: Arc<LiveSettings>, display: String, timeout: Duration) -> Self {
        ClipboardCapability::at(settings, Place::X11(display), timeout)
    }

    /// The clipboard of the Wayland compositor at `socket` (a `WAYLAND_DISPLAY` value), with
    /// `timeout` for every call.
    pub fn for_wayland(settings: Arc<LiveSettings>, socket: String, timeout: Duration) -> Self {
        ClipboardCapability::at(settings, Place::Wayland(socket), timeout)
    }

    fn at(settings: Arc<LiveSettings>, place: Place, timeout: Duration) -> Self {
        let backends = Arc::new(Backends {
            owner: x11::Owner::new(
                match &place {
                    Place::X11(display) => Some(display.clone()),
                    _ => None,
                },
                timeout,
            ),
            wayland: wayland::Wayland::new(match &place {
                Place::Wayland(socket) => Some(socket.clone()),
                _ => None,
            }),
            place,
            timeout,
        });
        let probe = {
            let backends = backends.clone();
            move || backends.session().map(|_| ())
        };
        let read_gate = Gate::new(settings.clone(), Some(&Switch::CLIPBOARD_READ), probe.clone());
        let write_gate = Gate::new(settings, None, probe);
        let read = read_spec().with_output_handler({
            let (gate, backends) = (read_gate.clone(), backends.clone());
            move |request, ctx| {
                let (gate, backends) = (gate.clone(), backends.clone());
                async move {
                    gate.admit("clipboard.read")?;
                    let args = ReadArgs::parse(&request.args)?;
                    let reading = backends.read(args.want, &ctx.cancel).await?;
                    blocking(move || answer(reading, &args), &ctx.cancel, None).await?
                }
            }
        });
        let write = write_spec().with_output_handler({
            let (gate, backends) = (write_gate.clone(), backends.clone());
            move |request, ctx| {
                let (gate, backends) = (gate.clone(), backends.clone());
                async move {
                    gate.admit("clipboard.write")?;
                    let (content, answer) = blocking(move || parse_write(&request.args), &ctx.cancel, None).await??;
                    backends.write(content, &ctx.cancel).await?;
                    tracing::info!(written = %answer["written"], bytes = %answer["bytes"], "clipboard written");
                    Ok(answer.into())
                }
            }
        });
        ClipboardCapability {
            commands: vec![read_gate.apply(read), write_gate.apply(write)],
            #[cfg(test)]
            backends,
        }
    }
}

impl Capability for ClipboardCapability {
    fn commands(&self) -> Vec<Command> {
        self.commands.clone()
    }
}

impl Backends {
    /// The backend a call uses now, or what is missing for one.
    fn session(&self) -> Result<Session, MissingBackend> {
        let wl_clipboard = || {
            MissingBackend::program("wl-paste", "wl-clipboard")?;
            MissingBackend::program("wl-copy", "wl-clipboard").map(|_| Session::Wayland)
        };
        match &self.place {
            Place::X11(display) => Ok(Session::X11(Some(display.clone()))),
            Place::Wayland(_) => wl_clipboard(),
            // (The Wayland gap named here is never shown: with WAYLAND_DISPLAY set, wl-clipboard is used.)
            Place::Env => match MissingBackend::x11_display(None, "served through wl-clipboard") {
                Ok(()) => Ok(Session::X11(None)),
                Err(missing) => match std::env::var_os("WAYLAND_DISPLAY").is_some_and(|value| !value.is_empty()) {
                    true => wl_clipboard(),
                    false => Err(missing),
                },
            },
        }
    }

    fn session_or_failure(&self) -> Result<Session, ToolFailure> {
        self.session()
            .map_err(|missing| ToolFailure::new(format!("Clipboard not available: {missing}")).with_code(UNAVAILABLE))
    }

    async fn read(self: &Arc<Self>, want: Want, cancel: &CancellationToken) -> Result<Reading, ToolFailure> {
        // A few bytes past the budget: enough to finish a cut UTF-8 character and to know there is more.
        let limits =
            ReadLimits { text_bytes: MAX_TEXT_WIRE_BYTES + 4, image_bytes: MAX_READ_PNG_BYTES, timeout: self.timeout };
        let read = match self.session_or_failure()? {
            Session::X11(display) => {
                blocking(move || x11::read(display.as_deref(), want, limits), cancel, Some(self.timeout)).await?
            }
            Session::Wayland => self.wayland.read(want, limits, cancel).await,
        };
        read.map_err(|error| ToolFailure::new(format!("Clipboard read failed: {error}")).with_code(UNAVAILABLE))
    }

    async fn write(self: &Arc<Self>, content: Content, cancel: &CancellationToken) -> Result<(), ToolFailure> {
        let timeout = self.timeout;
        let written = match self.session_or_failure()? {
            Session::X11(_) => {
                let backends = self.clone();
                blocking(move || backends.owner.offer(content, timeout), cancel, Some(timeout)).await?
            }
            Session::Wayland => self.wayland.offer(content, timeout, cancel).await,
        };
        written.map_err(|error| ToolFailure::new(format!("Clipboard write failed: {error}")).with_code(UNAVAILABLE))
    }
}

/// `work` on the blocking pool. A cancelled caller stops waiting (the work itself is bounded),
/// and with a `timeout` even an X server that stopped answering (which the work's own deadlines
/// cannot cover) fails the call soon after it.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
    cancel: &CancellationToken,
    timeout: Option<Duration>,
) -> Result<T, ToolFailure> {
    let work = tokio::task::spawn_blocking(work);
    let limit = timeout.map_or(Duration::MAX, |timeout| timeout + Duration::from_secs(1));
    tokio::select! {
        () = cancel.cancelled() => Err(clawmcp_mcp::CANCELLED.into()),
        done = tokio::time::timeout(limit, work) => match done {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(ToolFailure::new(format!("Clipboard failed: {error}"))),
            Err(_) => Err(ToolFailure::new(format!(
                "Clipboard failed: the X server did not answer within {} s",
                limit.as_secs_f32()
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

/// `clipboard.read`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ReadArgs {
    want: Want,
    max_width: Option<u32>,
}

impl ReadArgs {
    fn parse(args: &Map<String, Value>) -> Result<ReadArgs, ToolFailure> {
        let want = match args.get("format") {
            None | Some(Value::Null) => Want::Text,
            Some(Value::String(text)) => match text.trim().to_ascii_lowercase().as_str() {
                "" | "text" => Want::Text,
                "image" | "png" => Want::Image,
                "auto" => Want::Auto,
                _ => {
                    return Err(ToolFailure::invalid_request(format!(
                        "Unsupported clipboard format `{text}`. Supported: text, image, auto."
                    )));
                }
            },
            Some(_) => return Err(ToolFailure::invalid_request("format must be a string: text, image or auto")),
        };
        let max_width = match args.get("maxWidth") {
            None | Some(Value::Null) => None,
            Some(value) => Some(
                value
                    .as_i64()
                    .or_else(|| value.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
                    .ok_or_else(|| ToolFailure::invalid_request("maxWidth must be a whole number"))?
                    .clamp(i64::from(MIN_WIDTH), i64::from(MAX_WIDTH)) as u32,
            ),
        };
        Ok(ReadArgs { want, max_width })
    }
}

/// `clipboard.read`'s answer to what the backend found.
fn answer(reading: Reading, args: &ReadArgs) -> ToolOutcome {
    let offered = reading.offered.unwrap_or_default();
    match reading.found {
        Found::Empty => {
            Ok(json!({"empty": true, "message": "The clipboard is empty: no program holds anything to paste."}).into())
        }
        Found::Nothing => {
            let kind = match args.want {
                Want::Text => "no text",
                Want::Image => "no PNG image",
                Want::Auto => "neither text nor a PNG image",
            };
            let hint = match (args.want, offered.iter().any(|target| target == "image/png")) {
                (Want::Text, true) => " Read it with format image (or auto).",
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
        Found::Text(transfer) => Ok(text_answer(transfer, offered).into()),
        Found::Png(transfer) => image_answer(transfer, offered, args.max_width),
    }
}

fn text_answer(transfer: Transfer, offered: Vec<String>) -> Value {
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

fn image_answer(transfer: Transfer, offered: Vec<String>, max_width: Option<u32>) -> ToolOutcome {
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
    let (width, height, png) = imaging::fit_encoded(&source, max_width, imaging::encode_png).map_err(failed)?;
    let scale = f64::from(width) / f64::from(source_width);
    tracing::info!(width, height, bytes = png.len(), "clipboard image read");
    let meta = json!({
        "empty": false,
        "format": "image",
        "mimeType": "image/png",
        "width": width,
        "height": height,
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
        .with_block(clawmcp_mcp::Content::Image { data: base64, mime_type: "image/png".into() })
        .with_gateway_payload(gateway))
}

/// `clipboard.write`'s arguments, checked: what to put on the clipboard and what to answer.
fn parse_write(args: &Map<String, Value>) -> Result<(Content, Value), ToolFailure> {
    let usage = "clipboard.write takes text (a string) or image ({data: base64 PNG, mimeType: \"image/png\"})";
    match (args.get("text").filter(|v| !v.is_null()), args.get("image").filter(|v| !v.is_null())) {
        (Some(_), Some(_)) => Err(ToolFailure::invalid_request(format!("{usage}, not both"))),
        (None, None) => Err(ToolFailure::invalid_request(format!("{usage}; neither was given"))),
        (Some(text), None) => {
            let Some(text) = text.as_str() else { return Err(ToolFailure::invalid_request("text must be a string")) };
            if text.len() > MAX_WRITE_TEXT_BYTES {
                return Err(ToolFailure::invalid_request(format!(
                    "text is {} bytes; clipboard.write takes at most {MAX_WRITE_TEXT_BYTES} bytes (1 MiB) of text",
                    text.len()
                )));
            }
            let answer = json!({"written": "text", "bytes": text.len(), "chars": text.chars().count()});
            Ok((Content::Text(text.to_owned()), answer))
        }
        (None, Some(image)) => {
            let Some(image) = image.as_object() else {
                return Err(ToolFailure::invalid_request(
                    "image must be an object {data: base64 PNG, mimeType: \"image/png\"}",
                ));
            };
            match image.get("mimeType").filter(|v| !v.is_null()) {
                None => {}
                Some(Value::String(mime)) if mime.trim().eq_ignore_ascii_case("image/png") => {}
                Some(other) => {
                    return Err(ToolFailure::invalid_request(format!(
                        "image.mimeType {other} is not supported: clipboard.write takes image/png only (convert the \
                         image to PNG first)"
                    )));
                }
            }
            let Some(data) = image.get("data").and_then(Value::as_str) else {
                return Err(ToolFailure::invalid_request("image.data must be the PNG file as a base64 string"));
            };
            let data = data.trim();
            let data = data.strip_prefix("data:image/png;base64,").unwrap_or(data);
            let png = STANDARD
                .decode(data)
                .map_err(|error| ToolFailure::invalid_request(format!("image.data is not valid base64: {error}")))?;
            if png.len() > MAX_WRITE_PNG_BYTES {
                return Err(ToolFailure::invalid_request(format!(
                    "the image is {} bytes; clipboard.write takes a PNG of at most {MAX_WRITE_PNG_BYTES} bytes (2 MiB): \
                     scale it down first",
                    png.len()
                )));
            }
            let pixels = imaging::decode_png(&png, MAX_DECODED_PIXELS)
                .map_err(|error| ToolFailure::invalid_request(format!("image.data is {error}")))?;
            let answer = json!({
                "written": "image",
                "mimeType": "image/png",
                "width": pixels.width,
                "height": pixels.height,
                "bytes": png.len(),
            });
            Ok((Content::Png(png), answer))
        }
    }
}

#[cfg(test)]
mod tests;
