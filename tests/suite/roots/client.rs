//! Client roots (MCP roots, 2025-11-25 sessions) can only narrow the
//! operator's roots (issue 4).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{
    RawServer, Reply, Server, TestEnv, answer_roots, file_uri, raw_reply, wait_until,
};

/// `B/root/{top.txt, sub/inner.txt, other/o.txt}`.
fn env() -> TestEnv {
    let env = TestEnv::new();
    env.write("top.txt", "top\n");
    env.write("sub/inner.txt", "inner\n");
    env.write("other/o.txt", "other\n");
    env
}

/// `B/root` as the server spells it.
fn read(server: &Server, path: &str) -> Reply {
    server.call("read_text_file", json!({ "path": path }))
}

#[track_caller]
fn assert_reads(server: &Server, path: &str, content: &str) {
    let r = read(server, path);
    r.assert_ok();
    assert!(r.text.contains(content), "{path}: {:?}", r.raw);
}

#[track_caller]
fn assert_denied(server: &Server, path: &str) {
    read(server, path).assert_error_contains("outside allowed directories");
}

/// The roots `list_allowed_directories` reports.
fn allowed(server: &Server) -> Vec<String> {
    let r = server.call("list_allowed_directories", json!({}));
    r.assert_ok();
    r.text
        .lines()
        .skip(1) // "Allowed directories:"
        .take_while(|l| !l.is_empty()) // then the path rules in force
        .map(str::to_owned)
        .collect()
}

/// Sends `list_changed` with `uris` and waits until the server has asked for
/// them (from then on, calls wait for the answer to be applied).
fn change_roots(server: &Server, uris: Vec<String>) {
    let n = server.roots_requests();
    server.set_roots(uris);
    server.wait_for_roots_requests(n + 1, Duration::from_secs(10));
}

#[test]
fn a_client_root_beneath_a_cli_root_restricts_access_to_it() {
    let env = env();
    let server = Server::start_with_roots(&args![env.root()], vec![file_uri(env.path("sub"))]);

    assert_reads(&server, &env.path_str("sub/inner.txt"), "inner");
    assert_denied(&server, &env.path_str("top.txt"));
    assert_denied(&server, &env.path_str("other/o.txt"));
    assert_denied(&server, &env.canary().to_string_lossy());
    server
        .call("list_directory", json!({"path": env.root_str()}))
        .assert_error_contains("outside allowed directories");
    server
        .call("get_file_info", json!({"path": env.path_str("other")}))
        .assert_error_contains("outside allowed directories");
    // `..` out of the client root is refused even though it stays in the CLI root.
    assert_denied(&server, &env.path_str("sub/../top.txt"));
    assert_denied(&server, "../top.txt");

    assert_eq!(allowed(&server), [env.path_str("sub")]);
    env.assert_canary_intact();
}

#[test]
fn a_relative_path_resolves_against_the_first_effective_root() {
    let env = env();
    let server = Server::start_with_roots(
        &args![env.root()],
        vec![file_uri(env.path("other")), file_uri(env.path("sub"))],
    );
    assert_eq!(
        allowed(&server),
        [env.path_str("other"), env.path_str("sub")]
    );
    assert_reads(&server, "o.txt", "other");
    assert_reads(&server, "./o.txt", "other");
    // inner.txt is in the second root, not the first.
    read(&server, "inner.txt").assert_error();
    assert_reads(&server, &env.path_str("sub/inner.txt"), "inner");
    // Not against the CLI root, which the client narrowed away.
    read(&server, "top.txt").assert_error();
    assert_denied(&server, "../top.txt");

    // After a change, the new first root.
    change_roots(&server, vec![file_uri(env.path("sub"))]);
    assert_reads(&server, "inner.txt", "inner");
    read(&server, "o.txt").assert_error();
}

#[test]
fn client_roots_outside_the_cli_roots_give_no_access_and_are_ignored() {
    let env = env();
    env.symlink(env.outside(), "escape");
    let outside_cases = [
        "file:///".to_owned(),
        file_uri(env.outside()),
        file_uri(env.base()), // the parent of the CLI root
        file_uri("/etc"),
        file_uri(env.path("sub/../../outside")), // climbs out lexically
        file_uri(env.path("escape")),            // a symlink out of the root
        file_uri(env.path("top.txt")),           // not a directory
        file_uri(env.path("missing")),           // does not exist
        format!(
            "file://{}",
            env.path_str("sub").replace("/root/", "/root-evil/")
        ),
        "https://example.com/".to_owned(),
        "relative/path".to_owned(),
    ];
    for uri in &outside_cases {
        let server = Server::start_with_roots(&args![env.root()], vec![uri.clone()]);
        // Ignored: nothing counts, so there is no access at all.
        assert_eq!(allowed(&server), Vec::<String>::new(), "{uri}");
        assert_denied(&server, &env.canary().to_string_lossy());
        assert_denied(&server, "/etc/hostname");
        assert_denied(&server, &env.path_str("top.txt"));
        assert_denied(&server, &env.path_str("escape/canary.txt"));
        assert!(
            wait_until(Duration::from_secs(5), || server
                .stderr()
                .contains("ignoring client root")),
            "{uri}: no log line\n{}",
            server.stderr()
        );
    }

    // Together with one that counts, only that one is in force.
    let mut uris = outside_cases.to_vec();
    uris.push(file_uri(env.path("sub")));
    let server = Server::start_with_roots(&args![env.root()], uris);
    assert_eq!(allowed(&server), [env.path_str("sub")]);
    assert_reads(&server, &env.path_str("sub/inner.txt"), "inner");
    assert_denied(&server, &env.path_str("top.txt"));
    assert_denied(&server, &env.canary().to_string_lossy());
    env.assert_canary_intact();
}

#[test]
fn the_cli_root_itself_as_a_client_root_keeps_full_access() {
    let env = env();
    for uri in [
        file_uri(env.root()),
        format!("{}/", file_uri(env.root())),
        format!("file://localhost{}", env.root_str()),
    ] {
        let server = Server::start_with_roots(&args![env.root()], vec![uri.clone()]);
        assert_eq!(allowed(&server), [env.root_str()], "{uri}");
        assert_reads(&server, &env.path_str("top.txt"), "top");
        assert_reads(&server, "sub/inner.txt", "inner");
        assert_denied(&server, &env.canary().to_string_lossy());
    }
}

#[test]
fn list_changed_takes_effect_and_widens_back_only_up_to_the_cli_roots() {
    let env = env();
    let server = Server::start_with_roots(&args![env.root()], vec![file_uri(env.path("sub"))]);
    assert_denied(&server, &env.path_str("top.txt"));

    // Widen back to the CLI root.
    change_roots(&server, vec![file_uri(env.root())]);
    assert_reads(&server, &env.path_str("top.txt"), "top");
    assert_eq!(allowed(&server), [env.root_str()]);

    // Narrow again: the very next call sees the narrower list.
    change_roots(&server, vec![file_uri(env.path("sub"))]);
    assert_denied(&server, &env.path_str("top.txt"));
    assert_reads(&server, &env.path_str("sub/inner.txt"), "inner");

    // Try to widen beyond the CLI root: the wider root is ignored.
    change_roots(
        &server,
        vec![
            file_uri(env.base()),
            "file:///".to_owned(),
            file_uri(env.root()),
        ],
    );
    assert_eq!(allowed(&server), [env.root_str()]);
    assert_reads(&server, &env.path_str("top.txt"), "top");
    assert_denied(&server, &env.canary().to_string_lossy());

    // Only outside roots: no access at all.
    change_roots(&server, vec!["file:///".to_owned()]);
    assert_eq!(allowed(&server), Vec::<String>::new());
    assert_denied(&server, &env.path_str("top.txt"));

    // Empty narrows nothing (issue 15): the CLI roots, and no wider.
    change_roots(&server, vec![file_uri(env.path("sub"))]);
    assert_denied(&server, &env.path_str("top.txt"));
    change_roots(&server, vec![]);
    assert_reads(&server, &env.path_str("top.txt"), "top");
    assert_eq!(allowed(&server), [env.root_str()]);
    assert_denied(&server, &env.canary().to_string_lossy());
    env.assert_canary_intact();
}

#[test]
fn no_client_roots_ignores_client_roots_entirely() {
    let env = env();
    let server = Server::start_with_roots(
        &args![env.root(), "--no-client-roots"],
        vec![file_uri(env.path("sub"))],
    );
    assert_reads(&server, &env.path_str("top.txt"), "top");
    assert_eq!(allowed(&server), [env.root_str()]);
    server.set_roots(vec![]);
    std::thread::sleep(Duration::from_millis(300));
    assert_reads(&server, &env.path_str("top.txt"), "top");
    assert_eq!(server.roots_requests(), 0, "the server must not even ask");
}

/// The reference 2.3.0's `--confine-roots` is accepted and changes
/// nothing: tuls always confines client roots to the DIRs.
#[test]
fn confine_roots_is_accepted_and_roots_only_narrow_as_always() {
    let env = env();
    let server = Server::start_with_roots(
        &args![env.root(), "--confine-roots"],
        vec![file_uri("/"), file_uri(env.path("sub"))],
    );
    assert_reads(&server, &env.path_str("sub/inner.txt"), "inner");
    assert_denied(&server, &env.path_str("top.txt"));
    assert_denied(&server, &env.canary().to_string_lossy());
    assert_eq!(allowed(&server), [env.path_str("sub")]);
    env.assert_canary_intact();
}

#[test]
fn a_client_root_may_use_either_spelling_of_a_symlinked_cli_root() {
    let env = env();
    let link = env.base().join("link");
    env.symlink(env.root(), &link);
    let link_s = link.to_str().expect("UTF-8").to_owned();

    // The CLI root is the symlink; the client names the real directory.
    let server = Server::start_with_roots(&args![link], vec![file_uri(env.path("sub"))]);
    assert_reads(&server, &env.path_str("sub/inner.txt"), "inner");
    assert_reads(&server, &format!("{link_s}/sub/inner.txt"), "inner");
    assert_denied(&server, &env.path_str("top.txt"));
    assert_denied(&server, &format!("{link_s}/top.txt"));
    let shown = allowed(&server);
    assert!(shown.contains(&env.path_str("sub")), "{shown:?}");

    // And the other way round.
    let server = Server::start_with_roots(&args![link], vec![file_uri(format!("{link_s}/sub"))]);
    assert_reads(&server, &env.path_str("sub/inner.txt"), "inner");
    assert_denied(&server, &format!("{link_s}/top.txt"));
}

// ---------------------------------------------------------------------------
// Hand-driven clients: late, missing, stale and failed roots/list answers
// ---------------------------------------------------------------------------

/// Starts tuls, initializes as a 2025-11-25 client that declares roots, and
/// returns the id of the server's first `roots/list` request (unanswered).
fn raw_with_roots(env: &TestEnv, extra: &[&str]) -> (RawServer, Value) {
    let mut argv = args![env.root()];
    argv.extend(extra.iter().map(Into::into));
    let mut raw = RawServer::start(&argv);
    raw.initialize_with("2025-11-25", json!({"roots": {"listChanged": true}}));
    let id = next_roots_request(&mut raw);
    (raw, id)
}

/// Waits for the server's next `roots/list` request; returns its id.
fn next_roots_request(raw: &mut RawServer) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = Vec::new();
    while let Some(msg) = raw.recv(deadline.saturating_duration_since(Instant::now())) {
        if msg["method"] == "roots/list" {
            return msg["id"].clone();
        }
        seen.push(msg);
    }
    panic!(
        "no roots/list request from the server; saw {seen:?}\nstderr:\n{}",
        raw.stderr()
    );
}

/// Sends a `read_text_file` call without waiting; returns its id.
fn send_read(raw: &mut RawServer, id: i64, path: &str) -> Value {
    let id = json!(id);
    raw.send(&json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": "read_text_file", "arguments": {"path": path}},
    }));
    id
}

#[test]
fn a_client_that_never_answers_roots_list_gets_a_timeout_not_the_cli_roots() {
    let env = env();
    let (mut raw, _ignored) = raw_with_roots(&env, &["--roots-timeout-secs", "1"]);
    let started = Instant::now();
    let r = raw_reply(&raw.call_tool("read_text_file", json!({"path": env.path_str("top.txt")})));
    let waited = started.elapsed();
    assert!(
        r.is_error,
        "slipped through with the CLI roots: {:?}",
        r.raw
    );
    assert!(r.text.contains("Timed out"), "{:?}", r.raw);
    assert!(r.text.contains("roots/list"), "{:?}", r.raw);
    assert!(!r.text.contains("top\n"), "{:?}", r.raw);
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(8),
        "waited {waited:?} with --roots-timeout-secs 1"
    );
    // Every path tool, every time.
    let r = raw_reply(&raw.call_tool("list_directory", json!({"path": env.root_str()})));
    assert!(r.is_error && r.text.contains("Timed out"), "{:?}", r.raw);
    // list_allowed_directories does not claim the CLI roots meanwhile.
    let r = raw_reply(&raw.call_tool("list_allowed_directories", json!({})));
    assert!(r.is_error && r.text.contains("Timed out"), "{:?}", r.raw);
    assert!(raw.is_alive());
}

#[test]
fn calls_made_after_list_changed_wait_for_the_new_narrower_answer() {
    let env = env();
    let (mut raw, first) = raw_with_roots(&env, &[]);
    answer_roots(&mut raw, &first, &[file_uri(env.root())]);
    let r = raw_reply(&raw.call_tool("read_text_file", json!({"path": env.path_str("top.txt")})));
    assert!(!r.is_error, "{:?}", r.raw);

    raw.notify("notifications/roots/list_changed", Value::Null);
    let second = next_roots_request(&mut raw);
    // The server has asked; a call made now must not use the old, wider scope.
    let call = send_read(&mut raw, 1000, &env.path_str("top.txt"));
    let early = raw.recv(Duration::from_millis(500));
    assert!(
        early.is_none(),
        "the call was answered before the new roots arrived: {early:?}"
    );
    answer_roots(&mut raw, &second, &[file_uri(env.path("sub"))]);
    let r = raw_reply(&raw.wait_response(&call));
    assert!(r.is_error, "used the old, wider roots: {:?}", r.raw);
    assert!(
        r.text.contains("outside allowed directories"),
        "{:?}",
        r.raw
    );
    let r = raw_reply(&raw.call_tool(
        "read_text_file",
        json!({"path": env.path_str("sub/inner.txt")}),
    ));
    assert!(!r.is_error, "{:?}", r.raw);
}

#[test]
fn a_list_changed_that_is_never_answered_times_out_instead_of_keeping_the_old_scope() {
    let env = env();
    let (mut raw, first) = raw_with_roots(&env, &["--roots-timeout-secs", "1"]);
    answer_roots(&mut raw, &first, &[file_uri(env.root())]);
    let r = raw_reply(&raw.call_tool("read_text_file", json!({"path": env.path_str("top.txt")})));
    assert!(!r.is_error, "{:?}", r.raw);

    raw.notify("notifications/roots/list_changed", Value::Null);
    let _never_answered = next_roots_request(&mut raw);
    let r = raw_reply(&raw.call_tool("read_text_file", json!({"path": env.path_str("top.txt")})));
    assert!(r.is_error, "kept the old scope: {:?}", r.raw);
    assert!(r.text.contains("Timed out"), "{:?}", r.raw);
}

#[test]
fn only_the_answer_to_the_latest_roots_list_request_counts() {
    let env = env();
    let (mut raw, first) = raw_with_roots(&env, &[]);
    answer_roots(&mut raw, &first, &[file_uri(env.root())]);

    raw.notify("notifications/roots/list_changed", Value::Null);
    let older = next_roots_request(&mut raw);
    raw.notify("notifications/roots/list_changed", Value::Null);
    // One request is out at a time (issue 11): the change made the older
    // answer stale, and the newer request goes out only once it arrives.
    answer_roots(&mut raw, &older, &[file_uri(env.root())]);
    let newer = next_roots_request(&mut raw);
    answer_roots(&mut raw, &newer, &[file_uri(env.path("sub"))]);
    std::thread::sleep(Duration::from_millis(300));

    let r = raw_reply(&raw.call_tool("read_text_file", json!({"path": env.path_str("top.txt")})));
    assert!(r.is_error, "a stale answer widened the scope: {:?}", r.raw);
    let r = raw_reply(&raw.call_tool("list_allowed_directories", json!({})));
    assert_eq!(
        r.text
            .lines()
            .skip(1)
            .take_while(|l| !l.is_empty())
            .collect::<Vec<_>>(),
        [env.path_str("sub")]
    );
}

#[test]
fn a_failed_roots_list_answer_gives_no_access() {
    let env = env();
    let (mut raw, first) = raw_with_roots(&env, &[]);
    raw.send(&json!({
        "jsonrpc": "2.0",
        "id": first,
        "error": {"code": -32601, "message": "Method not found"},
    }));
    let r = raw_reply(&raw.call_tool("read_text_file", json!({"path": env.path_str("top.txt")})));
    assert!(r.is_error, "{:?}", r.raw);
    assert!(
        r.text.contains("outside allowed directories"),
        "{:?}",
        r.raw
    );
}

#[test]
fn a_client_without_the_roots_capability_keeps_the_cli_roots() {
    let env = env();
    let mut raw = RawServer::start(&args![env.root()]);
    raw.initialize("2025-11-25");
    let r = raw_reply(&raw.call_tool("read_text_file", json!({"path": env.path_str("top.txt")})));
    assert!(!r.is_error, "{:?}", r.raw);
    // A stray list_changed from it is ignored: no roots/list request.
    raw.notify("notifications/roots/list_changed", Value::Null);
    let stray = raw.recv(Duration::from_millis(300));
    assert!(stray.is_none(), "unexpected message: {stray:?}");
    let r = raw_reply(&raw.call_tool("read_text_file", json!({"path": env.path_str("top.txt")})));
    assert!(!r.is_error, "{:?}", r.raw);
}

#[test]
fn list_allowed_directories_with_client_roots_shows_the_effective_roots_over_many_changes() {
    let env = env();
    let server = Server::start_with_roots(&args![env.root()], vec![file_uri(env.path("sub"))]);
    for (uris, want) in [
        (
            vec![file_uri(env.path("other"))],
            vec![env.path_str("other")],
        ),
        (
            vec![file_uri(env.path("sub")), file_uri(env.outside())],
            vec![env.path_str("sub")],
        ),
        (vec![], vec![env.root_str()]),
    ] {
        change_roots(&server, uris);
        // No polling: list_allowed_directories waits for the answer too.
        assert_eq!(allowed(&server), want);
    }
}
