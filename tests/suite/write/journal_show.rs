//! `tuls journal show --session ID` (issue 32, item 5): what a session
//! changed, file by file, with a diff from the kept pre-image to the file
//! now, flagging control files and refused attempts; names and diff lines
//! escaped, `--json` exact. Through the real binary.

use std::ffi::OsStr;
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::{RawCliOutput, Server, TestEnv, run_cli_raw};

fn tuls(args: &[&dyn AsRef<OsStr>]) -> RawCliOutput {
    let args: Vec<&OsStr> = args.iter().map(|a| a.as_ref()).collect();
    run_cli_raw(&args, Duration::from_secs(30))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[track_caller]
fn assert_no_raw_control(what: &str, bytes: &[u8]) {
    let bad: Vec<u8> = bytes
        .iter()
        .copied()
        .filter(|b| (*b < 0x20 && *b != b'\n') || *b == 0x7f)
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: raw control bytes {bad:x?} in {:?}",
        text(bytes)
    );
}

#[test]
fn journal_show_prints_diffs_new_files_and_flags_refused_control_file_writes() {
    let env = TestEnv::new();
    env.write("notes.txt", "alpha\nold line\ngamma\n");
    env.write(".git/config", "[core]\n");
    let hostile = "evil\u{1b}[2K\nforged.txt";
    let journal = env.base().join("journal");
    let server = Server::start(&args![env.root(), "--journal", &journal]);
    let p = |n: &str| env.path_str(n);
    server
        .call(
            "edit_file",
            json!({"path": p("notes.txt"), "edits": [{"oldText": "old line", "newText": "new line"}]}),
        )
        .assert_ok();
    server
        .call(
            "write_file",
            json!({"path": p("fresh.txt"), "content": "brand new\n"}),
        )
        .assert_ok();
    server
        .call(
            "write_file",
            json!({"path": p(hostile), "content": "x\u{1b}]52;c;aGk=\u{7}\n"}),
        )
        .assert_ok();
    server
        .call(
            "write_file",
            json!({"path": p(".git/config"), "content": "[core]\n\thooksPath = /tmp/x\n"}),
        )
        .assert_error();
    drop(server);
    assert_eq!(
        std::fs::read_to_string(env.path(".git/config")).expect("config"),
        "[core]\n"
    );

    let list = tuls(&[&"journal", &"list", &journal, &"--json"]);
    let v: Value = serde_json::from_slice(&list.stdout).expect("list --json");
    let id = v["sessions"][0]["session"].as_str().expect("id").to_owned();
    let prefix = &id[..8];

    let out = tuls(&[&"journal", &"show", &journal, &"--session", &prefix]);
    assert_eq!(
        out.code,
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_no_raw_control("journal show", &out.stdout);
    let shown = text(&out.stdout);
    assert!(
        shown.contains(&format!("replace {}", p("notes.txt"))),
        "{shown}"
    );
    assert!(shown.contains("\n    -old line\n"), "{shown}");
    assert!(shown.contains("\n    +new line\n"), "{shown}");
    assert!(
        shown.contains(&format!("create {}", p("fresh.txt"))),
        "{shown}"
    );
    assert!(shown.contains("\n    +brand new\n"), "{shown}");
    assert!(
        shown.contains("evil\\u{1b}[2K\\nforged.txt")
            || shown.contains("evil\\x1b[2K\\nforged.txt"),
        "{shown}"
    );
    let refused_line = shown
        .lines()
        .find(|l| l.starts_with("refused "))
        .unwrap_or_else(|| panic!("no refused line in {shown}"));
    assert!(refused_line.contains(".git/config"), "{refused_line}");
    assert!(
        refused_line.contains("FLAG: refused attempt; control file"),
        "{refused_line}"
    );

    let out = tuls(&[
        &"journal",
        &"show",
        &journal,
        &"--session",
        &prefix,
        &"--json",
    ]);
    assert_eq!(out.code, Some(0), "{}", text(&out.stderr));
    assert_no_raw_control("journal show --json", &out.stdout);
    let j: Value = serde_json::from_slice(&out.stdout).expect("show --json");
    assert_eq!(j["session"], json!(id));
    let changes = j["changes"].as_array().expect("changes");
    assert_eq!(changes.len(), 3, "{j}");
    assert_eq!(changes[0]["op"], json!("replace"));
    let diff: Vec<&str> = changes[0]["diff"]
        .as_array()
        .expect("diff")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        diff.contains(&"-old line") && diff.contains(&"+new line"),
        "{diff:?}"
    );
    assert_eq!(changes[2]["path"], json!(p(hostile)), "exact in --json");
    assert_eq!(changes[2]["diff"][1], json!("+x\u{1b}]52;c;aGk=\u{7}"));
    let r = &j["refused"][0];
    assert_eq!(r["path"], json!(p(".git/config")));
    assert_eq!(r["tool"], json!("write_file"));
    assert_eq!(r["controlFile"], json!(true));
}
