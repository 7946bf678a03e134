//! Tool argument validation with the real bridge's rules and wording.
//!
//! Upstream declares each tool's input as a zod 4 object and the MCP SDK (1.30) validates it
//! before the handler runs. A failure is a tool error, not a JSON-RPC error, whose text is
//! `MCP error -32602: Input validation error: Invalid arguments for tool <name>: ` followed by
//! one line per zod issue, `<message> at <field>`. The checks and messages below are zod's for
//! the few shapes the nine tools use (checked against zod 4.6.5): every field is checked and
//! every issue reported, unknown fields are ignored (zod objects strip them), and a `null` is a
//! type error even for an optional field.

use serde_json::{Map, Value};

/// JavaScript's `Number.MAX_SAFE_INTEGER`; zod's `.int()` refuses anything beyond it.
pub const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;

/// The text of the SDK's error for a tool it does not know.
pub(crate) fn unknown_tool_message(name: &str) -> String {
    format!("MCP error -32602: Tool {name} not found")
}

/// Collects the arguments of one call, and the issues found on the way.
pub(crate) struct Args<'a> {
    tool: &'a str,
    arguments: &'a Map<String, Value>,
    issues: Vec<String>,
}

impl<'a> Args<'a> {
    pub(crate) fn new(tool: &'a str, arguments: &'a Map<String, Value>) -> Self {
        Args { tool, arguments, issues: Vec::new() }
    }

    /// `Ok(())` if every field passed, else the SDK's error text.
    pub(crate) fn finish(self) -> Result<(), String> {
        if self.issues.is_empty() {
            return Ok(());
        }
        Err(format!(
            "MCP error -32602: Input validation error: Invalid arguments for tool {}: {}",
            self.tool,
            self.issues.join("\n")
        ))
    }

    fn issue(&mut self, key: &str, message: String) {
        self.issues.push(format!("{message} at {key}"));
    }

    fn type_issue(&mut self, key: &str, expected: &str) {
        let received = received(self.arguments.get(key));
        self.issue(key, format!("Invalid input: expected {expected}, received {received}"));
    }

    /// `z.number().int().min(min).max(max).optional()`.
    pub(crate) fn optional_int(&mut self, key: &str, min: u64, max: Option<u64>) -> Option<u64> {
        let value = self.arguments.get(key)?;
        let Some(number) = value.as_f64() else {
            self.type_issue(key, "number");
            return None;
        };
        if number.fract() != 0.0 {
            self.type_issue(key, "int");
            return None;
        }
        let before = self.issues.len();
        let safe = MAX_SAFE_INTEGER as f64;
        if number > safe {
            self.issue(key, format!("Too big: expected int to be <={MAX_SAFE_INTEGER}"));
        } else if number < -safe {
            self.issue(key, format!("Too small: expected int to be >=-{MAX_SAFE_INTEGER}"));
        }
        if number < min as f64 {
            self.issue(key, format!("Too small: expected number to be >={min}"));
        }
        if let Some(max) = max.filter(|max| number > *max as f64) {
            self.issue(key, format!("Too big: expected number to be <={max}"));
        }
        // In range, so the value is a non-negative integer of at most 2^53 - 1: exact as u64.
        (self.issues.len() == before).then_some(number as u64)
    }

    /// `z.string().optional()`.
    pub(crate) fn optional_string(&mut self, key: &str) -> Option<String> {
        match self.arguments.get(key)? {
            Value::String(text) => Some(text.clone()),
            _ => {
                self.type_issue(key, "string");
                None
            }
        }
    }

    /// `z.string().min(1)`.
    pub(crate) fn required_string(&mut self, key: &str) -> Option<String> {
        match self.arguments.get(key) {
            Some(Value::String(text)) if text.is_empty() => {
                self.issue(key, "Too small: expected string to have >=1 characters".to_owned());
                None
            }
            Some(Value::String(text)) => Some(text.clone()),
            _ => {
                self.type_issue(key, "string");
                None
            }
        }
    }

    /// `z.boolean().optional()`.
    pub(crate) fn optional_bool(&mut self, key: &str) -> Option<bool> {
        match self.arguments.get(key)? {
            Value::Bool(flag) => Some(*flag),
            _ => {
                self.type_issue(key, "boolean");
                None
            }
        }
    }

    /// `z.enum(values)`: the index of the value given.
    pub(crate) fn required_enum(&mut self, key: &str, values: &[&str]) -> Option<usize> {
        let given = self.arguments.get(key).and_then(Value::as_str);
        let found = given.and_then(|given| values.iter().position(|value| *value == given));
        if found.is_none() {
            let options = values.iter().map(|value| format!("\"{value}\"")).collect::<Vec<_>>().join("|");
            self.issue(key, format!("Invalid option: expected one of {options}"));
        }
        found
    }
}

/// zod's name for what it got.
fn received(value: Option<&Value>) -> &'static str {
    match value {
        None => "undefined",
        Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "boolean",
        Some(Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Array(_)) => "array",
        Some(Value::Object(_)) => "object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(arguments: Value, validate: impl FnOnce(&mut Args<'_>)) -> Result<(), String> {
        let arguments = arguments.as_object().unwrap().clone();
        let mut args = Args::new("t", &arguments);
        validate(&mut args);
        args.finish()
    }

    fn issues(arguments: Value, validate: impl FnOnce(&mut Args<'_>)) -> String {
        check(arguments, validate)
            .unwrap_err()
            .trim_start_matches("MCP error -32602: Input validation error: Invalid arguments for tool t: ")
            .to_owned()
    }

    fn limit(args: &mut Args<'_>) {
        args.optional_int("limit", 1, Some(500));
    }

    #[test]
    fn integers_follow_zod() {
        assert!(check(json!({}), limit).is_ok());
        assert!(check(json!({"limit": 1}), limit).is_ok());
        assert!(check(json!({"limit": 500}), limit).is_ok());
        assert!(check(json!({"limit": 5.0}), limit).is_ok(), "5.0 is an integer in JavaScript");
        assert_eq!(issues(json!({"limit": 0}), limit), "Too small: expected number to be >=1 at limit");
        assert_eq!(issues(json!({"limit": 501}), limit), "Too big: expected number to be <=500 at limit");
        assert_eq!(issues(json!({"limit": 600.5}), limit), "Invalid input: expected int, received number at limit");
        assert_eq!(issues(json!({"limit": "5"}), limit), "Invalid input: expected number, received string at limit");
        assert_eq!(issues(json!({"limit": null}), limit), "Invalid input: expected number, received null at limit");
        assert_eq!(
            issues(json!({"limit": 9_007_199_254_740_992u64}), limit),
            "Too big: expected int to be <=9007199254740991 at limit\nToo big: expected number to be <=500 at limit"
        );
        let cursor = |args: &mut Args<'_>| {
            args.optional_int("after_cursor", 0, None);
        };
        assert!(check(json!({"after_cursor": MAX_SAFE_INTEGER}), cursor).is_ok());
        assert_eq!(issues(json!({"after_cursor": -1}), cursor), "Too small: expected number to be >=0 at after_cursor");
        assert_eq!(
            issues(json!({"after_cursor": -1e300}), cursor),
            "Too small: expected int to be >=-9007199254740991 at after_cursor\nToo small: expected number to be >=0 at after_cursor"
        );
    }

    #[test]
    fn strings_booleans_and_enums_follow_zod() {
        let key = |args: &mut Args<'_>| {
            args.required_string("session_key");
        };
        assert_eq!(issues(json!({}), key), "Invalid input: expected string, received undefined at session_key");
        assert_eq!(
            issues(json!({"session_key": ""}), key),
            "Too small: expected string to have >=1 characters at session_key"
        );
        assert_eq!(
            issues(json!({"session_key": {}}), key),
            "Invalid input: expected string, received object at session_key"
        );
        assert!(check(json!({"session_key": " "}), key).is_ok(), "whitespace counts as a character");

        let respond = |args: &mut Args<'_>| {
            args.required_enum("kind", &["exec", "plugin"]);
            args.required_string("id");
            args.required_enum("decision", &["allow-once", "allow-always", "deny"]);
        };
        assert_eq!(
            issues(json!({"kind": "x", "id": ""}), respond),
            "Invalid option: expected one of \"exec\"|\"plugin\" at kind\nToo small: expected string to have >=1 characters at id\nInvalid option: expected one of \"allow-once\"|\"allow-always\"|\"deny\" at decision"
        );
        let flags = |args: &mut Args<'_>| {
            args.optional_string("search");
            args.optional_bool("includeDerivedTitles");
        };
        assert_eq!(
            issues(json!({"search": 5, "includeDerivedTitles": "yes", "extra": true}), flags),
            "Invalid input: expected string, received number at search\nInvalid input: expected boolean, received string at includeDerivedTitles"
        );
    }
}
