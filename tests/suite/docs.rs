//! What the README and docs/ claim, checked against the tree and the binary:
//! every relative link and anchor resolves, the maintainers' folder is
//! indexed and user pages hold no contributor code, docs/tools.md lists the
//! tools `tools/list` gives (and counts them right), and the README's count
//! of startup lines is what a terminal shows.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::json;

use crate::util::{RawServer, TestEnv};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every Markdown page a reader reaches: the top-level ones and docs/**.
fn pages() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = ["README.md", "SECURITY.md", "RELEASING.md"]
        .iter()
        .map(|p| repo().join(p))
        .collect();
    let mut dirs = vec![repo().join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("docs entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The text of a page outside fenced code blocks and inline code.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop inline code spans (`...`), which may hold brackets.
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                out.push(c);
            }
        }
        out.push('\n');
    }
    out
}

/// GitHub's anchor for a heading: lowercase, punctuation other than `-` and
/// `_` dropped, spaces made `-`; a repeated one gets `-1`, `-2`, ...
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let Some(title) = line.strip_prefix('#').filter(|_| !fenced) else {
            continue;
        };
        let title = title.trim_start_matches('#').trim();
        let mut slug = String::new();
        for c in title.to_lowercase().chars() {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                slug.push(c);
            } else if c == ' ' {
                slug.push('-');
            }
        }
        let mut candidate = slug.clone();
        let mut n = 0;
        while seen.contains(&candidate) {
            n += 1;
            candidate = format!("{slug}-{n}");
        }
        seen.insert(candidate);
    }
    seen
}

/// `(target, anchor)` of every inline link `[text](target#anchor)`.
fn links(text: &str) -> Vec<(String, Option<String>)> {
    let prose = prose(text);
    let mut out = Vec::new();
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find(')') else { break };
        let link = rest[..end].trim();
        rest = &rest[end..];
        if link.contains("://") || link.starts_with("mailto:") || link.contains(' ') {
            continue;
        }
        let (target, anchor) = match link.split_once('#') {
            Some((t, a)) => (t.to_owned(), Some(a.to_owned())),
            None => (link.to_owned(), None),
        };
        out.push((target, anchor));
    }
    out
}

#[test]
fn every_relative_link_and_anchor_in_the_docs_resolves() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = read(&page);
        for (target, anchor) in links(&text) {
            let dest = if target.is_empty() {
                page.clone()
            } else {
                page.parent().expect("a page's folder").join(&target)
            };
            let shown = format!(
                "{}: ({target}{})",
                page.strip_prefix(repo()).unwrap_or(&page).display(),
                anchor
                    .as_deref()
                    .map(|a| format!("#{a}"))
                    .unwrap_or_default()
            );
            if !dest.exists() {
                broken.push(format!("{shown}: no such file"));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            if dest.extension().is_some_and(|e| e == "md")
                && !anchors(&read(&dest)).contains(&anchor)
            {
                broken.push(format!("{shown}: no such heading"));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_maintainers_index_lists_every_page_and_user_pages_hold_no_contributor_code() {
    let folder = repo().join("docs/maintainers");
    let index = read(&folder.join("README.md"));
    let listed: BTreeSet<String> = links(&index).into_iter().map(|(t, _)| t).collect();
    for entry in std::fs::read_dir(&folder).expect("docs/maintainers") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if name != "README.md" {
            assert!(
                listed.contains(&name),
                "docs/maintainers/README.md does not list {name}"
            );
        }
    }
    // A user page says what a user does: no Rust to copy into tuls.
    for page in pages() {
        if page.starts_with(&folder) {
            continue;
        }
        let text = read(&page);
        assert!(
            !text.contains("```rust"),
            "{} shows contributor code; it belongs in docs/maintainers/",
            page.display()
        );
    }
}

/// The number words docs/tools.md uses for its selector table.
const NUMBERS: [&str; 21] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
];

#[test]
fn docs_tools_lists_every_tool_of_tools_list_and_counts_them_right() {
    let env = TestEnv::new();
    let count = |selector: &str| -> Vec<String> {
        let mut raw = RawServer::start(&args![env.root(), "--allow", selector]);
        raw.initialize("2025-06-18");
        let resp = raw.request("tools/list", json!({}));
        resp["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("tools/list: {resp}"))
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    };
    let doc = read(&repo().join("docs/tools.md"));
    let all = count("filesystem");
    let table: BTreeSet<String> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once("` | `filesystem."))
        .map(|(name, _)| name.to_owned())
        .collect();
    let served: BTreeSet<String> = all.iter().cloned().collect();
    assert_eq!(table, served, "docs/tools.md's table against tools/list");
    for (selector, words) in [
        ("filesystem", "| `filesystem` | all "),
        ("filesystem.read", "| `filesystem.read` | the "),
        ("filesystem.write", "| `filesystem.write` | the "),
    ] {
        let n = count(selector).len();
        let want = format!("{words}{} ", NUMBERS[n]);
        let want = want.trim_end().to_owned();
        assert!(
            doc.contains(&want),
            "docs/tools.md should say `{want}` ({selector} enables {n} tools)"
        );
    }
}

/// The README's "prints N startup lines and, in a terminal, M more": counted
/// with stdin not a terminal, and under `script(1)`, which gives the server a
/// terminal as a person's shell would.
#[test]
fn the_readme_counts_the_startup_lines_a_terminal_shows() {
    let readme = read(&repo().join("README.md"));
    let word = |after: &str| -> usize {
        let at = readme
            .find(after)
            .unwrap_or_else(|| panic!("README.md no longer says '{after}'"));
        let before = readme[..at].trim_end();
        let w = before
            .rsplit(char::is_whitespace)
            .next()
            .unwrap_or_default();
        NUMBERS
            .iter()
            .position(|n| *n == w)
            .unwrap_or_else(|| panic!("README.md: '{w} {after}' is not a number word"))
    };
    let plain = word("startup lines");
    let more = word("more on how to connect a client");
    let env = TestEnv::new();
    let out = Command::new(crate::util::bin())
        .arg("filesystem")
        .arg(env.root())
        .stdin(Stdio::null())
        .output()
        .expect("run tuls");
    let lines = String::from_utf8_lossy(&out.stderr).lines().count();
    assert_eq!(lines, plain, "startup lines without a terminal: {out:?}");
    // script(1) runs the server on a new terminal; its stdin at end of file
    // ends the session after the lines are printed.
    let cmd = format!(
        "{} filesystem {}",
        crate::util::bin().display(),
        env.root().display()
    );
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .expect("script(1) (util-linux) runs the server on a terminal");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines = text.lines().filter(|l| l.starts_with("tuls: ")).count();
    assert_eq!(lines, plain + more, "startup lines on a terminal:\n{text}");
    // The hint names the binary by its absolute path, as the README advises.
    assert!(
        text.contains(&format!(
            "claude mcp add tuls -- {} filesystem",
            crate::util::bin().display()
        )),
        "the hint should name the binary by its absolute path:\n{text}"
    );
}
