//! `search_file_contents`: regex search of file contents beneath a root,
//! with ripgrep's library crates (`grep-regex`, `grep-searcher`) and
//! `rg`'s defaults (ignore files honoured, hidden files and binary files
//! skipped), bounded in matches, line length, pattern size, reply size and
//! time. Touches: scope, file, the walk engine's content search
//! ([`crate::fs::walk::chunks`]: the files walked in path order, searched
//! in parallel a chunk at a time and merged in path order, so the result
//! and where a cut falls are the same on every run).
//!
//! Owns: the tool's entry, its arguments and its reply plan, and [`run`],
//! which resolves the path and puts the pieces together: the pattern and
//! searcher from the arguments (`query`), the search, and the reply
//! ([`crate::text::matches`]).

use std::time::{Duration, Instant};

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Bound, Capability, Ctx, Hints, Notes, Output, OutputKind, Plan, Tool, params, schema};
use crate::error::{Error, Result};
use crate::fs::cursor::{Cursor, token_room};
use crate::fs::walk::chunks::{CHUNK_HELD_CHARS, Grep, Searched, search_file, search_tree};
use crate::fs::walk::files::Filter;
use crate::fs::walk::{Bounds, Stop};
use crate::limits::Limits;
use crate::limits::{
    MAX_SEARCH_CONTEXT_LINES, MAX_SEARCH_RESULTS, SEARCH_DEADLINE_SECS, SEARCH_DEFAULT_RESULTS,
};
pub use crate::text::matches::OutputMode;
use crate::text::matches::{Facts, Next, Reply, content_room};

mod query;

use query::{bounded, globs, matcher, searcher};

/// The tool description.
pub const DESCRIPTION: &str = "Search file contents for a regular expression (Rust regex syntax), like `rg -n`; prefer it to reading whole files. 'path' is a directory or one file. As ripgrep does, skips ignored, hidden and binary files unless asked, and never follows symbolic links. 'content' prints 'path:line:text' (context lines 'path-line-text', groups split by '--'); 'files' lists matching files; 'count' prints 'path:count'. Sorted by path.";

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Read,
    title: "Search File Contents",
    description: DESCRIPTION,
    hints: Hints::READ_ONLY,
    input: schema::<Params>,
    paths: &["path"],
    output: OutputKind::Structured(output_schema),
    plan,
    notes: Notes {
        advice: Some((0, "to find text, search_file_contents beats reading files")),
        bound: Some(Bound::Walk),
    },
    run: |ctx, args| run(ctx, params(NAME, args)?),
};

const NAME: &str = "search_file_contents";

/// The reply memory of a search: the lines its chunk holds while it runs
/// ([`CHUNK_HELD_CHARS`], which counts 16 bytes of overhead a line), and the
/// reply: its text (up to four bytes a character) and its
/// `structuredContent` as it sits on the heap (up to
/// [`STRUCTURED_HEAP_PER_CHAR`] bytes per character of its JSON, which
/// keeps the same character budget as the text).
fn plan(l: &Limits) -> Plan {
    let chars = content_room(l.max_reply_chars, MAX_SEARCH_RESULTS as u64) as u64;
    Plan::fixed(
        (CHUNK_HELD_CHARS as u64)
            .saturating_add(chars.saturating_mul(4 + STRUCTURED_HEAP_PER_CHAR)),
    )
}

/// Heap bytes a `structuredContent` holds per character of its JSON, at
/// most: a match of one-character path and text is 33 characters of JSON
/// and about 930 bytes of `serde_json::Value` (a B-tree node, three keys,
/// two strings), 28 per character ([`crate::mcp`] counts the heap of a
/// built reply exactly; this is what it reserves before).
const STRUCTURED_HEAP_PER_CHAR: u64 = 32;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    /// The directory to search under, or one file.
    pub path: String,
    /// Matched against each line.
    pub pattern: String,
    /// Match pattern as a literal string.
    #[serde(default)]
    pub literal: bool,
    /// Ignore case.
    #[serde(default)]
    pub case_insensitive: bool,
    /// Globs of files to search (one without '/' matches a name at any depth).
    #[serde(default)]
    pub include: Vec<String>,
    /// Globs of files and directories to skip.
    #[serde(default)]
    pub exclude_patterns: Vec<String>,
    /// Context lines around each match (at most 10).
    #[serde(default)]
    pub context_lines: u64,
    /// Lines ('content') or files to return (default 200, at most 5000).
    pub max_results: Option<u64>,
    /// Default 'content'.
    #[serde(default)]
    pub output_mode: OutputMode,
    /// Search files that .gitignore or .ignore name.
    #[serde(default)]
    pub no_ignore: bool,
    /// Search hidden files (with noIgnore, .git/ too).
    #[serde(default)]
    pub hidden: bool,
    /// Search binary files as text.
    #[serde(default)]
    pub binary: bool,
    // Where to go on: the cursor a cut reply gave. No doc comment, so no
    // description in tools/list: the cut reply's notice says how to use it.
    #[serde(default)]
    #[schemars(with = "String")]
    #[expect(
        missing_docs,
        reason = "a doc comment would become its description in tools/list"
    )]
    pub cursor: Option<String>,
}

/// The `outputSchema` of the tool: the result as data (the text block
/// says the same in `rg`'s format; it is not repeated here, so that each
/// form fits the reply budget on its own). `before` and `after` are there
/// when context lines were asked for.
pub fn output_schema() -> Value {
    let line = json!({"type": "object", "properties": {"line": {"type": "integer"}, "text": {"type": "string"}}, "required": ["line", "text"], "additionalProperties": false});
    json!({
        "type": "object",
        "properties": {
            "matches": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "line": {"type": "integer"},
                    "text": {"type": "string"},
                    "before": {"type": "array", "items": line},
                    "after": {"type": "array", "items": line}
                },
                "required": ["path", "line", "text"],
                "additionalProperties": false
            }},
            "files": {"type": "array", "items": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "count": {"type": "integer"}},
                "required": ["path"],
                "additionalProperties": false
            }},
            "filesSearched": {"type": "integer"},
            "truncated": {"type": "boolean"}
        },
        "required": ["filesSearched", "truncated"],
        "additionalProperties": false
    })
}

/// How long a call may run: [`SEARCH_DEADLINE_SECS`]. Debug builds only:
/// `TULS_DEBUG_SEARCH_DEADLINE_MS` shortens it, so the tests can reach it.
fn deadline_after() -> Duration {
    crate::limits::debug_bound(
        "TULS_DEBUG_SEARCH_DEADLINE_MS",
        Duration::from_millis,
        Duration::from_secs(SEARCH_DEADLINE_SECS),
    )
}

/// Runs the search.
pub fn run(ctx: &Ctx, mut p: Params) -> Result<Output> {
    let cursor = p.cursor.take();
    let context = bounded(
        "contextLines",
        p.context_lines,
        0,
        MAX_SEARCH_CONTEXT_LINES as u64,
    )? as usize;
    let max = bounded(
        "maxResults",
        p.max_results.unwrap_or(SEARCH_DEFAULT_RESULTS as u64),
        1,
        MAX_SEARCH_RESULTS as u64,
    )?;
    let matcher = matcher(&p)?;
    let include = if p.include.is_empty() {
        None
    } else {
        Some(globs(&p.include, ctx)?)
    };
    let filter = Filter {
        hidden: p.hidden,
        ignore_files: !p.no_ignore,
        include,
        exclude: globs(&p.exclude_patterns, ctx)?,
    };
    // Resolve once: the walk and the printed paths use the same root.
    let t = ctx.scope.resolve(&p.path)?;
    let md = t.metadata("scandir")?;
    let bind = super::cursor_binding(NAME, &t, &p);
    let from = cursor.map(|c| Cursor::decode(&c, &bind)).transpose()?;
    // Paths are printed under the client's own spelling of `path`, as
    // search_files prints them.
    let prefix = super::search_files::client_prefix(&t.given);
    let deadline = Instant::now() + deadline_after();
    let mut reply = Reply::new(
        p.output_mode,
        prefix,
        context,
        max,
        ctx.limits.max_reply_chars,
    );
    let bounds = Bounds {
        deadline: Some(deadline),
        ..ctx.walk_limits()
    };
    let searcher = searcher(&p, context);
    let grep = Grep {
        matcher: &matcher,
        searcher: &searcher,
        mode: p.output_mode,
    };
    let done = if md.is_dir() {
        search_tree(&t, &filter, &grep, &bounds, from.as_ref(), &mut reply)?
    } else {
        // One file: opened as the read tools open it (regular files only,
        // never blocking).
        let (file, _) = crate::fs::file::open_regular(&ctx.io, &t)?;
        search_file(file, &t.given, &grep, &bounds, from.as_ref(), &mut reply)
    };
    let Searched {
        mut stop,
        cut,
        searched,
        binary,
        failed,
        big_ignore_files: big_ignore,
    } = done;
    if ctx.cancel.is_cancelled() {
        return Err(Error::Cancelled);
    }
    if stop.is_none() && Instant::now() >= deadline {
        stop = Some(Stop::Deadline);
    }
    let facts = Facts {
        halted: stop.map(|s| s.halted(deadline_after())),
        failed,
        big_ignore,
        binary,
        binary_asked: p.binary,
        searched,
    };
    // A cut reply goes on from a cursor, unless the walk itself stopped
    // early (its files after the stop were not all listed).
    let next = match cut {
        Some((rel, skip))
            if !matches!(
                stop,
                Some(Stop::Deadline | Stop::Entries(_) | Stop::Text(_))
            ) =>
        {
            let c = Cursor {
                rel,
                skip,
                flags: 0,
            };
            if c.fits(token_room(ctx.limits.max_reply_chars)) {
                Next::Cursor(c.encode(&bind)?)
            } else {
                Next::TooDeep
            }
        }
        _ => Next::Narrow,
    };
    let (text, data) = reply.finish(&facts, &next);
    Ok(Output::Structured { text, data })
}
