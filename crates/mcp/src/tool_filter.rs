//! [`ToolFilter`]: `--tools PATTERNS`, a user's least-privilege narrowing of what a surface
//! advertises and runs (`clawmcp node --tools`, `clawmcp tools --tools`).
//!
//! Comma-separated globs over tool names: `*` matches any characters, dots included
//! (`device.*` matches `device.info`, `sessions_*` matches `sessions_list`), `?`, `[abc]` and
//! `{a,b}` work as usual (commas inside braces belong to the glob), matching is case-sensitive
//! like tool names, and a blank list means every tool. A surface applies it to `tools/list`
//! *and* `tools/call`: a client can call a name it was never shown, so hiding a tool is no
//! boundary unless the call is refused too.

use globset::{Glob, GlobSet, GlobSetBuilder};

/// A `--tools` pattern list that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid tool pattern `{pattern}`: {reason}. Patterns are comma-separated globs over tool names, e.g. \
     `system.which,device.*` or `read,grep,sessions_*`"
)]
pub struct ToolFilterError {
    pub pattern: String,
    pub reason: String,
}

/// Which tools are served: every tool, or those matching at least one glob.
#[derive(Debug, Clone, Default)]
pub struct ToolFilter {
    /// `None`: every tool.
    globs: Option<Globs>,
}

#[derive(Debug, Clone)]
struct Globs {
    patterns: Vec<String>,
    set: GlobSet,
}

impl ToolFilter {
    /// Serves every tool.
    pub fn all() -> Self {
        ToolFilter::default()
    }

    /// Comma-separated globs, each trimmed, blanks dropped. Nothing left means every tool, as
    /// an empty `OPENCLAW_MCP_ENABLED_TOOLS` does.
    pub fn parse(spec: &str) -> Result<Self, ToolFilterError> {
        let patterns: Vec<String> = split_top_level_commas(spec)
            .into_iter()
            .map(str::trim)
            .filter(|pattern| !pattern.is_empty())
            .map(str::to_owned)
            .collect();
        if patterns.is_empty() {
            return Ok(ToolFilter::all());
        }
        let mut builder = GlobSetBuilder::new();
        for pattern in &patterns {
            let glob = Glob::new(pattern)
                .map_err(|error| ToolFilterError { pattern: pattern.clone(), reason: error.kind().to_string() })?;
            builder.add(glob);
        }
        let set = builder
            .build()
            .map_err(|error| ToolFilterError { pattern: spec.trim().to_owned(), reason: error.to_string() })?;
        Ok(ToolFilter { globs: Some(Globs { patterns, set }) })
    }

    pub fn allows(&self, name: &str) -> bool {
        self.globs.as_ref().is_none_or(|globs| globs.set.is_match(name))
    }

    pub fn is_restricted(&self) -> bool {
        self.globs.is_some()
    }

    /// The patterns no name in `names` matches, in the order given.
    pub fn unmatched<'n>(&self, names: impl IntoIterator<Item = &'n str>) -> Vec<&str> {
        let Some(globs) = &self.globs else { return Vec::new() };
        let mut hit = vec![false; globs.patterns.len()];
        for name in names {
            for index in globs.set.matches(name) {
                hit[index] = true;
            }
        }
        globs.patterns.iter().zip(hit).filter(|(_, hit)| !hit).map(|(pattern, _)| pattern.as_str()).collect()
    }

    /// The patterns as given (normalised), for messages.
    pub fn describe(&self) -> String {
        match &self.globs {
            None => "*".to_owned(),
            Some(globs) => globs.patterns.join(","),
        }
    }
}

/// Splits at the commas outside `{...}`, so `sessions_{list,history}` stays one pattern.
fn split_top_level_commas(spec: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (index, character) in spec.char_indices() {
        match character {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&spec[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    parts.push(&spec[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: &[&str] = &["read", "grep", "sessions_list", "sessions_history", "sessions_yield", "web.fetch"];

    fn allowed(spec: &str) -> Vec<&'static str> {
        let filter = ToolFilter::parse(spec).unwrap();
        NAMES.iter().copied().filter(|name| filter.allows(name)).collect()
    }

    #[test]
    fn globs_match_whole_names_case_sensitively() {
        assert_eq!(allowed("read,sessions_*"), ["read", "sessions_list", "sessions_history", "sessions_yield"]);
        assert_eq!(allowed("web*"), ["web.fetch"], "`*` crosses dots");
        assert_eq!(allowed("sessions_list"), ["sessions_list"]);
        assert_eq!(allowed("ses"), Vec::<&str>::new(), "a plain name is exact, not a prefix");
        assert_eq!(allowed("READ"), Vec::<&str>::new());
        assert_eq!(allowed(" sessions_{list,history} ,grep,"), ["grep", "sessions_list", "sessions_history"]);
    }

    #[test]
    fn blank_lists_allow_everything_and_bad_globs_name_the_pattern() {
        for blank in ["", " ", ",", " , ,"] {
            let filter = ToolFilter::parse(blank).unwrap();
            assert!(!filter.is_restricted() && filter.allows("anything"), "{blank:?}");
        }
        let error = ToolFilter::parse("read,sessions_[").unwrap_err();
        assert_eq!(error.pattern, "sessions_[");
        assert!(error.to_string().contains("comma-separated globs"), "{error}");
    }

    #[test]
    fn unmatched_lists_each_pattern_that_selects_nothing() {
        let filter = ToolFilter::parse("read,raed,sessions_*,nope*").unwrap();
        assert_eq!(filter.unmatched(NAMES.iter().copied()), ["raed", "nope*"]);
        assert!(ToolFilter::all().unmatched(NAMES.iter().copied()).is_empty());
        assert_eq!(filter.describe(), "read,raed,sessions_*,nope*");
    }
}
