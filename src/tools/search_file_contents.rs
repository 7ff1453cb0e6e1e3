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

use super::{Capability, Ctx, Hints, Output, OutputKind, Tool, params, schema};
use crate::error::{Error, Result};
use crate::fs::search::{self, Bounds, Filter, Stop};
use crate::limits::{
    MAX_REGEX_BYTES, MAX_REGEX_COMPILED_BYTES, MAX_REGEX_DFA_BYTES, MAX_SEARCH_CONTEXT_LINES,
    MAX_SEARCH_LINE_BUFFER, MAX_SEARCH_LINE_BYTES, MAX_SEARCH_RESULTS, MAX_WALK_TEXT_BYTES,
    SEARCH_DEADLINE_SECS, SEARCH_DEFAULT_RESULTS,
};
use crate::text::glob::{ExcludeStyle, Excludes};

/// The tool description.
pub const DESCRIPTION: &str = "Search the contents of files for a regular expression (Rust regex syntax: linear time, no backreferences or look-around), like `rg -n`. 'path' is a directory to search under, or one file. Defaults follow ripgrep: files named by .gitignore, .ignore and .git/info/exclude are skipped (noIgnore: true searches them), hidden files and directories and .git/ are skipped (hidden: true searches them), binary files (a NUL byte) are skipped (binary: true searches them as text), and symbolic links are never followed. 'include' limits the search to files matching glob patterns (a pattern without '/' matches the file name at any depth, e.g. '*.rs'); 'excludePatterns' skips files and directories. Output modes: 'content' (default) prints 'path:line:text' for each matching line and 'path-line-text' for context lines, with '--' between groups; 'files' prints the paths of files with a match; 'count' prints 'path:count' (matching lines per file). Results are sorted by path and bounded; a cut result says so and how to narrow the search. Prefer this to reading whole files. Only searches within allowed directories.";

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Read,
    title: "Search File Contents",
    description: DESCRIPTION,
    hints: Hints::READ_ONLY,
    input: schema::<Params>,
    output: OutputKind::Search,
    run: |ctx, args| run(ctx, params(NAME, args)?),
};

const NAME: &str = "search_file_contents";

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

/// What the result lists.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum OutputMode {
    /// Matching lines (and context lines), as `rg -n`.
    #[default]
    Content,
    /// The paths of files with at least one match, as `rg -l`.
    Files,
    /// Matching lines per file, as `rg -c`.
    Count,
}

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    /// The directory to search under, or one file.
    pub path: String,
    /// A regular expression (Rust `regex` syntax), matched against each line.
    pub pattern: String,
    /// Match `pattern` as a literal string, not a regular expression.
    #[serde(default)]
    pub literal: bool,
    /// Match without regard to case.
    #[serde(default)]
    pub case_insensitive: bool,
    /// Only search files whose path relative to `path` matches one of these
    /// globs (a glob without '/' matches the file name at any depth).
    #[serde(default)]
    pub include: Vec<String>,
    /// Skip files and directories whose path relative to `path` matches one
    /// of these globs (a glob without '/' matches a name at any depth).
    #[serde(default)]
    pub exclude_patterns: Vec<String>,
    /// Lines of context before and after each match (0 to 10; default 0).
    #[serde(default)]
    pub context_lines: u64,
    /// The most matching lines ('content') or files ('files', 'count') to
    /// return (1 to 5000; default 200).
    pub max_results: Option<u64>,
    /// 'content' (default), 'files' or 'count'.
    #[serde(default)]
    pub output_mode: OutputMode,
    /// Search files that .gitignore, .ignore or .git/info/exclude name.
    #[serde(default)]
    pub no_ignore: bool,
    /// Search hidden files and directories (names starting with '.'); with
    /// noIgnore also .git/.
    #[serde(default)]
    pub hidden: bool,
    /// Search binary files (with a NUL byte) as text.
    #[serde(default)]
    pub binary: bool,
}

/// The `outputSchema` of the tool: the text, and the same result as data.
pub fn output_schema() -> Value {
    let line = json!({"type": "object", "properties": {"line": {"type": "integer"}, "text": {"type": "string"}}, "required": ["line", "text"], "additionalProperties": false});
    json!({
        "type": "object",
        "properties": {
            "content": {"type": "string"},
            "matches": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "line": {"type": "integer"},
                    "text": {"type": "string"},
                    "before": {"type": "array", "items": line},
                    "after": {"type": "array", "items": line}
                },
                "required": ["path", "line", "text", "before", "after"],
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
        "required": ["content", "filesSearched", "truncated"],
        "additionalProperties": false
    })
}

/// One line of a file's result.
#[derive(Debug)]
struct Line {
    number: u64,
    text: String,
    is_match: bool,
}

/// What one file gave.
#[derive(Debug, Default)]
struct Hits {
    /// Groups of contiguous lines (one group when there is no context).
    groups: Vec<Vec<Line>>,
    /// Matching lines seen.
    count: u64,
    /// Binary data was found: the file is skipped.
    binary: bool,
    /// The search of the file stopped with an error (unreadable, or a line
    /// past [`MAX_SEARCH_LINE_BUFFER`]).
    failed: bool,
    /// Opened and searched.
    searched: bool,
    /// Collection stopped because the matches outgrew the reply budget.
    size_stopped: bool,
    /// Collection stopped at the chunk's [`CHUNK_HELD_CHARS`]: the file is
    /// searched again.
    incomplete: bool,
}

/// The sink: keeps what the mode needs, bounded.
struct Collect<'a> {
    mode: OutputMode,
    /// Matches to keep from this file.
    want: u64,
    taken: u64,
    chars: usize,
    /// The reply's character budget (see [`reply_chars`]).
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

fn printable(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if bytes.len() <= MAX_SEARCH_LINE_BYTES {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    let head = bytes.get(..MAX_SEARCH_LINE_BYTES + 3).unwrap_or(bytes);
    let head = String::from_utf8_lossy(head);
    let kept = crate::text::fmt::cut(&head, MAX_SEARCH_LINE_BYTES);
    format!(
        "{kept} [... line cut at {MAX_SEARCH_LINE_BYTES} of {} bytes]",
        bytes.len()
    )
}

impl Collect<'_> {
    /// Keeps a line; false (and the file is incomplete) when the chunk holds
    /// too much already.
    fn push(&mut self, number: Option<u64>, bytes: &[u8], is_match: bool) -> bool {
        let text = printable(bytes);
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

/// The reply being built, in path order, with its bounds.
struct Reply {
    mode: OutputMode,
    /// Put before each listed path: the client's spelling of the search path.
    prefix: String,
    /// Context lines asked for (0: no `--` separators).
    context: usize,
    max: u64,
    text: String,
    chars: usize,
    /// The reply's character budget (see [`reply_chars`]).
    max_chars: usize,
    items: Vec<Value>,
    /// Matches (content) or files (files, count) taken.
    taken: u64,
    /// Cut by `maxResults`.
    max_cut: bool,
    /// Cut by the reply size.
    size_cut: bool,
}

impl Reply {
    fn done(&self) -> bool {
        self.max_cut || self.size_cut
    }

    /// Appends `piece` (lines without the final newline) if it fits.
    fn fits(&mut self, piece: &str) -> bool {
        let n = piece.chars().count() + 1;
        if self.chars + n > self.max_chars {
            self.size_cut = true;
            return false;
        }
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        self.text.push_str(piece);
        self.chars += n;
        true
    }

    fn add_file(&mut self, path: &str, hits: Hits) {
        match self.mode {
            OutputMode::Files | OutputMode::Count => {
                if hits.count == 0 {
                    return;
                }
                if self.taken >= self.max {
                    self.max_cut = true;
                    return;
                }
                let shown = crate::text::fmt::printable(path);
                let (line, item) = if self.mode == OutputMode::Files {
                    (shown.into_owned(), json!({"path": path}))
                } else {
                    (
                        format!("{shown}:{}", hits.count),
                        json!({"path": path, "count": hits.count}),
                    )
                };
                if self.fits(&line) {
                    self.taken += 1;
                    self.items.push(item);
                }
            }
            OutputMode::Content => {
                let more =
                    hits.count > hits.groups.iter().flatten().filter(|l| l.is_match).count() as u64;
                let size_stopped = hits.size_stopped;
                for mut group in hits.groups {
                    if self.taken >= self.max {
                        self.max_cut = true;
                        return;
                    }
                    // Keep up to the match that reaches the maximum, and the
                    // context lines after it.
                    let room = self.max - self.taken;
                    let mut seen = 0u64;
                    let mut keep = group.len();
                    for (i, l) in group.iter().enumerate() {
                        if l.is_match {
                            seen += 1;
                            if seen > room {
                                keep = i;
                                self.max_cut = true;
                                break;
                            }
                        }
                    }
                    group.truncate(keep);
                    if !self.add_group(path, &group) {
                        return;
                    }
                    if self.max_cut {
                        return;
                    }
                }
                if more && self.taken >= self.max {
                    self.max_cut = true;
                }
                if size_stopped {
                    self.size_cut = true;
                }
            }
        }
    }

    /// Adds one group whole, or nothing (and the reply is cut).
    fn add_group(&mut self, path: &str, group: &[Line]) -> bool {
        let shown = crate::text::fmt::printable(path);
        let mut piece = String::new();
        if self.context > 0 && !self.text.is_empty() {
            piece.push_str("--\n");
        }
        for (i, l) in group.iter().enumerate() {
            if i > 0 {
                piece.push('\n');
            }
            let sep = if l.is_match { ':' } else { '-' };
            piece.push_str(&format!("{shown}{sep}{}{sep}{}", l.number, l.text));
        }
        if !self.fits(&piece) {
            return false;
        }
        self.taken += group.iter().filter(|l| l.is_match).count() as u64;
        self.items.extend(matches_of(path, group, self.context));
        true
    }
}

/// The group's matches as data, each with the context lines that belong to
/// it: those before it (after the previous match's share) and after it (up
/// to `context` lines, the rest going to the next match).
fn matches_of(path: &str, group: &[Line], context: usize) -> Vec<Value> {
    let idx: Vec<usize> = group
        .iter()
        .enumerate()
        .filter(|(_, l)| l.is_match)
        .map(|(i, _)| i)
        .collect();
    let entry = |l: &Line| json!({"line": l.number, "text": l.text});
    let mut out = Vec::with_capacity(idx.len());
    for (k, &i) in idx.iter().enumerate() {
        let prev = if k == 0 {
            None
        } else {
            idx.get(k - 1).copied()
        };
        let next = idx.get(k + 1).copied();
        // Context lines between two matches: the earlier match takes up
        // to `context` of them as its after-context, the later the rest.
        let before_start = match prev {
            None => 0,
            Some(p) => p + 1 + (i - p - 1).min(context),
        };
        let after_end = match next {
            None => group.len(),
            Some(n) => i + 1 + (n - i - 1).min(context),
        };
        let l = &group[i];
        out.push(json!({
            "path": path,
            "line": l.number,
            "text": l.text,
            "before": group.get(before_start..i).unwrap_or_default().iter().map(entry).collect::<Vec<_>>(),
            "after": group.get(i + 1..after_end).unwrap_or_default().iter().map(entry).collect::<Vec<_>>(),
        }));
    }
    out
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

/// The characters one reply may carry: the reply budget
/// (`--max-reply-chars`) less room for the notices, or, with the budget off,
/// the walk tools' own text bound.
fn reply_chars(max_reply_chars: usize) -> usize {
    if max_reply_chars == 0 {
        crate::limits::MAX_WALK_TEXT_BYTES
    } else {
        max_reply_chars.saturating_sub(crate::limits::REPLY_NOTICE_RESERVE)
    }
}

/// Searches one opened file; `held` counts the characters its chunk holds
/// (`None`: no chunk, nothing else is held).
fn search_one<R: std::io::Read>(
    searcher: &mut Searcher,
    reader: std::io::Result<R>,
    matcher: &RegexMatcher,
    p: &Params,
    want: u64,
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
    want: u64,
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
    want: u64,
    stop: &Halt<'_>,
    held: Option<&AtomicUsize>,
    search: impl FnOnce(&mut Collect<'_>) -> std::io::Result<()>,
) -> Hits {
    let alone = AtomicUsize::new(0);
    let mut sink = Collect {
        mode: p.output_mode,
        want,
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
            let max = self.reply.max;
            let want = max - self.reply.taken.min(max);
            let held = AtomicUsize::new(0);
            let (states, start, matcher, p, halt) =
                (self.states, self.start, self.matcher, self.p, self.halt);
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
                    let path = format!("{}{}", self.reply.prefix, String::from_utf8_lossy(rel));
                    self.reply.add_file(&path, hits);
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
pub fn run(ctx: &Ctx, p: Params) -> Result<Output> {
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
    // Paths are printed under the client's own spelling of `path`, as
    // search_files prints them.
    let base = t.given.clone();
    let prefix = super::search_files::client_prefix(&t.given);
    let deadline = Instant::now() + deadline_after();
    let max_chars = reply_chars(ctx.limits.max_reply_chars);
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
    let mut reply = Reply {
        mode: p.output_mode,
        prefix,
        context,
        max,
        text: String::new(),
        chars: 0,
        max_chars,
        items: Vec::new(),
        taken: 0,
        max_cut: false,
        size_cut: false,
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
        let hits = search_one(&mut s, Ok(file), &matcher, &p, max, &halt, None);
        searched += u64::from(hits.searched);
        if hits.binary {
            binary += 1;
        } else {
            failed += u64::from(hits.failed);
            reply.add_file(&base, hits);
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
        };
        let end = search::walk_files(
            pool,
            start
                .try_clone()
                .map_err(|e| Error::io("scandir", &t.given, &e))?,
            &ancestors,
            &filter,
            &bounds,
            &mut run,
        )?;
        let late = run.late;
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
    let mut text = if reply.text.is_empty() {
        "No matches found".to_owned()
    } else {
        std::mem::take(&mut reply.text)
    };
    let mut notes = Vec::new();
    let narrow = "narrow the search with a deeper path, include or excludePatterns, or a more specific pattern";
    if reply.max_cut {
        let what = if p.output_mode == OutputMode::Content {
            "matching lines"
        } else {
            "files"
        };
        notes.push(format!(
            "[truncated: stopped at maxResults={max} {what}; more may exist. To see more, {narrow}, or raise maxResults (up to {MAX_SEARCH_RESULTS})]"
        ));
    }
    if reply.size_cut {
        notes.push(format!(
            "[truncated: the reply reached its {max_chars}-character limit (--max-reply-chars) at a whole match group; {narrow}, or use outputMode 'files' or 'count' first]"
        ));
    }
    match stop {
        Some(Stop::Deadline) => notes.push(format!(
            "[truncated: the search stopped after {:?}, its time limit; not every file was searched to the end; {narrow}]",
            deadline_after()
        )),
        Some(Stop::Entries(n)) => notes.push(format!(
            "[truncated: the walk stopped after {n} entries (--max-entries); {narrow}]"
        )),
        Some(Stop::Depth(n)) => notes.push(format!(
            "[truncated: directories deeper than {n} levels were not searched (--max-depth); search a deeper path]"
        )),
        Some(Stop::Paths(n)) => notes.push(format!(
            "[truncated: the walk stopped with {n} bytes of listed paths waiting to be searched; {narrow}]"
        )),
        None => {}
    }
    if failed > 0 {
        notes.push(format!(
            "[{failed} file(s) could not be searched to the end (unreadable, or a line over {MAX_SEARCH_LINE_BUFFER} bytes)]"
        ));
    }
    if big_ignore > 0 {
        notes.push(format!(
            "[{big_ignore} ignore file(s) over {} bytes were not used]",
            crate::limits::MAX_IGNORE_FILE_BYTES
        ));
    }
    if binary > 0 && reply.items.is_empty() && !p.binary {
        notes.push(format!(
            "[{binary} binary file(s) skipped; binary: true searches them]"
        ));
    }
    if !notes.is_empty() {
        text.push_str("\n\n");
        text.push_str(&notes.join("\n"));
    }
    let truncated = reply.max_cut || reply.size_cut || stop.is_some();
    let key = if p.output_mode == OutputMode::Content {
        "matches"
    } else {
        "files"
    };
    let data = json!({
        key: reply.items,
        "filesSearched": searched,
        "truncated": truncated,
    });
    Ok(Output::Structured { text, data })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(number: u64, text: &str, is_match: bool) -> Line {
        Line {
            number,
            text: text.to_owned(),
            is_match,
        }
    }

    #[test]
    fn context_lines_go_to_the_nearer_match() {
        // 2 lines of context: m1 c c c m2 (3 between: 2 after m1, 1 before m2).
        let g = [
            line(1, "b", false),
            line(2, "m1", true),
            line(3, "c1", false),
            line(4, "c2", false),
            line(5, "c3", false),
            line(6, "m2", true),
        ];
        let m = matches_of("p", &g, 2);
        assert_eq!(m[0]["before"], json!([{"line": 1, "text": "b"}]));
        assert_eq!(
            m[0]["after"],
            json!([{"line": 3, "text": "c1"}, {"line": 4, "text": "c2"}])
        );
        assert_eq!(m[1]["before"], json!([{"line": 5, "text": "c3"}]));
        assert_eq!(m[1]["after"], json!([]));
    }

    #[test]
    fn long_lines_are_cut_at_a_char_boundary() {
        assert_eq!(printable(b"abc\n"), "abc");
        assert_eq!(printable(b"a\r\n"), "a\r");
        let long = "é".repeat(400);
        let p = printable(long.as_bytes());
        assert!(p.ends_with(" [... line cut at 500 of 800 bytes]"), "{p}");
        assert!(p.starts_with(&"é".repeat(250)));
        assert_eq!(printable(b"\xff ok"), "\u{fffd} ok");
    }

    #[test]
    fn the_reply_cuts_at_max_results_inside_a_group() {
        let mut r = Reply {
            mode: OutputMode::Content,
            prefix: String::new(),
            context: 1,
            max: 2,
            text: String::new(),
            chars: 0,
            max_chars: reply_chars(crate::limits::MAX_REPLY_CHARS),
            items: Vec::new(),
            taken: 0,
            max_cut: false,
            size_cut: false,
        };
        let hits = Hits {
            groups: vec![vec![
                line(1, "m", true),
                line(2, "m", true),
                line(3, "c", false),
                line(4, "m", true),
            ]],
            count: 3,
            ..Hits::default()
        };
        r.add_file("f", hits);
        assert_eq!(r.text, "f:1:m\nf:2:m\nf-3-c");
        assert!(r.max_cut);
        assert_eq!(r.items.len(), 2);
    }
}
