//! Git obeys files outside the `.git` path: a hooks path in the tree
//! (`core.hooksPath`), hooks in `.git/hooks` that are links to files in the
//! tree, a `.git` file naming a git directory elsewhere in the root
//! (`--separate-git-dir`, worktrees, submodules), and configs included from
//! the tree (`include.path`, `includeIf.*.path`). tuls reads each
//! repository's `.git` and makes what git runs or obeys read-only
//! (`src/fs/gitdirs.rs`). Ground truth: the bytes on disk, and a real
//! `git commit` / `git status` that must not run the agent's code, with a
//! `--no-default-protection` control in which git does run it.

use std::path::Path;

use serde_json::json;

use crate::util::{Server, TestEnv, cli::run_cli, default_timeout};

use super::aliases::{assert_unwritable, git, hook};

/// A harmless executable hook at `rel`: a write that got through keeps its
/// mode, so git would run what the agent wrote.
fn benign_hook(env: &TestEnv, rel: &str) {
    env.write(rel, "#!/bin/sh\nexit 0\n");
    env.chmod(rel, 0o755);
}

/// The agent's fsmonitor: git runs it on `git status`.
fn fsmonitor(marker: &Path) -> String {
    format!(
        "[core]\n\tfsmonitor = \"touch '{}'; echo\"\n",
        marker.display()
    )
}

/// Commits `a.txt` in `dir` and says whether `marker` appeared.
fn commit_runs(dir: &Path, marker: &Path) -> (bool, String) {
    std::fs::write(
        dir.join("a.txt"),
        format!("{:?}\n", std::time::Instant::now()),
    )
    .expect("write a.txt");
    git(dir, &["add", "a.txt"]);
    let out = git(dir, &["commit", "-q", "-m", "x"]);
    (marker.exists(), out)
}

#[test]
fn a_hooks_path_in_the_tree_is_read_only() {
    let env = TestEnv::new();
    let root = env.root();
    git(&root, &["init", "-q"]);
    git(&root, &["config", "core.hooksPath", ".githooks"]);
    benign_hook(&env, ".githooks/pre-commit");
    env.write("scratch.txt", "scratch\n");
    let marker = env.outside().join("hook-ran");
    let s = Server::start(&args![env.root()]);
    for path in [
        ".githooks/pre-commit",
        ".githooks/post-commit",
        "./.githooks/../.githooks/pre-commit",
    ] {
        assert_unwritable(&s, &env, path, &hook(&marker));
    }
    assert_eq!(
        env.read_string(".githooks/pre-commit"),
        "#!/bin/sh\nexit 0\n"
    );
    // Moving the hooks directory away (and a new one in) is refused too.
    let r = s.call(
        "move_file",
        json!({"source": ".githooks", "destination": "old-hooks"}),
    );
    assert!(r.is_error, "the hooks directory moved: {}", r.text);
    // Other files stay writable.
    s.call("write_file", json!({"path": "b.txt", "content": "b\n"}))
        .assert_ok();
    let (ran, out) = commit_runs(&root, &marker);
    assert!(!ran, "git ran the agent's hook: {out}");
    // The control: without the built-in protections the write lands and
    // git runs it.
    let open = Server::start(&args![env.root(), "--no-default-protection"]);
    open.call(
        "write_file",
        json!({"path": ".githooks/pre-commit", "content": hook(&marker)}),
    )
    .assert_ok();
    let (ran, out) = commit_runs(&root, &marker);
    assert!(ran, "the control hook did not run: {out}");
    // The operator's --allow-path lifts it where it matches, and only
    // there: the rest of the built-in set holds.
    let lifted = Server::start(&args![env.root(), "--allow-path", "/.githooks"]);
    lifted
        .call(
            "write_file",
            json!({"path": ".githooks/pre-commit", "content": "#!/bin/sh\nexit 0\n"}),
        )
        .assert_ok();
    assert_unwritable(&lifted, &env, ".git/config", "x");
}

#[test]
fn a_hooks_path_set_while_tuls_runs_is_protected_from_the_next_write() {
    let env = TestEnv::new();
    let root = env.root();
    git(&root, &["init", "-q"]);
    benign_hook(&env, "tools/hooks/pre-commit");
    env.write("scratch.txt", "scratch\n");
    let marker = env.outside().join("hook-ran");
    let s = Server::start(&args![env.root()]);
    // Not a hooks path yet: writable.
    s.call(
        "write_file",
        json!({"path": "tools/hooks/notes.txt", "content": "n\n"}),
    )
    .assert_ok();
    // A person (or git) sets the hooks path while tuls runs.
    git(&root, &["config", "core.hooksPath", "tools/hooks"]);
    assert_unwritable(&s, &env, "tools/hooks/pre-commit", &hook(&marker));
    let (ran, out) = commit_runs(&root, &marker);
    assert!(!ran, "git ran the agent's hook: {out}");
    // And unset again: writable again.
    git(&root, &["config", "--unset", "core.hooksPath"]);
    s.call(
        "write_file",
        json!({"path": "tools/hooks/notes.txt", "content": "m\n"}),
    )
    .assert_ok();
}

#[test]
fn hooks_that_link_into_the_tree_are_read_only() {
    let env = TestEnv::new();
    let root = env.root();
    git(&root, &["init", "-q"]);
    benign_hook(&env, "scripts/pre-commit");
    env.symlink("../../scripts/pre-commit", ".git/hooks/pre-commit");
    // A link whose target does not exist yet protects the name it leads to.
    env.symlink("../../scripts/post-commit", ".git/hooks/post-commit");
    env.write("scratch.txt", "scratch\n");
    let marker = env.outside().join("hook-ran");
    let s = Server::start(&args![env.root()]);
    for path in ["scripts/pre-commit", "scripts/post-commit"] {
        assert_unwritable(&s, &env, path, &hook(&marker));
    }
    assert_eq!(env.read_string("scripts/pre-commit"), "#!/bin/sh\nexit 0\n");
    s.call(
        "write_file",
        json!({"path": "scripts/build.sh", "content": "b\n"}),
    )
    .assert_ok();
    let (ran, out) = commit_runs(&root, &marker);
    assert!(!ran, "git ran the agent's hook: {out}");
    let open = Server::start(&args![env.root(), "--no-default-protection"]);
    open.call(
        "write_file",
        json!({"path": "scripts/pre-commit", "content": hook(&marker)}),
    )
    .assert_ok();
    let (ran, out) = commit_runs(&root, &marker);
    assert!(ran, "the control hook did not run: {out}");
}

/// `.git` a file naming the git directory: absolute, as `git init
/// --separate-git-dir` writes it, and relative, as submodules do.
#[test]
fn a_git_file_naming_a_directory_in_the_root_protects_it() {
    for (store, separate) in [("store", true), (".gitstore", false)] {
        let env = TestEnv::new();
        let root = env.root();
        if separate {
            git(&root, &["init", "-q", "--separate-git-dir", store]);
        } else {
            git(&root, &["init", "-q"]);
            std::fs::rename(env.path(".git"), env.path(store)).expect("move .git");
            env.write(".git", format!("gitdir: {store}\n"));
        }
        assert!(env.read_string(".git").starts_with("gitdir: "));
        benign_hook(&env, &format!("{store}/hooks/pre-commit"));
        env.write("scratch.txt", "scratch\n");
        let marker = env.outside().join("hook-ran");
        let s = Server::start(&args![env.root()]);
        assert_unwritable(
            &s,
            &env,
            &format!("{store}/hooks/pre-commit"),
            &hook(&marker),
        );
        assert_unwritable(&s, &env, &format!("{store}/config"), &fsmonitor(&marker));
        assert_unwritable(&s, &env, &format!("{store}/hooks/post-commit"), "x");
        let (ran, out) = commit_runs(&root, &marker);
        assert!(!ran, "{store}: git ran the agent's code: {out}");
        git(&root, &["status"]);
        assert!(!marker.exists(), "{store}: git status ran the agent's code");
        let open = Server::start(&args![env.root(), "--no-default-protection"]);
        open.call(
            "write_file",
            json!({"path": format!("{store}/hooks/pre-commit"), "content": hook(&marker)}),
        )
        .assert_ok();
        let (ran, out) = commit_runs(&root, &marker);
        assert!(ran, "{store}: the control hook did not run: {out}");
    }
}

/// A linked worktree inside the root of a repository whose git directory
/// is kept apart: the worktree's `.git` file names
/// `store/worktrees/wt`, whose `commondir` leads back to `store`.
#[test]
fn a_worktree_protects_its_common_directory() {
    let env = TestEnv::new();
    let main = env.path("main");
    std::fs::create_dir(&main).expect("mkdir main");
    git(&main, &["init", "-q", "--separate-git-dir", "../store"]);
    std::fs::write(main.join("a.txt"), "a\n").expect("write");
    git(&main, &["add", "a.txt"]);
    git(&main, &["commit", "-q", "-m", "init"]);
    // The main checkout's `.git` file is gone: only the worktree names it.
    git(&main, &["worktree", "add", "-q", "../wt"]);
    std::fs::remove_dir_all(&main).expect("remove main");
    benign_hook(&env, "store/hooks/pre-commit");
    env.write("scratch.txt", "scratch\n");
    let marker = env.outside().join("hook-ran");
    let s = Server::start(&args![env.root()]);
    assert_unwritable(&s, &env, "store/hooks/pre-commit", &hook(&marker));
    assert_unwritable(&s, &env, "store/config", &fsmonitor(&marker));
    let (ran, out) = commit_runs(&env.path("wt"), &marker);
    assert!(!ran, "git ran the agent's hook: {out}");
    let open = Server::start(&args![env.root(), "--no-default-protection"]);
    open.call(
        "write_file",
        json!({"path": "store/hooks/pre-commit", "content": hook(&marker)}),
    )
    .assert_ok();
    let (ran, out) = commit_runs(&env.path("wt"), &marker);
    assert!(ran, "the control hook did not run: {out}");
}

#[test]
fn configs_included_from_the_tree_are_read_only() {
    let env = TestEnv::new();
    let root = env.root();
    git(&root, &["init", "-q"]);
    // Relative to the including file: `.git/config` names `shared.gitconfig`
    // at the top, which names `conf/deeper.gitconfig` beside itself.
    git(&root, &["config", "include.path", "../shared.gitconfig"]);
    git(
        &root,
        &["config", "includeIf.gitdir:**.path", "../cond.gitconfig"],
    );
    env.write(
        "shared.gitconfig",
        "[include]\n\tpath = conf/deeper.gitconfig\n",
    );
    env.write("cond.gitconfig", "[user]\n\tname = t\n");
    env.write("conf/deeper.gitconfig", "[user]\n\temail = t@example.com\n");
    env.write("scratch.txt", "scratch\n");
    let marker = env.outside().join("fsmonitor-ran");
    let s = Server::start(&args![env.root()]);
    for path in [
        "shared.gitconfig",
        "cond.gitconfig",
        "conf/deeper.gitconfig",
    ] {
        assert_unwritable(&s, &env, path, &fsmonitor(&marker));
    }
    s.call(
        "write_file",
        json!({"path": "conf/other.txt", "content": "o\n"}),
    )
    .assert_ok();
    let out = git(&root, &["status"]);
    assert!(!marker.exists(), "git status ran the agent's code: {out}");
    let open = Server::start(&args![env.root(), "--no-default-protection"]);
    for path in ["cond.gitconfig", "conf/deeper.gitconfig"] {
        std::fs::remove_file(&marker).ok();
        open.call(
            "write_file",
            json!({"path": path, "content": fsmonitor(&marker)}),
        )
        .assert_ok();
        let out = git(&root, &["status"]);
        assert!(marker.exists(), "{path}: the control did not run: {out}");
    }
}

#[test]
fn print_config_names_what_git_obeys_with_its_source() {
    let env = TestEnv::new();
    let root = env.root();
    let r = env.root_str();
    git(&root, &["init", "-q", "--separate-git-dir", "store"]);
    git(&root, &["config", "core.hooksPath", ".githooks"]);
    git(&root, &["config", "include.path", "../shared.gitconfig"]);
    env.write("shared.gitconfig", "[user]\n\tname = t\n");
    benign_hook(&env, "scripts/pre-push");
    env.symlink("../../scripts/pre-push", "store/hooks/pre-push");
    let out = run_cli(
        &args!["filesystem", env.root(), "--print-config"],
        default_timeout(),
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let config: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    let rules = config["pathRules"].as_array().expect("pathRules");
    let find = |pattern: &str| {
        rules
            .iter()
            .find(|x| x["pattern"] == pattern && x["id"] == "git")
            .unwrap_or_else(|| panic!("no git rule for {pattern}: {}", out.stdout))
    };
    for (pattern, source) in [
        ("/store", format!("git: {r}/.git gitdir")),
        (
            "/.githooks",
            format!("git: {r}/store/config core.hooksPath"),
        ),
        (
            "/shared.gitconfig",
            format!("git: {r}/store/config include.path"),
        ),
        (
            "/scripts/pre-push",
            format!("git: {r}/store/hooks/pre-push"),
        ),
    ] {
        let rule = find(pattern);
        assert_eq!(rule["source"], source.as_str(), "{pattern}: {rule}");
        assert_eq!(rule["effect"], "read-only", "{pattern}: {rule}");
        assert_eq!(rule["root"], r.as_str(), "{pattern}: {rule}");
    }
    // Without the built-in protections there are none.
    let out = run_cli(
        &args![
            "filesystem",
            env.root(),
            "--print-config",
            "--no-default-protection"
        ],
        default_timeout(),
    );
    assert!(!out.stdout.contains("\"git\""), "{}", out.stdout);
}

/// `--print-config` of `root` with `env` set: the git rules' patterns and
/// stderr.
fn git_patterns(root: &Path, env: &[(&str, &str)]) -> (Vec<String>, String) {
    let out = std::process::Command::new(crate::util::bin())
        .args([std::ffi::OsStr::new("filesystem"), root.as_os_str()])
        .arg("--print-config")
        .envs(env.iter().copied())
        .output()
        .expect("run tuls");
    assert!(out.status.success(), "{out:?}");
    let config: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let patterns = config["pathRules"]
        .as_array()
        .expect("pathRules")
        .iter()
        .filter(|r| r["id"] == "git")
        .filter_map(|r| r["pattern"].as_str().map(str::to_owned))
        .collect();
    (patterns, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The search's bounds, at the limit and one past it: directories searched
/// (breadth first: `a` at depth 1 before `b/c` at depth 2) and
/// repositories read; past each, a warning names the limit.
#[test]
fn the_search_for_repositories_is_bounded() {
    let env = TestEnv::new();
    for top in ["a", "b/c"] {
        std::fs::create_dir_all(env.path(top)).expect("mkdir");
        git(&env.path(top), &["init", "-q"]);
        git(&env.path(top), &["config", "core.hooksPath", "hooks"]);
    }
    let root = env.root();
    let (all, err) = git_patterns(&root, &[]);
    assert!(
        all.contains(&"/a/hooks".to_owned()) && all.contains(&"/b/c/hooks".to_owned()),
        "{all:?}"
    );
    assert!(!err.contains("MAX_GIT"), "{err}");
    // Directories: the root, a and b are 3; b/c is the 4th.
    let (p, err) = git_patterns(&root, &[("TULS_DEBUG_GIT_SCAN_DIRS", "4")]);
    assert_eq!(p, all, "at the directory limit");
    assert!(!err.contains("MAX_GIT_SCAN_DIRS"), "{err}");
    let (p, err) = git_patterns(&root, &[("TULS_DEBUG_GIT_SCAN_DIRS", "3")]);
    assert_eq!(p, ["/a/hooks"], "past the directory limit");
    assert!(err.contains("MAX_GIT_SCAN_DIRS"), "{err}");
    let (p, err) = git_patterns(&root, &[("TULS_DEBUG_GIT_REPOS", "2")]);
    assert_eq!(p, all, "at the repository limit");
    assert!(!err.contains("MAX_GIT_REPOS"), "{err}");
    let (p, err) = git_patterns(&root, &[("TULS_DEBUG_GIT_REPOS", "1")]);
    assert_eq!(p, ["/a/hooks"], "past the repository limit");
    assert!(err.contains("MAX_GIT_REPOS"), "{err}");
}

/// Includes are followed 10 deep, as git follows them: the 11th config
/// named is protected but not read, so the 12th is not protected.
#[test]
fn includes_are_followed_as_deep_as_git_follows_them() {
    let env = TestEnv::new();
    let root = env.root();
    git(&root, &["init", "-q"]);
    git(&root, &["config", "include.path", "../i1"]);
    for i in 1..=11 {
        env.write(format!("i{i}"), format!("[include]\n\tpath = i{}\n", i + 1));
    }
    let (p, err) = git_patterns(&root, &[]);
    for i in 1..=11 {
        assert!(p.contains(&format!("/i{i}")), "i{i}: {p:?}");
    }
    assert!(!p.contains(&"/i12".to_owned()), "{p:?}");
    assert!(err.contains("MAX_GIT_INCLUDE_DEPTH"), "{err}");
}

/// Android `repo` checkouts: `.git/hooks` and `.git/config` are links into
/// the tree. Written under their own names, they are git's hooks and
/// config all the same.
#[test]
fn what_a_git_directory_links_to_is_read_only_under_its_own_name() {
    let env = TestEnv::new();
    let root = env.root();
    git(&root, &["init", "-q"]);
    std::fs::rename(env.path(".git/hooks"), env.path("shared-hooks")).expect("move hooks");
    env.symlink("../shared-hooks", ".git/hooks");
    std::fs::rename(env.path(".git/config"), env.path("shared-config")).expect("move config");
    env.symlink("../shared-config", ".git/config");
    benign_hook(&env, "shared-hooks/pre-commit");
    env.write("scratch.txt", "scratch\n");
    let marker = env.outside().join("hook-ran");
    let s = Server::start(&args![env.root()]);
    assert_unwritable(&s, &env, "shared-hooks/pre-commit", &hook(&marker));
    assert_unwritable(&s, &env, "shared-config", &fsmonitor(&marker));
    let (ran, out) = commit_runs(&root, &marker);
    assert!(!ran, "git ran the agent's code: {out}");
    let open = Server::start(&args![env.root(), "--no-default-protection"]);
    open.call(
        "write_file",
        json!({"path": "shared-hooks/pre-commit", "content": hook(&marker)}),
    )
    .assert_ok();
    let (ran, out) = commit_runs(&root, &marker);
    assert!(ran, "the control hook did not run: {out}");
}
