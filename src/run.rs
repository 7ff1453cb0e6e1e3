//! Startup: parse, open the roots, confine, then serve.
//!
//! Owns: the order of startup, which is a security property: roots are
//! opened, then Landlock is applied on the main thread, and only then is the
//! tokio runtime (and every thread) started. Exit status 2 for usage and
//! configuration errors, 1 for runtime errors.
//! May touch: stdin/stdout/stderr.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;

use crate::cli::{Cli, Command, FsArgs, JournalCmd};
use crate::error::StartupError;
use crate::fs::roots;
use crate::fs::sandbox::{self, Status};
use crate::fs::scope::Scope;
use crate::limits::Limits;
use crate::mcp::server::Server;
pub use crate::mcp::stdio::Hooks;
use crate::policy::Policy;

/// Entry point of the binary. `hooks` are the process-level calls the
/// library cannot make itself (it has no `unsafe`).
pub fn main(hooks: Hooks) -> ExitCode {
    raise_fd_limit();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            if e.kind() == clap::error::ErrorKind::InvalidSubcommand {
                subcommand_hint();
            }
            return ExitCode::from(code);
        }
    };
    match cli.command {
        Command::Filesystem(args) => filesystem(*args, hooks),
        Command::Journal(JournalCmd::List { dir, json }) => {
            crate::journal::revert::list(&dir, json)
        }
        Command::Journal(JournalCmd::Show { dir, session, json }) => {
            crate::journal::show::show(&dir, &session, json)
        }
        Command::Journal(JournalCmd::Revert {
            dir,
            session,
            to,
            force,
        }) => crate::journal::revert::revert(&dir, &session, to, force),
        Command::Audit(crate::cli::AuditCmd::Verify { file }) => crate::audit::chain::verify(&file),
    }
}

/// `tuls DIR...` (the reference server's shape) names no subcommand: when
/// its first word is a directory, say how to serve it.
fn subcommand_hint() {
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let Some(first) = args.first() else { return };
    let dir = crate::cli::expand_home(
        std::path::Path::new(first),
        std::env::var_os("HOME").as_deref(),
    );
    if dir.is_ok_and(|d| roots::open(&d).is_ok()) {
        crate::say!(
            "\ntuls: '{first}' is a directory; to serve it, name the server first:\n  tuls filesystem {}",
            args.join(" ")
        );
    }
}

/// Raises the soft open-file limit to the hard one: a walk holds one
/// directory handle per level, and concurrent deep walks could otherwise
/// hit a 1024 soft limit and come back with silently empty directories.
fn raise_fd_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut lim = getrlimit(Resource::Nofile);
    if lim.current < lim.maximum {
        lim.current = lim.maximum;
        let _ = setrlimit(Resource::Nofile, lim);
    }
}

/// Stops startup on a configuration error ([`StartupError::Config`]).
fn config_error(msg: impl std::fmt::Display) -> ExitCode {
    stop(&StartupError::Config(msg.to_string()))
}

/// Prints `e` as `tuls: error: <message>` and returns its exit status.
fn stop(e: &StartupError) -> ExitCode {
    crate::say!("tuls: error: {e}");
    ExitCode::from(e.exit_code())
}

/// Builds the path rules of each root from the flags, the built-in
/// protections and the rules file (read here, at startup, before Landlock),
/// and returns them as `--print-config` shows them. Any error stops startup
/// with exit status 2.
fn path_rules(
    args: &FsArgs,
    home: Option<&std::ffi::OsStr>,
    opened: &mut [roots::Root],
) -> Result<(serde_json::Value, crate::journal::rules::RuleSpec), String> {
    use crate::rules::config;
    let file = match &args.rules {
        Some(path) => {
            let path = crate::cli::expand_home(path, home)?;
            let bytes = roots::read_operator_file(&path, crate::limits::MAX_RULES_FILE_BYTES)
                .map_err(|e| format!("rules file: {e} (nothing was loaded)"))?;
            Some((path.display().to_string(), bytes))
        }
        None => None,
    };
    let spec = config::Spec {
        hide: args.hide.clone(),
        read_only: args.read_only_path.clone(),
        allow: args.allow_path.clone(),
        no_default: args.no_default_protection,
        file,
    };
    // --read-only-dir: each must exist and lie inside (or contain) a root.
    let mut dirs = Vec::new();
    for d in &args.read_only_dir {
        let d = crate::cli::expand_home(d, home)?;
        dirs.push((d.display().to_string(), roots::resolve_operator_dir(&d)?));
    }
    // The undo journal keeps the spec, so a revert builds the same rules.
    let kept = crate::journal::rules::RuleSpec::of(&spec, &dirs);
    Ok((apply_rules(&spec, &dirs, opened)?, kept))
}

/// Builds the path rules of `spec` and `dirs` (each `--read-only-dir` as
/// given and resolved) into each of `opened` (also for `tuls journal
/// revert`, from the spec a session recorded); returns them as
/// `--print-config` shows them.
pub(crate) fn apply_rules(
    spec: &crate::rules::config::Spec,
    dirs: &[(String, String)],
    opened: &mut [roots::Root],
) -> Result<serde_json::Value, String> {
    use crate::rules::{Effect, Matcher, Rules, config};
    let config::Built {
        rules,
        notes,
        warnings,
    } = config::build(spec)?;
    for n in &notes {
        tracing::info!("path rules: {n}");
    }
    for w in &warnings {
        tracing::warn!("path rules: {w}");
    }
    let mut used = vec![false; dirs.len()];
    let mut shown: Vec<serde_json::Value> = Vec::new();
    let describe = |r: &crate::rules::Rule| {
        let effect = match r.effect {
            Effect::Hidden => "hide",
            Effect::ReadOnly => "read-only",
            Effect::None => "exempt",
        };
        let method = match r.matcher {
            Matcher::Glob(_) => "glob",
            Matcher::Exact(_) => "exact",
            Matcher::Prefix(_) => "prefix",
            Matcher::Regex(_) => "regex",
            Matcher::Contains(_) => "contains",
            Matcher::All => "all",
        };
        serde_json::json!({"id": r.id, "source": r.source, "pattern": r.pattern,
            "match": method, "effect": effect})
    };
    shown.extend(rules.iter().map(describe));
    // Roots without a --read-only-dir of their own share one compiled set.
    let mut shared: Option<std::sync::Arc<Rules>> = None;
    let mut own: Vec<Vec<crate::rules::Rule>> = Vec::with_capacity(opened.len());
    for root in opened.iter_mut() {
        let mut mine = rules.clone();
        let real = root
            .resolved
            .clone()
            .unwrap_or_else(|| root.display.clone());
        for (i, (given, dir)) in dirs.iter().enumerate() {
            let rel = if let Some(rest) = beneath(dir, &real) {
                rest
            } else if beneath(&real, dir).is_some() {
                String::new()
            } else {
                continue;
            };
            used[i] = true;
            let rule = config::read_only_dir(given, &rel);
            let mut d = describe(&rule);
            d["root"] = serde_json::Value::String(root.display.clone());
            shown.push(d);
            mine.push(rule);
        }
        own.push(mine.clone());
        // git rules are a root's own (src/fs/gitdirs): with them, no sharing.
        root.rules = if mine.len() == rules.len() && spec.no_default {
            match &shared {
                Some(r) => r.clone(),
                None => shared
                    .insert(std::sync::Arc::new(Rules::new(mine)?))
                    .clone(),
            }
        } else {
            std::sync::Arc::new(Rules::new(mine)?)
        };
    }
    nest(opened, own)?;
    // git: what each root's repositories make git run or obey, read-only
    // with the built-in set (src/fs/gitdirs).
    if !spec.no_default {
        let allow: Vec<&str> = spec.allow.iter().map(String::as_str).collect();
        let obeyed = std::sync::Arc::new(Rules::new(rules.clone())?);
        for root in opened.iter() {
            shown.extend(crate::fs::gitdirs::install(
                root,
                &allow,
                Some(obeyed.clone()),
            ));
        }
    }
    if let Some(i) = used.iter().position(|u| !u) {
        return Err(format!(
            "--read-only-dir '{}' is not inside any allowed directory",
            dirs[i].0
        ));
    }
    Ok(serde_json::Value::Array(shown))
}

/// Nested operator directories (`tuls filesystem /r /r/sub`): each root's
/// rules also match a path against the rules of every other operator
/// directory that contains it or lies inside it (`own`: each root's own
/// rule list, in the order of `opened`), so a rule anchored at `/r/sub`
/// holds when the path is spelled through `/r`, and one anchored at `/r`
/// when it is spelled through `/r/sub`.
fn nest(opened: &mut [roots::Root], own: Vec<Vec<crate::rules::Rule>>) -> Result<(), String> {
    use crate::rules::{Relation, Rules};
    let real = |r: &roots::Root| r.resolved.clone().unwrap_or_else(|| r.display.clone());
    let reals: Vec<String> = opened.iter().map(real).collect();
    let sets: Vec<std::sync::Arc<Rules>> = opened.iter().map(|r| r.rules.clone()).collect();
    for (i, mine) in own.into_iter().enumerate() {
        let mut others = Vec::new();
        for (j, other) in reals.iter().enumerate() {
            if i == j {
                continue;
            }
            match (beneath(other, &reals[i]), beneath(&reals[i], other)) {
                (Some(rel), _) if !rel.is_empty() => {
                    others.push((sets[j].clone(), Relation::Inner(rel)));
                }
                (_, Some(rel)) if !rel.is_empty() => {
                    others.push((sets[j].clone(), Relation::Outer(rel)));
                }
                _ => {}
            }
        }
        if !others.is_empty()
            && let Some(root) = opened.get_mut(i)
        {
            root.rules = std::sync::Arc::new(Rules::new(mine)?.with_others(others));
        }
    }
    Ok(())
}

/// `path` relative to `base` when it is `base` or lies beneath it, by whole
/// components (both are absolute, resolved operator paths).
fn beneath(path: &str, base: &str) -> Option<String> {
    let p: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let b: Vec<&str> = base.split('/').filter(|s| !s.is_empty()).collect();
    (p.len() >= b.len() && p.iter().zip(&b).all(|(x, y)| x == y)).then(|| p[b.len()..].join("/"))
}

/// Runs `tuls filesystem`.
pub fn filesystem(args: FsArgs, hooks: Hooks) -> ExitCode {
    let mut logger = crate::log::init(args.log_level);
    // --read-only: the reference's spelling of --deny filesystem.write.
    let mut deny = args.deny.clone();
    if args.read_only {
        deny.push("filesystem.write".to_owned());
    }
    let policy = match Policy::from_selectors(&args.allow, &deny) {
        Ok(p) => p,
        Err(e) => return config_error(e),
    };
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
        let dir = match crate::cli::expand_home(dir, home.as_deref()) {
            Ok(dir) => dir,
            Err(e) => return config_error(e),
        };
        match roots::open(&dir) {
            Ok(root) => {
                if root.display == "/" {
                    tracing::warn!("'/' is an allowed directory: the whole filesystem is in scope");
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
                return config_error(match crate::cli::tilde_user_note(dir.as_path()) {
                    Some(note) => format!("{e}; {note}"),
                    None => e.to_string(),
                });
            }
        }
    }
    let (path_rules, rule_spec) = match path_rules(&args, home.as_deref(), &mut opened) {
        Ok(r) => r,
        Err(e) => return config_error(e),
    };
    // The audit log is opened before Landlock, outside every root.
    let audit = match (&args.audit, args.audit_fd) {
        (Some(p), _) => Some(crate::audit::Target::Path(p)),
        (None, Some(n)) => Some(crate::audit::Target::Fd(n)),
        (None, None) => None,
    };
    let audit = match audit.map(|t| crate::audit::open(&t, &opened)) {
        None => None,
        Some(Ok(a)) => Some(std::sync::Arc::new(a)),
        Some(Err(e)) => return config_error(e),
    };
    // The undo journal too: before Landlock, outside every root.
    let journal = match &args.journal {
        Some(dir) => {
            let session = match &audit {
                Some(a) => a.session().to_owned(),
                None => {
                    let mut id = [0u8; 16];
                    if let Err(e) = getrandom::fill(&mut id) {
                        return config_error(format!("no randomness for the session id: {e}"));
                    }
                    id.iter().map(|b| format!("{b:02x}")).collect()
                }
            };
            match crate::journal::open(dir, &opened, args.journal_max_bytes, session, rule_spec) {
                Ok(j) => Some(Arc::new(j)),
                Err(e) => return config_error(e),
            }
        }
        None => None,
    };
    // Asked once, here: `available_parallelism` reads `/proc/self/cgroup`
    // and `/sys/fs/cgroup`, which Landlock (and the one-ambient-site rule)
    // forbid later. tokio and the walk pool get the count explicitly.
    let threads = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
    let read_only = !policy.any_write();
    let landlock = if args.no_landlock {
        Status::Disabled
    } else {
        let refs: Vec<&roots::Root> = opened.iter().collect();
        match sandbox::restrict(&refs, read_only, journal.as_deref().map(|j| j.dir())) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "Landlock could not be applied; running without it");
                Status::Unavailable
            }
        }
    };
    sandbox::no_new_privs();

    let root_list: Vec<String> = opened
        .iter()
        .flat_map(|r| r.spellings().map(str::to_owned).collect::<Vec<_>>())
        .collect();
    if args.print_config {
        let config = serde_json::json!({
            "roots": root_list,
            "enabledTools": policy.enabled_tools(),
            "clientRoots": !args.no_client_roots,
            "limits": limits,
            "landlock": landlock.to_string(),
            "pathRules": path_rules,
            "journal": args.journal.as_ref().map(|d| serde_json::json!({
                "dir": d.display().to_string(),
                "maxBytes": args.journal_max_bytes,
            })),
        });
        // --print-config never starts a session, so stdout is not the MCP
        // transport here: it carries the configuration and the process exits.
        crate::out!(
            "{}",
            serde_json::to_string_pretty(&config).unwrap_or_default()
        );
        return ExitCode::SUCCESS;
    }
    crate::say!("tuls: roots: {}", root_list.join(", "));
    crate::say!("tuls: tools: {}", policy.enabled_tools().join(", "));
    crate::say!("tuls: landlock: {landlock}");
    let scope = Arc::new(Scope::new(opened, limits.max_path_bytes));
    if scope.openat2_missing() {
        crate::say!(
            "tuls: openat2: unavailable here (a kernel before 5.6, an emulator or a seccomp filter); \
             paths are resolved one component at a time with O_NOFOLLOW instead, with the same confinement"
        );
    }
    if std::io::stdin().is_terminal() {
        crate::say!(
            "tuls: this is an MCP server speaking JSON-RPC on stdin/stdout; it is waiting for a client.\n\
             tuls: connect one instead of typing, e.g. `claude mcp add tuls -- tuls filesystem DIR`, or\n\
             tuls: `npx -y @modelcontextprotocol/inspector@0.15.0 tuls filesystem DIR`. Press Ctrl-D to quit."
        );
    }
    let records = (audit, journal);
    let server = match Server::new(
        scope,
        policy,
        limits,
        !args.no_client_roots,
        records,
        threads,
    ) {
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
