//! A path whose parent does not exist: `Parent directory does not exist:
//! <dir>` (the reference 2.3.0's text), `<dir>` the parent as the agent
//! gave it. A parent a rule hides reads exactly the same; one reached
//! through a link out stays access denied; a parent that is a file stays
//! `ENOTDIR`; and nothing is created.

use serde_json::{Value, json};

use crate::util::{CANARY_CONTENT, Server, TestEnv};

/// Every tool that takes one path, on `p`.
fn calls(p: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("read_text_file", json!({"path": p})),
        ("read_text_file", json!({"path": p, "head": 1})),
        (
            "read_text_file",
            json!({"path": p, "offset": 1, "limit": 1}),
        ),
        ("read_media_file", json!({"path": p})),
        ("get_file_info", json!({"path": p})),
        ("list_directory", json!({"path": p})),
        ("write_file", json!({"path": p, "content": "x"})),
        ("append_file", json!({"path": p, "content": "x"})),
        (
            "edit_file",
            json!({"path": p, "edits": [{"oldText": "a", "newText": "b"}]}),
        ),
        ("move_file", json!({"source": "f.txt", "destination": p})),
        ("copy_file", json!({"source": "f.txt", "destination": p})),
    ]
}

fn tree(env: &TestEnv) {
    env.write("f.txt", "a\n");
    env.symlink("../outside", "out");
    env.symlink("nowhere", "dangling");
}

/// `(path, parent as given)`: missing parents, spelled several ways.
fn missing(env: &TestEnv) -> Vec<(String, String)> {
    vec![
        ("nope/x.txt".into(), "nope".into()),
        ("nope/deeper/x.txt".into(), "nope/deeper".into()),
        (env.path_str("nope/x.txt"), env.path_str("nope")),
        ("./nope//x.txt".into(), "./nope".into()),
        ("dangling/x.txt".into(), "dangling".into()),
        ("secrets/x.txt".into(), "secrets".into()),
    ]
}

#[track_caller]
fn assert_missing_parent(server: &Server, env: &TestEnv) {
    for (p, dir) in missing(env) {
        for (tool, args) in calls(&p) {
            let r = server.call(tool, args.clone());
            r.assert_error();
            assert_eq!(
                r.text,
                format!("Parent directory does not exist: {dir}"),
                "{tool} {args}"
            );
            assert!(!r.raw.to_string().contains(CANARY_CONTENT));
        }
    }
    assert!(!env.exists("nope"), "a call created the missing parent");
    assert_eq!(env.read_string("f.txt"), "a\n");
}

#[test]
fn a_missing_parent_names_the_parent_as_given() {
    let env = TestEnv::new();
    tree(&env);
    let server = Server::start(&args![env.root()]);
    assert_missing_parent(&server, &env);
}

#[test]
fn a_hidden_parent_reads_exactly_as_a_missing_one() {
    // `secrets` exists and is hidden: the same texts as where it does not.
    let env = TestEnv::new();
    tree(&env);
    env.write("secrets/x.txt", CANARY_CONTENT);
    let server = Server::start(&args![env.root(), "--hide", "secrets"]);
    assert_missing_parent(&server, &env);
    assert_eq!(env.read_string("secrets/x.txt"), CANARY_CONTENT);
}

#[test]
fn a_parent_through_a_link_out_stays_denied_and_a_file_parent_is_not_a_directory() {
    let env = TestEnv::new();
    tree(&env);
    let server = Server::start(&args![env.root()]);
    for (tool, args) in calls("out/nope/x.txt") {
        let r = server.call(tool, args.clone());
        assert!(
            r.text
                .starts_with("Access denied - path outside allowed directories: out/nope/x.txt. It goes through a symbolic link"),
            "{tool}: {}",
            r.raw
        );
    }
    let r = server.call("write_file", json!({"path": "f.txt/x", "content": "x"}));
    r.assert_error_contains("ENOTDIR");
    // A missing final name in an existing directory keeps the ENOENT text.
    let r = server.call("read_text_file", json!({"path": "missing.txt"}));
    assert_eq!(
        r.text,
        "ENOENT: no such file or directory, open 'missing.txt'"
    );
    env.assert_canary_intact();
}
