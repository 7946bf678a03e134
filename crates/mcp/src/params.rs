//! Decoding a message's `params` into a [`Value`] with an error that says what, where and which
//! limit, instead of a silent `None`.
//!
//! The envelope keeps `params` as raw text ([`RawValue`]), which accepts any valid JSON however
//! deep. Turning it into a `Value` can still fail in two ways a client can trigger with valid
//! JSON:
//!
//! - nesting past serde_json's recursion limit (it guards the parser's stack): [`MAX_DEPTH`]
//!   levels counted from `params` itself are accepted, one more is refused;
//! - a number beyond what a 64-bit float holds (`1e400`): without serde_json's
//!   `arbitrary_precision` (avoided on purpose, see ARCHITECTURE.md) it has no `Value`.
//!
//! Both used to surface as "Invalid params: expected object". The failure path walks the text
//! once more to find the place (`params.arguments.items[3].size`); the success path costs
//! nothing extra.

use std::fmt;

use serde_json::Value;
use serde_json::value::RawValue;

/// Deepest nesting of arrays and objects in `params` that decodes, counting `params` itself as
/// level 1. serde_json refuses the container that would bring its remaining depth (128 at the
/// root) to zero, i.e. the 128th.
pub const MAX_DEPTH: usize = 127;

/// Longest stretch of a path or a number literal quoted back in an error, so a hostile message
/// cannot make us echo megabytes.
const MAX_QUOTED_SEGMENTS: usize = 8;
const MAX_QUOTED_NUMBER: usize = 32;

/// Why `params` has no [`Value`]. The `Display` text is a complete sentence for the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamsError {
    /// An array or object at `path` would be nesting level `MAX_DEPTH + 1`.
    TooDeep { path: String },
    /// The number `literal` at `path` overflows a 64-bit float.
    NumberOutOfRange { path: String, literal: String },
    /// Anything else serde_json refused (not expected for text that is valid JSON).
    Other(String),
}

impl fmt::Display for ParamsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamsError::TooDeep { path } => write!(
                f,
                "Invalid params: {path} is nested deeper than {MAX_DEPTH} levels of arrays and objects \
                 (the JSON parser's limit); send a flatter structure"
            ),
            ParamsError::NumberOutOfRange { path, literal } => write!(
                f,
                "Invalid params: the number {literal} at {path} is out of range: numbers must fit in a \
                 64-bit float (magnitude at most 1.7976931348623157e308); send it as a string instead"
            ),
            ParamsError::Other(detail) => write!(f, "Invalid params: {detail}"),
        }
    }
}

impl std::error::Error for ParamsError {}

/// `params` as a `Value` (`None` when absent), or exactly why it cannot be one.
pub fn decode(params: Option<&RawValue>) -> Result<Option<Value>, ParamsError> {
    let Some(raw) = params else { return Ok(None) };
    match serde_json::from_str(raw.get()) {
        Ok(value) => Ok(Some(value)),
        Err(error) => Err(explain(raw.get()).unwrap_or_else(|| ParamsError::Other(error.to_string()))),
    }
}

/// One step of a path: an object member or an array element.
enum Segment {
    Key(String),
    Index(usize),
}

/// Where the walk is inside one container.
enum Frame {
    /// `key` is the member being read; `expect_key` is true right after `{` or `,`.
    Object {
        key: Option<String>,
        expect_key: bool,
    },
    Array {
        index: usize,
    },
}

/// Walks valid JSON `text` to the first thing `Value` cannot hold. `None` if there is none.
fn explain(text: &str) -> Option<ParamsError> {
    let bytes = text.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            open @ (b'{' | b'[') => {
                if stack.len() == MAX_DEPTH {
                    return Some(ParamsError::TooDeep { path: path_of(&stack) });
                }
                stack.push(match open {
                    b'{' => Frame::Object { key: None, expect_key: true },
                    _ => Frame::Array { index: 0 },
                });
                at += 1;
            }
            b'}' | b']' => {
                stack.pop();
                at += 1;
            }
            b',' => {
                match stack.last_mut() {
                    Some(Frame::Array { index }) => *index += 1,
                    Some(Frame::Object { expect_key, .. }) => *expect_key = true,
                    None => {}
                }
                at += 1;
            }
            b'"' => {
                let end = string_end(bytes, at);
                if let Some(Frame::Object { key, expect_key }) = stack.last_mut()
                    && *expect_key
                {
                    *key = serde_json::from_str(&text[at..end]).ok();
                    *expect_key = false;
                }
                at = end;
            }
            b'-' | b'0'..=b'9' => {
                let start = at;
                while at < bytes.len() && matches!(bytes[at], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                    at += 1;
                }
                let literal = &text[start..at];
                if literal.parse::<f64>().is_ok_and(f64::is_infinite) {
                    return Some(ParamsError::NumberOutOfRange { path: path_of(&stack), literal: clip(literal) });
                }
            }
            // Whitespace, `:` and the letters of true/false/null.
            _ => at += 1,
        }
    }
    None
}

/// The byte just past the string literal that starts at `start` (its opening quote).
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut at = start + 1;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'"' => return at + 1,
            _ => at += 1,
        }
    }
    bytes.len()
}

/// `params.arguments.items[3]`, `params["a key"]`; long paths keep their first segments.
fn path_of(stack: &[Frame]) -> String {
    let segments = stack.iter().filter_map(|frame| match frame {
        Frame::Object { key: Some(key), .. } => Some(Segment::Key(key.clone())),
        Frame::Object { key: None, .. } => None,
        Frame::Array { index } => Some(Segment::Index(*index)),
    });
    let mut path = String::from("params");
    for (n, segment) in segments.enumerate() {
        if n == MAX_QUOTED_SEGMENTS {
            path.push('…');
            break;
        }
        match segment {
            Segment::Key(key) if is_identifier(&key) => {
                path.push('.');
                path.push_str(&key);
            }
            Segment::Key(key) => {
                path.push('[');
                path.push_str(&Value::from(clip(&key)).to_string());
                path.push(']');
            }
            Segment::Index(index) => path.push_str(&format!("[{index}]")),
        }
    }
    path
}

fn is_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && key.len() <= 64
}

fn clip(text: &str) -> String {
    crate::jsonrpc::clip(text, MAX_QUOTED_NUMBER)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_text(text: &str) -> Result<Option<Value>, ParamsError> {
        decode(Some(&RawValue::from_string(text.to_owned()).unwrap()))
    }

    /// `params` whose `arguments.a` holds `arrays` nested arrays around `1`: nesting level
    /// `arrays + 2` (params, arguments, then the arrays).
    fn nested(arrays: usize) -> String {
        format!(r#"{{"name":"x","arguments":{{"a":{}1{}}}}}"#, "[".repeat(arrays), "]".repeat(arrays))
    }

    #[test]
    fn the_depth_limit_is_exact_and_names_the_place() {
        assert!(decode_text(&nested(MAX_DEPTH - 2)).unwrap().is_some(), "level {MAX_DEPTH} decodes");
        let error = decode_text(&nested(MAX_DEPTH - 1)).unwrap_err();
        assert_eq!(
            error,
            ParamsError::TooDeep { path: "params.arguments.a[0][0][0][0][0][0]…".into() },
            "level {} is refused",
            MAX_DEPTH + 1
        );
        assert_eq!(
            error.to_string(),
            "Invalid params: params.arguments.a[0][0][0][0][0][0]… is nested deeper than 127 levels of arrays \
             and objects (the JSON parser's limit); send a flatter structure"
        );
        // serde_json agrees on the edge: the scanner is only consulted when serde_json refused.
        assert!(serde_json::from_str::<Value>(&nested(MAX_DEPTH - 2)).is_ok());
        assert!(serde_json::from_str::<Value>(&nested(MAX_DEPTH - 1)).is_err());
    }

    #[test]
    fn a_deep_object_names_its_keys_and_indices() {
        let deep = format!(r#"{{"list":[0,{{"weird key":{}1{}}}]}}"#, "{\"k\":".repeat(200), "}".repeat(200));
        let error = decode_text(&deep).unwrap_err();
        let ParamsError::TooDeep { path } = error else { panic!("not too deep: {error:?}") };
        assert_eq!(path, r#"params.list[1]["weird key"].k.k.k.k.k…"#);
    }

    #[test]
    fn an_out_of_range_number_is_named_with_its_path() {
        let error = decode_text(r#"{"name":"x","arguments":{"ok":1e308,"items":[1,2,{"size":-1e400}]}}"#).unwrap_err();
        assert_eq!(
            error,
            ParamsError::NumberOutOfRange { path: "params.arguments.items[2].size".into(), literal: "-1e400".into() }
        );
        assert!(error.to_string().contains("must fit in a 64-bit float"), "{error}");
        // Strings that look like numbers, keys with escapes and large but finite numbers are fine.
        let fine = r#"{"s":"1e400","k\"ey":[123456789012345678901234567890, 1.7976931348623157e308]}"#;
        assert!(decode_text(fine).unwrap().is_some());
    }

    #[test]
    fn the_path_skips_keys_inside_strings_and_quotes_long_literals() {
        let text = format!(r#"{{"a":"{{[,\"","b":[{{}}, "x,y", 1{}e999]}}"#, "0".repeat(100));
        let ParamsError::NumberOutOfRange { path, literal } = decode_text(&text).unwrap_err() else { panic!() };
        assert_eq!(path, "params.b[2]");
        assert_eq!(literal.chars().count(), MAX_QUOTED_NUMBER + 1, "clipped, with an ellipsis: {literal}");
    }

    #[test]
    fn absent_params_are_none() {
        assert_eq!(decode(None), Ok(None));
        assert_eq!(decode_text("[1]"), Ok(Some(serde_json::json!([1]))));
    }
}
