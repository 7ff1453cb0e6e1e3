//! Read-side escapes through symbolic links: to an outside file or
//! directory, in a middle component, chained, absolute (even pointing
//! inside), dangling (no existence oracle), into another root, and loops.

use super::*;

#[test]
fn symlink_to_outside_file() {
    let (env, forbidden) = setup();
    let base = base_str(&env);
    env.symlink("../outside/canary.txt", "link_rel");
    env.symlink("../outside/zz-outside-secret-name.txt", "link_secret");
    env.symlink("../../outside/canary.txt", "sub/link_deep");
    env.symlink(format!("{base}/outside/canary.txt"), "link_abs");
    env.symlink(
        format!("{}{base}/outside/canary.txt", "../".repeat(20)),
        "link_many_dotdots",
    );
    env.symlink("./../outside/./odir/../canary.txt", "link_winding");
    let root = env.root_str();
    let denied: Vec<String> = [
        "link_rel",
        "link_secret",
        "sub/link_deep",
        "link_abs",
        "link_many_dotdots",
        "link_winding",
        "./link_rel",
        "sub/../link_secret",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([format!("{root}/link_rel"), format!("{root}/sub/link_deep")])
    .collect();
    escape_class(
        &env,
        &forbidden,
        &[],
        &Options::new(),
        &denied,
        &[
            "link_rel",
            "link_secret",
            "sub/link_deep",
            "link_abs",
            "link_many_dotdots",
            "link_winding",
        ],
    );
}

#[test]
fn symlink_to_outside_dir() {
    let (env, forbidden) = setup();
    let base = base_str(&env);
    env.symlink("../outside/odir", "odir_rel");
    env.symlink("../../outside", "sub/out_deep");
    env.symlink(format!("{base}/outside/odir"), "odir_abs");
    env.symlink("../outside/odir/", "odir_slash");
    let denied: Vec<String> = [
        "odir_rel",
        "odir_rel/",
        "odir_rel/.",
        "odir_rel/canary.txt",
        "odir_rel/x/..",
        "sub/out_deep",
        "sub/out_deep/odir",
        "sub/out_deep/canary.txt",
        "odir_abs",
        "odir_abs/canary.txt",
        "odir_slash",
        "odir_slash/canary.txt",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    escape_class(
        &env,
        &forbidden,
        &[],
        &Options::new(),
        &denied,
        &["odir_rel", "sub/out_deep", "odir_abs", "odir_slash"],
    );
}

#[test]
fn outside_symlink_in_middle_component() {
    let (env, forbidden) = setup();
    env.symlink("../../outside", "a/b");
    env.symlink("../sub", "a/inlink");
    let root = env.root_str();
    let denied: Vec<String> = [
        "a/b/canary.txt",
        "a/b/odir",
        "a/b/odir/canary.txt",
        "a/b/odir/.",
        "a/b/../b/canary.txt",
        // Lexically inside, but `..` after the link is resolved physically.
        "a/b/../root/hello.txt",
        "a/b/../../root/hello.txt",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([format!("{root}/a/b/canary.txt"), format!("{root}/a/b/odir")])
    .collect();
    escape_class(&env, &forbidden, &[], &Options::new(), &denied, &["a/b"]);
    // An in-root link in the middle is followed.
    let server = Server::start(&args![env.root()]);
    assert_eq!(
        server
            .call("read_text_file", json!({"path": "a/inlink/file.txt"}))
            .text,
        "SUB-FILE\n"
    );
}

#[test]
fn symlink_relative_chained_out() {
    let (env, forbidden) = setup();
    // c1 -> c2 -> sub/c3 -> ../c4 -> ../outside: each hop looks harmless.
    env.symlink("c2", "c1");
    env.symlink("sub/c3", "c2");
    env.symlink("../c4", "sub/c3");
    env.symlink("../outside", "c4");
    // Out and back in: still refused (the walk left the root).
    env.symlink("../outside/../root/hello.txt", "out_and_back");
    env.symlink("sub/../../outside/canary.txt", "via_sub");
    // A chain that stays inside is followed.
    env.symlink("i2", "i1");
    env.symlink("sub/i3", "i2");
    env.symlink("../hello.txt", "sub/i3");
    let denied: Vec<String> = [
        "c1",
        "c1/canary.txt",
        "c1/odir",
        "c2/canary.txt",
        "sub/c3/odir/canary.txt",
        "c4",
        "out_and_back",
        "via_sub",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    escape_class(
        &env,
        &forbidden,
        &[],
        &Options::new(),
        &denied,
        &["c1", "c2", "sub/c3", "c4", "out_and_back", "via_sub"],
    );
    each_mode(&env, &[], &Options::new(), |server, mode| {
        let r = server.call("read_text_file", json!({"path": "i1"}));
        assert_eq!(r.text, HELLO, "[{mode}] in-root chain");
        let found = server.call("search_files", json!({"path": ".", "pattern": "i*"}));
        assert_eq!(found.text, "./i1\n./i2", "[{mode}]");
    });
}

#[test]
fn absolute_symlink_inside_refused() {
    let (env, forbidden) = setup();
    let root = env.root_str();
    // Absolute links are refused even when they point inside (cap-std):
    // fail-closed, and the same message as an escape.
    env.symlink(format!("{root}/hello.txt"), "abs_file");
    env.symlink(format!("{root}/sub"), "abs_dir");
    env.symlink(&root, "sub/abs_root");
    env.symlink(format!("{}/outside/canary.txt", base_str(&env)), "abs_out");
    let denied: Vec<String> = [
        "abs_file",
        "abs_dir",
        "abs_dir/file.txt",
        "sub/abs_root",
        "sub/abs_root/hello.txt",
        "abs_out",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    escape_class(
        &env,
        &forbidden,
        &[],
        &Options::new(),
        &denied,
        &["abs_file", "abs_dir", "sub/abs_root", "abs_out"],
    );
    // The targets themselves are readable by their own names.
    let server = Server::start(&args![env.root()]);
    assert_eq!(
        server
            .call("read_text_file", json!({"path": "sub/file.txt"}))
            .text,
        "SUB-FILE\n"
    );
}

/// A link to an outside file, to an outside directory and to nothing at all
/// get the same reply from every tool: no existence oracle.
#[test]
fn dangling_symlink_out_same_reply_as_existing() {
    let (env, forbidden) = setup();
    let base = base_str(&env);
    let links = [
        ("to_file", "../outside/canary.txt".to_owned()),
        (
            "to_secret",
            "../outside/zz-outside-secret-name.txt".to_owned(),
        ),
        ("to_dir", "../outside/odir".to_owned()),
        ("to_missing", "../outside/nope".to_owned()),
        ("to_missing_dir", "../outside/nope/deeper/".to_owned()),
        ("to_missing_parent", "../no-such-sibling/x".to_owned()),
        ("to_abs_missing", format!("{base}/outside/nope")),
        ("to_abs_file", format!("{base}/outside/canary.txt")),
    ];
    for (name, target) in &links {
        env.symlink(target, name);
    }
    let before = env.snapshot_outside();
    each_mode(&env, &[], &Options::new(), |server, mode| {
        // For every call shape, the reply with the link's name blanked out
        // is the same for every link.
        let mut shapes: Vec<Vec<String>> = Vec::new();
        for (name, _) in &links {
            let replies = probe(server, name, &forbidden);
            shapes.push(
                replies
                    .iter()
                    .map(|(tool, r)| format!("{tool}: {}", r.raw.to_string().replace(name, "<L>")))
                    .collect(),
            );
            assert_denied(server, name, &forbidden, mode);
            // Paths beneath the link too.
            let beneath = format!("{name}/x");
            assert_denied(server, &beneath, &forbidden, mode);
        }
        for (i, shape) in shapes.iter().enumerate().skip(1) {
            assert_eq!(
                shape, &shapes[0],
                "[{mode}] {} and {} get different replies",
                links[i].0, links[0].0
            );
        }
        assert_root_views(
            server,
            &env,
            &links.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            &forbidden,
        );
        let found = server.call("search_files", json!({"path": ".", "pattern": "to_*"}));
        assert_eq!(found.text, "No matches found", "[{mode}]");
        let sizes = server.call("list_directory_with_sizes", json!({"path": "."}));
        for (name, _) in &links {
            assert!(
                sizes.text.contains(&format!("[LINK] {name:<30} \n")),
                "{}",
                sizes.text
            );
        }
    });
    before.assert_same(&env.snapshot_outside(), "outside");
}

#[test]
fn cross_root_symlink() {
    let (env, forbidden) = setup();
    let base = base_str(&env);
    let root2 = env.base().join("root2");
    std::fs::create_dir(&root2).expect("root2");
    std::fs::write(root2.join("secret2.txt"), ROOT2_CANARY).expect("secret2");
    std::fs::write(root2.join("zz-root2-only-name.txt"), ROOT2_CANARY).expect("name");
    std::os::unix::fs::symlink("../root/hello.txt", root2.join("to1")).expect("to1");
    env.symlink("../root2/secret2.txt", "to2");
    env.symlink("../root2", "to2dir");
    env.symlink(format!("{base}/root2/secret2.txt"), "to2abs");
    env.symlink("../../root2", "sub/to2deep");
    let extra: Vec<OsString> = vec![root2.clone().into_os_string()];
    let denied: Vec<String> = [
        "to2",
        "to2dir",
        "to2dir/secret2.txt",
        "to2abs",
        "sub/to2deep",
        "sub/to2deep/secret2.txt",
        "../root2/secret2.txt",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([format!("{base}/root2/to1")])
    .collect();
    escape_class(
        &env,
        &forbidden,
        &extra,
        &Options::new(),
        &denied,
        &["to2", "to2dir", "to2abs", "sub/to2deep"],
    );
    // Positive control: the second root itself is readable by its own path.
    each_mode(&env, &extra, &Options::new(), |server, mode| {
        let r = server.call(
            "read_text_file",
            json!({"path": format!("{base}/root2/secret2.txt")}),
        );
        assert_eq!(r.text, ROOT2_CANARY, "[{mode}]");
    });
}

#[test]
fn symlink_loop() {
    let (env, forbidden) = setup();
    env.symlink("loop", "loop");
    env.symlink("b", "a_loop");
    env.symlink("a_loop", "b");
    env.symlink(".", "selfdir");
    env.symlink("..", "up");
    env.symlink("../outside/loop_out", "loop_out");
    std::os::unix::fs::symlink("../root/loop_out", env.outside().join("loop_out"))
        .expect("outside loop link");
    // A chain longer than the kernel's 40-link limit, ending at hello.txt.
    env.symlink("hello.txt", "chain50");
    for i in 0..50 {
        env.symlink(format!("chain{}", i + 1), format!("chain{i}"));
    }
    let before = env.snapshot_outside();
    let opts = Options::new().timeout(Duration::from_secs(10));
    each_mode(&env, &[], &opts, |server, mode| {
        let started = Instant::now();
        for p in ["loop", "a_loop", "b", "loop/x", "chain0"] {
            for (tool, reply) in probe(server, p, &forbidden) {
                if tool == "read_multiple_files" {
                    assert!(
                        reply.text.contains("Error - ELOOP"),
                        "[{mode}] {p}: {}",
                        reply.text
                    );
                    continue;
                }
                assert!(reply.is_error, "[{mode}] {tool} {p}: {}", reply.raw);
                let op = match tool {
                    "read_text_file" | "read_media_file" => "open",
                    "get_file_info" => "stat",
                    _ => "scandir",
                };
                assert_eq!(
                    reply.text,
                    format!("ELOOP: too many symbolic links encountered, {op} '{p}'"),
                    "[{mode}] {tool} {p}"
                );
            }
        }
        // The loop that leaves the root is an escape.
        assert_denied(server, "loop_out", &forbidden, mode);
        assert_denied(server, "up", &forbidden, mode);
        assert_denied(server, "selfdir/selfdir/up/outside", &forbidden, mode);
        // A link to `.` is an ordinary in-root directory link.
        assert_eq!(
            server
                .call(
                    "read_text_file",
                    json!({"path": "selfdir/selfdir/selfdir/hello.txt"})
                )
                .text,
            HELLO
        );
        assert_eq!(
            server
                .call("read_text_file", json!({"path": "chain45"}))
                .text,
            HELLO
        );
        // Walks terminate and never go through a link.
        let tree = server.call("directory_tree", json!({"path": "."}));
        tree.assert_ok();
        assert!(
            !tree
                .text
                .contains("\"name\": \"selfdir\",\n    \"type\": \"symlink\",\n    \"children\"")
        );
        let found = server.call(
            "search_files",
            json!({"path": ".", "pattern": "**/hello.txt"}),
        );
        assert_eq!(found.text, "./hello.txt", "[{mode}]");
        let found = server.call(
            "search_files",
            json!({"path": ".", "pattern": "**/selfdir"}),
        );
        assert_eq!(found.text, "./selfdir", "[{mode}]");
        assert_root_views(server, &env, &["up", "loop_out"], &forbidden);
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "[{mode}] loops took {:?}",
            started.elapsed()
        );
    });
    before.assert_same(&env.snapshot_outside(), "outside");
}
