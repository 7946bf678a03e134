//! The clipboard against a real X server (Xvfb) and a real second program (xclip): what the
//! node writes, xclip pastes byte for byte, after the call returned; what xclip copies, the node
//! reads exactly. Every xclip runs in the foreground (`-quiet`) and is killed by its PID.

use std::path::Path;
use std::process::{Command as Process, Stdio};
use std::time::Instant;

use clawmcp_mcp::CallContext;
use clawmcp_mcp::tool::codes::INVALID_REQUEST;
use x11rb::connection::Connection as _;
use x11rb::protocol::xproto::{ConnectionExt as _, CreateWindowAux, WindowClass};

use super::*;
use crate::capability::{Caller, InvokeRequest};
use crate::imaging::{Layout, Pixels};
use crate::test_support::{STARTUP_DEADLINE, Spawned, Sway, require, sway, xvfb};

/// A private X server, the node's clipboard on it, and a directory for the test's files.
struct Desk {
    capability: ClipboardCapability,
    display: String,
    dir: tempfile::TempDir,
    _server: Spawned,
}

fn live_settings(dir: &Path, read_enabled: bool) -> Arc<LiveSettings> {
    let path = dir.join("settings.json");
    std::fs::write(&path, format!("{{\"NodeClipboardReadEnabled\": {read_enabled}}}")).unwrap();
    Arc::new(LiveSettings::open(path).unwrap())
}

fn desk_with(read_enabled: bool, timeout: Duration) -> Desk {
    let dir = tempfile::tempdir().unwrap();
    let (server, display) = xvfb(dir.path());
    let settings = live_settings(dir.path(), read_enabled);
    let capability = ClipboardCapability::for_display(settings, display.clone(), timeout);
    Desk { capability, display, dir, _server: server }
}

fn desk() -> Desk {
    desk_with(true, DEFAULT_TIMEOUT)
}

fn command(capability: &ClipboardCapability, name: &str) -> Command {
    capability.commands.iter().find(|command| command.name() == name).unwrap().clone()
}

async fn call(capability: &ClipboardCapability, name: &str, args: Value) -> ToolOutcome {
    let request = InvokeRequest {
        id: "t".into(),
        command: name.into(),
        args: args.as_object().unwrap().clone(),
        session_key: None,
        caller: Caller::Mcp,
    };
    command(capability, name).call(request, CallContext::detached()).await
}

fn payload(outcome: ToolOutcome) -> Value {
    outcome.unwrap_or_else(|failure| panic!("the call failed: {}", failure.message)).payload.unwrap()
}

fn nonce() -> String {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).unwrap();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whoever owns CLIPBOARD on `display` right now.
fn clipboard_owner(display: &str) -> u32 {
    let (conn, _) = x11rb::connect(Some(display)).unwrap();
    let clipboard = conn.intern_atom(false, b"CLIPBOARD").unwrap().reply().unwrap().atom;
    conn.get_selection_owner(clipboard).unwrap().reply().unwrap().owner
}

/// `xclip -o` of `target`, as another program pastes it: its stdout, or its error.
fn xclip_out(display: &str, target: &str, dir: &Path) -> Result<Vec<u8>, String> {
    let args = ["-selection", "clipboard", "-t", target, "-o"];
    another_program_pastes(("xclip", "xclip"), &args, ("DISPLAY", display), dir)
}

/// What `program args` prints with `env` set, or its error; killed by PID if it hangs.
fn another_program_pastes(
    (program, package): (&str, &str),
    args: &[&str],
    env: (&str, &str),
    dir: &Path,
) -> Result<Vec<u8>, String> {
    require(program, package);
    let out = dir.join(format!("{program}-out-{}", nonce()));
    let mut child = Process::new(program)
        .args(args)
        .env(env.0, env.1)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > STARTUP_DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{program} {args:?} did not finish");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    let bytes = std::fs::read(&out).unwrap();
    if status.success() { Ok(bytes) } else { Err(stderr) }
}

/// xclip owning the clipboard with `bytes` as `target`, in the foreground (killed by PID when
/// the guard drops); returns once it owns it.
fn xclip_in(desk: &Desk, target: &str, bytes: &[u8]) -> Spawned {
    let file = desk.dir.path().join(format!("xclip-in-{}", nonce()));
    std::fs::write(&file, bytes).unwrap();
    let before = clipboard_owner(&desk.display);
    let xclip = Spawned::start(
        "xclip",
        "xclip",
        Process::new("xclip")
            .args(["-selection", "clipboard", "-t", target, "-i", "-quiet"])
            .arg(&file)
            .env("DISPLAY", &desk.display),
        desk.dir.path(),
    );
    let started = Instant::now();
    while clipboard_owner(&desk.display) == before {
        assert!(started.elapsed() < STARTUP_DEADLINE, "xclip did not take the clipboard: {}", xclip.stderr());
        std::thread::sleep(Duration::from_millis(10));
    }
    xclip
}

fn random_pixels(width: u32, height: u32, layout: Layout) -> Pixels {
    let mut data = vec![0u8; width as usize * height as usize * layout.channels()];
    getrandom::fill(&mut data).unwrap();
    Pixels { data, width, height, layout }
}

fn image_of(output: &ToolOutput) -> Pixels {
    let Some(clawmcp_mcp::Content::Image { data, mime_type }) = output.blocks.first() else {
        panic!("no image block: {output:?}")
    };
    assert_eq!(mime_type, "image/png");
    imaging::decode_png(&STANDARD.decode(data).unwrap(), u64::MAX).unwrap()
}

#[tokio::test]
async fn text_the_node_writes_is_pasted_by_another_program_after_the_call_returned() {
    let desk = desk();
    let text = format!("clawmcp {} héllo ✓ 😀", nonce());
    let written = payload(call(&desk.capability, "clipboard.write", json!({"text": text})).await);
    assert_eq!(written, json!({"written": "text", "bytes": text.len(), "chars": text.chars().count()}));
    assert_eq!(xclip_out(&desk.display, "UTF8_STRING", desk.dir.path()).unwrap(), text.as_bytes());
    // Pasted again, later and as another target: the node still owns it.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(xclip_out(&desk.display, "text/plain;charset=utf-8", desk.dir.path()).unwrap(), text.as_bytes());
    let targets = String::from_utf8(xclip_out(&desk.display, "TARGETS", desk.dir.path()).unwrap()).unwrap();
    assert!(targets.lines().any(|t| t == "UTF8_STRING") && !targets.contains("image/png"), "{targets}");
    assert!(!targets.lines().any(|t| t == "STRING"), "not Latin-1, so no STRING: {targets}");
    // And the node reads back what it holds, through the same X server.
    let read = payload(call(&desk.capability, "clipboard.read", json!({})).await);
    assert_eq!(read["text"], text.as_str());
    assert_eq!(read["truncated"], false);
}

#[tokio::test]
async fn latin1_text_is_offered_as_string_too() {
    let desk = desk();
    payload(call(&desk.capability, "clipboard.write", json!({"text": "café"})).await);
    assert_eq!(xclip_out(&desk.display, "STRING", desk.dir.path()).unwrap(), b"caf\xe9");
}

#[tokio::test]
async fn text_another_program_copied_is_read_exactly() {
    let desk = desk();
    let text = format!("{} – Grüße, 東京, 😀\nsecond line\ttab", nonce());
    let _xclip = xclip_in(&desk, "UTF8_STRING", text.as_bytes());
    let read = payload(call(&desk.capability, "clipboard.read", json!({"format": "text"})).await);
    assert_eq!(read["text"], text.as_str());
    assert_eq!((read["bytes"].clone(), read["truncated"].clone()), (json!(text.len()), json!(false)));
    assert_eq!(read["offered"], json!(["UTF8_STRING"]), "xclip offers what it was given");
    assert_eq!(read["empty"], false);
}

#[tokio::test]
async fn latin1_from_another_program_is_decoded() {
    let desk = desk();
    let _xclip = xclip_in(&desk, "STRING", b"caf\xe9 na\xefve");
    let read = payload(call(&desk.capability, "clipboard.read", json!({})).await);
    assert_eq!(read["text"], "café naïve");
}

#[tokio::test]
async fn an_image_the_node_writes_is_pasted_with_the_same_pixels() {
    let desk = desk();
    let pixels = random_pixels(37, 23, Layout::Rgb);
    let png = imaging::encode_png(&pixels).unwrap();
    let written =
        payload(call(&desk.capability, "clipboard.write", json!({"image": {"data": STANDARD.encode(&png)}})).await);
    assert_eq!(
        written,
        json!({"written": "image", "mimeType": "image/png", "width": 37, "height": 23, "bytes": png.len()})
    );
    let pasted = xclip_out(&desk.display, "image/png", desk.dir.path()).unwrap();
    assert_eq!(pasted, png, "the very bytes written");
    assert_eq!(imaging::decode_png(&pasted, u64::MAX).unwrap(), pixels);
    let targets = String::from_utf8(xclip_out(&desk.display, "TARGETS", desk.dir.path()).unwrap()).unwrap();
    assert!(targets.lines().any(|t| t == "image/png") && !targets.contains("UTF8_STRING"), "{targets}");
    // Text asked of an image: an answer that says what is there, not a failure.
    let read = payload(call(&desk.capability, "clipboard.read", json!({})).await);
    assert_eq!(read["empty"], false);
    assert_eq!(read["offered"], json!(["image/png"]));
    assert_eq!(
        read["message"],
        "The clipboard holds no text; it offers image/png. Read it with format image (or auto)."
    );
}

#[tokio::test]
async fn an_image_another_program_copied_comes_back_as_an_image_block() {
    let desk = desk();
    let pixels = random_pixels(64, 40, Layout::Rgba);
    let _xclip = xclip_in(&desk, "image/png", &imaging::encode_png(&pixels).unwrap());
    for format in ["image", "auto"] {
        let output = call(&desk.capability, "clipboard.read", json!({"format": format})).await.unwrap();
        assert_eq!(image_of(&output), pixels, "every pixel, alpha kept ({format})");
        let meta = output.payload.as_ref().unwrap();
        assert_eq!(
            (meta["format"].clone(), meta["mimeType"].clone(), meta["width"].clone(), meta["height"].clone()),
            (json!("image"), json!("image/png"), json!(64), json!(40))
        );
        assert_eq!(meta["scale"], json!(1.0));
        assert!(!meta.to_string().contains("base64"), "never base64 in the text");
        let Some(clawmcp_mcp::Content::Image { data, .. }) = output.blocks.first() else { unreachable!() };
        assert_eq!(output.gateway_payload()["base64"].as_str(), Some(data.as_str()), "the gateway gets it inline");
    }
    let with_width = call(&desk.capability, "clipboard.read", json!({"format": "image", "maxWidth": 32})).await;
    let scaled = image_of(&with_width.unwrap());
    assert_eq!((scaled.width, scaled.height), (32, 20));
}

/// A noisy 1600x1200 PNG is ~5.8 MB: xclip sends it INCR (in chunks), and the node scales it
/// to the default budgets (pixels, then bytes), exactly as the shared resizer does the source.
#[tokio::test]
async fn a_large_image_arrives_in_chunks_and_is_scaled_to_the_pixel_budget() {
    let desk = desk();
    let pixels = random_pixels(1600, 1200, Layout::Rgb);
    let png = imaging::encode_png(&pixels).unwrap();
    assert!(png.len() > 4 * 1024 * 1024, "large enough for xclip's INCR: {}", png.len());
    let _xclip = xclip_in(&desk, "image/png", &png);
    let output = call(&desk.capability, "clipboard.read", json!({"format": "image"})).await.unwrap();
    let meta = output.payload.as_ref().unwrap();
    assert_eq!((meta["sourceWidth"].clone(), meta["sourceHeight"].clone()), (json!(1600), json!(1200)));
    let image = image_of(&output);
    assert!(u64::from(image.width) * u64::from(image.height) <= imaging::DEFAULT_MAX_PIXELS);
    assert!(meta["bytes"].as_u64().unwrap() <= imaging::DEFAULT_MAX_BYTES as u64, "{meta}");
    let (_, _, expected) = imaging::fit_encoded(&pixels, None, imaging::encode_png).unwrap();
    assert_eq!(image, imaging::decode_png(&expected, u64::MAX).unwrap(), "all 5.8 MB arrived: the same scaled pixels");
}

#[tokio::test]
async fn text_at_the_read_bound_is_whole_and_one_byte_more_is_cut() {
    let desk = desk();
    // xclip sends anything over ~1 MiB in INCR chunks, so this also reads chunked transfers.
    let exact = "a".repeat(MAX_TEXT_WIRE_BYTES);
    let xclip = xclip_in(&desk, "UTF8_STRING", exact.as_bytes());
    let read = payload(call(&desk.capability, "clipboard.read", json!({})).await);
    assert_eq!((read["truncated"].clone(), read["bytes"].clone()), (json!(false), json!(MAX_TEXT_WIRE_BYTES)));
    assert!(read["text"] == exact.as_str());
    drop(xclip);

    let over = format!("{exact}b");
    let _xclip = xclip_in(&desk, "UTF8_STRING", over.as_bytes());
    let read = payload(call(&desk.capability, "clipboard.read", json!({})).await);
    assert_eq!(read["truncated"], true);
    assert_eq!((read["bytes"].clone(), read["returnedBytes"].clone()), (json!(over.len()), json!(MAX_TEXT_WIRE_BYTES)));
    assert!(read["text"] == exact.as_str(), "the first MiB");
    assert!(read["note"].as_str().unwrap().starts_with("The clipboard holds 1048577 bytes of text"), "{read}");
}

#[tokio::test]
async fn text_at_the_write_bound_is_served_in_chunks_and_one_byte_more_is_refused() {
    let desk = desk();
    let mut text = String::new();
    while text.len() < MAX_WRITE_TEXT_BYTES {
        text.push_str(&nonce());
    }
    text.truncate(MAX_WRITE_TEXT_BYTES);
    payload(call(&desk.capability, "clipboard.write", json!({"text": text})).await);
    assert!(xclip_out(&desk.display, "UTF8_STRING", desk.dir.path()).unwrap() == text.as_bytes(), "4 INCR chunks");
    let error = call(&desk.capability, "clipboard.write", json!({"text": format!("{text}x")})).await.unwrap_err();
    assert_eq!(error.code, Some(INVALID_REQUEST));
    assert_eq!(error.message, "text is 1048577 bytes; clipboard.write takes at most 1048576 bytes (1 MiB) of text");
    assert!(xclip_out(&desk.display, "UTF8_STRING", desk.dir.path()).unwrap() == text.as_bytes(), "kept as it was");
}

/// A PNG padded with a private ancillary chunk (which decoders skip) to exactly `size` bytes.
fn png_of_size(size: usize) -> Vec<u8> {
    let pixels = random_pixels(8, 8, Layout::Rgb);
    let plain = imaging::encode_png(&pixels).unwrap();
    let padding = size - plain.len() - 12; // a chunk costs length, type and CRC
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(std::io::Cursor::new(&mut out), 8, 8);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_compression(png::Compression::Fast);
    let mut writer = encoder.write_header().unwrap();
    writer.write_chunk(png::chunk::ChunkType(*b"clAw"), &vec![0u8; padding]).unwrap();
    writer.write_image_data(&pixels.data).unwrap();
    writer.finish().unwrap();
    assert_eq!(out.len(), size);
    out
}

#[tokio::test]
async fn an_image_at_the_write_bound_is_taken_and_one_byte_more_is_refused() {
    let desk = desk();
    let exact = png_of_size(MAX_WRITE_PNG_BYTES);
    let data = format!("data:image/png;base64,{}", STANDARD.encode(&exact));
    let written = payload(
        call(&desk.capability, "clipboard.write", json!({"image": {"data": data, "mimeType": "image/png"}})).await,
    );
    assert_eq!(written["bytes"], MAX_WRITE_PNG_BYTES);
    assert!(xclip_out(&desk.display, "image/png", desk.dir.path()).unwrap() == exact, "served in INCR chunks");
    let over = STANDARD.encode(png_of_size(MAX_WRITE_PNG_BYTES + 1));
    let error = call(&desk.capability, "clipboard.write", json!({"image": {"data": over}})).await.unwrap_err();
    assert_eq!(error.code, Some(INVALID_REQUEST));
    assert!(error.message.starts_with("the image is 2097153 bytes; clipboard.write takes a PNG of at most 2097152"));
}

#[test]
fn bad_write_arguments_are_refused_with_what_to_do() {
    let refusal = |args: Value| parse_write(args.as_object().unwrap()).unwrap_err();
    let png = STANDARD.encode(imaging::encode_png(&random_pixels(2, 2, Layout::Rgb)).unwrap());
    for (args, starts) in [
        (
            json!({}),
            "clipboard.write takes text (a string) or image ({data: base64 PNG, mimeType: \"image/png\"}); neither",
        ),
        (json!({"text": "a", "image": {"data": png}}), "clipboard.write takes text (a string) or image"),
        (json!({"text": 7}), "text must be a string"),
        (json!({"image": "abc"}), "image must be an object"),
        (json!({"image": {"data": "not base64!"}}), "image.data is not valid base64: "),
        (json!({"image": {}}), "image.data must be the PNG file as a base64 string"),
        (json!({"image": {"data": STANDARD.encode(b"GIF89a....")}}), "image.data is not a PNG image"),
        (json!({"image": {"data": png, "mimeType": "image/jpeg"}}), "image.mimeType \"image/jpeg\" is not supported"),
    ] {
        let failure = refusal(args.clone());
        assert!(failure.message.starts_with(starts), "{args}: {}", failure.message);
        assert_eq!(failure.code, Some(INVALID_REQUEST), "{args}");
    }
    // A decompression bomb is refused from its header, before its pixels are allocated.
    let mut huge = Vec::new();
    let encoder = png::Encoder::new(std::io::Cursor::new(&mut huge), 20_000, 20_000);
    let mut writer = encoder.write_header().unwrap();
    writer.write_chunk(png::chunk::ChunkType(*b"IEND"), &[]).unwrap();
    drop(writer);
    let failure = refusal(json!({"image": {"data": STANDARD.encode(&huge)}}));
    assert!(failure.message.contains("is 20000x20000, more than the 33177600 pixels"), "{}", failure.message);
}

#[test]
fn read_arguments_are_checked() {
    let parse = |value: Value| ReadArgs::parse(value.as_object().unwrap());
    assert_eq!(parse(json!({})).unwrap(), ReadArgs { want: Want::Text, max_width: None });
    assert_eq!(parse(json!({"format": " Auto "})).unwrap().want, Want::Auto);
    assert_eq!(parse(json!({"format": "image", "maxWidth": 1})).unwrap().max_width, Some(MIN_WIDTH));
    let error = parse(json!({"format": "html"})).unwrap_err();
    assert_eq!(error.message, "Unsupported clipboard format `html`. Supported: text, image, auto.");
    assert!(parse(json!({"maxWidth": "wide"})).is_err());
}

#[test]
fn text_that_json_escapes_is_cut_to_the_wire_budget() {
    // A quote costs 4 bytes inside a JSON text block's JSON: 1 MiB of them cannot all go out.
    let quotes = "\"".repeat(MAX_TEXT_WIRE_BYTES);
    let transfer =
        Transfer { bytes: quotes.clone().into_bytes(), total: quotes.len() as u64, exact: true, latin1: false };
    let answer = text_answer(transfer, vec![]);
    assert_eq!(answer["truncated"], true);
    assert_eq!(answer["returnedBytes"], MAX_TEXT_WIRE_BYTES / 4);
    let text_block = Value::String(answer.to_string()).to_string();
    assert!(text_block.len() < MAX_TEXT_WIRE_BYTES + 1024, "the text block stays within the budget");
    // A cap that cuts a character in two drops it rather than showing a replacement.
    let cut = Transfer { bytes: "aé".as_bytes()[..2].to_vec(), total: 3, exact: true, latin1: false };
    assert_eq!(text_answer(cut, vec![])["text"], "a");
}

#[tokio::test]
async fn an_empty_clipboard_is_an_answer_not_a_failure() {
    let desk = desk();
    for format in ["text", "image", "auto"] {
        let read = payload(call(&desk.capability, "clipboard.read", json!({"format": format})).await);
        assert_eq!(
            read,
            json!({"empty": true, "message": "The clipboard is empty: no program holds anything to paste."})
        );
    }
}

#[tokio::test]
async fn an_owner_that_never_answers_fails_the_read_in_time() {
    let desk = desk_with(true, Duration::from_millis(700));
    let (_conn, window) = a_hung_owner(&desk.display);
    let error = call(&desk.capability, "clipboard.read", json!({})).await.unwrap_err();
    assert_eq!(error.code, Some(UNAVAILABLE));
    assert_eq!(
        error.message,
        format!(
            "Clipboard read failed: the program that owns the clipboard (X window 0x{window:x}) did not answer within \
             0.7 s; it may be busy or hung. Copy something again, or close that program"
        )
    );
}

/// A client that takes the clipboard and then never reads its events; dropped, it lets go.
fn a_hung_owner(display: &str) -> (x11rb::rust_connection::RustConnection, u32) {
    let (conn, screen) = x11rb::connect(Some(display)).unwrap();
    let window = conn.generate_id().unwrap();
    let root = conn.setup().roots[screen].root;
    conn.create_window(0, window, root, 0, 0, 1, 1, 0, WindowClass::INPUT_ONLY, 0, &CreateWindowAux::new()).unwrap();
    let clipboard = conn.intern_atom(false, b"CLIPBOARD").unwrap().reply().unwrap().atom;
    conn.set_selection_owner(window, clipboard, x11rb::CURRENT_TIME).unwrap();
    conn.get_input_focus().unwrap().reply().unwrap(); // a round trip: the clipboard is taken
    (conn, window)
}

#[tokio::test]
async fn a_cancelled_read_stops_waiting_for_a_hung_owner() {
    let desk = desk();
    let _hung = a_hung_owner(&desk.display);
    let ctx = CallContext::detached();
    let cancel = ctx.cancel.clone();
    let request = InvokeRequest {
        id: "t".into(),
        command: "clipboard.read".into(),
        args: Map::new(),
        session_key: None,
        caller: Caller::Mcp,
    };
    let call = command(&desk.capability, "clipboard.read").call(request, ctx);
    let canceller = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    };
    let (outcome, ()) = tokio::join!(call, canceller);
    assert_eq!(outcome.unwrap_err().message, clawmcp_mcp::CANCELLED, "cancelled, not timed out");
}

/// The node serves 1 MiB in chunks to at most 8 requestors at once; requestors that take the
/// first answer and never ask for a chunk hold their places only until they have stalled for
/// the call timeout.
#[tokio::test]
async fn stalled_requestors_hold_at_most_eight_transfers_and_are_then_dropped() {
    let desk = desk_with(true, Duration::from_secs(3));
    let text = "z".repeat(MAX_WRITE_TEXT_BYTES);
    payload(call(&desk.capability, "clipboard.write", json!({"text": text})).await);
    let (conn, screen) = x11rb::connect(Some(&desk.display)).unwrap();
    let root = conn.setup().roots[screen].root;
    let atom = |name: &[u8]| conn.intern_atom(false, name).unwrap().reply().unwrap().atom;
    let (clipboard, utf8, property) = (atom(b"CLIPBOARD"), atom(b"UTF8_STRING"), atom(b"STALLED"));
    let ask = || {
        let window = conn.generate_id().unwrap();
        conn.create_window(0, window, root, 0, 0, 1, 1, 0, WindowClass::INPUT_ONLY, 0, &CreateWindowAux::new())
            .unwrap();
        conn.convert_selection(window, clipboard, utf8, property, x11rb::CURRENT_TIME).unwrap();
        conn.flush().unwrap();
        let started = Instant::now();
        loop {
            match conn.poll_for_event().unwrap() {
                Some(x11rb::protocol::Event::SelectionNotify(notify)) if notify.requestor == window => {
                    break notify.property;
                }
                Some(_) => {}
                None => {
                    assert!(started.elapsed() < STARTUP_DEADLINE, "the node did not answer");
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        }
    };
    for requestor in 0..8 {
        assert_eq!(ask(), property, "requestor {requestor} gets an INCR transfer");
    }
    assert_eq!(ask(), x11rb::NONE, "the ninth is refused while eight are under way");
    let started = Instant::now();
    while xclip_out(&desk.display, "UTF8_STRING", desk.dir.path()).ok().as_deref() != Some(text.as_bytes()) {
        assert!(started.elapsed() < 4 * STARTUP_DEADLINE, "the stalled transfers were never dropped");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test]
async fn text_past_the_count_limit_reports_a_lower_bound() {
    let desk = desk();
    let size = selection::MAX_COUNTED_BYTES as usize + MAX_TEXT_WIRE_BYTES;
    let _xclip = xclip_in(&desk, "UTF8_STRING", &vec![b'q'; size]);
    let read = payload(call(&desk.capability, "clipboard.read", json!({})).await);
    assert_eq!((read["truncated"].clone(), read["returnedBytes"].clone()), (json!(true), json!(MAX_TEXT_WIRE_BYTES)));
    assert!(read.get("bytes").is_none(), "no exact size claimed: {}", read["note"]);
    let at_least = read["bytesAtLeast"].as_u64().unwrap();
    assert!(at_least > selection::MAX_COUNTED_BYTES && at_least < size as u64, "{at_least}");
    assert!(read["note"].as_str().unwrap().starts_with(&format!("The clipboard holds at least {at_least} bytes")));
}

#[tokio::test]
async fn an_image_at_the_read_bound_is_read_and_one_byte_more_is_refused() {
    let desk = desk();
    let exact = png_of_size(MAX_READ_PNG_BYTES);
    let xclip = xclip_in(&desk, "image/png", &exact);
    let output = call(&desk.capability, "clipboard.read", json!({"format": "image"})).await.unwrap();
    assert_eq!(image_of(&output), imaging::decode_png(&exact, 64).unwrap(), "its 8x8 pixels");
    drop(xclip);
    let _xclip = xclip_in(&desk, "image/png", &png_of_size(MAX_READ_PNG_BYTES + 1));
    let error = call(&desk.capability, "clipboard.read", json!({"format": "image"})).await.unwrap_err();
    assert_eq!(
        error.message,
        "Clipboard read failed: the clipboard's image is 33554433 bytes, more than the 33554432 bytes this node reads"
    );
}

#[tokio::test]
async fn one_owner_thread_serves_every_write_until_another_program_copies() {
    let desk = desk();
    let mut threads = Vec::new();
    for round in 0..4 {
        let text = format!("round {round} {}", nonce());
        payload(call(&desk.capability, "clipboard.write", json!({"text": text})).await);
        assert_eq!(xclip_out(&desk.display, "UTF8_STRING", desk.dir.path()).unwrap(), text.as_bytes());
        threads.push(desk.capability.backends.owner.thread_id().unwrap());
    }
    threads.dedup();
    assert_eq!(threads.len(), 1, "one thread for every write");
    // Another program copies: the node lets go, and reads what that program holds.
    let theirs = nonce();
    let xclip = xclip_in(&desk, "UTF8_STRING", theirs.as_bytes());
    assert_eq!(payload(call(&desk.capability, "clipboard.read", json!({})).await)["text"], theirs.as_str());
    drop(xclip);
    // The node writes again: the same thread takes the clipboard back.
    payload(call(&desk.capability, "clipboard.write", json!({"text": "mine again"})).await);
    assert_eq!(xclip_out(&desk.display, "UTF8_STRING", desk.dir.path()).unwrap(), b"mine again");
    assert_eq!(desk.capability.backends.owner.thread_id(), Some(threads[0]));
}

#[tokio::test]
async fn dropping_the_capability_releases_the_clipboard() {
    let Desk { capability, display, dir, _server } = desk();
    payload(call(&capability, "clipboard.write", json!({"text": "while the node runs"})).await);
    assert!(clipboard_owner(&display) != x11rb::NONE);
    drop(capability);
    let started = Instant::now();
    while clipboard_owner(&display) != x11rb::NONE {
        assert!(started.elapsed() < STARTUP_DEADLINE, "the owner thread did not end");
        std::thread::sleep(Duration::from_millis(10));
    }
    let error = xclip_out(&display, "UTF8_STRING", dir.path()).unwrap_err();
    assert!(error.contains("not available"), "{error}");
}

#[tokio::test]
async fn reading_is_behind_the_owners_switch_and_writing_is_not() {
    let desk = desk_with(false, DEFAULT_TIMEOUT);
    let (read, write) = (command(&desk.capability, "clipboard.read"), command(&desk.capability, "clipboard.write"));
    assert!(!read.is_listed() && write.is_listed(), "off: read hidden, write served");
    let error = call(&desk.capability, "clipboard.read", json!({})).await.unwrap_err();
    assert_eq!(error.code, Some(UNAVAILABLE));
    assert!(
        error.message.starts_with(
            "clipboard.read is disabled by user setting: the clipboard may hold passwords and anything else you copied"
        ) && error.message.contains("clawmcp settings set NodeClipboardReadEnabled true"),
        "{}",
        error.message
    );
    assert!(!crate::settings::Settings::default().node_clipboard_read_enabled, "off unless the user turns it on");
    payload(call(&desk.capability, "clipboard.write", json!({"text": "still writable"})).await);
    assert_eq!(xclip_out(&desk.display, "UTF8_STRING", desk.dir.path()).unwrap(), b"still writable");

    std::fs::write(desk.dir.path().join("settings.json"), "{\"NodeClipboardReadEnabled\": true}").unwrap();
    assert!(read.is_listed(), "on: listed at once");
    assert_eq!(payload(call(&desk.capability, "clipboard.read", json!({})).await)["text"], "still writable");
}

#[tokio::test]
async fn a_display_that_does_not_answer_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let capability = ClipboardCapability::for_display(live_settings(dir.path(), true), ":4243".into(), DEFAULT_TIMEOUT);
    let error = call(&capability, "clipboard.read", json!({})).await.unwrap_err();
    assert!(error.message.starts_with("Clipboard read failed: cannot open the X display `:4243`"), "{}", error.message);
    let error = call(&capability, "clipboard.write", json!({"text": "x"})).await.unwrap_err();
    assert!(
        error.message.starts_with("Clipboard write failed: cannot open the X display `:4243`"),
        "{}",
        error.message
    );
}

// Wayland, without Xwayland: sway headless, and wl-clipboard's programs as the other program.

/// A compositor, the node's clipboard on it, and a directory for the test's files.
struct Seat {
    capability: ClipboardCapability,
    sway: Sway,
    dir: tempfile::TempDir,
}

fn seat() -> Seat {
    let dir = tempfile::tempdir().unwrap();
    let sway = sway();
    let settings = live_settings(dir.path(), true);
    let capability = ClipboardCapability::for_wayland(settings, sway.socket.clone(), DEFAULT_TIMEOUT);
    Seat { capability, sway, dir }
}

fn wl_paste(seat: &Seat, args: &[&str]) -> Result<Vec<u8>, String> {
    another_program_pastes(("wl-paste", "wl-clipboard"), args, ("WAYLAND_DISPLAY", &seat.sway.socket), seat.dir.path())
}

/// wl-copy serving `bytes` as `mime` (killed by PID when the guard drops); returns once the
/// compositor hands them out.
fn wl_copy_in(seat: &Seat, mime: &str, bytes: &[u8]) -> Spawned {
    let file = seat.dir.path().join(format!("wl-copy-in-{}", nonce()));
    std::fs::write(&file, bytes).unwrap();
    let copier = Spawned::start_with_stdin(
        "wl-copy",
        "wl-clipboard",
        Process::new("wl-copy").args(["--foreground", "--type", mime]).env("WAYLAND_DISPLAY", &seat.sway.socket),
        seat.dir.path(),
        Stdio::from(std::fs::File::open(&file).unwrap()),
    );
    let started = Instant::now();
    while wl_paste(seat, &["--no-newline", "--type", mime]).ok().as_deref() != Some(bytes) {
        assert!(started.elapsed() < STARTUP_DEADLINE, "wl-copy did not take the clipboard: {}", copier.stderr());
        std::thread::sleep(Duration::from_millis(20));
    }
    copier
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "))
}

#[tokio::test]
async fn wayland_what_the_node_writes_is_pasted_by_another_program() {
    let seat = seat();
    let empty = payload(call(&seat.capability, "clipboard.read", json!({"format": "auto"})).await);
    assert_eq!(empty["empty"], true, "{empty}");

    let text = format!("wayland {} héllo ✓ 😀", nonce());
    payload(call(&seat.capability, "clipboard.write", json!({"text": text})).await);
    for target in ["text/plain;charset=utf-8", "UTF8_STRING"] {
        let pasted = wl_paste(&seat, &["--no-newline", "--type", target]).unwrap();
        assert_eq!(pasted, text.as_bytes(), "{target}, after the call returned");
    }
    let first = seat.capability.backends.wayland.source_pid().await.expect("a wl-copy serves it");
    assert_eq!(payload(call(&seat.capability, "clipboard.read", json!({})).await)["text"], text.as_str());

    let pixels = random_pixels(19, 11, Layout::Rgba);
    let png = imaging::encode_png(&pixels).unwrap();
    payload(call(&seat.capability, "clipboard.write", json!({"image": {"data": STANDARD.encode(&png)}})).await);
    assert_eq!(wl_paste(&seat, &["--type", "image/png"]).unwrap(), png, "the very bytes written");
    let second = seat.capability.backends.wayland.source_pid().await.unwrap();
    assert!(second != first && !alive(first), "the previous wl-copy was replaced, not left running");
    let types = String::from_utf8(wl_paste(&seat, &["--list-types"]).unwrap()).unwrap();
    assert_eq!(types.trim(), "image/png");

    let Seat { capability, sway, dir } = seat;
    drop(capability);
    let started = Instant::now();
    while alive(second) {
        assert!(started.elapsed() < STARTUP_DEADLINE, "the node's wl-copy outlived the capability");
        std::thread::sleep(Duration::from_millis(10));
    }
    let env = ("WAYLAND_DISPLAY", sway.socket.as_str());
    let error = another_program_pastes(("wl-paste", "wl-clipboard"), &["--list-types"], env, dir.path()).unwrap_err();
    assert!(error.contains("No selection"), "released with the node: {error}");
}

#[tokio::test]
async fn wayland_what_another_program_copies_is_read_exactly() {
    let seat = seat();
    let text = format!("{} – Grüße, 東京, 😀\nsecond line", nonce());
    let copier = wl_copy_in(&seat, "text/plain;charset=utf-8", text.as_bytes());
    let read = payload(call(&seat.capability, "clipboard.read", json!({})).await);
    assert_eq!(read["text"], text.as_str());
    assert_eq!((read["bytes"].clone(), read["truncated"].clone()), (json!(text.len()), json!(false)));
    assert!(read["offered"].as_array().unwrap().contains(&json!("UTF8_STRING")), "{read}");
    drop(copier);

    let pixels = random_pixels(30, 20, Layout::Rgb);
    let _copier = wl_copy_in(&seat, "image/png", &imaging::encode_png(&pixels).unwrap());
    let output = call(&seat.capability, "clipboard.read", json!({"format": "auto"})).await.unwrap();
    assert_eq!(image_of(&output), pixels);
    let text_asked = payload(call(&seat.capability, "clipboard.read", json!({})).await);
    assert_eq!(text_asked["offered"], json!(["image/png"]));
    assert!(text_asked["message"].as_str().unwrap().starts_with("The clipboard holds no text"), "{text_asked}");
}
