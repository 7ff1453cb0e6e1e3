//! The audit log's hash chain (issue 32 item 6): every line carries the
//! BLAKE3 of the line before (`prev`), across restarts of the server on the
//! same file, and `tuls audit verify` names the first record that does not
//! chain (exit 1), says intact (exit 0), or cannot read (exit 2).

use std::time::Duration;

use serde_json::{Value, json};

use crate::util::cli::run_cli;
use crate::util::{Server, TestEnv};

fn verify(log: &std::path::Path) -> crate::util::cli::CliOutput {
    run_cli(
        &["audit".as_ref(), "verify".as_ref(), log.as_os_str()],
        Duration::from_secs(30),
    )
}

/// Two sessions on one log; each line's `prev` checked here against the
/// BLAKE3 of the line before on disk (lines are written canonical), then a
/// middle record changed, one removed, and the file's first records cut:
/// `verify` names the record after each. On 08ae278 lines had no `prev`
/// and there was no `tuls audit verify` (exit 2, unknown subcommand).
#[test]
fn the_audit_log_is_chained_across_sessions_and_verify_names_the_first_broken_record() {
    let env = TestEnv::new();
    env.write("a.txt", "alpha\n");
    let log = env.base().join("audit.log");
    for round in 0..2 {
        let server = Server::start(&args![env.root(), "--audit", &log]);
        server
            .call("read_text_file", json!({"path": env.path_str("a.txt")}))
            .assert_ok();
        server
            .call(
                "write_file",
                json!({"path": env.path_str("a.txt"), "content": format!("round {round}\n")}),
            )
            .assert_ok();
        drop(server);
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{text}");
    let mut prev = "0".repeat(64);
    for l in &lines {
        let v: Value = serde_json::from_str(l).expect("json");
        assert_eq!(v["prev"], json!(prev), "{text}");
        prev = blake3::hash(l.as_bytes()).to_hex().to_string();
    }
    let out = verify(&log);
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("6 record(s)"), "{}", out.stdout);
    assert!(out.stdout.contains("intact"), "{}", out.stdout);

    // A middle record changed: the one after it is named.
    let changed = text.replacen(
        "\"tool\":\"read_text_file\"",
        "\"tool\":\"list_directory\"",
        1,
    );
    let forged = env.base().join("forged.log");
    std::fs::write(&forged, &changed).unwrap();
    let out = verify(&forged);
    assert_eq!(out.code, Some(1), "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("broken at line 3"), "{}", out.stdout);
    assert!(out.stdout.contains("seq 2"), "{}", out.stdout);

    // A record removed (the first write): the next one is named.
    let mut kept: Vec<&str> = lines.clone();
    kept.remove(2);
    std::fs::write(&forged, kept.join("\n") + "\n").unwrap();
    let out = verify(&forged);
    assert_eq!(out.code, Some(1), "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("broken at line 3"), "{}", out.stdout);

    // The first session cut off: the new first line does not chain to the start.
    std::fs::write(&forged, lines[3..].join("\n") + "\n").unwrap();
    let out = verify(&forged);
    assert_eq!(out.code, Some(1), "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("broken at line 1"), "{}", out.stdout);

    let out = verify(&env.base().join("missing.log"));
    assert_eq!(out.code, Some(2), "{}{}", out.stdout, out.stderr);
}
