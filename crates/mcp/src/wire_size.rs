//! What text costs on the wire, so result bounds hold after encoding.
//!
//! A bound on the bytes a tool captured is not a bound on the response: JSON escapes control
//! characters six-fold (`\u0000`), and a tool's JSON payload travels as a string inside another
//! JSON document (an MCP text block inside the JSON-RPC frame; `payloadJSON` inside a gateway
//! frame), so each byte is escaped twice. One megabyte of NUL bytes became 14.7 MB on the wire.
//! Bounds are therefore set in encoded bytes: [`encoded_len`] measures, [`prefix_within`] cuts.

/// How many JSON string encodings a text goes through before it is on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nesting {
    /// A string in the frame itself (a tool's plain text result).
    Once,
    /// A string inside a JSON document that is itself sent as a string (a field of a tool's JSON
    /// payload: MCP text block, gateway `payloadJSON`).
    Twice,
}

/// Bytes `c` occupies on the wire after `nesting`'s encodings (serde_json's escaping: `\"`, `\\`,
/// `\n`-style short escapes, `\u00XX` for other control characters, everything else verbatim).
pub fn char_cost(c: char, nesting: Nesting) -> usize {
    match (c, nesting) {
        ('"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}', Nesting::Once) => 2,
        ('"' | '\\', Nesting::Twice) => 4,
        ('\n' | '\r' | '\t' | '\u{8}' | '\u{c}', Nesting::Twice) => 3,
        (c, Nesting::Once) if (c as u32) < 0x20 => 6,
        (c, Nesting::Twice) if (c as u32) < 0x20 => 7,
        (c, _) => c.len_utf8(),
    }
}

/// The encoded size of `text` (without the surrounding quotes).
pub fn encoded_len(text: &str, nesting: Nesting) -> usize {
    text.chars().map(|c| char_cost(c, nesting)).sum()
}

/// The longest prefix of `text` (cut at a character boundary) whose encoded size is at most
/// `budget`.
pub fn prefix_within(text: &str, budget: usize, nesting: Nesting) -> &str {
    let mut spent = 0;
    for (at, c) in text.char_indices() {
        spent += char_cost(c, nesting);
        if spent > budget {
            return &text[..at];
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The real encoder agrees with the cost table for every ASCII character and a few others.
    #[test]
    fn costs_match_serde_json_at_both_depths() {
        let samples: Vec<char> = (0u8..=0x7f).map(char::from).chain(['é', '€', '😀', '\u{fffd}']).collect();
        for c in samples {
            let once = serde_json::to_string(&c.to_string()).unwrap();
            assert_eq!(char_cost(c, Nesting::Once), once.len() - 2, "{c:?} once");
            let twice = serde_json::to_string(&once[1..once.len() - 1]).unwrap();
            assert_eq!(char_cost(c, Nesting::Twice), twice.len() - 2, "{c:?} twice");
        }
    }

    #[test]
    fn a_prefix_stops_at_the_budget_exactly() {
        let text = "a\0b";
        assert_eq!(encoded_len(text, Nesting::Twice), 9);
        assert_eq!(prefix_within(text, 9, Nesting::Twice), text);
        assert_eq!(prefix_within(text, 8, Nesting::Twice), "a\0");
        assert_eq!(prefix_within(text, 7, Nesting::Twice), "a");
        assert_eq!(prefix_within("ééé", 5, Nesting::Once), "éé", "never inside a character");
        assert_eq!(prefix_within("", 0, Nesting::Once), "");
    }
}
