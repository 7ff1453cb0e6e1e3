//! Glob patterns, compiled once per call and matched on `/`-joined paths
//! relative to the walk's start, with the reference server's semantics
//! (minimatch with `dot: true`: `*` does not cross `/`, dotfiles match,
//! case-sensitive, no basename matching).
//!
//! Owns: pattern compilation and the size bounds on patterns. May touch:
//! nothing (no I/O).

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::error::{Error, Result};
use crate::limits::{MAX_BRACE_ALTERNATIVES, MAX_BRACE_DEPTH, MAX_PATTERN_TOTAL_BYTES};

fn build(pattern: &str) -> Result<globset::Glob> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| Error::InvalidGlob {
            pattern: pattern.to_owned(),
            reason: e.kind().to_string(),
        })
}

fn check_sizes(patterns: &[String], max_bytes: usize, max_count: usize) -> Result<()> {
    if patterns.len() > max_count {
        return Err(Error::TooManyPatterns {
            given: patterns.len(),
            limit: max_count,
        });
    }
    for p in patterns {
        check_one(p, max_bytes)?;
    }
    let total: usize = patterns.iter().map(String::len).sum();
    if total > MAX_PATTERN_TOTAL_BYTES {
        return Err(Error::PatternsTooLong {
            total,
            limit: MAX_PATTERN_TOTAL_BYTES,
        });
    }
    Ok(())
}

/// Refuses one glob that is too long or nests or multiplies braces past the
/// limits (also used for path-rule globs).
pub fn check_one(p: &str, max_bytes: usize) -> Result<()> {
    if p.len() > max_bytes {
        return Err(Error::PatternTooLong {
            len: p.len(),
            limit: max_bytes,
        });
    }
    // Nested braces multiply the alternatives globset compiles; keep them flat.
    let mut depth = 0usize;
    let mut alternatives = 1usize;
    for c in p.chars() {
        match c {
            '{' => {
                depth += 1;
                if depth > MAX_BRACE_DEPTH {
                    return Err(Error::PatternTooComplex {
                        pattern: p.to_owned(),
                        why: format!("braces nest deeper than {MAX_BRACE_DEPTH}"),
                    });
                }
            }
            '}' => depth = depth.saturating_sub(1),
            ',' if depth > 0 => {
                alternatives += 1;
                if alternatives > MAX_BRACE_ALTERNATIVES {
                    return Err(Error::PatternTooComplex {
                        pattern: p.to_owned(),
                        why: format!("more than {MAX_BRACE_ALTERNATIVES} alternatives"),
                    });
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The include pattern of `search_files`.
#[derive(Debug)]
pub struct Pattern(Option<GlobSet>);

impl Pattern {
    /// Compiles `pattern`; an empty pattern matches nothing.
    pub fn new(pattern: &str, max_bytes: usize) -> Result<Self> {
        check_one(pattern, max_bytes)?;
        if pattern.is_empty() {
            return Ok(Self(None));
        }
        let set = GlobSetBuilder::new()
            .add(build(pattern)?)
            .build()
            .map_err(|e| Error::InvalidGlob {
                pattern: pattern.to_owned(),
                reason: e.to_string(),
            })?;
        Ok(Self(Some(set)))
    }

    /// Whether `rel` matches.
    pub fn is_match(&self, rel: &str) -> bool {
        self.0.as_ref().is_some_and(|s| s.is_match(rel))
    }
}

/// How exclude patterns are read: the reference reads them differently in
/// `search_files` and `directory_tree`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExcludeStyle {
    /// `search_files`: each pattern is matched as written.
    Literal,
    /// `directory_tree`: a pattern without `*` also matches as `**/p` and
    /// `**/p/**` (a bare name excludes that name at any depth).
    BareNameAnywhere,
}

/// A set of exclude patterns.
#[derive(Debug)]
pub struct Excludes(GlobSet);

impl Excludes {
    /// Compiles the exclude patterns.
    pub fn new(
        patterns: &[String],
        style: ExcludeStyle,
        max_bytes: usize,
        max_count: usize,
    ) -> Result<Self> {
        check_sizes(patterns, max_bytes, max_count)?;
        let mut b = GlobSetBuilder::new();
        for p in patterns {
            if p.is_empty() {
                continue;
            }
            b.add(build(p)?);
            if style == ExcludeStyle::BareNameAnywhere && !p.contains('*') {
                b.add(build(&format!("**/{p}"))?);
                b.add(build(&format!("**/{p}/**"))?);
            }
        }
        let set = b.build().map_err(|e| Error::InvalidExclude {
            reason: e.to_string(),
        })?;
        Ok(Self(set))
    }

    /// Whether `rel` is excluded.
    pub fn is_match(&self, rel: &str) -> bool {
        self.0.is_match(rel)
    }

    /// Whether no pattern was given (nothing is ever excluded).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimatch_semantics() {
        let p = |s: &str| Pattern::new(s, 1024).unwrap();
        assert!(p("*.txt").is_match("a.txt"));
        assert!(!p("*.txt").is_match("sub/a.txt"));
        assert!(p("**/*.rs").is_match("main.rs"));
        assert!(p("**/*.rs").is_match(".hidden/x.rs"));
        assert!(!p("*.RS").is_match("main.rs"));
        assert!(!p("main.rs").is_match("src/main.rs"));
        assert!(!p("").is_match(""));
        assert!(p("{a,b}.txt").is_match("b.txt"));
    }

    #[test]
    fn exclude_styles() {
        let tree =
            Excludes::new(&["nested".into()], ExcludeStyle::BareNameAnywhere, 1024, 8).unwrap();
        assert!(tree.is_match("sub/nested"));
        assert!(tree.is_match("nested/a"));
        let search = Excludes::new(&["nested".into()], ExcludeStyle::Literal, 1024, 8).unwrap();
        assert!(!search.is_match("sub/nested"));
        assert!(search.is_match("nested"));
    }

    #[test]
    fn bounds() {
        assert!(Pattern::new(&"a".repeat(1025), 1024).is_err());
        assert!(Pattern::new(&"a".repeat(1024), 1024).is_ok());
        assert!(Pattern::new("{{{{a}}}}", 1024).is_err());
        let many: Vec<String> = (0..9).map(|i| i.to_string()).collect();
        assert!(Excludes::new(&many, ExcludeStyle::Literal, 1024, 8).is_err());
        assert!(Excludes::new(&many[..8], ExcludeStyle::Literal, 1024, 8).is_ok());
        let at = vec!["a".repeat(1024); MAX_PATTERN_TOTAL_BYTES / 1024];
        assert!(Excludes::new(&at, ExcludeStyle::Literal, 1024, 256).is_ok());
        let mut past = at.clone();
        past.push("b".to_owned());
        assert!(Excludes::new(&past, ExcludeStyle::Literal, 1024, 256).is_err());
    }
}
