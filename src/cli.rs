//! The command line: parsing only.
//!
//! Owns: flags, help text and examples. May touch: nothing (no I/O).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};

const AFTER_HELP: &str = "\
Exit status: 0 on success, 1 on a runtime error, 2 on a usage or configuration error.

tuls speaks MCP (JSON-RPC 2.0, one message per line) on stdin/stdout; logs go to stderr.
Connect it from an MCP client, e.g.:  claude mcp add tuls -- tuls filesystem ~/project";

/// The help text after `tuls filesystem`'s options; the tool counts and
/// the example's tool name come from the tool table.
fn fs_after_help() -> String {
    let count = |cap| {
        crate::tools::TOOLS
            .iter()
            .filter(|t| t.capability == cap)
            .count()
    };
    format!(
        "Selectors: filesystem (every tool), filesystem.read (the {} read tools),\n\
         filesystem.write (the {} write tools), filesystem/<tool> (one tool).\n{}",
        count(crate::tools::Capability::Read),
        count(crate::tools::Capability::Write),
        FS_AFTER_HELP.replace("{MOVE_TOOL}", crate::tools::move_file::TOOL.name),
    )
}

const FS_AFTER_HELP: &str = "\
With no --allow every tool is enabled; --deny always wins. A bad selector, or
one that leaves no tool enabled, stops startup with exit status 2.

Path rules: control files that other programs execute or obey (.git, .hg, .svn,
.jj, .claude except commands/agents/skills, .cursor, .vscode, .idea, .zed,
.gemini, .devcontainer, .husky, .mcp.json, .envrc, .pre-commit-config.yaml,
.yarnrc.yml, and in homes shell start-up files, .ssh, .gitconfig, .config/git,
autostart, systemd user units, editor configs, .npmrc, pyvenv.cfg, .codex: all
listed by --print-config) are read-only by default; --no-default-protection lifts them,
--allow-path one of them. --hide and --read-only-path add rules; nothing a
client sends lifts one. Client roots narrow, rules subtract, selectors remove tools.

Client roots (MCP roots, sessions up to protocol 2025-11-25) can only narrow the
DIRs: a client root counts only if it lies at or beneath a DIR. An empty list
narrows nothing; a list of which none counts gives no access, and every refusal
says why. --no-client-roots ignores them. --confine-roots (the reference
server's flag for this) is accepted and changes nothing: tuls always confines.

A leading ~ or ~/ in a DIR expands to $HOME. A DIR moved or replaced while tuls
runs is refused until tuls is restarted.

Examples:
  Serve a project with every tool:
    tuls filesystem ~/project
  Review only:
    tuls filesystem ~/project --allow filesystem.read
  Implementation without moves:
    tuls filesystem ~/project --allow filesystem.read --allow filesystem.write --deny filesystem/{MOVE_TOOL}
  Hide secrets, keep the lockfile read-only:
    tuls filesystem ~/project --hide '.env*' --hide '!.env.example' --hide '*.pem' --read-only-path /Cargo.lock
  Check a configuration without serving:
    tuls filesystem ~/project --allow filesystem.read --print-config

Exit status: 0 on success, 1 on a runtime error, 2 on a usage or configuration error.";

/// tuls: hardened MCP tool servers.
#[derive(Debug, Parser)]
#[command(name = "tuls", version, about, after_help = AFTER_HELP)]
pub struct Cli {
    /// The server to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The servers tuls provides.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve filesystem tools confined to the given directories, over stdio.
    #[command(after_help = fs_after_help())]
    Filesystem(Box<FsArgs>),
    /// Read or undo an undo journal (`tuls filesystem --journal DIR`).
    #[command(subcommand)]
    Journal(JournalCmd),
    /// Check an audit log (`tuls filesystem --audit PATH`).
    #[command(subcommand)]
    Audit(AuditCmd),
}

/// `tuls audit` subcommands.
#[derive(Debug, Subcommand)]
pub enum AuditCmd {
    /// Check the hash chain of an audit log: exit 0 when every record
    /// chains to the one before, 1 naming the first that does not, 2 when
    /// the file cannot be read.
    Verify {
        /// The audit log.
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
}

/// `tuls journal` subcommands.
#[derive(Debug, Subcommand)]
pub enum JournalCmd {
    /// Show the sessions in a journal and their changes.
    List {
        /// The journal directory.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        /// Print JSON (for scripts).
        #[arg(long)]
        json: bool,
    },
    /// Show what a session changed, file by file: each change's op and
    /// path with a unified diff from the kept pre-image to the file as it
    /// is now (notes for binary, missing or evicted content), flagging
    /// writes to control files (paths the built-in read-only set protects)
    /// and refused attempts. Review it before `tuls journal revert`.
    Show {
        /// The journal directory.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        /// The session: its id (from `tuls journal list`) or a prefix of
        /// it that no other session's id begins with.
        #[arg(long, value_name = "ID")]
        session: String,
        /// Print JSON (for scripts): the same, its strings exact.
        #[arg(long)]
        json: bool,
    },
    /// Undo a session's changes, newest first. A file changed after the
    /// session is refused (and the rest restored) unless --force.
    Revert {
        /// The journal directory.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        /// The session to undo: its id (from `tuls journal list`) or a
        /// prefix of it that no other session's id begins with.
        #[arg(long, value_name = "ID")]
        session: String,
        /// Undo only the changes after this one (default: all of them).
        #[arg(long, value_name = "SEQ", default_value_t = 0)]
        to: u64,
        /// Also undo changes to files changed since; lists them first.
        #[arg(long)]
        force: bool,
    },
}

/// `tuls filesystem` arguments.
#[derive(Debug, Args)]
pub struct FsArgs {
    /// Allowed directories. Each is opened once at startup; relative request
    /// paths resolve against the first. A leading `~` or `~/` expands to
    /// $HOME (as the reference server does); client paths never expand.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Enable the tools a selector names (repeatable). Without any --allow,
    /// every tool is enabled.
    #[arg(long, value_name = "SELECTOR")]
    pub allow: Vec<String>,
    /// Disable the tools a selector names (repeatable); wins over --allow.
    #[arg(long, value_name = "SELECTOR")]
    pub deny: Vec<String>,
    /// List only the read tools, as the reference server's --read-only does
    /// (the same as --deny filesystem.write).
    #[arg(long)]
    pub read_only: bool,
    /// Make a directory inside (or containing) an allowed directory
    /// read-only (repeatable): readable and listable, but nothing in it can
    /// be written, created, moved or removed. It must exist at startup.
    #[arg(long, value_name = "DIR")]
    pub read_only_dir: Vec<PathBuf>,
    /// Hide the paths a pattern matches (repeatable; .gitignore syntax,
    /// relative to each allowed directory): every tool answers as for a
    /// missing path, and no listing, tree or search shows them.
    #[arg(long, value_name = "PATTERN")]
    pub hide: Vec<String>,
    /// Make the paths a pattern matches read-only (repeatable; .gitignore
    /// syntax, relative to each allowed directory).
    #[arg(long, value_name = "PATTERN")]
    pub read_only_path: Vec<String>,
    /// Path rules from a JSON file: {"rules": [{"id", "enabled", "pattern",
    /// "match": exact|prefix|glob|regex|contains, "operations": [read = hide;
    /// write, delete = read-only], "reason"}]}. Any malformed rule stops
    /// startup.
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// Lift the built-in protection of control files (.git, .claude,
    /// .vscode, .mcp.json, .envrc, ...), which are read-only by default.
    #[arg(long)]
    pub no_default_protection: bool,
    /// Lift the built-in protection where a pattern matches (repeatable),
    /// e.g. --allow-path .vscode; never lifts --hide or --read-only-*.
    #[arg(long, value_name = "PATTERN")]
    pub allow_path: Vec<String>,
    /// Ignore MCP roots sent by the client (they can only narrow anyway).
    #[arg(long)]
    pub no_client_roots: bool,
    /// Accepted for the reference server's --confine-roots (2.3+): tuls
    /// always confines client roots to the DIRs (a client root counts only at
    /// or beneath one), so this changes nothing.
    #[arg(long)]
    pub confine_roots: bool,
    /// Seconds a tool call waits for the client's roots/list answer (at the
    /// start of a session, and after roots/list_changed) before it fails
    /// with a timeout error; 0 fails at once. Only clients that declare the
    /// roots capability are waited for.
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = crate::limits::ROOTS_WAIT_SECS,
        value_parser = clap::value_parser!(u64).range(0..=3600)
    )]
    pub roots_timeout_secs: u64,
    /// Do not confine the process with Landlock.
    #[arg(long)]
    pub no_landlock: bool,
    /// Print the effective configuration as JSON and exit.
    #[arg(long)]
    pub print_config: bool,
    /// Largest file read whole, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = crate::limits::MAX_READ_BYTES)]
    pub max_read_bytes: u64,
    /// Largest file copy_file copies, in bytes (its size, holes counted).
    #[arg(long, value_name = "BYTES", default_value_t = crate::limits::MAX_COPY_BYTES)]
    pub max_copy_bytes: u64,
    /// Entries a directory_tree or search_files walk visits before truncating.
    #[arg(long, value_name = "N", default_value_t = crate::limits::MAX_WALK_ENTRIES)]
    pub max_entries: usize,
    /// Depth a walk descends to before truncating (at most 512).
    #[arg(
        long,
        value_name = "N",
        default_value_t = crate::limits::MAX_WALK_DEPTH,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new()
            .range(0..=crate::limits::MAX_WALK_DEPTH_CEILING as u64)
    )]
    pub max_depth: usize,
    /// Paths per read_multiple_files call.
    #[arg(long, value_name = "N", default_value_t = crate::limits::MAX_PATHS_PER_BATCH)]
    pub max_paths: usize,
    /// Characters of text one tool reply may carry; a longer reply is cut at
    /// a whole line or entry and says how to get the rest (an `offset`).
    /// 0 turns the budget off; otherwise at least 1024.
    #[arg(
        long,
        value_name = "N",
        default_value_t = crate::limits::MAX_REPLY_CHARS,
        value_parser = parse_reply_chars
    )]
    pub max_reply_chars: usize,
    /// Longest JSON-RPC request line, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = crate::limits::MAX_REQUEST_BYTES)]
    pub max_request_bytes: usize,
    /// Bytes of tool replies held at once (being built, or waiting for the
    /// client to read them); when used up, no further request is read
    /// until replies drain. At least 1 MiB.
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = crate::limits::MAX_PENDING_REPLY_BYTES,
        value_parser = clap::value_parser!(u64).range(1024 * 1024..)
    )]
    pub max_pending_reply_bytes: u64,
    /// Refuse any change to an existing file (write_file over it, edit_file)
    /// that does not name, in `ifMatch`, the version of the file it was based
    /// on; get_file_info then also prints the version in its text.
    #[arg(long)]
    pub require_if_match: bool,
    /// Append one JSON line per tool call to this file (created 0600 if
    /// missing; must lie outside every DIR, and must not be a symlink). A
    /// change is acknowledged only once its line is synced; if the log
    /// cannot be written, changes are refused and reads go on.
    #[arg(long, value_name = "PATH", conflicts_with = "audit_fd")]
    pub audit: Option<PathBuf>,
    /// Like --audit, to a descriptor the supervisor passes (open for writing).
    #[arg(long, value_name = "N")]
    pub audit_fd: Option<u32>,
    /// Keep what every change replaces in this directory (created 0700 if
    /// missing; must lie outside every DIR), so `tuls journal revert` can
    /// undo a session. A change is acknowledged only once it is recorded.
    #[arg(long, value_name = "DIR")]
    pub journal: Option<PathBuf>,
    /// Bytes of old content the journal keeps; past it the oldest go first
    /// (and the journal records which).
    #[arg(long, value_name = "BYTES", default_value_t = crate::limits::JOURNAL_MAX_BYTES, requires = "journal")]
    pub journal_max_bytes: u64,
    /// Log level for stderr; RUST_LOG wins. Matched exactly (lowercase).
    #[arg(long, value_name = "LEVEL", value_enum, default_value_t = LogLevel::Info)]
    pub log_level: LogLevel,
}

/// The levels `--log-level` accepts; anything else stops startup with exit
/// status 2 and this list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogLevel {
    /// Errors only.
    Error,
    /// Warnings and errors.
    Warn,
    /// The default: what tuls decided (client roots in force, ...).
    Info,
    /// Details for debugging a session.
    Debug,
    /// Everything.
    Trace,
}

impl LogLevel {
    /// The level's name, as `tracing`'s filters spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
            LogLevel::Trace => "trace",
        }
    }
}

/// Expands a leading `~` or `~/` of an operator's `DIR` from `home` (the
/// value of `$HOME`), as the reference server does. `~user` and a `~`
/// anywhere else are left alone. The command line is trusted; client paths
/// never go through this.
///
/// # Errors
///
/// A `DIR` that starts with `~` or `~/` while `$HOME` is unset or empty.
pub fn expand_home(dir: &Path, home: Option<&OsStr>) -> Result<PathBuf, String> {
    let rest = if dir == Path::new("~") {
        Path::new("")
    } else {
        match dir.strip_prefix("~") {
            // `strip_prefix` works on whole components, so `~user` is kept.
            Ok(rest) if dir.as_os_str().as_encoded_bytes().starts_with(b"~/") => rest,
            _ => return Ok(dir.to_path_buf()),
        }
    };
    match home.filter(|h| !h.is_empty()) {
        Some(home) => Ok(Path::new(home).join(rest)),
        None => Err(format!(
            "allowed directory '{}' starts with '~', but $HOME is not set",
            dir.display()
        )),
    }
}

/// A note for a `DIR` that could not be opened and starts with `~user`:
/// only `~` and `~/` expand, so such a `DIR` was taken literally.
pub fn tilde_user_note(dir: &Path) -> Option<String> {
    let bytes = dir.as_os_str().as_encoded_bytes();
    if bytes.len() > 1 && bytes[0] == b'~' && bytes[1] != b'/' {
        let user = dir
            .to_string_lossy()
            .split('/')
            .next()
            .unwrap_or_default()
            .to_owned();
        Some(format!(
            "'{user}' is not expanded (only a leading '~' or '~/' expands, to $HOME): give the full path"
        ))
    } else {
        None
    }
}

/// `--max-reply-chars`: 0, or at least [`crate::limits::MIN_REPLY_CHARS`].
fn parse_reply_chars(s: &str) -> Result<usize, String> {
    let n: usize = s.parse().map_err(|e| format!("{e}"))?;
    if n != 0 && n < crate::limits::MIN_REPLY_CHARS {
        return Err(format!(
            "must be 0 (no budget) or at least {}",
            crate::limits::MIN_REPLY_CHARS
        ));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example takes its tool's name from the table, and reads as it
    /// did when it held the name.
    #[test]
    fn the_help_example_names_the_move_tool() {
        let help = fs_after_help();
        assert!(
            help.contains(
                "--allow filesystem.read --allow filesystem.write --deny filesystem/move_file\n"
            ),
            "{help}"
        );
        assert!(!help.contains("{MOVE_TOOL}"));
    }

    #[test]
    fn expands_a_leading_tilde_only() {
        let home = Some(OsStr::new("/home/you"));
        let x = |d: &str| expand_home(Path::new(d), home).map(|p| p.display().to_string());
        assert_eq!(x("~").as_deref(), Ok("/home/you/"));
        assert_eq!(x("~/").as_deref(), Ok("/home/you/"));
        assert_eq!(x("~/project").as_deref(), Ok("/home/you/project"));
        assert_eq!(x("~/a/b/").as_deref(), Ok("/home/you/a/b"));
        assert_eq!(x("~user/p").as_deref(), Ok("~user/p"));
        assert_eq!(x("/x/~/p").as_deref(), Ok("/x/~/p"));
        assert_eq!(x("./~").as_deref(), Ok("./~"));
        assert_eq!(x("~~").as_deref(), Ok("~~"));
        assert!(expand_home(Path::new("~/p"), None).is_err());
        assert!(expand_home(Path::new("~"), Some(OsStr::new(""))).is_err());
        assert_eq!(
            expand_home(Path::new("/abs"), None).as_deref(),
            Ok(Path::new("/abs"))
        );
    }

    #[test]
    fn log_levels_are_exact() {
        for (s, l) in [("error", LogLevel::Error), ("trace", LogLevel::Trace)] {
            assert_eq!(LogLevel::from_str(s, false), Ok(l));
            assert_eq!(l.as_str(), s);
        }
        assert!(LogLevel::from_str("ERROR", false).is_err());
        assert!(LogLevel::from_str("verbose", false).is_err());
    }
}
