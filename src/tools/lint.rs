//! A test that keeps the tools adapters: no tool reaches into a root's
//! handle or makes filesystem system calls itself. Both belong to the
//! capability core ([`crate::fs`]), behind [`crate::fs::scope::Target`]
//! and the core's own functions, so that auditing confinement means reading
//! `src/fs/`, never `src/tools/`.

// A test reading the crate's own source, not a client's files.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

/// What no tool file may name outside a comment, and why.
const FORBIDDEN: &[(&str, &str)] = &[
    (
        "root.dir",
        "a root's own handle; go through a `Target` method or a function in `crate::fs`",
    ),
    (
        "rustix::fs",
        "a filesystem system call; it belongs in `crate::fs`",
    ),
];

/// Every `.rs` file under `dir`, depth first.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The lines of `text` that name `what` outside a `//` comment, numbered
/// from 1.
fn offending(text: &str, what: &str) -> Vec<usize> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        let mut rest = code;
        while let Some(at) = rest.find(what) {
            let after = rest[at + what.len()..].chars().next();
            // `root.dir` but not `root.dirs` or `root.dir_of`.
            if !after.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                found.push(i + 1);
                break;
            }
            rest = &rest[at + what.len()..];
        }
    }
    found
}

#[test]
fn no_tool_touches_a_root_handle_or_the_filesystem_itself() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = crate_dir.join("src/tools");
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    files.sort();
    assert!(files.len() > 10, "found only {files:?}");
    let mut bad = Vec::new();
    for file in &files {
        if file.ends_with("lint.rs") {
            continue;
        }
        let text =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for (what, why) in FORBIDDEN {
            for line in offending(&text, what) {
                let name = file.strip_prefix(crate_dir).unwrap_or(file);
                bad.push(format!("{}:{line}: `{what}`: {why}", name.display()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "tools must stay adapters:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_check_sees_code_and_skips_comments() {
    let text =
        "let a = 1;\nlet dir = &t.root.dir; // root.dir\n// t.root.dir\nlet d = t.root.dirs;\n";
    assert_eq!(offending(text, "root.dir"), vec![2]);
}
