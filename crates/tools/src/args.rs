//! Reading tool arguments that arrive under several names.
//!
//! The same tool is called by clients trained on different conventions: OpenClaw/pi send
//! `path`/`oldText`, Claude Code sends `file_path`/`old_string`, the upstream Node bridge sent
//! `oldString`/`cwd`. A [`Param`] lists every accepted name, canonical first, so each tool
//! states its aliases once and every missing-or-mistyped message names them the same way
//! (OpenClaw's wording: `Missing required parameter: path (path or file_path)`).
//!
//! Numbers and booleans are accepted in their JSON form and, leniently, as strings ("10",
//! "true"), because some clients stringify every argument.

use serde_json::{Map, Value};

/// One logical parameter and every name a client may send it under.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Param {
    /// Accepted names, canonical first, advertised ones before unadvertised legacy ones.
    names: &'static [&'static str],
    /// How many leading `names` the schema advertises (and messages mention).
    advertised: usize,
}

impl Param {
    pub(crate) const fn new(names: &'static [&'static str]) -> Self {
        Param { names, advertised: names.len() }
    }

    /// Accepts `names[advertised..]` too without advertising them: names an older client
    /// (the upstream bridge) sends but that would only clutter the schema.
    pub(crate) const fn with_legacy(names: &'static [&'static str], advertised: usize) -> Self {
        Param { names, advertised }
    }

    /// `path (path or file_path)`, or just `pattern` when there is no alias.
    fn label(&self) -> String {
        match &self.names[..self.advertised] {
            [only] => (*only).to_string(),
            names => format!("{} ({})", names[0], names.join(" or ")),
        }
    }
}

/// Why an argument could not be used. The text goes to the model verbatim.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ArgError {
    #[error("Missing required parameter: {label}")]
    Missing { label: String },
    #[error("Parameter `{name}` must be {expected}, got {got}")]
    WrongType { name: String, expected: &'static str, got: String },
    #[error("Parameter `{name}` must be {expected}, got {got}")]
    OutOfRange { name: String, expected: String, got: String },
}

/// The arguments of one call.
pub(crate) struct Args<'a> {
    map: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    pub(crate) fn new(map: &'a Map<String, Value>) -> Self {
        Args { map }
    }

    /// The first name of `param` the client sent with a non-null value. Null counts as absent
    /// because several clients send every optional field as null.
    fn lookup(&self, param: Param) -> Option<(&'static str, &'a Value)> {
        param.names.iter().find_map(|name| self.map.get(*name).filter(|v| !v.is_null()).map(|v| (*name, v)))
    }

    pub(crate) fn string(&self, param: Param) -> Result<Option<String>, ArgError> {
        match self.lookup(param) {
            None => Ok(None),
            Some((_, Value::String(s))) => Ok(Some(s.clone())),
            Some((name, other)) => Err(wrong_type(name, "a string", other)),
        }
    }

    /// A string that must be present; `allow_empty` admits `""` (e.g. `newText` deleting text).
    pub(crate) fn required_string(&self, param: Param, allow_empty: bool) -> Result<String, ArgError> {
        match self.string(param)? {
            Some(s) if allow_empty || !s.trim().is_empty() => Ok(s),
            _ => Err(ArgError::Missing { label: param.label() }),
        }
    }

    pub(crate) fn bool(&self, param: Param) -> Result<Option<bool>, ArgError> {
        match self.lookup(param) {
            None => Ok(None),
            Some((_, Value::Bool(b))) => Ok(Some(*b)),
            Some((_, Value::String(s))) if s == "true" => Ok(Some(true)),
            Some((_, Value::String(s))) if s == "false" => Ok(Some(false)),
            Some((name, other)) => Err(wrong_type(name, "a boolean", other)),
        }
    }

    /// A whole number in `min..=max`. `1.0` and `"12"` are accepted; `1.5` and `-1` are not.
    pub(crate) fn integer(&self, param: Param, min: u64, max: u64) -> Result<Option<u64>, ArgError> {
        let Some((name, value)) = self.lookup(param) else { return Ok(None) };
        let parsed = match value {
            Value::Number(n) => {
                n.as_u64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0).map(|f| f as u64))
            }
            Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        };
        let expected =
            || if max == u64::MAX { format!("an integer >= {min}") } else { format!("an integer from {min} to {max}") };
        match parsed {
            Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
            _ => Err(ArgError::OutOfRange { name: name.to_string(), expected: expected(), got: render(value) }),
        }
    }
}

fn wrong_type(name: &str, expected: &'static str, got: &Value) -> ArgError {
    ArgError::WrongType { name: name.to_string(), expected, got: render(got) }
}

/// A short rendering of a bad value for an error message (long strings would flood it).
fn render(value: &Value) -> String {
    const MAX: usize = 60;
    let text = value.to_string();
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const PATH: Param = Param::new(&["path", "file_path"]);
    const LIMIT: Param = Param::new(&["limit"]);

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn alias_is_used_when_canonical_is_absent_and_canonical_wins_otherwise() {
        let only_alias = map(json!({"file_path": "a.txt"}));
        assert_eq!(Args::new(&only_alias).string(PATH).unwrap().as_deref(), Some("a.txt"));
        let both = map(json!({"path": "p", "file_path": "f"}));
        assert_eq!(Args::new(&both).string(PATH).unwrap().as_deref(), Some("p"));
        let null_canonical = map(json!({"path": null, "file_path": "f"}));
        assert_eq!(Args::new(&null_canonical).string(PATH).unwrap().as_deref(), Some("f"));
    }

    #[test]
    fn missing_message_names_every_alias_like_openclaw() {
        let empty = map(json!({"path": "  "}));
        let err = Args::new(&empty).required_string(PATH, false).unwrap_err();
        assert_eq!(err.to_string(), "Missing required parameter: path (path or file_path)");
        assert_eq!(Args::new(&empty).required_string(PATH, true).unwrap(), "  ");
    }

    #[test]
    fn legacy_names_are_accepted_but_not_named_in_messages() {
        const OLD: Param = Param::with_legacy(&["oldText", "old_string", "oldString"], 2);
        let legacy = map(json!({"oldString": "x"}));
        assert_eq!(Args::new(&legacy).string(OLD).unwrap().as_deref(), Some("x"));
        let err = Args::new(&map(json!({}))).required_string(OLD, false).unwrap_err();
        assert_eq!(err.to_string(), "Missing required parameter: oldText (oldText or old_string)");
    }

    #[test]
    fn wrong_type_names_the_key_the_client_used() {
        let bad = map(json!({"file_path": 7}));
        let err = Args::new(&bad).string(PATH).unwrap_err();
        assert_eq!(err.to_string(), "Parameter `file_path` must be a string, got 7");
    }

    #[test]
    fn integers_accept_integral_numbers_and_numeric_strings_within_range() {
        for (value, expected) in [(json!(5), Some(5)), (json!(5.0), Some(5)), (json!("12"), Some(12))] {
            let m = map(json!({ "limit": value }));
            assert_eq!(Args::new(&m).integer(LIMIT, 1, 100).unwrap(), expected);
        }
        for value in [json!(1.5), json!(-1), json!(0), json!(101), json!("x"), json!(true)] {
            let m = map(json!({ "limit": value }));
            let err = Args::new(&m).integer(LIMIT, 1, 100).unwrap_err();
            assert!(err.to_string().starts_with("Parameter `limit` must be an integer from 1 to 100"), "{err}");
        }
    }

    #[test]
    fn booleans_accept_json_and_string_forms() {
        let flag = Param::new(&["replace_all"]);
        assert_eq!(Args::new(&map(json!({"replace_all": true}))).bool(flag).unwrap(), Some(true));
        assert_eq!(Args::new(&map(json!({"replace_all": "false"}))).bool(flag).unwrap(), Some(false));
        assert!(Args::new(&map(json!({"replace_all": 1}))).bool(flag).is_err());
    }

    #[test]
    fn long_bad_values_are_shortened() {
        let long = "x".repeat(500);
        let m = map(json!({ "limit": long }));
        let err = Args::new(&m).integer(LIMIT, 1, 2).unwrap_err().to_string();
        assert!(err.len() < 150 && err.ends_with('…'), "{err}");
    }
}
