//! Writes through one name never change another (issue 30, item 8): a
//! file with more than one hard link is replaced by `append_file`,
//! `write_file` and `edit_file`, never changed in place, so its other
//! names (a protected git hook among them) keep their bytes. Checked on
//! disk: the other name's bytes and inode, the new file's link count and
//! mode, and a real `git merge` that must run the old hook.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::util::{Server, TestEnv, assert_text, version_of};

fn stat(path: &Path) -> std::fs::Metadata {
    std::fs::symlink_metadata(path).expect("stat")
}

/// Runs git in `dir` with no system or user configuration; panics unless
/// it succeeds.
fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(["-c", "init.defaultBranch=main"])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `notes.txt` is a second name of `.git/hooks/post-merge`, which the
/// default rules keep read-only. Appending to `notes.txt` replaces that
/// name with a new file (old bytes, then the appended ones; mode kept), so
/// the hook keeps its bytes and inode, and a real `git merge` runs the old
/// hook, not the agent's line. On the old code the append landed in the
/// hook (both names showed `touch pwned`).
#[test]
fn append_file_to_a_hard_linked_hook_leaves_the_hook_alone() {
    let env = TestEnv::new();
    let root = env.root();
    git(&root, &["init", "-q"]);
    let hook = "#!/bin/sh\necho ran >> .git/hook-ran\n";
    env.write(".git/hooks/post-merge", hook);
    env.chmod(".git/hooks/post-merge", 0o755);
    env.hardlink(".git/hooks/post-merge", "notes.txt");
    let hook_ino = stat(&env.path(".git/hooks/post-merge")).ino();
    let server = Server::start(&args![root]);
    server
        .call(
            "append_file",
            json!({"path": ".git/hooks/post-merge", "content": "touch pwned\n"}),
        )
        .assert_error_contains("read-only");
    assert_text(
        &server.call(
            "append_file",
            json!({"path": "notes.txt", "content": "touch pwned\n"}),
        ),
        "Successfully appended to notes.txt",
    );
    assert_eq!(env.read_string(".git/hooks/post-merge"), hook);
    assert_eq!(env.read_string("notes.txt"), format!("{hook}touch pwned\n"));
    let (h, n) = (
        stat(&env.path(".git/hooks/post-merge")),
        stat(&env.path("notes.txt")),
    );
    assert_eq!(h.ino(), hook_ino, "the hook is the same file");
    assert_ne!(n.ino(), hook_ino, "notes.txt is a new file");
    assert_eq!((h.nlink(), n.nlink()), (1, 1));
    assert_eq!(n.permissions().mode() & 0o7777, 0o755, "mode kept");
    // Once it has one name, notes.txt is appended to in place again.
    server
        .call("append_file", json!({"path": "notes.txt", "content": "#"}))
        .assert_ok();
    assert_eq!(stat(&env.path("notes.txt")).ino(), n.ino());
    // git runs the hook it had: the agent's line never runs.
    git(&root, &["commit", "-q", "--allow-empty", "-m", "a"]);
    git(&root, &["checkout", "-q", "-b", "side"]);
    git(&root, &["commit", "-q", "--allow-empty", "-m", "b"]);
    git(&root, &["checkout", "-q", "main"]);
    git(&root, &["merge", "-q", "side"]);
    assert_eq!(env.read_string(".git/hook-ran"), "ran\n", "the hook ran");
    assert!(!env.exists("pwned"), "the appended line never ran");
}

/// Appending to a file with other names reads it whole, so the file must
/// be within `--max-read-bytes`: at the limit it is replaced, one byte past
/// it is refused with both names unchanged. `ifMatch` holds as for any
/// append: a stale version changes nothing, the current one goes through.
#[test]
fn append_file_to_a_hard_linked_file_is_bounded_and_conditional() {
    let env = TestEnv::new();
    let limit = 4096usize;
    let at = "a".repeat(limit);
    let over = "b".repeat(limit + 1);
    env.write("at.txt", &at);
    env.hardlink("at.txt", "at-link.txt");
    env.write("over.txt", &over);
    env.hardlink("over.txt", "over-link.txt");
    env.write("v.txt", "v1\n");
    env.hardlink("v.txt", "v-link.txt");
    let server = Server::start(&args![env.root(), "--max-read-bytes", limit.to_string()]);
    let append = |path: &str, content: &str| {
        server.call("append_file", json!({"path": path, "content": content}))
    };
    append("at.txt", "+").assert_ok();
    assert!(env.read_string("at.txt") == format!("{at}+"), "appended");
    assert!(env.read_string("at-link.txt") == at, "the other name kept");
    assert_eq!(stat(&env.path("at.txt")).nlink(), 1);
    let r = append("over.txt", "+");
    assert_eq!(
        r.assert_error().text,
        format!(
            "File too large: 'over.txt' is {} bytes, over the {limit}-byte limit; \
             it has other hard links, so an append replaces it with a copy of it \
             read whole, and files are read whole up to --max-read-bytes; nothing \
             was written",
            limit + 1
        )
    );
    assert!(env.read_string("over.txt") == over, "unchanged");
    assert_eq!(stat(&env.path("over.txt")).nlink(), 2, "still linked");
    // ifMatch: a stale version is refused, the current one appends.
    let stale = version_of(b"v0\n");
    server
        .call(
            "append_file",
            json!({"path": "v.txt", "content": "v2\n", "ifMatch": stale}),
        )
        .assert_error_contains("version");
    assert_eq!(env.read_string("v.txt"), "v1\n");
    assert_eq!(stat(&env.path("v.txt")).nlink(), 2);
    let current = version_of(b"v1\n");
    server
        .call(
            "append_file",
            json!({"path": "v.txt", "content": "v2\n", "ifMatch": current}),
        )
        .assert_ok();
    assert_eq!(env.read_string("v.txt"), "v1\nv2\n");
    assert_eq!(env.read_string("v-link.txt"), "v1\n");
    assert_eq!(stat(&env.path("v.txt")).nlink(), 1);
}

/// `write_file` over a name with another hard link replaces the name: the
/// other name keeps its bytes and inode, the new file has one link.
#[test]
fn write_file_to_a_hard_linked_file_leaves_the_other_name_alone() {
    let env = TestEnv::new();
    env.write("a.txt", "old\n");
    env.hardlink("a.txt", "b.txt");
    let ino = stat(&env.path("b.txt")).ino();
    let server = Server::start(&args![env.root()]);
    server
        .call("write_file", json!({"path": "a.txt", "content": "new\n"}))
        .assert_ok();
    assert_eq!(env.read_string("a.txt"), "new\n");
    assert_eq!(env.read_string("b.txt"), "old\n");
    let (a, b) = (stat(&env.path("a.txt")), stat(&env.path("b.txt")));
    assert_eq!(b.ino(), ino);
    assert_ne!(a.ino(), ino);
    assert_eq!((a.nlink(), b.nlink()), (1, 1));
}

/// `edit_file` on a name with another hard link replaces the name: the
/// other name keeps its bytes and inode, the new file has one link.
#[test]
fn edit_file_on_a_hard_linked_file_leaves_the_other_name_alone() {
    let env = TestEnv::new();
    env.write("a.txt", "one\ntwo\n");
    env.hardlink("a.txt", "b.txt");
    let ino = stat(&env.path("b.txt")).ino();
    let server = Server::start(&args![env.root()]);
    let edits = json!([{"oldText": "two", "newText": "2"}]);
    server
        .call("edit_file", json!({"path": "a.txt", "edits": edits}))
        .assert_ok();
    assert_eq!(env.read_string("a.txt"), "one\n2\n");
    assert_eq!(env.read_string("b.txt"), "one\ntwo\n");
    let (a, b) = (stat(&env.path("a.txt")), stat(&env.path("b.txt")));
    assert_eq!(b.ino(), ino);
    assert_ne!(a.ino(), ino);
    assert_eq!((a.nlink(), b.nlink()), (1, 1));
}
