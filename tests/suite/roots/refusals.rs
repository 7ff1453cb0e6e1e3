//! What a refusal says when the client's roots (`roots/list`) narrowed the
//! operator's directory: a path inside the operator's directory but outside
//! the client's roots says the client's roots exclude it, and points to
//! `list_allowed_directories`; a path outside the operator's directory keeps
//! the reference's text. Neither names a root the session cannot see.

use serde_json::json;

use crate::util::{CANARY_CONTENT, Reply, Server, TestEnv, file_uri};

const PREFIX: &str = "Access denied - path outside allowed directories: ";

/// What the refusal adds when the client's roots exclude the path.
const EXCLUDED: &str = ". It lies in a directory this server serves, but the MCP client's roots exclude it: the client set narrower roots for this session. list_allowed_directories shows the directories open to it";

/// `B/root/{top.txt, sub/inner.txt, other/o.txt}`, the client's root `sub`.
fn narrowed() -> (TestEnv, Server) {
    let env = TestEnv::new();
    env.write("top.txt", "top\n");
    env.write("sub/inner.txt", "inner\n");
    env.write("other/o.txt", "other\n");
    let server = Server::start_with_roots(&args![env.root()], vec![file_uri(env.path("sub"))]);
    (env, server)
}

/// The reply names nothing outside the path as given: no canary, no
/// operator root beyond what `given` spells.
#[track_caller]
fn assert_names_only(reply: &Reply, given: &str, env: &TestEnv) {
    let raw = reply.raw.to_string();
    assert!(!raw.contains(CANARY_CONTENT), "{raw}");
    let without = reply.text.replacen(given, "", 1);
    assert!(!without.contains(&env.root_str()), "names a root: {raw}");
    assert!(!without.contains("canary"), "names outside: {raw}");
}

#[test]
fn a_path_the_client_roots_exclude_says_so_and_the_named_call_shows_what_is_open() {
    let (env, server) = narrowed();
    let top = env.path_str("top.txt");
    let other = env.path_str("other/new.txt");
    let up = env.path_str("sub/../top.txt");
    for (tool, args, given) in [
        ("read_text_file", json!({"path": top}), top.clone()),
        (
            "get_file_info",
            json!({"path": env.root_str()}),
            env.root_str(),
        ),
        (
            "list_directory",
            json!({"path": env.path_str("other")}),
            env.path_str("other"),
        ),
        (
            "write_file",
            json!({"path": other, "content": "x"}),
            other.clone(),
        ),
        ("read_text_file", json!({"path": up}), up.clone()),
        // Relative: `..` out of the client's root, into the operator's.
        (
            "read_text_file",
            json!({"path": "../top.txt"}),
            "../top.txt".to_owned(),
        ),
    ] {
        let r = server.call(tool, args);
        r.assert_error();
        assert_eq!(r.text, format!("{PREFIX}{given}{EXCLUDED}"), "{tool}");
        assert_names_only(&r, &given, &env);
    }
    assert!(!env.exists("other/new.txt"), "write_file wrote");
    // The call the refusal names works, and shows the client's root.
    let allowed = server.call("list_allowed_directories", json!({}));
    allowed.assert_ok();
    assert!(
        allowed.text.lines().any(|l| l == env.path_str("sub")),
        "{}",
        allowed.text
    );
    env.assert_canary_intact();
}

#[test]
fn a_path_outside_the_operator_directory_keeps_the_reference_text_under_client_roots() {
    let (env, server) = narrowed();
    let canary = env.canary().to_string_lossy().into_owned();
    for given in [
        canary.clone(),
        "../../outside/canary.txt".to_owned(),
        env.path_str("sub/../../outside/canary.txt"),
        "/etc/hostname".to_owned(),
        // A sibling whose name starts like the operator's root.
        format!("{}-evil/x", env.root_str()),
    ] {
        let r = server.call("read_text_file", json!({"path": given}));
        r.assert_error();
        assert_eq!(r.text, format!("{PREFIX}{given}"));
        assert!(!r.raw.to_string().contains(CANARY_CONTENT));
    }
    env.assert_canary_intact();
}

#[test]
fn without_client_roots_a_path_outside_keeps_the_reference_text() {
    let env = TestEnv::new();
    env.write("top.txt", "top\n");
    let server = Server::start(&args![env.root()]);
    for given in ["../outside/canary.txt", "/etc/hostname"] {
        let r = server.call("read_text_file", json!({"path": given}));
        assert_eq!(r.text, format!("{PREFIX}{given}"));
    }
}
