//! Tests that keep the tools adapters: no tool reaches into a root's
//! handle or makes filesystem system calls itself. Both belong to the
//! capability core ([`crate::fs`]), behind [`crate::fs::scope::Target`]
//! and the core's own functions, so that auditing confinement means reading
//! `src/fs/`, never `src/tools/`. And a tool is whole in its own file: its
//! name, as a string literal, appears nowhere else in `src/`.

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
    (
        "Io::unbudgeted",
        "a read outside the call's reply budget and audit note; pass `&ctx.io`",
    ),
    (
        "Unbudgeted",
        "a read outside the call's reply budget; pass `&ctx.io`",
    ),
];

/// Every `.rs` file under `dir`, depth first.
pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
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
pub(crate) fn offending(text: &str, what: &str) -> Vec<usize> {
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
        if file.ends_with("lints/tools.rs") {
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

/// The string literals of `text` (contents without quotes), each with the
/// 1-based line it starts on; comments and char literals are skipped.
/// Handles `"..."` with escapes, `b"..."`, and raw `r#"..."#` strings.
fn string_literals(text: &str) -> Vec<(usize, String)> {
    let b = text.as_bytes();
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    let newlines = |s: &[u8]| s.iter().filter(|&&c| c == b'\n').count();
    while i < b.len() {
        match b[i] {
            b'\n' => line += 1,
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
                line += newlines(&b[i..end]);
                i = end;
                continue;
            }
            b'\'' => {
                // A char literal ('x', '\n', '"'), or a lifetime ('a).
                if b.get(i + 1) == Some(&b'\\') {
                    let end = text[i + 2..].find('\'').map_or(b.len(), |e| i + 2 + e + 1);
                    i = end;
                    continue;
                }
                let next = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                if b.get(i + 1 + next) == Some(&b'\'') {
                    i += next + 2;
                    continue;
                }
            }
            b'r' if !b[..i]
                .last()
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
                && matches!(b.get(i + 1), Some(b'"' | b'#')) =>
            {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + 1 + hashes) == Some(&b'"') {
                    let start = i + 2 + hashes;
                    let close = format!("\"{}", "#".repeat(hashes));
                    let end = text[start..].find(&close).map_or(b.len(), |e| start + e);
                    out.push((line, text[start..end].to_owned()));
                    line += newlines(&b[start..end]);
                    i = end + close.len();
                    continue;
                }
            }
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let end = j.min(b.len());
                out.push((line, text[start..end].to_owned()));
                line += newlines(&b[start..end]);
                i = end + 1;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// `text` with its test-only items blanked out (every `#[cfg(test)]` item:
/// a `mod tests { ... }` block, a test helper), line numbers kept; and the
/// names of test modules it declares in files of their own (`mod tests;`).
fn without_test_items(text: &str) -> (String, Vec<String>) {
    let lines: Vec<&str> = text.lines().collect();
    let (mut keep, mut test_mods) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.trim() != "#[cfg(test)]" {
            keep.push(line);
            i += 1;
            continue;
        }
        let indent = &line[..line.len() - line.trim_start().len()];
        let mut j = i + 1;
        while lines
            .get(j)
            .is_some_and(|l| l.trim_start().starts_with("#["))
        {
            j += 1;
        }
        let item = lines.get(j).map_or("", |l| l.trim());
        let end = if item.ends_with(';') {
            if let Some(name) = item.strip_prefix("mod ").and_then(|m| m.strip_suffix(';')) {
                test_mods.push(name.to_owned());
            }
            j
        } else {
            let close = format!("{indent}}}");
            (j..lines.len())
                .find(|&k| lines[k] == close)
                .unwrap_or(lines.len() - 1)
        };
        keep.extend(std::iter::repeat_n("", end + 1 - i));
        i = end + 1;
    }
    (keep.join("\n"), test_mods)
}

/// Whether `word` occurs in `s` as a whole identifier.
fn names(s: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    s.match_indices(word).any(|(at, _)| {
        !s[..at].chars().next_back().is_some_and(ident)
            && !s[at + word.len()..].chars().next().is_some_and(ident)
    })
}

/// A tool's name, as a string literal, appears only in its own file
/// (`src/tools/<name>.rs` or under `src/tools/<name>/`), test items aside:
/// any other file refers to the tool through its entry, or is given the
/// name by the tool, so renaming a tool or moving a text touches one file.
#[test]
fn a_tools_name_is_a_literal_only_in_its_own_file() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&crate_dir.join("src"), &mut files);
    files.sort();
    let mut test_files = vec![crate_dir.join("src/lints/tools.rs")];
    let mut texts = Vec::new();
    for file in &files {
        let text =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let (code, test_mods) = without_test_items(&text);
        let dir = if file.ends_with("mod.rs") || file.ends_with("lib.rs") {
            file.parent().map(Path::to_path_buf)
        } else {
            file.parent().zip(file.file_stem()).map(|(p, s)| p.join(s))
        };
        for m in test_mods {
            if let Some(dir) = &dir {
                test_files.push(dir.join(format!("{m}.rs")));
                test_files.push(dir.join(&m).join("mod.rs"));
            }
        }
        texts.push((file, code));
    }
    let mut bad = Vec::new();
    for (file, code) in texts {
        if test_files.contains(file) {
            continue;
        }
        let rel = file.strip_prefix(crate_dir).unwrap_or(file);
        for (line, literal) in string_literals(&code) {
            for tool in crate::tools::TOOLS {
                let own = Path::new("src/tools").join(tool.name);
                if rel.starts_with(&own) || rel == own.with_extension("rs") {
                    continue;
                }
                if names(&literal, tool.name) {
                    bad.push(format!(
                        "{}:{line}: `{}` in {literal:?}",
                        rel.display(),
                        tool.name
                    ));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "a tool's name belongs in its own file (pass it in, or use the tool's entry):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_name_check_sees_literals_and_skips_comments_and_tests() {
    let text = "let a = \"x read_file y\"; // \"write_file\"\n/* \"edit_file\" */ let c = '\"';\nlet r = r#\"move_file\"#;\nlet s = \"read_files\";\n#[cfg(test)]\nmod tests {\n    const T: &str = \"copy_file\";\n}\n#[cfg(test)]\nmod more;\n";
    let (code, mods) = without_test_items(text);
    assert_eq!(mods, ["more"]);
    let lits = string_literals(&code);
    let found: Vec<(usize, &str)> = lits
        .iter()
        .filter(|(_, l)| {
            [
                "read_file",
                "write_file",
                "edit_file",
                "move_file",
                "copy_file",
            ]
            .iter()
            .any(|t| names(l, t))
        })
        .map(|(n, l)| (*n, l.as_str()))
        .collect();
    assert_eq!(found, [(1, "x read_file y"), (3, "move_file")]);
}

/// The reply texts that name another tool, now given the name by that
/// tool's entry, read byte for byte as they did when they held it.
#[test]
fn texts_that_name_another_tool_are_unchanged() {
    assert_eq!(
        crate::tools::read_file::TOOL.description,
        "Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead."
    );
    let refusal = crate::error::Error::IfMatchRequired {
        readers: crate::tools::version_readers(),
        op: "write",
        path: "p".to_owned(),
        tool: "write_file",
    };
    assert_eq!(
        refusal.to_string(),
        "Refusing to write 'p' without ifMatch: this server requires every change to an existing file to name the version of the file it was based on. Read the file first (read_text_file, read_multiple_files and read_media_file give its version in structuredContent; get_file_info gives it in its text as well, so call get_file_info before reading), then call write_file again with ifMatch set to that version"
    );
    let not_utf8 = crate::error::Error::NotUtf8 {
        tool: "edit_file",
        path: "p".to_owned(),
        offset: 3,
    };
    assert_eq!(
        not_utf8.to_string(),
        "Refusing to edit 'p': it is not valid UTF-8 (first invalid byte at offset 3); edit_file never rewrites bytes it cannot represent"
    );
}
