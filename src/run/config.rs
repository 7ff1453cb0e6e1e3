//! The configuration of one `tuls filesystem` run, made from its flags
//! before anything is confined or served ([`Config::from_args`]), then the
//! steps that follow it: Landlock ([`Config::confine`]), `--print-config`
//! ([`Config::print`]), and the session ([`Config::serve`]).
//!
//! Owns: turning flags into the opened roots, their rules, the audit log and
//! the undo journal (all opened before Landlock), and the order of what
//! comes after, which is a security property: roots opened, then Landlock on
//! the main thread, and only then the runtime and every thread.
//! May touch: the operator's paths, at startup only (through `fs::roots`,
//! `audit::open`, `journal::open`); stdin/stdout/stderr.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use super::rules::path_rules;
use super::{Hooks, stop};
use crate::audit::Audit;
use crate::cli::FsArgs;
use crate::error::StartupError;
use crate::fs::roots;
use crate::fs::sandbox::{self, Status};
use crate::fs::scope::Scope;
use crate::journal::Journal;
use crate::limits::Limits;
use crate::mcp::server::Server;
use crate::policy::Policy;

/// What a run serves, as its flags say, with every file it needs opened.
pub(super) struct Config {
    policy: Policy,
    limits: Limits,
    opened: Vec<roots::Root>,
    /// The effective rules, as `--print-config` shows them.
    path_rules: serde_json::Value,
    audit: Option<Arc<Audit>>,
    journal: Option<Arc<Journal>>,
    /// The CPU count, asked once before Landlock.
    threads: usize,
    client_roots: bool,
    journal_shown: Option<serde_json::Value>,
}

impl Config {
    /// The configuration `args` ask for. An error is a configuration error
    /// (exit status 2): nothing has been confined or served yet.
    pub(super) fn from_args(args: &FsArgs) -> Result<Config, String> {
        // --read-only: the reference's spelling of --deny filesystem.write.
        let mut deny = args.deny.clone();
        if args.read_only {
            deny.push("filesystem.write".to_owned());
        }
        let policy = Policy::from_selectors(&args.allow, &deny).map_err(|e| e.to_string())?;
        let limits = Limits {
            max_read_bytes: args.max_read_bytes,
            max_copy_bytes: args.max_copy_bytes,
            max_walk_entries: args.max_entries,
            max_walk_depth: args.max_depth,
            max_paths_per_batch: args.max_paths,
            max_request_bytes: args.max_request_bytes,
            roots_wait_secs: args.roots_timeout_secs,
            max_pending_reply_bytes: args.max_pending_reply_bytes,
            max_reply_chars: args.max_reply_chars,
            require_if_match: args.require_if_match,
            ..Limits::default()
        };
        let home = std::env::var_os("HOME");
        let mut opened = Vec::with_capacity(args.dirs.len());
        for dir in &args.dirs {
            let dir = crate::cli::expand_home(dir, home.as_deref())?;
            match roots::open(&dir) {
                Ok(root) => {
                    if root.display == "/" {
                        tracing::warn!(
                            "'/' is an allowed directory: the whole filesystem is in scope"
                        );
                    }
                    if let Some(first) = opened
                        .iter()
                        .find(|r: &&roots::Root| r.same_directory(&root))
                    {
                        tracing::warn!(
                            "allowed directory '{}' is given twice (also as '{}'); once is enough",
                            root.display,
                            first.display
                        );
                    }
                    opened.push(root);
                }
                Err(e) => {
                    return Err(match crate::cli::tilde_user_note(dir.as_path()) {
                        Some(note) => format!("{e}; {note}"),
                        None => e.to_string(),
                    });
                }
            }
        }
        let (path_rules, rule_spec) = path_rules(args, home.as_deref(), &mut opened)?;
        // The audit log is opened before Landlock, outside every root.
        let audit = match (&args.audit, args.audit_fd) {
            (Some(p), _) => Some(crate::audit::Target::Path(p)),
            (None, Some(n)) => Some(crate::audit::Target::Fd(n)),
            (None, None) => None,
        };
        let audit = audit
            .map(|t| crate::audit::open(&t, &opened))
            .transpose()?
            .map(Arc::new);
        // The undo journal too: before Landlock, outside every root.
        let journal = match &args.journal {
            Some(dir) => {
                let session = match &audit {
                    Some(a) => a.session().to_owned(),
                    None => {
                        let mut id = [0u8; 16];
                        if let Err(e) = getrandom::fill(&mut id) {
                            return Err(format!("no randomness for the session id: {e}"));
                        }
                        id.iter().map(|b| format!("{b:02x}")).collect()
                    }
                };
                Some(Arc::new(crate::journal::open(
                    dir,
                    &opened,
                    args.journal_max_bytes,
                    session,
                    rule_spec,
                )?))
            }
            None => None,
        };
        // Asked once, here: `available_parallelism` reads `/proc/self/cgroup`
        // and `/sys/fs/cgroup`, which Landlock (and the one-ambient-site rule)
        // forbid later. tokio and the walk pool get the count explicitly.
        let threads = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        Ok(Config {
            policy,
            limits,
            opened,
            path_rules,
            audit,
            journal,
            threads,
            client_roots: !args.no_client_roots,
            journal_shown: args.journal.as_ref().map(|d| {
                serde_json::json!({
                    "dir": d.display().to_string(),
                    "maxBytes": args.journal_max_bytes,
                })
            }),
        })
    }

    /// Applies Landlock to the roots (read-only when no write tool is
    /// enabled) unless `disabled`, then `no_new_privs`.
    pub(super) fn confine(&self, disabled: bool) -> Status {
        let read_only = !self.policy.any_write();
        let landlock = if disabled {
            Status::Disabled
        } else {
            let refs: Vec<&roots::Root> = self.opened.iter().collect();
            let journal = self.journal.as_deref().map(|j| j.dir());
            match sandbox::restrict(&refs, read_only, journal) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "Landlock could not be applied; running without it");
                    Status::Unavailable
                }
            }
        };
        sandbox::no_new_privs();
        landlock
    }

    /// `--print-config`: the effective configuration on stdout (never an
    /// MCP transport here: the process exits after it).
    pub(super) fn print(&self, landlock: &Status) {
        let roots: Vec<&str> = self.opened.iter().flat_map(|r| r.spellings()).collect();
        let config = serde_json::json!({
            "roots": roots,
            "enabledTools": self.policy.enabled_tools(),
            "clientRoots": self.client_roots,
            "limits": self.limits,
            "landlock": landlock.to_string(),
            "pathRules": self.path_rules,
            "journal": self.journal_shown,
        });
        crate::out!(
            "{}",
            serde_json::to_string_pretty(&config).unwrap_or_default()
        );
    }

    /// Says what is served, then serves one session on stdio until it ends.
    pub(super) fn serve(
        self,
        landlock: &Status,
        hooks: Hooks,
        mut logger: crate::log::Logger,
    ) -> ExitCode {
        let Config {
            policy,
            limits,
            opened,
            audit,
            journal,
            threads,
            client_roots,
            ..
        } = self;
        let root_list: Vec<String> = opened
            .iter()
            .flat_map(|r| r.spellings().map(str::to_owned).collect::<Vec<_>>())
            .collect();
        let first_spellings: Vec<String> = opened
            .iter()
            .filter_map(|r| r.spellings().next().map(str::to_owned))
            .collect();
        crate::say!("tuls: roots: {}", root_list.join(", "));
        crate::say!("tuls: tools: {}", policy.enabled_tools().join(", "));
        crate::say!("tuls: landlock: {landlock}");
        let scope = Arc::new(Scope::new(
            opened,
            limits.max_path_bytes,
            crate::tools::list_allowed_directories::TOOL.name,
        ));
        if scope.openat2_missing() {
            crate::say!(
                "tuls: openat2: unavailable here (a kernel before 5.6, an emulator or a seccomp filter); \
                 paths are resolved one component at a time with O_NOFOLLOW instead, with the same confinement"
            );
        }
        if std::io::stdin().is_terminal() {
            // A client starts servers without the shell's PATH or directory,
            // so the command to copy names this binary and the roots by
            // their absolute paths, as the README advises.
            let exe = std::env::current_exe()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_else(|_| "/absolute/path/to/tuls".to_owned());
            let command = std::iter::once(exe.as_str())
                .chain(std::iter::once("filesystem"))
                .chain(first_spellings.iter().map(String::as_str))
                .map(shell_word)
                .collect::<Vec<_>>()
                .join(" ");
            crate::say!(
                "tuls: this is an MCP server speaking JSON-RPC on stdin/stdout; it is waiting for a client.\n\
                 tuls: let a client start it instead of typing, e.g. claude mcp add tuls -- {command}\n\
                 tuls: or try it in the MCP Inspector: npx -y @modelcontextprotocol/inspector@0.15.0 {command}\n\
                 tuls: Press Ctrl-D to quit."
            );
        }
        let records = (audit, journal);
        let server = match Server::new(scope, policy, limits, client_roots, records, threads) {
            Ok(server) => server,
            Err(e) => return stop(&StartupError::Start(e)),
        };
        let runtime = match tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .worker_threads(threads)
            // Tool calls are short filesystem syscalls (nothing blocks on a FIFO);
            // a bounded pool keeps a burst of calls from spawning hundreds of
            // threads, each with its own stack and heap.
            .max_blocking_threads(crate::limits::MAX_BLOCKING_THREADS)
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                return stop(&StartupError::Start(format!(
                    "cannot start the runtime: {e}"
                )));
            }
        };
        logger.queue();
        let result = crate::mcp::stdio::serve(runtime, server, limits.max_request_bytes, hooks);
        // The session's last log lines reach stderr before an error line does.
        drop(logger);
        match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => stop(&StartupError::Session(e)),
        }
    }
}

/// `word` as one shell word: as it is when it holds only characters no shell
/// treats specially, else in single quotes (a `'` inside as `'\''`).
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%=".contains(&b));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}
