//! No text can be forged by a file name (issue 11 §7): names with newlines,
//! carriage returns, terminal escapes (ESC, C1 CSI) and DEL are printed with
//! their control characters escaped, so a planted `a\n[DIR] secrets` shows
//! no `[DIR] secrets` line and no escape sequence reaches the client.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::util::{Server, TestEnv};

const FILES: [&str; 6] = [
    "a\n[DIR] secrets",
    "esc\u{1b}[31mred",
    "cr\r[FILE] fake",
    "c1\u{9b}31m",
    "del\u{7f}",
    "tab\tx",
];
const DIR: &str = "dir\n[FILE] inner";

fn fixture() -> TestEnv {
    let env = TestEnv::new();
    for f in FILES {
        env.write(format!("t/{f}"), "x");
    }
    env.write(format!("t/{DIR}/z"), "z");
    env
}

/// No control character but the line breaks tuls itself puts there.
#[track_caller]
fn assert_clean(tool: &str, text: &str) {
    let bad: Vec<char> = text
        .chars()
        .filter(|c| *c != '\n' && c.is_control())
        .collect();
    assert!(
        bad.is_empty(),
        "{tool}: raw control characters {bad:?} in {text:?}"
    );
    for line in text.lines() {
        for forged in ["[DIR] secrets", "[FILE] fake", "[FILE] inner"] {
            assert!(
                !line.starts_with(forged),
                "{tool}: forged line {line:?} in {text:?}"
            );
        }
    }
}

#[test]
fn names_cannot_forge_lines_or_send_escapes() {
    let env = fixture();
    let server = Server::start(&args![env.root()]);
    let t = env.path_str("t");

    let r = server.call("list_directory", json!({"path": t}));
    r.assert_ok();
    assert_clean("list_directory", &r.text);
    assert_eq!(r.text.lines().count(), FILES.len() + 1, "{:?}", r.text);
    assert!(r.text.contains("[FILE] a\\n[DIR] secrets"), "{:?}", r.text);

    let r = server.call("list_directory_with_sizes", json!({"path": t}));
    r.assert_ok();
    assert_clean("list_directory_with_sizes", &r.text);
    let entries = r.text.lines().filter(|l| l.starts_with('[')).count();
    assert_eq!(entries, FILES.len() + 1, "{:?}", r.text);

    let r = server.call("search_files", json!({"path": t, "pattern": "**/*"}));
    r.assert_ok();
    assert_clean("search_files", &r.text);
    assert_eq!(r.text.lines().count(), FILES.len() + 2, "{:?}", r.text);
    for line in r.text.lines() {
        assert!(line.starts_with(&t), "{line:?} in {:?}", r.text);
    }

    // JSON: control characters are JSON escapes, and the parsed names are
    // the names on disk, exactly.
    let r = server.call("directory_tree", json!({"path": t}));
    r.assert_ok();
    assert_clean("directory_tree", &r.text);
    let tree: Value = serde_json::from_str(&r.text).expect("directory_tree is JSON");
    let mut got = BTreeSet::new();
    for node in tree.as_array().expect("array") {
        got.insert(node["name"].as_str().expect("name").to_owned());
        for child in node["children"].as_array().into_iter().flatten() {
            got.insert(child["name"].as_str().expect("name").to_owned());
        }
    }
    let mut want: BTreeSet<String> = FILES.iter().map(|s| (*s).to_owned()).collect();
    want.insert(DIR.to_owned());
    want.insert("z".to_owned());
    assert_eq!(got, want);
}
