//! Issue 15, item 1: an empty client roots list narrows nothing (today's MCP
//! Inspector declares roots and answers `[]`); a non-empty list of which no
//! root lies inside the operator's directories gives no access, and every
//! refusal and `list_allowed_directories` say why, naming the client's roots.
//! 2026-07-28 sessions never use client roots.

use std::time::Duration;

use rmcp::model::ProtocolVersion;
use serde_json::json;

use crate::util::{Options, RawServer, Server, TestEnv, file_uri, raw_reply, wait_until};

/// `B/root/{top.txt, sub/inner.txt}`.
fn env() -> TestEnv {
    let env = TestEnv::new();
    env.write("top.txt", "top\n");
    env.write("sub/inner.txt", "inner\n");
    env
}

fn read(server: &Server, path: &str) -> crate::util::Reply {
    server.call("read_text_file", json!({ "path": path }))
}

#[test]
fn an_empty_roots_list_narrows_nothing_and_says_so_at_info() {
    let env = env();
    let server = Server::start_with_roots(&args![env.root()], vec![]);
    // Every path tool works on the operator's directories, as with a client
    // that has no roots capability.
    let r = read(&server, &env.path_str("top.txt"));
    r.assert_ok();
    assert_eq!(r.text, "top\n");
    read(&server, "sub/inner.txt").assert_ok();
    server
        .call("list_directory", json!({"path": env.root_str()}))
        .assert_ok();
    let allowed = server.call("list_allowed_directories", json!({}));
    allowed.assert_ok();
    assert_eq!(
        allowed.text.split("\n\n").next(),
        Some(format!("Allowed directories:\n{}", env.root_str()).as_str())
    );
    // ... and no wider.
    read(&server, &env.canary().to_string_lossy())
        .assert_error_contains("Access denied - path outside allowed directories");
    assert!(
        wait_until(Duration::from_secs(5), || server.stderr().contains(
            "tuls: info: the client's roots list is empty, which narrows nothing"
        )),
        "no info line:\n{}",
        server.stderr()
    );
    env.assert_canary_intact();
}

#[test]
fn client_roots_that_all_lie_outside_give_no_access_and_every_refusal_says_why() {
    let env = env();
    let outside = file_uri(env.outside());
    let server = Server::start_with_roots(
        &args![env.root()],
        vec![outside.clone(), "file:///etc".to_owned()],
    );
    let why = format!(
        "none of the client's roots ({outside}, file:///etc) is a directory inside the directories tuls serves"
    );
    for (tool, args) in [
        ("read_text_file", json!({"path": env.path_str("top.txt")})),
        ("read_text_file", json!({"path": "top.txt"})),
        ("list_directory", json!({"path": env.root_str()})),
        (
            "write_file",
            json!({"path": env.path_str("new.txt"), "content": "x"}),
        ),
        (
            "search_files",
            json!({"path": env.root_str(), "pattern": "**"}),
        ),
        (
            "read_text_file",
            json!({"path": env.canary().to_string_lossy()}),
        ),
    ] {
        let r = server.call(tool, args.clone());
        r.assert_error_contains("Access denied - path outside allowed directories");
        r.assert_error_contains(&why);
        r.assert_error_contains("No directory is open to this session");
        assert!(!r.text.contains("CANARY"), "{tool} {args}: {:?}", r.raw);
        // The operator's directory is not named to the client.
        assert!(
            !r.text.contains(&format!("{}/", env.root().display()))
                || args.to_string().contains(&env.root_str()),
            "{:?}",
            r.raw
        );
    }
    // Inline, per path, in a batch.
    let r = server.call(
        "read_multiple_files",
        json!({"paths": [env.path_str("top.txt")]}),
    );
    assert!(r.text.contains(&why), "{:?}", r.raw);
    // list_allowed_directories says it on its header line, and lists nothing.
    let allowed = server.call("list_allowed_directories", json!({}));
    allowed.assert_ok();
    assert_eq!(
        allowed.text,
        format!(
            "Allowed directories: none in this session: {why}, and client roots can only narrow those"
        )
    );
    assert!(!env.exists("new.txt"));
    env.assert_canary_intact();

    // One root that counts restores access to it, and the note goes away.
    let n = server.roots_requests();
    server.set_roots(vec![outside, file_uri(env.path("sub"))]);
    server.wait_for_roots_requests(n + 1, Duration::from_secs(10));
    read(&server, &env.path_str("sub/inner.txt")).assert_ok();
    let r = read(&server, &env.path_str("top.txt"));
    r.assert_error_contains("Access denied - path outside allowed directories");
    assert!(
        !r.text.contains("none of the client's roots"),
        "{:?}",
        r.raw
    );
    assert_eq!(
        server
            .call("list_allowed_directories", json!({}))
            .text
            .split("\n\n")
            .next(),
        Some(format!("Allowed directories:\n{}", env.path_str("sub")).as_str())
    );
}

#[test]
fn the_named_client_roots_are_bounded() {
    let env = env();
    let uris: Vec<String> = (0..40)
        .map(|i| format!("file:///nowhere/{i}/{}", "x".repeat(500)))
        .collect();
    let server = Server::start_with_roots(&args![env.root()], uris);
    let r = read(&server, "top.txt");
    r.assert_error_contains("and 35 more");
    assert!(r.text.len() < 2000, "{} bytes", r.text.len());
}

#[test]
fn a_client_asking_for_2026_07_28_in_initialize_gets_2025_11_25_and_its_roots_apply() {
    let env = env();
    let server = Server::start_with(
        &args![env.root()],
        Options::new()
            .protocol_version(ProtocolVersion::V_2026_07_28)
            .roots(vec![file_uri(env.path("sub"))]),
    );
    let info = server.server_info().expect("server info");
    assert_eq!(info["protocolVersion"], "2025-11-25", "{info}");
    read(&server, &env.path_str("sub/inner.txt")).assert_ok();
    read(&server, &env.path_str("top.txt"))
        .assert_error_contains("Access denied - path outside allowed directories");
    assert!(server.roots_requests() >= 1);
}

#[test]
fn a_stateless_2026_07_28_session_never_asks_for_client_roots() {
    let env = env();
    let mut raw = RawServer::start(&args![env.root()]);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": true}},
    });
    let r = raw.request(
        "tools/call",
        json!({
            "name": "read_text_file",
            "arguments": {"path": env.path_str("top.txt")},
            "_meta": meta,
        }),
    );
    // The operator's directories, at once: no roots/list request, no wait.
    let r = raw_reply(&r);
    assert!(!r.is_error && r.text == "top\n", "{:?}", r.raw);
    let r = raw_reply(&raw.request(
        "tools/call",
        json!({"name": "list_allowed_directories", "arguments": {}, "_meta": meta}),
    ));
    assert_eq!(
        r.text.split("\n\n").next(),
        Some(format!("Allowed directories:\n{}", env.root_str()).as_str())
    );
    let stray = raw.recv(Duration::from_millis(300));
    assert!(stray.is_none(), "unexpected message: {stray:?}");
}
