//! Adversarial review of the MCP edge's fast paths: the one tool-call
//! lifecycle (`src/mcp/call.rs`), the stdin reader thread (`src/mcp/stdio/`) and
//! the reply budget grown by file size (`src/mcp/flow.rs`,
//! `src/memory.rs`). Ground truth only: replies counted by id, RSS, fds
//! and threads from `/proc`.

use std::collections::BTreeMap;
use std::io::{BufRead as _, Write as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::*;

/// Replies (not notifications, not server requests) read until `quiet`
/// passes without a message, by id.
fn replies_until_quiet(server: &mut RawServer, quiet: Duration) -> BTreeMap<String, Vec<Value>> {
    let mut got: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    while let Some(msg) = server.recv(quiet) {
        if msg.get("method").is_none() {
            got.entry(msg["id"].to_string()).or_default().push(msg);
        }
    }
    got
}

fn count_dir(path: String) -> usize {
    std::fs::read_dir(path).map(|d| d.count()).unwrap_or(0)
}

/// [`session`] with a reply budget of `budget` bytes and no reply cap.
fn budgeted(root: std::path::PathBuf, budget: u64) -> Session {
    let budget = budget.to_string();
    session(
        root,
        &[
            "--max-pending-reply-bytes",
            &budget,
            "--max-reply-chars",
            "0",
        ],
    )
}

/// A client that declares roots and pipelines more calls than there are
/// call slots right after `initialized`, before it answers the server's
/// `roots/list` (it cannot answer sooner: the request comes after what it
/// already wrote). The answer sits in stdin behind the calls, so the reader
/// must get to it: with every slot held by a call waiting for that answer,
/// it reads on and refuses each further request with a "Server busy" error
/// (holding it could take up to 64 MiB a line). So: the answer is read, the
/// calls holding slots succeed under the client's roots, each refused call
/// gets exactly one error, and the session goes on. (Before, the reader
/// waited for a slot, never read the answer, and after the roots wait every
/// call failed and the session lost all access.)
#[test]
fn a_roots_answer_behind_more_calls_than_slots_is_still_read() {
    let env = TestEnv::new();
    env.write("a.txt", "hello\n");
    let mut server = RawServer::start(&args![env.root(), "--roots-timeout-secs", "30"]);
    server.initialize_with("2025-06-18", json!({"roots": {"listChanged": true}}));
    const CALLS: u64 = 80;
    const SLOTS: u64 = 64;
    for id in 100..100 + CALLS {
        server.send(&call(id, "read_text_file", json!({"path": "a.txt"})));
    }
    // Now the server's roots/list, answered.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut early = Vec::new();
    let ask = loop {
        let msg = server
            .recv(deadline.saturating_duration_since(Instant::now()))
            .expect("a roots/list request");
        if msg["method"] == "roots/list" {
            break msg;
        }
        early.push(msg);
    };
    let answered_at = Instant::now();
    server.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {
        "roots": [{"uri": file_uri(env.root_str())}]}}));
    let mut got = replies_until_quiet(&mut server, Duration::from_secs(4));
    for m in early {
        got.entry(m["id"].to_string()).or_default().push(m);
    }
    assert_eq!(got.len() as u64, CALLS, "replies: {:?}", got.keys());
    assert!(got.values().all(|v| v.len() == 1), "a call answered twice");
    let busy: Vec<_> = got
        .values()
        .flatten()
        .filter(|m| m["error"]["code"] == -32000)
        .collect();
    let ok = got
        .values()
        .flatten()
        .filter(|m| m["result"]["content"][0]["text"] == "hello\n")
        .count() as u64;
    assert_eq!(busy.len() as u64, CALLS - SLOTS, "busy refusals");
    assert!(
        busy[0]["error"]["message"]
            .as_str()
            .is_some_and(|t| t.starts_with("Server busy: all 64 call slots")),
        "{}",
        busy[0]
    );
    assert_eq!(ok, SLOTS, "calls run under the client's roots");
    // Answered at once, not after the 30 s roots wait.
    assert!(answered_at.elapsed() < Duration::from_secs(20));
    // The session goes on, under the client's roots.
    let r = server.request(
        "tools/call",
        json!({"name": "read_text_file", "arguments": {"path": "a.txt"}}),
    );
    assert_eq!(r["result"]["content"][0]["text"], "hello\n", "{r}");
}

/// At the end of input, calls still waiting for client roots that
/// will never come each get their answer (a roots timeout), none is lost,
/// and the process exits.
#[test]
fn calls_waiting_for_roots_at_the_end_of_input_are_each_answered() {
    let env = TestEnv::new();
    env.write("a.txt", "hello\n");
    let mut server = RawServer::start(&args![env.root(), "--roots-timeout-secs", "1"]);
    server.initialize_with("2025-06-18", json!({"roots": {"listChanged": true}}));
    for id in 1..=40 {
        server.send(&call(id, "read_text_file", json!({"path": "a.txt"})));
    }
    server.close_stdin();
    let got = replies_until_quiet(&mut server, Duration::from_secs(4));
    assert_eq!(got.len(), 40, "{:?}", got.keys());
    assert!(got.values().all(|v| v.len() == 1));
    for m in got.values().flatten() {
        assert_eq!(m["result"]["isError"], true, "{m}");
    }
    assert!(server.wait_exit(Duration::from_secs(10)).is_some());
}

/// The same with calls whose `_meta` holds more than a progress token
/// (which once took rmcp's handler, whose calls were dropped unanswered
/// 5 s after the end of input, issue 20): here each waits 7 s for a roots
/// answer that never comes. There is one path: each gets its answer (the
/// roots timeout).
#[test]
fn calls_with_other_meta_at_the_end_of_input_are_each_answered() {
    let env = TestEnv::new();
    env.write("a.txt", "hello\n");
    let mut server = RawServer::start(&args![env.root(), "--roots-timeout-secs", "7"]);
    server.initialize_with("2025-06-18", json!({"roots": {"listChanged": true}}));
    for id in 1..=20 {
        let mut c = call(id, "read_text_file", json!({"path": "a.txt"}));
        c["params"]["_meta"] = json!({"example.com/trace": id});
        server.send(&c);
    }
    server.close_stdin();
    let got = replies_until_quiet(&mut server, Duration::from_secs(12));
    assert_eq!(got.len(), 20, "{:?}", got.keys());
    assert!(got.values().all(|v| v.len() == 1));
    for m in got.values().flatten() {
        assert_eq!(m["result"]["isError"], true, "{m}");
    }
    assert!(server.wait_exit(Duration::from_secs(20)).is_some());
}

/// Cancellation racing completion: each call is answered at most
/// once, a call whose cancel arrived before it finished may or may not be
/// answered, and every call not cancelled is answered exactly once. No fd
/// or thread is left behind.
#[test]
fn cancels_racing_completion_never_duplicate_or_lose_a_reply_nor_leak() {
    let env = TestEnv::new();
    for i in 0..8 {
        env.write(format!("f{i}.txt"), "x".repeat(1000 * (i + 1)));
    }
    let mut server = RawServer::start(&args![env.root()]);
    server.initialize("2025-06-18");
    let pid = server.pid();
    // Warm up: workers started.
    for id in 1..=8 {
        server.send(&call(id, "read_text_file", json!({"path": "f0.txt"})));
    }
    let _ = replies_until_quiet(&mut server, Duration::from_millis(500));
    let fds = count_dir(format!("/proc/{pid}/fd"));
    let threads = count_dir(format!("/proc/{pid}/task"));

    let mut cancelled = std::collections::BTreeSet::new();
    for id in 1000..3000u64 {
        let tool = ["read_text_file", "list_directory", "get_file_info"][id as usize % 3];
        let path = if tool == "list_directory" {
            ".".to_owned()
        } else {
            format!("f{}.txt", id % 8)
        };
        server.send(&call(id, tool, json!({"path": path})));
        if id % 2 == 0 {
            server.notify(
                "notifications/cancelled",
                json!({"requestId": id, "reason": "race"}),
            );
            cancelled.insert(id.to_string());
        }
    }
    let got = replies_until_quiet(&mut server, Duration::from_secs(2));
    for (id, v) in &got {
        assert_eq!(v.len(), 1, "id {id} answered {} times", v.len());
    }
    for id in 1000..3000u64 {
        let key = id.to_string();
        if !cancelled.contains(&key) {
            assert!(
                got.contains_key(&key),
                "call {id} (not cancelled) unanswered"
            );
        }
    }
    let after_fds = count_dir(format!("/proc/{pid}/fd"));
    let after_threads = count_dir(format!("/proc/{pid}/task"));
    eprintln!(
        "review_edge: {} of 1000 cancelled calls answered anyway; fds {fds} -> {after_fds}, threads {threads} -> {after_threads}",
        got.keys().filter(|k| cancelled.contains(*k)).count()
    );
    assert!(after_fds <= fds, "fds {fds} -> {after_fds}");
    // Extra workers (started on a stall) may still be idle; the pool's cap.
    assert!(
        after_threads <= threads + 32,
        "threads {threads} -> {after_threads}"
    );
    let ok = server.call_tool("read_text_file", json!({"path": "f1.txt"}));
    raw_reply(&ok).assert_ok();
}

/// `roots/list_changed` followed at once by a call: the call runs with the
/// new roots, never the old ones (the observer marks the roots pending
/// before the call is looked at).
#[test]
fn a_call_right_after_list_changed_waits_for_the_new_roots() {
    let env = TestEnv::new();
    env.write("a/secret.txt", "SECRET-A");
    env.write("b/ok.txt", "ok");
    let mut server = RawServer::start(&args![env.root()]);
    server.initialize_with("2025-06-18", json!({"roots": {"listChanged": true}}));
    let answer = |server: &mut RawServer, uri: &str| {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let msg = server
                .recv(deadline.saturating_duration_since(Instant::now()))
                .expect("roots/list");
            if msg["method"] == "roots/list" {
                server.send(&json!({"jsonrpc": "2.0", "id": msg["id"],
                    "result": {"roots": [{"uri": uri}]}}));
                return;
            }
        }
    };
    let a = file_uri(env.path_str("a"));
    let b = file_uri(env.path_str("b"));
    answer(&mut server, &a);
    let first = server.call_tool(
        "read_text_file",
        json!({"path": env.path_str("a/secret.txt")}),
    );
    assert!(first.to_string().contains("SECRET-A"), "{first}");
    for round in 0..20u64 {
        // Narrow to b, and read a's file in the same write.
        let id = 10_000 + round;
        let line = format!(
            "{}\n{}\n",
            json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}),
            call(
                id,
                "read_text_file",
                json!({"path": env.path_str("a/secret.txt")})
            )
        );
        server.send_bytes(line.as_bytes()).expect("write");
        answer(&mut server, &b);
        let reply = server.wait_response(&json!(id));
        assert!(
            !reply.to_string().contains("SECRET-A"),
            "round {round}: a call after list_changed ran with the old roots: {reply}"
        );
        // And back to a, for the next round.
        server.notify("notifications/roots/list_changed", Value::Null);
        answer(&mut server, &a);
        let back = server.call_tool(
            "read_text_file",
            json!({"path": env.path_str("a/secret.txt")}),
        );
        assert!(back.to_string().contains("SECRET-A"), "{back}");
    }
}

/// A file that grows after it was opened (a log being appended to) must
/// not let a read hold more than its share of the reply budget: with a
/// client that does not read its replies, the server's memory levels off
/// near `--max-pending-reply-bytes`, however much the files grew. (This
/// end-to-end check passed before the fix too: a reader chasing an appender
/// rarely gets far past the size it saw. The deterministic check is the
/// unit test `fs::file::tests::bytes_past_the_size_at_open_are_covered_before_they_are_held`.)
#[test]
#[ignore = "slow: appends hundreds of MiB while about 40 reads race it"]
fn a_file_growing_while_it_is_read_does_not_escape_the_reply_budget() {
    const BUDGET: u64 = 4 << 20;
    const GROWN: usize = 8 << 20;
    const CALLS: u64 = 40;
    const SLACK_KIB: u64 = 40 * 1024;
    let env = TestEnv::new();
    let log = env.write("grow.log", "");
    // The appender: the file starts empty, grows to GROWN in 64 KiB
    // appends as fast as it can, is truncated, and again.
    let stop = Arc::new(AtomicBool::new(false));
    let appender = {
        let stop = stop.clone();
        let log = log.clone();
        std::thread::spawn(move || {
            let chunk = vec![b'a'; 64 << 10];
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&log)
                .expect("open log");
            while !stop.load(Ordering::Relaxed) {
                f.set_len(0).expect("truncate");
                for _ in 0..GROWN / chunk.len() {
                    f.write_all(&chunk).expect("append");
                }
            }
        })
    };
    let mut s = budgeted(env.root(), BUDGET);
    let (pid, mut stdin) = (s.pid, s.take_stdin());
    let base = status_kib(pid, "VmRSS");
    // Written from a thread: the server may stop reading (back-pressure).
    let path = env.path_str("grow.log");
    let writer = std::thread::spawn(move || {
        for id in 1..=CALLS {
            let req = call(id, "read_text_file", json!({"path": path}));
            if writeln!(stdin, "{req}").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        stdin
    });
    // Never read: the peak must level off under the budget plus slack.
    let limit = base + BUDGET / 1024 + SLACK_KIB;
    let mut last = 0;
    let mut still = Instant::now();
    let mut over = None;
    while still.elapsed() < Duration::from_secs(3) {
        let hwm = status_kib(pid, "VmHWM");
        if hwm > limit {
            over = Some(hwm);
            break;
        }
        if hwm != last {
            last = hwm;
            still = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    let _ = s.child.kill();
    let _ = s.child.wait();
    let _ = appender.join();
    let _ = writer.join();
    if let Some(hwm) = over {
        panic!(
            "peak RSS {hwm} KiB past {limit} KiB (started at {base} KiB) with unread replies of a growing file"
        );
    }
    eprintln!("review_edge: peak RSS {last} KiB (started at {base} KiB, limit {limit} KiB)");
}

/// Two calls with the same id in flight: the table of requests in flight
/// keeps one entry per id, as rmcp's does, so the first reply takes the id
/// and the second reply is dropped (unless the first was answered before
/// the second arrived: then both). One or two replies per reused id, with
/// or without other `_meta`, never none.
#[test]
fn a_reused_id_gets_one_or_two_replies_never_none() {
    let env = TestEnv::new();
    env.write("a.txt", "A");
    env.write("b.txt", "B");
    let mut server = RawServer::start(&args![env.root()]);
    server.initialize("2025-06-18");
    let mut counts = Vec::new();
    for (base, meta) in [(100u64, json!(null)), (200, json!({"tuls.test/other": 1}))] {
        for round in 0..10 {
            let id = base * 1000 + round;
            for path in ["a.txt", "b.txt"] {
                let mut c = call(id, "read_text_file", json!({"path": path}));
                if !meta.is_null() {
                    c["params"]["_meta"] = meta.clone();
                }
                server.send(&c);
            }
        }
        let got = replies_until_quiet(&mut server, Duration::from_millis(1500));
        counts.push(got.values().map(Vec::len).collect::<Vec<_>>());
    }
    for (path, c) in ["plain", "other _meta"].iter().zip(&counts) {
        assert_eq!(c.len(), 10, "{path}: an id got no reply: {c:?}");
        assert!(c.iter().all(|n| (1..=2).contains(n)), "{path}: {c:?}");
    }
    assert!(server.is_alive());
}

/// The client closes its end of stdout: replies cannot be written, the
/// calls still finish, and at the end of input the process exits
/// (nothing waits forever on the writer).
#[test]
fn a_closed_stdout_does_not_hang_the_end_of_the_session() {
    let env = TestEnv::new();
    env.write("a.txt", "x".repeat(100_000));
    let mut s = session(env.root(), &[]);
    let mut stdin = s.take_stdin();
    drop(s.stdout.take());
    for id in 1..=300 {
        let req = call(id, "read_text_file", json!({"path": env.path_str("a.txt")}));
        if writeln!(stdin, "{req}").is_err() {
            break;
        }
    }
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if s.child.try_wait().expect("try_wait").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = s.child.kill();
            panic!("tuls did not exit after its stdout closed and its input ended");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `read_multiple_files` grows its reply budget file by file, and a call
/// that must wait for more gives back what it holds first (so that two
/// calls cannot deadlock) — while it still holds the text of the files it
/// has read. With many workers (started by a burst of slow calls), each
/// waiting call then holds its first file uncounted: the server's memory
/// must still level off near `--max-pending-reply-bytes` for a client that
/// does not read its replies.
#[test]
#[ignore = "slow: starts the whole worker pool with 32 searches of a 30 MB file"]
fn batches_waiting_for_more_budget_hold_nothing_uncounted() {
    const BUDGET: u64 = 16 << 20;
    const SLACK_KIB: u64 = 12 * 1024;
    const BATCHES: u64 = 30;
    let env = TestEnv::new();
    env.write(
        "big.txt",
        "abcdefghij".repeat(10).add_line().repeat(300_000),
    );
    // The first file takes most of the budget (four bytes per byte), the
    // second then needs all of it.
    let line = "0123456789abcdef".repeat(4).add_line();
    env.write("f1.txt", line.repeat(48_000)); // ~3 MiB
    env.write("f2.txt", line.repeat(16_000)); // ~1 MiB
    let mut s = budgeted(env.root(), BUDGET);
    let (pid, mut stdin) = (s.pid, s.take_stdin());
    let mut stdout = s.stdout.take().expect("stdout");
    // Slow calls, paced so that the queue stalls and workers are added.
    for id in 1..=32 {
        let req = call(
            id,
            "search_file_contents",
            json!({"path": env.path_str("big.txt"), "pattern": "zq[0-9]+x"}),
        );
        writeln!(stdin, "{req}").expect("write");
        stdin.flush().expect("flush");
        std::thread::sleep(Duration::from_millis(25));
    }
    let mut reply = Vec::new();
    for _ in 0..32 {
        reply.clear();
        stdout.read_until(b'\n', &mut reply).expect("search reply");
    }
    let threads = count_dir(format!("/proc/{pid}/task"));
    let workers = worker_threads(pid);
    let base = status_kib(pid, "VmRSS");
    let hwm_before = status_kib(pid, "VmHWM");
    let paths = [env.path_str("f1.txt"), env.path_str("f2.txt")];
    // A search for every worker, then the batches: they queue behind the
    // searches, so they are all read before any of them runs, and then
    // run side by side.
    let mut burst = String::new();
    let searches = (workers as u64 + 2).min(64 - BATCHES);
    for id in 50..50 + searches {
        let req = call(
            id,
            "search_file_contents",
            json!({"path": env.path_str("big.txt"), "pattern": "zq[0-9]+x"}),
        );
        burst.push_str(&req.to_string());
        burst.push('\n');
    }
    for id in 100..100 + BATCHES {
        burst.push_str(&call(id, "read_multiple_files", json!({"paths": paths})).to_string());
        burst.push('\n');
    }
    // From a thread: the server may stop reading (back-pressure).
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(burst.as_bytes());
        let _ = stdin.flush();
        stdin
    });
    let limit = base.max(hwm_before) + BUDGET / 1024 + SLACK_KIB;
    let mut last = 0;
    let mut over = None;
    // The searches take a few seconds on a small machine; then the batches.
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(12) && over.is_none() {
        let hwm = status_kib(pid, "VmHWM");
        if hwm > limit {
            over = Some(hwm);
        }
        last = hwm;
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = s.child.kill();
    let _ = s.child.wait();
    let _ = writer.join();
    eprintln!(
        "review_edge: {threads} threads, {workers} workers; RSS {base} KiB (peak before {hwm_before} KiB) -> peak {last} KiB, limit {limit} KiB"
    );
    if let Some(hwm) = over {
        panic!(
            "peak RSS {hwm} KiB past {limit} KiB: batches waiting for budget held their first files uncounted"
        );
    }
}

trait AddLine {
    fn add_line(&self) -> String;
}

impl AddLine for str {
    fn add_line(&self) -> String {
        format!("{self}\n")
    }
}

/// The server's filesystem worker threads (named `tuls-fs-N`).
fn worker_threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|t| {
                    std::fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|c| c.starts_with("tuls-fs-"))
                })
                .count()
        })
        .unwrap_or(0)
}

/// Progress of a call with a progress token alone, and beside another
/// `_meta` key (which once took rmcp's handler, whose progress came after
/// the reply for 1 or 2 calls in 45, issue 20): the same notifications
/// (method, token, fields), and every one of them before the reply.
#[test]
fn progress_is_the_same_with_any_meta_and_precedes_the_reply() {
    let env = TestEnv::new();
    for d in 0..20 {
        for f in 0..20 {
            env.write(format!("d{d:02}/f{f:02}.txt"), "TODO\n");
        }
    }
    let mut server =
        RawServer::start_with_env(&args![env.root()], &[("TULS_DEBUG_PROGRESS_NOW", "1")]);
    server.initialize("2025-06-18");
    let mut shapes = Vec::new();
    // Call 1 has a progress token alone, the others another key beside it.
    let calls = (1..=21).map(|id| {
        let meta = if id == 1 {
            json!({"progressToken": "tok"})
        } else {
            json!({"progressToken": "tok", "tuls.test/other": 1})
        };
        (id, meta)
    });
    for (id, meta) in calls {
        server.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "search_file_contents",
            "arguments": {"path": ".", "pattern": "TODO", "outputMode": "count"},
            "_meta": meta}}),
        );
        let mut seen = Vec::new();
        let mut after_reply = 0;
        let mut replied = false;
        // Until the reply, as long as a loaded machine takes; after it,
        // long enough to see a late notification.
        let wait = |replied: bool| Duration::from_millis(if replied { 500 } else { 20_000 });
        while let Some(msg) = server.recv(wait(replied)) {
            if msg.get("method").is_none() {
                assert_eq!(msg["id"], id, "{msg}");
                replied = true;
                continue;
            }
            assert_eq!(msg["method"], "notifications/progress", "{msg}");
            if replied {
                after_reply += 1;
            }
            let mut keys: Vec<String> = msg["params"]
                .as_object()
                .expect("params")
                .keys()
                .cloned()
                .collect();
            keys.sort();
            seen.push((keys, msg["params"]["progressToken"].clone()));
        }
        assert!(replied, "call {id} unanswered");
        assert!(!seen.is_empty(), "call {id}: no progress");
        assert_eq!(after_reply, 0, "call {id}: progress after its reply");
        seen.dedup();
        shapes.push(seen);
    }
    assert_eq!(
        shapes[0], shapes[1],
        "progress notifications: token alone vs beside another key"
    );
}

/// `edit_file` builds a reply from the request's new text as much as from
/// the file: a tiny file edited with a large `newText` (dry run, so the file
/// stays as it is) makes a large diff. Its reply budget must cover that,
/// not only the file's size: with a client that does not read its replies,
/// the server's memory levels off near `--max-pending-reply-bytes`.
#[test]
#[ignore = "slow: writes 80 MiB of edit requests"]
fn edits_with_large_new_text_stay_within_the_reply_budget() {
    const BUDGET: u64 = 16 << 20;
    const SLACK_KIB: u64 = 24 * 1024;
    const EDITS: u64 = 40;
    const NEW: usize = 2 << 20;
    let env = TestEnv::new();
    env.write("tiny.txt", "a\n");
    let mut s = budgeted(env.root(), BUDGET);
    let (pid, mut stdin) = (s.pid, s.take_stdin());
    let base = status_kib(pid, "VmRSS");
    let path = env.path_str("tiny.txt");
    let writer = std::thread::spawn(move || {
        let new = "b".repeat(NEW - 1) + "\n";
        for id in 1..=EDITS {
            let req = call(
                id,
                "edit_file",
                json!({"path": path, "dryRun": true,
                    "edits": [{"oldText": "a\n", "newText": new}]}),
            );
            if writeln!(stdin, "{req}").is_err() {
                break;
            }
        }
        stdin
    });
    let limit = base + BUDGET / 1024 + SLACK_KIB;
    let mut last = 0;
    let mut over = None;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(15) {
        let hwm = status_kib(pid, "VmHWM");
        if hwm > limit && over.is_none() {
            over = Some(hwm);
        }
        last = hwm;
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = s.child.kill();
    let _ = s.child.wait();
    let _ = writer.join();
    eprintln!("review_edge: edits: RSS {base} KiB -> peak {last} KiB, limit {limit} KiB");
    if over.is_some() {
        panic!("peak RSS {last} KiB past {limit} KiB with unread replies of edits of a tiny file");
    }
}

/// `read_text_file` with `lineNumbers` gives each line a number: a file of
/// empty lines comes to eight bytes of reply per byte of file, twice what
/// its share of the reply budget (four per byte) covers. With a client that
/// does not read its replies, the server's memory must still level off near
/// `--max-pending-reply-bytes`. (It does: a reply grows its share to its
/// size when that is free, and the next read must find four bytes per byte
/// free before it starts, so only the last reply or two are undercounted.)
#[test]
#[ignore = "slow: piles up about 40 unread replies of 8 MiB"]
fn numbered_reads_of_empty_lines_stay_within_the_reply_budget() {
    const BUDGET: u64 = 32 << 20;
    const SLACK_KIB: u64 = 16 * 1024;
    const READS: u64 = 40;
    let env = TestEnv::new();
    env.write("nl.txt", "\n".repeat(1 << 20));
    let mut s = budgeted(env.root(), BUDGET);
    let (pid, mut stdin) = (s.pid, s.take_stdin());
    let base = status_kib(pid, "VmRSS");
    let path = env.path_str("nl.txt");
    let writer = std::thread::spawn(move || {
        for id in 1..=READS {
            let req = call(
                id,
                "read_text_file",
                json!({"path": path, "lineNumbers": true}),
            );
            if writeln!(stdin, "{req}").is_err() {
                break;
            }
        }
        stdin
    });
    let limit = base + BUDGET / 1024 + SLACK_KIB;
    let mut last = 0;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        last = status_kib(pid, "VmHWM");
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = s.child.kill();
    let _ = s.child.wait();
    let _ = writer.join();
    eprintln!("review_edge: numbered reads: RSS {base} KiB -> peak {last} KiB, limit {limit} KiB");
    assert!(
        last <= limit,
        "peak RSS {last} KiB past {limit} KiB with unread numbered replies"
    );
}
