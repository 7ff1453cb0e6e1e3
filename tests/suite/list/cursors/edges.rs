//! Cursor paging at its edges: a cursor works only where it was given,
//! pages never show what the rules hide, entries longer than a page, and a
//! directory swapped for a symlink between two pages.

use serde_json::json;

use super::{CANARY, cursor_of, find, layout, pages, split, tree_paths};
use crate::util::{Server, TestEnv, assert_within};

#[test]
fn a_cursor_works_only_where_it_was_given() {
    let env = TestEnv::new();
    layout(&env);
    let server = Server::start(&args![env.root(), "--max-reply-chars", "2000"]);
    let t = env.path_str("t");
    let sub = env.path_str("t/a0");
    let first = server.call("search_files", json!({"path": t, "pattern": "**/*.rs"}));
    let cursor = cursor_of(&first.assert_ok().text).expect("a cursor");
    let refused = "Invalid cursor";
    for (tool, args) in [
        // Another path (below, or above) with the same cursor.
        (
            "search_files",
            json!({"path": sub, "pattern": "**/*.rs", "cursor": cursor}),
        ),
        (
            "search_files",
            json!({"path": env.root_str(), "pattern": "**/*.rs", "cursor": cursor}),
        ),
        // Other arguments, another tool.
        (
            "search_files",
            json!({"path": t, "pattern": "**/*", "cursor": cursor}),
        ),
        ("directory_tree", json!({"path": t, "cursor": cursor})),
        (
            "search_file_contents",
            json!({"path": t, "pattern": "x", "cursor": cursor}),
        ),
        // Tampered, junk, too long, or with an offset.
        (
            "search_files",
            json!({"path": t, "pattern": "**/*.rs", "cursor": format!("{cursor}A")}),
        ),
        (
            "search_files",
            json!({"path": t, "pattern": "**/*.rs", "cursor": "../../etc"}),
        ),
        (
            "search_files",
            json!({"path": t, "pattern": "**/*.rs", "cursor": "A".repeat(5000)}),
        ),
        (
            "search_files",
            json!({"path": t, "pattern": "**/*.rs", "cursor": cursor, "offset": 3}),
        ),
    ] {
        let r = server.call(tool, args.clone());
        r.assert_error_contains(refused);
        assert!(!r.text.contains(CANARY), "{}", r.text);
    }
    // Flipping any one character of it is refused.
    for i in 0..cursor.len() {
        let mut bytes = cursor.clone().into_bytes();
        bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
        let forged = String::from_utf8(bytes).expect("ASCII");
        server
            .call(
                "search_files",
                json!({"path": t, "pattern": "**/*.rs", "cursor": forged}),
            )
            .assert_error_contains(refused);
    }
    // The same call works; another server process refuses it.
    server
        .call(
            "search_files",
            json!({"path": t, "pattern": "**/*.rs", "cursor": cursor}),
        )
        .assert_ok();
    let other = Server::start(&args![env.root(), "--max-reply-chars", "2000"]);
    other
        .call(
            "search_files",
            json!({"path": t, "pattern": "**/*.rs", "cursor": cursor}),
        )
        .assert_error_contains(refused);
    // offset still pages as before, with counts.
    let r = server.call(
        "search_files",
        json!({"path": t, "pattern": "**/*.rs", "offset": 0}),
    );
    assert!(r.assert_ok().text.contains("offset: "), "{}", r.text);
}

#[test]
fn pages_by_cursor_never_show_what_the_rules_hide() {
    let env = TestEnv::new();
    layout(&env);
    for a in 0..5 {
        env.write(format!("t/a{a}/secrets/s.txt"), CANARY);
        env.write(format!("t/a{a}/b0/c0/.env"), CANARY);
    }
    let server = Server::start(&args![
        env.root(),
        "--max-reply-chars",
        "2000",
        "--hide",
        "secrets",
        "--hide",
        ".env"
    ]);
    let t = env.path_str("t");
    for (tool, args) in [
        ("directory_tree", json!({"path": t})),
        ("search_files", json!({"path": t, "pattern": "**"})),
        (
            "search_file_contents",
            json!({"path": t, "pattern": "CANARY|hello", "hidden": true, "noIgnore": true, "maxResults": 50}),
        ),
    ] {
        for body in pages(&server, tool, args, 2000) {
            assert!(
                !body.contains("secrets") && !body.contains(".env"),
                "{body}"
            );
        }
    }
}

#[test]
fn entries_longer_than_a_page_are_skipped_or_said_too_deep() {
    let env = TestEnv::new();
    // directory_tree: past a few levels, an entry inside its ancestors no
    // longer fits a small page; the cursor skips it, and paging ends.
    env.write("t/1/2/3/4/5/6/7/f", "");
    env.write("t/z", "");
    let budget = 1024;
    let server = Server::start(&args![env.root(), "--max-reply-chars", budget.to_string()]);
    let t = env.path_str("t");
    let mut args = json!({"path": t});
    let (mut order, mut skips) = (Vec::new(), 0);
    for _ in 0..50 {
        let r = server.call("directory_tree", args.clone());
        let text = r.assert_ok().text.clone();
        assert_within(&text, budget);
        let (body, notice) = split(&text);
        if !body.is_empty() {
            let mut paths = Vec::new();
            tree_paths(&serde_json::from_str(body).expect("JSON"), "", &mut paths);
            order.extend(paths.into_iter().filter(|(_, c)| !c).map(|(p, _)| p));
        }
        let Some(notice) = notice else { break };
        skips += usize::from(notice.contains("longer than the limit on its own; skip it"));
        args["cursor"] = json!(cursor_of(notice).expect("cursor"));
    }
    assert!(skips > 0, "nothing was too long");
    assert_eq!(order.last().map(String::as_str), Some("z"), "paging ended");
    let all = find(&env.path("t"), &[]);
    assert_eq!(order.len() + skips, all.len());
    assert!(order.iter().all(|p| all.contains(p)), "{order:?}");

    // search_files: a match whose path below `path` is longer than a
    // cursor can carry: the notice says so and asks for a deeper path.
    let long = format!("{}/{}", "d".repeat(200), "e".repeat(200));
    env.write(format!("u/{long}.rs"), "");
    env.write("u/a.rs", "");
    let u = env.path_str("u");
    let r = server.call("search_files", json!({"path": u, "pattern": "**/*.rs"}));
    let (body, notice) = split(&r.assert_ok().text);
    assert_eq!(body, format!("{u}/a.rs"));
    assert!(
        notice.expect("cut").contains(
            "lies too deep below path for a cursor to name it; call again with a deeper path"
        ),
        "{notice:?}"
    );
}

#[test]
fn a_directory_swapped_for_a_symlink_between_pages_is_not_entered() {
    // A cursor whose position lies inside t/a; then t/a becomes a symlink
    // to a directory outside the root. Resuming re-enters the position one
    // name at a time with O_NOFOLLOW: the link is not followed, and the walk
    // goes on after it.
    let env = TestEnv::new();
    for i in 0..300 {
        env.write(format!("t/a/file-{i:03}.rs"), "hello\n");
    }
    env.write("t/b/after.rs", "hello\n");
    let secret = env.outside().join("secret-dir");
    std::fs::create_dir_all(&secret).expect("mkdir");
    for i in 0..300 {
        std::fs::write(
            secret.join(format!("file-{i:03}.rs")),
            format!("{CANARY}\n"),
        )
        .expect("w");
    }
    std::fs::write(secret.join("zz-OUTSIDE.rs"), format!("{CANARY}\n")).expect("w");
    // The first wall alone: Landlock would refuse the outside directory too.
    let server = Server::start(&args![
        env.root(),
        "--max-reply-chars",
        "2000",
        "--no-landlock"
    ]);
    let t = env.path_str("t");
    let calls = [
        ("directory_tree", json!({"path": t})),
        ("search_files", json!({"path": t, "pattern": "**/*.rs"})),
        (
            "search_file_contents",
            json!({"path": t, "pattern": "hello|CANARY", "maxResults": 20}),
        ),
    ];
    let mut cursors = Vec::new();
    for (tool, args) in &calls {
        let r = server.call(tool, args.clone());
        let text = &r.assert_ok().text;
        assert!(text.contains("file-0"), "{text}");
        cursors.push(cursor_of(text).expect("cut inside t/a"));
    }
    std::fs::rename(env.path("t/a"), env.path("t-a-moved")).expect("move t/a away");
    std::os::unix::fs::symlink(&secret, env.path("t/a")).expect("symlink");
    for ((tool, args), cursor) in calls.iter().zip(cursors) {
        let mut args = args.clone();
        args["cursor"] = json!(cursor);
        let text = pages(&server, tool, args, 2000).join("\n");
        assert!(
            !text.contains(CANARY) && !text.contains("OUTSIDE"),
            "{tool}: {text}"
        );
        assert!(
            !text.contains("file-2"),
            "{tool} went on inside the link: {text}"
        );
        if *tool != "directory_tree" {
            assert!(text.contains("b/after.rs"), "{tool}: {text}");
        } else {
            assert!(text.contains("after.rs"), "{tool}: {text}");
        }
    }
}
