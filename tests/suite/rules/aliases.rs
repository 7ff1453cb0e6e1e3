//! A protection holds for every name by which another program reaches the
//! file: a protected name that is itself a symlink (`.git -> store.git`,
//! `.git/hooks -> ../hooks`, `.mcp.json -> config/mcp.json`), an
//! operator's `--read-only-path` on a link, and a protected name beneath an
//! exempt folder (`.claude/skills/foo/.git`). Ground truth: the tree on
//! disk, and a real `git commit` / `git status` that must not run the
//! agent's hook or fsmonitor.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::util::{Server, TestEnv};

use super::cases::PROTECTED;

/// Runs git in `dir` with a clean environment (no user or system config),
/// and returns its combined output. Fails the test when git is missing.
pub(super) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git runs (the rules tests need git on PATH)");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A hook body that leaves `marker` behind when git runs it.
pub(super) fn hook(marker: &Path) -> String {
    format!("#!/bin/sh\ntouch '{}'\n", marker.display())
}

/// Every way a client can put bytes at `path`: each must be refused as
/// read-only, and leave the tree as it was.
pub(super) fn assert_unwritable(s: &Server, env: &TestEnv, path: &str, body: &str) {
    let before = env.snapshot(env.root());
    let calls: Vec<(&str, Value)> = vec![
        ("write_file", json!({"path": path, "content": body})),
        ("append_file", json!({"path": path, "content": body})),
        (
            "edit_file",
            json!({"path": path, "edits": [{"oldText": "x", "newText": body}]}),
        ),
        ("create_directory", json!({"path": format!("{path}/sub")})),
        (
            "move_file",
            json!({"source": "scratch.txt", "destination": path}),
        ),
        (
            "copy_file",
            json!({"source": "scratch.txt", "destination": path}),
        ),
    ];
    for (tool, args) in calls {
        let r = s.call(tool, args.clone());
        assert!(r.is_error, "{tool} {args}: succeeded: {}", r.text);
        if tool != "create_directory" && tool != "edit_file" {
            assert!(r.text.contains(PROTECTED), "{tool} {args}: {}", r.text);
        }
        env.snapshot(env.root())
            .assert_same(&before, &format!("{tool} {args}"));
    }
}

/// A scratch file every move and copy starts from.
fn scratch(env: &TestEnv) {
    env.write("scratch.txt", "scratch\n");
}

#[test]
fn a_symlinked_git_directory_is_as_protected_as_a_real_one() {
    let env = TestEnv::new();
    let root = env.root();
    git(&root, &["init", "-q"]);
    std::fs::rename(env.path(".git"), env.path("store.git")).expect("move .git");
    env.symlink("store.git", ".git");
    env.write("a.txt", "a\n");
    env.mkdir("sub");
    scratch(&env);
    let marker = env.outside().join("hook-ran");
    // An executable hook already there: a write that got through would
    // keep its mode, and git would run it.
    env.write("store.git/hooks/pre-commit", "#!/bin/sh\nexit 0\n");
    env.chmod("store.git/hooks/pre-commit", 0o755);
    let s = Server::start(&args![env.root()]);
    let body = hook(&marker);
    for path in [
        ".git/hooks/pre-commit",
        ".git/config",
        "./.git/hooks/pre-commit",
        "sub/../.git/hooks/pre-commit",
        "store.git/../.git/hooks/pre-commit",
        // The git directory under its own name: git obeys it whatever it
        // is called (rules::git reads where `.git` leads).
        "store.git/hooks/pre-commit",
        "store.git/config",
    ] {
        assert_unwritable(&s, &env, path, &body);
    }
    assert_eq!(
        env.read_string("store.git/hooks/pre-commit"),
        "#!/bin/sh\nexit 0\n"
    );
    // A real commit runs no hook of the agent's.
    git(&root, &["add", "a.txt"]);
    let out = git(&root, &["commit", "-q", "-m", "x"]);
    assert!(!marker.exists(), "git ran the agent's hook: {out}");
    // The control: without the built-in protections the same write lands,
    // and git runs it.
    let open = Server::start(&args![env.root(), "--no-default-protection"]);
    open.call(
        "write_file",
        json!({"path": ".git/hooks/pre-commit", "content": body}),
    )
    .assert_ok();
    git(&root, &["commit", "-q", "--allow-empty", "-m", "y"]);
    assert!(
        marker.exists(),
        "the control hook did not run: git ignored it"
    );
}

#[test]
fn symlinked_hooks_and_config_inside_git_are_protected() {
    let env = TestEnv::new();
    let root = env.root();
    git(&root, &["init", "-q"]);
    // Android `repo` checkouts: the hooks directory and the config are
    // links out of `.git` into the tree.
    std::fs::rename(env.path(".git/hooks"), env.path("shared-hooks")).expect("move hooks");
    env.symlink("../shared-hooks", ".git/hooks");
    std::fs::rename(env.path(".git/config"), env.path("shared-config")).expect("move config");
    env.symlink("../shared-config", ".git/config");
    env.write("shared-hooks/pre-commit", "#!/bin/sh\nexit 0\n");
    env.chmod("shared-hooks/pre-commit", 0o755);
    env.write("a.txt", "a\n");
    scratch(&env);
    let marker = env.outside().join("hook-ran");
    let s = Server::start(&args![env.root()]);
    assert_unwritable(&s, &env, ".git/hooks/pre-commit", &hook(&marker));
    assert_unwritable(
        &s,
        &env,
        ".git/config",
        &format!("[core]\n\tfsmonitor = {}\n", marker.display()),
    );
    git(&root, &["add", "a.txt"]);
    let out = git(&root, &["commit", "-q", "-m", "x"]);
    assert!(!marker.exists(), "git ran the agent's code: {out}");
}

#[test]
fn protected_names_that_are_links_are_read_only() {
    let env = TestEnv::new();
    env.write("shared/vscode/settings.json", "{}\n");
    env.write("tools/claude/settings.json", "{}\n");
    env.mkdir("tools/claude/commands");
    env.write("config/mcp.json", "{}\n");
    env.write("tools/envrc", "\n");
    env.write("locks/Cargo.lock", "lock\n");
    env.symlink("shared/vscode", ".vscode");
    env.symlink("tools/claude", ".claude");
    env.symlink("config/mcp.json", ".mcp.json");
    env.symlink("tools/envrc", ".envrc");
    env.symlink("locks/Cargo.lock", "Cargo.lock");
    scratch(&env);
    let s = Server::start(&args![env.root(), "--read-only-path", "/Cargo.lock"]);
    for path in [
        ".vscode/tasks.json",
        ".vscode/settings.json",
        ".claude/settings.json",
        ".claude/settings.local.json",
        ".mcp.json",
        ".envrc",
        "Cargo.lock",
    ] {
        assert_unwritable(&s, &env, path, "x");
    }
    // The targets, under their own names: the program that obeys the
    // link's name reads them.
    for path in [
        "shared/vscode/tasks.json",
        "shared/vscode/settings.json",
        "tools/claude/settings.json",
        "config/mcp.json",
        "tools/envrc",
        "locks/Cargo.lock",
    ] {
        assert_unwritable(&s, &env, path, "x");
    }
    assert_eq!(env.read_string("config/mcp.json"), "{}\n");
    assert_eq!(env.read_string("locks/Cargo.lock"), "lock\n");
    // An exemption holds under the target's name too.
    s.call(
        "write_file",
        json!({"path": "tools/claude/commands/lint.md", "content": "lint\n"}),
    )
    .assert_ok();
    // What the exemption was made for still holds through the link.
    let r = s.call(
        "write_file",
        json!({"path": ".claude/commands/review.md", "content": "review\n"}),
    );
    r.assert_ok();
    assert_eq!(
        env.read_string("tools/claude/commands/review.md"),
        "review\n"
    );
}
