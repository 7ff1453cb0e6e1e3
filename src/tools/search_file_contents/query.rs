//! The query of a content search, from its arguments: the pattern
//! compiled within its bounds, the searcher (context, binary detection,
//! line buffer), the include and exclude globs as `rg -g` reads them, and
//! numeric arguments checked against their range.
//! May touch: nothing (it builds values from the arguments).

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, MmapChoice, SearcherBuilder};

use super::{NAME, Params};
use crate::error::{Error, Result};
use crate::limits::{
    MAX_REGEX_BYTES, MAX_REGEX_COMPILED_BYTES, MAX_REGEX_DFA_BYTES, MAX_SEARCH_LINE_BUFFER,
};
use crate::text::glob::{ExcludeStyle, Excludes};
use crate::tools::Ctx;

/// Compiles the pattern, bounded.
pub(super) fn matcher(p: &Params) -> Result<RegexMatcher> {
    if p.pattern.len() > MAX_REGEX_BYTES {
        return Err(Error::RegexTooLong {
            len: p.pattern.len(),
            limit: MAX_REGEX_BYTES,
        });
    }
    RegexMatcherBuilder::new()
        .case_insensitive(p.case_insensitive)
        .fixed_strings(p.literal)
        .line_terminator(Some(b'\n'))
        .size_limit(MAX_REGEX_COMPILED_BYTES)
        .dfa_size_limit(MAX_REGEX_DFA_BYTES)
        .build(&p.pattern)
        .map_err(|e| {
            let reason = e.to_string();
            if reason.contains("exceeds size limit") {
                Error::RegexTooBig {
                    limit: MAX_REGEX_COMPILED_BYTES,
                }
            } else {
                Error::InvalidRegex { reason }
            }
        })
}

/// How each file is searched: line numbers, `context` lines around each
/// match, binary files skipped unless asked, no memory maps, a bounded line
/// buffer.
pub(super) fn searcher(p: &Params, context: usize) -> SearcherBuilder {
    let mut b = SearcherBuilder::new();
    b.line_number(true)
        .before_context(context)
        .after_context(context)
        .binary_detection(if p.binary {
            BinaryDetection::none()
        } else {
            BinaryDetection::quit(b'\0')
        })
        .memory_map(MmapChoice::never())
        .heap_limit(Some(MAX_SEARCH_LINE_BUFFER));
    b
}

/// Globs where one without `/` matches a name at any depth, as in `rg -g`.
pub(super) fn globs(patterns: &[String], ctx: &Ctx) -> Result<Excludes> {
    let anywhere: Vec<String> = patterns
        .iter()
        .map(|p| {
            if p.contains('/') || p.is_empty() {
                p.clone()
            } else {
                format!("**/{p}")
            }
        })
        .collect();
    Excludes::new(
        &anywhere,
        ExcludeStyle::Literal,
        ctx.limits.max_pattern_bytes + 3,
        ctx.limits.max_exclude_patterns,
    )
}

pub(super) fn bounded(field: &'static str, given: u64, min: u64, max: u64) -> Result<u64> {
    if given < min || given > max {
        return Err(Error::ArgumentOutOfRange {
            tool: NAME,
            field,
            given,
            min,
            max,
        });
    }
    Ok(given)
}
