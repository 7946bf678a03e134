//! `canvas.a2ui.*`: A2UI v0.8 surfaces rendered by OpenClaw's own A2UI renderer, the
//! `openclaw-a2ui-host` element of the bundle the gateway's canvas host serves
//! (`dist/canvas-host/a2ui/a2ui.bundle.js` in the `openclaw` npm package: Google's A2UI Lit
//! renderer and its message processor, built by OpenClaw). We host it, we do not reimplement it:
//! the page is the bundle inlined in a `data:` document (an opaque origin, like `html`), and
//! messages reach it through the element's own `applyMessages`/`reset`.
//!
//! Where the bundle is found: [`bundle_candidates`]. Without it the `canvas.a2ui.*` commands are
//! not listed and `canvas.caps` says `a2ui.supported: false`; every other canvas command works.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::availability::MissingBackend;

/// The renderer's file name in the `openclaw` package and in our own data directory.
pub const BUNDLE_NAME: &str = "a2ui.bundle.js";
/// Upstream's limits on one push: bytes of UTF-8 and non-blank lines.
pub const MAX_JSONL_BYTES: usize = 4 * 1024 * 1024;
pub const MAX_JSONL_LINES: usize = 4096;
/// The most of a bundle we read (it is about 400 KB; the page travels as a `data:` URL, which
/// Chromium caps at 2 MB).
const MAX_BUNDLE_BYTES: u64 = 1400 * 1024;

/// Where the renderer may be, first found wins: our own data directory (where a user copies the
/// bundle), then the `openclaw` package of a global npm install (`npm install -g openclaw`, the
/// gateway itself) under the usual global roots.
pub fn bundle_candidates() -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| home.as_ref().map(|home| home.join(".local/share")));
    let in_package = Path::new("openclaw/dist/canvas-host/a2ui").join(BUNDLE_NAME);
    let mut candidates = Vec::new();
    if let Some(data) = data {
        candidates.push(data.join("clawmcp/a2ui").join(BUNDLE_NAME));
    }
    for root in ["/usr/local/lib/node_modules", "/usr/lib/node_modules"] {
        candidates.push(Path::new(root).join(&in_package));
    }
    if let Some(home) = home {
        candidates.push(home.join(".npm-global/lib/node_modules").join(&in_package));
    }
    candidates
}

/// The first candidate that is a file, or what to do.
pub fn find_bundle(candidates: &[PathBuf]) -> Result<PathBuf, MissingBackend> {
    candidates.iter().find(|path| path.is_file()).cloned().ok_or_else(|| {
        MissingBackend::new(
            "the A2UI renderer (OpenClaw's a2ui.bundle.js) is not installed",
            format!(
                "install the gateway's npm package (npm install -g openclaw), or copy its \
                 dist/canvas-host/a2ui/{BUNDLE_NAME} to {}",
                candidates.first().map_or_else(|| "~/.local/share/clawmcp/a2ui/".into(), |p| p.display().to_string())
            ),
        )
    })
}

/// The host page: the renderer's element and the bundle, inlined, after the board bridge
/// ([`bridge_script`]) through `binding`.
pub fn host_page(bundle: &Path, binding: &str, token: &str) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(bundle).map_err(|error| format!("cannot read {}: {error}", bundle.display()))?;
    let mut script = String::new();
    file.take(MAX_BUNDLE_BYTES + 1)
        .read_to_string(&mut script)
        .map_err(|error| format!("cannot read {}: {error}", bundle.display()))?;
    if script.len() as u64 > MAX_BUNDLE_BYTES {
        return Err(format!("{} is larger than the {MAX_BUNDLE_BYTES} bytes a renderer may be", bundle.display()));
    }
    // Inside a <script> element the only sequence that ends it early is "</script"; in a
    // JavaScript string, regex or comment "<\/script" means the same.
    let script = script.replace("</script", "<\\/script");
    let bridge = bridge_script(binding, token);
    Ok(format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Canvas</title></head>\
         <body style=\"margin:0\"><openclaw-a2ui-host></openclaw-a2ui-host>\
         <script>{bridge}</script><script type=\"module\">{script}</script></body></html>"
    ))
}

/// The board bridge an A2UI renderer hands a user's action to (`globalThis.openclaw.state.emit`):
/// it passes the action to the node through `binding` and settles once the node says how sending
/// it went (the `openclaw:a2ui-action-status` event, which the renderer also shows).
///
/// Each call carries `token`, new for each document the node bridges ([`new_bridge_token`]):
/// `{"bridge": token, "event": event}`. The binding itself reaches every document of the page
/// (CDP adds it to each), and execution context ids, which tell documents apart, are numbered per
/// renderer process, so a page of another origin in a fresh process can reuse the bridged
/// document's id; only the document the node gave the token can send what the node accepts.
pub fn bridge_script(binding: &str, token: &str) -> String {
    let binding = Value::from(binding);
    let token = Value::from(token);
    format!(
        "(() => {{ const send = globalThis[{binding}]; const bridge = {token}; \
           globalThis.openclaw = {{ state: {{ emit(event) {{ \
             const id = event?.action?.id; \
             if (typeof id !== 'string' || typeof send !== 'function') \
               return Promise.reject(new Error('the node has no action bridge here')); \
             return new Promise((resolve, reject) => {{ \
               const settle = (status) => {{ const detail = status?.detail; if (!detail || detail.id !== id) return; \
                 globalThis.removeEventListener('{ACTION_STATUS}', settle); \
                 detail.ok ? resolve() : reject(new Error(detail.error || 'send failed')); }}; \
               globalThis.addEventListener('{ACTION_STATUS}', settle); \
               send(JSON.stringify({{ bridge, event }})); }}); }} }} }}; }})(); true"
    )
}

/// A fresh bridge token: 128 random bits, hex.
pub fn new_bridge_token() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|error| format!("no randomness for the action bridge: {error}"))?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// The bytes the bridge's envelope adds to an event (`{"bridge":"<32 hex>","event":...}`): the
/// tests size calls at the binding's bound with it.
#[cfg(test)]
pub const BRIDGE_ENVELOPE_BYTES: usize = r#"{"bridge":"","event":}"#.len() + 32;

/// The event inside a bridged call's `payload`, when it carries `token`; `None` for anything
/// else (no envelope, another document's token).
pub fn unwrap_bridged(payload: &str, token: &str) -> Option<Value> {
    let Ok(Value::Object(mut envelope)) = serde_json::from_str::<Value>(payload) else { return None };
    let carried = envelope.get("bridge").and_then(Value::as_str)?;
    if !constant_time_eq::constant_time_eq(carried.as_bytes(), token.as_bytes()) {
        return None;
    }
    envelope.remove("event")
}

/// The event the page hears how sending an action went (`{id, ok, error}`), as upstream's nodes
/// dispatch it; the renderer shows a failure as a toast.
pub const ACTION_STATUS: &str = "openclaw:a2ui-action-status";

/// The script that tells the page how sending action `id` went.
pub fn action_status_script(id: &str, outcome: &Result<(), String>) -> String {
    let detail = match outcome {
        Ok(()) => json!({"id": id, "ok": true, "error": ""}),
        Err(error) => json!({"id": id, "ok": false, "error": error}),
    };
    format!("window.dispatchEvent(new CustomEvent('{ACTION_STATUS}', {{ detail: {detail} }})); true")
}

/// A user's action as the renderer emits it (`{eventType: "a2ui.action", action: {id, name,
/// surfaceId, sourceComponentId, context}}`).
#[derive(Debug, Clone, PartialEq)]
pub struct Action {
    pub id: String,
    pub name: String,
    pub surface: String,
    pub component: String,
    /// The action's resolved context (an object), if it has one.
    pub context: Option<Value>,
}

impl Action {
    /// The action in a renderer's event (what its bridge passed the node, unwrapped by
    /// [`unwrap_bridged`]), or why it is not one.
    pub fn from_event(event: &Value) -> Result<Action, String> {
        if event.get("eventType").and_then(Value::as_str) != Some("a2ui.action") {
            return Err("not an a2ui.action event".into());
        }
        let action = event.get("action").filter(|action| action.is_object()).ok_or("no action object")?;
        let text = |key: &str| {
            action.get(key).and_then(Value::as_str).map(str::trim).filter(|text| !text.is_empty()).map(str::to_owned)
        };
        Ok(Action {
            id: text("id").ok_or("the action has no id")?,
            name: text("name").or_else(|| text("action")).ok_or("the action has no name")?,
            surface: text("surfaceId").unwrap_or_else(|| "main".into()),
            component: text("sourceComponentId").unwrap_or_else(|| "-".into()),
            context: action.get("context").filter(|context| context.is_object()).cloned(),
        })
    }

    /// The message the gateway's agent gets, upstream's one-line shape:
    /// `CANVAS_A2UI action=<name> session=<key> surface=<id> component=<id> host=<host>
    /// instance=<node> default=update_canvas ctx=<json>`. Every tag is sanitised (ASCII letters,
    /// digits and `_-.:`; anything else `_`), and the context, the only part a surface's author
    /// controls, comes last, after the `default=` sentinel, so it cannot add a tag of its own.
    pub fn agent_message(&self, session: &str, host: &str, instance: &str) -> String {
        let mut message = format!(
            "CANVAS_A2UI action={} session={} surface={} component={} host={} instance={} default=update_canvas",
            tag(&self.name),
            tag(session),
            tag(&self.surface),
            tag(&self.component),
            tag(host),
            tag(instance)
        );
        if let Some(context) = &self.context {
            message.push_str(" ctx=");
            message.push_str(&context.to_string());
        }
        message
    }
}

/// The longest `agent.request` message the gateway takes, in UTF-16 units (JavaScript's string
/// length); it drops a longer one without a word, so the node refuses it first.
pub const MAX_AGENT_MESSAGE: usize = 20_000;

impl Action {
    /// The `agent.request` payload for the gateway (as upstream's Android node sends it): the
    /// message for `session`'s agent, no delivery to a channel, the action's id as the key. No
    /// `thinking` level: the session's own applies (a level the model lacks fails the turn).
    pub fn agent_request(&self, session: &str, host: &str, instance: &str) -> Result<Value, String> {
        let message = self.agent_message(session, host, instance);
        let length = message.encode_utf16().count();
        if length > MAX_AGENT_MESSAGE {
            return Err(format!(
                "the action's message is {length} characters, more than the {MAX_AGENT_MESSAGE} the gateway takes \
                 (its context is too large)"
            ));
        }
        Ok(json!({"message": message, "sessionKey": session, "deliver": false, "key": self.id}))
    }
}

/// A tag value as upstream sanitises it: spaces become `_`, anything but ASCII letters, digits
/// and `_-.:` becomes `_`; an empty value is `-`.
fn tag(value: &str) -> String {
    let value = value.trim();
    if value.is_empty() {
        return "-".into();
    }
    value.chars().map(|c| if c.is_ascii_alphanumeric() || "_-.:".contains(c) { c } else { '_' }).collect()
}

/// The messages of `jsonl`: one JSON object a non-blank line, within upstream's limits.
pub fn parse_jsonl(jsonl: &str) -> Result<Vec<Value>, String> {
    if jsonl.len() > MAX_JSONL_BYTES {
        return Err(format!("jsonl is {} bytes, more than the {MAX_JSONL_BYTES} one push takes", jsonl.len()));
    }
    let lines: Vec<(usize, &str)> = jsonl
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(at, line)| (at + 1, line))
        .collect();
    if lines.len() > MAX_JSONL_LINES {
        return Err(format!("jsonl has {} lines, more than the {MAX_JSONL_LINES} one push takes", lines.len()));
    }
    if lines.is_empty() {
        return Err("jsonl has no messages: give one A2UI v0.8 message (a JSON object) a line".into());
    }
    lines
        .into_iter()
        .map(|(number, line)| match serde_json::from_str::<Value>(line) {
            Ok(message @ Value::Object(_)) => Ok(message),
            Ok(_) => Err(format!("jsonl line {number} is not a JSON object (an A2UI message)")),
            Err(error) => Err(format!("jsonl line {number} is not JSON: {error}")),
        })
        .collect()
}

/// `jsonlPath`'s text: a file inside the temp directory (after resolving links), at most
/// [`MAX_JSONL_BYTES`].
pub fn read_jsonl_path(path: &str, temp: &Path) -> Result<String, String> {
    use std::io::Read;
    let temp = temp.canonicalize().map_err(|error| format!("cannot resolve the temp directory: {error}"))?;
    let resolved =
        Path::new(path).canonicalize().map_err(|error| format!("jsonlPath {path} cannot be opened: {error}"))?;
    if !resolved.starts_with(&temp) {
        return Err(format!(
            "jsonlPath must be inside the temp directory {} (it resolves to {})",
            temp.display(),
            resolved.display()
        ));
    }
    let file = std::fs::File::open(&resolved).map_err(|error| format!("jsonlPath {path} cannot be opened: {error}"))?;
    if !file.metadata().is_ok_and(|meta| meta.is_file()) {
        return Err(format!("jsonlPath {path} is not a file"));
    }
    let mut text = String::new();
    file.take(MAX_JSONL_BYTES as u64 + 1)
        .read_to_string(&mut text)
        .map_err(|error| format!("jsonlPath {path} is not UTF-8 text: {error}"))?;
    if text.len() > MAX_JSONL_BYTES {
        return Err(format!("jsonlPath {path} is more than the {MAX_JSONL_BYTES} bytes one push takes"));
    }
    Ok(text)
}

/// Waits for the renderer's element (the module runs after the page's load event may have fired).
const HOST: &str = "await customElements.whenDefined('openclaw-a2ui-host'); \
                    const host = document.querySelector('openclaw-a2ui-host'); \
                    if (!host) throw new Error('the A2UI host element is missing');";

/// The script that applies `messages` and answers the renderer's own `{ok, surfaces}`.
pub fn push_script(messages: &[Value]) -> String {
    let messages = Value::from(messages.to_vec());
    format!("(async () => {{ {HOST} return host.applyMessages({messages}); }})()")
}

/// The script that clears every surface.
pub fn reset_script() -> String {
    format!("(async () => {{ {HOST} return host.reset(); }})()")
}

/// The script that answers the current surfaces as the renderer holds them: for each, its id,
/// root component, components (as pushed, by id) and data model (maps as objects).
pub fn dump_script() -> String {
    format!(
        "(async () => {{ {HOST} \
         const plain = (value) => JSON.parse(JSON.stringify(value ?? null, (key, v) => \
           v instanceof Map ? Object.fromEntries(v) : v instanceof Set ? Array.from(v) : v)); \
         return {{ surfaces: host.surfaces.map(([surfaceId, surface]) => ({{ surfaceId, \
           root: surface.rootComponentId ?? null, \
           components: Array.from(surface.components?.values?.() ?? []).map(plain), \
           dataModel: plain(surface.dataModel), styles: plain(surface.styles) }})) }}; }})()"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_call_carrying_the_documents_bridge_token_is_unwrapped() {
        let token = new_bridge_token().unwrap();
        assert_eq!(token.len(), 32);
        assert_ne!(token, new_bridge_token().unwrap(), "a token per bridged document");
        let event = json!({"eventType": "a2ui.action", "action": {"id": "a1", "name": "go"}});
        // What the bridge's `JSON.stringify({ bridge, event })` sends, byte for byte.
        let payload = json!({"bridge": token, "event": event}).to_string();
        assert_eq!(payload.len(), event.to_string().len() + BRIDGE_ENVELOPE_BYTES);
        assert_eq!(unwrap_bridged(&payload, &token), Some(event.clone()));
        // Another document's token, none, no envelope, not JSON: refused.
        let other = new_bridge_token().unwrap();
        assert_eq!(unwrap_bridged(&payload, &other), None);
        assert_eq!(unwrap_bridged(&json!({"event": event}).to_string(), &token), None);
        assert_eq!(unwrap_bridged(&event.to_string(), &token), None);
        assert_eq!(unwrap_bridged("not json", &token), None);
        assert!(bridge_script("__b", &token).contains(&format!("const bridge = \"{token}\"")));
    }

    #[test]
    fn an_action_becomes_upstreams_one_line_message_with_its_context_last() {
        let payload = json!({"eventType": "a2ui.action", "action": {"id": "a1", "name": "Get Weather",
            "surfaceId": "main", "sourceComponentId": "btnWeather", "context": {"city": "Vienna"}}});
        let action = Action::from_event(&payload).unwrap();
        assert_eq!(
            action.agent_message("main", "Peter’s iPad", "ipad16,6"),
            "CANVAS_A2UI action=Get_Weather session=main surface=main component=btnWeather host=Peter_s_iPad \
             instance=ipad16_6 default=update_canvas ctx={\"city\":\"Vienna\"}"
        );
        // Without a context, surface or component: upstream's defaults.
        let bare = Action::from_event(&json!({"eventType": "a2ui.action", "action": {"id": "a2", "name": " go "}}));
        assert_eq!(
            bare.unwrap().agent_message("main", "", "n"),
            "CANVAS_A2UI action=go session=main surface=main component=- host=- instance=n default=update_canvas"
        );
    }

    #[test]
    fn the_message_may_be_as_long_as_the_gateway_takes_and_no_longer() {
        // A context of é (one UTF-16 unit, two bytes) sized so the message is exactly the bound.
        let action = |fill: usize| Action {
            id: "a1".into(),
            name: "n".into(),
            surface: "main".into(),
            component: "-".into(),
            context: Some(json!({"v": "é".repeat(fill)})),
        };
        let base = action(0).agent_message("main", "h", "i").encode_utf16().count();
        let at_bound = action(MAX_AGENT_MESSAGE - base).agent_request("main", "h", "i").unwrap();
        assert_eq!(at_bound["message"].as_str().unwrap().encode_utf16().count(), MAX_AGENT_MESSAGE);
        assert_eq!(at_bound["key"], "a1");
        let over = action(MAX_AGENT_MESSAGE - base + 1).agent_request("main", "h", "i").unwrap_err();
        assert!(over.contains("20001 characters, more than the 20000"), "{over}");
    }

    #[test]
    fn what_is_not_an_action_is_refused_with_the_reason() {
        for (payload, why) in [
            (r#"["not", "an", "object"]"#, "not an a2ui.action"),
            (r#"{"eventType":"other","action":{"id":"a","name":"n"}}"#, "not an a2ui.action"),
            (r#"{"eventType":"a2ui.action"}"#, "no action object"),
            (r#"{"eventType":"a2ui.action","action":{"name":"n"}}"#, "no id"),
            (r#"{"eventType":"a2ui.action","action":{"id":"a","name":"  "}}"#, "no name"),
        ] {
            let error = Action::from_event(&serde_json::from_str(payload).unwrap()).unwrap_err();
            assert!(error.contains(why), "{payload}: {error}");
        }
    }

    #[test]
    fn the_status_script_carries_the_outcome_as_json() {
        let script = action_status_script("a'1", &Err("no \"gateway\"".into()));
        assert!(script.contains(r#"{ detail: {"id":"a'1","ok":false,"error":"no \"gateway\""} }"#), "{script}");
        assert!(script.starts_with("window.dispatchEvent(new CustomEvent('openclaw:a2ui-action-status'"));
    }
}
