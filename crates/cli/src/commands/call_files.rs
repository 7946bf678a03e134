//! `clawmcp call file.fetch --output-file F` and `clawmcp call file.create --input-file F`: the
//! file's bytes over the node's file channel (docs/node-http.md §12), not base64 in one answer.
//!
//! Both open a channel, attach it to the `tools/call` and move the bytes beside the call with
//! the one client implementation of the protocol (`clawmcp_node::files::channel::client`). A
//! fetch is preflighted first (the size for the bar, and the file's binding, which the fetch
//! then insists on: a path swapped in between is refused by the node); its bytes land in a 0600
//! temp file beside the target and are moved into place only once their size and sha256 match
//! the node's (renamed over the target with `--force`, else linked: never clobbering a file that
//! appeared meanwhile). A create hashes the input first and sends `sizeBytes` and
//! `expectedSha256` with it, so the node checks the whole file before it creates the target.
//! A bar on stderr shows bytes, rate and ETA when stderr is a terminal. Ctrl-C cancels the call
//! on the node and closes the channel: the node stops, a `file.create` leaves no file, and the
//! temp file here is removed.
//!
//! A node without the channel (`openclaw/files/open` unknown) gets the unary `file.fetch`, as
//! before; `file.create` has no unary form, so it is refused with what to do.

use std::future::Future;
use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use clawmcp_mcp::RequestId;
use clawmcp_mcp::client::Answer;
use clawmcp_node::files::channel::client::{ChannelClient, ChannelRpc, RpcFailure, TransferError, fill, params_value};
use clawmcp_node::files::channel::{EXTENSION, MAX_TIMEOUT};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::client::{ClientError, NodeClient};
use crate::exit::UsageError;
use crate::output;

/// How long the transfer may still take once the call has answered: every frame of a finished
/// command is already queued, so this only bounds a node that stopped answering polls.
const DRAIN_AFTER_ANSWER: Duration = Duration::from_secs(30);
/// How long the call may still take to answer once the transfer failed: its answer says why
/// (the node's reason: a shutdown, a rotated token, a timeout) better than a failed poll does.
const ANSWER_AFTER_FAILURE: Duration = Duration::from_secs(5);

impl ChannelRpc for NodeClient {
    async fn request(&self, id: RequestId, method: &str, params: Value) -> Result<Value, RpcFailure> {
        RpcFailure::outcome(NodeClient::request(self, &id, method, Some(&params)).await)
    }

    /// A chunk's inputs pipelined on one connection of their own (`McpClient::request_pipelined`);
    /// one request (fetch's start and acks, an empty create's EOF) on a kept connection as any.
    async fn request_in_order<I>(&self, method: &'static str, requests: I) -> Result<Vec<Value>, RpcFailure>
    where
        I: Iterator<Item = (RequestId, String)> + Send,
    {
        let mut requests = requests.peekable();
        let Some(first) = requests.next() else { return Ok(Vec::new()) };
        if requests.peek().is_none() {
            let (id, params) = first;
            let params = params_value(&params)?;
            let single = RpcFailure::outcome(NodeClient::request(self, &id, method, Some(&params)).await)?;
            return Ok(vec![single]);
        }
        RpcFailure::outcomes(self.request_pipelined(method, std::iter::once(first).chain(requests)).await)
    }
}

/// What a fetch did.
pub enum Fetched {
    /// Done here: the exit status.
    Done(ExitCode),
    /// The node has no file channel: the caller fetches unary.
    NoChannel,
}

/// The JSON-RPC id of the `tools/call` a channel attaches to (the channel's own requests add a
/// suffix to it). Unique per process; the lease, not the id, is what is secret.
fn call_id() -> String {
    format!("clawmcp-call-{}", std::process::id())
}

fn channel_timeout(client: &NodeClient) -> Duration {
    client.timeout().min(MAX_TIMEOUT)
}

/// `file.fetch` of `arguments` into `output` over the channel.
pub async fn fetch(
    client: &NodeClient,
    arguments: Map<String, Value>,
    output: &Path,
    force: bool,
) -> anyhow::Result<Fetched> {
    if !force && std::fs::symlink_metadata(output).is_ok() {
        return Err(already_exists(output));
    }
    let request_id = call_id();
    let mut channel = match ChannelClient::open(client, "file.fetch", &request_id, channel_timeout(client)).await {
        Ok(channel) => channel,
        Err(failure) if failure.is_method_not_found() => return Ok(Fetched::NoChannel),
        Err(failure) => anyhow::bail!("could not open a file channel on the node: {failure}"),
    };
    let mut arguments = arguments;
    arguments.insert("transport".into(), json!("binary"));
    // The preflight: the size for the bar, and the binding the fetch must find again.
    let mut preflight_arguments = arguments.clone();
    preflight_arguments.insert("preflightOnly".into(), json!(true));
    let preflight_id = RequestId::string(&format!("{request_id}/preflight"));
    let declared = client.declaring_file_command("file.fetch");
    let preflight = declared
        .request(&preflight_id, "tools/call", Some(&json!({"name": "file.fetch", "arguments": preflight_arguments})))
        .await?;
    let Some(facts) = tool_json(&preflight) else {
        let _ = channel.close().await;
        return Ok(Fetched::Done(super::call::print_answer(preflight)));
    };
    if let Some(binding) = facts.get("binding").filter(|_| !arguments.contains_key("expectedBinding")) {
        arguments.insert("expectedBinding".into(), binding.clone());
    }
    let size = facts.get("size").and_then(Value::as_u64);

    let directory = match output.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let part = tempfile::Builder::new()
        .prefix(".clawmcp-fetch-")
        .suffix(".part")
        .tempfile_in(directory)
        .map_err(|e| anyhow::anyhow!("cannot write in `{}`: {e}", directory.display()))?;
    let bar = output::transfer_bar("fetching", size);
    let mut hasher = Sha256::new();
    let mut received = 0u64;
    let id = RequestId::string(&request_id);
    let params = call_params("file.fetch", Value::Object(arguments), channel.attachment());
    let outcome = {
        // Written and hashed after the chunk's ack went out, while the node reads the next; each
        // chunk starts on its way to the disk at once, so the fsync before the rename waits for little.
        let mut file = clawmcp_fs::Writeback::new(part.as_file());
        let sink = |chunk: Vec<u8>| {
            file.write_all(&chunk)?;
            hasher.update(&chunk);
            received += chunk.len() as u64;
            bar.set_position(received);
            Ok(())
        };
        let call = declared
            .request_with_progress(&id, "tools/call", Some(&params), |text| bar.suspend(|| output::progress(text)));
        beside(call, channel.receive_file(sink)).await
    };
    bar.finish_and_clear();
    let answer = match settle(client, &id, channel, outcome).await? {
        Settled::Answered(answer) => answer,
        Settled::Interrupted => return Ok(Fetched::Done(ExitCode::from(130))),
    };
    let Some(metadata) = tool_json(&answer) else { return Ok(Fetched::Done(super::call::print_answer(answer))) };
    let sha256 = hex(&hasher.finalize());
    let (sent_size, sent_sha) =
        (metadata.get("size").and_then(Value::as_u64), metadata.get("sha256").and_then(Value::as_str));
    if sent_size != Some(received) || !sent_sha.is_some_and(|sent| sent.eq_ignore_ascii_case(&sha256)) {
        anyhow::bail!(
            "the bytes received ({received}, sha256 {sha256}) are not what the node says it sent ({}, sha256 {}); \
             nothing was written",
            sent_size.map_or("?".into(), |s| s.to_string()),
            sent_sha.unwrap_or("?")
        );
    }
    part.as_file().sync_all().map_err(|e| anyhow::anyhow!("cannot write `{}`: {e}", output.display()))?;
    let placed = if force { part.persist(output).map(drop) } else { part.persist_noclobber(output).map(drop) };
    placed.map_err(|error| match error.error.kind() {
        std::io::ErrorKind::AlreadyExists => already_exists(output),
        _ => anyhow::anyhow!("cannot write `{}`: {}", output.display(), error.error),
    })?;
    let mime_type = metadata.get("mimeType").and_then(Value::as_str).map(|m| format!(" ({m})")).unwrap_or_default();
    let status = super::call::print_answer(answer);
    output::note(&format!(
        "wrote {received} bytes{mime_type} to {} over the file channel, sha256 checked",
        output.display()
    ));
    Ok(Fetched::Done(status))
}

/// `file.create` of `arguments` (its `path`, ...) with the bytes of `input`.
pub async fn create(client: &NodeClient, arguments: Map<String, Value>, input: &Path) -> anyhow::Result<ExitCode> {
    for derived in ["sizeBytes", "expectedSha256"] {
        if arguments.contains_key(derived) {
            return Err(UsageError(format!(
                "--params has `{derived}`, which --input-file sets from the file itself: drop it"
            ))
            .into());
        }
    }
    let (size, sha256) = measure(input)?;
    let request_id = call_id();
    let mut channel = match ChannelClient::open(client, "file.create", &request_id, channel_timeout(client)).await {
        Ok(channel) => channel,
        Err(failure) if failure.is_method_not_found() => {
            anyhow::bail!(
                "the node does not serve the file channel ({EXTENSION}), which file.create needs: update clawmcp \
                 node, or send the file with file.write"
            )
        }
        Err(failure) => anyhow::bail!("could not open a file channel on the node: {failure}"),
    };
    let mut arguments = arguments;
    arguments.insert("sizeBytes".into(), json!(size));
    arguments.insert("expectedSha256".into(), json!(sha256));
    let mut file = open_input(input)?;
    let bar = output::transfer_bar("sending", Some(size));
    let id = RequestId::string(&request_id);
    let params = call_params("file.create", Value::Object(arguments), channel.attachment());
    let declared = client.declaring_file_command("file.create");
    let outcome = {
        let source = |buffer: &mut [u8]| file.read(buffer);
        let call = declared
            .request_with_progress(&id, "tools/call", Some(&params), |text| bar.suspend(|| output::progress(text)));
        beside(call, channel.send_file(source, |sent| bar.set_position(sent))).await
    };
    bar.finish_and_clear();
    match settle(client, &id, channel, outcome).await? {
        Settled::Answered(answer) => {
            let status_of = tool_json(&answer).and_then(|m| m.get("status").and_then(Value::as_str).map(str::to_owned));
            let status = super::call::print_answer(answer);
            match status_of.as_deref() {
                Some("created") => output::note(&format!(
                    "sent {size} bytes from {} over the file channel, sha256 checked by the node",
                    input.display()
                )),
                Some("exists") => output::note(
                    "nothing was sent: the target already exists on the node, and file.create never replaces a file",
                ),
                _ => {}
            }
            Ok(status)
        }
        Settled::Interrupted => Ok(ExitCode::from(130)),
    }
}

/// The input's size and sha256, read once before anything is sent (the call must carry them).
///
/// A thread reads while this one hashes: copying a file out of the page cache costs about what
/// hashing it does, and nothing else runs yet, so the two overlap on two cores (a 50 MiB input
/// measured in 40 ms instead of 70). At most [`MEASURE_BUFFERS`] chunks of [`MEASURE_CHUNK`] are
/// in memory at once.
fn measure(input: &Path) -> anyhow::Result<(u64, String)> {
    let mut file = open_input(input)?;
    let (full, filled) = std::sync::mpsc::sync_channel::<std::io::Result<Vec<u8>>>(MEASURE_BUFFERS);
    let (empty, emptied) = std::sync::mpsc::sync_channel::<Vec<u8>>(MEASURE_BUFFERS);
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let hashed = std::thread::scope(|scope| {
        scope.spawn(move || {
            let mut buffer = vec![0u8; MEASURE_CHUNK];
            loop {
                buffer.resize(MEASURE_CHUNK, 0);
                let read = match fill(&mut |buffer: &mut [u8]| file.read(buffer), &mut buffer) {
                    Ok(read) => read,
                    Err(error) => return drop(full.send(Err(error))),
                };
                buffer.truncate(read);
                // Gone: the hasher stopped (it only stops at the end or on an error sent here).
                if read == 0 || full.send(Ok(buffer)).is_err() {
                    return;
                }
                buffer = emptied.recv().unwrap_or_default();
            }
        });
        // Owned here, so both ends close if hashing stops early and the reader is not left waiting.
        let (filled, empty) = (filled, empty);
        for _ in 1..MEASURE_BUFFERS {
            let _ = empty.send(Vec::with_capacity(MEASURE_CHUNK));
        }
        // Ends when the reader does: at the end of the file (it drops its sender) or an error.
        for chunk in filled {
            let chunk = chunk?;
            hasher.update(&chunk);
            size += chunk.len() as u64;
            let _ = empty.send(chunk);
        }
        Ok::<_, std::io::Error>(())
    });
    hashed.map_err(|error| UsageError(format!("cannot read `{}`: {error}", input.display())))?;
    Ok((size, hex(&hasher.finalize())))
}

/// How much [`measure`]'s reader reads at a time, and how many such chunks may be in memory.
const MEASURE_CHUNK: usize = 1024 * 1024;
const MEASURE_BUFFERS: usize = 3;

/// The input file: a regular file (a FIFO or a device would never end or never match its size).
fn open_input(input: &Path) -> anyhow::Result<std::fs::File> {
    clawmcp_fs::open_regular(input, clawmcp_fs::Symlinks::Follow)
        .map(|(file, _)| file)
        .map_err(|e| UsageError(format!("cannot read --input-file `{}`: {e}", input.display())).into())
}

fn call_params(name: &str, arguments: Value, (key, attachment): (&str, Value)) -> Value {
    json!({"name": name, "arguments": arguments, "_meta": {"progressToken": 1, key: attachment}})
}

/// How the call and the transfer beside it ended.
enum Outcome {
    Finished(Result<Answer, ClientError>),
    /// The transfer failed; the call's failure, if it answered with one soon after.
    TransferFailed(TransferError, Option<Answer>),
    Interrupted,
}

/// Runs the `tools/call` and the transfer together until both are done, the transfer fails
/// (the call then has [`ANSWER_AFTER_FAILURE`] to say why, and is dropped after, which the node
/// takes as a cancel), or Ctrl-C.
async fn beside(
    call: impl Future<Output = Result<Answer, ClientError>>,
    transfer: impl Future<Output = Result<impl Sized, TransferError>>,
) -> Outcome {
    tokio::pin!(call, transfer);
    let mut answer = None;
    let mut moved = false;
    loop {
        tokio::select! {
            answered = &mut call, if answer.is_none() => answer = Some(answered),
            result = &mut transfer, if !moved => match result {
                Ok(_) => moved = true,
                Err(error) => {
                    let answered = match answer {
                        Some(answered) => Some(answered),
                        None => tokio::time::timeout(ANSWER_AFTER_FAILURE, &mut call).await.ok(),
                    };
                    let failure = answered.and_then(Result::ok).filter(|answer| tool_json(answer).is_none());
                    return Outcome::TransferFailed(error, failure);
                }
            },
            () = tokio::time::sleep(DRAIN_AFTER_ANSWER), if answer.is_some() => {
                let error = TransferError::EndedEarly("the node finished sending its frames");
                return Outcome::TransferFailed(error, None);
            }
            _ = tokio::signal::ctrl_c() => return Outcome::Interrupted,
        }
        if moved && let Some(answer) = answer.take() {
            return Outcome::Finished(answer);
        }
    }
}

enum Settled {
    Answered(Answer),
    Interrupted,
}

/// Closes the channel whatever happened, cancels the call on Ctrl-C, and turns the outcome into
/// the call's answer or an error.
async fn settle<R: ChannelRpc>(
    client: &NodeClient,
    id: &RequestId,
    channel: ChannelClient<'_, R>,
    outcome: Outcome,
) -> anyhow::Result<Settled> {
    if matches!(outcome, Outcome::Interrupted) {
        super::call::cancel_on_node(client, id).await;
    }
    // A finished command's channel is already done; closing it only frees the lease sooner.
    let closed = channel.close().await;
    match outcome {
        Outcome::Finished(answer) => Ok(Settled::Answered(answer?)),
        // The node's own reason, printed as any tool failure is.
        Outcome::TransferFailed(_, Some(failure)) => Ok(Settled::Answered(failure)),
        Outcome::TransferFailed(error, None) => {
            Err(anyhow::anyhow!("the transfer failed: {error}; nothing was written"))
        }
        Outcome::Interrupted => {
            if let Err(error) = closed {
                output::error(&format!("could not close the file channel: {error}"));
            }
            Ok(Settled::Interrupted)
        }
    }
}

/// The JSON of a successful tool result (its first text block), `None` for a tool error or an
/// error answer.
fn tool_json(answer: &Answer) -> Option<Map<String, Value>> {
    let Answer::Result(result) = answer else { return None };
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    match serde_json::from_str(result.pointer("/content/0/text")?.as_str()?) {
        Ok(Value::Object(object)) => Some(object),
        _ => None,
    }
}

fn already_exists(output: &Path) -> anyhow::Error {
    UsageError(format!("`{}` already exists: pass --force to replace it", output.display())).into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size and sha256 of inputs at every edge of the reader's chunks and buffers, against
    /// the digest of the same bytes in one piece.
    #[test]
    fn measure_gives_the_size_and_sha256_of_inputs_of_any_length() {
        let dir = tempfile::tempdir().unwrap();
        let longest = (MEASURE_BUFFERS + 2) * MEASURE_CHUNK + 5;
        let bytes: Vec<u8> = (0..longest).map(|i| (i * 7 + i / 4093) as u8).collect();
        for length in [0, 1, MEASURE_CHUNK - 1, MEASURE_CHUNK, MEASURE_CHUNK + 1, 2 * MEASURE_CHUNK, longest] {
            let input = dir.path().join(format!("input-{length}"));
            std::fs::write(&input, &bytes[..length]).unwrap();
            let expected = (length as u64, hex(&Sha256::digest(&bytes[..length])));
            assert_eq!(measure(&input).unwrap(), expected, "{length} bytes");
        }
    }

    #[test]
    fn measure_refuses_what_is_not_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let error = measure(dir.path()).unwrap_err().to_string();
        assert!(error.contains("cannot read --input-file"), "{error}");
        let error = measure(&dir.path().join("absent")).unwrap_err().to_string();
        assert!(error.contains("cannot read --input-file"), "{error}");
    }
}
