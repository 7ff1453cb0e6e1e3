//! Issue 15, item 3: a root moved or replaced while tuls runs. tuls keeps the
//! handle it opened at startup; once the operator's path no longer names that
//! directory (device and inode), every call on the root is refused with a
//! message that says to restart tuls, and nothing lands in the moved
//! directory. The check is a metadata-only `stat` of the operator's path,
//! which Landlock does not restrict: these tests run under Landlock.

use std::time::Duration;

use serde_json::json;

use crate::util::{Server, TestEnv, file_uri, wait_until};

const RESTART: &str = "was moved, replaced or removed while tuls was running";

#[track_caller]
fn assert_refused(r: &crate::util::Reply) {
    r.assert_error_contains(RESTART);
    r.assert_error_contains("Restart tuls");
}

#[test]
fn a_root_renamed_away_refuses_every_call_and_nothing_lands_in_it() {
    let env = TestEnv::new();
    env.write("old.txt", "old\n");
    let root = env.root();
    let moved = env.base().join("moved");
    let server = Server::start(&args![root]);
    let stderr = server.stderr();
    // The check runs on every call; under Landlock it must not misfire.
    server
        .call(
            "write_file",
            json!({"path": env.path_str("before.txt"), "content": "before\n"}),
        )
        .assert_ok();
    assert!(env.exists("before.txt"));

    std::fs::rename(&root, &moved).expect("rename the root away");

    let agent = env.path_str("agent.txt");
    assert_refused(&server.call("write_file", json!({"path": agent, "content": "x"})));
    assert_refused(&server.call("write_file", json!({"path": "rel.txt", "content": "x"})));
    assert_refused(&server.call("read_text_file", json!({"path": env.path_str("old.txt")})));
    assert_refused(&server.call("list_directory", json!({"path": env.root()})));
    assert_refused(&server.call(
        "edit_file",
        json!({"path": env.path_str("old.txt"), "edits": [{"oldText": "old", "newText": "new"}]}),
    ));
    assert_refused(&server.call("create_directory", json!({"path": env.path_str("d")})));
    assert_refused(&server.call(
        "move_file",
        json!({"source": env.path_str("old.txt"), "destination": env.path_str("o2.txt")}),
    ));
    // Ground truth: nothing was written through the old handle.
    let names: Vec<String> = std::fs::read_dir(&moved)
        .expect("read moved dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    let mut names = names;
    names.sort();
    assert_eq!(names, ["before.txt", "old.txt"]);
    assert_eq!(
        std::fs::read_to_string(moved.join("old.txt")).unwrap(),
        "old\n"
    );

    // Replaced: a new directory at the same path is not served either (it is
    // not what the operator's handle names; restart to serve it).
    std::fs::create_dir(&root).expect("recreate the root path");
    assert_refused(&server.call("write_file", json!({"path": agent, "content": "x"})));
    assert!(!root.join("agent.txt").exists());
    assert!(!moved.join("agent.txt").exists());

    // Logged once, naming the operator's path.
    assert!(
        wait_until(Duration::from_secs(5), || server.stderr().contains(
            &format!(
                "tuls: error: allowed directory '{}' {RESTART}",
                root.display()
            )
        )),
        "no log line:\n{}",
        server.stderr()
    );
    assert_eq!(
        server.stderr().matches(RESTART).count(),
        1,
        "{}",
        server.stderr()
    );
    if stderr.contains("landlock: active") {
        eprintln!("checked under Landlock");
    }
    env.assert_canary_intact();
}

#[test]
fn a_symlinked_root_repointed_is_refused_and_other_roots_go_on() {
    let env = TestEnv::new();
    env.write("a/x.txt", "a\n");
    env.write("b/x.txt", "b\n");
    env.write("second/y.txt", "y\n");
    let link = env.base().join("link");
    std::os::unix::fs::symlink(env.path("a"), &link).unwrap();
    let server = Server::start(&args![link, env.path("second")]);
    let x = format!("{}/x.txt", link.display());
    assert_eq!(
        server.call("read_text_file", json!({"path": x})).text,
        "a\n"
    );

    // Repoint the operator's symlink at another directory.
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(env.path("b"), &link).unwrap();
    assert_refused(&server.call("read_text_file", json!({"path": x})));
    assert_refused(&server.call("write_file", json!({"path": x, "content": "w"})));
    assert_eq!(std::fs::read_to_string(env.path("a/x.txt")).unwrap(), "a\n");
    assert_eq!(std::fs::read_to_string(env.path("b/x.txt")).unwrap(), "b\n");
    // The other root is unaffected.
    server
        .call(
            "read_text_file",
            json!({"path": env.path_str("second/y.txt")}),
        )
        .assert_ok();
}

#[test]
fn a_client_root_beneath_a_moved_root_is_refused_too() {
    let env = TestEnv::new();
    env.write("sub/x.txt", "x\n");
    let server = Server::start_with_roots(&args![env.root()], vec![file_uri(env.path("sub"))]);
    server
        .call("read_text_file", json!({"path": env.path_str("sub/x.txt")}))
        .assert_ok();
    let moved = env.base().join("moved");
    std::fs::rename(env.root(), &moved).unwrap();
    assert_refused(&server.call(
        "write_file",
        json!({"path": env.path_str("sub/agent.txt"), "content": "x"}),
    ));
    assert!(!moved.join("sub/agent.txt").exists());
}
