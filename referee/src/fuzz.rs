//! `tuls-referee fuzz`: random whole sessions through a real server binary,
//! judged from ground truth. A failing session is shrunk (actions removed
//! while the same oracle still fails) and saved as JSON, replayable with
//! `tuls-referee fuzz --replay FILE -- SERVER ARGS...`.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::policy::Profile;
use crate::rng::Rng;
use crate::rpc::{Era, Server, id_key};
use crate::session;
use crate::tree::{Sandbox, diff};

const HELP: &str =
    "usage: tuls-referee fuzz [options] -- SERVER ARGS...   ({root} = the scratch root)
  --seconds N          run new sessions for N seconds (default 60)
  --sessions N         or stop after N sessions
  --seed S             first seed (default: from the clock); session i uses seed S+i
  --replay FILE        run one saved session (a shrunk failure) and judge it
  --max-actions N      actions per session (default 40)
  --deadline SECS      every request answered within this after the last send (default 20)
  --max-rss-mb N       VmHWM bound for the server (default: none)
  --max-fds N          open descriptors bound for the server (default 256)
  --out DIR            where failing sessions are saved (default fuzz-failures)
  --shrink-runs N      replays spent shrinking one failure (default 30)
  --json FILE          write the run's figures as JSON
  --stop-on-failure    stop at the first failure (default: go on; each new
                       kind of failure is shrunk and saved once, later ones counted)
  --tolerate KIND,..   report and save failures of these oracles (e.g. unanswered)
                       without failing the run (exit 0) or stopping it
  --policy PROFILE     how the server takes the sessions' rules: tuls (its default
                       protections, --hide), naive, reference-2.3 or none (default:
                       none; the rule oracles then stay off)
  --avoid first-notification
                       send no notification before the session is initialized
                       (known finding F1; lets CI gate on everything else)
Exit status: 0 no failure, 1 a failure (saved and shrunk), 2 harness error.";

struct Opts {
    server: Vec<String>,
    deadline: Duration,
    max_rss_kb: Option<u64>,
    max_fds: usize,
    profile: Profile,
}

/// What one session did, and the first oracle that failed.
#[derive(Default, Debug)]
struct Run {
    failure: Option<(String, String)>,
    requests: usize,
    replies: usize,
    hwm_kb: u64,
    max_fds: usize,
    harness: Option<String>,
    stderr_tail: String,
}

pub fn main(args: &[String]) -> ExitCode {
    let mut seconds = 60u64;
    let mut sessions = u64::MAX;
    let mut seed = crate::tree::entropy() & 0xffff_ffff;
    let mut replay = None;
    let mut max_actions = 40usize;
    let mut out_dir = PathBuf::from("fuzz-failures");
    let mut shrink_runs = 30usize;
    let mut json_out = None;
    let mut stop_on_failure = false;
    let mut avoid_first_notification = false;
    let mut tolerate: Vec<String> = Vec::new();
    let mut opts = Opts {
        server: Vec::new(),
        deadline: Duration::from_secs(20),
        max_rss_kb: None,
        max_fds: 256,
        profile: Profile::None,
    };
    let mut it = args.iter();
    let num = |s: Option<&String>| s.and_then(|s| s.parse::<u64>().ok());
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => seconds = num(it.next()).unwrap_or(seconds),
            "--sessions" => sessions = num(it.next()).unwrap_or(sessions),
            "--seed" => seed = num(it.next()).unwrap_or(seed),
            "--replay" => replay = it.next().cloned(),
            "--max-actions" => max_actions = num(it.next()).unwrap_or(40) as usize,
            "--deadline" => opts.deadline = Duration::from_secs(num(it.next()).unwrap_or(20)),
            "--max-rss-mb" => opts.max_rss_kb = num(it.next()).map(|m| m * 1024),
            "--max-fds" => opts.max_fds = num(it.next()).unwrap_or(256) as usize,
            "--out" => out_dir = it.next().map(PathBuf::from).unwrap_or(out_dir),
            "--shrink-runs" => shrink_runs = num(it.next()).unwrap_or(30) as usize,
            "--json" => json_out = it.next().cloned(),
            "--stop-on-failure" => stop_on_failure = true,
            "--policy" => match it.next().and_then(|p| Profile::parse(p)) {
                Some(p) => opts.profile = p,
                None => {
                    eprintln!(
                        "tuls-referee fuzz: --policy takes tuls, naive, reference-2.3 or none"
                    );
                    return ExitCode::from(2);
                }
            },
            "--tolerate" => tolerate.extend(
                it.next()
                    .map(|k| k.split(',').map(String::from).collect::<Vec<_>>())
                    .unwrap_or_default(),
            ),
            "--avoid" => match it.next().map(String::as_str) {
                Some("first-notification") => avoid_first_notification = true,
                other => {
                    eprintln!("tuls-referee fuzz: --avoid takes first-notification, not {other:?}");
                    return ExitCode::from(2);
                }
            },
            "--" => opts.server = it.by_ref().cloned().collect(),
            "-h" | "--help" => {
                println!("{HELP}");
                return ExitCode::SUCCESS;
            }
            _ => {
                eprintln!("tuls-referee fuzz: unknown argument {a:?}\n{HELP}");
                return ExitCode::from(2);
            }
        }
    }
    if opts.server.is_empty() {
        eprintln!("{HELP}");
        return ExitCode::from(2);
    }
    opts.server = crate::absolute_args(std::mem::take(&mut opts.server));
    if let Some(file) = replay {
        let s = match fs::read_to_string(&file)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str::<Value>(&t).map_err(|e| e.to_string()))
        {
            Ok(s) => s,
            Err(e) => {
                eprintln!("tuls-referee fuzz: {file}: {e}");
                return ExitCode::from(2);
            }
        };
        let r = run_session(&s, &opts);
        println!(
            "replay {file}: {} requests, {} replies, VmHWM {} KiB, max fds {}",
            r.requests, r.replies, r.hwm_kb, r.max_fds
        );
        if !r.stderr_tail.is_empty() {
            println!("server stderr (end): {}", r.stderr_tail);
        }
        return match (&r.harness, &r.failure) {
            (Some(h), _) => {
                eprintln!("harness error: {h}");
                ExitCode::from(2)
            }
            (_, Some((kind, detail))) => {
                println!("FAIL [{kind}] {detail}");
                ExitCode::from(1)
            }
            _ => {
                println!("pass");
                ExitCode::SUCCESS
            }
        };
    }
    let tools = match probe_tools(&opts) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("tuls-referee fuzz: {e}");
            return ExitCode::from(2);
        }
    };
    let start = Instant::now();
    let (mut n, mut requests, mut replies, mut hwm, mut fds) = (0u64, 0usize, 0usize, 0u64, 0usize);
    let mut failed = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut harness = 0;
    while n < sessions && start.elapsed() < Duration::from_secs(seconds) {
        let s = session::generate(seed + n, &tools, max_actions, avoid_first_notification);
        let r = run_session(&s, &opts);
        n += 1;
        requests += r.requests;
        replies += r.replies;
        hwm = hwm.max(r.hwm_kb);
        fds = fds.max(r.max_fds);
        if let Some(h) = &r.harness {
            harness += 1;
            eprintln!("seed {}: harness error: {h}", seed + n - 1);
            if harness > 3 {
                break;
            }
        }
        if let Some((kind, detail)) = r.failure {
            let this = seed + n - 1;
            // One signature per kind of failure and way of opening the session:
            // the first is shrunk and saved, later ones only counted.
            let first = s["actions"][0]
                .as_object()
                .and_then(|o| o.keys().next().cloned())
                .unwrap_or_default();
            let sig = format!("{kind}/{}/{first}", s["skip_initialize"]);
            let count = seen.entry(sig.clone()).or_insert(0usize);
            *count += 1;
            if *count == 1 {
                eprintln!("seed {this}: FAIL [{kind}] {detail}");
                let small = shrink(&s, &kind, &opts, shrink_runs, avoid_first_notification);
                let _ = fs::create_dir_all(&out_dir);
                let file = out_dir.join(format!("session-{this}.json"));
                let _ = fs::write(
                    &file,
                    serde_json::to_string_pretty(&small).unwrap_or_default(),
                );
                eprintln!(
                    "  shrunk to {} actions: {}\n  replay: tuls-referee fuzz --policy {} --replay {} -- {}",
                    small["actions"].as_array().map_or(0, |a| a.len()),
                    file.display(),
                    opts.profile.name(),
                    file.display(),
                    opts.server.join(" ")
                );
                failed.push(json!({"seed": this, "kind": kind, "signature": sig, "detail": detail, "file": file}));
            }
            if stop_on_failure && !tolerate.contains(&kind) {
                break;
            }
        }
        if n % 20 == 0 {
            eprintln!(
                "fuzz: {n} sessions, {requests} requests, {:.0}s",
                start.elapsed().as_secs_f64()
            );
        }
    }
    let summary = json!({
        "sessions": n, "first_seed": seed, "requests": requests, "replies": replies,
        "seconds": start.elapsed().as_secs(), "max_vm_hwm_kib": hwm, "max_fds": fds,
        "failures": failed, "failing_sessions_by_signature": seen, "harness_errors": harness, "server": opts.server,
    });
    println!(
        "fuzz: {n} sessions (seeds {seed}..{}), {requests} requests, {replies} replies, {}s, max VmHWM {} KiB, max fds {fds}, {} failures",
        seed + n,
        start.elapsed().as_secs(),
        hwm,
        failed.len()
    );
    if let Some(p) = json_out {
        let _ = fs::write(
            p,
            serde_json::to_string_pretty(&summary).unwrap_or_default(),
        );
    }
    let gating = failed
        .iter()
        .filter(|f| !tolerate.iter().any(|t| f["kind"] == t.as_str()))
        .count();
    if gating > 0 {
        ExitCode::from(1)
    } else if harness > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// For the libFuzzer `session` target: the server's tools, probed once.
pub fn probe(server: &[String]) -> Result<Vec<Value>, String> {
    probe_tools(&Opts {
        server: server.to_vec(),
        deadline: Duration::from_secs(20),
        max_rss_kb: None,
        max_fds: 256,
        profile: Profile::None,
    })
}

/// For the libFuzzer `session` target: generates the session of `seed` and
/// judges it; on a failure, the error names the oracle and the command that
/// replays the session (saved under `out`).
pub fn check_seed(
    seed: u64,
    tools: &[Value],
    server: &[String],
    deadline: Duration,
    out: &Path,
) -> Result<(), String> {
    // The libFuzzer target runs tuls: its rules are tuls's flags.
    let opts = Opts {
        server: server.to_vec(),
        deadline,
        max_rss_kb: None,
        max_fds: 256,
        profile: Profile::Tuls,
    };
    // Finding F1 (docs/escape-testing.md) is avoided until it is fixed, as
    // in CI's `tuls-referee fuzz` step.
    let s = session::generate(seed, tools, 20, true);
    let r = run_session(&s, &opts);
    match r.failure {
        None => Ok(()),
        Some((kind, detail)) => {
            let _ = fs::create_dir_all(out);
            let file = out.join(format!("session-{seed}.json"));
            let _ = fs::write(&file, serde_json::to_string_pretty(&s).unwrap_or_default());
            Err(format!(
                "[{kind}] {detail}\nreplay: tuls-referee fuzz --policy tuls --replay {} -- {}",
                file.display(),
                server.join(" ")
            ))
        }
    }
}

/// The server's tools and schemas (one short session), so that arguments
/// are drawn from what it declares.
fn probe_tools(opts: &Opts) -> Result<Vec<Value>, String> {
    let sb = Sandbox::new(&std::env::temp_dir())?;
    let argv: Vec<String> = opts.server.iter().map(|a| sb.subst(a)).collect();
    let mut srv = Server::spawn(
        &argv,
        &sb.base.join("cwd"),
        Era::Handshake("2025-06-18".into()),
    )?;
    let res = srv.handshake(Duration::from_secs(20)).and_then(|_| {
        srv.request("tools/list", json!({}), Duration::from_secs(20))
            .map_err(|e| format!("tools/list: {e:?}"))
    });
    srv.kill();
    sb.remove();
    let r = res?;
    r["result"]["tools"]
        .as_array()
        .cloned()
        .ok_or_else(|| format!("tools/list failed: {r}"))
}

/// Shrinks a failing session: drops chunks of actions (then the tree's
/// extra entries) while the same kind of failure still shows.
fn shrink(s: &Value, kind: &str, opts: &Opts, budget: usize, avoid: bool) -> Value {
    let mut best = s.clone();
    let mut runs = 0;
    for field in ["actions", "tree"] {
        let mut chunk = best[field].as_array().map_or(0, |a| a.len()) / 2;
        while chunk >= 1 && runs < budget {
            let len = best[field].as_array().map_or(0, |a| a.len());
            let mut i = if field == "tree" { 2 } else { 0 }; // keep a.txt and sub/b.txt
            let mut progressed = false;
            while i < len && runs < budget {
                let mut cand = best.clone();
                if let Some(a) = cand[field].as_array_mut() {
                    let end = (i + chunk).min(a.len());
                    if i >= end {
                        break;
                    }
                    a.drain(i..end);
                }
                if avoid {
                    session::avoid_known(&mut cand);
                }
                runs += 1;
                let r = run_session(&cand, opts);
                if r.failure.as_ref().is_some_and(|(k, _)| k == kind) {
                    best = cand;
                    progressed = true;
                } else {
                    i += chunk;
                }
            }
            if !progressed {
                chunk /= 2;
            }
        }
    }
    best["mutate"] = best["mutate"].clone();
    best
}

fn proc_status_kb(pid: u32, key: &str) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

fn fd_count(pid: u32) -> usize {
    fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Runs one session and judges it.
fn run_session(s: &Value, opts: &Opts) -> Run {
    let mut run = Run::default();
    let mut sb = match Sandbox::new(&std::env::temp_dir()) {
        Ok(sb) => sb,
        Err(e) => {
            run.harness = Some(e);
            return run;
        }
    };
    session_in(s, opts, &mut sb, &mut run);
    sb.remove();
    run
}

fn fail(run: &mut Run, kind: &str, detail: String) {
    if run.failure.is_none() {
        run.failure = Some((kind.to_string(), detail));
    }
}

fn session_in(s: &Value, opts: &Opts, sb: &mut Sandbox, run: &mut Run) {
    if let Err(e) = sb.plant_default_outside() {
        run.harness = Some(e);
        return;
    }
    let empty = vec![];
    let root = sb.root.clone();
    if let Err(e) = sb.build(s["tree"].as_array().unwrap_or(&empty), &root, false) {
        // A layout this machine cannot make (e.g. no room for a sparse file) is skipped.
        let _ = e;
    }
    let before = sb.snapshot_outside();
    let era = match s["era"].as_str().unwrap_or("2025-06-18") {
        crate::rpc::MODERN => Era::Stateless,
        v => Era::Handshake(v.to_string()),
    };
    let mut argv: Vec<String> = opts.server.iter().map(|a| sb.subst(a)).collect();
    // The session's rules, on the command line; a server that cannot take
    // them runs without, and the rule oracles stay off.
    let policy = &s["policy"];
    let (protect_on, hide_on) = match opts.profile.flags(policy, &sb.root) {
        Ok(f) => {
            argv.extend(f);
            (
                policy.get("protect_control_files").is_some(),
                policy.get("hide").is_some(),
            )
        }
        Err(_) => (false, false),
    };
    let protected: Vec<String> = session::PROTECTED.iter().map(|p| p.to_string()).collect();
    let protected_before = crate::tree::snapshot_paths(&sb.root, &protected);
    let mut hidden_forms = vec![sb.secret.clone()];
    for e in s["tree"].as_array().unwrap_or(&empty) {
        if let Some(c) = e["content"].as_str().filter(|c| c.contains("{secret}")) {
            hidden_forms.push(crate::tree::base64(sb.subst(c).as_bytes()));
        }
    }
    let mut srv = match Server::spawn(&argv, &sb.base.join("cwd"), era.clone()) {
        Ok(s) => s,
        Err(e) => {
            run.harness = Some(e);
            return;
        }
    };
    if let Some(r) = s["client_roots"].as_array() {
        srv.roots = Some(
            r.iter()
                .filter_map(|u| u.as_str())
                .map(|u| sb.subst(u))
                .collect(),
        );
    }
    let pid = srv.pid();
    if era != Era::Stateless
        && !s["skip_initialize"].as_bool().unwrap_or(false)
        && let Err(e) = srv.handshake(Duration::from_secs(20))
    {
        fail(run, "handshake", e);
        return;
    }
    // The mutator: a second thread changing the tree during the session.
    let stop = Arc::new(AtomicBool::new(false));
    let moved_out: Arc<Mutex<BTreeMap<String, String>>> = Arc::default();
    let mutator = s["mutate"].as_bool().unwrap_or(false).then(|| {
        let (stop, moved, base, root) = (
            stop.clone(),
            moved_out.clone(),
            sb.base.clone(),
            sb.root.clone(),
        );
        let seed = s["seed"].as_u64().unwrap_or(0) ^ 0x5eed;
        thread::spawn(move || mutate(seed, &base, &root, &stop, &moved))
    });
    // Sends; every request id counted.
    let mut expected: HashMap<String, (usize, bool)> = HashMap::new(); // id -> (sends, at most)
    let mut cancelled: Vec<String> = Vec::new();
    let mut max_fds = 0;
    for a in s["actions"].as_array().unwrap_or(&empty) {
        if let Some(call) = a.get("call") {
            let mut params =
                json!({"name": call["name"], "arguments": sb.subst_value(&call["arguments"])});
            if let Some(p) = a.get("progress") {
                params["_meta"] = json!({"progressToken": p});
            }
            let id = &a["id"];
            srv.send_request(id, "tools/call", params);
            // A reused id: every send is answered, the ones sent while an
            // earlier one is in flight by a refusal (tuls's one request per
            // id; F6).
            expected.entry(id_key(id)).or_insert((0, false)).0 += 1;
            run.requests += 1;
        } else if let Some(id) = a.get("cancel") {
            srv.send(
                &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": srv.with_meta(json!({"requestId": id, "reason": "fuzz"}))}),
            );
            cancelled.push(id_key(id));
        } else if let Some(line) = a["line"].as_str() {
            let mut b = line.as_bytes().to_vec();
            b.push(b'\n');
            srv.send_raw(b);
        } else if let Some(n) = a["oversized"].as_u64() {
            let id = &a["id"];
            let pad = "x".repeat(n as usize);
            srv.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": srv.with_meta(json!({"name": "write_file", "arguments": {"path": "big.txt", "content": pad}}))}));
            expected.entry(id_key(id)).or_insert((1, true));
            run.requests += 1;
        } else if let Some(m) = a["notify"].as_str() {
            srv.send(&json!({"jsonrpc": "2.0", "method": m, "params": srv.with_meta(json!({}))}));
        } else if let Some(ms) = a["pause_reading_ms"].as_u64() {
            srv.pause_reading(true);
            thread::sleep(Duration::from_millis(ms));
            srv.pause_reading(false);
        } else if let Some(ms) = a["sleep_ms"].as_u64() {
            thread::sleep(Duration::from_millis(ms));
        } else if a.get("wait").is_some() {
            let until = Instant::now() + opts.deadline;
            while !all_answered(&srv, &expected, &cancelled) && srv.pump(until).is_none() {}
        }
        srv.drain();
        max_fds = max_fds.max(fd_count(pid));
    }
    // Every request answered within the deadline after the last send.
    let until = Instant::now() + opts.deadline;
    while !all_answered(&srv, &expected, &cancelled) {
        max_fds = max_fds.max(fd_count(pid));
        if srv.pump(until).is_some() {
            break;
        }
    }
    srv.drain();
    run.hwm_kb = proc_status_kb(pid, "VmHWM:");
    run.max_fds = max_fds;
    stop.store(true, Ordering::Relaxed);
    if let Some(m) = mutator {
        let _ = m.join();
    }
    let crashed_early = srv.exited();
    let status = srv.finish(Duration::from_secs(10));
    srv.drain();
    run.replies = srv.reply_counts.values().sum();

    // Oracles.
    for line in &srv.lines {
        if line.contains(&sb.canary) || sb.encoded.iter().any(|e| line.contains(e.as_str())) {
            fail(
                run,
                "canary",
                format!("an outside file's content in a reply: {}", clip(line)),
            );
        }
        if line.contains(&sb.canary_name) {
            fail(
                run,
                "outside-name",
                format!("an outside name in a reply: {}", clip(line)),
            );
        }
        if hide_on && hidden_forms.iter().any(|h| line.contains(h.as_str())) {
            fail(
                run,
                "secret-read",
                format!("a hidden file's content in a reply: {}", clip(line)),
            );
        }
    }
    if protect_on {
        let changed = diff(
            &protected_before,
            &crate::tree::snapshot_paths(&sb.root, &protected),
        );
        if !changed.is_empty() {
            // A change only to a file that also has a hard link in the tree
            // (`envrc-notes.txt`) is its own kind: writes through one name
            // must not change another (tuls issue 30 item 8).
            let through_link = changed
                .iter()
                .all(|c| c.contains(" .envrc:") || c.ends_with(" .envrc"));
            let kind = if through_link {
                "protected-changed-hardlink"
            } else {
                "protected-changed"
            };
            fail(run, kind, changed.join("; "));
        }
    }
    let after = sb.snapshot_outside();
    let moved = moved_out.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut want = before.clone();
    want.extend(moved);
    let changes: Vec<String> = diff(&want, &after)
        .into_iter()
        .filter(|c| !c.starts_with("created gone-") && !c.starts_with("removed gone-"))
        .collect();
    if !changes.is_empty() {
        fail(run, "outside-changed", changes.join("; "));
    }
    let mut missing: Vec<&String> = expected
        .iter()
        .filter(|(id, (sends, at_most))| {
            !*at_most
                && !cancelled.contains(*id)
                && srv.reply_counts.get(*id).copied().unwrap_or(0) < *sends
        })
        .map(|(id, _)| id)
        .collect();
    missing.sort();
    if !missing.is_empty() {
        fail(
            run,
            "unanswered",
            format!(
                "ids {missing:?}: no reply within {:?} of the last send",
                opts.deadline
            ),
        );
    }
    for (id, (sends, at_most)) in &expected {
        let got = srv.reply_counts.get(id).copied().unwrap_or(0);
        let cancel = cancelled.contains(id);
        if got > *sends {
            fail(
                run,
                "extra-reply",
                format!("id {id}: {got} replies to {sends} requests"),
            );
        } else if got < *sends && !cancel && !*at_most {
            fail(
                run,
                "unanswered",
                format!(
                    "id {id}: no reply within {:?} of the last send",
                    opts.deadline
                ),
            );
        }
    }
    for id in srv.reply_counts.keys() {
        if id != "null"
            && !expected.contains_key(id)
            && !srv_sent_internal(id)
            && !NOISE_IDS.contains(&id.as_str())
        {
            fail(
                run,
                "unknown-id",
                format!("a reply to id {id}, which was never sent"),
            );
        }
    }
    let err = srv.stderr_text();
    run.stderr_tail = crate::corpus::tail(&err);
    if let Some(i) = err
        .find("panicked at")
        .or_else(|| err.find("ERROR: AddressSanitizer"))
    {
        fail(run, "panic", clip(&err[i..]));
    }
    if crashed_early.is_some() {
        fail(
            run,
            "crash",
            format!(
                "exited before the end of input: {crashed_early:?}; {}",
                crate::corpus::tail(&err)
            ),
        );
    } else if let Some(st) = status {
        if !st.success() {
            fail(
                run,
                "crash",
                format!(
                    "exit status {st:?} at end of input; {}",
                    crate::corpus::tail(&err)
                ),
            );
        }
    } else {
        fail(
            run,
            "no-exit",
            "still running 10 s after its input closed".into(),
        );
    }
    if let Some(limit) = opts.max_rss_kb
        && run.hwm_kb > limit
    {
        fail(
            run,
            "rss",
            format!("VmHWM {} KiB > {} KiB", run.hwm_kb, limit),
        );
    }
    if max_fds > opts.max_fds {
        fail(
            run,
            "fds",
            format!("{max_fds} open descriptors > {}", opts.max_fds),
        );
    }
}

/// Ids the noise lines carry (answered or not, as the server likes).
const NOISE_IDS: [&str; 4] = ["90005", "90077", "90078", "90079"];

/// Ids the client itself used (initialize, tools/list): 1001 and up.
fn srv_sent_internal(id: &str) -> bool {
    id.parse::<u64>().is_ok_and(|n| n > 1000 && n < 1100)
}

fn all_answered(
    srv: &Server,
    expected: &HashMap<String, (usize, bool)>,
    cancelled: &[String],
) -> bool {
    expected.iter().all(|(id, (sends, at_most))| {
        *at_most
            || cancelled.contains(id)
            || srv.reply_counts.get(id).copied().unwrap_or(0) >= *sends
    })
}

fn clip(s: &str) -> String {
    s.chars().take(300).collect()
}

/// Swaps directories for symlinks out and back, renames directories out of
/// the root for good (recording what they held), replaces files with
/// symlinks to outside files, rewrites files.
fn mutate(
    seed: u64,
    base: &Path,
    root: &Path,
    stop: &AtomicBool,
    moved: &Mutex<BTreeMap<String, String>>,
) {
    let mut rng = Rng::new(seed);
    let mut gone = 0;
    while !stop.load(Ordering::Relaxed) {
        let entries: Vec<PathBuf> = walk(root, 3);
        if entries.is_empty() {
            break;
        }
        let p = rng.pick(&entries).clone();
        // Protected and hidden objects are the server's to keep, not the
        // mutator's to change.
        let first = p
            .strip_prefix(root)
            .ok()
            .and_then(|r| r.components().next())
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        if session::ruled_name(&first) {
            thread::sleep(Duration::from_millis(1));
            continue;
        }
        let Ok(m) = fs::symlink_metadata(&p) else {
            continue;
        };
        match rng.below(4) {
            0 if m.is_dir() => {
                let hold = p.with_extension("mut-hold");
                if fs::rename(&p, &hold).is_ok() {
                    let _ = std::os::unix::fs::symlink(base.join("outside/dir"), &p);
                    thread::sleep(Duration::from_micros(rng.below(2000) as u64));
                    let _ = fs::remove_file(&p);
                    let _ = fs::rename(&hold, &p);
                }
            }
            1 if m.is_dir() && gone < 3 => {
                let dest = base.join(format!("gone-{gone}"));
                if fs::rename(&p, &dest).is_ok() {
                    gone += 1;
                    let mut snap = BTreeMap::new();
                    crate::tree::snap_into(base, &dest, &mut snap);
                    let rel = dest
                        .strip_prefix(base)
                        .unwrap_or(&dest)
                        .to_string_lossy()
                        .into_owned();
                    snap.insert(rel, crate::tree::describe(&dest));
                    moved.lock().unwrap_or_else(|p| p.into_inner()).extend(snap);
                }
            }
            2 if m.is_file() => {
                let _ = fs::remove_file(&p);
                let _ = std::os::unix::fs::symlink(base.join("outside/secret.txt"), &p);
            }
            _ if m.is_file() && m.len() < 1 << 20 => {
                let _ = fs::write(&p, "rewritten\n");
            }
            _ => {}
        }
        thread::sleep(Duration::from_millis(rng.below(20) as u64));
    }
}

fn walk(dir: &Path, depth: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            out.push(p.clone());
            if is_dir && depth > 0 && out.len() < 200 {
                out.extend(walk(&p, depth - 1));
            }
        }
    }
    out
}
