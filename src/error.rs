//! The one error type tools return, and the one place that words it.
//!
//! Owns: classifying `io::Error`s and writing messages. Messages name the path
//! as the client gave it and never a resolved or host path: an escape through
//! `..` or an absolute path gets the reference's [`Error::OutsideRoots`]
//! text; one through a symlink (to an outside file, directory or nothing at
//! all) or one the client's roots exclude adds its reason ([`Outside`]),
//! which names nothing but the path as given.
//! Also here: [`StartupError`], why startup stopped, with its exit status.
//! May touch: nothing (no I/O).

mod kind;
mod name;
mod os;
mod outside;
mod startup;

pub use kind::ErrorKind;
pub use os::{OsPaths, ParentMissing};
pub use outside::Outside;
pub use startup::StartupError;

/// A failed tool call, worded for the agent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The path leads outside every allowed root (`..`, absolute, symlink).
    /// The reference's words, then the reason when there is one to give
    /// ([`Outside`]).
    #[error("Access denied - path outside allowed directories: {path}{why}")]
    OutsideRoots {
        /// The path as the client gave it.
        path: String,
        /// Why, as the resolver found it.
        why: Outside,
    },
    /// No root is in force: the client's roots left none (every one lies
    /// outside the operator's directories, or `roots/list` failed).
    #[error(
        "Access denied - path outside allowed directories: {path}. No directory is open to this session: {why}. Set the client's roots to folders inside the directories tuls serves, or have the operator start tuls with directories that contain them"
    )]
    NoRootInForce {
        /// The path as the client gave it.
        path: String,
        /// Why, in plain words (names the client's roots).
        why: String,
    },
    /// The operator's path of the root this path lies under no longer names
    /// the directory tuls opened at startup.
    #[error(
        "Refusing '{path}': the allowed directory it lies in was moved, replaced or removed while tuls was running, so tuls no longer serves it. Restart tuls to serve what is at that path now"
    )]
    RootMoved {
        /// The path as the client gave it.
        path: String,
    },
    /// A path rule makes the path read-only: nothing may write, create,
    /// move or remove it. The text names the rule after the path, `(rule
    /// "lock" from the rules file)`: the agent knows the path exists.
    #[error(
        "Access denied - path is read-only (protected by the server's path rules): {path}{}",
        by_rule(.rule.as_deref())
    )]
    Protected {
        /// The path as the client gave it.
        path: String,
        /// The rule that makes it read-only (the operator's log names it
        /// too); `None` when none is known or the path is hidden (a hidden
        /// path's rule is never named to the agent).
        rule: Option<Box<crate::rules::Why>>,
    },
    /// A move would carry paths out from under the rules that protect or
    /// hide them (or bring them under other ones).
    #[error(
        "Access denied - moving {from} to {to} would change what the server's path rules protect beneath it"
    )]
    MoveChangesRules {
        /// The source as the client gave it.
        from: String,
        /// The destination as the client gave it.
        to: String,
    },
    /// The path string itself is unusable.
    #[error("Invalid path '{path}': {reason}")]
    InvalidPath {
        /// The path as given (possibly shortened).
        path: String,
        /// Why.
        reason: &'static str,
    },
    /// A FIFO, socket or device: refused without opening it.
    #[error("Refusing to open '{path}': it is a {kind}, not a regular file")]
    NotARegularFile {
        /// The path as given.
        path: String,
        /// "FIFO", "socket", "character device", ...
        kind: &'static str,
    },
    /// A read above a limit.
    #[error("File too large: '{path}' is {size} bytes, over the {limit}-byte limit{hint}")]
    TooLarge {
        /// The path as given.
        path: String,
        /// The size seen.
        size: u64,
        /// The limit in force.
        limit: u64,
        /// A suggestion.
        hint: &'static str,
    },
    /// The arguments do not match the tool's input schema.
    #[error(
        "MCP error -32602: Input validation error: Invalid arguments for tool {tool}: {detail}"
    )]
    InvalidArguments {
        /// The tool called.
        tool: &'static str,
        /// What serde said.
        detail: String,
    },
    /// A list argument that must not be empty is.
    #[error("Invalid arguments for tool {tool}: {field} must hold at least 1 item")]
    EmptyList {
        /// The tool called.
        tool: &'static str,
        /// The argument.
        field: &'static str,
    },
    /// `offset`/`limit` together with `head` or `tail`.
    #[error(
        "Cannot combine offset, limit or lineNumbers with head or tail; use offset and limit for a range of lines"
    )]
    RangeAndHeadTail,
    /// A `cursor` argument that this server process did not give for this
    /// tool, path and arguments.
    #[error(
        "Invalid cursor: {reason}. A cursor works only with the same tool, path and arguments, in the server process that gave it; call again without cursor to start from the beginning"
    )]
    InvalidCursor {
        /// Why.
        reason: &'static str,
    },
    /// A numeric argument below its minimum (`offset`, `limit`, `maxDepth`).
    #[error("Invalid {arg}: {value}; it must be a whole number of at least {min}")]
    BelowMinimum {
        /// The argument.
        arg: &'static str,
        /// The value given.
        value: i64,
        /// The smallest value accepted.
        min: i64,
    },
    /// A line-range read that would scan past [`crate::limits::MAX_LINE_SCAN_BYTES`].
    #[error(
        "Refusing to scan more than {limit} bytes of '{path}' to reach line {line}; read an earlier range, such as offset: 1"
    )]
    LineScanLimit {
        /// The path as given.
        path: String,
        /// The first line asked for.
        line: u64,
        /// The limit in force.
        limit: u64,
    },
    /// `head` and `tail` together.
    #[error("Cannot specify both head and tail parameters simultaneously")]
    HeadAndTail,
    /// A Windows path on a POSIX host.
    #[error("Access denied - Windows-style path received on a POSIX host: {path}")]
    WindowsPath {
        /// The path as given.
        path: String,
    },
    /// More `read_multiple_files` paths than the limit.
    #[error("Too many paths: {given} given, the limit is {limit} per call")]
    TooManyPaths {
        /// Paths given.
        given: usize,
        /// The limit in force.
        limit: usize,
    },
    /// More edits than the limit.
    #[error("Too many edits: {given} in one call, over the limit of {limit}")]
    TooManyEdits {
        /// Edits given.
        given: usize,
        /// The limit in force.
        limit: usize,
    },
    /// More exclude patterns than the limit.
    #[error("Too many exclude patterns: {given} given, the limit is {limit}")]
    TooManyPatterns {
        /// Patterns given.
        given: usize,
        /// The limit in force.
        limit: usize,
    },
    /// One glob pattern longer than the limit.
    #[error("Glob pattern too long: {len} bytes, the limit is {limit}")]
    PatternTooLong {
        /// Its length.
        len: usize,
        /// The limit in force.
        limit: usize,
    },
    /// The exclude patterns of one call longer together than the limit.
    #[error("Exclude patterns too long together: {total} bytes, the limit is {limit}")]
    PatternsTooLong {
        /// Their total length.
        total: usize,
        /// The limit.
        limit: usize,
    },
    /// A glob pattern whose braces would compile to too much.
    #[error("Glob pattern too complex: {why} in '{pattern}'")]
    PatternTooComplex {
        /// The pattern.
        pattern: String,
        /// Which bound it passes.
        why: String,
    },
    /// A glob pattern that does not parse.
    #[error("Invalid glob pattern '{pattern}': {reason}")]
    InvalidGlob {
        /// The pattern.
        pattern: String,
        /// Why.
        reason: String,
    },
    /// Exclude patterns that do not compile together.
    #[error("Invalid exclude pattern: {reason}")]
    InvalidExclude {
        /// Why.
        reason: String,
    },
    /// A `head`/`tail` that would scan past the read limit. The text names
    /// the call that reads those lines anyway: a line range, which streams.
    #[error(
        "Refusing to scan more than {limit} bytes of '{path}' for lines; {}",
        scan_instead(*head)
    )]
    ScanLimit {
        /// The path as given.
        path: String,
        /// The limit in force.
        limit: u64,
        /// The `head` asked for (`None`: a `tail`).
        head: Option<u64>,
    },
    /// `edit_file` on a file that is not UTF-8.
    #[error(
        "Refusing to edit '{path}': it is not valid UTF-8 (first invalid byte at offset {offset}); {tool} never rewrites bytes it cannot represent"
    )]
    NotUtf8 {
        /// The tool refusing (it never rewrites such bytes).
        tool: &'static str,
        /// The path as given.
        path: String,
        /// Offset of the first invalid byte.
        offset: usize,
    },
    /// `edit_file`'s edits do not apply.
    #[error("Could not apply the edits to '{path}': {reason}; nothing was written")]
    EditFailed {
        /// The path as given.
        path: String,
        /// Why, as the edit engine ([`crate::text::edit`]) words it; boxed
        /// so that this bottom module does not import the text layer.
        reason: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A `search_file_contents` pattern that is not a valid regex.
    #[error("Invalid regular expression: {reason}")]
    InvalidRegex {
        /// What the regex parser said.
        reason: String,
    },
    /// A `search_file_contents` pattern whose compiled form is too big.
    #[error(
        "Regular expression too big: it compiles to more than {limit} bytes; use a shorter pattern (fewer alternatives or smaller repetitions) or literal: true"
    )]
    RegexTooBig {
        /// The compiled-size limit.
        limit: usize,
    },
    /// A `search_file_contents` pattern longer than the limit as written.
    #[error("Regular expression too long: {len} bytes, the limit is {limit}")]
    RegexTooLong {
        /// Its length.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// A numeric argument outside its bounds.
    #[error(
        "Invalid arguments for tool {tool}: {field} is {given}, it must be between {min} and {max}"
    )]
    ArgumentOutOfRange {
        /// The tool called.
        tool: &'static str,
        /// The argument.
        field: &'static str,
        /// What was given.
        given: u64,
        /// The least allowed.
        min: u64,
        /// The most allowed.
        max: u64,
    },
    /// The client cancelled the request.
    #[error("The request was cancelled")]
    Cancelled,
    /// The process ran out of file descriptors during a walk: its result
    /// would have left out what it could not open, so none is given.
    #[error(
        "Too many open files (EMFILE): tuls could not open every directory or file this walk reached, so its result would be incomplete and none is given. Retry with fewer calls at once or a smaller maxDepth; the operator can raise tuls's open-file limit (ulimit -n)"
    )]
    OutOfDescriptors,
    /// The client did not answer `roots/list` in time.
    #[error(
        "Timed out after {secs}s waiting for the client's roots/list answer; no access until the client sends notifications/roots/list_changed and answers the roots/list request that follows (an answer after the timeout is not applied)"
    )]
    RootsTimeout {
        /// The wait in force (`--roots-timeout-secs`).
        secs: u64,
    },
    /// The client's `roots/list` answer named more roots than tuls accepts.
    #[error(
        "The client sent {count} roots, more than the {max} accepted; no access until the client sends a shorter list"
    )]
    TooManyClientRoots {
        /// Roots in the answer.
        count: usize,
        /// The bound ([`crate::limits::MAX_CLIENT_ROOTS`]).
        max: usize,
    },
    /// A tool panicked; the server goes on.
    #[error("Internal error in tool {tool}; the server is still running")]
    Panicked {
        /// The tool.
        tool: &'static str,
    },
    /// A failure of tuls itself, not of the request.
    #[error("{0}")]
    Internal(String),
    /// An OS error, worded like Node's (the reference server's) messages:
    /// `ENOENT: no such file or directory, open 'a'`, `EXDEV: ..., rename
    /// 'a' -> 'b'`, and `EISDIR: illegal operation on a directory, read`
    /// (no path, as the reference words a read of a directory). Built only
    /// by [`Error::os`] (and [`Error::io`], [`Error::io2`], which call it).
    #[error("{code}: {text}, {op}{paths}")]
    Os {
        /// `ENOENT`, `ENOTDIR`, ...
        code: &'static str,
        /// The errno's text.
        text: &'static str,
        /// The operation (`open`, `scandir`, `stat`, `mkdir`, `rename`, ...).
        op: &'static str,
        /// The paths named, as given.
        paths: OsPaths,
    },
    /// A directory on the way to the path does not exist, or a path rule
    /// hides it (which reads the same): the reference 2.3.0's text, with
    /// the parent as the client gave it. Built only by [`Error::io`], from
    /// the resolver's [`ParentMissing`].
    #[error("Parent directory does not exist: {dir}")]
    ParentMissing {
        /// The path's parent, as the client gave it.
        dir: String,
    },
    /// A write onto a file whose permission bits grant no write access.
    #[error(
        "Refusing to overwrite '{path}': the file is read-only (mode {mode:04o}); change its permissions first if it should be writable"
    )]
    ReadOnly {
        /// The path as given.
        path: String,
        /// The file's permission bits.
        mode: u32,
    },
    /// A write through a symbolic link whose target does not exist.
    #[error(
        "Refusing to write through a dangling symbolic link: '{path}' (its target does not exist)"
    )]
    DanglingSymlink {
        /// The path as given.
        path: String,
    },
    /// The file changed between the moment tuls looked at it and the write.
    #[error("'{path}' changed while it was being written; nothing was written, try again")]
    Changed {
        /// The path as given.
        path: String,
    },
    /// A conditional change (`ifMatch`) to a file whose content is no
    /// longer the version the agent named: nothing was changed.
    #[error(
        "Refusing to {op} '{path}': it is not the version named by ifMatch ({given}){current}; nothing was changed. Read the file again and reapply your change to what it holds now, with ifMatch set to the version that read returns"
    )]
    VersionMismatch {
        /// `write`, `edit`, `move`, ...
        op: &'static str,
        /// The path as given.
        path: String,
        /// The client's `ifMatch`, shortened.
        given: String,
        /// What the file is now, worded: `; its current version is b3:…`,
        /// `; it does not exist`, `; it is larger than the read limit`.
        current: String,
    },
    /// The audit log cannot be written: changes are refused (reads go on).
    #[error(
        "Refusing to change files: {why}, and every change must be recorded there first; reads still work. The operator must fix the audit log and restart tuls"
    )]
    AuditUnavailable {
        /// What failed.
        why: String,
    },
    /// A change was made but its audit record could not be written.
    #[error(
        "The change was made, but {why}: it is not recorded in the audit log. Further changes are refused; reads still work"
    )]
    AuditNotRecorded {
        /// What failed.
        why: String,
    },
    /// The undo journal cannot keep what a change would replace, or cannot
    /// be written: the change is not made, and later changes are refused.
    #[error(
        "Refusing to change files: {why}, and every change must be kept there first so that it can be undone; nothing was changed, and reads still work. The operator must fix the undo journal and restart tuls"
    )]
    JournalUnavailable {
        /// What failed.
        why: String,
    },
    /// The undo journal has no room for the first old content of a file
    /// (pinned until reverted): this change is refused, others go on.
    #[error(
        "Refusing to change '{path}': {why}. Nothing was changed; reads, and changes to files this session already changed, still work. The operator can raise --journal-max-bytes, or revert the sessions kept in the journal or move the journal aside, and restart tuls"
    )]
    JournalFull {
        /// The file, as the journal names it.
        path: String,
        /// Why it does not fit.
        why: String,
    },
    /// A change was made but its undo record could not be written.
    #[error(
        "The change was made, but {why}: it is not recorded in the undo journal. Further changes are refused; reads still work"
    )]
    JournalNotRecorded {
        /// What failed.
        why: String,
    },
    /// `--require-if-match`: a change to an existing file without `ifMatch`.
    #[error(
        "Refusing to {op} '{path}' without ifMatch: this server requires every change to an existing file to name the version of the file it was based on. Read the file first ({readers}), then call {tool} again with ifMatch set to that version"
    )]
    IfMatchRequired {
        /// Which tools give a file's version, and how (from the tool table).
        readers: &'static str,
        /// `write`, `edit`, `move`, ...
        op: &'static str,
        /// The path as given.
        path: String,
        /// The tool to call again.
        tool: &'static str,
    },
    /// The directory a write, create or move acts in was moved (or replaced)
    /// after tuls opened it beneath the root: the handle no longer leads
    /// where a fresh resolve from the root does, so nothing is done there.
    #[error(
        "'{path}': its directory was moved while tuls worked in it; nothing was written, try again"
    )]
    DirectoryMoved {
        /// The path as given.
        path: String,
    },
    /// An extended attribute that carries access control (a POSIX ACL, a
    /// security label) could not be given to the replacement file, so the
    /// write was refused rather than replace the file with one that grants
    /// more.
    #[error(
        "Refusing to write '{path}': its access control ({attr}) could not be kept on the new file ({reason}); the file was left unchanged"
    )]
    AccessControlNotKept {
        /// The path as given.
        path: String,
        /// The attribute's name, control characters escaped.
        attr: String,
        /// The OS error.
        reason: String,
    },
    /// `append_file` content over [`crate::limits::MAX_APPEND_BYTES`].
    #[error(
        "Content too large: {size} bytes to append to '{path}', over the {limit}-byte limit of one append; append it in parts"
    )]
    AppendTooLarge {
        /// The path as given.
        path: String,
        /// The bytes given.
        size: u64,
        /// The limit in force.
        limit: u64,
    },
    /// `move_file` onto an existing name.
    #[error("Destination already exists: {path}")]
    DestinationExists {
        /// The destination as given.
        path: String,
    },
    /// A move the kernel refuses for a reason worth spelling out.
    #[error("Cannot move '{from}' to '{to}': {reason}")]
    Move {
        /// The source as given.
        from: String,
        /// The destination as given.
        to: String,
        /// Why.
        reason: String,
    },
    /// Any other failure, without host details.
    #[error("{op} '{path}' failed: {kind}")]
    Other {
        /// The operation.
        op: &'static str,
        /// The path as given.
        path: String,
        /// The error kind, no host paths.
        kind: String,
    },
}

/// ` (rule "lock" from the rules file)`: how a read-only refusal names
/// its rule ([`crate::rules::Why::for_agent`]), or nothing.
fn by_rule(rule: Option<&crate::rules::Why>) -> String {
    rule.and_then(crate::rules::Why::for_agent)
        .map(|name| format!(" ({name})"))
        .unwrap_or_default()
}

impl Error {
    /// This error, with `hint` (the call that reads the file in parts) when
    /// it is [`Error::TooLarge`]: the tool that read knows what works.
    pub fn too_large_hint(self, hint: &'static str) -> Self {
        match self {
            Error::TooLarge {
                path, size, limit, ..
            } => Error::TooLarge {
                path,
                size,
                limit,
                hint,
            },
            e => e,
        }
    }

    /// Whether this is an escape refusal.
    pub fn is_outside(&self) -> bool {
        matches!(
            self,
            Error::OutsideRoots { .. } | Error::NoRootInForce { .. }
        )
    }
}

/// What reads the lines a `head` (`Some(n)`) or `tail` could not: a line
/// range, which streams the file in constant memory and cuts a line too
/// long for one reply with a cursor to the rest.
fn scan_instead(head: Option<u64>) -> String {
    match head {
        Some(n) => format!("call again with offset: 1 and limit: {n} instead of head, which reads them streaming"),
        None => "a tail reads no further from the end: read the lines from the start with offset: 1 instead of tail (each cut reply says how to go on)".to_owned(),
    }
}

/// Result alias for tool code.
pub type Result<T, E = Error> = std::result::Result<T, E>;
