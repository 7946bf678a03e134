//! `clawmcp call`: one MCP request to the running node, the result on stdout.
//!
//! Output follows the upstream `winnode` contract: a tool's JSON payload pretty-printed (or its
//! raw text), `tools/list` as the whole result; a tool error's text on stderr with exit 1. On
//! Ctrl-C the call is cancelled on the node (`notifications/cancelled`), so a long `system.run`
//! really stops. What the command says while it works (MCP progress messages: "waiting for
//! approval <id>: run `clawmcp approvals allow-once <id>`", "running for 10 s") goes to stderr
//! as it arrives.
//!
//! `call --stdio` is not one request but a whole MCP session relayed to the node: see
//! [`crate::stdio_relay`].

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clawmcp_mcp::RequestId;
use clawmcp_mcp::client::Answer;
use serde_json::{Map, Value, json};

use crate::args::CallArgs;
use crate::client::{ClientError, NodeClient, TokenSource};
use crate::commands::call_files::{self, Fetched};
use crate::commands::{client_runtime, node_client};
use crate::exit::UsageError;
use crate::output;

/// How long to wait for the node to confirm a cancellation before giving up on it.
const CANCEL_CONFIRM: Duration = Duration::from_secs(6);

pub fn run(args: CallArgs) -> anyhow::Result<ExitCode> {
    if args.stdio {
        return crate::stdio_relay::run(&args.endpoint);
    }
    let (client, source) = node_client(&args.endpoint)?;
    let (method, params) = match &args.command {
        Some(command) => {
            let arguments = parse_params(args.params.as_deref())?;
            // A progress token: the node then streams what the command says while it works
            // (a system.run waiting for approval says so at once, with the command that
            // approves it), and this prints it on stderr; stdout stays the result alone.
            ("tools/call", Some(json!({"name": command, "arguments": arguments, "_meta": {"progressToken": 1}})))
        }
        None => ("tools/list", None),
    };
    let runtime = client_runtime()?;
    let transfer = file_transfer(&args, params.as_ref())?;
    runtime.block_on(async {
        match transfer {
            Some(FileTransfer::Create { arguments, input }) => {
                return call_files::create(&client, arguments, input).await.map_err(|e| with_token_hint(e, &source));
            }
            Some(FileTransfer::Fetch { arguments, output }) => {
                match call_files::fetch(&client, arguments, output, args.force).await {
                    Ok(Fetched::Done(status)) => return Ok(status),
                    // An older node: the unary fetch below, bounded by its own 16 MiB.
                    Ok(Fetched::NoChannel) => {}
                    Err(error) => return Err(with_token_hint(error, &source)),
                }
            }
            None => {}
        }
        let id = RequestId::number(1);
        // A file command declares itself, as upstream's client does: the node then takes and
        // answers it under its file allowance (a 16 MiB file.write or file.fetch).
        // (Only its tools/call: the cancel below is another message, sent undeclared.)
        let call_client = match args.command.as_deref() {
            Some(command) if clawmcp_node::files::TRANSFER_COMMANDS.contains(&command) => {
                client.declaring_file_command(command)
            }
            _ => client.clone(),
        };
        let request = call_client.request_with_progress(&id, method, params.as_ref(), output::progress);
        tokio::pin!(request);
        let answer = tokio::select! {
            answer = &mut request => answer,
            _ = tokio::signal::ctrl_c() => {
                cancel_on_node(&client, &id).await;
                match tokio::time::timeout(CANCEL_CONFIRM, &mut request).await {
                    Ok(Ok(answer)) => { print_answer(answer); }
                    Ok(Err(e)) => output::error(&e.to_string()),
                    Err(_) => output::error("the node did not confirm the cancellation in time"),
                }
                return Ok(ExitCode::from(130));
            }
        };
        let answer = answer.map_err(|e| e.with_token_hint(&source))?;
        let written = match (&args.output_file, &answer) {
            (Some(path), Answer::Result(result)) if result.get("isError").and_then(Value::as_bool) != Some(true) => {
                Some(write_output_file(path, args.force, args.command.as_deref().unwrap_or_default(), result))
            }
            _ => None,
        };
        let status = print_answer(answer);
        match written {
            Some(Err(error)) => Err(error),
            Some(Ok(note)) => {
                output::note(&note);
                Ok(status)
            }
            None => Ok(status),
        }
    })
}

/// A call whose file goes over the node's file channel ([`call_files`]).
enum FileTransfer<'a> {
    /// `file.fetch --output-file`.
    Fetch { arguments: Map<String, Value>, output: &'a Path },
    /// `file.create --input-file`.
    Create { arguments: Map<String, Value>, input: &'a Path },
}

/// Which calls move a file over the channel; `--input-file` on any other command is refused.
fn file_transfer<'a>(args: &'a CallArgs, params: Option<&Value>) -> anyhow::Result<Option<FileTransfer<'a>>> {
    let arguments = || match params.and_then(|p| p.get("arguments")) {
        Some(Value::Object(arguments)) => arguments.clone(),
        _ => Map::new(),
    };
    Ok(match (args.command.as_deref(), args.output_file.as_deref(), args.input_file.as_deref()) {
        (Some("file.fetch"), Some(output), None) => Some(FileTransfer::Fetch { arguments: arguments(), output }),
        (Some("file.create"), None, Some(input)) => Some(FileTransfer::Create { arguments: arguments(), input }),
        (command, _, Some(_)) => {
            return Err(UsageError(format!(
                "--input-file sends the bytes of the file `file.create` creates; {} takes its arguments in --params",
                command.unwrap_or("this command")
            ))
            .into());
        }
        _ => None,
    })
}

/// The token hint of a refused token ([`ClientError::with_token_hint`]) on an error that may be one.
fn with_token_hint(error: anyhow::Error, source: &TokenSource) -> anyhow::Error {
    match error.downcast::<ClientError>() {
        Ok(refused) => refused.with_token_hint(source).into(),
        Err(other) => other,
    }
}

/// Writes the first binary block of `result` (an image, audio, or an embedded resource's blob)
/// to `path`: a new file unless `force` (then replaced atomically), checked against the sha256
/// the command's metadata names, if it names one. Returns what to tell the user.
fn write_output_file(path: &Path, force: bool, tool: &str, result: &Value) -> anyhow::Result<String> {
    use base64::Engine;
    use sha2::Digest;
    let blocks = result.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let binary = blocks.iter().find_map(|block| match block.get("type").and_then(Value::as_str) {
        Some("image" | "audio") => Some((block.get("data")?.as_str()?, block.get("mimeType").and_then(Value::as_str))),
        Some("resource") => {
            let resource = block.get("resource")?;
            Some((resource.get("blob")?.as_str()?, resource.get("mimeType").and_then(Value::as_str)))
        }
        _ => None,
    });
    let Some((encoded, mime_type)) = binary else {
        return Err(UsageError(format!(
            "{tool} returned no image, audio or file content to write to `{}` (its answer is only the text on \
             stdout); nothing was written",
            path.display()
        ))
        .into());
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| anyhow::anyhow!("the node sent content that is not valid base64 ({e}); nothing was written"))?;
    let metadata =
        result.pointer("/content/0/text").and_then(Value::as_str).and_then(|t| serde_json::from_str::<Value>(t).ok());
    let expected = metadata.as_ref().and_then(|m| m.get("sha256")).and_then(Value::as_str);
    if let Some(expected) = expected {
        let actual: String = sha2::Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
        if !actual.eq_ignore_ascii_case(expected) {
            anyhow::bail!(
                "the content's sha256 is {actual}, not the {expected} the node sent with it; nothing was written"
            );
        }
    }
    let created = match force {
        true => clawmcp_fs::write_atomic(path, &bytes, 0o600, || Ok(())).map(drop),
        false => write_new(path, &bytes),
    };
    created.map_err(|error| match error.kind() {
        std::io::ErrorKind::AlreadyExists => {
            anyhow::Error::from(UsageError(format!("`{}` already exists: pass --force to replace it", path.display())))
        }
        _ => anyhow::anyhow!("cannot write `{}`: {error}", path.display()),
    })?;
    let checked = if expected.is_some() { ", sha256 checked" } else { "" };
    Ok(format!(
        "wrote {} bytes{} to {}{checked}",
        bytes.len(),
        mime_type.map(|m| format!(" ({m})")).unwrap_or_default(),
        path.display()
    ))
}

/// A new file (`O_EXCL`: never an existing one, nor through a symlink), 0600, removed again if
/// writing it fails.
fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    file.write_all(bytes).and_then(|()| file.sync_all()).inspect_err(|_| {
        let _ = std::fs::remove_file(path);
    })
}

/// Parses `--params`: a JSON object, `@file`, or `@-` for stdin.
fn parse_params(params: Option<&str>) -> anyhow::Result<Value> {
    let Some(params) = params else { return Ok(json!({})) };
    let text = match params.strip_prefix('@') {
        Some("-") => std::io::read_to_string(std::io::stdin()).context("reading --params from stdin")?,
        Some(path) => {
            std::fs::read_to_string(path).map_err(|e| UsageError(format!("cannot read --params file `{path}`: {e}")))?
        }
        None => params.to_string(),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(UsageError("--params must be a JSON object, e.g. '{\"bins\":[\"sh\"]}'".into()).into()),
        Err(e) => Err(UsageError(format!("--params is not valid JSON: {e}")).into()),
    }
}

/// Prints an answer the way `winnode` does and returns the exit status.
pub(super) fn print_answer(answer: Answer) -> ExitCode {
    match answer {
        // "JSON-RPC error <code>: <message>", as `winnode` prints it.
        Answer::Error(error) => {
            output::error(&error.to_string());
            ExitCode::FAILURE
        }
        Answer::Result(result) => {
            let first_text = result.pointer("/content/0/text").and_then(Value::as_str);
            if result.get("isError").and_then(Value::as_bool) == Some(true) {
                output::error(first_text.unwrap_or("tool execution failed"));
                return ExitCode::FAILURE;
            }
            let printed = match first_text {
                Some(text) => match serde_json::from_str::<Value>(text) {
                    Ok(payload) => pretty(&payload),
                    Err(_) => text.to_string(),
                },
                None => pretty(&result),
            };
            output::data(&printed);
            ExitCode::SUCCESS
        }
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// Ctrl-C: ask the node to cancel our request, so its work stops too.
pub(super) async fn cancel_on_node(client: &NodeClient, id: &RequestId) {
    output::note("interrupted: cancelling the call on the node");
    if let Err(e) = client.cancel(id, "interrupted by the user (Ctrl-C)").await {
        output::error(&format!("could not cancel the call: {e}"));
    }
}

#[cfg(test)]
mod tests {
    use clawmcp_mcp::client::ErrorObject;

    use super::*;

    #[test]
    fn params_must_be_a_json_object() {
        assert_eq!(parse_params(None).unwrap(), json!({}));
        assert_eq!(parse_params(Some(r#"{"a":1}"#)).unwrap(), json!({"a":1}));
        for bad in ["[1]", "1", "nope", "{"] {
            let error = parse_params(Some(bad)).unwrap_err();
            assert!(error.downcast_ref::<UsageError>().is_some(), "{bad}");
        }
    }

    #[test]
    fn output_file_takes_the_first_binary_block_and_refuses_a_digest_mismatch() {
        let dir = tempfile::tempdir().unwrap();
        let png = dir.path().join("shot.png");
        let image = json!({"content": [
            {"type": "text", "text": "{\"width\": 1}"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"}
        ]});
        let note = write_output_file(&png, false, "screen.snapshot", &image).unwrap();
        assert_eq!(std::fs::read(&png).unwrap(), b"\x89PNG\r\n\x1a\n", "the first binary block");
        assert_eq!(note, format!("wrote 8 bytes (image/png) to {}", png.display()));

        let fetched = dir.path().join("file.bin");
        let wrong = json!({"content": [
            {"type": "text", "text": "{\"sha256\": \"00\"}"},
            {"type": "resource", "resource": {"uri": "file:///x", "blob": "aGk=", "mimeType": "text/plain"}}
        ]});
        let error = write_output_file(&fetched, false, "file.fetch", &wrong).unwrap_err().to_string();
        assert!(error.contains(", not the 00 the node sent with it; nothing was written"), "{error}");
        assert!(!fetched.exists());
        let garbled = json!({"content": [{"type": "audio", "data": "%%%", "mimeType": "audio/wav"}]});
        assert!(
            write_output_file(&fetched, false, "x", &garbled).unwrap_err().to_string().contains("not valid base64")
        );
        assert!(!fetched.exists());
    }

    #[test]
    fn params_can_come_from_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.json");
        std::fs::write(&file, r#"{"bins":["sh"]}"#).unwrap();
        assert_eq!(parse_params(Some(&format!("@{}", file.display()))).unwrap(), json!({"bins":["sh"]}));
        let missing = parse_params(Some("@/no/such/file")).unwrap_err();
        assert!(missing.to_string().contains("/no/such/file"));
    }

    #[test]
    fn answers_map_to_exit_statuses() {
        let ok = Answer::Result(json!({"content":[{"type":"text","text":"{\"a\":1}"}],"isError":false}));
        assert_eq!(print_answer(ok), ExitCode::SUCCESS);
        let tool_error = Answer::Result(json!({"content":[{"type":"text","text":"boom"}],"isError":true}));
        assert_eq!(print_answer(tool_error), ExitCode::FAILURE);
        let rpc_error = Answer::Error(ErrorObject { code: -32601, message: "Method not found: x".into(), data: None });
        assert_eq!(print_answer(rpc_error), ExitCode::FAILURE);
    }
}
