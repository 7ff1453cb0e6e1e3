//! Every bound tuls enforces, as a named constant with its default, and the
//! run-time [`Limits`] an operator may tune with flags.
//!
//! Owns: the numbers. May touch: nothing (no I/O).

/// Largest file `read_text_file`, `read_media_file` or one entry of
/// `read_multiple_files` reads whole, and largest file `edit_file` edits
/// (`--max-read-bytes`). Also caps how far `head`/`tail` scan.
pub const MAX_READ_BYTES: u64 = 32 * 1024 * 1024;

/// Bytes of pre-images the undo journal keeps (`--journal-max-bytes`);
/// past it the oldest are evicted, and the journal says which.
pub const JOURNAL_MAX_BYTES: u64 = 1024 * 1024 * 1024;

/// Total bytes one `read_multiple_files` call may return.
pub const MAX_BATCH_BYTES: u64 = 64 * 1024 * 1024;

/// Line comparisons `edit_file` may spend looking for the nearest line that
/// a missing `oldText` would match with whitespace ignored; past it the error
/// has no hint.
pub const EDIT_HINT_LINE_COMPARISONS: usize = 1 << 20;

/// Lines of `oldText` above which `edit_file` looks for no such hint.
pub const EDIT_HINT_MAX_LINES: usize = 10_000;

/// How many of the client's roots a "no directory is open to this session"
/// refusal names, and how many bytes of each.
pub const ROOTS_NAMED_IN_REFUSAL: usize = 5;
/// See [`ROOTS_NAMED_IN_REFUSAL`].
pub const ROOT_BYTES_NAMED_IN_REFUSAL: usize = 200;

/// Paths per `read_multiple_files` call.
pub const MAX_PATHS_PER_BATCH: usize = 256;

/// Entries one `directory_tree` or `search_files` walk visits before it stops
/// and marks its result truncated (`--max-entries`).
pub const MAX_WALK_ENTRIES: usize = 1_000_000;

/// Directory depth a walk descends to before it stops and marks its result
/// truncated (`--max-depth`).
pub const MAX_WALK_DEPTH: usize = 128;

/// The largest `--max-depth` accepted. A walk holds one directory handle
/// per level and recurses once per level, as do rendering and freeing the
/// tree; 512 keeps a walk inside a 1024-descriptor limit and every stack
/// (a debug build overflowed 2 MiB at about 2000 levels while rendering).
pub const MAX_WALK_DEPTH_CEILING: usize = 512;

/// Bytes of text one `directory_tree` or `search_files` reply carries; past
/// it the walk stops and the result is marked truncated. Depth multiplies
/// what an entry costs (a search match is its whole path, a tree node is
/// indented by its depth), so the entry cap alone let 20k long-named files
/// 128 levels down make a 650 MB reply.
pub const MAX_WALK_TEXT_BYTES: usize = 32 * 1024 * 1024;

/// Characters of a `cursor` (the token a cut `directory_tree`,
/// `search_files` or `search_file_contents` reply gives to go on): it
/// carries the path of the next entry below the call's `path`, so this
/// bounds that path to about 740 bytes (a reply with a small
/// `--max-reply-chars` keeps a quarter of it for the cursor). A page whose
/// next entry lies deeper says so and asks for a deeper `path`.
pub const MAX_CURSOR_CHARS: usize = 1024;

/// Entries `list_directory` and `list_directory_with_sizes` return.
pub const MAX_LIST_ENTRIES: usize = 1_000_000;

/// Bytes in one glob pattern (`pattern` or an exclude pattern).
pub const MAX_PATTERN_BYTES: usize = 1024;

/// Exclude patterns per call.
pub const MAX_EXCLUDE_PATTERNS: usize = 256;

/// Bytes of all exclude patterns of one call together. Compiling patterns
/// costs memory roughly in proportion to their total size (about 1 KiB of
/// RSS per byte of a wildcard-heavy pattern): 256 patterns of 1024 bytes
/// each took 200-400 MB just to be refused by the regex compiler.
pub const MAX_PATTERN_TOTAL_BYTES: usize = 16 * 1024;

/// How deep braces may nest in one glob pattern (`{a,{b,{c,d}}}` is 3).
pub const MAX_BRACE_DEPTH: usize = 3;

/// Brace alternatives (commas inside braces) in one glob pattern.
pub const MAX_BRACE_ALTERNATIVES: usize = 256;

/// Bytes in one path argument. Linux's PATH_MAX is 4096.
pub const MAX_PATH_BYTES: usize = 4096;

/// Path rules (flags, built-ins and rules-file entries together) in force.
pub const MAX_RULES: usize = 1024;

/// Bytes of `.gitignore` patterns in one set of path rules (hide, read-only,
/// built-in, exemptions) up to which the set is compiled when a path first
/// needs it rather than at startup. Such a set compiles, far below the glob
/// engine's 10 MiB automaton limit; a bigger one is compiled at startup, so
/// one too big to compile stops startup.
pub const EAGER_GLOB_BYTES: usize = 4096;

/// Bytes of a `--rules` file.
pub const MAX_RULES_FILE_BYTES: u64 = 1024 * 1024;

/// Directory levels the rule-checking resolver holds open while it walks a
/// path component by component (each level is one descriptor).
pub const MAX_RESOLVE_DEPTH: usize = 1024;

/// Symbolic links followed for one path before `ELOOP` (the kernel's
/// `MAXSYMLINKS`): in-root symlinks are followed by tuls itself.
pub const MAX_SYMLINK_HOPS: usize = 40;

// --- git: what the repositories in a root make git run or obey
// (src/fs/gitdirs). Past each, a warning names the limit and what is
// left unprotected; the `.git` entries themselves stay read-only by the
// built-in rule.

/// Repositories (`.git` entries) read in one root.
pub const MAX_GIT_REPOS: usize = 256;

/// Directories searched for `.git` entries in one root, breadth first
/// from its top: four system calls each, about 12 ms for a 10,000-file
/// tree of 1,111 directories and 85 ms at this limit (a 100,000-file
/// tree), on a shared 2-core machine (docs/maintainers/path-rules-cost.md).
pub const MAX_GIT_SCAN_DIRS: usize = 10_000;

/// Directory entries looked at in that search.
pub const MAX_GIT_SCAN_ENTRIES: usize = 200_000;

/// How deep beneath a root the search for `.git` entries goes.
pub const MAX_GIT_SCAN_DEPTH: usize = 16;

/// Bytes of one git config (or `.git` file, `commondir`) read.
pub const MAX_GIT_CONFIG_BYTES: u64 = 1024 * 1024;

/// Configs included (`include.path`, `includeIf.*.path`) read in one
/// search of a root.
pub const MAX_GIT_INCLUDES: usize = 64;

/// How deep includes are followed (git's own limit is 10).
pub const MAX_GIT_INCLUDE_DEPTH: usize = 10;

/// Entries of one git or hooks directory looked at for links.
pub const MAX_GIT_HOOK_ENTRIES: usize = 1024;

/// Bytes of one extended-attribute list or value copied onto a replaced
/// file (Linux's own `XATTR_LIST_MAX` and `XATTR_SIZE_MAX`).
pub const MAX_XATTR_BYTES: usize = 64 * 1024;

/// Bytes one `append_file` call may append (the request itself is bounded
/// by [`MAX_REQUEST_BYTES`]; this keeps one append, and the window in which
/// a crash could cut it, short).
pub const MAX_APPEND_BYTES: u64 = 32 * 1024 * 1024;

/// Bytes `copy_file` asks the kernel to copy per `copy_file_range` call;
/// the copy checks for cancellation between calls.
pub const COPY_CHUNK_BYTES: usize = 64 * 1024 * 1024;

/// The largest file `copy_file` copies, by its size (the apparent size,
/// holes counted: known before a byte is copied, and what a copy must
/// write where holes cannot be kept) (`--max-copy-bytes`). Holes are kept
/// where the filesystem reports them, so a copy costs its data; this bounds
/// what one call may write to disk and how long it runs (4 GiB takes tens
/// of seconds at disk speed), while covering the files an agent copies in a
/// project (sources, images, archives, databases). A bigger file is the
/// operator's to copy.
pub const MAX_COPY_BYTES: u64 = 4 * 1024 * 1024 * 1024;

/// Edits per `edit_file` call.
pub const MAX_EDITS: usize = 1024;

/// Characters of text one tool reply may carry (`--max-reply-chars`; 0
/// turns the budget off). Claude Code refuses MCP output above 25,000
/// tokens by default (`MAX_MCP_OUTPUT_TOKENS`); at a conservative 2.5
/// characters per token (dense paths, JSON and code tokenize at about 3 to
/// 4), 62,500 characters stay under it. A longer reply is cut at a whole
/// line or entry and ends with a notice saying how to get the rest.
pub const MAX_REPLY_CHARS: usize = 62_500;

/// The smallest non-zero `--max-reply-chars`: a cut reply needs room for
/// at least one line or entry next to its notice.
pub const MIN_REPLY_CHARS: usize = 1024;

/// Characters a cut reply keeps free for its notice. Every notice is
/// shorter (they name numbers and argument names, never paths).
pub const REPLY_NOTICE_RESERVE: usize = 400;

/// Bytes a line-range read (`read_text_file` with `offset`) scans from the
/// start of the file to reach its first line. The scan is streaming
/// (constant memory) and stops at the range's end; this bounds its time on
/// a huge or sparse file (about a second or two per GiB).
pub const MAX_LINE_SCAN_BYTES: u64 = 4 * 1024 * 1024 * 1024;

/// Bytes in one JSON-RPC request line (`--max-request-bytes`).
pub const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;

/// How long a tool call waits for a pending `roots/list` answer (the first
/// one of the session, or the one after `roots/list_changed`; every tool
/// waits, not only the path tools), and how long tuls waits for that answer
/// before it drops the request and fails closed with no access
/// (`--roots-timeout-secs`).
pub const ROOTS_WAIT_SECS: u64 = 10;

/// Distinct client roots (MCP roots) one `roots/list` answer may name. A
/// longer list is refused whole: no access until a list within the bound
/// arrives. The same URI named twice counts once; different URIs count
/// apart even when they name the same directory (telling that needs opening
/// each, which is what this bound caps), though they share one handle.
pub const MAX_CLIENT_ROOTS: usize = 256;

/// Bytes of tool replies held at once: replies being built (by an estimate
/// of the most each tool can hold) and built replies not yet written to
/// stdout (`--max-pending-reply-bytes`). When it is used up tuls reads no
/// further request until replies drain, so a client that does not read
/// stdout stalls itself instead of growing the heap.
pub const MAX_PENDING_REPLY_BYTES: u64 = 256 * 1024 * 1024;

/// Requests read but not yet answered. At the bound tuls reads no further
/// request line until one is answered.
pub const MAX_CALLS_IN_FLIGHT: usize = 64;

/// Threads that run tool calls off the async runtime, at most (one per CPU
/// normally; see [`crate::mcp::workers`]). Calls beyond this queue.
pub const MAX_BLOCKING_THREADS: usize = 32;

/// Matches (`content` mode) or files (`files`, `count`) that one
/// `search_file_contents` call returns when `maxResults` is not given.
pub const SEARCH_DEFAULT_RESULTS: usize = 200;

/// The most `maxResults` may ask of one `search_file_contents` call.
pub const MAX_SEARCH_RESULTS: usize = 5000;

/// Context lines before and after a match, at most (`contextLines`).
pub const MAX_SEARCH_CONTEXT_LINES: usize = 10;

/// Bytes of one line printed by `search_file_contents`; a longer line is
/// cut at a character boundary and marked.
pub const MAX_SEARCH_LINE_BYTES: usize = 500;

/// Bytes of a `search_file_contents` regular expression as written.
pub const MAX_REGEX_BYTES: usize = 8 * 1024;

/// Bytes the compiled regular expression may take (`regex`'s
/// `size_limit`); a bigger pattern is refused with a clear error.
pub const MAX_REGEX_COMPILED_BYTES: usize = 1024 * 1024;

/// Bytes of the regular expression's lazy DFA cache (`dfa_size_limit`).
pub const MAX_REGEX_DFA_BYTES: usize = 2 * 1024 * 1024;

/// Heap one file's search may use for its line buffer: a single line
/// longer than this is not searched past (the file is reported as cut).
/// Memory stays O(1) in the file's size.
pub const MAX_SEARCH_LINE_BUFFER: usize = 8 * 1024 * 1024;

/// Seconds one `search_file_contents` call may run; then it stops and
/// returns what it found, marked as cut.
pub const SEARCH_DEADLINE_SECS: u64 = 60;

/// Bytes of one `.gitignore`, `.ignore` or `.git/info/exclude` file read by
/// `search_file_contents`; a bigger one is not used (and the reply says so).
pub const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;

/// Rules (lines that are not blank or comments) in one ignore file that
/// `search_file_contents` compiles; a file with more is not used, with a
/// notice. Literal rules cost little each, but a 1 MiB file holds half a
/// million of them.
pub const MAX_IGNORE_RULES: usize = 10_000;

/// Wildcards (`*`, `?`, `[`) in all the rules of one ignore file. A
/// wildcard costs a few hundred bytes of compiled matcher (a file of
/// `*a*b*c*...` rules, 200 wildcards each, under the 1 MiB cap, took 631
/// MiB to compile; nine of them in one tree, 1.25 GiB); a file past the
/// bound is not used, with a notice.
pub const MAX_IGNORE_WILDCARDS: usize = 4096;

/// The limits in force for one server, defaulting to the constants above.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// See [`MAX_READ_BYTES`].
    pub max_read_bytes: u64,
    /// See [`MAX_BATCH_BYTES`].
    pub max_batch_bytes: u64,
    /// See [`MAX_PATHS_PER_BATCH`].
    pub max_paths_per_batch: usize,
    /// See [`MAX_WALK_ENTRIES`].
    pub max_walk_entries: usize,
    /// See [`MAX_WALK_DEPTH`].
    pub max_walk_depth: usize,
    /// See [`MAX_LIST_ENTRIES`].
    pub max_list_entries: usize,
    /// See [`MAX_PATTERN_BYTES`].
    pub max_pattern_bytes: usize,
    /// See [`MAX_EXCLUDE_PATTERNS`].
    pub max_exclude_patterns: usize,
    /// See [`MAX_PATH_BYTES`].
    pub max_path_bytes: usize,
    /// See [`MAX_EDITS`].
    pub max_edits: usize,
    /// See [`MAX_COPY_BYTES`].
    pub max_copy_bytes: u64,
    /// See [`MAX_REQUEST_BYTES`].
    pub max_request_bytes: usize,
    /// See [`ROOTS_WAIT_SECS`].
    pub roots_wait_secs: u64,
    /// See [`MAX_PENDING_REPLY_BYTES`].
    pub max_pending_reply_bytes: u64,
    /// See [`MAX_REPLY_CHARS`]; 0 is no budget.
    pub max_reply_chars: usize,
    /// `--require-if-match`: every change to an existing file must name the
    /// version it was based on (`ifMatch`).
    pub require_if_match: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_read_bytes: MAX_READ_BYTES,
            max_batch_bytes: MAX_BATCH_BYTES,
            max_paths_per_batch: MAX_PATHS_PER_BATCH,
            max_walk_entries: MAX_WALK_ENTRIES,
            max_walk_depth: MAX_WALK_DEPTH,
            max_list_entries: MAX_LIST_ENTRIES,
            max_pattern_bytes: MAX_PATTERN_BYTES,
            max_exclude_patterns: MAX_EXCLUDE_PATTERNS,
            max_path_bytes: MAX_PATH_BYTES,
            max_edits: MAX_EDITS,
            max_copy_bytes: MAX_COPY_BYTES,
            max_request_bytes: MAX_REQUEST_BYTES,
            roots_wait_secs: ROOTS_WAIT_SECS,
            max_pending_reply_bytes: MAX_PENDING_REPLY_BYTES,
            max_reply_chars: MAX_REPLY_CHARS,
            require_if_match: false,
        }
    }
}

/// Log lines waiting for stderr once the session runs (src/log.rs); past
/// it a line is dropped and counted, so an unread stderr cannot stall the
/// server. With [`LOG_LINE_MAX_BYTES`], at most 8 MiB.
pub const LOG_QUEUE_LINES: usize = 1024;

/// The longest log line; a longer one is cut, ending in `… (cut)`.
pub const LOG_LINE_MAX_BYTES: usize = 8 * 1024;

/// How long the end of a session waits for queued log lines to reach
/// stderr before the process exits without them.
pub const LOG_FLUSH_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// `default`, or, in debug builds only, `from` of the number in the
/// environment variable `var` when it is set: how the tests reach a bound
/// (a deadline, a cap) without waiting or building inputs as large as it.
pub fn debug_bound<N: std::str::FromStr, T>(var: &str, from: impl FnOnce(N) -> T, default: T) -> T {
    #[cfg(debug_assertions)]
    if let Some(n) = std::env::var(var).ok().and_then(|v| v.parse().ok()) {
        return from(n);
    }
    #[cfg(not(debug_assertions))]
    let _ = (var, from);
    default
}

/// `tuls journal show`: the most diff lines shown for one change; past it
/// a `[... N more lines]` note.
pub const SHOW_DIFF_LINES: usize = 200;

/// `tuls journal show`: the largest file (pre-image or current) it diffs;
/// a larger one gets a note instead.
pub const SHOW_DIFF_MAX_BYTES: u64 = 4 * 1024 * 1024;
