//! Capability selectors over stdio (issue 4): which tools are listed, and that
//! a tool which is not enabled is refused at dispatch, exactly like an unknown
//! tool, with no side effect on disk.

use serde_json::{Value, json};

use crate::util::{ALL_TOOLS, CallError, READ_TOOLS, RpcError, Server, TestEnv, WRITE_TOOLS};

/// A fixture with one file and one directory in the root.
fn env() -> TestEnv {
    let env = TestEnv::new();
    env.write("a.txt", "original\n");
    env.mkdir("d");
    env
}

/// Arguments a real client would send to `tool`, each aimed at changing the
/// fixture: if any of them ran, the root's snapshot would change.
fn write_args(env: &TestEnv, tool: &str) -> Value {
    match tool {
        "write_file" => json!({"path": env.path_str("a.txt"), "content": "pwned\n"}),
        "edit_file" => json!({
            "path": env.path_str("a.txt"),
            "edits": [{"oldText": "original", "newText": "pwned"}],
        }),
        "create_directory" => json!({"path": env.path_str("new-dir")}),
        "move_file" => json!({
            "source": env.path_str("a.txt"),
            "destination": env.path_str("d/moved.txt"),
        }),
        "append_file" => json!({"path": env.path_str("a.txt"), "content": "pwned\n"}),
        "copy_file" => json!({
            "source": env.path_str("a.txt"),
            "destination": env.path_str("d/copied.txt"),
        }),
        other => panic!("not a write tool: {other}"),
    }
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn names(tools: &[&str]) -> Vec<String> {
    sorted(tools.iter().map(|t| (*t).to_owned()).collect())
}

/// The error an unknown tool gets, for comparison.
fn unknown_tool_error(server: &Server) -> RpcError {
    server.call_expect_rpc_error("no_such_tool", json!({}))
}

/// Asserts `tool` is refused exactly as an unknown tool is: the same code
/// (-32602), the same message with the name swapped, the same data.
#[track_caller]
fn assert_refused_like_unknown(server: &Server, tool: &str, args: Value) {
    let unknown = unknown_tool_error(server);
    assert_eq!(unknown.code, -32602, "{unknown:?}");
    assert_eq!(unknown.message, "Tool no_such_tool not found");
    let err = server.call_expect_rpc_error(tool, args);
    assert_eq!(err.code, -32602, "{tool}: {err:?}");
    assert_eq!(err.message, format!("Tool {tool} not found"), "{tool}");
    assert_eq!(err.data, unknown.data, "{tool}");
}

#[test]
fn review_only_lists_the_read_tools_and_refuses_every_write_without_side_effects() {
    let env = env();
    let server = Server::start(&args![env.root(), "--allow", "filesystem.read"]);

    let listed = server.tool_names();
    assert_eq!(listed, READ_TOOLS, "tools/list order and content");

    let before = env.snapshot("");
    let outside = env.snapshot_outside();
    for tool in WRITE_TOOLS {
        assert_refused_like_unknown(&server, tool, write_args(&env, tool));
        // Arguments are not even looked at: garbage gets the same refusal.
        assert_refused_like_unknown(&server, tool, json!({"bogus": [1, 2, 3]}));
        assert_refused_like_unknown(&server, tool, Value::Null);
    }
    before.assert_same(&env.snapshot(""), "root after refused write calls");
    outside.assert_same(&env.snapshot_outside(), "outside");
    assert_eq!(env.read_string("a.txt"), "original\n");
    assert!(!env.exists("new-dir") && !env.exists("d/moved.txt"));

    // The read side works.
    let read = server.call("read_text_file", json!({"path": env.path_str("a.txt")}));
    read.assert_ok();
    assert!(read.text.contains("original"), "{:?}", read.raw);
    env.assert_canary_intact();
}

#[test]
fn implementation_without_moves_lists_all_but_move_file_and_refuses_it() {
    let env = env();
    let server = Server::start(&args![
        env.root(),
        "--allow",
        "filesystem.read",
        "--allow",
        "filesystem.write",
        "--deny",
        "filesystem/move_file",
    ]);

    let listed = server.tool_names();
    assert_eq!(listed.len(), ALL_TOOLS.len() - 1, "{listed:?}");
    assert!(!listed.iter().any(|t| t == "move_file"), "{listed:?}");
    let mut expected: Vec<&str> = READ_TOOLS.to_vec();
    expected.extend(WRITE_TOOLS.iter().filter(|t| **t != "move_file"));
    assert_eq!(sorted(listed), names(&expected));

    let before = env.snapshot("");
    assert_refused_like_unknown(&server, "move_file", write_args(&env, "move_file"));
    // A move of a directory, and a rename in place, are refused the same way.
    assert_refused_like_unknown(
        &server,
        "move_file",
        json!({"source": env.path_str("d"), "destination": env.path_str("d2")}),
    );
    before.assert_same(&env.snapshot(""), "root after refused move_file");
    assert!(env.exists("a.txt"), "the source must still be there");
    assert_eq!(env.read_string("a.txt"), "original\n");
    assert!(!env.exists("d/moved.txt"), "the destination must not exist");
    assert!(env.exists("d") && !env.exists("d2"));

    // The enabled write tools are dispatched: whatever they answer, it is a
    // tool result, never the "not found" refusal.
    for tool in WRITE_TOOLS.iter().filter(|t| **t != "move_file") {
        match server.try_call(tool, write_args(&env, tool)) {
            Ok(_) => {}
            Err(CallError::Rpc(e)) => assert!(
                !e.message.contains("not found"),
                "{tool} is enabled but was refused: {e:?}"
            ),
            Err(other) => panic!("{tool}: {other:?}"),
        }
    }
    env.assert_canary_intact();
}

#[test]
fn deny_beats_allow_whatever_the_order() {
    let env = env();
    for argv in [
        args![
            env.root(),
            "--allow",
            "filesystem/write_file",
            "--allow",
            "filesystem/read_text_file",
            "--deny",
            "filesystem/write_file",
        ],
        args![
            env.root(),
            "--deny",
            "filesystem/write_file",
            "--allow",
            "filesystem/write_file",
            "--allow",
            "filesystem/read_text_file",
        ],
        // A capability denied, a tool of it allowed: deny still wins.
        args![
            env.root(),
            "--allow",
            "filesystem/write_file",
            "--allow",
            "filesystem/read_text_file",
            "--deny",
            "filesystem.write",
        ],
    ] {
        let server = Server::start(&argv);
        assert_eq!(server.tool_names(), ["read_text_file"], "{argv:?}");
        let before = env.snapshot("");
        assert_refused_like_unknown(&server, "write_file", write_args(&env, "write_file"));
        before.assert_same(&env.snapshot(""), "root after refused write_file");
        assert_eq!(env.read_string("a.txt"), "original\n");
    }

    // Allowing everything and denying a whole capability leaves the other.
    let server = Server::start(&args![
        env.root(),
        "--allow",
        "filesystem",
        "--deny",
        "filesystem.write",
    ]);
    assert_eq!(server.tool_names(), READ_TOOLS);
    for tool in WRITE_TOOLS {
        assert_refused_like_unknown(&server, tool, write_args(&env, tool));
    }
}

#[test]
fn allow_filesystem_and_no_allow_enable_every_tool() {
    let env = env();
    let everything = {
        let mut v: Vec<&str> = READ_TOOLS.to_vec();
        v.extend(WRITE_TOOLS);
        names(&v)
    };
    for argv in [
        args![env.root()],
        args![env.root(), "--allow", "filesystem"],
        args![
            env.root(),
            "--allow",
            "filesystem.read",
            "--allow",
            "filesystem.write"
        ],
    ] {
        let server = Server::start(&argv);
        assert_eq!(sorted(server.tool_names()), everything, "{argv:?}");
    }
}

#[test]
fn deny_of_a_single_tool_removes_only_that_tool() {
    let env = env();
    let server = Server::start(&args![env.root(), "--deny", "filesystem/write_file"]);
    let listed = server.tool_names();
    assert_eq!(listed.len(), ALL_TOOLS.len() - 1, "{listed:?}");
    assert!(!listed.iter().any(|t| t == "write_file"));
    let before = env.snapshot("");
    assert_refused_like_unknown(&server, "write_file", write_args(&env, "write_file"));
    before.assert_same(&env.snapshot(""), "root after refused write_file");

    // A tool that takes no path is refused the same way.
    let server = Server::start(&args![
        env.root(),
        "--deny",
        "filesystem/list_allowed_directories"
    ]);
    assert_eq!(server.tool_names().len(), ALL_TOOLS.len() - 1);
    assert_refused_like_unknown(&server, "list_allowed_directories", json!({}));
}

#[test]
fn allow_of_a_single_tool_enables_only_that_tool() {
    let env = env();
    let server = Server::start(&args![env.root(), "--allow", "filesystem/get_file_info"]);
    assert_eq!(server.tool_names(), ["get_file_info"]);
    server
        .call("get_file_info", json!({"path": env.path_str("a.txt")}))
        .assert_ok();
    assert_refused_like_unknown(
        &server,
        "read_text_file",
        json!({"path": env.path_str("a.txt")}),
    );
    assert_refused_like_unknown(&server, "list_allowed_directories", json!({}));
    let before = env.snapshot("");
    for tool in WRITE_TOOLS {
        assert_refused_like_unknown(&server, tool, write_args(&env, tool));
    }
    before.assert_same(&env.snapshot(""), "root after refused write calls");
}
