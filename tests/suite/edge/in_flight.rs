//! Calls in flight at the MCP edge, on the one tool-call lifecycle
//! (`src/mcp/call.rs`) and through the stdin reader thread
//! (`src/mcp/stdio/`): a roots answer behind more calls than slots, calls
//! at the end of input, cancels racing completion, a reused id, a closed
//! stdout, progress before the reply. The reply budget grown by file size
//! (`src/mcp/flow.rs`, `src/reply_budget.rs`) is in [`super::reply_memory`].
//! Ground truth only: replies counted by id, RSS, fds and threads from
//! `/proc`.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::*;

/// Replies (not notifications, not server requests) read until `quiet`
/// passes without a message, by id.
fn replies_until_quiet(server: &mut RawServer, quiet: Duration) -> BTreeMap<String, Vec<Value>> {
    let mut got: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for msg in server.replies_until_quiet(quiet) {
        got.entry(msg["id"].to_string()).or_default().push(msg);
    }
    got
}

pub(super) fn count_dir(path: String) -> usize {
    std::fs::read_dir(path).map(|d| d.count()).unwrap_or(0)
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
