//! `search_file_contents`: regex search of file contents beneath a root,
//! with ripgrep's library crates (`grep-regex`, `grep-searcher`) and
//! `rg`'s defaults (ignore files honoured, hidden files and binary files
//! skipped), bounded in matches, line length, pattern size, reply size and
//! time. Touches: scope, search (the walk and the opens), file.
//!
//! The walk lists the files first (in path order); they are then searched
//! in parallel, a chunk at a time, and merged in path order, so the result
//! (and where a cut falls) is the same on every run.
//!
//! Owns: the tool's entry, its arguments and its reply plan, and [`run`],
//! which resolves the path and puts the pieces together: the pattern and
//! searcher from the arguments (`query`), the sink that keeps what the
//! mode needs (`sink`), and the chunked parallel search of the walk's files
//! (`chunks`).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use grep_searcher::Searcher;
use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Bound, Capability, Ctx, Hints, Notes, Output, OutputKind, Plan, Tool, params, schema};
use crate::error::{Error, Result};
use crate::fs::cursor::{Cursor, FLAG_AFTER, token_room};
use crate::fs::search::{self, Bounds, Filter, Stop};
use crate::limits::Limits;
use crate::limits::{
    MAX_SEARCH_CONTEXT_LINES, MAX_SEARCH_RESULTS, MAX_WALK_TEXT_BYTES, SEARCH_DEADLINE_SECS,
    SEARCH_DEFAULT_RESULTS,
};
pub use crate::text::matches::OutputMode;
use crate::text::matches::{Facts, Halted, Next, Reply, content_room};

mod chunks;
mod query;
mod sink;

use chunks::{CHUNK_FILES, CHUNK_HELD_CHARS, Halt, Searching, Want, chunk_held_chars, search_one};
use query::{bounded, globs, matcher, searcher};

/// The position a one-file search's cursor names (only its count of matches
/// given matters).
const ONE_FILE: &[u8] = b"0";

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
    // Where the reply was cut: the file, and its matches given in all.
    let mut cut: Option<(Vec<u8>, u64)> = None;
    // Paths are printed under the client's own spelling of `path`, as
    // search_files prints them.
    let base = t.given.clone();
    let prefix = super::search_files::client_prefix(&t.given);
    let deadline = Instant::now() + deadline_after();
    let mut reply = Reply::new(
        p.output_mode,
        prefix,
        context,
        max,
        ctx.limits.max_reply_chars,
    );
    let max_chars = reply.room();
    let halt = Halt {
        cancel: &ctx.cancel,
        deadline,
        max_chars,
        held_cap: chunk_held_chars(),
    };
    // Progress: entries walked plus files searched (the reporter drops a
    // value that does not grow).
    let (walked, looked) = (AtomicU64::new(0), AtomicU64::new(0));
    let report = || {
        if let Some(pr) = &ctx.progress {
            pr.report(walked.load(Ordering::Relaxed) + looked.load(Ordering::Relaxed));
        }
    };
    let progress = |n: u64| {
        walked.fetch_max(n, Ordering::Relaxed);
        report();
    };
    let searched_progress = |n: u64| {
        looked.store(n, Ordering::Relaxed);
        report();
    };
    let mut searched = 0u64;
    let mut binary = 0u64;
    let mut failed = 0u64;
    let mut stop = None;
    let mut big_ignore = 0u64;
    if !md.is_dir() {
        // One file: opened as the read tools open it (regular files only,
        // never blocking).
        let opened = crate::fs::file::open_regular(&t).map(|(f, _)| f);
        let file = opened?;
        let mut s = searcher(&p, context);
        let skip = from.as_ref().map_or(0, |c| c.skip);
        let want = Want { n: max, skip };
        let hits = search_one(&mut s, Ok(file), &matcher, &p, want, &halt, None);
        searched += u64::from(hits.searched);
        if hits.binary {
            binary += 1;
        } else {
            failed += u64::from(hits.failed);
            reply.add_file(&base, hits);
            // The cursor of a one-file search names no entry of its own.
            cut = reply.cut_at().map(|n| (ONE_FILE.to_vec(), skip + n));
        }
    } else {
        let walk_start = t.walk_start("scandir")?;
        let start = search::open_start(&walk_start.dir, &t.given)?;
        let (ancestors, big) = if filter.ignore_files {
            search::ancestor_levels(&t)
        } else {
            (Vec::new(), 0)
        };
        let bounds = Bounds {
            max_entries: ctx.limits.max_walk_entries,
            max_depth: ctx.limits.max_walk_depth,
            max_path_bytes: MAX_WALK_TEXT_BYTES,
            cancel: &ctx.cancel,
            deadline,
            progress: &progress,
            hide: walk_start.hide.as_ref(),
        };
        let Some(pool) = crate::fs::tree::pool() else {
            return Err(Error::Internal(
                "Cannot search: the walk threads could not be started".to_owned(),
            ));
        };
        let states: Vec<Mutex<(Searcher, search::DirCache, Vec<u8>)>> = (0..pool
            .current_num_threads())
            .map(|_| {
                let dirs = search::DirCache::default();
                Mutex::new((searcher(&p, context), dirs, Vec::new()))
            })
            .collect();
        let mut run = Searching {
            pool,
            states: &states,
            start: &start,
            matcher: &matcher,
            p: &p,
            halt: &halt,
            progress: &searched_progress,
            reply: &mut reply,
            chunk: CHUNK_FILES,
            searched: 0,
            binary: 0,
            failed: 0,
            late: false,
            resume: from.as_ref().map(|c| (c.rel.as_slice(), c.skip)),
            cut: None,
        };
        let end = search::walk_files(
            pool,
            start
                .try_clone()
                .map_err(|e| Error::io("scandir", &t.given, &e))?,
            &ancestors,
            &filter,
            &bounds,
            from.as_ref()
                .map(|c| (c.rel.as_slice(), c.flags & FLAG_AFTER != 0)),
            &mut run,
        )?;
        let late = run.late;
        cut = run.cut.take();
        (searched, binary, failed) = (run.searched, run.binary, run.failed);
        stop = if late { Some(Stop::Deadline) } else { end.stop };
        big_ignore = big + end.big_ignore_files;
        progress(end.seen);
    }
    if ctx.cancel.is_cancelled() {
        return Err(Error::Cancelled);
    }
    if stop.is_none() && Instant::now() >= deadline {
        stop = Some(Stop::Deadline);
    }
    let facts = Facts {
        halted: stop.map(|s| match s {
            Stop::Deadline => Halted::Deadline(deadline_after()),
            Stop::Entries(n) => Halted::Entries(n),
            Stop::Depth(n) => Halted::Depth(n),
            Stop::Paths(n) => Halted::Paths(n),
        }),
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
                Some(Stop::Deadline | Stop::Entries(_) | Stop::Paths(_))
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
