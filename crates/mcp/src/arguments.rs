//! A call's arguments checked against the tool's published input schema before its handler runs.
//!
//! What is checked is the *shape*: each argument's JSON type, the required arguments, and
//! arguments the schema does not allow (`additionalProperties: false`). Those are what a client
//! gets wrong, and without this check a handler either reported them in its own terse words
//! (`Missing bins parameter` for a `bins` of the wrong type) or silently ignored them (a misspelt
//! optional argument). Values inside the shape (ranges, enums, patterns) stay the handler's to
//! clamp or refuse, in upstream's words: upstream clamps `maxWidth` rather than refusing it, and a
//! client that relies on that must keep working.
//!
//! The error names the argument, what it must be (from the schema, with the argument's own
//! description), what was sent, and for an unknown argument the closest known one.

use serde_json::Value;

use crate::tool::did_you_mean;
use crate::types::Schema;

/// At most this many problems are named in one error (the first ones found): enough to fix a
/// call in one go, short enough to read.
const MAX_PROBLEMS: usize = 3;
/// A value shown in an error is cut to this many characters.
const MAX_SHOWN_VALUE: usize = 60;
/// An argument's description quoted in an error is cut to this many characters.
const MAX_SHOWN_DESCRIPTION: usize = 160;

/// Who checks a tool's arguments, and how strictly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Checking {
    /// The shape, against the input schema, before the handler runs (every tool unless it says
    /// otherwise).
    #[default]
    Shape,
    /// The shape, except that a string where the schema wants a number, an integer or a boolean
    /// passes when it reads as one (`"12"`, `" 1.5 "`, `"true"`): for a handler that takes
    /// stringified scalars, as upstream's coding tools do because some clients stringify every
    /// argument. A string that reads as nothing of the kind is still refused here.
    StringifiedScalars,
    /// Not before the handler: it checks every argument itself, in words a drop-in must keep
    /// (`clawmcp serve`: the MCP SDK's zod messages; a gateway tool: the gateway's own), or it
    /// reads aliases and forms its published schema cannot state.
    Handler,
}

/// The compiled input schema of one tool.
pub struct ArgumentCheck {
    schema: Value,
    checking: Checking,
    /// `None` for a schema that does not compile (the tool is then called unchecked: the schema
    /// tests of each surface make sure none of ours is such).
    validator: Option<jsonschema::Validator>,
}

impl ArgumentCheck {
    pub fn new(schema: &Schema) -> Self {
        let schema = schema.to_value();
        let validator = jsonschema::validator_for(&schema).ok();
        ArgumentCheck { schema, checking: Checking::Shape, validator }
    }

    /// `self`, checking as `checking` says ([`Checking::Handler`] checks nothing).
    pub fn with_checking(mut self, checking: Checking) -> Self {
        self.checking = checking;
        self
    }

    /// Whether the schema compiled (what a surface's schema test asserts for every tool).
    pub fn is_usable(&self) -> bool {
        self.validator.is_some()
    }

    /// `Ok` when `arguments` (the call's arguments object) have the shape the schema asks for;
    /// else the error for the caller, naming `tool` and each problem.
    pub fn check(&self, tool: &str, instance: &Value) -> Result<(), String> {
        let Some(validator) = self.validator.as_ref().filter(|_| self.checking != Checking::Handler) else {
            return Ok(());
        };
        // Nearly every call is valid: the short-circuiting check first, the error walk only for
        // a call that has something to report.
        if validator.is_valid(instance) {
            return Ok(());
        }
        let problems: Vec<String> = validator
            .iter_errors(instance)
            .filter_map(|error| self.explain(instance, &error))
            .take(MAX_PROBLEMS)
            .collect();
        if problems.is_empty() {
            return Ok(());
        }
        Err(format!(
            "Invalid arguments for {tool}: {}. Every argument, its type and what it means are in the tool's input \
             schema (tools/list).",
            problems.join("; ")
        ))
    }

    /// One shape problem in words, or `None` for an error about a value inside the shape (left
    /// to the handler).
    fn explain(&self, instance: &Value, error: &jsonschema::ValidationError<'_>) -> Option<String> {
        use jsonschema::error::ValidationErrorKind as Kind;
        let path: Vec<Segment> = error
            .instance_path()
            .iter()
            .map(|segment| match segment {
                jsonschema::paths::LocationSegment::Property(name) => Segment::Property(name.to_string()),
                jsonschema::paths::LocationSegment::Index(index) => Segment::Index(index),
            })
            .collect();
        match error.kind() {
            Kind::Type { .. } => {
                let schema = subschema(&self.schema, &path)?;
                let value = value_at(instance, &path);
                if value.is_some_and(Value::is_null) && self.is_optional_argument(&path) {
                    // `"maxWidth": null` is how many clients write "not given"; handlers read it
                    // so, as upstream does.
                    return None;
                }
                if self.checking == Checking::StringifiedScalars && value.is_some_and(|v| reads_as(v, schema)) {
                    // The handler parses it, as upstream's does.
                    return None;
                }
                let got = value.map_or_else(|| "nothing".to_owned(), shown);
                Some(format!("`{}` must be {}, not {got}{}", name_of(&path), expected(schema), description_of(schema)))
            }
            Kind::Required { property } => {
                let property = property.as_str()?;
                let mut full = path.clone();
                full.push(Segment::Property(property.to_owned()));
                let described = subschema(&self.schema, &full).map(description_of).unwrap_or_default();
                Some(format!("`{}` is required{described}", name_of(&full)))
            }
            Kind::AdditionalProperties { unexpected } => {
                let known: Vec<&str> = subschema(&self.schema, &path)
                    .and_then(|schema| schema.get("properties")?.as_object())
                    .map(|properties| properties.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                let named = unexpected.iter().map(|name| {
                    let mut full = path.clone();
                    full.push(Segment::Property(name.clone()));
                    let hint = match did_you_mean(name, known.iter().copied()) {
                        Some(close) => format!("did you mean `{close}`?"),
                        None if known.is_empty() => "it takes no arguments".to_owned(),
                        None => format!(
                            "it takes {}",
                            known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
                        ),
                    };
                    format!("`{}` is not an argument of this tool ({hint})", name_of(&full))
                });
                Some(named.collect::<Vec<_>>().join("; "))
            }
            _ => None,
        }
    }
}

impl ArgumentCheck {
    /// Whether `path` is one top-level argument the schema does not require.
    fn is_optional_argument(&self, path: &[Segment]) -> bool {
        let [Segment::Property(name)] = path else { return false };
        let required = self.schema.get("required").and_then(Value::as_array);
        !required.is_some_and(|required| required.iter().any(|r| r.as_str() == Some(name)))
    }
}

/// Whether `value` is a string that reads as a number, an integer or a boolean `schema` asks for.
fn reads_as(value: &Value, schema: &Value) -> bool {
    let Some(text) = value.as_str().map(str::trim) else { return false };
    let wants = |kind: &str| match schema.get("type") {
        Some(Value::String(one)) => one == kind,
        Some(Value::Array(many)) => many.iter().any(|one| one == kind),
        _ => false,
    };
    let number = text.parse::<f64>().ok().filter(|number| number.is_finite());
    (wants("number") && number.is_some())
        || (wants("integer") && number.is_some_and(|number| number.fract() == 0.0))
        || (wants("boolean") && matches!(text, "true" | "false"))
}

#[derive(Debug, Clone)]
enum Segment {
    Property(String),
    Index(usize),
}

/// `command[0]`, `env.PATH`; the whole arguments object when the path is empty.
fn name_of(path: &[Segment]) -> String {
    let mut name = String::new();
    for segment in path {
        match segment {
            Segment::Property(property) if name.is_empty() => name.push_str(property),
            Segment::Property(property) => {
                name.push('.');
                name.push_str(property);
            }
            Segment::Index(index) => name.push_str(&format!("[{index}]")),
        }
    }
    if name.is_empty() { "arguments".to_owned() } else { name }
}

/// The schema that describes the value at `path`, following `properties`, `additionalProperties`
/// (an object schema) and `items`.
fn subschema<'s>(root: &'s Value, path: &[Segment]) -> Option<&'s Value> {
    path.iter().try_fold(root, |schema, segment| match segment {
        Segment::Property(name) => schema
            .get("properties")
            .and_then(|properties| properties.get(name))
            .or_else(|| schema.get("additionalProperties").filter(|extra| extra.is_object())),
        Segment::Index(_) => schema.get("items").filter(|items| items.is_object()),
    })
}

fn value_at<'v>(instance: &'v Value, path: &[Segment]) -> Option<&'v Value> {
    path.iter().try_fold(instance, |value, segment| match segment {
        Segment::Property(name) => value.get(name),
        Segment::Index(index) => value.get(index),
    })
}

/// What a schema asks for, in words: "an array of strings", "an integer or a string".
fn expected(schema: &Value) -> String {
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if types.is_empty() {
        return "what the schema describes".to_owned();
    }
    let one = |kind: &str| match kind {
        "array" => match schema.get("items").and_then(|items| items.get("type")).and_then(Value::as_str) {
            Some(item) => format!("an array of {}", plural(item)),
            None => "an array".to_owned(),
        },
        "object" => "an object".to_owned(),
        "integer" => "an integer".to_owned(),
        "null" => "null".to_owned(),
        other => format!("a {other}"),
    };
    types.iter().map(|kind| one(kind)).collect::<Vec<_>>().join(" or ")
}

fn plural(kind: &str) -> String {
    match kind {
        "null" => "nulls".to_owned(),
        other => format!("{other}s"),
    }
}

/// ` (its description)`, cut to [`MAX_SHOWN_DESCRIPTION`] characters, or nothing.
fn description_of(schema: &Value) -> String {
    match schema.get("description").and_then(Value::as_str).map(str::trim) {
        // Without its closing full stop: it sits inside parentheses, inside a sentence.
        Some(description) if !description.is_empty() => {
            format!(" ({})", cut(description.trim_end_matches('.'), MAX_SHOWN_DESCRIPTION))
        }
        _ => String::new(),
    }
}

/// A value as JSON, cut to [`MAX_SHOWN_VALUE`] characters.
fn shown(value: &Value) -> String {
    cut(&value.to_string(), MAX_SHOWN_VALUE)
}

fn cut(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(schema: Value, arguments: Value) -> Result<(), String> {
        ArgumentCheck::new(&Schema::new(&schema)).check("demo.tool", &arguments)
    }

    fn which_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "bins": {"type": "array", "items": {"type": "string"}, "description": "Executable names to look up."},
                "timeoutMs": {"type": "integer", "minimum": 1, "maximum": 1000}
            },
            "required": ["bins"],
            "additionalProperties": false
        })
    }

    #[test]
    fn a_wrong_type_names_the_argument_what_it_must_be_and_what_was_sent() {
        let error = check(which_schema(), json!({"bins": 5})).unwrap_err();
        assert_eq!(
            error,
            "Invalid arguments for demo.tool: `bins` must be an array of strings, not 5 (Executable names to look \
             up). Every argument, its type and what it means are in the tool's input schema (tools/list)."
        );
        let error = check(which_schema(), json!({"bins": ["ls", 7]})).unwrap_err();
        assert!(error.contains("`bins[1]` must be a string, not 7"), "{error}");
    }

    #[test]
    fn a_missing_required_argument_and_an_unknown_one_are_named() {
        let error = check(which_schema(), json!({})).unwrap_err();
        assert!(error.contains("`bins` is required (Executable names to look up)"), "{error}");
        let error = check(which_schema(), json!({"bins": ["ls"], "timeoutMS": 5})).unwrap_err();
        assert!(error.contains("`timeoutMS` is not an argument of this tool (did you mean `timeoutMs`?)"), "{error}");
        let error = check(which_schema(), json!({"bins": ["ls"], "colour": "red"})).unwrap_err();
        assert!(error.contains("`colour` is not an argument of this tool (it takes `bins`, `timeoutMs`)"), "{error}");
        let none = json!({"type": "object", "properties": {}, "additionalProperties": false});
        let error = check(none, json!({"x": 1})).unwrap_err();
        assert!(error.contains("`x` is not an argument of this tool (it takes no arguments)"), "{error}");
    }

    #[test]
    fn values_inside_the_shape_are_left_to_the_handler() {
        // Out of range, but the right type: the handler clamps or refuses it in its own words.
        assert_eq!(check(which_schema(), json!({"bins": ["ls"], "timeoutMs": 5000})), Ok(()));
        let with_enum = json!({"type": "object", "properties": {"format": {"type": "string", "enum": ["png"]}}});
        assert_eq!(check(with_enum, json!({"format": "bmp"})), Ok(()));
        // A schema that allows anything else checks nothing else.
        let open = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        assert_eq!(check(open, json!({"b": [1, 2]})), Ok(()));
    }

    #[test]
    fn null_for_an_optional_argument_means_not_given_but_not_for_a_required_one() {
        assert_eq!(check(which_schema(), json!({"bins": ["ls"], "timeoutMs": null})), Ok(()));
        let error = check(which_schema(), json!({"bins": null})).unwrap_err();
        assert!(error.contains("`bins` must be an array of strings, not null"), "{error}");
        let error = check(which_schema(), json!({"bins": [null]})).unwrap_err();
        assert!(error.contains("`bins[0]` must be a string, not null"), "{error}");
    }

    #[test]
    fn stringified_scalars_pass_only_when_the_tool_takes_them_and_they_read_as_the_type() {
        let schema = json!({
            "type": "object",
            "properties": {"limit": {"type": "number"}, "count": {"type": "integer"}, "all": {"type": "boolean"},
                           "name": {"type": "string"}}
        });
        let lenient = |arguments: Value| {
            ArgumentCheck::new(&Schema::new(&schema))
                .with_checking(Checking::StringifiedScalars)
                .check("demo.tool", &arguments)
        };
        assert_eq!(lenient(json!({"limit": "12", "count": " 3 ", "all": "true"})), Ok(()));
        assert_eq!(lenient(json!({"limit": "1.5", "all": "false"})), Ok(()));
        let error = lenient(json!({"limit": "twelve"})).unwrap_err();
        assert!(error.contains("`limit` must be a number, not \"twelve\""), "{error}");
        assert!(lenient(json!({"count": "1.5"})).unwrap_err().contains("`count` must be an integer"));
        assert!(lenient(json!({"all": "yes"})).unwrap_err().contains("`all` must be a boolean"));
        assert!(lenient(json!({"limit": "NaN"})).is_err(), "not a finite number");
        assert!(lenient(json!({"name": 5})).unwrap_err().contains("`name` must be a string, not 5"), "only strings");
        // The default is strict, and the handler's own checking checks nothing here.
        assert!(check(schema.clone(), json!({"limit": "12"})).is_err());
        let handler = ArgumentCheck::new(&Schema::new(&schema)).with_checking(Checking::Handler);
        assert_eq!(handler.check("demo.tool", &json!({"limit": [], "name": {}})), Ok(()));
    }

    #[test]
    fn at_most_three_problems_and_long_values_are_cut() {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"}, "d": {"type": "string"}}
        });
        let error = check(schema, json!({"a": 1, "b": 2, "c": 3, "d": 4})).unwrap_err();
        assert_eq!(error.matches(" must be a string").count(), MAX_PROBLEMS, "{error}");
        let long = "x".repeat(500);
        let error = check(which_schema(), json!({"bins": long})).unwrap_err();
        assert!(error.contains(&format!("not \"{}...", "x".repeat(MAX_SHOWN_VALUE - 1))), "{error}");
        assert!(error.len() < 400, "{error}");
    }

    #[test]
    fn nested_paths_read_as_a_client_writes_them() {
        let schema = json!({
            "type": "object",
            "properties": {"env": {"type": "object", "additionalProperties": {"type": "string"}}}
        });
        let error = check(schema, json!({"env": {"PATH": 1}})).unwrap_err();
        assert!(error.contains("`env.PATH` must be a string, not 1"), "{error}");
    }
}
