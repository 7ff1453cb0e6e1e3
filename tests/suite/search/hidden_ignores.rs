//! Hidden ignore files, and a hidden `.git`, do not steer a search (issue
//! 30 item 5): the walk behaves exactly as on a twin tree where the hidden
//! objects do not exist, for the directories walked and for those above
//! the start, up to the root.
//!
//! The oracle is differential, three ways: the tree with hidden objects
//! (A) and its twin without them (B), both served with the same `--hide`
//! flags, and B again served without them (B0: nothing is hidden, so its
//! replies are what the tree itself says, as `rg` would on it). Every call
//! must give byte-identical replies (text, `structuredContent` and
//! `isError`, the root's path aside) on all three. A against B alone
//! would miss a walk that drops ignore files whenever some rule hides
//! anything (B would drop them too); B against B0 catches that.

use serde_json::{Value, json};

use crate::util::{Server, TestEnv};

/// `tuls::limits::MAX_IGNORE_RULES`: rules in one ignore file that are used.
const MAX_IGNORE_RULES: usize = 10_000;

/// What every tree holds: files that say "needle", each named for the
/// ignore file that would exclude it.
fn common(env: &TestEnv) {
    for dir in [
        "",
        "nogit/",
        "nogit/sub/",
        "repo/",
        "repo/sub/",
        "big/",
        "big/sub/",
    ] {
        for f in ["plain.txt", "g.txt", "i.txt", "x.txt", "deep.txt"] {
            env.write(format!("{dir}{f}"), "needle\n");
        }
    }
    // A visible `.gitignore` outside any visible repository: it counts only
    // if a `.git` is there.
    env.write("nogit/.gitignore", "g.txt\n");
    // A visible repository whose ignore files are hidden.
    env.write("repo/.git/HEAD", "ref: refs/heads/main\n");
    // A visible repository whose `.git/info/exclude` alone is hidden.
    env.write("repo2/.git/HEAD", "ref: refs/heads/main\n");
    env.mkdir("repo2/.git/info");
    env.write("repo2/x.txt", "needle\n");
    env.write("repo2/plain.txt", "needle\n");
    // A visible ignore file above a start reached through a link: it
    // applies as to the link's target (`rg` takes the canonical path's
    // parents), with rules that hide or without.
    env.write("repo2/.gitignore", "g.txt\n");
    env.write("repo2/sub/g.txt", "needle\n");
    env.write("repo2/sub/plain.txt", "needle\n");
    env.symlink("repo2/sub", "l2");
    env.symlink("repo/sub", "lsub");
}

/// What only the tree with hidden objects holds.
fn hidden(env: &TestEnv) {
    // A hidden `.git` (with ignore rules of its own) makes `nogit` a
    // repository, so its `.gitignore` would apply, below and above the start.
    env.write("nogit/.git/HEAD", "ref: refs/heads/main\n");
    env.write("nogit/.git/info/exclude", "x.txt\n");
    // Hidden ignore files of a visible repository, at its top (an ancestor
    // of `repo/sub`) and below it.
    env.write("repo/.gitignore", "g.txt\n");
    env.write("repo/.ignore", "i.txt\n");
    env.write("repo/.git/info/exclude", "x.txt\n");
    env.write("repo/sub/.gitignore", "deep.txt\n");
    env.write("repo2/.git/info/exclude", "x.txt\n");
    // At the root: an ancestor of every start below it.
    env.write(".ignore", "plain.txt\n");
    // Past the rule bound: a visible one would be "not used", with a notice.
    let rules: String = (0..=MAX_IGNORE_RULES).map(|i| format!("r{i}\n")).collect();
    env.write("big/.gitignore", rules);
    env.write("big/.git", "gitdir: elsewhere\n");
}

/// The hide flags: by name at any depth, anchored, and a directory inside
/// `.git`.
const HIDES: &[&str] = &[
    "--hide",
    ".ignore",
    "--hide",
    "/nogit/.git",
    "--hide",
    "repo/.gitignore",
    "--hide",
    "repo/sub/.gitignore",
    "--hide",
    "repo/.git/info",
    "--hide",
    "repo2/.git/info/exclude",
    "--hide",
    "big/.gitignore",
    "--hide",
    "big/.git",
];

fn server(env: &TestEnv, hides: bool) -> Server {
    let mut args: Vec<std::ffi::OsString> = vec![env.root().into()];
    if hides {
        args.extend(HIDES.iter().map(Into::into));
    }
    Server::start(&args)
}

fn calls() -> Vec<(&'static str, Value)> {
    let mut v = Vec::new();
    for p in [
        ".",
        "nogit",
        "nogit/sub",
        "repo",
        "repo/sub",
        "repo2",
        "big",
        "big/sub",
        "l2",
        "lsub",
    ] {
        for extra in [
            json!({}),
            json!({"hidden": true}),
            json!({"noIgnore": true}),
            json!({"outputMode": "files"}),
            json!({"outputMode": "count", "hidden": true}),
        ] {
            let mut args = json!({"path": p, "pattern": "needle"});
            if let (Some(a), Some(e)) = (args.as_object_mut(), extra.as_object()) {
                a.extend(e.clone());
            }
            v.push(("search_file_contents", args));
        }
        v.push(("search_files", json!({"path": p, "pattern": "**/*"})));
        v.push(("list_directory", json!({"path": p})));
        v.push(("list_directory_with_sizes", json!({"path": p})));
        v.push(("directory_tree", json!({"path": p})));
    }
    v
}

/// A reply as compared: error flag, text and structured content, with the
/// root's path replaced.
fn seen(server: &Server, env: &TestEnv, tool: &str, args: &Value) -> String {
    let r = server.call(tool, args.clone());
    let structured = r.structured.map(|s| s.to_string()).unwrap_or_default();
    format!(
        "error={} text={} structured={structured}",
        r.is_error, r.text
    )
    .replace(&env.root_str(), "<ROOT>")
}

#[test]
fn hidden_ignore_files_and_git_do_not_steer_a_search() {
    let (with, twin) = (TestEnv::new(), TestEnv::new());
    common(&with);
    common(&twin);
    hidden(&with);
    let (a, b, b0) = (
        server(&with, true),
        server(&twin, true),
        server(&twin, false),
    );
    let mut diffs = Vec::new();
    for (tool, args) in calls() {
        let ra = seen(&a, &with, tool, &args);
        let rb = seen(&b, &twin, tool, &args);
        let rb0 = seen(&b0, &twin, tool, &args);
        if ra != rb || rb != rb0 {
            diffs.push(format!(
                "{tool} {args}:\n  hidden:          {ra}\n  twin:            {rb}\n  twin, no --hide: {rb0}"
            ));
        }
    }
    assert!(
        diffs.is_empty(),
        "{} differ:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

/// The twin is not vacuous: with nothing hidden, each ignore file of the
/// tree with hidden objects does steer the search, so the test above would
/// see it if the walk read a hidden one.
#[test]
fn the_ignore_files_hidden_above_steer_a_search_when_visible() {
    let env = TestEnv::new();
    common(&env);
    hidden(&env);
    let s = server(&env, false);
    let files = |p: &str| {
        let r = s.call(
            "search_file_contents",
            json!({"path": p, "pattern": "needle", "outputMode": "files"}),
        );
        r.text
    };
    let nogit = files("nogit/sub");
    assert!(
        !nogit.contains("g.txt") && !nogit.contains("x.txt"),
        "{nogit}"
    );
    let repo = files("repo/sub");
    for gone in ["g.txt", "i.txt", "x.txt", "deep.txt", "plain.txt"] {
        assert!(!repo.contains(gone), "{gone}: {repo}");
    }
    let repo2 = files("repo2");
    assert!(!repo2.contains("x.txt"), "{repo2}");
    let big = s.call(
        "search_file_contents",
        json!({"path": "big", "pattern": "needle"}),
    );
    assert!(big.text.contains("were not used"), "{}", big.text);
}
