//! Every bound tuls enforces, as a named constant with its default, and the
//! run-time [`Limits`] an operator may tune with flags.
//!
//! Owns: the numbers. May touch: nothing (no I/O).

/// Largest file `read_text_file`, `read_media_file` or one entry of
/// `read_multiple_files` reads whole (`--max-read-bytes`). Also caps how far
/// `head`/`tail` scan.
pub const MAX_READ_BYTES: u64 = 32 * 1024 * 1024;

/// Total bytes one `read_multiple_files` call may return.
pub const MAX_BATCH_BYTES: u64 = 64 * 1024 * 1024;

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

/// Edits per `edit_file` call.
pub const MAX_EDITS: usize = 1024;

/// Bytes in one JSON-RPC request line (`--max-request-bytes`).
pub const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;

/// How long a path tool waits for the client's first `roots/list` answer.
pub const ROOTS_WAIT_SECS: u64 = 10;

/// Threads that run tool calls (and walks) off the async runtime. Calls
/// beyond this queue.
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

/// Characters of text one `search_file_contents` reply carries; the result
/// is cut at a whole match group with a notice. (Local until the general
/// reply budget, `--max-reply-chars`, lands; then this becomes that.)
pub const MAX_SEARCH_REPLY_CHARS: usize = 60_000;

/// Seconds one `search_file_contents` call may run; then it stops and
/// returns what it found, marked as cut.
pub const SEARCH_DEADLINE_SECS: u64 = 60;

/// Bytes of one `.gitignore`, `.ignore` or `.git/info/exclude` file read by
/// `search_file_contents`; a bigger one is not used (and the reply says so).
pub const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;

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
    /// See [`MAX_REQUEST_BYTES`].
    pub max_request_bytes: usize,
    /// See [`ROOTS_WAIT_SECS`].
    pub roots_wait_secs: u64,
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
            max_request_bytes: MAX_REQUEST_BYTES,
            roots_wait_secs: ROOTS_WAIT_SECS,
        }
    }
}
