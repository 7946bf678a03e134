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

use serde_json::Value;

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

/// The host page: the renderer's element and the bundle, inlined.
pub fn host_page(bundle: &Path) -> Result<String, String> {
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
    Ok(format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Canvas</title></head>\
         <body style=\"margin:0\"><openclaw-a2ui-host></openclaw-a2ui-host>\
         <script type=\"module\">{script}</script></body></html>"
    ))
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
