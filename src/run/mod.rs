//! Startup: parse, open the roots, confine, then serve.
//!
//! Owns: the order of startup, which is a security property: roots are
//! opened, then Landlock is applied on the main thread, and only then is the
//! tokio runtime (and every thread) started. Exit status 2 for usage and
//! configuration errors, 1 for runtime errors.
//! May touch: stdin/stdout/stderr.

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command, FsArgs, JournalCmd};
use crate::error::StartupError;
use crate::fs::roots;
pub use crate::mcp::stdio::Hooks;

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

mod config;
mod rules;

pub(crate) use rules::apply_rules;

/// Runs `tuls filesystem`: its configuration from the flags (exit status 2
/// on an error), Landlock, then `--print-config` or the session.
pub fn filesystem(args: FsArgs, hooks: Hooks) -> ExitCode {
    let logger = crate::log::init(args.log_level);
    let config = match config::Config::from_args(&args) {
        Ok(c) => c,
        Err(e) => return config_error(e),
    };
    let landlock = config.confine(args.no_landlock);
    if args.print_config {
        config.print(&landlock);
        return ExitCode::SUCCESS;
    }
    config.serve(&landlock, hooks, logger)
}
