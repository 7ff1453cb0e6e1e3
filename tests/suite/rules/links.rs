//! Path rules against links: a symlink swapped in while the client works
//! never reaches a hidden or read-only path, and a hard link made outside
//! tuls is another path (the documented limit).

use serde_json::json;

use crate::util::{Server, TestEnv};

use super::cases::CANARY;

/// The swap race against path rules: a thread swaps the directory `d` with
/// a symlink to the hidden `secret` (and `w` with one to the read-only
/// `.git/hooks`) for 20 s, while the client reads, lists, searches and
/// writes through them. No reply may carry a hidden byte or name, and no
/// hook may be created. Run with and without Landlock.
fn swap_race(extra: &[&str]) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    let env = TestEnv::new();
    env.write("d/f.txt", "public\n");
    env.write("secret/f.txt", CANARY);
    env.write("secret/only-hidden-name.txt", CANARY);
    env.write("w/x", "w\n");
    env.mkdir(".git/hooks");
    let mut a = args![env.root(), "--hide", "secret"];
    a.extend(extra.iter().map(|s| std::ffi::OsString::from(*s)));
    let server = Server::start(&a);
    let stop = Arc::new(AtomicBool::new(false));
    let (root, stop2) = (env.root(), stop.clone());
    let racer = std::thread::spawn(move || {
        let mut swaps = 0u64;
        while !stop2.load(Ordering::Relaxed) {
            for (name, target) in [("d", "secret"), ("w", ".git/hooks")] {
                let p = root.join(name);
                let tmp = root.join(format!("{name}.tmp"));
                if std::fs::rename(&p, &tmp).is_ok() {
                    let _ = std::os::unix::fs::symlink(target, &p);
                    std::thread::yield_now();
                    let _ = std::fs::remove_file(&p);
                    let _ = std::fs::rename(&tmp, &p);
                }
            }
            swaps += 1;
        }
        swaps
    });
    let until = Instant::now() + Duration::from_secs(20);
    let mut calls = 0u64;
    let mut leaks = Vec::new();
    let d = env.path_str("d");
    while Instant::now() < until {
        for (tool, args) in [
            ("read_text_file", json!({"path": format!("{d}/f.txt")})),
            (
                "read_multiple_files",
                json!({"paths": [format!("{d}/f.txt"), format!("{d}/only-hidden-name.txt")]}),
            ),
            ("list_directory", json!({"path": d})),
            ("list_directory_with_sizes", json!({"path": d})),
            ("directory_tree", json!({"path": d})),
            ("search_files", json!({"path": d, "pattern": "**/*"})),
            (
                "search_file_contents",
                json!({"path": d, "pattern": "CANARY"}),
            ),
            (
                "get_file_info",
                json!({"path": format!("{d}/only-hidden-name.txt")}),
            ),
            (
                "write_file",
                json!({"path": env.path_str("w/pre-commit"), "content": "#!/bin/sh\n"}),
            ),
        ] {
            let r = server.call(tool, args);
            calls += 1;
            if r.text.contains(CANARY)
                || r.text.contains("only-hidden-name.txt\n")
                || r.text.contains("[FILE] only-hidden")
            {
                leaks.push(format!("{tool}: {}", r.text));
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = racer.join().expect("racer");
    eprintln!(
        "rules swap race: {calls} calls, {swaps} swaps, {} leaks",
        leaks.len()
    );
    assert!(swaps > 100 && calls > 100, "{swaps} swaps, {calls} calls");
    assert!(leaks.is_empty(), "{}", leaks.join("\n"));
    assert!(
        !env.path(".git/hooks/pre-commit").exists(),
        "a hook was written through the swapped link"
    );
}

#[test]
#[ignore = "slow: a 20 s race (CI runs it with --include-ignored)"]
fn a_swapped_symlink_never_reaches_hidden_or_read_only_paths() {
    swap_race(&[]);
}

#[test]
#[ignore = "slow: a 20 s race (CI runs it with --include-ignored)"]
fn a_swapped_symlink_never_reaches_hidden_or_read_only_paths_without_landlock() {
    swap_race(&["--no-landlock"]);
}

/// The documented limit (SECURITY.md, docs/path-rules.md): a hard link made
/// outside tuls is another path to the same file, and a path rule cannot
/// see it. tuls itself makes none: the hidden path stays missing, and no
/// tool can create a link to it.
#[test]
fn a_hard_link_made_outside_tuls_is_another_path() {
    let env = TestEnv::new();
    env.write(".env", format!("TOKEN={CANARY}\n"));
    std::fs::hard_link(env.path(".env"), env.path("notes.txt")).expect("link");
    let s = Server::start(&args![env.root(), "--hide", ".env"]);
    let hidden = s.call("read_text_file", json!({"path": env.path_str(".env")}));
    assert!(
        hidden.is_error && !hidden.text.contains(CANARY),
        "{}",
        hidden.text
    );
    let linked = s.call("read_text_file", json!({"path": env.path_str("notes.txt")}));
    linked.assert_ok();
    assert!(linked.text.contains(CANARY), "{}", linked.text);
    // Copies and moves of the hidden file are refused like a missing one.
    for (tool, dest) in [("copy_file", "c.txt"), ("move_file", "m.txt")] {
        let r = s.call(
            tool,
            json!({"source": env.path_str(".env"), "destination": env.path_str(dest)}),
        );
        assert!(
            r.is_error && r.text.starts_with("ENOENT"),
            "{tool}: {}",
            r.text
        );
        assert!(!env.path(dest).exists(), "{tool}");
    }
}
