//! What `attachments_fetch` extracts from one transcript message (upstream
//! `extractAttachmentsFromMessage` and `src/media/media-facts.ts`, openclaw 2026.9.6).
//!
//! Two sources, in this order: every `content[]` block whose `type` is not `"text"`, verbatim;
//! then each *meaningful* persisted media fact of `__openclaw.media[]`, normalised the way
//! OpenClaw normalises facts and wrapped as `{type: "openclaw_media", media}`. A fact is
//! meaningful when it has a path, a URL, a content type or a kind other than `"unknown"`. This
//! is a metadata view: no bytes are fetched.

use serde_json::{Map, Value};

use crate::js::{is_truthy, to_text, trim};

/// `2^53 - 1`: JavaScript's `Number.MAX_SAFE_INTEGER`.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// The attachments of `message`, in upstream order.
pub(crate) fn extract(message: &Value) -> Vec<Value> {
    let mut attachments: Vec<Value> = match message.get("content") {
        Some(Value::Array(blocks)) => {
            blocks
                .iter()
                // `typeof entry === "object"` upstream: arrays count, strings and numbers do not.
                .filter(|block| {
                    (block.is_object() || block.is_array()) && to_text(block.get("type")).as_deref() != Some("text")
                })
                .cloned()
                .collect()
        }
        _ => Vec::new(),
    };
    let facts = message.get("__openclaw").filter(|meta| meta.is_object()).and_then(|meta| meta.get("media"));
    if let Some(Value::Array(facts)) = facts {
        for fact in facts.iter().map(normalize_fact).filter(is_meaningful) {
            let mut wrapped = Map::new();
            wrapped.insert("type".into(), "openclaw_media".into());
            wrapped.insert("media".into(), Value::Object(fact));
            attachments.push(Value::Object(wrapped));
        }
    }
    attachments
}

/// `normalizeMediaFact` without defaults; absent values are left out (upstream drops
/// `undefined` entries before returning the fact).
fn normalize_fact(input: &Value) -> Map<String, Value> {
    let empty = Map::new();
    let input = input.as_object().unwrap_or(&empty);
    let text = |key: &str| to_text(input.get(key)).map(Value::from);
    let positive_safe_integer = |key: &str| {
        input
            .get(key)
            .filter(|value| value.as_f64().is_some_and(|n| n > 0.0 && n.fract() == 0.0 && n <= MAX_SAFE_INTEGER))
            .cloned()
    };
    let content_type = to_text(input.get("contentType"));

    let mut fact = Map::new();
    let mut put = |key: &str, value: Option<Value>| {
        if let Some(value) = value {
            fact.insert(key.to_owned(), value);
        }
    };
    put("path", text("path"));
    put("url", text("url"));
    put("contentType", content_type.clone().map(Value::from));
    let kind = match input.get("kind") {
        Some(kind) if !kind.is_null() => Some(kind.clone()),
        _ => kind_from_content_type(content_type.as_deref()).map(Value::from),
    };
    put("kind", kind);
    put("fileName", text("fileName"));
    put("origin", input.get("origin").filter(|origin| *origin == "paste" || *origin == "file").cloned());
    put("sizeBytes", input.get("sizeBytes").filter(|size| size.as_f64().is_some_and(|n| n >= 0.0)).cloned());
    put("durationMs", positive_safe_integer("durationMs"));
    put("width", positive_safe_integer("width"));
    put("height", positive_safe_integer("height"));
    put("transcribed", Some(Value::Bool(input.get("transcribed") == Some(&Value::Bool(true)))));
    put("messageId", text("messageId"));
    put("workspaceDir", text("workspaceDir"));
    for flag in ["staged", "hydrationSuppressed"] {
        put(flag, (input.get(flag) == Some(&Value::Bool(true))).then_some(Value::Bool(true)));
    }
    fact
}

fn is_meaningful(fact: &Map<String, Value>) -> bool {
    let non_blank = |key: &str| fact.get(key).and_then(Value::as_str).is_some_and(|s| !trim(s).is_empty());
    let kind = fact.get("kind");
    non_blank("path")
        || non_blank("url")
        || fact.contains_key("contentType")
        || kind.is_some_and(|kind| kind != "unknown" && is_truthy(kind))
}

/// OpenClaw's `kindFromMime` for a fact's content type: parameters dropped, lowercased,
/// synonyms folded, then the media family; generic binary types have no kind.
fn kind_from_content_type(content_type: Option<&str>) -> Option<&'static str> {
    let base = content_type?.split(';').next().map(trim)?.to_lowercase();
    let mime = match base.as_str() {
        "" | "application/octet-stream" | "binary/octet-stream" => return None,
        "image/apng" => "image/png",
        "text/yaml" | "application/x-yaml" => "application/yaml",
        "application/xml" => "text/xml",
        "video/vnd.avi" => "video/x-msvideo",
        "video/matroska" => "video/x-matroska",
        other => other,
    };
    if mime.starts_with("image/") {
        Some("image")
    } else if mime.starts_with("audio/") {
        Some("audio")
    } else if mime.starts_with("video/") {
        Some("video")
    } else if mime.starts_with("text/") || mime.starts_with("application/") {
        Some("document")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_seeded_attachment_matches_the_golden_transcript() {
        let message = json!({
            "role": "user", "content": "seeded image attachment",
            "__openclaw": {"media": [{"url": "media://inbound/seeded-image.png", "contentType": "image/png", "kind": "image", "fileName": "seeded-image.png", "sizeBytes": 3}], "id": "msg-attachment"},
        });
        assert_eq!(
            serde_json::to_string(&extract(&message)).unwrap(),
            r#"[{"type":"openclaw_media","media":{"url":"media://inbound/seeded-image.png","contentType":"image/png","kind":"image","fileName":"seeded-image.png","sizeBytes":3,"transcribed":false}}]"#
        );
    }

    #[test]
    fn content_blocks_come_first_and_text_blocks_are_skipped() {
        let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "abc"}});
        let message = json!({
            "content": [{"type": "text", "text": "hi"}, image, {"type": " text "}, "a string", {"text": "untyped"}],
            "__openclaw": {"media": [{"path": "/tmp/a.pdf", "contentType": "application/pdf; charset=binary"}]},
        });
        let attachments = extract(&message);
        assert_eq!(attachments.len(), 3);
        assert_eq!(attachments[0], image);
        assert_eq!(attachments[1], json!({"text": "untyped"}), "a block without a type is not text");
        assert_eq!(
            attachments[2],
            json!({"type": "openclaw_media", "media": {"path": "/tmp/a.pdf", "contentType": "application/pdf; charset=binary", "kind": "document", "transcribed": false}})
        );
    }

    #[test]
    fn facts_are_normalised_and_empty_ones_dropped() {
        let message = json!({"__openclaw": {"media": [
            null,
            {"kind": "unknown"},
            {"contentType": "application/octet-stream", "url": "  "},
            {"url": " https://x/y.ogg ", "contentType": "AUDIO/OGG", "durationMs": 1500.5, "width": 0, "height": 3, "transcribed": true,
             "origin": "camera", "sizeBytes": -1, "messageId": " m ", "staged": "yes", "hydrationSuppressed": true},
        ]}});
        assert_eq!(
            extract(&message),
            [
                json!({"type": "openclaw_media", "media": {"contentType": "application/octet-stream", "transcribed": false}}),
                json!({"type": "openclaw_media", "media": {"url": "https://x/y.ogg", "contentType": "AUDIO/OGG", "kind": "audio", "height": 3, "transcribed": true, "messageId": "m", "hydrationSuppressed": true}}),
            ]
        );
    }

    #[test]
    fn messages_without_attachments() {
        assert!(extract(&json!({"content": "plain"})).is_empty());
        assert!(
            extract(&json!({"content": [{"type": "text", "text": "x"}], "__openclaw": {"media": "no"}})).is_empty()
        );
        assert!(extract(&json!("not an object")).is_empty());
    }
}
