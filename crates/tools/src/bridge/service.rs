//! [`ToolsBridge`]: the `McpService` behind `clawmcp tools`. Its tools are one `ToolSet`: the
//! local tools, `sessions_yield`, then each gateway tool as a tool that forwards its call
//! ([`forwarding_tool`]); lists and calls both go through it, with the allowlist and the
//! `--tools` filter applied to both `tools/list` and `tools/call` (a client can call a name it
//! was never shown, so filtering the list is no boundary).
//!
//! The gateway tool list starts as the snapshot catalog and is replaced once by the live one
//! when background discovery ends (bounded). `tools/list` waits for that (`list_ready`), within
//! the discovery budget, so a client's first list is normally the live one: `initialize` is
//! never delayed. Should a list have been answered from the snapshot (a slow gateway) and the
//! live catalog then differ, the session sends `notifications/tools/list_changed`, which is
//! why this server advertises `tools.listChanged`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use clawmcp_mcp::{CallContext, McpService, Tool, ToolResult, ToolSet};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};
use tokio::sync::watch;
use tracing::warn;

use super::catalog::GatewayCatalog;
use super::forward::{Forwarder, forwarding_tool};
use super::pending::PendingStore;
use super::settings::BridgeSettings;
use super::yielding::{self, SessionsYield};
use crate::{Arguments, BridgeTool, LocalTools};

/// The gateway tool list, which discovery may replace once.
#[derive(Debug)]
pub struct CatalogCell {
    catalog: Mutex<Arc<GatewayCatalog>>,
    settled: watch::Sender<bool>,
    /// A `tools/list` has been answered (from whichever catalog was current then).
    listed: AtomicBool,
}

impl CatalogCell {
    /// Starts with `initial` (the snapshot catalog), not yet settled.
    pub fn new(initial: GatewayCatalog) -> Self {
        CatalogCell {
            catalog: Mutex::new(Arc::new(initial)),
            settled: watch::Sender::new(false),
            listed: AtomicBool::new(false),
        }
    }

    /// Starts settled (no discovery will run).
    pub fn settled(catalog: GatewayCatalog) -> Self {
        let cell = CatalogCell::new(catalog);
        cell.settled.send_replace(true);
        cell
    }

    pub fn current(&self) -> Arc<GatewayCatalog> {
        lock(&self.catalog).clone()
    }

    /// The catalog for a `tools/list` answer. Marks the cell listed *before* reading, so a
    /// [`CatalogCell::settle`] racing with it either sees the mark or is already visible here.
    fn current_for_listing(&self) -> Arc<GatewayCatalog> {
        self.listed.store(true, Ordering::SeqCst);
        self.current()
    }

    /// Installs the discovered catalog (if any) and releases the waiters. Returns whether a
    /// client may hold a stale list: one was answered before and the tools it would now show
    /// differ (the session should send `notifications/tools/list_changed`).
    pub fn settle(&self, discovered: Option<GatewayCatalog>) -> bool {
        let mut changed = false;
        if let Some(catalog) = discovered {
            let mut current = lock(&self.catalog);
            changed = current.descriptors() != catalog.descriptors();
            *current = Arc::new(catalog);
        }
        self.settled.send_replace(true);
        changed && self.listed.load(Ordering::SeqCst)
    }

    pub fn is_settled(&self) -> bool {
        *self.settled.borrow()
    }

    /// Waits until settled or `limit` passed.
    pub async fn wait(&self, limit: Duration) {
        let mut settled = self.settled.subscribe();
        let _ = tokio::time::timeout(limit, settled.wait_for(|s| *s)).await;
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The tools this bridge implements itself, advertised whatever the gateway says: the local
/// tools in their upstream order, then `sessions_yield`.
pub fn builtin_tools() -> Vec<Tool> {
    let mut tools = crate::local_tools();
    tools.push(yielding::descriptor());
    tools
}

/// The `clawmcp tools` service.
pub struct ToolsBridge {
    settings: Arc<BridgeSettings>,
    local: LocalTools,
    forwarder: Forwarder,
    catalog: Arc<CatalogCell>,
    yielder: SessionsYield,
    waits: DiscoveryWaits,
    /// The tools this bridge runs itself: the local tools, `sessions_yield`, and any registered
    /// later ([`ToolsBridge::register`]).
    ours: ToolSet<Arguments>,
    /// Every tool for a catalog, as one [`ToolSet`]: ours, then the gateway's as forwarding
    /// tools, in catalog order. Rebuilt when discovery replaces the catalog or a tool is
    /// registered.
    tools: Mutex<Option<BuiltFor>>,
}

/// A [`ToolSet`] of every tool and the catalog it was built for.
type BuiltFor = (Arc<GatewayCatalog>, Arc<ToolSet<Arguments>>);

/// How long requests wait for discovery to settle.
#[derive(Debug, Clone, Copy)]
pub struct DiscoveryWaits {
    /// A `tools/list`: short, because a live list that comes later is announced with
    /// `notifications/tools/list_changed`.
    pub list: Duration,
    /// A gateway call: the whole discovery budget, because the name may be in the live list only.
    pub call: Duration,
}

impl ToolsBridge {
    pub fn new(
        settings: Arc<BridgeSettings>,
        local: LocalTools,
        forwarder: Forwarder,
        catalog: Arc<CatalogCell>,
        waits: DiscoveryWaits,
        poll_interval: Duration,
    ) -> Self {
        let store = PendingStore::new(&settings.workspace);
        let yielder = SessionsYield { forwarder: forwarder.clone(), store, poll_interval };
        let ours = ToolSet::new(local.tools().all().into_iter().chain([yielder.clone().tool()]));
        ToolsBridge { settings, local, forwarder, catalog, yielder, waits, ours, tools: Mutex::new(None) }
    }

    pub fn catalog(&self) -> &Arc<CatalogCell> {
        &self.catalog
    }

    pub fn local(&self) -> &LocalTools {
        &self.local
    }

    /// Adds tools of ours after the built-in ones (and before the gateway's): the next list
    /// shows them, `--tools` and the allowlist filter them, calls run them, as any other.
    pub fn register(&self, tools: impl IntoIterator<Item = BridgeTool>) {
        self.ours.register(tools);
        *lock(&self.tools) = None;
    }

    /// Every tool, allowlist and filter aside, for `catalog` (the current one).
    fn tools_for(&self, catalog: Arc<GatewayCatalog>) -> Arc<ToolSet<Arguments>> {
        let mut cached = lock(&self.tools);
        match &*cached {
            Some((built_for, tools)) if Arc::ptr_eq(built_for, &catalog) => tools.clone(),
            _ => {
                let store = &self.yielder.store;
                let gateway = catalog
                    .tools
                    .iter()
                    .map(|tool| forwarding_tool(tool.descriptor(), self.forwarder.clone(), store.clone()));
                let tools = Arc::new(ToolSet::new(self.ours.all().into_iter().chain(gateway)));
                *cached = Some((catalog, tools.clone()));
                tools
            }
        }
    }

    /// Every tool for the catalog known now.
    pub fn tools(&self) -> Arc<ToolSet<Arguments>> {
        self.tools_for(self.catalog.current())
    }

    /// The `--tools` patterns that match none of the tools the allowlist leaves, against the
    /// catalog known now (the live one once discovery settled).
    pub fn unmatched_tool_patterns(&self) -> Vec<String> {
        let tools = self.tools().all();
        let allowed = tools.iter().map(BridgeTool::name).filter(|name| self.settings.allowlist.allows(name));
        self.settings.tool_filter.unmatched(allowed).into_iter().map(str::to_owned).collect()
    }

    /// Logs [`ToolsBridge::unmatched_tool_patterns`]. A warning, not a refusal to start: the
    /// gateway's list is only known after the session started, and it changes with plugins.
    pub(super) fn warn_unmatched_tool_patterns(&self) {
        let unmatched = self.unmatched_tool_patterns();
        if !unmatched.is_empty() {
            let tools = self.tools().all();
            let available: Vec<&str> =
                tools.iter().map(BridgeTool::name).filter(|name| self.settings.allowlist.allows(name)).collect();
            warn!("--tools patterns match no tool: {}. Available: {}", unmatched.join(", "), available.join(", "));
        }
    }

    async fn call(&self, name: &str, arguments: Map<String, Value>, ctx: CallContext) -> ToolResult {
        if !self.settings.allowlist.allows(name) {
            return ToolResult::error(format!(
                "Tool is disabled by the server-side allowlist: {name}. OPENCLAW_MCP_ENABLED_TOOLS allows only: {}.",
                self.settings.allowlist.describe()
            ));
        }
        let filtered_out = !self.settings.tool_filter.allows(name);
        if !filtered_out && self.ours.find(name).is_none() {
            // A gateway tool may be in the live list only: wait for it (at most the budget).
            self.catalog.wait(self.waits.call).await;
        }
        let tools = self.tools();
        match tools.served(name, &self.settings.tool_filter) {
            Ok(tool) => tool.call_mcp(arguments, ctx).await,
            // A name outside --tools is refused as such, known or not.
            Err(_) if filtered_out => ToolResult::error(format!(
                "Tool {name} is not served: clawmcp tools was started with --tools `{}`, which does not match it. \
                 Restart it with a --tools list that includes {name} to use it.",
                self.settings.tool_filter.describe()
            )),
            Err(_) => {
                let all = tools.all();
                let hint = clawmcp_mcp::tool::did_you_mean(name, all.iter().map(BridgeTool::name))
                    .map(|close| format!(" Did you mean `{close}`?"))
                    .unwrap_or_default();
                let gateway = match &self.settings.gateway_off {
                    Some(why) => format!(" The gateway's tools are not served: {why}."),
                    None => String::new(),
                };
                ToolResult::error(format!(
                    "Unknown tool: {name}.{hint} It is not among the tools this server advertises (see tools/list): \
                     neither a local tool nor a gateway tool that the gateway runs over HTTP.{gateway}"
                ))
            }
        }
    }
}

impl McpService for ToolsBridge {
    fn list_ready(&self) -> BoxFuture<'_, ()> {
        self.catalog.wait(self.waits.list).boxed()
    }

    fn list_tools(&self) -> Vec<Tool> {
        let tools = self.tools_for(self.catalog.current_for_listing());
        let mut listed = tools.list(&self.settings.tool_filter);
        listed.retain(|tool| self.settings.allowlist.allows(&tool.name));
        listed
    }

    /// `listChanged`: a list answered from the snapshot is followed by `list_changed` when the
    /// live gateway list turns out different (see the module docs).
    fn capabilities(&self) -> Value {
        json!({"tools": {"listChanged": true}})
    }

    fn call_tool<'a>(
        &'a self,
        name: &'a str,
        arguments: Map<String, Value>,
        ctx: CallContext,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(self.call(name, arguments, ctx))
    }
}
