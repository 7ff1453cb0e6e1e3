//! A hostile client at the MCP edge (issue 11, items 1, 2, 3 and 6): it
//! cannot take the server's memory or descriptors, and every protocol error
//! is answered at the right id. Ground truth comes from `/proc/<pid>`
//! (VmHWM, VmRSS, the fd table) and from the replies matched by id.
//!
//! Numbers are printed to stderr (`-- --nocapture`).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::proc::status_kib;
use crate::util::{RawServer, TestEnv, answer_roots, bin, file_uri, raw_error, raw_reply};

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// Open descriptors of `pid`.
fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("read fd table")
        .count()
}

/// Every message up to the response with `id` (which is last).
fn until_response(raw: &mut RawServer, id: &Value) -> Vec<Value> {
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while let Some(msg) = raw.recv(deadline.saturating_duration_since(Instant::now())) {
        let done = msg.get("method").is_none() && msg.get("id") == Some(id);
        seen.push(msg);
        if done {
            return seen;
        }
    }
    panic!(
        "no response with id {id}; saw {seen:?}\nstderr:\n{}",
        raw.stderr()
    );
}

/// Sends `line`, then a ping; returns the messages that came before the
/// ping's answer (the answers to `line`, if any).
fn answers_to(raw: &mut RawServer, line: &str, ping_id: i64) -> Vec<Value> {
    raw.send_line(line);
    raw.send(&json!({"jsonrpc": "2.0", "id": ping_id, "method": "ping"}));
    let mut seen = until_response(raw, &json!(ping_id));
    let pong = seen.pop().expect("the ping's answer");
    assert!(pong.get("result").is_some(), "{pong}");
    seen
}

/// The one error reply in `seen`: its id and code.
#[track_caller]
fn one_error(seen: &[Value]) -> (Value, i64) {
    assert_eq!(seen.len(), 1, "expected one error reply, got {seen:?}");
    let msg = &seen[0];
    let code = msg["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error reply: {msg}"));
    assert_eq!(msg["jsonrpc"], json!("2.0"), "{msg}");
    (msg["id"].clone(), code)
}

// ---------------------------------------------------------------------------
// 6. Protocol errors are answered, to the right id
// ---------------------------------------------------------------------------

#[test]
fn lines_that_are_not_json_rpc_get_an_error_reply_at_the_right_id() {
    let env = TestEnv::new();
    env.write("a.txt", "alpha\n");
    let mut raw = RawServer::start(&args![env.root(), "--max-request-bytes", "4096"]);
    raw.initialize("2025-11-25");

    // Not JSON: -32700 Parse error, id null.
    for line in [
        "this is not json",
        r#"{"jsonrpc": "2.0", "id": 99, "method": "#,
        "\u{1}",
    ] {
        let (id, code) = one_error(&answers_to(&mut raw, line, 1000));
        assert_eq!((id, code), (Value::Null, -32700), "{line:?}");
    }
    // Nested past serde_json's depth limit (128): valid JSON that is no
    // request tuls reads, -32600 at its top-level id when one can be read.
    let deep = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
    let (id, code) = one_error(&answers_to(&mut raw, &deep, 1001));
    assert_eq!((id, code), (Value::Null, -32600));
    let deep_obj = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"read_text_file","arguments":{}1{}}}}}"#,
        r#"{"a":"#.repeat(500),
        "}".repeat(500)
    );
    let (id, code) = one_error(&answers_to(&mut raw, &deep_obj, 1002));
    assert_eq!((id, code), (json!(5), -32600));
    // The id after 100,000 levels of arguments is read too.
    let deepest = format!(
        r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"read_text_file","arguments":{}1{}}},"id":"deep"}}"#,
        r#"{"a":"#.repeat(100_000),
        "}".repeat(100_000)
    );
    let mut big = RawServer::start(&args![env.root()]);
    big.initialize("2025-11-25");
    let (id, code) = one_error(&answers_to(&mut big, &deepest, 1003));
    assert_eq!((id, code), (json!("deep"), -32600));

    // JSON but not a JSON-RPC message: -32600 Invalid Request, at the id
    // when one can be read, else null.
    for (line, want) in [
        ("[1, 2]", Value::Null),
        ("42", Value::Null),
        (r#"{"jsonrpc":"2.0"}"#, Value::Null),
        (
            r#"{"jsonrpc":"2.0","id":"s-7","method":"tools/call","params":"oops"}"#,
            json!("s-7"),
        ),
    ] {
        let (id, code) = one_error(&answers_to(&mut raw, line, 1003));
        assert_eq!((id, code), (want, -32600), "{line}");
    }
    // (A request whose params rmcp cannot type is routed as an unknown
    // method; it is answered at its id all the same.)
    let line = r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"arguments":{}}}"#;
    raw.send_line(line);
    raw_error(&raw.wait_response(&json!(8)));

    // Oversized lines: the error goes to the top-level id, never to an "id"
    // key inside the arguments, and to null when the top-level id is not in
    // view.
    let pad = "a".repeat(8000);
    let seen_first = format!(
        r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"read_text_file","arguments":{{"id":7,"x":{{"id":6}}}}}},"id":8,"pad":"{pad}"}}"#
    );
    let (id, code) = one_error(&answers_to(&mut raw, &seen_first, 1004));
    assert_eq!((id, code), (json!(8), -32600));
    let id_at_end = format!(
        r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"read_text_file","arguments":{{"id":7,"path":"{pad}"}}}},"id":9}}"#
    );
    let (id, code) = one_error(&answers_to(&mut raw, &id_at_end, 1005));
    assert_eq!((id, code), (Value::Null, -32600));

    // A notification or a response that tuls cannot read is never answered.
    let seen = answers_to(
        &mut raw,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":7}"#,
        1006,
    );
    assert!(seen.is_empty(), "{seen:?}");
    let seen = answers_to(
        &mut raw,
        r#"{"jsonrpc":"2.0","id":123,"result":{"roots":5}}"#,
        1007,
    );
    assert!(seen.is_empty(), "{seen:?}");

    // The session went on through all of it.
    let r = raw_reply(&raw.call_tool("read_text_file", json!({"path": env.path_str("a.txt")})));
    assert_eq!(r.text, "alpha\n");
    assert!(raw.is_alive());
}

// ---------------------------------------------------------------------------
// 2 and 3. Client roots: no flood, a bounded list, one handle per directory
// ---------------------------------------------------------------------------

/// Starts tuls with `extra` flags, initializes as a client that declares
/// roots, and returns the id of the server's first `roots/list` request.
fn raw_with_roots(env: &TestEnv, extra: &[&str]) -> (RawServer, Value) {
    let mut argv = args![env.root()];
    argv.extend(extra.iter().map(Into::into));
    let mut raw = RawServer::start(&argv);
    raw.initialize_with("2025-11-25", json!({"roots": {"listChanged": true}}));
    let id = next_roots_request(&mut raw, Duration::from_secs(10)).expect("a roots/list request");
    (raw, id)
}

/// The id of the server's next `roots/list` request, if one comes in time.
fn next_roots_request(raw: &mut RawServer, wait: Duration) -> Option<Value> {
    let deadline = Instant::now() + wait;
    while let Some(msg) = raw.recv(deadline.saturating_duration_since(Instant::now())) {
        if msg["method"] == "roots/list" {
            return Some(msg["id"].clone());
        }
    }
    None
}

#[test]
fn a_roots_list_of_21000_roots_opens_no_descriptors_and_later_calls_work() {
    let env = TestEnv::new();
    env.write("sub/inner.txt", "inner\n");
    let (mut raw, first) = raw_with_roots(&env, &[]);
    let pid = raw.pid();
    let fds_before = fd_count(pid);
    let sub = file_uri(env.path("sub"));

    // Far past the bound, 21,000 distinct roots: refused whole, with a
    // clear error, no fds.
    let distinct: Vec<String> = (0..21_000).map(|i| format!("{sub}/n{i}")).collect();
    answer_roots(&mut raw, &first, &distinct);
    let r = raw_reply(&raw.call_tool(
        "read_text_file",
        json!({"path": env.path_str("sub/inner.txt")}),
    ));
    assert!(r.is_error, "{:?}", r.raw);
    assert!(
        r.text.contains("21000 roots, more than the 256"),
        "{:?}",
        r.raw
    );
    assert!(!r.text.contains("inner\n"), "{:?}", r.raw);
    let fds = fd_count(pid);
    eprintln!("hostile_edge: fds {fds_before} before, {fds} after 21000 roots");
    assert!(fds <= fds_before + 4, "{fds} fds (from {fds_before})");

    // 21,000 copies of one URI are one root (counted once, as the bound's
    // doc says): the root works, with one handle.
    raw.notify("notifications/roots/list_changed", Value::Null);
    let again = next_roots_request(&mut raw, Duration::from_secs(10)).expect("roots/list");
    answer_roots(&mut raw, &again, &vec![sub.clone(); 21_000]);
    let r = raw_reply(&raw.call_tool(
        "read_text_file",
        json!({"path": env.path_str("sub/inner.txt")}),
    ));
    assert_eq!(r.text, "inner\n", "{:?}", r.raw);
    let fds = fd_count(pid);
    eprintln!("hostile_edge: fds {fds} after 21000 copies of one root");
    assert!(fds <= fds_before + 4, "{fds} fds (from {fds_before})");

    // Within the bound, 200 copies of one directory: one handle, and the
    // root works.
    raw.notify("notifications/roots/list_changed", Value::Null);
    let second = next_roots_request(&mut raw, Duration::from_secs(10)).expect("roots/list");
    let mut uris = vec![sub.clone(); 200];
    uris.push(format!("{sub}/")); // the same directory, spelled with a slash
    answer_roots(&mut raw, &second, &uris);
    let r = raw_reply(&raw.call_tool(
        "read_text_file",
        json!({"path": env.path_str("sub/inner.txt")}),
    ));
    assert_eq!(r.text, "inner\n", "{:?}", r.raw);
    let fds = fd_count(pid);
    eprintln!("hostile_edge: fds {fds} after 201 copies");
    assert!(fds <= fds_before + 4, "{fds} fds (from {fds_before})");
    let r = raw_reply(&raw.call_tool("list_allowed_directories", json!({})));
    assert_eq!(
        r.text
            .lines()
            .skip(1)
            .take_while(|l| !l.is_empty())
            .collect::<Vec<_>>(),
        [env.path_str("sub")],
        "{:?}",
        r.raw
    );
    assert!(raw.is_alive());
}

#[test]
fn list_changed_while_asking_sends_one_more_request_after_the_answer() {
    let env = TestEnv::new();
    env.write("top.txt", "top\n");
    env.write("sub/inner.txt", "inner\n");
    let (mut raw, first) = raw_with_roots(&env, &[]);
    // Three changes while the first request is out: nothing more is sent.
    for _ in 0..3 {
        raw.notify("notifications/roots/list_changed", Value::Null);
    }
    assert_eq!(
        next_roots_request(&mut raw, Duration::from_millis(500)),
        None
    );
    // The (stale) answer is not applied; exactly one more request follows.
    answer_roots(&mut raw, &first, &[file_uri(env.root())]);
    let second = next_roots_request(&mut raw, Duration::from_secs(10)).expect("one more");
    assert_eq!(
        next_roots_request(&mut raw, Duration::from_millis(300)),
        None
    );
    answer_roots(&mut raw, &second, &[file_uri(env.path("sub"))]);
    let r = raw_reply(&raw.call_tool("read_text_file", json!({"path": env.path_str("top.txt")})));
    assert!(
        r.is_error,
        "the stale, wider answer was applied: {:?}",
        r.raw
    );
    let r = raw_reply(&raw.call_tool(
        "read_text_file",
        json!({"path": env.path_str("sub/inner.txt")}),
    ));
    assert_eq!(r.text, "inner\n", "{:?}", r.raw);
}

#[test]
#[ignore = "slow: a million notifications through a debug build"]
fn a_million_list_changed_notifications_keep_memory_flat() {
    let env = TestEnv::new();
    env.write("top.txt", "top\n");
    let (mut raw, _never_answered) =
        raw_with_roots(&env, &["--roots-timeout-secs", "1", "--log-level", "error"]);
    let pid = raw.pid();
    // Settle (the first request times out), then measure.
    std::thread::sleep(Duration::from_millis(1500));
    let start = status_kib(pid, "VmRSS");
    let one = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/roots/list_changed\"}\n";
    let chunk: Vec<u8> = one.repeat(10_000);
    let started = Instant::now();
    for _ in 0..100 {
        raw.send_bytes(&chunk).expect("write notifications");
    }
    // Wait until all are read: a ping queued behind them is answered.
    let pong = raw.request("ping", json!({}));
    assert!(pong.get("result").is_some(), "{pong}");
    let hwm = status_kib(pid, "VmHWM");
    let rss = status_kib(pid, "VmRSS");
    let mut requests = 0;
    while let Some(msg) = raw.recv(Duration::from_millis(200)) {
        if msg["method"] == "roots/list" {
            requests += 1;
        }
    }
    eprintln!(
        "hostile_edge: 1e6 list_changed in {:?}: RSS {start} KiB -> {rss} KiB (peak {hwm} KiB), {requests} roots/list requests",
        started.elapsed()
    );
    // One request outstanding at a time, each dropped after the 1 s wait:
    // at most one per second of flood, plus the first and the last.
    let bound = started.elapsed().as_secs() + 2;
    assert!(
        requests <= bound,
        "{requests} roots/list requests for one flood (at most {bound})"
    );
    assert!(
        hwm < start + 16 * 1024,
        "peak RSS {hwm} KiB from {start} KiB"
    );
    let tools = raw.request("tools/list", json!({}));
    assert!(tools["result"]["tools"].is_array(), "{tools}");
    assert!(raw.is_alive());
}

// ---------------------------------------------------------------------------
// 1. Replies held in memory are bounded in total
// ---------------------------------------------------------------------------

#[test]
#[ignore = "slow: writes and reads about 2 GB of escaped replies"]
fn replies_to_a_client_that_does_not_read_stay_within_the_budget() {
    const FILE: usize = 8 << 20;
    const CALLS: usize = 24;
    const BUDGET: u64 = 64 << 20;
    const SLACK_KIB: u64 = 48 * 1024;
    let env = TestEnv::new();
    // Control bytes: the worst case on the wire (six bytes each, twice).
    env.write("ctl.bin", vec![1u8; FILE]);
    let mut child = Command::new(bin())
        .arg("filesystem")
        .arg(env.root())
        .args(["--max-read-bytes", &FILE.to_string()])
        .args(["--max-pending-reply-bytes", &BUDGET.to_string()])
        // Whole-file replies: the reply budget would cut them.
        .args(["--max-reply-chars", "0"])
        .args(["--log-level", "error"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn tuls");
    let pid = child.id();
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::with_capacity(1 << 20, child.stdout.take().expect("stdout"));
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    writeln!(stdin, "{init}").expect("write");
    let mut line = Vec::new();
    stdout
        .read_until(b'\n', &mut line)
        .expect("initialize answer");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .expect("write");
    let path = env.path_str("ctl.bin");
    for id in 1..=CALLS {
        let req = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "read_text_file", "arguments": {"path": path}}});
        writeln!(stdin, "{req}").expect("write request");
    }
    stdin.flush().expect("flush");

    // Never read: the peak must level off under the budget plus slack.
    let limit = BUDGET / 1024 + SLACK_KIB;
    let mut last = 0;
    let mut still = Instant::now();
    while still.elapsed() < Duration::from_secs(3) {
        let hwm = status_kib(pid, "VmHWM");
        if hwm > limit {
            let _ = child.kill();
            panic!(
                "peak RSS {hwm} KiB past {limit} KiB with {CALLS} unread replies of {FILE} bytes"
            );
        }
        if hwm != last {
            last = hwm;
            still = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("hostile_edge: peak RSS {last} KiB while the client did not read");

    // Now read: every request gets its reply, each the whole file, escaped.
    let mut got = [false; CALLS + 1];
    for _ in 0..CALLS {
        line.clear();
        stdout.read_until(b'\n', &mut line).expect("read reply");
        let head = String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned();
        let id: usize = head
            .strip_prefix(r#"{"jsonrpc":"2.0","id":"#)
            .and_then(|r| r.split(',').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("not a reply: {head}"));
        assert!(
            head.contains(r#""text":"\u0001\u0001"#),
            "not the file's text: {head}"
        );
        assert!(
            line.len() > 2 * 6 * FILE,
            "reply {id} is {} bytes",
            line.len()
        );
        got[id] = true;
    }
    assert!(got[1..].iter().all(|g| *g), "missing replies");
    let hwm = status_kib(pid, "VmHWM");
    eprintln!("hostile_edge: peak RSS {hwm} KiB after all {CALLS} replies");
    assert!(hwm <= limit, "peak RSS {hwm} KiB past {limit} KiB");
    drop(stdin);
    let mut rest = Vec::new();
    let _ = stdout.read_to_end(&mut rest);
    let _ = child.wait();
}

/// A roots/list answer that comes after the timeout was ignored, and every
/// later call said "no access until the client answers" though the client
/// had answered (issue 20). The refusal now says what the client must send
/// (`notifications/roots/list_changed`, then its answer), and doing that
/// restores access.
#[test]
fn after_a_roots_timeout_the_refusal_says_how_to_recover_and_that_works() {
    let env = TestEnv::new();
    env.write("a.txt", "alpha\n");
    let (mut raw, first) = raw_with_roots(&env, &["--roots-timeout-secs", "1"]);
    std::thread::sleep(Duration::from_millis(1500));
    let read = |raw: &mut RawServer| {
        raw_reply(&raw.call_tool("read_text_file", json!({"path": env.path_str("a.txt")})))
    };
    let r = read(&mut raw);
    assert!(r.is_error, "{:?}", r.raw);
    assert!(
        r.text.contains("notifications/roots/list_changed"),
        "{}",
        r.text
    );
    // The late answer changes nothing, and the refusal still says so.
    answer_roots(&mut raw, &first, &[file_uri(env.root())]);
    let r = read(&mut raw);
    assert!(r.is_error, "{:?}", r.raw);
    assert!(r.text.contains("not applied"), "{}", r.text);
    // Doing what it says restores access.
    raw.notify("notifications/roots/list_changed", Value::Null);
    let id = next_roots_request(&mut raw, Duration::from_secs(10)).expect("a new roots/list");
    answer_roots(&mut raw, &id, &[file_uri(env.root())]);
    let r = read(&mut raw);
    assert_eq!(r.text, "alpha\n", "{:?}", r.raw);
}

/// A host that never reads the server's stderr, and a client that sends
/// 5,000 lines that are not JSON, each answered and each logged (about
/// 500 KB of log, where a pipe holds 64 KiB). The next call is still
/// answered: log lines past the queue are dropped, not waited for, and the
/// count is said once stderr is read. Before the queue, the thread that
/// reads requests blocked in its log `write` after about 650 lines, and
/// the call was never answered.
#[test]
fn an_unread_stderr_does_not_stall_the_session() {
    let env = TestEnv::new();
    env.write("a.txt", "alive\n");
    let (mut raw, mut err) =
        RawServer::start_with_stderr_unread(&args![env.root(), "--log-level", "debug"], &[]);
    raw.initialize("2025-11-25");
    let bad = "x\n".repeat(5000);
    raw.send_bytes(bad.as_bytes()).expect("send the bad lines");
    let read = raw_reply(&raw.call_tool("read_text_file", json!({"path": "a.txt"})));
    assert_eq!(read.text, "alive\n");
    // Now read stderr to its end, while the server drains and exits.
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = err.read_to_string(&mut text);
        text
    });
    raw.close_stdin();
    let status = raw.wait_exit(Duration::from_secs(20)).expect("tuls exits");
    assert_eq!(status.code(), Some(0), "{status:?}");
    let text = reader.join().expect("stderr reader");
    let parse_errors = text
        .lines()
        .filter(|l| l.contains("is not valid JSON"))
        .count();
    assert!(
        (1..5000).contains(&parse_errors),
        "{parse_errors} parse errors logged"
    );
    assert!(
        text.lines().any(|l| l.starts_with("tuls: warn: ")
            && l.ends_with(" log line(s) dropped: stderr was not read fast enough")),
        "no count of dropped lines in:\n{}",
        text.lines().rev().take(5).collect::<Vec<_>>().join("\n")
    );
}
