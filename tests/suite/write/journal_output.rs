//! What `tuls journal` shows a person (issue 32, items 2 and 5): file names
//! the agent chose, printed with every control and bidi character escaped
//! (`--json` keeps them exact), and `--session` taking a unique prefix of
//! the id. Through the real binary, with the names on disk.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::{RawCliOutput, Server, TestEnv, run_cli_raw};

/// Names an agent can give files to attack a person's terminal: forged
/// lines, an overwritten line, CSI, OSC 52 (clipboard), OSC 8 (link), C1,
/// DEL, bidi overrides and isolates, and a literal backslash (which must
/// not print as a newline's escape does). None holds a `/`.
const NAMES: [&str; 12] = [
    "forged\n     9  2026-01-01T00:00:00.000Z  create  passwd",
    "cr\rreplace ok.txt",
    "osc52\u{1b}]52;c;ZWNobyBwd25lZA==\u{7}",
    "osc8\u{1b}]8;;mailto:me@evil.example\u{1b}\\click\u{1b}]8;;\u{1b}\\",
    "csi\u{1b}[2K\u{1b}[1A",
    "c1\u{9b}2K\u{9d}52;c;eA==\u{9c}",
    "del\u{7f}tab\tnul-less",
    "bidi\u{202e}txt.exe",
    "iso\u{2066}\u{2067}\u{2068}x\u{2069}\u{202a}\u{202b}\u{202c}\u{202d}",
    "marks\u{200e}\u{200f}\u{61c}",
    "lines\u{2028}\u{2029}\u{85}",
    "back\\slash\\n",
];

/// Unicode's bidi controls and the line and paragraph separators.
fn is_bidi_or_separator(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}')
}

/// No byte a terminal acts on: nothing below 0x20 but the `\n` that ends
/// tuls's own lines, no DEL, and (read as UTF-8) no C1 and no bidi control.
#[track_caller]
fn assert_inert(what: &str, bytes: &[u8]) {
    let bad: Vec<u8> = bytes
        .iter()
        .copied()
        .filter(|b| (*b < 0x20 && *b != b'\n') || *b == 0x7f)
        .collect();
    let text = String::from_utf8_lossy(bytes);
    assert!(
        bad.is_empty(),
        "{what}: raw control bytes {bad:x?} in {text:?}"
    );
    let text = std::str::from_utf8(bytes).unwrap_or_else(|e| panic!("{what}: not UTF-8 ({e})"));
    let bad: Vec<char> = text
        .chars()
        .filter(|c| (*c != '\n' && c.is_control()) || is_bidi_or_separator(*c))
        .collect();
    assert!(bad.is_empty(), "{what}: raw characters {bad:?} in {text:?}");
}

fn tuls(args: &[&dyn AsRef<OsStr>]) -> RawCliOutput {
    let args: Vec<&OsStr> = args.iter().map(|a| a.as_ref()).collect();
    run_cli_raw(&args, Duration::from_secs(30))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The parsed `tuls journal list --json`.
fn list_json(journal: &Path) -> Value {
    let out = tuls(&[&"journal", &"list", &journal, &"--json"]);
    assert_eq!(out.code, Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("list --json")
}

/// `name` as the operator's terminal gets it: escaped, unambiguously.
fn escaped(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 && c.is_control() => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() || is_bidi_or_separator(c) => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

#[test]
fn journal_list_and_revert_print_hostile_names_escaped_and_json_keeps_them_exact() {
    let env = TestEnv::new();
    // One hostile name exists before the session (replaced by it).
    let old = "pre\u{1b}]52;c;aGk=\u{7}.txt";
    env.write(old, "the user's\n");
    let before = env.snapshot(env.root());
    let journal = env.base().join("journal");
    let server = Server::start(&args![env.root(), "--journal", &journal]);
    let p = |n: &str| env.path_str(n);
    for n in NAMES {
        server
            .call("write_file", json!({"path": p(n), "content": "agent\n"}))
            .assert_ok();
    }
    let moved = "moved\n  1  x  replace shadow\u{1b}[8m";
    let calls = [
        (
            "write_file",
            json!({"path": p(old), "content": "agent's\n"}),
        ),
        (
            "move_file",
            json!({"source": p(NAMES[0]), "destination": p(moved)}),
        ),
        (
            "append_file",
            json!({"path": p(NAMES[1]), "content": "more\n"}),
        ),
    ];
    for (tool, args) in calls {
        server.call(tool, args).assert_ok();
    }
    drop(server);
    // A person edits one of the agent's files after the session.
    std::fs::write(env.path(NAMES[2]), "a person's edit\n").expect("edit");

    // --json: the exact names, as data.
    let v = list_json(&journal);
    let changes = v["sessions"][0]["changes"].as_array().expect("changes");
    assert_eq!(changes.len(), NAMES.len() + 3, "{v}");
    let shown: BTreeSet<&str> = changes
        .iter()
        .flat_map(|c| [&c["at"]["path"], &c["from"]["path"]])
        .filter_map(Value::as_str)
        .collect();
    let want: BTreeSet<&str> = NAMES.iter().copied().chain([old, moved]).collect();
    assert_eq!(shown, want);
    let json_out = tuls(&[&"journal", &"list", &journal, &"--json"]);
    assert_inert("journal list --json", &json_out.stdout);

    // The text: no raw control, one line per session and per change, and
    // every name escaped so that distinct names print distinctly.
    let out = tuls(&[&"journal", &"list", &journal]);
    assert_eq!(out.code, Some(0), "{}", text(&out.stderr));
    assert_inert("journal list", &out.stdout);
    let listed = text(&out.stdout);
    assert_eq!(listed.lines().count(), 1 + changes.len(), "{listed}");
    for n in NAMES.iter().chain([&old, &moved]) {
        assert!(listed.contains(&escaped(n)), "{:?} in {listed}", escaped(n));
    }
    assert!(listed.contains("back\\\\slash\\\\n"), "{listed}");

    // The revert refuses the edited file, naming it escaped, and undoes the
    // rest; --force lists it, then undoes it too.
    let id = v["sessions"][0]["session"].as_str().expect("id");
    let out = tuls(&[&"journal", &"revert", &journal, &"--session", &id]);
    assert_eq!(
        out.code,
        Some(1),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_inert("journal revert", &out.stdout);
    assert_inert("journal revert (stderr)", &out.stderr);
    let said = text(&out.stdout);
    let refused = format!("refused #{} {}/{}:", 3, env.root_str(), escaped(NAMES[2]));
    assert!(said.contains(&refused), "{refused:?} in {said}");
    assert!(
        said.contains(&escaped(&format!("moved {}/{moved}", env.root_str()))),
        "{said}"
    );
    let out = tuls(&[
        &"journal",
        &"revert",
        &journal,
        &"--session",
        &id,
        &"--force",
    ]);
    assert_eq!(
        out.code,
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_inert("journal revert --force", &out.stdout);
    assert_inert("journal revert --force (stderr)", &out.stderr);
    assert!(
        text(&out.stdout).contains(&escaped(NAMES[2])),
        "{}",
        text(&out.stdout)
    );
    env.snapshot(env.root())
        .assert_same(&before, "root after the reverts");
}

/// Two journaled sessions, each writing one file; the second's records get
/// the id `first[..6]` + OSC 52 + the rest of its own, so the two share a
/// prefix and the second's id is hostile. Returns (journal, first, second).
fn two_sessions(env: &TestEnv) -> (std::path::PathBuf, String, String) {
    let journal = env.base().join("journal");
    for n in ["one.txt", "two.txt"] {
        let server = Server::start(&args![env.root(), "--journal", &journal]);
        server
            .call(
                "write_file",
                json!({"path": env.path_str(n), "content": "x\n"}),
            )
            .assert_ok();
    }
    let v = list_json(&journal);
    let id = |i: usize| v["sessions"][i]["session"].as_str().expect("id").to_owned();
    let (first, second) = (id(0), id(1));
    let forged = format!("{}\u{1b}]52;c;eA==\u{7}{}", &first[..6], &second[6..]);
    let log = journal.join("journal.jsonl");
    let lines: Vec<String> = std::fs::read_to_string(&log)
        .expect("log")
        .lines()
        .map(|l| {
            let mut r: Value = serde_json::from_str(l).expect("record");
            if r["session"] == json!(second) {
                r["session"] = json!(forged);
            }
            r.to_string() + "\n"
        })
        .collect();
    std::fs::write(&log, lines.concat()).expect("rewrite the log");
    (journal, first, forged)
}

#[test]
fn revert_takes_a_unique_prefix_of_the_session_id_and_refuses_others_with_status_2() {
    let env = TestEnv::new();
    let (journal, first, second) = two_sessions(&env);
    let before = env.snapshot(env.root());
    let revert = |s: &str| tuls(&[&"journal", &"revert", &journal, &"--session", &s]);

    // Ambiguous: both candidates named, escaped; nothing changed.
    let out = revert(&first[..6]);
    assert_eq!(
        out.code,
        Some(2),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_inert("ambiguous --session", &out.stderr);
    let err = text(&out.stderr);
    assert!(err.contains("ambiguous"), "{err}");
    assert!(
        err.contains(&first) && err.contains(&escaped(&second)),
        "{err}"
    );
    // Nothing matches, or nothing was given.
    for bad in ["zz", ""] {
        let out = revert(bad);
        assert_eq!(out.code, Some(2), "{bad:?}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("no session"),
            "{}",
            text(&out.stderr)
        );
    }
    env.snapshot(env.root())
        .assert_same(&before, "root after refused reverts");

    // A unique prefix reverts that session only, and names it in full.
    let out = revert(&first[..7]);
    assert_eq!(
        out.code,
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(text(&out.stdout).contains(&first), "{}", text(&out.stdout));
    assert!(!env.exists("one.txt") && env.exists("two.txt"));
    let out = revert(&second[..7]);
    assert_eq!(
        out.code,
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_inert("revert of the hostile session", &out.stdout);
    assert!(!env.exists("two.txt"));
}
