//! `search_files` against the reference: globs, excludes, no matches, and
//! symlinks matched by name but never descended.

use serde_json::json;

use crate::util::{CANARY_CONTENT, Server, TestEnv, assert_err, assert_text};

use crate::suite::list::ref_fixture;

#[test]
fn search_files_reference_cases() {
    let (env, _sock) = ref_fixture();
    let server = Server::start(&args![env.root()]);
    let root = env.root().display().to_string();
    let search = |pattern: &str, excludes: &[&str]| {
        server.call(
            "search_files",
            json!({"path": root, "pattern": pattern, "excludePatterns": excludes}),
        )
    };
    let abs = |names: &[&str]| {
        names
            .iter()
            .map(|n| format!("{root}/{n}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_text(
        &search("*.txt", &[]),
        &abs(&[
            "crlf.txt",
            "dup.txt",
            "empty.txt",
            "hello.txt",
            "noeol.txt",
            "utf8.txt",
            "with space.txt",
        ]),
    );
    assert_text(
        &search("**/*.rs", &[]),
        &abs(&["sub/lib.rs", "sub/nested/deep/main.rs"]),
    );
    // A glob, not a substring or basename match; case-sensitive.
    assert_text(&search("main.rs", &[]), "No matches found");
    assert_text(&search("*.TXT", &[]), "No matches found");
    // Symlinks: reported only when they resolve inside the root.
    assert_text(&search("link*", &[]), &abs(&["link_dir", "link_in"]));
    // Literal excludes: `node_modules/**` keeps the directory itself.
    assert_text(
        &search("**/*", &["node_modules/**", ".git", "sub"]),
        &abs(&[
            ".env",
            "UPPER.PNG",
            "bad.bin",
            "crlf.txt",
            "doc.pdf",
            "dup.txt",
            "empty.txt",
            "emptydir",
            "hello.txt",
            "img.png",
            "link_dir",
            "link_in",
            "node_modules",
            "noeol.txt",
            "pipe",
            "py.py",
            "snd.mp3",
            "sock",
            "utf8.txt",
            "with space.txt",
        ]),
    );
}

#[test]
fn search_files_symlinks_are_matched_by_name_but_never_descended() {
    let (env, _sock) = ref_fixture();
    // In-root links anywhere, pointing up or sideways: reported. Outside
    // and dangling: skipped alike.
    env.symlink("../hello.txt", "sub/up_file");
    env.symlink("../../sub", "sub/nested/up_dir");
    env.symlink("../../outside/secret.txt", "sub/out_file");
    env.symlink("../nowhere", "sub/dangling_link");
    env.symlink("up_file", "sub/chain_in");
    env.symlink("out_file", "sub/chain_out");
    let server = Server::start(&args![env.root()]);
    let root = env.root().display().to_string();
    let search = |path: &str, pattern: &str| {
        server.call("search_files", json!({"path": path, "pattern": pattern}))
    };
    assert_text(
        &search(&root, "sub/**"),
        &[
            "sub/chain_in",
            "sub/lib.rs",
            "sub/nested",
            "sub/nested/a.txt",
            "sub/nested/deep",
            "sub/nested/deep/main.rs",
            "sub/nested/up_dir",
            "sub/up_file",
        ]
        .iter()
        .map(|n| format!("{root}/{n}"))
        .collect::<Vec<_>>()
        .join("\n"),
    );
    // Searching under `sub`: a link that climbs to `sub`'s parent is still
    // inside the root.
    assert_text(&search("sub", "up_*"), "sub/up_file");
    // Never descended: lib.rs is found once, not again under link_dir or up_dir.
    assert_text(&search(&root, "**/lib.rs"), &format!("{root}/sub/lib.rs"));
    // The search root itself may be an in-root symlinked directory; results
    // are spelled under the path as given.
    assert_text(&search("link_dir", "*.rs"), "link_dir/lib.rs");
    assert_text(&search(&root, "**/o.txt"), "No matches found");
    assert_text(&search(&root, "**/*out*"), "No matches found");
}

#[test]
fn search_files_excludes_patterns_and_errors() {
    let env = TestEnv::new();
    env.write("node_modules/a.js", "");
    env.write("pkg/node_modules/b.js", "");
    env.write("pkg/src/c.js", "");
    env.write("target/debug/d.rs", "");
    env.write("src/main.rs", "");
    env.write(".hidden.js", "");
    let server = Server::start(&args![env.root()]);
    let search = |pattern: &str, excludes: &[&str]| {
        server.call(
            "search_files",
            json!({"path": ".", "pattern": pattern, "excludePatterns": excludes}),
        )
    };
    let abs = |names: &[&str]| {
        names
            .iter()
            .map(|n| format!("./{n}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    // Relative search path: results are spelled under it (issue 15), so no
    // root path appears in the reply.
    assert_text(
        &search("**/*.js", &[]),
        &abs(&[
            ".hidden.js",
            "node_modules/a.js",
            "pkg/node_modules/b.js",
            "pkg/src/c.js",
        ]),
    );
    // A bare exclude matches only that exact relative path (no `**/`).
    assert_text(
        &search("**/*.js", &["node_modules"]),
        &abs(&[".hidden.js", "pkg/node_modules/b.js", "pkg/src/c.js"]),
    );
    assert_text(
        &search("**/*.js", &["**/node_modules", ".*"]),
        &abs(&["pkg/src/c.js"]),
    );
    // The seed example: `**/*.rs` without `target/**`.
    assert_text(&search("**/*.rs", &["target/**"]), &abs(&["src/main.rs"]));
    // `**` matches directories too; an excluded directory is not descended.
    assert_text(
        &search("**", &["node_modules", "pkg", "target", ".hidden.js"]),
        &abs(&["src", "src/main.rs"]),
    );
    assert_text(&search("", &[]), "No matches found");
    assert_text(&search("{src,pkg}", &[]), &abs(&["pkg", "src"]));
    assert_text(&search("../**", &[]), "No matches found");
    server
        .call("search_files", json!({"path": ".", "pattern": "[z-a"}))
        .assert_error_contains("glob");
    server
        .call("search_files", json!({"path": "."}))
        .assert_error_contains("missing field `pattern`");
    assert_err(
        &server.call("search_files", json!({"path": "nope", "pattern": "*"})),
        "ENOENT: no such file or directory, scandir 'nope'",
    );
    assert_err(
        &server.call(
            "search_files",
            json!({"path": ".hidden.js", "pattern": "*"}),
        ),
        "ENOTDIR: not a directory, scandir '.hidden.js'",
    );
    assert!(!search("**", &[]).text.contains(CANARY_CONTENT));
}
