//! Direct tool calls (`src/mcp/direct.rs`): a `tools/call` that bypasses
//! rmcp's per-request path must answer exactly as rmcp's path does, and
//! every call gets its answer, also when input ends right after it.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::*;

/// The reply without its id.
fn without_id(mut v: Value) -> Value {
    v.as_object_mut().map(|o| o.remove("id"));
    v
}

/// The same calls, once plain (taken directly) and once with a `_meta` key
/// that sends them through rmcp, give identical replies; rmcp's own debug
/// log shows which path each took.
#[test]
fn direct_calls_answer_exactly_as_rmcp_does() {
    let env = TestEnv::new();
    env.write("a.txt", "hello\nworld\n");
    env.write("d/b.md", "# b\n");
    let mut server =
        RawServer::start_with_env(&args![env.root()], &[("RUST_LOG", "tuls=info,rmcp=debug")]);
    server.initialize("2025-06-18");
    let calls = [
        ("read_text_file", json!({"path": "a.txt"})),
        ("read_text_file", json!({"path": "a.txt", "head": 1})),
        ("read_text_file", json!({"path": "missing.txt"})),
        ("read_text_file", json!({"path": "a.txt", "bogus": 1})),
        ("read_text_file", json!({"path": "../outside/canary.txt"})),
        ("list_directory", json!({"path": "."})),
        ("directory_tree", json!({"path": "."})),
        ("get_file_info", json!({"path": "a.txt"})),
        ("search_file_contents", json!({"path": ".", "pattern": "o"})),
        ("list_allowed_directories", json!({})),
    ];
    for (i, (tool, args)) in calls.iter().enumerate() {
        let direct = server.request_with_id(
            json!(1000 + i),
            "tools/call",
            json!({"name": tool, "arguments": args}),
        );
        let routed = server.request_with_id(
            json!(2000 + i),
            "tools/call",
            json!({"name": tool, "arguments": args, "_meta": {"tuls.test/route": "rmcp"}}),
        );
        assert!(direct.get("result").is_some(), "{tool}: {direct}");
        assert_eq!(
            without_id(direct),
            without_id(routed),
            "{tool} {args}: the direct reply differs from rmcp's"
        );
    }
    // A tool that is not enabled is refused by rmcp on both paths.
    let refused = server.request("tools/call", json!({"name": "nope", "arguments": {}}));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");

    server.close_stdin();
    assert!(server.wait_exit(Duration::from_secs(20)).is_some());
    let log = server.stderr();
    for i in 0..calls.len() {
        assert!(
            log.contains(&format!("id={}", 2000 + i)),
            "rmcp did not handle the routed call {}:\n{log}",
            2000 + i
        );
        assert!(
            !log.contains(&format!("id={}", 1000 + i)),
            "rmcp handled the plain call {}: it was not taken directly",
            1000 + i
        );
    }
}

/// A burst of calls, the last ones slow, followed at once by the end of
/// input: every call is answered, once, before the server exits.
#[test]
fn every_call_is_answered_when_input_ends_right_after_it() {
    const CALLS: u64 = 3000;
    const SLOW: u64 = 8;
    let env = TestEnv::new();
    env.write("a.txt", "hello\n");
    for i in 0..4000 {
        env.write(format!("t/d{}/f{i}.txt", i % 40), "x\n");
    }
    let mut server = RawServer::start(&args![env.root(), "--max-reply-chars", "0"]);
    server.initialize("2025-06-18");
    let mut burst = String::new();
    for id in 1..=CALLS + SLOW {
        let params = if id <= CALLS {
            json!({"name": "read_text_file", "arguments": {"path": "a.txt"}})
        } else {
            json!({"name": "directory_tree", "arguments": {"path": "t"}})
        };
        burst.push_str(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
                .to_string(),
        );
        burst.push('\n');
    }
    server
        .send_bytes(burst.as_bytes())
        .expect("write the burst");
    server.close_stdin();
    let mut seen = BTreeSet::new();
    while let Some(msg) = server.recv(Duration::from_secs(20)) {
        let id = msg["id"].as_u64().expect("a reply with a numeric id");
        let text = msg["result"]["content"][0]["text"].as_str().unwrap_or("");
        if id <= CALLS {
            assert_eq!(text, "hello\n", "{msg}");
        } else {
            assert_eq!(text.matches("\"type\": \"file\"").count(), 4000, "{id}");
        }
        assert!(seen.insert(id), "id {id} answered twice");
    }
    let missing: Vec<u64> = (1..=CALLS + SLOW).filter(|id| !seen.contains(id)).collect();
    assert!(missing.is_empty(), "unanswered: {missing:?}");
    assert!(server.wait_exit(Duration::from_secs(20)).is_some());
}

/// A stateless 2026-07-28 call (no `initialize`) stays on rmcp's path,
/// which checks its `_meta` and shapes its result for that protocol.
#[test]
fn stateless_calls_stay_on_rmcps_path() {
    let env = TestEnv::new();
    env.write("a.txt", "hello\n");
    let mut server =
        RawServer::start_with_env(&args![env.root()], &[("RUST_LOG", "tuls=info,rmcp=debug")]);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let r = server.request_with_id(
        json!(77),
        "tools/call",
        json!({"name": "read_text_file", "arguments": {"path": "a.txt"}, "_meta": meta}),
    );
    assert_eq!(r["result"]["content"][0]["text"], "hello\n", "{r}");
    server.close_stdin();
    assert!(server.wait_exit(Duration::from_secs(20)).is_some());
    assert!(
        server.stderr().contains("id=77"),
        "rmcp did not handle the call: {r}"
    );
}

/// A direct call cancelled while it waits (here for client roots that never
/// come) gets no reply, as rmcp drops a cancelled call's reply; the session
/// goes on.
#[test]
fn a_cancelled_direct_call_gets_no_reply() {
    let env = TestEnv::new();
    env.write("a.txt", "hello\n");
    let mut server = RawServer::start(&args![env.root(), "--roots-timeout-secs", "1"]);
    server.initialize_with("2025-06-18", json!({"roots": {"listChanged": true}}));
    let call = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "read_text_file", "arguments": {"path": "a.txt"}}})
    };
    server.send(&call(5));
    server.notify(
        "notifications/cancelled",
        json!({"requestId": 5, "reason": "test"}),
    );
    server.send(&call(6));
    let mut answered = Vec::new();
    while let Some(msg) = server.recv(Duration::from_secs(3)) {
        if msg.get("method").is_none() {
            answered.push(msg["id"].clone());
        }
    }
    assert_eq!(
        answered,
        vec![json!(6)],
        "only the call not cancelled is answered"
    );
}
