//! The upstream bridge's compatibility layer for gateway tools (`docs/tools-bridge.md` §4, §6),
//! kept so that clients and prompts written against it keep working:
//!
//! - **Schema overlays**: properties added to a gateway tool's schema so that MCP clients, which
//!   drop undeclared arguments, pass them through: `message.to/filePath/components`, the
//!   requester `sessionKey` of `sessions_spawn` and `subagents`, `sessions_spawn.thread`, and the
//!   alias names below. An overlay never replaces a property the gateway declares: the real
//!   schema wins (2026.9.6 `sessions_spawn.mode` is `["run"]`; the upstream overlay said
//!   `run|session`).
//! - **Argument aliases**, applied before forwarding: `image.path`→`image`,
//!   `pdf.path/paths`→`pdf/pdfs`, `web_search.limit`→`count`, `memory_search.limit`→`maxResults`,
//!   `feishu_chat.member_type`→`member_id_type`. The canonical name wins when both are sent; the
//!   alias is removed either way (it would fail a closed schema).
//! - **Requester hoisting**: for `sessions_spawn` and `subagents`, `sessionKey` means "who is
//!   asking", so it leaves `args` and becomes the body's `sessionKey`. For every other tool it is
//!   a real target argument and stays.

use serde_json::{Map, Value, json};

/// Tools whose `sessionKey` argument names the requester, not a target.
pub const SESSION_IDENTITY_TOOLS: [&str; 2] = ["sessions_spawn", "subagents"];

/// `(tool, alias, canonical)`. The canonical value is taken only when its JSON type fits.
const ALIASES: [(&str, &str, &str, AliasKind); 6] = [
    ("image", "path", "image", AliasKind::String),
    ("pdf", "path", "pdf", AliasKind::String),
    ("pdf", "paths", "pdfs", AliasKind::Array),
    ("web_search", "limit", "count", AliasKind::Any),
    ("memory_search", "limit", "maxResults", AliasKind::Any),
    ("feishu_chat", "member_type", "member_id_type", AliasKind::Any),
];

#[derive(Debug, Clone, Copy)]
enum AliasKind {
    String,
    Array,
    Any,
}

impl AliasKind {
    fn fits(self, value: &Value) -> bool {
        match self {
            AliasKind::String => value.is_string(),
            AliasKind::Array => value.is_array(),
            AliasKind::Any => !value.is_null(),
        }
    }
}

/// Rewrites alias arguments to their canonical names, in place.
pub fn apply_aliases(tool: &str, args: &mut Map<String, Value>) {
    for (alias_tool, alias, canonical, kind) in ALIASES {
        if alias_tool != tool {
            continue;
        }
        let Some(value) = args.remove(alias) else { continue };
        let canonical_absent = args.get(canonical).is_none_or(Value::is_null);
        if canonical_absent && kind.fits(&value) {
            args.insert(canonical.to_owned(), value);
        }
    }
}

/// The properties each overlay adds (only where the gateway's schema lacks them).
fn overlays(tool: &str) -> Vec<(&'static str, Value)> {
    let requester = |example: &str| {
        json!({"type": "string", "description": format!(
            "Requester session key (who is asking, not a target), e.g. {example}. Normally unnecessary: \
             the bridge sends OPENCLAW_REQUESTER_SESSION_KEY."
        )})
    };
    match tool {
        "message" => vec![
            ("to", json!({"type": "string", "description": "Recipient; alias for target."})),
            ("filePath", json!({"type": "string", "description": "Attachment path; alias for media."})),
            ("components", json!({"type": "object", "description": "Discord components payload."})),
        ],
        "sessions_spawn" => vec![
            ("sessionKey", requester("agent:main:discord:channel:<id>")),
            ("thread", json!({"type": "boolean", "description": "Bind the child session to a chat thread."})),
        ],
        "subagents" => vec![("sessionKey", requester("agent:main:discord:channel:<id>"))],
        "web_search" => vec![("limit", json!({"type": "number", "description": "Alias for count."}))],
        "memory_search" => vec![("limit", json!({"type": "number", "description": "Alias for maxResults."}))],
        "image" => vec![("path", json!({"type": "string", "description": "Alias for image."}))],
        "pdf" => vec![
            ("path", json!({"type": "string", "description": "Alias for pdf."})),
            ("paths", json!({"type": "array", "items": {"type": "string"}, "description": "Alias for pdfs."})),
        ],
        "feishu_chat" => vec![("member_type", json!({"type": "string", "description": "Alias for member_id_type."}))],
        _ => Vec::new(),
    }
}

/// `schema` with the tool's overlay properties added where absent. The root is made an object
/// schema with `properties` if it is not one (MCP requires it).
pub fn overlay_schema(tool: &str, schema: &Value) -> Value {
    let mut schema = match schema {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    schema.insert("type".into(), "object".into());
    let properties = schema.entry("properties").or_insert_with(|| Value::Object(Map::new()));
    if !properties.is_object() {
        *properties = Value::Object(Map::new());
    }
    let properties = properties.as_object_mut().expect("made an object above");
    for (name, property) in overlays(tool) {
        properties.entry(name).or_insert(property);
    }
    Value::Object(schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn aliases_rename_when_the_canonical_is_absent_and_always_drop_the_alias() {
        let mut image = args(json!({"path": "/tmp/a.jpg", "prompt": "p"}));
        apply_aliases("image", &mut image);
        assert_eq!(Value::Object(image), json!({"image": "/tmp/a.jpg", "prompt": "p"}));

        let mut both = args(json!({"path": "/a.pdf", "pdf": "/b.pdf", "paths": ["/c.pdf"]}));
        apply_aliases("pdf", &mut both);
        assert_eq!(Value::Object(both), json!({"pdf": "/b.pdf", "pdfs": ["/c.pdf"]}));

        let mut wrong_type = args(json!({"path": 7}));
        apply_aliases("image", &mut wrong_type);
        assert_eq!(Value::Object(wrong_type), json!({}), "an unusable alias is dropped, not forwarded");

        let mut search = args(json!({"query": "q", "limit": 3}));
        apply_aliases("web_search", &mut search);
        assert_eq!(Value::Object(search), json!({"query": "q", "count": 3}));

        let mut memory = args(json!({"limit": 2, "maxResults": 9}));
        apply_aliases("memory_search", &mut memory);
        assert_eq!(Value::Object(memory), json!({"maxResults": 9}));

        let mut feishu = args(json!({"member_type": "open_id"}));
        apply_aliases("feishu_chat", &mut feishu);
        assert_eq!(Value::Object(feishu), json!({"member_id_type": "open_id"}));

        let mut other = args(json!({"path": "x", "limit": 1}));
        apply_aliases("sessions_list", &mut other);
        assert_eq!(Value::Object(other), json!({"path": "x", "limit": 1}), "other tools pass through");
    }

    #[test]
    fn overlays_add_missing_properties_and_never_replace_real_ones() {
        let real = json!({"type": "object", "properties": {"mode": {"enum": ["run"], "type": "string"}}, "required": ["task"]});
        let merged = overlay_schema("sessions_spawn", &real);
        assert_eq!(merged["properties"]["mode"], json!({"enum": ["run"], "type": "string"}));
        assert_eq!(merged["properties"]["thread"]["type"], "boolean");
        assert_eq!(merged["properties"]["sessionKey"]["type"], "string");
        assert_eq!(merged["required"], json!(["task"]));

        let message = overlay_schema("message", &json!({"type": "object", "properties": {"to": {"type": "number"}}}));
        assert_eq!(message["properties"]["to"]["type"], "number");
        assert_eq!(message["properties"]["filePath"]["type"], "string");
        assert_eq!(message["properties"]["components"]["type"], "object");

        assert_eq!(overlay_schema("tts", &json!({})), json!({"type": "object", "properties": {}}));
        assert_eq!(overlay_schema("tts", &json!({"properties": []}))["properties"], json!({}));
    }
}
