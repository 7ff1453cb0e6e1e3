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
