//! MCP-level behaviour over stdio (`tools/list` itself is in
//! [`super::tools_list`]): `structuredContent` mirroring the
//! text, unknown fields refused without effect, unknown or disabled tools as
//! JSON-RPC -32602, concurrent calls, the two protocol versions, and stdout
//! carrying nothing but JSON-RPC.

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::model::ProtocolVersion;
use serde_json::{Value, json};

use crate::util::{Options, READ_TOOLS, RawServer, Server, TestEnv, raw_error, raw_reply};

pub(super) fn raw_session(env: &TestEnv, extra: &[&str]) -> RawServer {
    let mut a = args![env.root()];
    a.extend(extra.iter().map(Into::into));
    let mut raw = RawServer::start(&a);
    raw.initialize("2025-06-18");
    raw
}

pub(super) fn tools_list(raw: &mut RawServer) -> Vec<Value> {
    let resp = raw.request("tools/list", json!({}));
    resp["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools/list: {resp}"))
        .clone()
}

/// On the wire, every successful result of every read tool has exactly one
/// content block and `structuredContent` mirroring it; errors have none.
#[test]
fn structured_content_mirrors_content_on_the_wire() {
    let env = TestEnv::new();
    env.write("a.txt", "alpha\n");
    env.write("img.png", b"\x89PNG");
    env.write("doc.bin", [0u8, 1, 2]);
    env.write("sub/b.txt", "beta\n");
    // Long enough to be escaped once and spliced in twice by the writer.
    env.write("long.txt", "0123456789\n".repeat(1000));
    let mut raw = raw_session(&env, &[]);
    let root = env.root().display().to_string();
    let calls = [
        ("read_text_file", json!({"path": "a.txt"})),
        ("read_text_file", json!({"path": "a.txt", "head": 1})),
        ("read_text_file", json!({"path": "long.txt"})),
        ("read_media_file", json!({"path": "img.png"})),
        ("read_media_file", json!({"path": "doc.bin"})),
        ("read_multiple_files", json!({"paths": ["a.txt", "nope"]})),
        ("list_directory", json!({"path": root})),
        ("list_directory_with_sizes", json!({"path": "."})),
        ("directory_tree", json!({"path": "."})),
        ("search_files", json!({"path": ".", "pattern": "**/*.txt"})),
        ("search_files", json!({"path": ".", "pattern": "*.none"})),
        ("get_file_info", json!({"path": "a.txt"})),
        ("list_allowed_directories", json!({})),
    ];
    for (tool, args) in calls {
        let resp = raw.call_tool(tool, args.clone());
        let result = &resp["result"];
        assert_ne!(result["isError"], json!(true), "{tool} {args}: {resp}");
        let content = result["content"].as_array().expect("content array");
        assert_eq!(content.len(), 1, "{tool}: one content block: {resp}");
        let expected = if tool == "read_media_file" {
            json!({ "content": [content[0].clone()] })
        } else {
            assert_eq!(content[0]["type"], json!("text"));
            json!({ "content": content[0]["text"].clone() })
        };
        // Beside the mirror, a read of a file adds its version.
        let mut structured = result["structuredContent"].clone();
        let version = structured
            .as_object_mut()
            .and_then(|o| o.remove("version").or_else(|| o.remove("versions")));
        let reads_a_file = ["read_text_file", "read_media_file", "read_multiple_files"]
            .contains(&tool)
            || (tool == "get_file_info");
        assert_eq!(version.is_some(), reads_a_file, "{tool}: {resp}");
        assert_eq!(structured, expected, "{tool}: {resp}");
    }
    for (tool, args) in [
        ("read_text_file", json!({"path": "nope"})),
        ("read_media_file", json!({"path": "sub"})),
        ("list_directory", json!({"path": "a.txt"})),
        ("get_file_info", json!({"path": ".."})),
    ] {
        let resp = raw.call_tool(tool, args);
        let result = &resp["result"];
        assert_eq!(result["isError"], json!(true), "{tool}: {resp}");
        assert!(result.get("structuredContent").is_none(), "{tool}: {resp}");
        assert_eq!(result["content"].as_array().map(Vec::len), Some(1));
    }
}

/// An unknown field anywhere is an `isError` result naming it, and the call
/// has no effect, for every tool.
#[test]
fn unknown_fields_are_refused_without_effect() {
    let env = TestEnv::new();
    env.write("a.txt", "alpha\n");
    env.write("b.txt", "beta\n");
    let server = Server::start(&args![env.root()]);
    let root_before = env.snapshot("");
    let outside_before = env.snapshot_outside();
    let calls = [
        ("read_text_file", json!({"path": "a.txt", "bogus": 1})),
        ("read_text_file", json!({"path": "a.txt", "Head": 1})),
        ("read_media_file", json!({"path": "a.txt", "bogus": true})),
        (
            "read_multiple_files",
            json!({"paths": ["a.txt"], "bogus": null}),
        ),
        (
            "write_file",
            json!({"path": "new.txt", "content": "x", "bogus": 1}),
        ),
        (
            "write_file",
            json!({"path": "a.txt", "content": "clobbered", "dryRun": true}),
        ),
        (
            "edit_file",
            json!({"path": "a.txt", "edits": [{"oldText": "alpha", "newText": "omega"}], "bogus": 1}),
        ),
        (
            "edit_file",
            json!({"path": "a.txt", "edits": [{"oldText": "alpha", "newText": "omega", "bogus": 1}]}),
        ),
        ("create_directory", json!({"path": "newdir", "bogus": 1})),
        (
            "create_directory",
            json!({"path": "newdir", "recursive": true}),
        ),
        ("list_directory", json!({"path": ".", "bogus": 1})),
        (
            "list_directory_with_sizes",
            json!({"path": ".", "bogus": 1}),
        ),
        ("directory_tree", json!({"path": ".", "levels": 1})),
        (
            "search_files",
            json!({"path": ".", "pattern": "*", "bogus": 1}),
        ),
        ("get_file_info", json!({"path": "a.txt", "bogus": 1})),
        (
            "move_file",
            json!({"source": "b.txt", "destination": "c.txt", "bogus": 1}),
        ),
        (
            "move_file",
            json!({"source": "b.txt", "destination": "c.txt", "overwrite": true}),
        ),
        ("list_allowed_directories", json!({"bogus": 1})),
    ];
    for (tool, args) in calls {
        let reply = server.call(tool, args.clone());
        reply.assert_error_contains("unknown field");
        assert!(reply.structured.is_none(), "{tool}");
        assert!(
            !reply.text.contains("alpha") && !reply.text.contains("beta"),
            "{tool} {args}: {}",
            reply.text
        );
    }
    root_before.assert_same(&env.snapshot(""), "root");
    outside_before.assert_same(&env.snapshot_outside(), "outside");
    assert!(!env.exists("new.txt") && !env.exists("newdir") && !env.exists("c.txt"));
}

#[test]
fn unknown_and_disabled_tools_are_jsonrpc_errors() {
    let env = TestEnv::new();
    env.write("a.txt", "alpha\n");
    let server = Server::start(&args![env.root()]);
    for name in ["no_such_tool", "read_files", "READ_TEXT_FILE", ""] {
        let err = server.call_expect_rpc_error(name, json!({"path": "a.txt"}));
        assert_eq!(err.code, -32602, "{name}");
        assert_eq!(err.message, format!("Tool {name} not found"));
    }
    // A disabled tool is refused exactly as an unknown one, before its
    // arguments are looked at, and is not listed.
    let server = Server::start(&args![env.root(), "--allow", "filesystem.read"]);
    let names = server.tool_names();
    assert_eq!(names, READ_TOOLS, "read-only tool list");
    for (name, args) in [
        ("write_file", json!({"path": "x.txt", "content": "x"})),
        ("create_directory", json!({"path": "d"})),
        (
            "move_file",
            json!({"source": "a.txt", "destination": "b.txt"}),
        ),
        ("edit_file", json!({"bogus": 1})),
    ] {
        let err = server.call_expect_rpc_error(name, args);
        assert_eq!(err.code, -32602, "{name}");
        assert_eq!(err.message, format!("Tool {name} not found"));
    }
    assert!(!env.exists("x.txt") && !env.exists("d") && env.exists("a.txt"));
    server
        .call("read_text_file", json!({"path": "a.txt"}))
        .assert_ok();

    let server = Server::start(&args![env.root(), "--deny", "filesystem/read_media_file"]);
    assert!(!server.tool_names().iter().any(|n| n == "read_media_file"));
    let err = server.call_expect_rpc_error("read_media_file", json!({"path": "a.txt"}));
    assert_eq!(
        (err.code, err.message.as_str()),
        (-32602, "Tool read_media_file not found")
    );
}

/// Several std threads share one server; every answer is the right one.
#[test]
fn concurrent_calls_from_several_threads_get_correct_answers() {
    let env = TestEnv::new();
    const THREADS: usize = 8;
    const ROUNDS: usize = 25;
    for t in 0..THREADS {
        for i in 0..ROUNDS {
            env.write(format!("t{t}/f{i}.txt"), format!("thread {t} file {i}\n"));
        }
    }
    for i in 0..300 {
        env.write(format!("big/d{}/x{i}.txt", i % 10), "");
    }
    let server = Server::start(&args![env.root()]);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let server = &server;
            s.spawn(move || {
                for i in 0..ROUNDS {
                    let path = format!("t{t}/f{i}.txt");
                    let want = format!("thread {t} file {i}\n");
                    match (t + i) % 5 {
                        0 => {
                            let r = server.call("read_text_file", json!({ "path": path }));
                            assert_eq!(r.text, want, "thread {t} round {i}");
                        }
                        1 => {
                            let r = server.call(
                                "read_multiple_files",
                                json!({"paths": [path, format!("t{t}/f0.txt")]}),
                            );
                            assert_eq!(
                                r.text,
                                format!(
                                    "{path}:\n{want}\n\n---\nt{t}/f0.txt:\nthread {t} file 0\n\n"
                                )
                            );
                        }
                        2 => {
                            let r = server.call(
                                "search_files",
                                json!({"path": format!("t{t}"), "pattern": format!("f{i}.txt")}),
                            );
                            assert_eq!(r.text, format!("t{t}/f{i}.txt"));
                        }
                        3 => {
                            let r = server.call("get_file_info", json!({ "path": path }));
                            assert!(
                                r.text.starts_with(&format!("size: {}\n", want.len())),
                                "{}",
                                r.text
                            );
                        }
                        _ => {
                            let r = server.call("directory_tree", json!({"path": "big"}));
                            r.assert_ok();
                            assert_eq!(r.text.matches("\"type\": \"file\"").count(), 300);
                            let r = server.call("list_directory", json!({"path": format!("t{t}")}));
                            assert_eq!(r.text.lines().count(), ROUNDS);
                            assert!(r.text.lines().all(|l| l.starts_with("[FILE] f")));
                        }
                    }
                }
            });
        }
    });
}

/// Many requests written at once, without waiting: every response comes
/// back with its own id and its own answer.
#[test]
fn pipelined_requests_are_answered_by_id() {
    let env = TestEnv::new();
    for i in 0..40 {
        env.write(format!("f{i}.txt"), format!("content {i}"));
    }
    let mut raw = raw_session(&env, &[]);
    for i in 0..40 {
        raw.send(
            &json!({"jsonrpc": "2.0", "id": format!("req-{i}"), "method": "tools/call",
            "params": {"name": "read_text_file", "arguments": {"path": format!("f{i}.txt")}}}),
        );
    }
    // Collect by id (`wait_response` does not look at already-queued
    // messages, so read them all here).
    let mut answers = BTreeMap::new();
    while answers.len() < 40 {
        let msg = raw
            .recv(Duration::from_secs(30))
            .unwrap_or_else(|| panic!("only {} of 40 answers", answers.len()));
        let id = msg["id"].as_str().expect("string id").to_owned();
        assert!(answers.insert(id, msg).is_none(), "duplicate answer");
    }
    for i in 0..40 {
        let resp = &answers[&format!("req-{i}")];
        assert_eq!(raw_reply(resp).text, format!("content {i}"));
    }
}

#[test]
fn initialize_with_both_protocol_versions() {
    let env = TestEnv::new();
    env.write("a.txt", "alpha\n");
    for version in ["2025-06-18", "2025-11-25"] {
        let mut raw = RawServer::start(&args![env.root()]);
        let result = raw.initialize(version);
        assert_eq!(result["protocolVersion"], json!(version), "{result}");
        assert_eq!(result["serverInfo"]["name"], json!("tuls"), "{result}");
        assert!(result["capabilities"]["tools"].is_object(), "{result}");
        assert_eq!(tools_list(&mut raw).len(), 17);
        let resp = raw.call_tool("read_text_file", json!({"path": "a.txt"}));
        assert_eq!(raw_reply(&resp).text, "alpha\n");
        // Unknown methods get a JSON-RPC error, and the session goes on.
        let err = raw_error(&raw.request("prompts/list", json!({})));
        assert_eq!(err.code, -32601, "{err:?}");
        let pong = raw.request("ping", json!({}));
        assert!(pong.get("result").is_some(), "{pong}");
    }
    // The rmcp client negotiates both as well.
    for v in [ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_11_25] {
        let server = Server::start_with(
            &args![env.root()],
            Options::new().protocol_version(v.clone()),
        );
        let info = server.server_info().expect("server info");
        assert_eq!(info["protocolVersion"], json!(v.to_string()));
        assert_eq!(
            server.call("read_text_file", json!({"path": "a.txt"})).text,
            "alpha\n"
        );
    }
}

/// stdout carries one JSON-RPC message per line and nothing else, through
/// successes, errors, junk input and shutdown, with verbose logging on.
#[test]
fn stdout_carries_only_json_rpc() {
    let env = TestEnv::new();
    env.write("a.txt", "alpha\n");
    env.mkfifo("pipe");
    let mut raw = RawServer::start_with_env(
        &args![env.root(), "--log-level", "trace"],
        &[("RUST_LOG", "trace")],
    );
    raw.initialize("2025-11-25");
    let _ = tools_list(&mut raw);
    raw.call_tool("read_text_file", json!({"path": "a.txt"}));
    raw.call_tool("read_text_file", json!({"path": "pipe"}));
    raw.call_tool("read_text_file", json!({"path": "../outside/canary.txt"}));
    raw.call_tool("read_media_file", json!({"path": "a.txt"}));
    raw.call_tool("directory_tree", json!({"path": "."}));
    raw.call_tool("read_text_file", json!({"path": "a.txt", "bogus": 1}));
    raw.request("tools/call", json!({"name": "nope", "arguments": {}}));
    raw.request("no/such/method", json!({}));
    raw.send_line("this is not json");
    raw.send_line("{\"jsonrpc\": \"2.0\", \"id\": 99, \"method\": ");
    raw.send_line("");
    raw.notify("notifications/cancelled", json!({"requestId": 12345}));
    // The session survives all of that.
    let resp = raw.call_tool("read_text_file", json!({"path": "a.txt"}));
    assert_eq!(raw_reply(&resp).text, "alpha\n");
    raw.close_stdin();
    assert!(
        raw.wait_exit(Duration::from_secs(10)).is_some(),
        "tuls did not exit on EOF"
    );
    // Every remaining line must be JSON-RPC too (recv panics otherwise).
    while let Some(msg) = raw.recv(Duration::from_millis(500)) {
        assert_eq!(msg["jsonrpc"], json!("2.0"), "{msg}");
    }
    assert!(!raw.stderr().is_empty(), "logs go to stderr");
}

/// Every failed call is logged with its kind: `debug` for the client's
/// doing (escape, arguments, refused, os), `warn` for tuls's own failures;
/// each line names the call (tool and request id).
#[test]
fn failed_calls_are_logged_with_their_kind() {
    let env = TestEnv::new();
    env.write("a.txt", "alpha\n");
    env.mkfifo("pipe");
    let mut raw = RawServer::start_with_env(
        &args![env.root(), "--log-level", "debug"],
        &[("TULS_DEBUG_PANIC_TOOL", "get_file_info")],
    );
    raw.initialize("2025-11-25");
    for (args, kind) in [
        (json!({"path": "../outside/canary.txt"}), "escape"),
        (json!({"path": "a.txt", "head": 1, "tail": 1}), "arguments"),
        (json!({"path": "pipe"}), "refused"),
        (json!({"path": "missing.txt"}), "os"),
    ] {
        let resp = raw.call_tool("read_text_file", args.clone());
        let reply = raw_reply(&resp);
        assert!(reply.is_error, "{args}: {}", reply.text);
        // The line ends with the call it belongs to: tool and request id.
        let line = format!(
            "tuls: debug: tool call failed: {} kind={kind} tool=\"read_text_file\" id={}",
            reply.text, resp["id"]
        );
        wait_for_log(&raw, &line);
    }
    let resp = raw.call_tool("get_file_info", json!({"path": "a.txt"}));
    let reply = raw_reply(&resp);
    assert!(reply.is_error, "{}", reply.text);
    wait_for_log(
        &raw,
        &format!(
            "tuls: warn: tool call failed: {} kind=internal tool=\"get_file_info\" id={}",
            reply.text, resp["id"]
        ),
    );
    // At the default level, a client's failed call logs nothing.
    let mut quiet = raw_session(&env, &[]);
    let reply = raw_reply(&quiet.call_tool("read_text_file", json!({"path": "missing.txt"})));
    assert!(reply.is_error, "{}", reply.text);
    quiet.close_stdin();
    assert!(quiet.wait_exit(Duration::from_secs(10)).is_some());
    assert!(
        !quiet.stderr().contains("tool call failed"),
        "{}",
        quiet.stderr()
    );
}

/// Waits (up to 10 s) for `line` on `raw`'s stderr.
fn wait_for_log(raw: &RawServer, line: &str) {
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while !raw.stderr().lines().any(|l| l == line) {
        assert!(
            std::time::Instant::now() < until,
            "no log line {line:?} in:\n{}",
            raw.stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A panic inside one tool call becomes an `isError` result for that call;
/// the server goes on serving (debug builds honour TULS_DEBUG_PANIC_TOOL).
#[test]
fn a_panicking_tool_call_is_an_error_result_and_the_server_goes_on() {
    let env = TestEnv::new();
    env.write("a.txt", b"alive\n");
    let server = Server::start_with(
        &args![env.root()],
        Options::new().env("TULS_DEBUG_PANIC_TOOL", "get_file_info"),
    );
    let reply = server.call("get_file_info", json!({"path": env.path_str("a.txt")}));
    reply.assert_error_contains("internal error in tool get_file_info");
    let again = server.call("read_text_file", json!({"path": env.path_str("a.txt")}));
    assert_eq!(again.assert_ok().text, "alive\n");
    let twice = server.call("get_file_info", json!({"path": env.path_str("a.txt")}));
    twice.assert_error();
}

/// Stderr belongs to the host, which may close it or stop reading it. With
/// stderr a broken pipe from the start, the server still starts, answers
/// every call (a failed one, which logs at `debug`, and a panicking one,
/// which the panic hook logs) and exits 0 at end of input. Before the fix,
/// the first startup line's EPIPE panicked, the panic hook's log line
/// panicked again, and the process aborted (SIGABRT) before `initialize`.
#[test]
fn a_closed_stderr_does_not_stop_the_server() {
    let env = TestEnv::new();
    env.write("a.txt", "alive\n");
    let mut raw = RawServer::start_with_stderr_closed(
        &args![env.root(), "--log-level", "debug"],
        &[("TULS_DEBUG_PANIC_TOOL", "get_file_info")],
    );
    raw.initialize("2025-11-25");
    let missing = raw_reply(&raw.call_tool("read_text_file", json!({"path": "missing.txt"})));
    assert!(missing.is_error, "{}", missing.text);
    let panicked = raw_reply(&raw.call_tool("get_file_info", json!({"path": "a.txt"})));
    assert!(
        panicked.is_error
            && panicked
                .text
                .contains("Internal error in tool get_file_info"),
        "{}",
        panicked.text
    );
    let read = raw_reply(&raw.call_tool("read_text_file", json!({"path": "a.txt"})));
    assert_eq!(read.text, "alive\n");
    raw.close_stdin();
    let status = raw.wait_exit(Duration::from_secs(20)).expect("tuls exits");
    assert_eq!(status.code(), Some(0), "{status:?}");
}
