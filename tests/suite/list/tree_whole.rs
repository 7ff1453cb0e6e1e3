//! `directory_tree` without a reply budget (`--max-reply-chars 0`) renders
//! the tree as it is walked, a different path from the budgeted one (which
//! collects the tree, then renders or pages it). Both must give the same
//! bytes, and those bytes must be the reference's layout, on every kind of
//! entry and name.

use std::os::unix::ffi::OsStrExt;

use serde_json::{Value, json};

use crate::util::{Server, TestEnv};

fn fixture() -> TestEnv {
    let env = TestEnv::new();
    for name in [
        "plain.txt",
        "quote\"back\\slash",
        "ctl\u{1}\n\t\u{8}\u{c}\r",
        "del\u{7f}c1\u{80}\u{9b}",
        "日本語 🎉",
    ] {
        env.write(format!("t/{name}"), "x");
        env.write(format!("t/d/{name}"), "x");
    }
    env.mkdir("t/empty");
    env.mkdir("t/d/e/f/g");
    env.write("t/d/e/f/g/deep.rs", "");
    env.write("t/node_modules/m.js", "");
    env.write("t/d/node_modules/n.js", "");
    env.symlink("d", "t/link-to-dir");
    env.symlink(env.outside(), "t/link-outside");
    env.symlink("nowhere", "t/dangling");
    env.mkfifo("t/fifo");
    let bad = std::ffi::OsStr::from_bytes(b"not-utf8-\xff\xfe");
    std::fs::write(env.path("t").join(bad), "x").unwrap();
    env
}

#[test]
fn whole_tree_rendering_matches_the_budgeted_one() {
    let env = fixture();
    let budgeted = Server::start(&args![env.root()]);
    let whole = Server::start(&args![env.root(), "--max-reply-chars", "0"]);
    let t = env.path_str("t");
    let cases = [
        json!({"path": t}),
        json!({"path": env.path_str("t/empty")}),
        json!({"path": t, "excludePatterns": ["node_modules"]}),
        json!({"path": t, "excludePatterns": ["d/*", "*.txt"]}),
        json!({"path": t, "maxDepth": 1}),
        json!({"path": t, "maxDepth": 3}),
    ];
    for args in cases {
        let a = budgeted.call("directory_tree", args.clone());
        let b = whole.call("directory_tree", args.clone());
        a.assert_ok();
        b.assert_ok();
        let (a, b) = (a.texts(), b.texts());
        assert_eq!(a, b, "{args}");
        let text = b.first().expect("one text block");
        let json_part = text.split("\n\n[").next().unwrap_or_default();
        let tree: Value = serde_json::from_str(json_part).expect("valid JSON");
        assert_eq!(
            serde_json::to_string_pretty(&tree).unwrap().len(),
            json_part.len() - escapes_beyond_serde(json_part),
            "pretty layout: {args}"
        );
        assert!(
            !text.contains(&env.outside().display().to_string()),
            "nothing from outside: {text}"
        );
    }
    let full = whole.call("directory_tree", json!({"path": t}));
    let text = &full.texts()[0];
    for name in [
        "\"quote\\\"back\\\\slash\"",
        "\\u007f",
        "\\u009b",
        "\"fifo\"",
        "not-utf8-",
    ] {
        assert!(text.contains(name), "{name} in {text}");
    }
    assert!(text.contains("\"name\": \"link-to-dir\",\n    \"type\": \"symlink\"\n"));
}

/// The bytes tuls's escapes of DEL and C1 (`\u007f`, 6 bytes) add over
/// serde_json's own output of the same value (the raw 1- or 2-byte
/// character).
fn escapes_beyond_serde(text: &str) -> usize {
    let del = text.matches("\\u007f").count() * 5;
    let c1 = (0x80..=0x9f)
        .map(|c| text.matches(&format!("\\u{c:04x}")).count() * 4)
        .sum::<usize>();
    del + c1
}
