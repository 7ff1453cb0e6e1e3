//! `search_file_contents`: regex search of file contents beneath a root,
//! with ripgrep's library crates (`grep-regex`, `grep-searcher`) and
//! `rg`'s defaults (ignore files honoured, hidden files and binary files
//! skipped), bounded in matches, line length, pattern size, reply size and
//! time. Touches: scope, search (the walk and the opens), file.
//!
//! The walk lists the files first (in path order); they are then searched
//! in parallel, a chunk at a time, and merged in path order, so the result
//! (and where a cut falls) is the same on every run.

use std::os::fd::OwnedFd;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, MmapChoice, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch,
};
use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Capability, Ctx, Hints, Output, OutputKind, Plan, Tool, params, schema};
use crate::error::{Error, Result};
use crate::fs::cursor::{Cursor, FLAG_AFTER, token_room};
use crate::fs::search::{self, Bounds, Filter, Stop};
use crate::limits::Limits;
use crate::limits::{
    MAX_REGEX_BYTES, MAX_REGEX_COMPILED_BYTES, MAX_REGEX_DFA_BYTES, MAX_SEARCH_CONTEXT_LINES,
    MAX_SEARCH_LINE_BUFFER, MAX_SEARCH_RESULTS, MAX_WALK_TEXT_BYTES, SEARCH_DEADLINE_SECS,
    SEARCH_DEFAULT_RESULTS,
};
use crate::text::glob::{ExcludeStyle, Excludes};
pub use crate::text::matches::OutputMode;
use crate::text::matches::{Facts, Halted, Hits, Line, Next, Reply, content_room, line_text};

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

/// Files searched in parallel at a time, at first; results are merged in
/// path order after each chunk, so at most one chunk is searched past a cut.
/// The chunk doubles after each chunk merged whole, up to
/// [`MAX_CHUNK_FILES`], so that a long search waits less often for its
/// slowest file; after a chunk that held too much (see
/// [`CHUNK_HELD_CHARS`]) it is as big as what fitted.
const CHUNK_FILES: usize = 64;

/// The most files searched in parallel at a time.
const MAX_CHUNK_FILES: usize = 1024;

/// Characters of matching lines the files of one chunk may hold at once
/// (beyond its first file, whose own bounds hold): a file that would go past
/// it stops, and is searched again at the head of the next chunk, so memory
/// stays bounded whatever the chunk size.
const CHUNK_HELD_CHARS: usize = 8 << 20;

/// Files up to this size are read whole, with one `read(2)`, into a buffer
/// each walk thread keeps, and searched as a slice; bigger ones as a stream.
const SLICE_FILE_BYTES: usize = 1 << 20;

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

/// The sink: keeps what the mode needs, bounded.
struct Collect<'a> {
    mode: OutputMode,
    /// Matches to keep from this file.
    want: u64,
    /// Matches of this file an earlier page gave, left out here (with the
    /// context lines after them).
    skip: u64,
    skipped: u64,
    /// After-context lines of a left-out match are left out too.
    dropping: bool,
    /// Before-context lines seen while leaving matches out.
    before: Vec<(Option<u64>, Vec<u8>)>,
    taken: u64,
    chars: usize,
    /// The reply's character budget ([`Reply::room`]).
    max_chars: usize,
    cur: Vec<Line>,
    hits: Hits,
    cancel: &'a tokio_util::sync::CancellationToken,
    /// Characters held by the chunk's files, and whether this file is
    /// exempt (the first of its chunk).
    held: &'a AtomicUsize,
    exempt: bool,
    /// See [`chunk_held_chars`].
    held_cap: usize,
}

impl Collect<'_> {
    /// Keeps a line; false (and the file is incomplete) when the chunk holds
    /// too much already.
    fn push(&mut self, number: Option<u64>, bytes: &[u8], is_match: bool) -> bool {
        let text = line_text(bytes);
        let n = text.len() + 16;
        if !self.exempt && self.held.fetch_add(n, Ordering::Relaxed) + n > self.held_cap {
            self.hits.incomplete = true;
            return false;
        }
        self.chars += n;
        self.cur.push(Line {
            number: number.unwrap_or(0),
            text,
            is_match,
        });
        true
    }

    fn close(&mut self) {
        if !self.cur.is_empty() {
            self.hits.groups.push(std::mem::take(&mut self.cur));
        }
    }
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> std::io::Result<bool> {
        if self.cancel.is_cancelled() {
            return Ok(false);
        }
        if self.skipped < self.skip {
            self.skipped += 1;
            self.before.clear();
            self.dropping = true;
            return Ok(true);
        }
        self.dropping = false;
        for (n, bytes) in std::mem::take(&mut self.before) {
            if self.mode == OutputMode::Content && !self.push(n, &bytes, false) {
                return Ok(false);
            }
        }
        match self.mode {
            OutputMode::Files => {
                self.hits.count += 1;
                Ok(false)
            }
            OutputMode::Count => {
                self.hits.count += 1;
                Ok(true)
            }
            OutputMode::Content => {
                // One more than wanted tells the merge that there is more.
                self.hits.count += 1;
                if self.taken >= self.want {
                    return Ok(false);
                }
                if self.chars > self.max_chars {
                    // More than one reply can carry: the reply says so.
                    self.hits.size_stopped = true;
                    return Ok(false);
                }
                self.taken += 1;
                Ok(self.push(m.line_number(), m.bytes(), true))
            }
        }
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> std::io::Result<bool> {
        let after = *c.kind() == grep_searcher::SinkContextKind::After;
        if self.dropping && after {
            // After-context of a left-out match.
            return Ok(!self.cancel.is_cancelled());
        }
        self.dropping = false;
        if self.skipped < self.skip {
            // Before-context: of a left-out match, or of the first match
            // kept (at most `context` lines are held).
            self.before.push((c.line_number(), c.bytes().to_vec()));
            return Ok(!self.cancel.is_cancelled());
        }
        if self.mode == OutputMode::Content && !self.push(c.line_number(), c.bytes(), false) {
            return Ok(false);
        }
        Ok(!self.cancel.is_cancelled())
    }

    fn context_break(&mut self, _: &Searcher) -> std::io::Result<bool> {
        self.close();
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> std::io::Result<bool> {
        self.hits.binary = true;
        Ok(false)
    }
}

/// Compiles the pattern, bounded.
fn matcher(p: &Params) -> Result<RegexMatcher> {
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

fn searcher(p: &Params, context: usize) -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .before_context(context)
        .after_context(context)
        .binary_detection(if p.binary {
            BinaryDetection::none()
        } else {
            BinaryDetection::quit(b'\0')
        })
        .memory_map(MmapChoice::never())
        .heap_limit(Some(MAX_SEARCH_LINE_BUFFER))
        .build()
}

/// Globs where one without `/` matches a name at any depth, as in `rg -g`.
fn globs(patterns: &[String], ctx: &Ctx) -> Result<Excludes> {
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

fn bounded(field: &'static str, given: u64, min: u64, max: u64) -> Result<u64> {
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

/// When a search stops: the client cancelled, or the deadline passed.
struct Halt<'a> {
    cancel: &'a tokio_util::sync::CancellationToken,
    deadline: Instant,
    /// The reply's character budget, which also bounds what one file's
    /// matches may collect.
    max_chars: usize,
    /// See [`chunk_held_chars`].
    held_cap: usize,
}

impl Halt<'_> {
    fn now(&self) -> bool {
        self.cancel.is_cancelled() || Instant::now() >= self.deadline
    }
}

/// A reader that fails once the search must stop, so a long file without
/// matches is not read to its end after a cancel or past the deadline.
struct Stoppable<'a, R> {
    inner: R,
    stop: &'a Halt<'a>,
}

impl<R: std::io::Read> std::io::Read for Stoppable<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.stop.now() {
            return Err(std::io::Error::other("search stopped"));
        }
        self.inner.read(buf)
    }
}

/// What to take from one file.
#[derive(Debug, Clone, Copy)]
struct Want {
    /// Matches to keep.
    n: u64,
    /// Matches to leave out first (given on an earlier page).
    skip: u64,
}

/// Searches one opened file; `held` counts the characters its chunk holds
/// (`None`: no chunk, nothing else is held).
fn search_one<R: std::io::Read>(
    searcher: &mut Searcher,
    reader: std::io::Result<R>,
    matcher: &RegexMatcher,
    p: &Params,
    want: Want,
    stop: &Halt<'_>,
    held: Option<&AtomicUsize>,
) -> Hits {
    let Ok(inner) = reader else {
        return Hits::default();
    };
    let reader = Stoppable { inner, stop };
    search_with(p, want, stop, held, |sink| {
        searcher.search_reader(matcher, reader, sink)
    })
}

/// Searches one listed file: whole from `buf` (kept per thread) when it
/// is at most [`SLICE_FILE_BYTES`], which takes one read, else as a stream.
#[allow(clippy::too_many_arguments)]
fn search_listed(
    searcher: &mut Searcher,
    file: std::io::Result<search::FdReader>,
    buf: &mut Vec<u8>,
    matcher: &RegexMatcher,
    p: &Params,
    want: Want,
    stop: &Halt<'_>,
    held: Option<&AtomicUsize>,
) -> Hits {
    let Ok(mut file) = file else {
        return Hits::default();
    };
    match file.read_small(buf, SLICE_FILE_BYTES) {
        Ok(true) => search_with(p, want, stop, held, |sink| {
            searcher.search_slice(matcher, buf, sink)
        }),
        Ok(false) => {
            let reader = std::io::Read::chain(std::io::Cursor::new(buf.as_slice()), file);
            search_one(searcher, Ok(reader), matcher, p, want, stop, held)
        }
        Err(_) => Hits {
            searched: true,
            failed: true,
            ..Hits::default()
        },
    }
}

/// Runs `search` with a fresh sink and returns what it collected.
fn search_with(
    p: &Params,
    want: Want,
    stop: &Halt<'_>,
    held: Option<&AtomicUsize>,
    search: impl FnOnce(&mut Collect<'_>) -> std::io::Result<()>,
) -> Hits {
    let alone = AtomicUsize::new(0);
    let mut sink = Collect {
        mode: p.output_mode,
        want: want.n,
        skip: want.skip,
        skipped: 0,
        dropping: false,
        before: Vec::new(),
        taken: 0,
        chars: 0,
        max_chars: stop.max_chars,
        cur: Vec::new(),
        hits: Hits {
            searched: true,
            ..Hits::default()
        },
        cancel: stop.cancel,
        held: held.unwrap_or(&alone),
        exempt: held.is_none(),
        held_cap: stop.held_cap,
    };
    let res = search(&mut sink);
    sink.close();
    let mut hits = sink.hits;
    // A file cut by the stop is not "failed": the stop is reported itself.
    if res.is_err() && !stop.now() {
        hits.failed = true;
    }
    hits
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

/// The search of a directory: takes the walk's files a chunk at a time,
/// searches each chunk in parallel (one searcher per walk thread, kept from
/// chunk to chunk) and merges it into the reply in path order.
struct Searching<'a, 'r> {
    pool: &'a rayon::ThreadPool,
    /// Per walk thread: its searcher (and buffers) and its last directory.
    states: &'a [Mutex<(Searcher, search::DirCache, Vec<u8>)>],
    start: &'a OwnedFd,
    matcher: &'a RegexMatcher,
    p: &'a Params,
    halt: &'a Halt<'a>,
    progress: &'a (dyn Fn(u64) + Sync),
    reply: &'r mut Reply,
    chunk: usize,
    searched: u64,
    binary: u64,
    failed: u64,
    /// The deadline passed between chunks.
    late: bool,
    /// The file a cursor resumes in, and its matches already given.
    resume: Option<(&'a [u8], u64)>,
    /// Where the reply was cut: the file, and its matches it gave in all.
    cut: Option<(Vec<u8>, u64)>,
}

impl Searching<'_, '_> {
    /// Matches of the file at `rel` given on earlier pages.
    fn skip_of(&self, rel: &[u8]) -> u64 {
        self.resume.filter(|(r, _)| *r == rel).map_or(0, |(_, n)| n)
    }
}

impl search::Consume for Searching<'_, '_> {
    fn chunk(&self) -> usize {
        self.chunk
    }

    fn take(&mut self, files: Vec<Vec<u8>>) -> bool {
        use rayon::prelude::*;
        let mut from = 0;
        while from < files.len() {
            let end = files.len().min(from + self.chunk);
            let Some(part) = files.get(from..end) else {
                break;
            };
            if self.halt.cancel.is_cancelled() {
                return false;
            }
            if Instant::now() >= self.halt.deadline {
                self.late = true;
                return false;
            }
            let want = self.reply.wanted();
            let held = AtomicUsize::new(0);
            let (states, start, matcher, p, halt) =
                (self.states, self.start, self.matcher, self.p, self.halt);
            let this = &*self;
            let results: Vec<Hits> = self.pool.install(|| {
                part.par_iter()
                    .enumerate()
                    .map(|(k, rel)| {
                        let i = rayon::current_thread_index().unwrap_or(0);
                        let Some(state) = states.get(i % states.len().max(1)) else {
                            return Hits::default();
                        };
                        let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
                        let (s, dirs, buf) = &mut *st;
                        let held = (k > 0).then_some(&held);
                        let file = search::open_listed_in(dirs, start, rel);
                        let want = Want {
                            n: want,
                            skip: this.skip_of(rel),
                        };
                        search_listed(s, file, buf, matcher, p, want, halt, held)
                    })
                    .collect()
            });
            let mut merged = 0;
            for (rel, hits) in part.iter().zip(results) {
                if hits.incomplete {
                    break;
                }
                merged += 1;
                self.searched += u64::from(hits.searched);
                if hits.binary {
                    self.binary += 1;
                    continue;
                }
                self.failed += u64::from(hits.failed);
                if !self.reply.done() {
                    let path = format!("{}{}", self.reply.prefix(), String::from_utf8_lossy(rel));
                    self.reply.add_file(&path, hits);
                    if let Some(n) = self.reply.cut_at() {
                        self.cut = Some((rel.clone(), self.skip_of(rel) + n));
                    }
                }
            }
            from += merged.max(1);
            (self.progress)(self.searched);
            if self.reply.done() {
                return false;
            }
            // A chunk that held too much: the next one is as big as what
            // fitted, then grows again.
            self.chunk = if merged < part.len() {
                merged.max(1)
            } else {
                (self.chunk * 2).min(MAX_CHUNK_FILES)
            };
        }
        true
    }
}

/// [`CHUNK_HELD_CHARS`]. Debug builds only: `TULS_DEBUG_CHUNK_HELD_CHARS`
/// lowers it, so the tests can reach it with small files.
fn chunk_held_chars() -> usize {
    crate::limits::debug_bound("TULS_DEBUG_CHUNK_HELD_CHARS", |n| n, CHUNK_HELD_CHARS)
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
            search::ancestor_levels(&t.root.dir, &t.segs)
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
