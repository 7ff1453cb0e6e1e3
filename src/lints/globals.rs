//! A test that keeps per-call facts out of globals: every `static` (and
//! every `thread_local!`, whose items are `static`s too) in `src/` is listed
//! here with the reason it is not a fact of one call. A call's facts (its
//! reply budget, its change recorder, its roots, its limits) travel in its
//! context ([`crate::tools::Ctx`], [`crate::fs::io::Io`]) and the server's
//! shared resources (the spare read buffer, the walk threads, the undo
//! journal and the audit log) are values the server is made with at
//! startup; a new `static` fails this test until it is
//! listed with its reason, and a listed one that is gone fails it too.

// A test reading the crate's own source, not a client's files.
#![allow(clippy::disallowed_methods)]

use std::path::Path;

/// Each `static` allowed in `src/`: its file, its name, and why it is
/// process-wide or per-thread rather than per-call.
const ALLOWED: &[(&str, &str, &str)] = &[
    (
        "src/malloc.rs",
        "GLOBAL",
        "the process's allocator (`#[global_allocator]`); it holds no fact of tuls's",
    ),
    (
        "src/fs/walk/fds.rs",
        "OUT_OF_DESCRIPTORS",
        "the descriptor table is the process's: a count of opens any walk lost to EMFILE/ENFILE, compared by each walk before and after",
    ),
    (
        "src/fs/walk/entries.rs",
        "LISTING",
        "a thread's reused getdents buffer: scratch, emptied for each directory",
    ),
    (
        "src/fs/append.rs",
        "APPENDING",
        "serializes appends across calls (the files are the process's): holds nothing",
    ),
    (
        "src/fs/atomic/temp.rs",
        "UNNAMED_TEMP",
        "what this kernel lets this process do (link an O_TMPFILE), learned once",
    ),
    (
        "src/fs/ifmatch.rs",
        "HELD",
        "the write locks of files, which every call must see",
    ),
    (
        "src/fs/ifmatch.rs",
        "FREED",
        "wakes the calls waiting for one of those write locks",
    ),
    (
        "src/fs/cursor.rs",
        "KEY",
        "the process's random key that signs cursors, made once",
    ),
    (
        "src/rules/hide.rs",
        "IDS",
        "a counter giving each path-rule checker a unique id for the per-thread cache below",
    ),
    (
        "src/rules/hide.rs",
        "LAST",
        "a thread's cache of the last directory's rule plan, keyed by the checker's id: a pure cache",
    ),
    (
        "src/rules/hide.rs",
        "BUF",
        "a thread's scratch string for the full path of an entry",
    ),
    (
        "src/tools/mod.rs",
        "TEXT",
        "a constant text derived once from the tool table",
    ),
    (
        "src/mcp/workers.rs",
        "POOL",
        "the worker thread's own identity (which pool it belongs to), not a fact of a call",
    ),
];

/// The names of the `static` items declared in `text` outside `//`
/// comments, with their line numbers (from 1).
fn statics(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        let mut words = code.split_whitespace().peekable();
        while let Some(w) = words.next() {
            if w != "static" {
                continue;
            }
            if words.peek() == Some(&"mut") {
                words.next();
            }
            if let Some(name) = words.next() {
                let name = name.trim_end_matches(':');
                if !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                {
                    found.push((i + 1, name.to_owned()));
                }
            }
            break;
        }
    }
    found
}

#[test]
fn every_static_in_src_is_listed_with_its_reason() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    crate::lints::tools::rust_files(&crate_dir.join("src"), &mut files);
    files.sort();
    let mut seen = Vec::new();
    let mut unlisted = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(crate_dir).unwrap_or(file);
        let rel = rel.to_string_lossy().replace('\\', "/");
        if rel == "src/lints/globals.rs" {
            continue;
        }
        let text =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for (line, name) in statics(&text) {
            if ALLOWED.iter().any(|(f, n, _)| *f == rel && *n == name) {
                seen.push((rel.clone(), name));
            } else {
                unlisted.push(format!("{rel}:{line}: static {name}"));
            }
        }
    }
    assert!(
        unlisted.is_empty(),
        "a static in src/ that is not in src/lints/globals.rs's list: a fact of one call belongs in its context (tools::Ctx, fs::io::Io), a server's resource in the server; if it truly is process-wide or a thread's own, list it with why:\n{}",
        unlisted.join("\n")
    );
    let gone: Vec<_> = ALLOWED
        .iter()
        .filter(|(f, n, _)| !seen.iter().any(|(sf, sn)| sf == f && sn == n))
        .map(|(f, n, _)| format!("{f}: {n}"))
        .collect();
    assert!(gone.is_empty(), "listed but gone (drop them): {gone:?}");
    assert!(ALLOWED.iter().all(|(_, _, why)| !why.is_empty()));
}

#[test]
fn the_check_sees_statics_and_skips_comments() {
    let text = "static A: u8 = 0;\n// static B: u8\npub(super) static C_2: X = y;\n    static mut D: u8 = 0;\nlet s = \"static\";\nthread_local! { static E: Cell<u8> = Cell::new(0); }\nfn f() -> &'static str {}\n";
    let names: Vec<String> = statics(text).into_iter().map(|(_, n)| n).collect();
    assert_eq!(names, ["A", "C_2", "D", "E"]);
}
