//! Which allowlist entry, if any, authorizes a resolved command.
//!
//! An entry's `pattern` is a glob over the **resolved, canonical, absolute** executable path
//! (symlinks followed: `/bin/sh` is matched as `/usr/bin/dash` on Debian). `*` matches within one
//! path segment, `**` any number of segments (only as a whole segment), `?` one character other
//! than `/`. Matching is case-sensitive because Linux paths are; upstream matches ignoring case
//! because it was written for Windows paths. Patterns without a `/` (bare names like `ls`) never
//! match: a name says nothing about which binary runs. `[...]` classes and `{a,b}` alternates
//! follow `globset`.
//!
//! `argPattern` binds the arguments (everything after the executable):
//! - containing a NUL: a regex over the arguments each followed by NUL (no arguments: two NULs).
//!   This is the form "allow always" writes: `^<escaped args each followed by NUL>$`.
//! - `sha256:argv:<hex>`: the macOS node's hashed form, compared exactly.
//! - any other `sha256:` form: unknown, never matches (fail closed).
//! - anything else: a hand-written regex searched in the arguments joined by spaces.
//!
//! An entry with a `source` but no `argPattern` is a generated rule that lost its binding and is
//! ignored. When several entries match, an argument-bound one wins over a path-only one.

use globset::{Glob, GlobBuilder, GlobMatcher};
use regex::RegexBuilder;
use sha2::{Digest, Sha256};

use super::model::AllowlistEntry;

const NUL: char = '\0';
const HASHED_PREFIX: &str = "sha256:argv:";

/// Compiled-size cap for a stored argument regex: the file is remote-influenced input.
const ARG_REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Whether `pattern` can ever match: non-empty, contains `/`, `**` only as a whole segment,
/// and a well-formed glob.
pub fn is_valid_pattern(pattern: &str) -> bool {
    compile_pattern(pattern).is_some()
}

fn compile_pattern(pattern: &str) -> Option<GlobMatcher> {
    let pattern = pattern.trim();
    if !pattern.contains('/') || has_partial_double_star(pattern) {
        return None;
    }
    let glob: Glob = GlobBuilder::new(pattern)
        .literal_separator(true)
        .case_insensitive(false)
        .backslash_escape(true)
        .build()
        .ok()?;
    Some(glob.compile_matcher())
}

/// `globset` quietly reads `/opt/tools**` as `/opt/tools*`; upstream rejects such patterns, and
/// so do we, rather than give a rule a meaning its author did not write.
fn has_partial_double_star(pattern: &str) -> bool {
    let bytes = pattern.as_bytes();
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] == b'*' && bytes[i + 1] == b'*' {
            let starts_segment = i == 0 || bytes[i - 1] == b'/';
            let ends_segment = i + 2 == bytes.len() || bytes[i + 2] == b'/';
            if !starts_segment || !ends_segment {
                return true;
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    false
}

/// Whether `pattern` matches the absolute `path`.
pub fn path_matches(pattern: &str, path: &str) -> bool {
    compile_pattern(pattern).is_some_and(|glob| glob.is_match(path))
}

/// The glob that matches exactly `path` and nothing else, as [`compile_pattern`] reads patterns,
/// or `None` where no pattern can say that.
///
/// Each glob metacharacter becomes a one-character class (`*` -> `[*]`, as `globset::escape`
/// writes), and so do two characters `globset::escape` leaves alone but that mean something
/// here: the backslash (an escape, since patterns are built with `backslash_escape`) and
/// whitespace at either end (patterns are trimmed first). Without them an "allow always" for
/// `/opt/tool ` recorded a rule for `/opt/tool`, one for `/opt/a\b` a rule for `/opt/ab`, and one
/// for `/opt/a\*` a rule for every `/opt/a[...]`. Whitespace outside ASCII at either end cannot
/// be kept: trimming removes it bare, and `globset` never matches a class holding a non-ASCII
/// character.
pub fn exact_path_pattern(path: &str) -> Option<String> {
    let last = path.chars().count().saturating_sub(1);
    let mut pattern = String::with_capacity(path.len() + 8);
    for (index, c) in path.chars().enumerate() {
        let trimmed_away = c.is_whitespace() && (index == 0 || index == last);
        if trimmed_away && !c.is_ascii() {
            return None;
        }
        if matches!(c, '?' | '*' | '[' | ']' | '{' | '}' | '\\') || trimmed_away {
            pattern.extend(['[', c, ']']);
        } else {
            pattern.push(c);
        }
    }
    Some(pattern)
}

/// The entry authorizing `path` with `args`, preferring argument-bound entries.
pub fn find_match<'e>(entries: &'e [AllowlistEntry], path: &str, args: &[String]) -> Option<&'e AllowlistEntry> {
    let mut path_only = None;
    for entry in entries {
        if !path_matches(&entry.pattern, path) {
            continue;
        }
        match entry.arg_pattern.as_deref().filter(|p| !p.is_empty()) {
            Some(arg_pattern) => {
                if arg_pattern_matches(arg_pattern, args) {
                    return Some(entry);
                }
            }
            None => {
                let generated = entry.source.as_deref().is_some_and(|s| !s.trim().is_empty());
                if !generated && path_only.is_none() {
                    path_only = Some(entry);
                }
            }
        }
    }
    path_only
}

/// Checks a hand-written `argPattern` (the form `clawmcp approvals allow --args-pattern` writes:
/// a regex searched in the arguments joined by spaces) before it is stored, compiled exactly as
/// [`arg_pattern_matches`] compiles it, so a rule that is accepted can match and one that could
/// never match is refused with the reason instead of silently allowing nothing.
pub fn check_hand_written_arg_pattern(arg_pattern: &str) -> Result<(), String> {
    if arg_pattern.is_empty() {
        return Err("it is empty; leave --args-pattern out to allow any arguments".to_string());
    }
    if arg_pattern.contains(NUL) {
        return Err("it contains a NUL character, which marks the generated allow-always form".to_string());
    }
    if arg_pattern.starts_with("sha256:") {
        return Err("it starts with `sha256:`, which marks a hashed argument binding".to_string());
    }
    compile_arg_regex(arg_pattern).map(|_| ()).map_err(|error| error.to_string())
}

fn compile_arg_regex(arg_pattern: &str) -> Result<regex::Regex, regex::Error> {
    RegexBuilder::new(arg_pattern).size_limit(ARG_REGEX_SIZE_LIMIT).build()
}

/// The NUL-form subject: each argument followed by NUL; no arguments is two NULs so it differs
/// from one empty argument.
pub fn nul_subject(args: &[String]) -> String {
    if args.is_empty() {
        return "\0\0".to_string();
    }
    args.iter().fold(String::new(), |mut subject, arg| {
        subject.push_str(arg);
        subject.push(NUL);
        subject
    })
}

/// The `argPattern` an "allow always" decision stores: anchored, every argument escaped.
pub fn build_arg_pattern(args: &[String]) -> String {
    if args.is_empty() {
        return "^\0\0$".to_string();
    }
    let mut pattern = String::from("^");
    for arg in args {
        pattern.push_str(&escape_regex_literal(arg));
        pattern.push(NUL);
    }
    pattern.push('$');
    pattern
}

/// Escapes only the characters that are syntax in both Rust and ECMAScript regexes. The gateway
/// and the macOS node read the same file; `regex::escape` also escapes `#`, `&`, `-` and `~`,
/// which a JavaScript regex in unicode mode rejects as an invalid escape.
fn escape_regex_literal(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '^' | '$' | '.' | '|' | '?' | '*' | '+' | '(' | ')' | '[' | ']' | '{' | '}') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// The macOS node's hashed binding: SHA-256 over the argument count and each argument with its
/// UTF-8 length, NUL-separated, so no two argument lists share a rendering.
pub fn hashed_arg_pattern(args: &[String]) -> String {
    let mut rendering = format!("{}{NUL}", args.len());
    for arg in args {
        rendering.push_str(&format!("{}{NUL}{arg}{NUL}", arg.len()));
    }
    let digest: String = Sha256::digest(rendering.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    format!("{HASHED_PREFIX}{digest}")
}

/// Whether a stored `argPattern` accepts `args`. Malformed patterns never match.
pub fn arg_pattern_matches(arg_pattern: &str, args: &[String]) -> bool {
    if arg_pattern.starts_with(HASHED_PREFIX) {
        return arg_pattern == hashed_arg_pattern(args);
    }
    if arg_pattern.starts_with("sha256:") {
        return false;
    }
    let Ok(regex) = compile_arg_regex(arg_pattern) else {
        return false;
    };
    if arg_pattern.contains(NUL) { regex.is_match(&nul_subject(args)) } else { regex.is_match(&args.join(" ")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn entry(pattern: &str, arg_pattern: Option<&str>, source: Option<&str>) -> AllowlistEntry {
        AllowlistEntry {
            pattern: pattern.into(),
            arg_pattern: arg_pattern.map(Into::into),
            source: source.map(Into::into),
            ..Default::default()
        }
    }

    #[test]
    fn single_star_stays_within_one_segment() {
        assert!(path_matches("/usr/bin/*", "/usr/bin/ls"));
        assert!(!path_matches("/usr/bin/*", "/usr/bin/x/ls"));
        assert!(path_matches("/usr/*/ls", "/usr/bin/ls"));
        assert!(!path_matches("/usr/*/ls", "/usr/local/bin/ls"));
        assert!(path_matches("/usr/bin/py*", "/usr/bin/python3"));
    }

    #[test]
    fn double_star_crosses_segments() {
        assert!(path_matches("/usr/**", "/usr/bin/ls"));
        assert!(path_matches("/usr/**/ls", "/usr/local/bin/ls"));
        assert!(path_matches("/usr/**/ls", "/usr/ls"), "** may match zero segments");
        assert!(path_matches("**/ls", "/usr/bin/ls"));
        assert!(!path_matches("**/ls", "/usr/bin/lsblk"), "**/name anchors at a segment boundary");
        assert!(!path_matches("/usr/**/ls", "/opt/bin/ls"));
    }

    #[test]
    fn double_star_inside_a_segment_is_invalid() {
        assert!(!is_valid_pattern("/opt/tools**"));
        assert!(!is_valid_pattern("/opt/**tools"));
        assert!(!path_matches("/opt/tools**", "/opt/toolsX"));
        assert!(is_valid_pattern("/opt/**"));
    }

    #[test]
    fn question_mark_is_one_non_separator_character() {
        assert!(path_matches("/usr/bin/l?", "/usr/bin/ls"));
        assert!(!path_matches("/usr/bin/l?", "/usr/bin/l"));
        assert!(!path_matches("/usr/bin/l?", "/usr/bin/lsx"));
        assert!(!path_matches("/usr/bin?ls", "/usr/bin/ls"));
    }

    #[test]
    fn matching_is_case_sensitive_and_anchored() {
        assert!(!path_matches("/usr/bin/LS", "/usr/bin/ls"));
        assert!(!path_matches("/usr/bin/l", "/usr/bin/ls"));
        assert!(!path_matches("/bin/ls", "/usr/bin/ls"));
    }

    #[test]
    fn basename_only_patterns_never_match() {
        assert!(!is_valid_pattern("ls"));
        assert!(!is_valid_pattern("*"));
        assert!(!is_valid_pattern("  "));
        assert!(find_match(&[entry("ls", None, None), entry("*", None, None)], "/usr/bin/ls", &[]).is_none());
    }

    #[test]
    fn exact_patterns_escape_glob_syntax() {
        let path = "/opt/a*b/[x]/c?";
        let pattern = exact_path_pattern(path).unwrap();
        assert!(path_matches(&pattern, path));
        assert!(!path_matches(&pattern, "/opt/aZZb/x/cd"));
    }

    /// Found by `fuzz/fuzz_targets/exec_approvals.rs` (minimised input: the path `/ `): the
    /// pattern was trimmed before compiling, so the exact pattern of a path ending in whitespace
    /// matched the path without it and not the path itself.
    #[test]
    fn exact_patterns_survive_trimming_and_backslash_escapes() {
        for (path, other) in [
            ("/ ", "/"),
            ("/opt/tool ", "/opt/tool"),
            ("/opt/tool \t", "/opt/tool "),
            ("/opt/a\\*", "/opt/a[X]"),
            ("/opt/a\\b", "/opt/ab"),
            ("/opt/a\\", "/opt/a"),
            ("/opt/x\\[*]", "/opt/x[y]"),
            ("/opt/my tool/bin", "/opt/my  tool/bin"),
        ] {
            let pattern = exact_path_pattern(path).unwrap();
            assert!(path_matches(&pattern, path), "{pattern:?} must match {path:?}");
            assert!(!path_matches(&pattern, other), "{pattern:?} must not match {other:?}");
        }
        assert_eq!(exact_path_pattern("/opt/my tool/bin").unwrap(), "/opt/my tool/bin", "inner spaces stay readable");
        assert_eq!(exact_path_pattern("/opt/tool\u{a0}"), None, "no pattern keeps non-ASCII whitespace at the end");
    }

    #[test]
    fn nul_form_arg_patterns_bind_exact_arguments() {
        let stored = build_arg_pattern(&args(&["-l", "a b", "x.y"]));
        assert_eq!(stored, "^-l\0a b\0x\\.y\0$");
        assert!(arg_pattern_matches(&stored, &args(&["-l", "a b", "x.y"])));
        assert!(!arg_pattern_matches(&stored, &args(&["-l", "a", "b", "x.y"])), "argument boundaries matter");
        assert!(!arg_pattern_matches(&stored, &args(&["-l", "a b", "xzy"])), "metacharacters are literal");
        assert!(!arg_pattern_matches(&stored, &args(&["-l", "a b", "x.y", "extra"])), "anchored at the end");
    }

    #[test]
    fn nul_form_without_arguments() {
        let stored = build_arg_pattern(&[]);
        assert_eq!(stored, "^\0\0$");
        assert!(arg_pattern_matches(&stored, &[]));
        assert!(!arg_pattern_matches(&stored, &args(&[""])), "no arguments differs from one empty argument");
        assert!(!arg_pattern_matches(&stored, &args(&["x"])));
    }

    #[test]
    fn escaping_round_trips_every_regex_metacharacter() {
        let nasty = args(&[r"\^$.|?*+()[]{}", "#&-~", "é"]);
        assert!(arg_pattern_matches(&build_arg_pattern(&nasty), &nasty));
    }

    #[test]
    fn hand_written_regexes_search_the_space_joined_arguments() {
        assert!(arg_pattern_matches("^--version$", &args(&["--version"])));
        assert!(arg_pattern_matches("status", &args(&["-C", "/r", "status"])));
        assert!(!arg_pattern_matches("^--version$", &args(&["--help"])));
        assert!(!arg_pattern_matches("(unclosed", &args(&["(unclosed"])), "malformed regex fails closed");
    }

    #[test]
    fn hashed_form_matches_exactly_and_unknown_hash_forms_fail_closed() {
        let list = args(&["a", "b c"]);
        let hashed = hashed_arg_pattern(&list);
        assert!(hashed.starts_with("sha256:argv:") && hashed.len() == "sha256:argv:".len() + 64);
        assert!(arg_pattern_matches(&hashed, &list));
        assert!(!arg_pattern_matches(&hashed, &args(&["a", "b", "c"])));
        assert!(!arg_pattern_matches("sha256:cwd-argv:v1:00", &list));
    }

    #[test]
    fn argument_bound_entries_win_over_path_only() {
        let entries =
            vec![entry("/usr/bin/*", None, None), entry("/usr/bin/git", Some("^status\0$"), Some("allow-always"))];
        let found = find_match(&entries, "/usr/bin/git", &args(&["status"])).unwrap();
        assert_eq!(found.source.as_deref(), Some("allow-always"));
        let fallback = find_match(&entries, "/usr/bin/git", &args(&["push"])).unwrap();
        assert_eq!(fallback.pattern, "/usr/bin/*");
    }

    #[test]
    fn generated_entries_without_arg_pattern_are_ignored() {
        for source in ["allow-always", "Allow-Always ", "something-else"] {
            let entries = vec![entry("/usr/bin/git", None, Some(source))];
            assert!(find_match(&entries, "/usr/bin/git", &[]).is_none(), "{source}");
        }
        let blank_source = vec![entry("/usr/bin/git", None, Some("  "))];
        assert!(find_match(&blank_source, "/usr/bin/git", &args(&["x"])).is_some(), "blank source = hand-written");
    }

    #[test]
    fn a_path_only_entry_matches_any_arguments() {
        let entries = vec![entry("/usr/bin/git", None, None)];
        assert!(find_match(&entries, "/usr/bin/git", &args(&["anything", "at all"])).is_some());
        assert!(find_match(&entries, "/usr/bin/gitk", &[]).is_none());
    }

    #[test]
    fn hand_written_arg_patterns_are_checked_as_they_will_be_matched() {
        assert_eq!(check_hand_written_arg_pattern("^-[gu]$"), Ok(()));
        assert!(arg_pattern_matches("^-[gu]$", &args(&["-g"])) && !arg_pattern_matches("^-[gu]$", &args(&["-n"])));
        assert!(check_hand_written_arg_pattern("(").unwrap_err().contains("unclosed group"));
        assert!(check_hand_written_arg_pattern("").unwrap_err().contains("empty"));
        assert!(check_hand_written_arg_pattern("^a\0$").unwrap_err().contains("NUL"));
        assert!(check_hand_written_arg_pattern("sha256:argv:00").unwrap_err().contains("sha256:"));
        // The compiled-size cap that matching applies: a pattern over it could never match.
        let huge = "[a-z]{1000}".repeat(40);
        assert!(compile_arg_regex(&huge).is_err());
        assert!(check_hand_written_arg_pattern(&huge).unwrap_err().contains("size limit"));
        assert_eq!(check_hand_written_arg_pattern("[a-z]{10}"), Ok(()));
    }
}
