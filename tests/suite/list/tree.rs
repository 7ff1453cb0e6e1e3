//! `directory_tree` against the reference's output: its JSON layout and key
//! order, both exclude semantics, symlinks (never descended), special files
//! and errors.

use serde_json::json;

use crate::util::{Server, THROUGH_LINK, TestEnv, assert_err, assert_text};

use super::ref_fixture;

/// A tree node, for building expected `directory_tree` output.
enum N {
    F(&'static str),
    L(&'static str),
    D(&'static str, Vec<N>),
}

/// `JSON.stringify(nodes, null, 2)` with the reference's key order.
fn render(nodes: &[N]) -> String {
    fn arr(nodes: &[N], indent: usize) -> String {
        if nodes.is_empty() {
            return "[]".to_owned();
        }
        let inner: Vec<String> = nodes
            .iter()
            .map(|n| format!("{}{}", " ".repeat(indent + 2), obj(n, indent + 2)))
            .collect();
        format!("[\n{}\n{}]", inner.join(",\n"), " ".repeat(indent))
    }
    fn obj(n: &N, indent: usize) -> String {
        let pad = " ".repeat(indent + 2);
        let (name, kind) = match n {
            N::F(name) => (name, "file"),
            N::L(name) => (name, "symlink"),
            N::D(name, _) => (name, "directory"),
        };
        let name = serde_json::to_string(name).expect("name");
        let mut s = format!("{{\n{pad}\"name\": {name},\n{pad}\"type\": \"{kind}\"");
        if let N::D(_, children) = n {
            s.push_str(&format!(
                ",\n{pad}\"children\": {}",
                arr(children, indent + 2)
            ));
        }
        s.push_str(&format!("\n{}}}", " ".repeat(indent)));
        s
    }
    arr(nodes, 0)
}

fn sub_tree() -> Vec<N> {
    vec![
        N::F("lib.rs"),
        N::D(
            "nested",
            vec![N::F("a.txt"), N::D("deep", vec![N::F("main.rs")])],
        ),
    ]
}

#[test]
fn directory_tree_reference_cases() {
    let (env, _sock) = ref_fixture();
    let server = Server::start(&args![env.root()]);
    // tree.sub, copied from reference-probe-output.jsonl: pins the format.
    let reference = "[\n  {\n    \"name\": \"lib.rs\",\n    \"type\": \"file\"\n  },\n  {\n    \"name\": \"nested\",\n    \"type\": \"directory\",\n    \"children\": [\n      {\n        \"name\": \"a.txt\",\n        \"type\": \"file\"\n      },\n      {\n        \"name\": \"deep\",\n        \"type\": \"directory\",\n        \"children\": [\n          {\n            \"name\": \"main.rs\",\n            \"type\": \"file\"\n          }\n        ]\n      }\n    ]\n  }\n]";
    assert_eq!(render(&sub_tree()), reference, "test model");
    let tree = |path: &str, excludes: &[&str]| {
        server.call(
            "directory_tree",
            json!({"path": path, "excludePatterns": excludes}),
        )
    };
    let sub = env.path_str("sub");
    assert_text(&tree(&sub, &[]), reference);
    assert_text(
        &server.call("directory_tree", json!({"path": "sub"})),
        reference,
    );
    // tree.exclude_bare / exclude_glob / exclude_children.
    assert_text(
        &tree(&sub, &["a.txt"]),
        &render(&[
            N::F("lib.rs"),
            N::D("nested", vec![N::D("deep", vec![N::F("main.rs")])]),
        ]),
    );
    assert_text(
        &tree(&sub, &["*.rs"]),
        &render(&[N::D(
            "nested",
            vec![N::F("a.txt"), N::D("deep", vec![N::F("main.rs")])],
        )]),
    );
    assert_text(
        &tree(&sub, &["nested/*"]),
        &render(&[N::F("lib.rs"), N::D("nested", vec![])]),
    );
}

/// directory_tree excludes (reference-server.md §3.9): a pattern with `*`
/// is a glob on the path relative to the tree's top; one without `*` also
/// matches as `**/p` and `**/p/**`.
#[test]
fn directory_tree_exclude_semantics() {
    let env = TestEnv::new();
    env.write("top.rs", "");
    env.write(".hidden/h.rs", "");
    env.write("a/node_modules/m.js", "");
    env.write("node_modules/n.js", "");
    env.write("a/b/x.rs", "");
    env.write("a/b/keep.txt", "");
    let server = Server::start(&args![env.root()]);
    let tree = |excludes: &[&str]| {
        server.call(
            "directory_tree",
            json!({"path": ".", "excludePatterns": excludes}),
        )
    };
    let full = || {
        vec![
            N::D(
                "a",
                vec![
                    N::D("b", vec![N::F("keep.txt"), N::F("x.rs")]),
                    N::D("node_modules", vec![N::F("m.js")]),
                ],
            ),
            N::D(".hidden", vec![N::F("h.rs")]),
            N::D("node_modules", vec![N::F("n.js")]),
            N::F("top.rs"),
        ]
    };
    // Byte order puts ".hidden" first.
    let mut full_sorted = full();
    full_sorted.swap(0, 1);
    assert_text(&tree(&[]), &render(&full_sorted));
    // A bare name: every node_modules at any depth, with its contents.
    assert_text(
        &tree(&["node_modules"]),
        &render(&[
            N::D(".hidden", vec![N::F("h.rs")]),
            N::D("a", vec![N::D("b", vec![N::F("keep.txt"), N::F("x.rs")])]),
            N::F("top.rs"),
        ]),
    );
    // `*.rs` is top-level only; `**/*.rs` is any depth (dotfiles included).
    assert_text(
        &tree(&["*.rs"]),
        &render(&[
            N::D(".hidden", vec![N::F("h.rs")]),
            N::D(
                "a",
                vec![
                    N::D("b", vec![N::F("keep.txt"), N::F("x.rs")]),
                    N::D("node_modules", vec![N::F("m.js")]),
                ],
            ),
            N::D("node_modules", vec![N::F("n.js")]),
        ]),
    );
    assert_text(
        &tree(&["**/*.rs"]),
        &render(&[
            N::D(".hidden", vec![]),
            N::D(
                "a",
                vec![
                    N::D("b", vec![N::F("keep.txt")]),
                    N::D("node_modules", vec![N::F("m.js")]),
                ],
            ),
            N::D("node_modules", vec![N::F("n.js")]),
        ]),
    );
    // A subpath without `*`, and `?` through the bare-name forms.
    assert_text(
        &tree(&["a/b", "n?de_modules", ".hidden"]),
        &render(&[N::D("a", vec![]), N::F("top.rs")]),
    );
    // Case-sensitive: nothing excluded.
    assert_text(&tree(&["NODE_MODULES", "TOP.RS"]), &render(&full_sorted));
    // Everything at the top level.
    assert_text(&tree(&["*"]), "[]");
    server
        .call(
            "directory_tree",
            json!({"path": ".", "excludePatterns": ["[unclosed"]}),
        )
        .assert_error_contains("glob");
}

#[test]
fn directory_tree_symlinks_special_files_and_errors() {
    let (env, _sock) = ref_fixture();
    let server = Server::start(&args![env.root()]);
    env.symlink("../nested", "sub/nested/deep/up");
    let reply = server.call("directory_tree", json!({"path": "."}));
    let expected = render(&[
        N::F(".env"),
        N::D(".git", vec![N::F("config")]),
        N::F("UPPER.PNG"),
        N::F("bad.bin"),
        N::F("crlf.txt"),
        N::L("dangling"),
        N::F("doc.pdf"),
        N::F("dup.txt"),
        N::F("empty.txt"),
        N::D("emptydir", vec![]),
        N::F("hello.txt"),
        N::F("img.png"),
        N::L("link_dir"),
        N::L("link_in"),
        N::L("link_out"),
        N::L("link_out_dir"),
        N::D("node_modules", vec![N::D("pkg", vec![N::F("index.js")])]),
        N::F("noeol.txt"),
        N::F("pipe"),
        N::F("py.py"),
        N::F("snd.mp3"),
        N::F("sock"),
        N::D(
            "sub",
            vec![
                N::F("lib.rs"),
                N::D(
                    "nested",
                    vec![
                        N::F("a.txt"),
                        N::D("deep", vec![N::F("main.rs"), N::L("up")]),
                    ],
                ),
            ],
        ),
        N::F("utf8.txt"),
        N::F("with space.txt"),
    ]);
    assert_text(&reply, &expected);
    assert!(
        !reply.text.contains("\"o.txt\""),
        "descended into link_out_dir"
    );
    // The top of the tree may itself be an in-root symlinked directory.
    assert_text(
        &server.call("directory_tree", json!({"path": "link_dir"})),
        &render(&[
            N::F("lib.rs"),
            N::D(
                "nested",
                vec![
                    N::F("a.txt"),
                    N::D("deep", vec![N::F("main.rs"), N::L("up")]),
                ],
            ),
        ]),
    );
    assert_text(
        &server.call("directory_tree", json!({"path": "emptydir"})),
        "[]",
    );
    assert_err(
        &server.call("directory_tree", json!({"path": "hello.txt"})),
        "ENOTDIR: not a directory, scandir 'hello.txt'",
    );
    assert_err(
        &server.call("directory_tree", json!({"path": "nope"})),
        "ENOENT: no such file or directory, scandir 'nope'",
    );
    assert_err(
        &server.call("directory_tree", json!({"path": "link_out_dir"})),
        &format!("Access denied - path outside allowed directories: link_out_dir{THROUGH_LINK}"),
    );
}

/// `depth` is the reference 2.3.0's name for `maxDepth`: 1 lists only the
/// entries of `path`. tuls keeps the children arrays of the directories at
/// the last level (empty) and says so in a note; 2.3.0 leaves them out.
#[test]
fn directory_tree_takes_the_reference_s_depth() {
    let env = TestEnv::new();
    env.write("t/lib.rs", "");
    env.write("t/nested/a.txt", "");
    env.write("t/nested/deep/main.rs", "");
    let server = Server::start(&args![env.root()]);
    let t = env.path_str("t");
    let one = render(&[N::F("lib.rs"), N::D("nested", vec![])]);
    assert_text(
        &server.call("directory_tree", json!({"path": t, "depth": 1})),
        &format!(
            "{one}\n\n[directories at depth 1 were not descended (depth: 1); their children arrays are empty]"
        ),
    );
    let two = server.call("directory_tree", json!({"path": t, "depth": 2}));
    two.assert_ok();
    assert!(two.text.starts_with(&render(&[
        N::F("lib.rs"),
        N::D("nested", vec![N::F("a.txt"), N::D("deep", vec![])]),
    ])));
    // Both given: the smaller wins.
    let both = server.call(
        "directory_tree",
        json!({"path": t, "depth": 3, "maxDepth": 1}),
    );
    assert!(both.text.starts_with(&one), "{}", both.text);
    assert_err(
        &server.call("directory_tree", json!({"path": t, "depth": 0})),
        "Invalid depth: 0; it must be a whole number of at least 1",
    );
}
