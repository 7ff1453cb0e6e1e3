//! The audit log (issue 22, item 3): one JSON line per call, written before
//! the reply, with versions checked against the files on disk; never a
//! file's content or an edit's text; refused at startup inside a root (also
//! through a symlink); and an unwritable log refuses changes while reads go
//! on.

use std::path::Path;

use serde_json::{Value, json};

use crate::util::{Server, TestEnv, version_of};

fn lines(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .expect("read the audit log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

const SECRET_CONTENT: &str = "SECRET-CONTENT-never-logged";
const SECRET_EDIT: &str = "SECRET-NEWTEXT-never-logged";

#[test]
fn the_audit_log_records_every_call_with_versions_checked_against_disk() {
    let env = TestEnv::new();
    env.write("a.txt", "alpha\n");
    let log = env.base().join("audit.log");
    let server = Server::start(&args![env.root(), "--audit", &log]);
    let root = env.root_str();
    let p = |n: &str| env.path_str(n);

    let calls = [
        ("read_text_file", json!({"path": p("a.txt")})),
        (
            "write_file",
            json!({"path": p("b.txt"), "content": format!("{SECRET_CONTENT}\n")}),
        ),
        (
            "edit_file",
            json!({"path": p("b.txt"), "edits": [{"oldText": SECRET_CONTENT, "newText": SECRET_EDIT}]}),
        ),
        (
            "move_file",
            json!({"source": p("b.txt"), "destination": p("c.txt")}),
        ),
        ("create_directory", json!({"path": p("d")})),
        ("read_text_file", json!({"path": "missing.txt"})),
        ("get_file_info", json!({"path": "c.txt"})),
    ];
    for (i, (tool, args)) in calls.iter().enumerate() {
        server.call(tool, args.clone());
        // Written before the reply: the line is there when the reply is.
        assert_eq!(lines(&log).len(), i + 2, "after {tool}");
    }
    let text = std::fs::read_to_string(&log).expect("log");
    assert!(
        !text.contains("SECRET"),
        "contents leaked into the log: {text}"
    );
    assert!(
        !text.contains("alpha"),
        "contents leaked into the log: {text}"
    );

    let recs = lines(&log);
    assert_eq!(recs[0]["event"], "start");
    let session = recs[0]["session"].as_str().expect("session").to_owned();
    assert_eq!(session.len(), 32);
    for (i, (rec, (tool, _))) in recs[1..].iter().zip(calls.iter()).enumerate() {
        assert_eq!(rec["session"], json!(session), "{rec}");
        assert_eq!(rec["seq"], json!(i + 1), "{rec}");
        assert_eq!(rec["tool"], json!(tool), "{rec}");
        assert!(
            rec["client"]["name"].is_string(),
            "client from initialize: {rec}"
        );
        assert!(rec["time"].as_str().is_some_and(|t| t.ends_with('Z')));
    }
    let [read, write, edit, mv, mkdir, missing, info] = &recs[1..] else {
        panic!("{recs:?}")
    };
    assert_eq!(read["outcome"], "ok");
    assert_eq!(read["bytesRead"], 6);
    assert_eq!(
        read["paths"],
        json!([{"given": p("a.txt"), "canonical": format!("{root}/a.txt")}])
    );
    let written = format!("{SECRET_CONTENT}\n");
    assert_eq!(write["bytesWritten"], written.len());
    assert_eq!(
        write["changes"],
        json!([{"path": p("b.txt"), "before": null, "after": version_of(written.as_bytes())}])
    );
    let edited = format!("{SECRET_EDIT}\n");
    assert_eq!(
        edit["changes"],
        json!([{"path": p("b.txt"), "before": version_of(written.as_bytes()), "after": version_of(edited.as_bytes())}])
    );
    // The move's versions are the file on disk now.
    let on_disk = version_of(&env.read("c.txt"));
    assert_eq!(on_disk, version_of(edited.as_bytes()));
    assert_eq!(
        mv["changes"],
        json!([
            {"path": p("b.txt"), "before": on_disk, "after": null},
            {"path": p("c.txt"), "before": null, "after": on_disk},
        ])
    );
    assert_eq!(
        mv["paths"],
        json!([
            {"given": p("b.txt"), "canonical": format!("{root}/b.txt")},
            {"given": p("c.txt"), "canonical": format!("{root}/c.txt")},
        ])
    );
    assert_eq!(mkdir["outcome"], "ok");
    assert_eq!(mkdir["changes"], json!([]));
    assert_eq!(missing["outcome"], "error");
    assert_eq!(missing["error"], "Os");
    assert_eq!(
        missing["paths"],
        json!([{"given": "missing.txt", "canonical": format!("{root}/missing.txt")}])
    );
    assert_eq!(info["outcome"], "ok");
    assert!(
        info.get("changes").is_none(),
        "a read has no changes: {info}"
    );
}

#[test]
fn an_audit_log_inside_a_root_or_reached_through_a_symlink_into_one_is_refused() {
    let env = TestEnv::new();
    env.mkdir("sub");
    let inside = env.path("sub/audit.log");
    let (code, err) = Server::start_expect_fail(&args![env.root(), "--audit", &inside]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("inside an allowed directory"), "{err}");
    assert!(!inside.exists(), "nothing is created inside the root");

    // A directory symlink outside that leads into the root.
    let link_dir = env.base().join("dirlink");
    std::os::unix::fs::symlink(env.path("sub"), &link_dir).expect("symlink");
    let (code, err) =
        Server::start_expect_fail(&args![env.root(), "--audit", link_dir.join("a.log")]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("inside an allowed directory"), "{err}");
    assert!(!inside.exists());
    assert!(!env.exists("sub/a.log"));

    // A symlink as the log itself, pointing into the root.
    env.write("sub/target.log", "");
    let link = env.base().join("link.log");
    std::os::unix::fs::symlink(env.path("sub/target.log"), &link).expect("symlink");
    let (code, err) = Server::start_expect_fail(&args![env.root(), "--audit", &link]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(env.read_string("sub/target.log"), "");

    // The root itself named as a directory above: the root's parent is fine.
    let ok = env.base().join("ok.log");
    let server = Server::start(&args![env.root(), "--audit", &ok]);
    server
        .call("list_allowed_directories", json!({}))
        .assert_ok();
    drop(server);
    assert_eq!(lines(&ok).len(), 2);
}

#[test]
fn an_unwritable_audit_log_refuses_changes_and_reads_go_on() {
    let env = TestEnv::new();
    env.write("a.txt", "alpha\n");
    // Every write to /dev/full fails (ENOSPC).
    let server = Server::start(&args![env.root(), "--audit", "/dev/full"]);
    let r = server.call("read_text_file", json!({"path": "a.txt"}));
    r.assert_ok();
    assert_eq!(r.text, "alpha\n");
    for (tool, args) in [
        ("write_file", json!({"path": "b.txt", "content": "x"})),
        (
            "edit_file",
            json!({"path": "a.txt", "edits": [{"oldText": "alpha", "newText": "beta"}]}),
        ),
        ("create_directory", json!({"path": "d"})),
        (
            "move_file",
            json!({"source": "a.txt", "destination": "m.txt"}),
        ),
    ] {
        let r = server.call(tool, args);
        r.assert_error_contains("audit log cannot be written");
        r.assert_error_contains("reads still work");
    }
    assert!(!env.exists("b.txt"));
    assert!(!env.exists("d"));
    assert!(!env.exists("m.txt"));
    assert_eq!(env.read_string("a.txt"), "alpha\n");
}

/// `--audit-fd`: a descriptor handed over by a supervisor (here a shell) is
/// written to, and one open on a file inside a root is refused (exit 2).
#[test]
fn an_audit_descriptor_is_used_and_checked_like_a_path() {
    let env = TestEnv::new();
    let run = |log: &Path| {
        std::process::Command::new("sh")
            .arg("-c")
            .arg(r#"exec 3>>"$1"; exec "$2" filesystem "$3" --audit-fd 3 --print-config"#)
            .arg("sh")
            .arg(log)
            .arg(crate::util::bin())
            .arg(env.root())
            .output()
            .expect("run tuls through sh")
    };
    let log = env.base().join("fd.log");
    let out = run(&log);
    assert!(out.status.success(), "{out:?}");
    let recs = lines(&log);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["event"], "start");

    let inside = env.path("fd-inside.log");
    let out = run(&inside);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("inside an allowed directory"), "{err}");
    assert_eq!(
        env.read_string("fd-inside.log"),
        "",
        "nothing written there"
    );
}

/// The record names what the call resolved (issue 31): a path through an
/// in-root symlink is the link's target, taken when the tool resolved it,
/// for reads as for writes, and each file changed is named the same way;
/// only the arguments the tool's table entry names as paths are paths; an
/// error is named by its variant.
#[test]
fn the_audit_record_names_the_canonical_path_the_call_resolved() {
    let env = TestEnv::new();
    env.write("real.txt", "old\n");
    env.mkdir("sub");
    env.symlink("real.txt", "l");
    env.symlink("sub", "d");
    let log = env.base().join("audit.log");
    let server = Server::start(&args![env.root(), "--audit", &log]);
    let root = env.root_str();
    let canonical = |n: &str| format!("{root}/{n}");

    server
        .call("write_file", json!({"path": "l", "content": "new\n"}))
        .assert_ok();
    server
        .call("read_text_file", json!({"path": "l"}))
        .assert_ok();
    server
        .call("write_file", json!({"path": "d/f.txt", "content": "f\n"}))
        .assert_ok();
    server
        .call("search_files", json!({"path": "d", "pattern": "l"}))
        .assert_ok();
    // `path` is no argument of this tool: the call is refused, and its
    // record names no path.
    server
        .call("list_allowed_directories", json!({"path": "l"}))
        .assert_error();
    server
        .call("read_text_file", json!({"path": "../outside.txt"}))
        .assert_error();
    server
        .call("move_file", json!({"source": "l", "destination": "m"}))
        .assert_ok();

    let recs = lines(&log);
    let [_, write, read, nested, search, listed, outside, mv] = &recs[..] else {
        panic!("{recs:?}")
    };
    assert_eq!(
        write["paths"],
        json!([{"given": "l", "canonical": canonical("real.txt")}])
    );
    assert_eq!(
        write["changes"],
        json!([{"path": canonical("real.txt"), "before": version_of(b"old\n"), "after": version_of(b"new\n")}])
    );
    assert_eq!(
        read["paths"],
        json!([{"given": "l", "canonical": canonical("real.txt")}])
    );
    assert_eq!(
        nested["paths"],
        json!([{"given": "d/f.txt", "canonical": canonical("sub/f.txt")}])
    );
    assert_eq!(
        nested["changes"],
        json!([{"path": canonical("sub/f.txt"), "before": null, "after": version_of(b"f\n")}])
    );
    // `pattern` is not a path, even when it names one.
    assert_eq!(
        search["paths"],
        json!([{"given": "d", "canonical": canonical("sub")}])
    );
    assert_eq!(listed["paths"], json!([]));
    assert_eq!(listed["error"], "InvalidArguments");
    assert_eq!(outside["error"], "OutsideRoots");
    assert_eq!(
        outside["paths"],
        json!([{"given": "../outside.txt", "canonical": null}])
    );
    // A move acts on the link itself.
    assert_eq!(
        mv["paths"],
        json!([
            {"given": "l", "canonical": canonical("l")},
            {"given": "m", "canonical": canonical("m")},
        ])
    );
    assert_eq!(mv["changes"][0]["path"], json!(canonical("l")));
    assert_eq!(mv["changes"][1]["path"], json!(canonical("m")));
}
