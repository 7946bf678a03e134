//! `clawmcp approvals`: the terminal side of exec approvals on a headless host. When the policy
//! says "ask", a `system.run` waits (bounded) for a decision made here.
//!
//! These go through local JSON-RPC methods of the node that are deliberately not MCP tools, so
//! an agent connected to the node cannot approve its own commands.

use std::collections::HashSet;
use std::process::ExitCode;
use std::time::Duration;

use clawmcp_mcp::RequestId;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use crate::args::{ApprovalAction, ApprovalsArgs};
use clawmcp_mcp::client::{Answer, ErrorObject};

use crate::client::{NodeClient, TokenSource};
use crate::commands::{approvals_policy, client_runtime, data_dir, node_client};
use crate::output;

use clawmcp_node::approvals::{LIST_METHOD as LIST, RESOLVE_METHOD as RESOLVE};

/// How often `watch` asks the node for new requests.
const WATCH_INTERVAL: Duration = Duration::from_millis(500);

pub fn run(args: ApprovalsArgs) -> anyhow::Result<ExitCode> {
    let action = args.action.unwrap_or(ApprovalAction::List);
    // The policy file is edited here, not through the node (see `approvals_policy`).
    if let Some(outcome) = approvals_policy::run(&data_dir(&args.endpoint.data_dir)?, &action) {
        return outcome;
    }
    let (client, source) = node_client(&args.endpoint)?;
    let runtime = client_runtime()?;
    runtime.block_on(async {
        match action {
            ApprovalAction::List => {
                let pending = list(&client, &source).await?;
                if pending.is_empty() {
                    output::note("no pending approvals");
                }
                for request in &pending {
                    output::data(&describe(request));
                }
                Ok(ExitCode::SUCCESS)
            }
            ApprovalAction::AllowOnce { id } => resolve(&client, &source, &id, "allow-once").await,
            ApprovalAction::AllowAlways { id } => resolve(&client, &source, &id, "allow-always").await,
            ApprovalAction::Deny { id } => resolve(&client, &source, &id, "deny").await,
            ApprovalAction::Watch => watch(&client, &source).await,
            ApprovalAction::Policy { .. }
            | ApprovalAction::Allow { .. }
            | ApprovalAction::Remove { .. }
            | ApprovalAction::SetDefault { .. } => unreachable!("policy actions are handled above"),
        }
    })
}

async fn call(client: &NodeClient, source: &TokenSource, method: &str, params: Value) -> anyhow::Result<Value> {
    match client.request(&RequestId::number(1), method, Some(&params)).await.map_err(|e| e.with_token_hint(source))? {
        Answer::Result(result) => Ok(result),
        Answer::Error(ErrorObject { code: -32601, .. }) => {
            anyhow::bail!("the server at {} does not serve exec approvals (is it a clawmcp node?)", client.endpoint())
        }
        Answer::Error(ErrorObject { message, .. }) => anyhow::bail!("{message}"),
    }
}

pub async fn list(client: &NodeClient, source: &TokenSource) -> anyhow::Result<Vec<Value>> {
    let result = call(client, source, LIST, json!({})).await?;
    Ok(result.get("pending").and_then(Value::as_array).cloned().unwrap_or_default())
}

async fn resolve(client: &NodeClient, source: &TokenSource, id: &str, decision: &str) -> anyhow::Result<ExitCode> {
    call(client, source, RESOLVE, json!({"id": id, "decision": decision})).await?;
    output::note(&format!("{id}: {decision}"));
    Ok(ExitCode::SUCCESS)
}

/// One line per request: id, agent, executable, working directory, command.
fn describe(request: &Value) -> String {
    let text = |key: &str| request.get(key).and_then(Value::as_str).unwrap_or("-").to_string();
    format!(
        "{}  agent={}  exe={}  cwd={}  command: {}",
        text("id"),
        text("agentId"),
        text("resolvedExecutable"),
        text("cwd"),
        text("command")
    )
}

/// Asks about each new request on the terminal until stdin closes (Ctrl-D), which ends the
/// watch at once even while nothing is pending.
async fn watch(client: &NodeClient, source: &TokenSource) -> anyhow::Result<ExitCode> {
    output::note("watching for exec approval requests (Ctrl-D to stop)");
    let mut asked = HashSet::new();
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    loop {
        for request in list(client, source).await? {
            let Some(id) = request.get("id").and_then(Value::as_str).map(String::from) else { continue };
            if !asked.insert(id.clone()) {
                continue;
            }
            output::note(&format!("\n{}\nallow [o]nce, [a]lways, [d]eny, or [s]kip? ", describe(&request)));
            let Some(answer) = stdin.next_line().await? else { return Ok(ExitCode::SUCCESS) };
            let decision = match answer.trim() {
                "o" | "once" => "allow-once",
                "a" | "always" => "allow-always",
                "d" | "deny" => "deny",
                _ => continue,
            };
            if let Err(e) = resolve(client, source, &id, decision).await {
                output::error(&format!("{e:#}"));
            }
        }
        // Between polls, a line typed with nothing pending is ignored; end of input stops.
        tokio::select! {
            line = stdin.next_line() => if line?.is_none() { return Ok(ExitCode::SUCCESS) },
            _ = tokio::time::sleep(WATCH_INTERVAL) => {}
        }
    }
}
