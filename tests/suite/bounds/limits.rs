//! Resource bounds (issue 5, §3), over stdio against the real binary: for
//! every bound a call at the limit (served, and a walk result NOT marked
//! truncated) and one past it (a clear error, or a result marked
//! `[truncated: ...]`), each followed by a call that shows the session still
//! works. Walk bounds and the cancellation of a long walk are in
//! [`super::walks`], the server's peak RSS under hostile inputs in
//! [`super::memory`].
//!
//! Numbers are printed to stderr (`cargo test bounds -- --nocapture`).

use std::time::Duration;

use serde_json::{Value, json};

use crate::util::{RawServer, Server, TestEnv, raw_error, raw_reply, status_kib};

use super::still_works;

// ---------------------------------------------------------------------------
// Request lines
// ---------------------------------------------------------------------------

const LINE_MAX: usize = 4096;

/// A `tools/call` reading hello.txt, padded with JSON whitespace to exactly
/// `len` bytes (without its newline).
fn padded_call(id: i64, len: usize) -> String {
    let mut line = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"read_text_file","arguments":{{"path":"hello.txt"}}}}"#
    );
    assert!(line.len() < len);
    line.extend(std::iter::repeat_n(' ', len - 1 - line.len()));
    line.push('}');
    assert_eq!(line.len(), len);
    line
}

#[test]
fn request_line_at_and_past_max_request_bytes() {
    let env = TestEnv::new();
    env.write("hello.txt", "hello\n");
    let mut raw = RawServer::start(&args![
        env.root(),
        "--max-request-bytes",
        LINE_MAX.to_string()
    ]);
    raw.initialize("2025-11-25");

    // Exactly the limit: served.
    raw.send_line(&padded_call(10, LINE_MAX));
    let at = raw_reply(&raw.wait_response(&json!(10)));
    at.assert_ok();
    assert_eq!(at.text, "hello\n");

    // One byte more, id in view: a JSON-RPC error that names the limit.
    raw.send_line(&padded_call(11, LINE_MAX + 1));
    let err = raw_error(&raw.wait_response(&json!(11)));
    assert_eq!(err.code, -32600, "{err:?}");
    for needle in ["too large", "4096", "--max-request-bytes"] {
        assert!(err.message.contains(needle), "{needle:?} not in {err:?}");
    }
    // ...and the next request on the session works.
    let next = raw_reply(&raw.call_tool("read_text_file", json!({"path": "hello.txt"})));
    assert_eq!(next.text, "hello\n");

    // 32 MiB with the id only at its end: never buffered (the server's peak
    // RSS stays far below the line), and answered at `id: null` since its
    // id cannot be known (issue 11).
    let pid = raw.pid();
    let huge = format!(
        r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"read_text_file","arguments":{{"path":"{}"}}}},"id":7777}}"#,
        "a".repeat(32 << 20)
    );
    raw.send_line(&huge);
    drop(huge);
    let after = raw_reply(&raw.call_tool("read_text_file", json!({"path": "hello.txt"})));
    assert_eq!(after.text, "hello\n");
    let mut null_id_errors = 0;
    while let Some(msg) = raw.recv(Duration::from_millis(300)) {
        assert_ne!(msg.get("id"), Some(&json!(7777)), "answered: {msg}");
        if msg["id"].is_null() && msg["error"]["code"] == json!(-32600) {
            null_id_errors += 1;
        }
    }
    assert_eq!(null_id_errors, 1);
    let hwm = status_kib(pid, "VmHWM");
    eprintln!("bounds: peak RSS after a dropped 32 MiB request line: {hwm} KiB");
    assert!(
        hwm < 24 * 1024,
        "a discarded line was buffered: VmHWM {hwm} KiB"
    );
    assert!(
        raw.stderr().contains("discarded a request line"),
        "{}",
        raw.stderr()
    );
    assert!(raw.is_alive());
}

// ---------------------------------------------------------------------------
// Reads
// ---------------------------------------------------------------------------

#[test]
fn read_multiple_files_paths_at_and_past_max_paths() {
    let env = TestEnv::new();
    env.write("a.txt", "A");
    let server = Server::start(&args![env.root(), "--max-paths", "4"]);

    let at = server.call("read_multiple_files", json!({"paths": vec!["a.txt"; 4]}));
    at.assert_ok();
    assert_eq!(at.text.matches("a.txt:\nA\n").count(), 4, "{:?}", at.text);

    let past = server.call("read_multiple_files", json!({"paths": vec!["a.txt"; 5]}));
    past.assert_error_contains("Too many paths: 5 given, the limit is 4");
    still_works(&server);
}

const READ_MAX: usize = 4096;

#[test]
fn whole_reads_at_and_past_max_read_bytes_and_head_tail_still_work() {
    let env = TestEnv::new();
    env.write("exact.txt", "x".repeat(READ_MAX));
    env.write("over.txt", "y".repeat(READ_MAX + 1));
    env.write("exact.png", vec![1u8; READ_MAX]);
    env.write("over.png", vec![2u8; READ_MAX + 1]);
    // Bigger than the 64 KiB chunk head and tail read at a time.
    let log: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
    assert!(log.len() > 128 * 1024);
    env.write("big.log", &log);
    let server = Server::start(&args![env.root(), "--max-read-bytes", READ_MAX.to_string()]);

    let at = server.call("read_text_file", json!({"path": "exact.txt"}));
    at.assert_ok();
    assert_eq!(at.text.len(), READ_MAX);
    server
        .call("read_media_file", json!({"path": "exact.png"}))
        .assert_ok();

    for path in ["over.txt", "big.log"] {
        let r = server.call("read_text_file", json!({ "path": path }));
        r.assert_error_contains("too large");
        for needle in [path, "4096-byte limit", "head", "tail"] {
            assert!(r.text.contains(needle), "{needle:?} not in {:?}", r.text);
        }
    }
    server
        .call("read_text_file", json!({"path": "over.txt"}))
        .assert_error_contains("4097 bytes");
    server
        .call("read_media_file", json!({"path": "over.png"}))
        .assert_error_contains("too large");
    let multi = server.call(
        "read_multiple_files",
        json!({"paths": ["exact.txt", "over.txt"]}),
    );
    multi.assert_ok();
    assert!(
        multi
            .text
            .starts_with(&format!("exact.txt:\n{}\n", "x".repeat(READ_MAX)))
            && multi.text.contains("over.txt: Error - File too large"),
        "{:.200}",
        multi.text
    );

    // head and tail read only what they need of the bigger file...
    let head = server.call("read_text_file", json!({"path": "big.log", "head": 2}));
    assert_eq!(head.text, "line 0\nline 1");
    let tail = server.call("read_text_file", json!({"path": "big.log", "tail": 2}));
    assert_eq!(tail.text, "line 19999\n");
    // ...and refuse to scan past the limit for lines.
    server
        .call("read_text_file", json!({"path": "big.log", "head": 15_000}))
        .assert_error_contains("Refusing to scan more than 4096 bytes");
    server
        .call("read_text_file", json!({"path": "big.log", "tail": 15_000}))
        .assert_error_contains("Refusing to scan more than 4096 bytes");
    still_works(&server);
}

// ---------------------------------------------------------------------------
// Paths and edits
// ---------------------------------------------------------------------------

#[test]
fn path_length_at_and_past_4096_bytes() {
    let env = TestEnv::new();
    env.write("hello.txt", "hello\n");
    let server = Server::start(&args![env.root()]);
    // `.//` repeated: 4096 bytes for the client, well under PATH_MAX for the
    // kernel once repeated slashes are collapsed.
    let path = |len: usize| {
        let mut p = ".//".repeat(1362);
        p.push_str(&"/".repeat(len - p.len() - "hello.txt".len()));
        p.push_str("hello.txt");
        assert_eq!(p.len(), len);
        p
    };
    let at = server.call("read_text_file", json!({"path": path(4096)}));
    at.assert_ok();
    assert_eq!(at.text, "hello\n");
    server
        .call("get_file_info", json!({"path": path(4096)}))
        .assert_ok();

    for tool in ["read_text_file", "get_file_info", "write_file"] {
        let mut args = json!({"path": path(4097)});
        if tool == "write_file" {
            args["content"] = json!("x");
        }
        server
            .call(tool, args)
            .assert_error_contains("longer than the path limit");
    }
    assert_eq!(env.read_string("hello.txt"), "hello\n");
    still_works(&server);
}

#[test]
fn edits_per_call_at_and_past_1024() {
    let env = TestEnv::new();
    let original: String = (0..1025).map(|i| format!("x{i:04}\n")).collect();
    env.write("e.txt", &original);
    let server = Server::start(&args![env.root()]);
    let edits = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|i| json!({"oldText": format!("x{i:04}\n"), "newText": format!("y{i:04}\n")}))
            .collect()
    };

    let past = server.call("edit_file", json!({"path": "e.txt", "edits": edits(1025)}));
    past.assert_error_contains("Too many edits: 1025 in one call, over the limit of 1024");
    assert_eq!(env.read_string("e.txt"), original, "nothing is written");

    server
        .call("edit_file", json!({"path": "e.txt", "edits": edits(1024)}))
        .assert_ok();
    let edited = env.read_string("e.txt");
    assert_eq!(edited.matches('y').count(), 1024);
    assert!(edited.ends_with("y1023\nx1024\n"), "{edited:.100}");
    still_works(&server);
}
