//! Version tokens and `ifMatch` (issue 22): every read of a whole file, and
//! every partial read of a file within the read limit, gives the version of
//! the whole file (checked against a hash of the bytes on disk); a change
//! that names a stale version changes nothing and leaves the outside edit on
//! disk; two racing edits with one version never both win; a same-size
//! rewrite within one timestamp tick changes the version; and
//! `--require-if-match` refuses unchecked overwrites with a message that
//! teaches the flow.

use std::fs::{File, FileTimes};
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

use serde_json::{Value, json};

use crate::util::{Server, TestEnv, version_of};

fn disk_version(path: &Path) -> String {
    version_of(&std::fs::read(path).expect("read from disk"))
}

/// The `version` of a reply's `structuredContent`.
fn version(reply: &crate::util::Reply) -> Option<String> {
    reply
        .structured
        .as_ref()?
        .get("version")?
        .as_str()
        .map(str::to_owned)
}

#[test]
fn every_read_of_a_file_gives_the_version_of_its_whole_content() {
    let env = TestEnv::new();
    let body: String = (1..=50).map(|i| format!("line {i}\n")).collect();
    let f = env.write("a.txt", &body);
    env.write("pic.png", b"\x89PNG fake");
    let want = disk_version(&f);
    let server = Server::start(&args![env.root()]);
    let p = env.path_str("a.txt");
    for args in [
        json!({"path": p}),
        json!({"path": p, "head": 2}),
        json!({"path": p, "tail": 3}),
        json!({"path": p, "offset": 10, "limit": 2}),
        json!({"path": p, "offset": 5, "lineNumbers": true}),
    ] {
        let r = server.call("read_text_file", args.clone());
        r.assert_ok();
        assert_eq!(version(&r).as_deref(), Some(want.as_str()), "{args}");
        // The text is the file's, as the reference gives it: no version.
        assert!(!r.text.contains("b3:"), "{args}: {}", r.text);
        assert_eq!(r.structured.as_ref().unwrap()["content"], json!(r.text));
    }
    let r = server.call("get_file_info", json!({"path": p}));
    assert_eq!(version(&r).as_deref(), Some(want.as_str()));
    assert!(!r.text.contains("version"), "{}", r.text);
    let r = server.call("get_file_info", json!({"path": env.root_str()}));
    assert_eq!(version(&r), None, "a directory has no version");

    let r = server.call("read_media_file", json!({"path": env.path_str("pic.png")}));
    r.assert_ok();
    assert_eq!(version(&r), Some(disk_version(&env.path("pic.png"))));
    assert!(r.structured.as_ref().unwrap()["content"].is_array());

    let r = server.call(
        "read_multiple_files",
        json!({"paths": [p, env.path_str("missing.txt"), env.path_str("pic.png")]}),
    );
    r.assert_ok();
    assert_eq!(
        r.structured.as_ref().unwrap()["versions"],
        json!([
            {"path": p, "version": want},
            {"path": env.path_str("pic.png"), "version": disk_version(&env.path("pic.png"))},
        ])
    );
}

#[test]
fn a_file_over_the_read_limit_has_no_version_but_reads_in_parts() {
    let env = TestEnv::new();
    env.write("big.txt", "x\n".repeat(3000));
    let server = Server::start(&args![env.root(), "--max-read-bytes", "4096"]);
    let p = env.path_str("big.txt");
    let r = server.call("read_text_file", json!({"path": p, "head": 1}));
    r.assert_ok();
    assert_eq!(version(&r), None);
    let r = server.call("get_file_info", json!({"path": p}));
    r.assert_ok();
    assert_eq!(version(&r), None);
    // ifMatch cannot match a file that has no version.
    let r = server.call(
        "write_file",
        json!({"path": p, "content": "y", "ifMatch": version_of(b"x\n")}),
    );
    r.assert_error_contains("larger than the read limit");
    assert_eq!(env.read_string("big.txt"), "x\n".repeat(3000));
}

#[test]
fn a_stale_write_is_refused_and_the_outside_edit_stays_on_disk() {
    let env = TestEnv::new();
    let f = env.write("notes.txt", "first\n");
    let server = Server::start(&args![env.root()]);
    let p = env.path_str("notes.txt");
    let read = version(&server.call("read_text_file", json!({"path": p}))).expect("version");
    // Someone else edits the file after the agent read it.
    std::fs::write(&f, "someone else's edit\n").expect("outside edit");
    let now = disk_version(&f);

    let r = server.call(
        "write_file",
        json!({"path": p, "content": "agent\n", "ifMatch": read}),
    );
    r.assert_error_contains("not the version named by ifMatch");
    r.assert_error_contains(&format!("its current version is {now}"));
    r.assert_error_contains("Read the file again and reapply");
    assert_eq!(env.read_string("notes.txt"), "someone else's edit\n");

    let r = server.call(
        "edit_file",
        json!({"path": p, "edits": [{"oldText": "someone", "newText": "agent"}], "ifMatch": read}),
    );
    r.assert_error_contains(&format!("its current version is {now}"));
    assert_eq!(env.read_string("notes.txt"), "someone else's edit\n");

    let r = server.call(
        "move_file",
        json!({"source": p, "destination": env.path_str("moved.txt"), "ifMatch": read}),
    );
    r.assert_error_contains(&format!("its current version is {now}"));
    assert_eq!(env.read_string("notes.txt"), "someone else's edit\n");
    assert!(!env.exists("moved.txt"));

    // Read again, reapply: the change lands and says what it wrote.
    let r = server.call(
        "write_file",
        json!({"path": p, "content": "agent\n", "ifMatch": now}),
    );
    r.assert_ok();
    assert_eq!(r.text, format!("Successfully wrote to {p}"));
    assert_eq!(version(&r), Some(version_of(b"agent\n")));
    assert_eq!(env.read_string("notes.txt"), "agent\n");
}

#[test]
fn a_stale_append_or_copy_is_refused_and_a_matching_one_goes_through() {
    let env = TestEnv::new();
    let f = env.write("log.txt", "one\n");
    let server = Server::start(&args![env.root()]);
    let p = env.path_str("log.txt");
    let copy = env.path_str("copy.txt");
    let read = version(&server.call("read_text_file", json!({"path": p}))).expect("version");
    std::fs::write(&f, "someone else's\n").expect("outside edit");
    let now = disk_version(&f);

    let r = server.call(
        "append_file",
        json!({"path": p, "content": "two\n", "ifMatch": read}),
    );
    r.assert_error_contains("Refusing to append to");
    r.assert_error_contains(&format!("its current version is {now}"));
    assert_eq!(env.read_string("log.txt"), "someone else's\n");

    let r = server.call(
        "copy_file",
        json!({"source": p, "destination": copy, "ifMatch": read}),
    );
    r.assert_error_contains("Refusing to copy");
    r.assert_error_contains(&format!("its current version is {now}"));
    assert!(!env.exists("copy.txt"));
    assert_eq!(env.read_string("log.txt"), "someone else's\n");

    // ifMatch names a file that must exist: a missing one is not created.
    let r = server.call(
        "append_file",
        json!({"path": env.path_str("new.txt"), "content": "x", "ifMatch": now}),
    );
    r.assert_error_contains("it does not exist");
    assert!(!env.exists("new.txt"));

    // The current version: both go through.
    server
        .call(
            "copy_file",
            json!({"source": p, "destination": copy, "ifMatch": now}),
        )
        .assert_ok();
    assert_eq!(env.read_string("copy.txt"), "someone else's\n");
    let r = server.call(
        "append_file",
        json!({"path": p, "content": "two\n", "ifMatch": now}),
    );
    r.assert_ok();
    assert_eq!(r.text, format!("Successfully appended to {p}"));
    assert_eq!(env.read_string("log.txt"), "someone else's\ntwo\n");
    // The version appended to is gone: a second append with it is refused.
    let r = server.call(
        "append_file",
        json!({"path": p, "content": "three\n", "ifMatch": now}),
    );
    r.assert_error_contains(&format!("its current version is {}", disk_version(&f)));
    assert_eq!(env.read_string("log.txt"), "someone else's\ntwo\n");
    // A copy never replaces its destination, whatever ifMatch says.
    let r = server.call(
        "copy_file",
        json!({"source": p, "destination": copy, "ifMatch": disk_version(&f)}),
    );
    r.assert_error();
    assert_eq!(env.read_string("copy.txt"), "someone else's\n");
}

#[test]
fn matching_versions_let_edits_and_moves_through_and_chain() {
    let env = TestEnv::new();
    env.write("a.txt", "alpha\n");
    let server = Server::start(&args![env.root()]);
    let p = env.path_str("a.txt");
    let v0 = version(&server.call("get_file_info", json!({"path": p}))).expect("version");
    let r = server.call(
        "edit_file",
        json!({"path": p, "edits": [{"oldText": "alpha", "newText": "beta"}], "ifMatch": v0}),
    );
    r.assert_ok();
    let v1 = version(&r).expect("the edit's version");
    assert_eq!(v1, version_of(b"beta\n"));
    // The version an edit returns is good for the next change.
    let r = server.call(
        "move_file",
        json!({"source": p, "destination": env.path_str("b.txt"), "ifMatch": v1}),
    );
    r.assert_ok();
    assert_eq!(env.read_string("b.txt"), "beta\n");
    assert!(!env.exists("a.txt"));
    // ifMatch on a file that does not exist (any more) is refused.
    let r = server.call(
        "write_file",
        json!({"path": p, "content": "x", "ifMatch": v1}),
    );
    r.assert_error_contains("it does not exist");
    assert!(!env.exists("a.txt"));
    // A directory has no version to match.
    env.mkdir("dir");
    let r = server.call(
        "move_file",
        json!({"source": env.path_str("dir"), "destination": env.path_str("dir2"), "ifMatch": v1}),
    );
    r.assert_error_contains("not a regular file");
    assert!(env.exists("dir"));
}

#[test]
fn a_same_size_rewrite_within_one_timestamp_tick_changes_the_version() {
    let env = TestEnv::new();
    let f = env.write("tick.txt", "AAAA");
    let server = Server::start(&args![env.root()]);
    let p = env.path_str("tick.txt");
    let before = std::fs::metadata(&f).expect("stat");
    let v1 = version(&server.call("read_text_file", json!({"path": p}))).expect("v1");
    // Same size, same inode, and the timestamps put back: to metadata it is
    // the same file.
    std::fs::write(&f, "BBBB").expect("rewrite");
    File::options()
        .write(true)
        .open(&f)
        .and_then(|h| {
            h.set_times(
                FileTimes::new()
                    .set_modified(before.modified().expect("mtime"))
                    .set_accessed(before.accessed().expect("atime")),
            )
        })
        .expect("set times");
    let after = std::fs::metadata(&f).expect("stat");
    assert_eq!(
        (after.len(), after.ino(), after.mtime(), after.mtime_nsec()),
        (
            before.len(),
            before.ino(),
            before.mtime(),
            before.mtime_nsec()
        )
    );
    let v2 = version(&server.call("read_text_file", json!({"path": p}))).expect("v2");
    assert_ne!(v1, v2);
    assert_eq!(v2, version_of(b"BBBB"));
    let r = server.call(
        "write_file",
        json!({"path": p, "content": "CCCC", "ifMatch": v1}),
    );
    r.assert_error_contains(&v2);
    assert_eq!(env.read_string("tick.txt"), "BBBB");
}

#[test]
fn racing_edits_with_the_same_version_never_both_win() {
    let env = TestEnv::new();
    let server = Server::start(&args![env.root()]);
    let p = env.path_str("race.txt");
    for round in 0..10 {
        env.write("race.txt", format!("base {round}\n"));
        let v = version(&server.call("get_file_info", json!({"path": p}))).expect("version");
        let results: Vec<(usize, bool)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..6)
                .map(|i| {
                    let (server, p, v) = (&server, &p, &v);
                    s.spawn(move || {
                        let r = server.call(
                            "edit_file",
                            json!({"path": p, "ifMatch": v, "edits": [
                                {"oldText": format!("base {round}"), "newText": format!("edit {round} by {i}")}
                            ]}),
                        );
                        (i, !r.is_error)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("join"))
                .collect()
        });
        let winners: Vec<usize> = results.iter().filter(|r| r.1).map(|r| r.0).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        assert_eq!(
            env.read_string("race.txt"),
            format!("edit {round} by {}\n", winners[0])
        );
    }
}

#[test]
fn racing_appends_with_the_same_version_never_both_win() {
    let env = TestEnv::new();
    let server = Server::start(&args![env.root()]);
    let p = env.path_str("log.txt");
    for round in 0..5 {
        env.write("log.txt", format!("base {round}\n"));
        let v = version(&server.call("get_file_info", json!({"path": p}))).expect("version");
        let results: Vec<(usize, bool)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..6)
                .map(|i| {
                    let (server, p, v) = (&server, &p, &v);
                    s.spawn(move || {
                        let line = format!("line by {i}\n");
                        let r = server.call(
                            "append_file",
                            json!({"path": p, "ifMatch": v, "content": line}),
                        );
                        (i, !r.is_error)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("join"))
                .collect()
        });
        let winners: Vec<usize> = results.iter().filter(|r| r.1).map(|r| r.0).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        assert_eq!(
            env.read_string("log.txt"),
            format!("base {round}\nline by {}\n", winners[0])
        );
    }
}

#[test]
fn require_if_match_refuses_unchecked_overwrites_and_teaches_the_flow() {
    let env = TestEnv::new();
    env.write("keep.txt", "kept\n");
    let server = Server::start(&args![env.root(), "--require-if-match"]);
    let p = env.path_str("keep.txt");
    // A new file needs no version.
    server
        .call(
            "write_file",
            json!({"path": env.path_str("new.txt"), "content": "n"}),
        )
        .assert_ok();
    let r = server.call("write_file", json!({"path": p, "content": "x"}));
    r.assert_error_contains("without ifMatch");
    r.assert_error_contains("get_file_info");
    r.assert_error_contains("call write_file again with ifMatch");
    let r = server.call(
        "edit_file",
        json!({"path": p, "edits": [{"oldText": "kept", "newText": "x"}]}),
    );
    r.assert_error_contains("without ifMatch");
    assert_eq!(env.read_string("keep.txt"), "kept\n");
    // A dry run changes nothing, so it needs no version.
    server
        .call(
            "edit_file",
            json!({"path": p, "dryRun": true, "edits": [{"oldText": "kept", "newText": "x"}]}),
        )
        .assert_ok();
    // Here get_file_info shows the version in its text too.
    let info = server.call("get_file_info", json!({"path": p}));
    let v = disk_version(&env.path("keep.txt"));
    assert!(
        info.text.ends_with(&format!("\nversion: {v}")),
        "{}",
        info.text
    );
    server
        .call(
            "write_file",
            json!({"path": p, "content": "checked\n", "ifMatch": v}),
        )
        .assert_ok();
    assert_eq!(env.read_string("keep.txt"), "checked\n");
}

#[test]
fn tools_list_declares_versions_and_if_match() {
    let env = TestEnv::new();
    let server = Server::start(&args![env.root()]);
    let tools: Vec<Value> = server
        .list_tools()
        .into_iter()
        .map(|t| serde_json::to_value(t).expect("tool json"))
        .collect();
    let tool = |n: &str| {
        tools
            .iter()
            .find(|t| t["name"] == n)
            .unwrap_or_else(|| panic!("{n} listed"))
            .clone()
    };
    for n in [
        "read_text_file",
        "read_media_file",
        "get_file_info",
        "write_file",
        "edit_file",
    ] {
        let out = &tool(n)["outputSchema"];
        assert_eq!(out["properties"]["version"]["type"], "string", "{n}");
        assert!(
            !out["required"]
                .as_array()
                .expect("required")
                .contains(&json!("version")),
            "{n}: the version is optional"
        );
    }
    let out = &tool("read_multiple_files")["outputSchema"];
    assert_eq!(out["properties"]["versions"]["type"], "array");
    for n in [
        "write_file",
        "edit_file",
        "move_file",
        "append_file",
        "copy_file",
    ] {
        let input = &tool(n)["inputSchema"];
        assert_eq!(input["properties"]["ifMatch"]["type"], "string", "{n}");
        assert!(
            !input["required"]
                .as_array()
                .expect("required")
                .contains(&json!("ifMatch")),
            "{n}"
        );
    }
}
