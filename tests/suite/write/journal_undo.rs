//! The undo journal against an agent that tries to defeat it (issue 32):
//! churning writes past `--journal-max-bytes` to evict the user's original
//! bytes, and reverts that would destroy or write through links. Checked on
//! disk: bytes, inode numbers, what exists.

use std::os::unix::fs::MetadataExt as _;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::cli::run_cli;
use crate::util::{Server, TestEnv};

fn cli(args: &[&dyn AsRef<std::ffi::OsStr>]) -> crate::util::cli::CliOutput {
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
    run_cli(&args, Duration::from_secs(30))
}

fn session_id(journal: &Path) -> String {
    let out = cli(&[&"journal", &"list", &journal, &"--json"]);
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).expect("list --json");
    v["sessions"][0]["session"].as_str().expect("id").to_owned()
}

fn revert(journal: &Path, id: &str) -> crate::util::cli::CliOutput {
    cli(&[&"journal", &"revert", &journal, &"--session", &id])
}

fn ino(p: &Path) -> u64 {
    std::fs::symlink_metadata(p).expect("stat").ino()
}

/// Issue 32 item 1. With a 3000-byte journal, the agent rewrites doc.txt
/// twenty times (20 KB of pre-images: most are evicted), yet the revert
/// puts the user's original bytes back, because the session's first
/// pre-image of each file is pinned and the revert restores from it. A
/// change whose first pre-image does not fit beside the pinned ones is
/// refused, the file untouched, and the refusal is in the server's log and
/// in the journal. On the old code the original of doc.txt was evicted and
/// the revert refused it (exit 1), and third.txt was overwritten.
#[test]
fn churning_writes_cannot_evict_the_first_pre_image_and_a_write_past_the_bound_is_refused() {
    let env = TestEnv::new();
    let original = "the user's own bytes\n".repeat(48); // 1008 bytes
    let other = "other file, original\n".repeat(70); // 1470 bytes
    let third = "third file, original\n".repeat(30); // 630 bytes
    env.write("doc.txt", &original);
    env.write("other.txt", &other);
    env.write("third.txt", &third);
    let third_ino = ino(&env.path("third.txt"));
    let journal = env.base().join("journal");
    let server = Server::start(&args![
        env.root(),
        "--journal",
        &journal,
        "--journal-max-bytes",
        "3000"
    ]);
    for k in 0..20 {
        server
            .call(
                "write_file",
                json!({"path": env.path_str("doc.txt"), "content": format!("agent {k:02}\n").repeat(100)}),
            )
            .assert_ok();
    }
    server
        .call(
            "write_file",
            json!({"path": env.path_str("other.txt"), "content": "agent\n"}),
        )
        .assert_ok();
    // 1008 + 1470 pinned: third.txt's 630 bytes do not fit.
    server
        .call(
            "write_file",
            json!({"path": env.path_str("third.txt"), "content": "agent\n"}),
        )
        .assert_error_contains("Refusing to change");
    assert_eq!(env.read_string("third.txt"), third);
    assert_eq!(ino(&env.path("third.txt")), third_ino);
    // A file already pinned can still be changed.
    server
        .call(
            "write_file",
            json!({"path": env.path_str("doc.txt"), "content": "agent last\n"}),
        )
        .assert_ok();
    let log = server.stderr();
    assert!(log.contains("refused a change"), "{log}");
    drop(server);
    let records = std::fs::read_to_string(journal.join("journal.jsonl")).unwrap();
    assert!(records.contains(r#""type":"evicted""#), "{records}");
    assert!(records.contains(r#""type":"refused""#), "{records}");
    let listed = cli(&[&"journal", &"list", &journal]);
    assert!(listed.stdout.contains("refused"), "{}", listed.stdout);
    assert!(listed.stdout.contains("third.txt"), "{}", listed.stdout);

    let id = session_id(&journal);
    let out = revert(&journal, &id);
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    assert_eq!(env.read_string("doc.txt"), original, "{}", out.stdout);
    assert_eq!(env.read_string("other.txt"), other);
    assert_eq!(env.read_string("third.txt"), third);
}

/// The session of issue 32 item 3: the agent makes `trash`, creates p.txt
/// with the same bytes as the user's doc.txt, moves it into `trash`, moves
/// doc.txt (the user's inode) to p.txt, and (in the first case) makes an
/// empty directory at doc.txt.
fn destroy_session(env: &TestEnv, server: &Server, mkdir_at_old_path: bool) {
    let p = |n: &str| env.path_str(n);
    server
        .call("create_directory", json!({"path": p("trash")}))
        .assert_ok();
    server
        .call(
            "write_file",
            json!({"path": p("p.txt"), "content": "the user's bytes\n"}),
        )
        .assert_ok();
    server
        .call(
            "move_file",
            json!({"source": p("p.txt"), "destination": p("trash/p.txt")}),
        )
        .assert_ok();
    server
        .call(
            "move_file",
            json!({"source": p("doc.txt"), "destination": p("p.txt")}),
        )
        .assert_ok();
    if mkdir_at_old_path {
        server
            .call("create_directory", json!({"path": p("doc.txt")}))
            .assert_ok();
    }
}

/// Issue 32 item 3, through the binary. With `create_directory` recorded,
/// the revert removes the directory that took doc.txt's old path, moves the
/// user's inode back (same inode number, same bytes), and removes only the
/// agent's p.txt and `trash`. On 08ae278 the directory was not recorded,
/// the move back was refused, and the undo of the create (matched by
/// content only) unlinked the user's original inode: doc.txt was gone.
#[test]
fn a_revert_removes_the_directories_made_and_never_the_users_inode() {
    let env = TestEnv::new();
    env.write("doc.txt", "the user's bytes\n");
    let user_ino = ino(&env.path("doc.txt"));
    let journal = env.base().join("journal");
    let server = Server::start(&args![env.root(), "--journal", &journal]);
    destroy_session(&env, &server, true);
    drop(server);
    assert!(env.path("doc.txt").is_dir());
    let id = session_id(&journal);
    let out = revert(&journal, &id);
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    assert_eq!(ino(&env.path("doc.txt")), user_ino, "{}", out.stdout);
    assert_eq!(env.read_string("doc.txt"), "the user's bytes\n");
    assert!(
        !env.exists("p.txt") && !env.exists("trash"),
        "{}",
        out.stdout
    );
}

/// The same session, but the empty directory at doc.txt is made by someone
/// else after the session (not recorded): the move back is refused, and
/// every older change that depends on it (p.txt, `trash`) is left alone and
/// named, so the user's inode stays at p.txt with its bytes. A created file
/// replaced by another inode with the same bytes is not removed either.
#[test]
fn a_refused_undo_stops_the_older_changes_that_depend_on_it() {
    let env = TestEnv::new();
    env.write("doc.txt", "the user's bytes\n");
    let user_ino = ino(&env.path("doc.txt"));
    let journal = env.base().join("journal");
    let server = Server::start(&args![env.root(), "--journal", &journal]);
    destroy_session(&env, &server, false);
    server
        .call(
            "write_file",
            json!({"path": env.path_str("twin.txt"), "content": "same\n"}),
        )
        .assert_ok();
    drop(server);
    std::fs::create_dir(env.path("doc.txt")).unwrap();
    // twin.txt: another inode with the bytes the agent wrote (made before
    // the agent's goes, so its inode number is not the freed one reused).
    std::fs::write(env.path("twin.new"), "same\n").unwrap();
    std::fs::rename(env.path("twin.new"), env.path("twin.txt")).unwrap();
    let twin_ino = ino(&env.path("twin.txt"));
    let id = session_id(&journal);
    let out = revert(&journal, &id);
    assert_eq!(out.code, Some(1), "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("is taken"), "{}", out.stdout);
    assert!(out.stdout.contains("depends on #4"), "{}", out.stdout);
    assert_eq!(ino(&env.path("p.txt")), user_ino, "{}", out.stdout);
    assert_eq!(env.read_string("p.txt"), "the user's bytes\n");
    assert_eq!(env.read_string("trash/p.txt"), "the user's bytes\n");
    assert!(env.path("doc.txt").is_dir());
    assert_eq!(ino(&env.path("twin.txt")), twin_ino, "{}", out.stdout);
}

/// Issue 32 item 4. The agent makes `stage`, writes `stage/pre-commit` and
/// moves it to hook.sh. After the session `stage` is replaced by a symlink
/// to `.git/hooks`. The revert reaches every place one directory at a time
/// without following a link, under the session's rules (`.git` is
/// read-only by default), so it refuses to move hook.sh back, and the older
/// changes under `stage` wait for it: nothing lands in `.git/hooks`. On
/// 08ae278 the revert resolved `stage/pre-commit` through the link and
/// renamed the agent's file to `.git/hooks/pre-commit`.
#[test]
fn a_revert_never_follows_a_link_planted_after_the_session_into_git_hooks() {
    let env = TestEnv::new();
    env.mkdir(".git/hooks");
    let journal = env.base().join("journal");
    let server = Server::start(&args![
        env.root(),
        "--journal",
        &journal,
        "--hide",
        "secret"
    ]);
    let p = |n: &str| env.path_str(n);
    server
        .call("create_directory", json!({"path": p("stage")}))
        .assert_ok();
    server
        .call(
            "write_file",
            json!({"path": p("stage/pre-commit"), "content": "#!/bin/sh\necho agent\n"}),
        )
        .assert_ok();
    server
        .call(
            "move_file",
            json!({"source": p("stage/pre-commit"), "destination": p("hook.sh")}),
        )
        .assert_ok();
    drop(server);
    // The session's rules are in its start record.
    let records = std::fs::read_to_string(journal.join("journal.jsonl")).unwrap();
    assert!(records.contains(r#""hide":["secret"]"#), "{records}");
    std::fs::remove_dir(env.path("stage")).unwrap();
    std::os::unix::fs::symlink(".git/hooks", env.path("stage")).unwrap();
    let id = session_id(&journal);
    let out = revert(&journal, &id);
    assert_eq!(out.code, Some(1), "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("symbolic link"), "{}", out.stdout);
    assert!(
        std::fs::symlink_metadata(env.path(".git/hooks/pre-commit")).is_err(),
        "{}",
        out.stdout
    );
    assert_eq!(env.read_string("hook.sh"), "#!/bin/sh\necho agent\n");
    assert!(
        std::fs::symlink_metadata(env.path("stage"))
            .unwrap()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_dir(env.path(".git/hooks")).unwrap().count(),
        0
    );
}
