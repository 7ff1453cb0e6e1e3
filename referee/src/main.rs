//! tuls-referee: scores any stdio MCP filesystem server against the escape
//! vector corpus (corpus/escape/), and fuzzes whole sessions through a real
//! server binary. See docs/escape-testing.md.
//!
//! ```text
//! tuls-referee [--json OUT] [--markdown OUT] [--corpus DIR] [--deadline SECS]
//!              [--only ID,..] [--strict] [--jobs N] -- SERVER ARGS...   ({root} = the scratch root)
//! tuls-referee validate [--corpus DIR]
//! tuls-referee fuzz [--seconds N] [--seed S] [--replay FILE] ... -- SERVER ARGS...
//! ```
//!
//! Exit status: 0 no escape, 1 escapes (with `--strict`: also hangs, crashes
//! and wrong refusals), 2 harness error.

use tuls_referee::policy::Profile;
use tuls_referee::{corpus, corpus_version, default_corpus, fuzz, score};

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const USAGE: &str =
    "usage: tuls-referee [--json OUT] [--markdown OUT] [--corpus DIR] [--deadline SECS] \
[--only ID,..] [--pack NAME,..] [--policy tuls|reference-2.3|naive|none] [--known-failures ID,..] \
[--strict] [--jobs N] -- SERVER ARGS...   ({root} in ARGS is replaced by the scratch root)
       tuls-referee validate [--corpus DIR]
       tuls-referee fuzz --help";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("fuzz") => fuzz::main(&args[1..]),
        Some("validate") => validate(&args[1..]),
        Some("-h" | "--help") => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => score_main(&args),
    }
}

fn validate(args: &[String]) -> ExitCode {
    let mut dir = default_corpus();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--corpus" => dir = it.next().map(PathBuf::from).unwrap_or(dir),
            _ => {
                eprintln!("{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    match corpus::load(&dir) {
        Ok(v) => {
            let mut by: std::collections::BTreeMap<&str, usize> = Default::default();
            for x in &v {
                *by.entry(x.class()).or_default() += 1;
            }
            println!(
                "corpus {} ({}): {} vectors {by:?}",
                dir.display(),
                corpus_version(&dir),
                v.len()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("tuls-referee: {e}");
            ExitCode::from(2)
        }
    }
}

fn score_main(args: &[String]) -> ExitCode {
    let mut json_out = None;
    let mut md_out = None;
    let mut dir = default_corpus();
    let mut deadline = Duration::from_secs(10);
    let mut only: Option<Vec<String>> = None;
    let mut strict = false;
    let mut jobs = 1usize;
    let mut packs: Option<Vec<String>> = None;
    let mut profile = Profile::None;
    let mut known: Vec<String> = Vec::new();
    let mut server = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => json_out = it.next().cloned(),
            "--markdown" => md_out = it.next().cloned(),
            "--corpus" => dir = it.next().map(PathBuf::from).unwrap_or(dir),
            "--deadline" => {
                deadline = it
                    .next()
                    .and_then(|s| s.parse::<f64>().ok())
                    .map(Duration::from_secs_f64)
                    .unwrap_or(deadline)
            }
            "--only" => only = it.next().map(|s| s.split(',').map(String::from).collect()),
            "--strict" => strict = true,
            "--pack" => packs = it.next().map(|s| s.split(',').map(String::from).collect()),
            "--known-failures" => known.extend(
                it.next()
                    .into_iter()
                    .flat_map(|s| s.split(',').map(String::from)),
            ),
            "--policy" => match it.next().and_then(|s| Profile::parse(s)) {
                Some(p) => profile = p,
                None => {
                    eprintln!("tuls-referee: --policy takes tuls, reference-2.3, naive or none");
                    return ExitCode::from(2);
                }
            },
            "--jobs" => jobs = it.next().and_then(|s| s.parse().ok()).unwrap_or(1),
            "--" => {
                server = it.by_ref().cloned().collect();
            }
            _ => {
                eprintln!("tuls-referee: unknown argument {a:?}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    if server.is_empty() {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    let server = tuls_referee::absolute_args(server);
    let vectors = match corpus::load(&dir) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("tuls-referee: {e}");
            return ExitCode::from(2);
        }
    };
    let version = corpus_version(&dir);
    let opts = corpus::RunOpts {
        server: server.clone(),
        deadline,
        tmp: std::env::temp_dir(),
        // SAFETY: geteuid has no preconditions.
        is_root_user: unsafe { libc::geteuid() } == 0,
        profile,
    };
    let chosen: Vec<&corpus::Vector> = vectors
        .iter()
        .filter(|v| only.as_ref().is_none_or(|o| o.iter().any(|x| x == v.id())))
        .filter(|v| {
            packs
                .as_ref()
                .is_none_or(|p| p.iter().any(|x| x == v.pack()))
        })
        .collect();
    // `--jobs N`: N vectors at a time, each with its own tree and server.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(v) = chosen.get(i) else { break };
                    let o = corpus::run(v, &opts);
                    eprintln!("{:<50} {}", o.id, score::verdict(&o));
                    results
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((i, o));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.sort_by_key(|(i, _)| *i);
    let outcomes: Vec<corpus::Outcome> = results.into_iter().map(|(_, o)| o).collect();
    let card = score::Card {
        server: &server,
        corpus_version: &version,
        policy: profile.name(),
        outcomes: &outcomes,
        known: &known,
    };
    let md = card.markdown();
    println!("{md}");
    if let Some(p) = md_out
        && let Err(e) = std::fs::write(&p, &md)
    {
        eprintln!("tuls-referee: {p}: {e}");
        return ExitCode::from(2);
    }
    if let Some(p) = json_out {
        let text = serde_json::to_string_pretty(&card.json()).unwrap_or_default();
        if let Err(e) = std::fs::write(&p, text + "\n") {
            eprintln!("tuls-referee: {p}: {e}");
            return ExitCode::from(2);
        }
    }
    let s = card.summary();
    let n = |k: &str| s[k].as_u64().unwrap_or(0);
    if n("harness_errors") > 0 {
        return ExitCode::from(2);
    }
    let strict_fail = strict && card.strict_failures() > 0;
    for k in &known {
        if let Some(o) = outcomes.iter().find(|o| &o.id == k)
            && score::passed(o)
        {
            eprintln!("tuls-referee: known failure {k} now passes: take it off --known-failures");
        }
    }
    if card.escapes() > 0 || strict_fail {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
