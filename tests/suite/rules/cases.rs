//! Path rules, through the binary: one line per case (path, tool, expected
//! effect) over one layout, for every tool, with ground truth on disk (the
//! whole tree is snapshotted around every refusal) and every reply scanned
//! for the canaries planted in the hidden files.
//!
//! The layout (see [`layout`]) runs with the built-in protections plus
//! `--hide .env --hide secrets --hide '*.pem' --hide /docs/private
//! --read-only-path /docs/locked`.

use serde_json::{Value, json};

use crate::util::{Server, TestEnv};

/// In every hidden file; never in a reply.
pub(super) const CANARY: &str = "CANARY-7f3a";

/// What a case must do.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// Succeeds, and no canary shows.
    Ok,
    /// Fails exactly as the same call on a path that does not exist.
    Missing,
    /// Fails with an error containing this, and nothing on disk changes.
    Refused(&'static str),
    /// Succeeds, and no hidden name or canary shows in the text.
    Lists,
}

use Expect::{Lists, Missing, Ok, Refused};

pub(super) const PROTECTED: &str = "path is read-only (protected by the server's path rules)";
const MOVE_CHANGES: &str = "would change what the server's path rules protect";

fn layout(env: &TestEnv) {
    env.write(".env", format!("TOKEN={CANARY}\n"));
    env.write(".env.example", "TOKEN=\n");
    env.write("secrets/key.pem", CANARY);
    env.write("secrets/notes.txt", CANARY);
    env.write("a/x.txt", "x\n");
    env.write("a/key.pem", CANARY);
    env.write(".git/config", "[core]\n");
    env.mkdir(".git/hooks");
    env.write(".claude/settings.json", "{}\n");
    env.mkdir(".claude/commands");
    env.write("docs/readme.md", "read me\n");
    env.write("docs/private/p.txt", CANARY);
    env.write("docs/locked/l.txt", "locked\n");
    env.symlink(".git/hooks", "innocent");
    env.symlink(".git/config", "cfglink");
    env.symlink(".env", "envlink");
    env.symlink("secrets", "seclink");
    // Where the filesystem folds case (the portable backend stands in for
    // macOS), `.ENV` is `.env`: the rules match it too.
    #[cfg(feature = "portable")]
    env.write(".ENV", CANARY);
}

fn server(env: &TestEnv) -> Server {
    Server::start(&args![
        env.root(),
        "--hide",
        ".env",
        "--hide",
        "secrets",
        "--hide",
        "*.pem",
        "--hide",
        "/docs/private",
        "--read-only-path",
        "/docs/locked",
    ])
}

/// One case: a tool, its arguments (`@` before a path makes it absolute
/// under the root), and the expected effect.
struct Case(&'static str, Value, Expect);

fn cases() -> Vec<Case> {
    vec![
        // Hidden: every read answers as for a missing path.
        Case("read_text_file", json!({"path": ".env"}), Missing),
        Case("read_text_file", json!({"path": "@.env"}), Missing),
        Case("read_text_file", json!({"path": "a/../.env"}), Missing),
        Case("read_text_file", json!({"path": "./.env"}), Missing),
        Case("read_text_file", json!({"path": "./.ENV"}), Missing),
        Case("read_text_file", json!({"path": ".git/../.ENV"}), Missing),
        Case("read_text_file", json!({"path": "envlink"}), Missing),
        Case(
            "read_text_file",
            json!({"path": "secrets/notes.txt"}),
            Missing,
        ),
        Case(
            "read_text_file",
            json!({"path": "seclink/notes.txt"}),
            Missing,
        ),
        Case(
            "read_text_file",
            json!({"path": "secrets/../a/x.txt"}),
            Missing,
        ),
        Case("read_text_file", json!({"path": "a/key.pem"}), Missing),
        Case(
            "read_text_file",
            json!({"path": "docs/private/p.txt"}),
            Missing,
        ),
        Case(
            "read_text_file",
            json!({"path": ".env", "head": 1}),
            Missing,
        ),
        Case("read_text_file", json!({"path": ".env.example"}), Ok),
        Case(
            "read_text_file",
            json!({"path": "a/x.txt/."}),
            Refused("ENOTDIR"),
        ),
        Case("get_file_info", json!({"path": ".env/."}), Missing),
        Case("read_media_file", json!({"path": ".env"}), Missing),
        Case("read_media_file", json!({"path": "a/key.pem"}), Missing),
        Case(
            "read_multiple_files",
            json!({"paths": [".env", "a/x.txt"]}),
            Lists,
        ),
        Case("get_file_info", json!({"path": ".env"}), Missing),
        Case("get_file_info", json!({"path": "secrets"}), Missing),
        Case("get_file_info", json!({"path": "seclink"}), Missing),
        Case("list_directory", json!({"path": "secrets"}), Missing),
        Case("list_directory", json!({"path": "secrets/"}), Missing),
        Case("list_directory", json!({"path": "."}), Lists),
        Case("list_directory", json!({"path": "a"}), Lists),
        Case("list_directory_with_sizes", json!({"path": "."}), Lists),
        Case(
            "list_directory_with_sizes",
            json!({"path": "secrets"}),
            Missing,
        ),
        Case("directory_tree", json!({"path": "."}), Lists),
        Case("directory_tree", json!({"path": "secrets"}), Missing),
        Case(
            "search_files",
            json!({"path": ".", "pattern": "**/*"}),
            Lists,
        ),
        Case(
            "search_files",
            json!({"path": "secrets", "pattern": "*"}),
            Missing,
        ),
        Case(
            "search_file_contents",
            json!({"path": ".", "pattern": "CANARY", "hidden": true, "noIgnore": true}),
            Lists,
        ),
        Case(
            "search_file_contents",
            json!({"path": ".env", "pattern": "T"}),
            Missing,
        ),
        // Hidden: nothing is written, created or moved there or away.
        Case(
            "write_file",
            json!({"path": ".env", "content": "x"}),
            Refused("ENOENT"),
        ),
        Case(
            "write_file",
            json!({"path": "secrets/new.txt", "content": "x"}),
            Refused("Parent directory does not exist: secrets"),
        ),
        Case(
            "write_file",
            json!({"path": "a/new.pem", "content": "x"}),
            Refused("ENOENT"),
        ),
        Case(
            "write_file",
            json!({"path": "envlink", "content": "x"}),
            // As through a link to a missing name (`rules::twin`).
            Refused("Refusing to write through a dangling symbolic link"),
        ),
        Case(
            "edit_file",
            json!({"path": ".env", "edits": [{"oldText": "TOKEN", "newText": "T"}]}),
            Refused("ENOENT"),
        ),
        Case(
            "create_directory",
            json!({"path": "secrets/sub"}),
            Refused("ENOENT"),
        ),
        Case(
            "create_directory",
            json!({"path": "a/new/secrets"}),
            Refused("ENOENT"),
        ),
        Case(
            "move_file",
            json!({"source": ".env", "destination": "a/env"}),
            Refused("ENOENT"),
        ),
        Case(
            "move_file",
            json!({"source": "a/x.txt", "destination": ".env2/../.env"}),
            Refused("Parent directory does not exist: .env2/.."),
        ),
        Case(
            "move_file",
            json!({"source": "a/x.txt", "destination": "secrets/x.txt"}),
            Refused("Parent directory does not exist: secrets"),
        ),
        Case(
            "move_file",
            json!({"source": "docs", "destination": "docs2"}),
            Refused(MOVE_CHANGES),
        ),
        Case("read_file", json!({"path": ".env"}), Missing),
        Case("read_file", json!({"path": "a/../.env"}), Missing),
        Case("read_file", json!({"path": "envlink"}), Missing),
        Case("directory_tree", json!({"path": "seclink"}), Missing),
        Case(
            "search_file_contents",
            json!({"path": "seclink", "pattern": "C"}),
            Missing,
        ),
        Case(
            "read_multiple_files",
            json!({"paths": ["seclink/notes.txt", "a/../.env", "a/x.txt"]}),
            Lists,
        ),
        Case(
            "append_file",
            json!({"path": ".env", "content": "x"}),
            Refused("ENOENT"),
        ),
        Case(
            "append_file",
            json!({"path": "secrets/new.txt", "content": "x"}),
            Refused("Parent directory does not exist: secrets"),
        ),
        Case(
            "copy_file",
            json!({"source": ".env", "destination": "a/env-copy"}),
            Refused("ENOENT"),
        ),
        Case(
            "copy_file",
            json!({"source": "seclink/notes.txt", "destination": "a/n.txt"}),
            Refused("Parent directory does not exist: seclink"),
        ),
        Case(
            "copy_file",
            json!({"source": "a/x.txt", "destination": "secrets/x.txt"}),
            Refused("Parent directory does not exist: secrets"),
        ),
        Case(
            "copy_file",
            json!({"source": "a/x.txt", "destination": "a/new.pem"}),
            Refused("ENOENT"),
        ),
        // Read-only: readable and listable...
        Case("read_text_file", json!({"path": ".git/config"}), Ok),
        Case("read_text_file", json!({"path": "cfglink"}), Ok),
        Case("list_directory", json!({"path": ".git"}), Ok),
        Case("get_file_info", json!({"path": ".git/config"}), Ok),
        // ... never written, created, moved away or into.
        Case(
            "write_file",
            json!({"path": ".git/config", "content": "x"}),
            Refused(PROTECTED),
        ),
        Case(
            "write_file",
            json!({"path": ".git//config", "content": "x"}),
            Refused(PROTECTED),
        ),
        Case(
            "write_file",
            json!({"path": "a/../.git/config", "content": "x"}),
            Refused(PROTECTED),
        ),
        Case(
            "write_file",
            json!({"path": "./.git/config", "content": "x"}),
            Refused(PROTECTED),
        ),
        Case(
            "write_file",
            json!({"path": "innocent/pre-commit", "content": "x"}),
            Refused(PROTECTED),
        ),
        Case(
            "write_file",
            json!({"path": "cfglink", "content": "x"}),
            Refused(PROTECTED),
        ),
        Case(
            "write_file",
            json!({"path": ".git/hooks/post-checkout", "content": "x"}),
            Refused(PROTECTED),
        ),
        Case(
            "write_file",
            json!({"path": ".mcp.json", "content": "{}"}),
            Refused(PROTECTED),
        ),
        Case(
            "write_file",
            json!({"path": "a/.envrc", "content": "x"}),
            Refused(PROTECTED),
        ),
        Case(
            "write_file",
            json!({"path": ".envrc", "content": "x"}),
            Refused(PROTECTED),
        ),
        Case(
            "write_file",
            json!({"path": ".claude/settings.json", "content": "x"}),
            Refused(PROTECTED),
        ),
        Case(
            "write_file",
            json!({"path": "docs/locked/l.txt", "content": "x"}),
            Refused(PROTECTED),
        ),
        Case(
            "edit_file",
            json!({"path": ".git/config", "edits": [{"oldText": "core", "newText": "x"}]}),
            Refused(PROTECTED),
        ),
        Case(
            "edit_file",
            json!({"path": ".git/config", "dryRun": true, "edits": [{"oldText": "core", "newText": "x"}]}),
            Refused(PROTECTED),
        ),
        Case(
            "create_directory",
            json!({"path": ".git/hooks/d"}),
            Refused(PROTECTED),
        ),
        Case(
            "create_directory",
            json!({"path": "innocent/d"}),
            Refused(PROTECTED),
        ),
        Case(
            "create_directory",
            json!({"path": "a/new/.git"}),
            Refused(PROTECTED),
        ),
        Case(
            "create_directory",
            json!({"path": "a/new/.git/../x"}),
            Refused(PROTECTED),
        ),
        Case(
            "move_file",
            json!({"source": ".git", "destination": "g"}),
            Refused(PROTECTED),
        ),
        Case(
            "move_file",
            json!({"source": ".git/config", "destination": "a/config"}),
            Refused(PROTECTED),
        ),
        Case(
            "move_file",
            json!({"source": "a/x.txt", "destination": ".git/hooks/pre-commit"}),
            Refused(PROTECTED),
        ),
        Case(
            "move_file",
            json!({"source": "a/x.txt", "destination": "innocent/pre-commit"}),
            Refused(PROTECTED),
        ),
        Case(
            "move_file",
            json!({"source": "a", "destination": ".claude/a"}),
            Refused(PROTECTED),
        ),
        Case(
            "move_file",
            json!({"source": "a/x.txt", "destination": ".mcp.json"}),
            Refused(PROTECTED),
        ),
        Case(
            "move_file",
            json!({"source": "docs/locked", "destination": "a/locked"}),
            Refused(PROTECTED),
        ),
        Case(
            "append_file",
            json!({"path": ".git/config", "content": "[core]\nfsmonitor = evil\n"}),
            Refused(PROTECTED),
        ),
        Case(
            "append_file",
            json!({"path": "cfglink", "content": "x"}),
            Refused(PROTECTED),
        ),
        Case(
            "append_file",
            json!({"path": "innocent/pre-commit", "content": "x"}),
            Refused(PROTECTED),
        ),
        Case(
            "edit_file",
            json!({"path": "cfglink", "edits": [{"oldText": "core", "newText": "x"}]}),
            Refused(PROTECTED),
        ),
        Case(
            "copy_file",
            json!({"source": "a/x.txt", "destination": ".git/hooks/pre-commit"}),
            Refused(PROTECTED),
        ),
        Case(
            "copy_file",
            json!({"source": "a/x.txt", "destination": "innocent/pre-commit"}),
            Refused(PROTECTED),
        ),
        Case(
            "copy_file",
            json!({"source": "a/x.txt", "destination": ".git//hooks/../config"}),
            Refused(PROTECTED),
        ),
        Case(
            "move_file",
            json!({"source": "cfglink", "destination": "a/cfg"}),
            Ok,
        ),
        // What no rule touches, and the exemptions, work as before.
        Case(
            "write_file",
            json!({"path": ".claude/commands/new.md", "content": "x"}),
            Ok,
        ),
        Case(
            "write_file",
            json!({"path": "a/new.txt", "content": "x"}),
            Ok,
        ),
        Case(
            "move_file",
            json!({"source": "a/x.txt", "destination": "a/y.txt"}),
            Ok,
        ),
        Case(
            "move_file",
            json!({"source": "innocent", "destination": "innocent2"}),
            Ok,
        ),
        Case(
            "append_file",
            json!({"path": "a/x.txt", "content": "y\n"}),
            Ok,
        ),
        Case("read_file", json!({"path": ".git/config"}), Ok),
        Case(
            "copy_file",
            json!({"source": ".git/config", "destination": "a/config"}),
            Ok,
        ),
        Case(
            "copy_file",
            json!({"source": "a/x.txt", "destination": ".claude/commands/x.md"}),
            Ok,
        ),
        Case("create_directory", json!({"path": "a/b/c"}), Ok),
        Case("list_allowed_directories", json!({}), Lists),
    ]
}

/// Makes `@`-paths absolute under the root.
fn absolute(env: &TestEnv, v: &Value) -> Value {
    match v {
        Value::String(s) if s.starts_with('@') => Value::String(env.path_str(&s[1..])),
        Value::Array(a) => Value::Array(a.iter().map(|x| absolute(env, x)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), absolute(env, x)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The same arguments with `path` renamed to a name that does not exist.
fn renamed(args: &Value, from: &str, to: &str) -> Value {
    let mut a = args.clone();
    if let Some(p) = a.get_mut("path") {
        *p = Value::String(to.to_owned());
    }
    let _ = from;
    a
}

#[test]
fn every_tool_obeys_the_path_rules_case_by_case() {
    let mut failures = Vec::new();
    for (i, Case(tool, args, expect)) in cases().into_iter().enumerate() {
        let env = TestEnv::new();
        layout(&env);
        let server = server(&env);
        let args = absolute(&env, &args);
        let before = env.snapshot(env.root());
        let r = server.call(tool, args.clone());
        let line = format!("#{i} {tool} {args} -> {expect:?}");
        let all = format!("{} {}", r.text, r.raw);
        if all.contains(CANARY) {
            failures.push(format!("{line}: a canary leaked: {}", r.text));
            continue;
        }
        match expect {
            Ok => {
                if r.is_error {
                    failures.push(format!("{line}: failed: {}", r.text));
                }
            }
            Lists => {
                let leaked = [".env\n", "secrets", "key.pem", "private", ".env\""]
                    .iter()
                    .find(|n| r.text.contains(*n));
                if r.is_error && tool != "read_multiple_files" {
                    failures.push(format!("{line}: failed: {}", r.text));
                } else if let Some(n) = leaked {
                    failures.push(format!("{line}: shows {n:?}: {}", r.text));
                }
            }
            Missing => {
                let given = args.get("path").and_then(Value::as_str).unwrap_or_default();
                // The last name renamed (before a trailing `/` or `/.`), so
                // that the ghost's parent is the path's own.
                let name = given.trim_end_matches(['/', '.']);
                let name = if name.is_empty() { given } else { name };
                let tail = given.get(name.len()..).unwrap_or_default();
                let ghost = format!("{name}-no-such{tail}");
                let want = server.call(tool, renamed(&args, given, &ghost));
                let want_text = want.text.replace(&ghost, given);
                if !r.is_error || r.text != want_text {
                    failures.push(format!(
                        "{line}: got {:?}, a missing path gives {want_text:?}",
                        r.text
                    ));
                }
            }
            Refused(needle) => {
                if !r.is_error || !r.text.contains(needle) {
                    failures.push(format!("{line}: got {:?}", r.text));
                }
                if env.snapshot(env.root()) != before {
                    failures.push(format!("{line}: the tree changed"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
