//! One request path (`src/mcp/call.rs`): every `tools/call`, of either
//! protocol era and with any `_meta`, is run and answered by tuls's call
//! lifecycle, never by rmcp's handler; every call gets its answer, also
//! when input ends right after it; a cancelled call gets none.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::*;

/// The reply without its id.
fn without_id(mut v: Value) -> Value {
    v.as_object_mut().map(|o| o.remove("id"));
    v
}

/// Whether rmcp's own debug log shows that rmcp's service received the
/// request with this id.
fn rmcp_received(log: &str, id: &str) -> bool {
    log.lines()
        .any(|l| l.contains("received request") && l.contains(&format!("id={id}")))
}

/// The 2026-07-28 `_meta` a stateless request carries.
fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// The same calls, plain, with another `_meta` key, and with a 2026-07-28
/// `_meta` in a handshake session: the first two answer identically, the
/// third as the 2026-07-28 era shapes it; none reaches rmcp's service
/// (its debug log names every request it receives: `tools/list` does).
#[test]
fn every_call_of_either_era_is_answered_by_the_one_path() {
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
        let plain = server.request_with_id(
            json!(1000 + i),
            "tools/call",
            json!({"name": tool, "arguments": args}),
        );
        let other_meta = server.request_with_id(
            json!(2000 + i),
            "tools/call",
            json!({"name": tool, "arguments": args, "_meta": {"tuls.test/any": 1}}),
        );
        let modern = server.request_with_id(
            json!(3000 + i),
            "tools/call",
            json!({"name": tool, "arguments": args, "_meta": modern_meta()}),
        );
        assert!(plain.get("result").is_some(), "{tool}: {plain}");
        assert!(plain["result"].get("_meta").is_none(), "{plain}");
        assert_eq!(
            without_id(plain.clone()),
            without_id(other_meta),
            "{tool} {args}: another _meta key changed the reply"
        );
        assert_eq!(
            modern["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "tuls",
            "{modern}"
        );
        assert_eq!(modern["result"]["resultType"], "complete", "{modern}");
        let mut modern = modern;
        for key in ["_meta", "resultType"] {
            modern["result"].as_object_mut().map(|o| o.remove(key));
        }
        assert_eq!(
            without_id(plain),
            without_id(modern),
            "{tool} {args}: the 2026-07-28 reply differs beyond its era's fields"
        );
    }
    // A tool that is not enabled, in either era: -32602, as an unknown tool.
    for meta in [json!({}), modern_meta()] {
        let refused = server.request(
            "tools/call",
            json!({"name": "nope", "arguments": {}, "_meta": meta}),
        );
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        assert_eq!(
            refused["error"]["message"], "Tool nope not found",
            "{refused}"
        );
    }
    // 2026-07-28 `_meta` without its capabilities: rmcp's refusal.
    let bad = server.request(
        "tools/call",
        json!({"name": "read_text_file", "arguments": {"path": "a.txt"},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
    );
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("clientCapabilities")),
        "{bad}"
    );
    server.request_with_id(json!(4242), "tools/list", json!({}));

    server.close_stdin();
    assert!(server.wait_exit(Duration::from_secs(20)).is_some());
    let log = server.stderr();
    assert!(
        rmcp_received(&log, "4242"),
        "rmcp's log does not name the tools/list it answered:\n{log}"
    );
    for i in 0..calls.len() {
        for base in [1000, 2000, 3000] {
            assert!(
                !rmcp_received(&log, &(base + i).to_string()),
                "rmcp's service received the call {}",
                base + i
            );
        }
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

/// A stateless 2026-07-28 call (no `initialize`) is answered by the one
/// path, shaped for that protocol, and opens the inline lifecycle for rmcp
/// too: a later `ping` without `_meta` is refused as that lifecycle
/// refuses it (before any lifecycle, rmcp answers it). A call without the
/// `_meta` the inline lifecycle needs is refused with rmcp's error, before
/// and after it opens.
#[test]
fn stateless_calls_are_answered_by_the_one_path_and_open_the_lifecycle() {
    let env = TestEnv::new();
    env.write("a.txt", "hello\n");
    let mut server =
        RawServer::start_with_env(&args![env.root()], &[("RUST_LOG", "tuls=info,rmcp=debug")]);
    let call = |meta: Value| json!({"name": "read_text_file", "arguments": {"path": "a.txt"}, "_meta": meta});
    let missing = "request _meta is missing or has malformed required fields: \
        io.modelcontextprotocol/protocolVersion, io.modelcontextprotocol/clientCapabilities";
    let early = server.request_with_id(json!(70), "tools/call", call(json!({})));
    assert_eq!(early["error"]["code"], -32602, "{early}");
    assert_eq!(early["error"]["message"], missing, "{early}");
    let pre_ping = server.request_with_id(json!(71), "ping", json!({}));
    assert_eq!(pre_ping["result"], json!({}), "{pre_ping}");

    let r = server.request_with_id(json!(77), "tools/call", call(modern_meta()));
    assert_eq!(r["result"]["content"][0]["text"], "hello\n", "{r}");
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert_eq!(
        r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "tuls",
        "{r}"
    );
    let ping = server.request_with_id(json!(78), "ping", json!({}));
    assert_eq!(ping["error"]["code"], -32602, "{ping}");
    assert_eq!(ping["error"]["message"], missing, "{ping}");
    let late = server.request_with_id(json!(79), "tools/call", call(json!({})));
    assert_eq!(late["error"]["message"], missing, "{late}");
    // Nothing else was written: the opener's own reply is dropped.
    assert!(server.recv(Duration::from_millis(300)).is_none());

    server.close_stdin();
    assert!(server.wait_exit(Duration::from_secs(20)).is_some());
    let log = server.stderr();
    assert!(rmcp_received(&log, "78"), "{log}");
    for id in ["70", "77", "79"] {
        assert!(!rmcp_received(&log, id), "rmcp received the call {id}");
    }
}

/// A call cancelled while it waits (here for client roots that never
/// come) gets no reply, as rmcp drops a cancelled request's reply; the
/// session goes on.
#[test]
fn a_cancelled_call_gets_no_reply() {
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
    let answered: Vec<Value> = server
        .replies_until_quiet(Duration::from_secs(3))
        .into_iter()
        .map(|msg| msg["id"].clone())
        .collect();
    assert_eq!(
        answered,
        vec![json!(6)],
        "only the call not cancelled is answered"
    );
}

/// Requests that share an id while the first is still running (here,
/// waiting for client roots that never come) each get an answer: the first
/// its result, each later one an Invalid Request error at once. Before,
/// the table of requests in flight kept one entry per id, so the first
/// reply took it and the later calls' replies were dropped as if
/// cancelled: requests left unanswered (the session fuzzer's F6).
#[test]
fn requests_sharing_an_id_in_flight_are_each_answered() {
    let env = TestEnv::new();
    env.write("a.txt", "hello\n");
    let mut server = RawServer::start(&args![env.root(), "--roots-timeout-secs", "1"]);
    server.initialize_with("2025-06-18", json!({"roots": {"listChanged": true}}));
    let call = |id: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "read_text_file", "arguments": {"path": "a.txt"}}})
    };
    for _ in 0..3 {
        server.send(&call(json!("")));
    }
    server.send(&json!({"jsonrpc": "2.0", "id": "", "method": "tools/list"}));
    server.send(&call(json!(7)));
    let replies = server.replies_until_quiet(Duration::from_secs(4));
    let ids: Vec<&Value> = replies.iter().map(|r| &r["id"]).collect();
    assert_eq!(
        ids.iter().filter(|id| **id == &json!("")).count(),
        4,
        "each of the four requests with id \"\" is answered: {replies:?}"
    );
    assert_eq!(
        ids.iter().filter(|id| **id == &json!(7)).count(),
        1,
        "{replies:?}"
    );
    let refused: Vec<&Value> = replies
        .iter()
        .filter(|r| r["error"]["code"] == json!(-32600))
        .collect();
    assert_eq!(
        refused.len(),
        3,
        "the three later ones are refused: {replies:?}"
    );
    for r in refused {
        let text = r["error"]["message"].as_str().unwrap_or_default();
        assert!(text.contains("already in use"), "{text}");
    }
    assert!(server.is_alive());
}

/// An id freed by a cancellation may be used again at once, while the
/// cancelled call still runs: the new request gets its own answer, and the
/// cancelled one none. Both calls wait for the client's roots, then run
/// together: the cancelled one (a missing file's info) ends first, the new
/// one (a content search) later. Before, the cancelled call, ending, took
/// the new request's entry and its reply went out in the new request's
/// place; the new request's own reply was then dropped as cancelled.
#[test]
fn an_id_reused_after_its_cancellation_gets_its_own_answer() {
    let env = TestEnv::new();
    let filler = "a line of filler text for the search to go through\n".repeat(1200);
    for i in 0..200 {
        env.write(format!("big/f{i:03}.txt"), &filler);
    }
    env.write("big/f200.txt", "second-marker\n");
    let mut server = RawServer::start(&args![env.root(), "--roots-timeout-secs", "20"]);
    server.initialize_with("2025-06-18", json!({"roots": {"listChanged": true}}));
    let roots_request = loop {
        let Some(msg) = server.recv(Duration::from_secs(10)) else {
            panic!("no roots/list request came");
        };
        if msg["method"] == "roots/list" {
            break msg["id"].clone();
        }
    };
    server.send(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "get_file_info", "arguments": {"path": "first.txt"}}}));
    server.notify(
        "notifications/cancelled",
        json!({"requestId": 5, "reason": "test"}),
    );
    server.send(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "search_file_contents",
            "arguments": {"path": "big", "pattern": "second-marker", "literal": true}}}));
    answer_roots(&mut server, &roots_request, &[file_uri(env.root())]);
    let replies = server.replies_until_quiet(Duration::from_secs(4));
    assert_eq!(
        replies.len(),
        1,
        "one answer, the second request's: {replies:?}"
    );
    let text = replies[0].to_string();
    assert!(
        text.contains("second-marker") && !text.contains("first.txt"),
        "the answer is the second request's: {text}"
    );
}
