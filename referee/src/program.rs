//! The real programs that obey the files an agent may write (`git commit`,
//! `git status`, a login shell), run after a vector's calls with a clean
//! environment, and the marker that tells whether the agent's code ran.
//!
//! May touch: the scratch tree only (programs run in the root, `HOME` is
//! `{base}/home` unless a vector sets it); no user or system git config is
//! read (`GIT_CONFIG_NOSYSTEM=1`, `GIT_CONFIG_GLOBAL=/dev/null`).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::tree::Sandbox;

/// A program with nothing of the caller's environment: a fixed `PATH`, an
/// empty `HOME` beside the root, no system or global git config, and a git
/// identity so that `git commit` needs no config.
pub fn clean_command(program: &str, base: &Path) -> Command {
    let home = base.join("home");
    let _ = std::fs::create_dir_all(&home);
    let mut c = Command::new(program);
    c.env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", &home)
        .env("LANG", "C")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "referee")
        .env("GIT_AUTHOR_EMAIL", "referee@example.invalid")
        .env("GIT_COMMITTER_NAME", "referee")
        .env("GIT_COMMITTER_EMAIL", "referee@example.invalid")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// Runs a vector's `run` entries (`{"argv": [...], "cwd": "rel", "env":
/// {"K": "v" | null}}`) in order, each killed after 10 s. Returns one note
/// per program (its exit status, or why it did not run).
pub fn run_all(runs: &[Value], sb: &Sandbox) -> Vec<String> {
    let mut notes = Vec::new();
    for r in runs {
        let argv: Vec<String> = r["argv"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str())
                    .map(|x| sb.subst(x))
                    .collect()
            })
            .unwrap_or_default();
        let Some((prog, args)) = argv.split_first() else {
            continue;
        };
        let mut c = clean_command(prog, &sb.base);
        c.args(args)
            .current_dir(sb.root.join(sb.subst(r["cwd"].as_str().unwrap_or("."))));
        if let Some(env) = r["env"].as_object() {
            for (k, v) in env {
                match v.as_str() {
                    Some(v) => c.env(k, sb.subst(v)),
                    None => c.env_remove(k),
                };
            }
        }
        let shown = argv.join(" ");
        match c.spawn() {
            Err(e) => notes.push(format!("{shown}: did not start: {e}")),
            Ok(mut child) => {
                let until = Instant::now() + Duration::from_secs(10);
                let status = loop {
                    match child.try_wait() {
                        Ok(Some(s)) => break Some(s),
                        Ok(None) if Instant::now() < until => {
                            std::thread::sleep(Duration::from_millis(10))
                        }
                        _ => {
                            let _ = child.kill();
                            let _ = child.wait();
                            break None;
                        }
                    }
                };
                notes.push(match status {
                    Some(s) => format!("{shown}: {s}"),
                    None => format!("{shown}: killed after 10 s"),
                });
            }
        }
    }
    notes
}

/// Whether the agent's code ran: the marker file exists.
pub fn code_ran(sb: &Sandbox) -> bool {
    std::fs::symlink_metadata(&sb.marker).is_ok()
}
