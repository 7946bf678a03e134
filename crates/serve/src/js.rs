//! The JavaScript coercions the real bridge applies to gateway payloads, reproduced so that the
//! same payload yields the same conversation, event and text here as in `openclaw mcp serve`.
//!
//! OpenClaw normalises almost every string it reads with `normalizeOptionalString` (non-strings
//! and blank strings become "absent", others are trimmed), builds numbers into text with
//! `String(x)` and prints payloads with `JSON.stringify(value, null, 2)`. The helpers here are
//! those three operations and nothing more; the rules for *which* field goes where live with
//! the concept that uses them (`conversation`, `queue`, `tools`).

use serde_json::Value;

/// JavaScript's `\s` / `String.prototype.trim` set: Unicode `White_Space` plus U+FEFF, minus
/// U+0085 (which JavaScript does not treat as whitespace).
pub(crate) fn is_js_whitespace(c: char) -> bool {
    (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}'
}

/// `String.prototype.trim`.
pub(crate) fn trim(text: &str) -> &str {
    text.trim_matches(is_js_whitespace)
}

/// `normalizeOptionalString`: the trimmed string, or `None` for a non-string or a blank one.
pub(crate) fn to_text(value: Option<&Value>) -> Option<String> {
    match value {
        Some(Value::String(text)) => Some(trim(text)).filter(|t| !t.is_empty()).map(str::to_owned),
        _ => None,
    }
}

/// `String(value)` for the values a gateway sends where a string is expected (ids, thread ids).
/// `null` and `undefined` never reach this: callers treat them as absent.
pub(crate) fn to_js_string(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Number(number) => number.to_string(),
        Value::Bool(flag) => flag.to_string(),
        Value::Null => "null".to_owned(),
        Value::Array(items) => items
            .iter()
            .map(|item| if item.is_null() { String::new() } else { to_js_string(item) })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".to_owned(),
    }
}

/// `value == null` in JavaScript: absent or `null`.
pub(crate) fn is_nullish(value: Option<&Value>) -> bool {
    matches!(value, None | Some(Value::Null))
}

/// JavaScript truthiness (`if (value)`).
pub(crate) fn is_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(flag) => *flag,
        Value::Number(number) => number.as_f64().is_some_and(|n| n != 0.0),
        Value::String(text) => !text.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// `JSON.stringify(value, null, 2)`: two-space indentation, `"key": value`, non-ASCII verbatim.
pub(crate) fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// `value` clamped like `resolveIntegerOption(value, fallback, {min, max})`.
pub(crate) fn clamp_integer(value: Option<u64>, fallback: u64, min: u64, max: u64) -> u64 {
    value.unwrap_or(fallback).clamp(min, max)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn to_text_trims_like_javascript_and_drops_blanks_and_non_strings() {
        assert_eq!(to_text(Some(&json!("  a b \u{feff}"))).as_deref(), Some("a b"));
        assert_eq!(to_text(Some(&json!("\u{85}x"))).as_deref(), Some("\u{85}x"), "NEL is not JS whitespace");
        assert_eq!(to_text(Some(&json!(" \t\n"))), None);
        assert_eq!(to_text(Some(&json!(42))), None);
        assert_eq!(to_text(Some(&Value::Null)), None);
        assert_eq!(to_text(None), None);
    }

    #[test]
    fn js_string_matches_string_constructor() {
        assert_eq!(to_js_string(&json!(42)), "42");
        assert_eq!(to_js_string(&json!(1.5)), "1.5");
        assert_eq!(to_js_string(&json!("thread-42")), "thread-42");
        assert_eq!(to_js_string(&json!(true)), "true");
        assert_eq!(to_js_string(&json!({"a": 1})), "[object Object]");
        assert_eq!(to_js_string(&json!([1, null, "x"])), "1,,x");
    }

    #[test]
    fn pretty_matches_json_stringify_with_two_spaces() {
        let value = json!({"conversations": [], "a": {"b": "é\u{1b}"}, "e": {}});
        assert_eq!(
            pretty(&value),
            "{\n  \"conversations\": [],\n  \"a\": {\n    \"b\": \"é\\u001b\"\n  },\n  \"e\": {}\n}"
        );
    }

    #[test]
    fn clamp_integer_uses_the_fallback_then_the_range() {
        assert_eq!(clamp_integer(None, 50, 1, 500), 50);
        assert_eq!(clamp_integer(Some(0), 50, 1, 500), 1);
        assert_eq!(clamp_integer(Some(501), 50, 1, 500), 500);
        assert_eq!(clamp_integer(Some(500), 50, 1, 500), 500);
    }
}
