//! An exemption lifts only the protection it was made for: beneath
//! `.claude/skills` (a skill installed as a git clone), a `.git`, `.envrc`,
//! `.mcp.json`, `.vscode/`, `.husky/` or a nested `.claude/` is protected
//! again. Ground truth: the tree on disk, and a real `git status` that must
//! not run the agent's `core.fsmonitor`.

use serde_json::json;

use crate::util::{Server, TestEnv};

use super::aliases::{assert_unwritable, git};

const SKILL: &str = ".claude/skills/foo";

fn layout(env: &TestEnv) {
    env.write(format!("{SKILL}/SKILL.md"), "skill\n");
    git(&env.path(SKILL), &["init", "-q"]);
    for d in [".vscode", ".husky", ".claude"] {
        env.mkdir(format!("{SKILL}/{d}"));
    }
    env.write("scratch.txt", "scratch\n");
}

#[test]
fn an_exempt_folder_does_not_lift_the_protections_beneath_it() {
    let env = TestEnv::new();
    layout(&env);
    let marker = env.outside().join("fsmonitor-ran");
    let config = format!(
        "[core]\n\tfsmonitor = \"touch '{}'; echo\"\n",
        marker.display()
    );
    let s = Server::start(&args![env.root()]);
    assert_unwritable(&s, &env, &format!("{SKILL}/.git/config"), &config);
    assert_unwritable(&s, &env, &format!("{SKILL}/.git/hooks/pre-commit"), "x");
    for name in [
        ".envrc",
        ".mcp.json",
        ".vscode/tasks.json",
        ".husky/pre-commit",
        ".claude/settings.json",
        ".pre-commit-config.yaml",
    ] {
        assert_unwritable(&s, &env, &format!("{SKILL}/{name}"), "x");
    }
    let out = git(&env.path(SKILL), &["status"]);
    assert!(
        !marker.exists(),
        "git status ran the agent's fsmonitor: {out}"
    );
    // What the exemptions are for stays writable, nested ones included.
    for dir in [
        format!("{SKILL}/scripts"),
        format!("{SKILL}/.claude/skills/inner"),
        ".claude/commands".to_owned(),
        ".claude/agents".to_owned(),
    ] {
        s.call("create_directory", json!({"path": dir})).assert_ok();
    }
    for path in [
        format!("{SKILL}/SKILL.md"),
        format!("{SKILL}/scripts/run.sh"),
        ".claude/commands/review.md".to_owned(),
        ".claude/agents/a.md".to_owned(),
        format!("{SKILL}/.claude/skills/inner/SKILL.md"),
    ] {
        let r = s.call("write_file", json!({"path": path, "content": "new\n"}));
        r.assert_ok();
        assert_eq!(env.read_string(&path), "new\n", "{path}");
    }
    // The control: without the built-in protections the same write lands,
    // and git status runs it.
    let open = Server::start(&args![env.root(), "--no-default-protection"]);
    open.call(
        "write_file",
        json!({"path": format!("{SKILL}/.git/config"), "content": config}),
    )
    .assert_ok();
    git(&env.path(SKILL), &["status"]);
    assert!(marker.exists(), "the control fsmonitor did not run");
}

/// The operator's `--allow-path` lifts the protections it names, at and
/// above its path; a protected name deeper beneath it is protected again
/// unless the pattern names that too.
#[test]
fn allow_path_lifts_only_what_it_names() {
    let env = TestEnv::new();
    env.write(".vscode/settings.json", "{}\n");
    env.write(".vscode/sub/.git/config", "[core]\n");
    env.write("scratch.txt", "scratch\n");
    let s = Server::start(&args![env.root(), "--allow-path", ".vscode"]);
    s.call(
        "write_file",
        json!({"path": ".vscode/settings.json", "content": "new\n"}),
    )
    .assert_ok();
    assert_eq!(env.read_string(".vscode/settings.json"), "new\n");
    assert_unwritable(&s, &env, ".vscode/sub/.git/config", "x");
    let all = Server::start(&args![env.root(), "--allow-path", ".vscode/**"]);
    all.call(
        "write_file",
        json!({"path": ".vscode/sub/.git/config", "content": "new\n"}),
    )
    .assert_ok();
}
