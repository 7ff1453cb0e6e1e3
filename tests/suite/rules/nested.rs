//! Nested operator directories (`tuls filesystem /r /r/sub`): a path is
//! matched against the rules of every operator directory that contains it,
//! however it is spelled (through `/r`, through `/r/sub`, through a link
//! to `sub`). Ground truth: the tree on disk, and every reply scanned for
//! the canary in the hidden file.

use serde_json::json;

use crate::util::{Server, TestEnv};

use super::aliases::assert_unwritable;
use super::cases::CANARY;

fn layout(env: &TestEnv) {
    env.write("sub/secret/key.txt", CANARY);
    env.write("sub/Cargo.lock", "lock\n");
    env.write("sub/ok.txt", "ok\n");
    env.write("sub/private/p.txt", CANARY);
    env.write("secret-free.txt", "free\n");
    env.symlink("sub", "sublink");
    env.write("scratch.txt", "scratch\n");
}

#[test]
fn rules_of_a_nested_operator_directory_hold_through_the_outer_one() {
    let env = TestEnv::new();
    layout(&env);
    let rules = env.base().join("rules.json");
    std::fs::write(
        &rules,
        r#"{"rules": [{"id": "ok-exact", "match": "exact", "pattern": "/ok.txt", "operations": ["write"]}]}"#,
    )
    .expect("rules file");
    let s = Server::start(&args![
        env.root(),
        env.path("sub"),
        "--hide",
        "/secret",
        "--hide",
        "/sub/private",
        "--read-only-path",
        "/Cargo.lock",
        "--rules",
        &rules
    ]);
    let mut replies = Vec::new();
    for p in [
        "sub/secret/key.txt",
        "sublink/secret/key.txt",
        "sub/./secret/key.txt",
    ] {
        let r = s.call("read_text_file", json!({"path": p}));
        assert!(r.is_error, "{p}: {}", r.text);
        replies.push(r.text.clone());
        let missing = s.call("read_text_file", json!({"path": "sub/nothing/key.txt"}));
        // The texts name the path, or its parent (`Parent directory does
        // not exist: <dir>`).
        let parent = p.rsplit_once('/').map_or("", |(d, _)| d);
        assert_eq!(
            r.text.replace(p, "X").replace(parent, "D"),
            missing
                .text
                .replace("sub/nothing/key.txt", "X")
                .replace("sub/nothing", "D"),
            "{p}: hidden must read as missing"
        );
    }
    for (tool, args) in [
        (
            "search_file_contents",
            json!({"path": env.root_str(), "pattern": "CANARY"}),
        ),
        (
            "search_files",
            json!({"path": env.root_str(), "pattern": "**/*"}),
        ),
        ("directory_tree", json!({"path": env.root_str()})),
        ("list_directory", json!({"path": env.path_str("sub")})),
        ("list_directory", json!({"path": env.path_str("sublink")})),
    ] {
        let r = s.call(tool, args);
        r.assert_ok();
        // A listing names nothing hidden.
        assert!(!r.text.contains("key.txt"), "{tool}: {}", r.text);
        assert!(
            !r.text.contains("secret/") && !r.text.contains("[DIR] secret"),
            "{tool}: {}",
            r.text
        );
        replies.push(r.text);
    }
    // A rule anchored at the outer directory holds through the inner one
    // (the absolute path picks the inner root, the longer spelling).
    let inner = env.path_str("sub/private/p.txt");
    let r = s.call("read_text_file", json!({"path": inner}));
    assert!(r.is_error, "{}", r.text);
    replies.push(r.text);
    let r = s.call("list_directory", json!({"path": env.path_str("sub")}));
    assert!(!r.text.contains("private"), "{}", r.text);
    for r in &replies {
        assert!(!r.contains(CANARY), "{r}");
    }
    for p in ["sub/Cargo.lock", "sublink/Cargo.lock", "sub/ok.txt"] {
        assert_unwritable(&s, &env, p, "x");
    }
    assert_eq!(env.read_string("sub/Cargo.lock"), "lock\n");
    // The outer directory's own names are untouched by the inner rules.
    s.call(
        "write_file",
        json!({"path": "secret-free.txt", "content": "new\n"}),
    )
    .assert_ok();
}
