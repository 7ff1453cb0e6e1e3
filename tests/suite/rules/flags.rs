//! Path rules as the operator sets them: hidden entries left out of listing
//! counts and sizes, lifting the built-in protections, client roots and
//! `--read-only-dir`, refusals at startup, a hosts' rules file, and
//! `--read-only`.

use serde_json::{Value, json};

use crate::util::{Server, TestEnv};

use super::cases::{CANARY, PROTECTED};

/// The hidden files are absent from listings with their sizes and counts:
/// the summary counts only what is shown.
#[test]
fn listing_counts_and_sizes_leave_hidden_entries_out() {
    let env = TestEnv::new();
    env.write("shown.txt", "12345");
    env.write(".env", "x".repeat(1000));
    let server = Server::start(&args![env.root(), "--hide", ".env"]);
    let r = server.call("list_directory_with_sizes", json!({"path": env.root_str()}));
    r.assert_ok();
    assert!(
        r.text.contains("Total: 1 files, 0 directories"),
        "{}",
        r.text
    );
    assert!(
        !r.text.contains("1.0") && !r.text.contains(".env"),
        "{}",
        r.text
    );
}

/// `--no-default-protection` lifts the built-in set; `--allow-path` one entry.
#[test]
fn default_protection_can_be_lifted_whole_or_by_entry() {
    let env = TestEnv::new();
    env.write(".git/config", "[core]\n");
    env.write(".vscode/tasks.json", "{}\n");
    let write = |s: &Server, rel: &str| {
        s.call(
            "write_file",
            json!({"path": env.path_str(rel), "content": "changed"}),
        )
    };
    let s = Server::start(&args![env.root()]);
    write(&s, ".git/config").assert_error_contains(PROTECTED);
    write(&s, ".vscode/tasks.json").assert_error_contains(PROTECTED);
    let s = Server::start(&args![env.root(), "--allow-path", ".vscode"]);
    write(&s, ".git/config").assert_error_contains(PROTECTED);
    write(&s, ".vscode/tasks.json").assert_ok();
    let s = Server::start(&args![env.root(), "--no-default-protection"]);
    write(&s, ".git/config").assert_ok();
    assert_eq!(env.read_string(".git/config"), "changed");
}

/// Client roots narrow, but cannot lift a rule anchored at the operator's
/// root; `--read-only-dir` protects a directory by its host path.
#[test]
fn client_roots_and_read_only_dir_cannot_lift_rules() {
    let env = TestEnv::new();
    env.write("proj/secrets/s.txt", CANARY);
    env.write("proj/ro/r.txt", "r\n");
    let s = Server::start_with_roots(
        &args![
            env.root(),
            "--hide",
            "/proj/secrets",
            "--read-only-dir",
            env.path("proj/ro")
        ],
        vec![crate::util::file_uri(env.path("proj"))],
    );
    // The client root is proj: its own "/secrets" is still the hidden one.
    let r = s.call(
        "read_text_file",
        json!({"path": env.path_str("proj/secrets/s.txt")}),
    );
    assert!(r.is_error && !r.text.contains(CANARY), "{}", r.text);
    // As where it does not exist: its parent `secrets` is missing.
    assert_eq!(
        r.text,
        format!(
            "Parent directory does not exist: {}",
            env.path_str("proj/secrets")
        )
    );
    s.call(
        "write_file",
        json!({"path": env.path_str("proj/ro/r.txt"), "content": "x"}),
    )
    .assert_error_contains(PROTECTED);
    assert_eq!(env.read_string("proj/ro/r.txt"), "r\n");
}

/// Startup refuses what it cannot enforce, naming the culprit.
#[test]
fn bad_rules_stop_startup_with_exit_2() {
    let env = TestEnv::new();
    let file = env.write("../rules.json", "");
    let cases: Vec<(Vec<std::ffi::OsString>, &str)> = vec![
        (
            args![env.root(), "--read-only-dir", env.path("missing")],
            "--read-only-dir",
        ),
        (
            args![env.root(), "--read-only-dir", env.outside()],
            "not inside any allowed directory",
        ),
        (
            args![env.root(), "--rules", env.path("no-such.json")],
            "rules file",
        ),
        (args![env.root(), "--hide", ""], "empty pattern"),
        (args![env.root(), "--hide", "{a,{b,{c,{d}}}}"], "--hide"),
        (
            args![env.root(), "--hide", "x", "--hide", "{a"],
            "rule '--hide': bad pattern '{a'",
        ),
    ];
    for (args, needle) in cases {
        let (code, stderr) = Server::start_expect_fail(&args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
    for (json, needle) in [
        (
            r#"{"rules":[{"id":"r1","pattern":"(","match":"regex","operations":["read"]}]}"#,
            "r1",
        ),
        (
            r#"{"rules":[{"id":"r2","pattern":"x","match":"glob","operations":["read"],"extra":true}]}"#,
            "unknown field",
        ),
        (
            r#"{"rules":[{"id":"r3","pattern":"x","match":"near","operations":["read"]}]}"#,
            "unknown variant",
        ),
        (
            r#"{"rules":[{"id":"r4","pattern":"x","match":"glob","operations":["rm"]}]}"#,
            "unknown variant",
        ),
        ("{", "rules file"),
    ] {
        std::fs::write(&file, json).unwrap();
        let (code, stderr) = Server::start_expect_fail(&args![env.root(), "--rules", &file]);
        assert_eq!(code, 2, "{json}: {stderr}");
        assert!(stderr.contains(needle), "{json}: {stderr}");
    }
}

/// A rules file in the hosts' vocabulary: read hides, write/delete protect,
/// the other operations are logged as skipped; `--print-config` shows every
/// effective rule with its source.
#[test]
fn a_rules_file_maps_host_hard_blocks() {
    let env = TestEnv::new();
    env.write("cfg/prod.yaml", CANARY);
    env.write("Cargo.lock", "lock\n");
    env.write("notes.txt", "n\n");
    let file = env.write(
        "../rules.json",
        r#"{"rules":[
          {"id":"prod","enabled":true,"pattern":"prod","match":"contains","operations":["read"],"reason":"prod config"},
          {"id":"lock","enabled":true,"pattern":"/Cargo.lock","match":"exact","operations":["write","delete"]},
          {"id":"sh","enabled":true,"pattern":"rm -rf","match":"contains","operations":["execute"]},
          {"id":"off","enabled":false,"pattern":"notes.txt","match":"exact","operations":["read"]}
        ]}"#,
    );
    let s = Server::start(&args![env.root(), "--rules", &file]);
    let r = s.call(
        "read_text_file",
        json!({"path": env.path_str("cfg/prod.yaml")}),
    );
    assert!(r.is_error && !r.text.contains(CANARY));
    s.call(
        "write_file",
        json!({"path": env.path_str("Cargo.lock"), "content": "x"}),
    )
    .assert_error_contains(PROTECTED);
    s.call("read_text_file", json!({"path": env.path_str("notes.txt")}))
        .assert_ok();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tuls"))
        .args(args![
            "filesystem",
            env.root(),
            "--rules",
            &file,
            "--hide",
            "*.key",
            "--print-config"
        ])
        .output()
        .expect("run");
    assert!(out.status.success());
    let cfg: Value = serde_json::from_slice(&out.stdout).expect("json");
    let rules = cfg["pathRules"].as_array().expect("pathRules").clone();
    let find = |id: &str| rules.iter().find(|r| r["id"] == id).cloned();
    assert_eq!(find("prod").expect("prod")["effect"], "hide");
    assert_eq!(find("lock").expect("lock")["effect"], "read-only");
    assert!(find("sh").is_none() && find("off").is_none());
    let hide = find("--hide").expect("--hide");
    assert_eq!(hide["pattern"], "*.key");
    assert!(
        rules
            .iter()
            .any(|r| r["source"] == "default" && r["pattern"] == ".git")
    );
}

/// `--read-only` lists only the read tools, as the reference does.
#[test]
fn read_only_lists_only_the_read_tools() {
    let env = TestEnv::new();
    let s = Server::start(&args![env.root(), "--read-only"]);
    let names = s.tool_names();
    assert!(names.contains(&"read_text_file".to_owned()));
    for w in ["write_file", "edit_file", "create_directory", "move_file"] {
        assert!(!names.contains(&w.to_owned()), "{names:?}");
    }
}
