//! The undo journal (issue 22): `--journal DIR` keeps what every change
//! replaced outside the roots; `tuls journal list` shows it and `tuls
//! journal revert` puts a session back, refusing any file changed after the
//! session. Checked on disk: content and mode of the whole tree.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::cli::{run_cli, run_cli_stdout_closed};
use crate::util::raw::RawServer;
use crate::util::{Server, TestEnv, wait_until};

fn cli(args: &[&dyn AsRef<std::ffi::OsStr>]) -> crate::util::cli::CliOutput {
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
    run_cli(&args, Duration::from_secs(30))
}

/// The sessions of a journal, from `tuls journal list --json`.
fn sessions(journal: &Path) -> Vec<Value> {
    let out = cli(&[&"journal", &"list", &journal, &"--json"]);
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).expect("list --json");
    v["sessions"].as_array().expect("sessions").clone()
}

fn revert(journal: &Path, session: &str, extra: &[&str]) -> crate::util::cli::CliOutput {
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> =
        vec![&"journal", &"revert", &journal, &"--session", &session];
    for e in extra {
        args.push(e);
    }
    cli(&args)
}

/// A tree with files of several modes, in and below the root.
fn fixture(env: &TestEnv) {
    env.write("a.txt", "alpha\n");
    env.chmod("a.txt", 0o640);
    env.write("b.txt", "beta one\nbeta two\n");
    env.chmod("b.txt", 0o600);
    env.write("log.txt", "l1\n");
    env.chmod("log.txt", 0o664);
    env.mkdir("sub");
    env.write("sub/c.txt", "charlie\n");
    env.chmod("sub/c.txt", 0o755);
}

/// Every kind of change, some files changed twice, one moved then edited.
fn session(server: &Server, env: &TestEnv) {
    let p = |n: &str| env.path_str(n);
    let calls = [
        (
            "write_file",
            json!({"path": p("a.txt"), "content": "agent 1\n"}),
        ),
        (
            "edit_file",
            json!({"path": p("b.txt"), "edits": [{"oldText": "one", "newText": "ONE"}]}),
        ),
        (
            "write_file",
            json!({"path": p("new.txt"), "content": "new\n"}),
        ),
        (
            "append_file",
            json!({"path": p("log.txt"), "content": "l2\n"}),
        ),
        (
            "append_file",
            json!({"path": p("made.log"), "content": "m\n"}),
        ),
        (
            "copy_file",
            json!({"source": p("a.txt"), "destination": p("sub/a-copy.txt")}),
        ),
        (
            "move_file",
            json!({"source": p("sub/c.txt"), "destination": p("moved.txt")}),
        ),
        (
            "edit_file",
            json!({"path": p("moved.txt"), "edits": [{"oldText": "charlie", "newText": "delta"}]}),
        ),
        (
            "write_file",
            json!({"path": p("a.txt"), "content": "agent 2\n"}),
        ),
        (
            "append_file",
            json!({"path": p("log.txt"), "content": "l3\n"}),
        ),
    ];
    for (tool, args) in calls {
        server.call(tool, args.clone()).assert_ok();
    }
}

/// The fixture, then one journaled session of [`session`]'s changes:
/// the journal's directory, and the tree as it was before the session.
fn journaled_session(env: &TestEnv) -> (std::path::PathBuf, crate::util::snapshot::Snapshot) {
    fixture(env);
    let journal = env.base().join("journal");
    let before = env.snapshot(env.root());
    let server = Server::start(&args![env.root(), "--journal", &journal]);
    session(&server, env);
    drop(server);
    (journal, before)
}

#[test]
fn a_session_of_every_kind_of_change_is_reverted_to_the_exact_tree() {
    let env = TestEnv::new();
    let (journal, before) = journaled_session(&env);
    assert_ne!(
        env.snapshot(env.root()),
        before,
        "the session changed the tree"
    );
    // Pre-images are outside the root, content-addressed: a.txt's first
    // content under its version, and the very file (renamed in, not copied:
    // it still has a.txt's mode, where a copy would be 0600).
    assert!(journal.join("objects").read_dir().expect("objects").count() >= 3);
    let alpha = blake3::hash(b"alpha\n").to_hex()[..40].to_owned();
    let object = journal.join("objects").join(&alpha);
    assert_eq!(std::fs::read(&object).expect("pre-image"), b"alpha\n");
    let mode = std::fs::metadata(&object).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o640);

    let list = sessions(&journal);
    assert_eq!(list.len(), 1, "{list:?}");
    let id = list[0]["session"].as_str().expect("id").to_owned();
    let changes = list[0]["changes"].as_array().expect("changes");
    let ops: Vec<&str> = changes.iter().map(|c| c["op"].as_str().unwrap()).collect();
    assert_eq!(
        ops,
        [
            "replace", "replace", "create", "append", "create", "create", "move", "replace",
            "replace", "append"
        ]
    );
    let text = cli(&[&"journal", &"list", &journal]);
    assert!(text.stdout.contains(&id), "{}", text.stdout);
    assert!(text.stdout.contains("move"), "{}", text.stdout);

    let out = revert(&journal, &id, &[]);
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    env.snapshot(env.root())
        .assert_same(&before, "root after revert");
    // Recorded as reverted: a second revert has nothing to do.
    let out = revert(&journal, &id, &[]);
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("nothing to revert"), "{}", out.stdout);
    env.snapshot(env.root())
        .assert_same(&before, "root after a second revert");
}

/// `tuls journal revert ... | head -1`: stdout closed before the revert's
/// first line. The revert still undoes every change and records it, and
/// exits 0. Before the fix, the first `println!` panicked (exit 101) with one
/// change undone and none recorded.
#[test]
fn a_revert_whose_stdout_is_closed_still_finishes_and_is_recorded() {
    let env = TestEnv::new();
    let (journal, before) = journaled_session(&env);
    let id = sessions(&journal)[0]["session"]
        .as_str()
        .expect("id")
        .to_owned();
    let out = run_cli_stdout_closed(
        &[
            "journal".as_ref(),
            "revert".as_ref(),
            journal.as_os_str(),
            "--session".as_ref(),
            id.as_ref(),
        ],
        Duration::from_secs(30),
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    env.snapshot(env.root())
        .assert_same(&before, "root after a revert with stdout closed");
    let list = sessions(&journal);
    let reverted = list[0]["changes"].as_array().expect("changes");
    assert!(
        reverted.iter().all(|c| c["reverted"] == json!(true)),
        "{list:?}"
    );
}

#[test]
fn revert_to_a_point_undoes_only_the_later_changes() {
    let env = TestEnv::new();
    fixture(&env);
    let journal = env.base().join("journal");
    let server = Server::start(&args![env.root(), "--journal", &journal]);
    session(&server, &env);
    drop(server);
    let id = sessions(&journal)[0]["session"]
        .as_str()
        .unwrap()
        .to_owned();
    // After change 2 (a.txt written, b.txt edited): the rest is undone.
    let out = revert(&journal, &id, &["--to", "2"]);
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    assert_eq!(env.read_string("a.txt"), "agent 1\n");
    assert_eq!(env.read_string("b.txt"), "beta ONE\nbeta two\n");
    assert_eq!(env.read_string("log.txt"), "l1\n");
    assert_eq!(env.read_string("sub/c.txt"), "charlie\n");
    assert!(!env.exists("new.txt") && !env.exists("moved.txt") && !env.exists("made.log"));
}

#[test]
fn a_revert_over_a_later_outside_edit_refuses_that_file_and_restores_the_rest() {
    let env = TestEnv::new();
    fixture(&env);
    let journal = env.base().join("journal");
    let server = Server::start(&args![env.root(), "--journal", &journal]);
    session(&server, &env);
    drop(server);
    // A person edits two files after the session.
    std::fs::write(env.path("b.txt"), "human edit\n").unwrap();
    std::fs::write(env.path("new.txt"), "human keeps this\n").unwrap();
    let id = sessions(&journal)[0]["session"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = revert(&journal, &id, &[]);
    assert_eq!(out.code, Some(1), "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("refused"), "{}", out.stdout);
    assert!(out.stdout.contains("b.txt"), "{}", out.stdout);
    assert_eq!(env.read_string("b.txt"), "human edit\n");
    assert_eq!(env.read_string("new.txt"), "human keeps this\n");
    // The rest is back.
    assert_eq!(env.read_string("a.txt"), "alpha\n");
    assert_eq!(env.read_string("log.txt"), "l1\n");
    assert_eq!(env.read_string("sub/c.txt"), "charlie\n");
    assert!(!env.exists("moved.txt") && !env.exists("made.log"));
    assert!(!env.exists("sub/a-copy.txt"));
    let mode = std::fs::metadata(env.path("a.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o640);

    // --force lists what it overwrites, then puts the pre-session content back.
    let out = revert(&journal, &id, &["--force"]);
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("will be overwritten"), "{}", out.stdout);
    assert!(out.stdout.contains("b.txt"), "{}", out.stdout);
    assert_eq!(env.read_string("b.txt"), "beta one\nbeta two\n");
    assert!(!env.exists("new.txt"));
}

#[test]
fn a_journal_left_by_kill_9_is_listed_and_reverted() {
    let env = TestEnv::new();
    fixture(&env);
    let journal = env.base().join("journal");
    let before = env.snapshot(env.root());
    let server = Server::start(&args![env.root(), "--journal", &journal]);
    session(&server, &env);
    let pid = server.pid().expect("pid");
    // No clean end: the process is killed, and a record torn mid-line.
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).expect("pid"),
        rustix::process::Signal::KILL,
    )
    .expect("kill -9");
    drop(server);
    let log = journal.join("journal.jsonl");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.extend_from_slice(br#"{"type":"change","session":"x","seq":99,"ti"#);
    std::fs::write(&log, bytes).unwrap();

    let out = cli(&[&"journal", &"list", &journal]);
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("skipped"), "{}", out.stdout);
    let list = sessions(&journal);
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["changes"].as_array().unwrap().len(), 10);
    let id = list[0]["session"].as_str().unwrap().to_owned();
    let out = revert(&journal, &id, &[]);
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    env.snapshot(env.root())
        .assert_same(&before, "root after revert");
}

/// Past the bound the oldest pre-images go (never a file's first in the
/// session: see `journal_undo`), the journal says which, and the revert
/// restores from the first one.
#[test]
fn past_the_bound_the_oldest_pre_images_go_and_the_journal_says_so() {
    let env = TestEnv::new();
    env.write("one.txt", "1111111111\n"); // 11 bytes, pinned
    let journal = env.base().join("journal");
    let server = Server::start(&args![
        env.root(),
        "--journal",
        &journal,
        "--journal-max-bytes",
        "15"
    ]);
    for content in ["aaa\n", "bbb\n", "ccc\n"] {
        server
            .call(
                "write_file",
                json!({"path": env.path_str("one.txt"), "content": content}),
            )
            .assert_ok();
    }
    drop(server);
    let list = sessions(&journal);
    let changes = list[0]["changes"].as_array().unwrap();
    assert_eq!(changes[0]["evicted"], json!(false), "{changes:?}");
    assert_eq!(changes[1]["evicted"], json!(true), "{changes:?}");
    assert_eq!(changes[2]["evicted"], json!(false), "{changes:?}");
    let log = std::fs::read_to_string(journal.join("journal.jsonl")).unwrap();
    assert!(log.contains(r#""type":"evicted""#), "{log}");
    let id = list[0]["session"].as_str().unwrap().to_owned();
    // A pre-image changed on the host is not written back, and the older
    // changes to that file wait for it.
    let kept = changes[2]["object"].as_str().unwrap();
    std::fs::write(journal.join("objects").join(kept), "forged\n").unwrap();
    let out = revert(&journal, &id, &[]);
    assert_eq!(out.code, Some(1), "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("no longer has the content"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("depends on #3"), "{}", out.stdout);
    assert_eq!(env.read_string("one.txt"), "ccc\n");
    std::fs::write(journal.join("objects").join(kept), "bbb\n").unwrap();
    let out = revert(&journal, &id, &[]);
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("evicted"), "{}", out.stdout);
    assert_eq!(env.read_string("one.txt"), "1111111111\n");
}

#[test]
fn a_journal_inside_a_root_through_a_symlink_or_holding_one_is_refused() {
    let env = TestEnv::new();
    env.mkdir("sub");
    let inside = env.path("sub/journal");
    let (code, err) = Server::start_expect_fail(&args![env.root(), "--journal", &inside]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("inside"), "{err}");
    assert!(!inside.exists(), "nothing is created inside the root");

    // A symlink outside that names the root itself, or a directory in it.
    for target in [env.root(), env.path("sub")] {
        let link = env.base().join("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let (code, err) = Server::start_expect_fail(&args![env.root(), "--journal", &link]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("inside"), "{err}");
    }
    assert!(!env.exists("sub/objects") && !env.exists("objects"));
    assert!(!env.exists("journal.jsonl") && !env.exists("sub/journal.jsonl"));

    // Outside: --print-config shows it.
    let ok = env.base().join("journal");
    let out = cli(&[
        &"filesystem",
        &env.root(),
        &"--journal",
        &ok,
        &"--print-config",
    ]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let config: Value = serde_json::from_str(&out.stdout).expect("config");
    assert_eq!(config["journal"]["dir"], json!(ok.display().to_string()));
    assert!(ok.join("objects").is_dir());

    // A root inside the journal.
    let (code, err) = Server::start_expect_fail(&args![env.root(), "--journal", env.base()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("lies inside the undo journal"), "{err}");
}

/// Every file's pre-session content, after a `kill -9` with writes in
/// flight and a revert: back in place, or (for a file whose last change
/// was in flight, so unrecorded, and so refused) still at hand in the
/// journal's objects or under the writer's temp name, and put back by
/// `revert --force`. Nothing is lost.
#[test]
fn a_kill_9_with_writes_in_flight_loses_no_old_content() {
    let env = TestEnv::new();
    let originals: Vec<Vec<u8>> = (0..8)
        .map(|i| format!("original {i}\n").repeat(2000).into_bytes())
        .collect();
    for (i, o) in originals.iter().enumerate() {
        env.write(format!("f{i}.txt"), o);
    }
    let journal = env.base().join("journal");
    let mut raw = RawServer::start(&args![env.root(), "--journal", &journal]);
    raw.initialize("2025-11-25");
    for k in 0..100 {
        let path = env.path_str(format!("f{}.txt", k % 8));
        raw.send(
            &json!({"jsonrpc": "2.0", "id": 100 + k, "method": "tools/call", "params": {
                "name": "write_file",
                "arguments": {"path": path, "content": format!("agent {k}\n").repeat(2000)},
            }}),
        );
    }
    // Killed once some changes are recorded, with the rest in flight.
    let log = journal.join("journal.jsonl");
    let recorded = || std::fs::read(&log).map_or(0, |b| b.iter().filter(|c| **c == b'\n').count());
    assert!(wait_until(Duration::from_secs(30), || recorded() >= 8));
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(raw.pid() as i32).expect("pid"),
        rustix::process::Signal::KILL,
    )
    .expect("kill -9");
    assert!(raw.wait_exit(Duration::from_secs(10)).is_some());
    assert!(recorded() < 101, "killed before the end");

    let list = sessions(&journal);
    assert_eq!(list.len(), 1, "{list:?}");
    let id = list[0]["session"].as_str().unwrap().to_owned();
    let out = revert(&journal, &id, &[]);
    assert!(
        matches!(out.code, Some(0 | 1)),
        "{}{}",
        out.stdout,
        out.stderr
    );
    let contents = |dir: &Path, keep: &dyn Fn(&str) -> bool| -> Vec<Vec<u8>> {
        std::fs::read_dir(dir)
            .expect("read_dir")
            .map(|e| e.expect("entry"))
            .filter(|e| keep(&e.file_name().to_string_lossy()))
            .map(|e| std::fs::read(e.path()).expect("read"))
            .collect()
    };
    let kept = contents(&journal.join("objects"), &|_| true);
    let temps = contents(&env.root(), &|n| n.ends_with(".tmp"));
    let mut back = 0;
    for (i, o) in originals.iter().enumerate() {
        if env.read(format!("f{i}.txt")) == *o {
            back += 1;
        } else {
            assert_ne!(out.code, Some(0), "f{i}.txt not restored: {}", out.stdout);
            assert!(
                kept.contains(o) || temps.contains(o),
                "the original of f{i}.txt is lost: {}",
                out.stdout
            );
        }
    }
    // How many files come back without --force depends on where the kill
    // landed (at times every file's last change was in flight, so every
    // one is refused). With --force, every file gets its pre-session
    // content back: nothing was lost.
    eprintln!("journal kill -9: {back} of 8 files back without --force");
    if back < originals.len() {
        let forced = revert(&journal, &id, &["--force"]);
        assert_eq!(forced.code, Some(0), "{}{}", forced.stdout, forced.stderr);
        for (i, o) in originals.iter().enumerate() {
            assert!(
                env.read(format!("f{i}.txt")) == *o,
                "f{i}.txt not restored by --force: {}",
                forced.stdout
            );
        }
    }
}
