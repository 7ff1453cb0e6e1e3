//! The listing tools, over stdio, against the formats of the reference server
//! (`@modelcontextprotocol/server-filesystem` 2026.8.31, as observed over
//! stdio): `list_directory`, `list_directory_with_sizes`
//! (sorting, summary, formatSize), `directory_tree` (both exclude semantics)
//! and `search_files` (globs, excludes, no matches). Listings never follow a
//! symlink: `[LINK] name`, no size, `"type": "symlink"`, never descended.

use std::os::unix::net::UnixListener;

use serde_json::json;

use crate::util::{CANARY_CONTENT, Server, TestEnv, assert_err, assert_text};

/// The reference probe's fixture (reference-probe.py `build_fixture`), plus
/// a FIFO and a socket, and `outside/secret.txt` (11 bytes) and `outside/odir`.
fn ref_fixture() -> (TestEnv, UnixListener) {
    let env = TestEnv::new();
    env.write("hello.txt", "line1\nline2\nline3\n");
    env.write("crlf.txt", b"a\r\nb\r\nc\r\n");
    env.write("noeol.txt", "x\ny\nz");
    env.write("empty.txt", "");
    env.write("utf8.txt", "caf\u{e9} \u{20ac} \u{1F600}\n");
    env.write("bad.bin", b"ab\xff\xfe\x00cd\n");
    env.write("img.png", b"\x89PNG\r\n\x1a\nfakepng");
    env.write("UPPER.PNG", b"PNGUPPER");
    env.write("snd.mp3", b"ID3fake");
    env.write("doc.pdf", b"%PDF-1.4 fake");
    env.write("with space.txt", "spaces\n");
    env.write(".env", "secret\n");
    env.write(".git/config", "[core]\n");
    env.write("node_modules/pkg/index.js", "module.exports=1\n");
    env.write("sub/lib.rs", "pub mod x;\n");
    env.write("sub/nested/a.txt", "x");
    env.write("sub/nested/deep/main.rs", "fn main() {}\n");
    env.write(
        "py.py",
        "def f():\n    if x:\n        return 1\n    return 2\n",
    );
    env.write("dup.txt", "x = 1\ny = 2\nx = 1\n");
    env.mkdir("emptydir");
    std::fs::write(env.outside().join("secret.txt"), "TOP SECRET\n").expect("secret");
    std::fs::create_dir(env.outside().join("odir")).expect("odir");
    std::fs::write(env.outside().join("odir/o.txt"), "o\n").expect("o.txt");
    env.symlink("hello.txt", "link_in");
    env.symlink("sub", "link_dir");
    env.symlink("../outside/secret.txt", "link_out");
    env.symlink("../outside/odir", "link_out_dir");
    env.symlink("nonexistent", "dangling");
    env.mkfifo("pipe");
    let sock = UnixListener::bind(env.path("sock")).expect("bind socket");
    (env, sock)
}

// ---------------------------------------------------------------------------
// list_directory
// ---------------------------------------------------------------------------

#[test]
fn list_directory_reference_fixture_with_links() {
    let (env, _sock) = ref_fixture();
    let server = Server::start(&args![env.root()]);
    // The reference's list.root, with [LINK] for the five symlinks (a
    // deliberate difference), plus the FIFO and socket as [FILE].
    let expected = "[FILE] .env\n[DIR] .git\n[FILE] UPPER.PNG\n[FILE] bad.bin\n[FILE] crlf.txt\n\
                    [LINK] dangling\n[FILE] doc.pdf\n[FILE] dup.txt\n[FILE] empty.txt\n[DIR] emptydir\n\
                    [FILE] hello.txt\n[FILE] img.png\n[LINK] link_dir\n[LINK] link_in\n[LINK] link_out\n\
                    [LINK] link_out_dir\n[DIR] node_modules\n[FILE] noeol.txt\n[FILE] pipe\n\
                    [FILE] py.py\n[FILE] snd.mp3\n[FILE] sock\n[DIR] sub\n[FILE] utf8.txt\n\
                    [FILE] with space.txt";
    for path in [env.path_str(""), ".".to_owned(), "".to_owned()] {
        assert_text(
            &server.call("list_directory", json!({ "path": path })),
            expected,
        );
    }
    assert_text(
        &server.call("list_directory", json!({"path": "sub"})),
        "[FILE] lib.rs\n[DIR] nested",
    );
    // Naming an in-root symlinked directory lists its target.
    assert_text(
        &server.call("list_directory", json!({"path": "link_dir/nested"})),
        "[FILE] a.txt\n[DIR] deep",
    );
}

#[test]
fn list_directory_sorts_by_bytes_and_shows_hidden() {
    let env = TestEnv::new();
    for name in [
        "zeta", "Mid", "\u{e9}", "beta", "alpha", "9", "10", "_u", ".h",
    ] {
        env.write(format!("d/{name}"), "");
    }
    let server = Server::start(&args![env.root()]);
    assert_text(
        &server.call("list_directory", json!({"path": "d"})),
        "[FILE] .h\n[FILE] 10\n[FILE] 9\n[FILE] Mid\n[FILE] _u\n[FILE] alpha\n[FILE] beta\n\
         [FILE] zeta\n[FILE] \u{e9}",
    );
}

#[test]
fn list_directory_empty_and_errors() {
    let (env, _sock) = ref_fixture();
    let server = Server::start(&args![env.root()]);
    assert_text(
        &server.call("list_directory", json!({"path": env.path_str("emptydir")})),
        "",
    );
    let hello = env.path_str("hello.txt");
    assert_err(
        &server.call("list_directory", json!({ "path": hello })),
        &format!("ENOTDIR: not a directory, scandir '{hello}'"),
    );
    assert_err(
        &server.call("list_directory", json!({"path": "nope"})),
        "ENOENT: no such file or directory, scandir 'nope'",
    );
    assert_err(
        &server.call("list_directory", json!({"path": "dangling"})),
        "ENOENT: no such file or directory, scandir 'dangling'",
    );
    assert_err(
        &server.call("list_directory", json!({"path": "link_out_dir"})),
        "Access denied - path outside allowed directories: link_out_dir",
    );
    server
        .call("list_directory", json!({"path": ".", "sortBy": "name"}))
        .assert_error_contains("unknown field `sortBy`");
}

// ---------------------------------------------------------------------------
// list_directory_with_sizes
// ---------------------------------------------------------------------------

fn file_line(name: &str, size: &str) -> String {
    format!("[FILE] {name:<30} {size:>10}")
}
fn dir_line(name: &str) -> String {
    format!("[DIR] {name:<30} ")
}
fn link_line(name: &str) -> String {
    format!("[LINK] {name:<30} ")
}

/// JavaScript's `formatSize` (reference-server.md §3.8): `toFixed(2)` rounds
/// an exact tie up, which integer arithmetic reproduces exactly.
fn js_format_size(bytes: u64) -> String {
    if bytes == 0 {
        return "0 B".to_owned();
    }
    let units = ["B", "KB", "MB", "GB", "TB"];
    let mut i = 0;
    while i < 4 && bytes >= 1u64 << (10 * (i + 1)) {
        i += 1;
    }
    if i == 0 {
        return format!("{bytes} B");
    }
    let den = 1u128 << (10 * i);
    let num = u128::from(bytes) * 100;
    let mut hundredths = num / den;
    if 2 * (num % den) >= den {
        hundredths += 1;
    }
    format!("{}.{:02} {}", hundredths / 100, hundredths % 100, units[i])
}

#[test]
fn list_directory_with_sizes_reference_fixture() {
    let (env, _sock) = ref_fixture();
    let server = Server::start(&args![env.root()]);
    // The reference's own lines (reference-probe-output.jsonl, sizes.name)
    // pin the padding: 30-column names, 10-column sizes, a trailing space
    // after a directory.
    assert_eq!(
        file_line(".env", "7 B"),
        "[FILE] .env                                  7 B"
    );
    assert_eq!(dir_line(".git"), "[DIR] .git                           ");
    assert_eq!(
        file_line("with space.txt", "7 B"),
        "[FILE] with space.txt                        7 B"
    );
    // Symlinks are [LINK] with no size (their targets are never stat'ed),
    // counted as files with 0 bytes: only the reference's link lines and the
    // combined size differ (8.20 KB there: it added 4096+18+11+4096 bytes
    // of link targets, one of them outside).
    let lines = [
        file_line(".env", "7 B"),
        dir_line(".git"),
        file_line("bad.bin", "8 B"),
        file_line("crlf.txt", "9 B"),
        link_line("dangling"),
        file_line("doc.pdf", "13 B"),
        file_line("dup.txt", "18 B"),
        file_line("empty.txt", "0 B"),
        dir_line("emptydir"),
        file_line("hello.txt", "18 B"),
        file_line("img.png", "15 B"),
        link_line("link_dir"),
        link_line("link_in"),
        link_line("link_out"),
        link_line("link_out_dir"),
        dir_line("node_modules"),
        file_line("noeol.txt", "5 B"),
        file_line("pipe", "0 B"),
        file_line("py.py", "49 B"),
        file_line("snd.mp3", "7 B"),
        file_line("sock", "0 B"),
        dir_line("sub"),
        file_line("UPPER.PNG", "8 B"),
        file_line("utf8.txt", "15 B"),
        file_line("with space.txt", "7 B"),
    ];
    let expected = format!(
        "{}\n\nTotal: 21 files, 4 directories\nCombined size: 179 B",
        lines.join("\n")
    );
    assert_text(
        &server.call(
            "list_directory_with_sizes",
            json!({"path": env.path_str("")}),
        ),
        &expected,
    );
    assert_text(
        &server.call(
            "list_directory_with_sizes",
            json!({"path": ".", "sortBy": "name"}),
        ),
        &expected,
    );
    // The reference's sizes.size case, exactly.
    assert_text(
        &server.call(
            "list_directory_with_sizes",
            json!({"path": env.path_str("sub"), "sortBy": "size"}),
        ),
        "[DIR] nested                         \n[FILE] lib.rs                               11 B\n\n\
         Total: 1 files, 1 directories\nCombined size: 11 B",
    );
}

/// Name order is the reference's `localeCompare` order as observed
/// (reference-server.md §3.8), not byte order.
#[test]
fn list_directory_with_sizes_sorts_names_like_locale_compare() {
    let env = TestEnv::new();
    for name in ["zeta", "Mid", "\u{e9}", "beta", "alpha", "9", "10", "_u"] {
        env.write(format!("d/{name}"), "");
    }
    let server = Server::start(&args![env.root()]);
    let names = ["_u", "10", "9", "alpha", "beta", "\u{e9}", "Mid", "zeta"];
    let lines: Vec<String> = names.iter().map(|n| file_line(n, "0 B")).collect();
    assert_text(
        &server.call("list_directory_with_sizes", json!({"path": "d"})),
        &format!(
            "{}\n\nTotal: 8 files, 0 directories\nCombined size: 0 B",
            lines.join("\n")
        ),
    );
}

#[test]
fn list_directory_with_sizes_sorts_by_size_descending() {
    let env = TestEnv::new();
    env.write("d/a_small", "12345");
    env.write("d/b_empty", "");
    env.symlink("f_big", "d/c_link");
    env.write("d/d_mid", "m".repeat(100));
    env.write("d/e_mid", "n".repeat(100));
    env.write("d/f_big", "b".repeat(10_000));
    env.mkdir("d/g_dir");
    let server = Server::start(&args![env.root()]);
    // Directories sort by their own size (4096 on ext4) but show none; ties
    // keep name (byte) order; a link sorts as 0 bytes.
    let dir_size = std::fs::symlink_metadata(env.path("d/g_dir"))
        .expect("stat g_dir")
        .len();
    assert!(dir_size > 100 && dir_size < 10_000, "dir size {dir_size}");
    let expected = [
        file_line("f_big", "9.77 KB"),
        dir_line("g_dir"),
        file_line("d_mid", "100 B"),
        file_line("e_mid", "100 B"),
        file_line("a_small", "5 B"),
        file_line("b_empty", "0 B"),
        link_line("c_link"),
    ]
    .join("\n");
    assert_text(
        &server.call(
            "list_directory_with_sizes",
            json!({"path": "d", "sortBy": "size"}),
        ),
        &format!("{expected}\n\nTotal: 6 files, 1 directories\nCombined size: 9.97 KB"),
    );
}

/// formatSize: floor(log1024) units up to TB, `toFixed(2)` (ties round up,
/// as in JavaScript), `0 B` for zero.
#[test]
fn list_directory_with_sizes_format_size() {
    let env = TestEnv::new();
    const KIB: u64 = 1024;
    const MIB: u64 = KIB * KIB;
    const GIB: u64 = MIB * KIB;
    const TIB: u64 = GIB * KIB;
    let table: &[(u64, &str)] = &[
        (0, "0 B"),
        (1, "1 B"),
        (1023, "1023 B"),
        (KIB, "1.00 KB"),
        // Exact ties: JavaScript's toFixed rounds them up.
        (KIB + 128, "1.13 KB"),
        (KIB + 640, "1.63 KB"),
        (KIB + 384, "1.38 KB"),
        (KIB + 512, "1.50 KB"),
        (MIB - 1, "1024.00 KB"),
        (MIB, "1.00 MB"),
        (MIB + MIB / 8, "1.13 MB"),
        (MIB + MIB / 2, "1.50 MB"),
        (GIB, "1.00 GB"),
        (TIB, "1.00 TB"),
        (5 * TIB + 1, "5.00 TB"),
    ];
    for (i, (size, expected)) in table.iter().enumerate() {
        assert_eq!(js_format_size(*size), *expected, "test model for {size}");
        let f = std::fs::File::create(env.path(format!("s{i:02}"))).expect("create");
        f.set_len(*size).expect("sparse set_len");
    }
    let server = Server::start(&args![env.root()]);
    let lines: Vec<String> = table
        .iter()
        .enumerate()
        .map(|(i, (_, s))| file_line(&format!("s{i:02}"), s))
        .collect();
    let total: u64 = table.iter().map(|(s, _)| s).sum();
    assert_text(
        &server.call("list_directory_with_sizes", json!({"path": "."})),
        &format!(
            "{}\n\nTotal: {} files, 0 directories\nCombined size: {}",
            lines.join("\n"),
            table.len(),
            js_format_size(total)
        ),
    );
}

#[test]
fn list_directory_with_sizes_empty_links_and_errors() {
    let (env, _sock) = ref_fixture();
    let server = Server::start(&args![env.root()]);
    assert_text(
        &server.call("list_directory_with_sizes", json!({"path": "emptydir"})),
        "\nTotal: 0 files, 0 directories\nCombined size: 0 B",
    );
    // A directory of links only: no size of any target, not even in-root.
    env.symlink("../hello.txt", "links/in");
    env.symlink("../../outside/secret.txt", "links/out");
    env.symlink("../sub", "links/dir");
    let reply = server.call("list_directory_with_sizes", json!({"path": "links"}));
    assert_text(
        &reply,
        &format!(
            "{}\n{}\n{}\n\nTotal: 3 files, 0 directories\nCombined size: 0 B",
            link_line("dir"),
            link_line("in"),
            link_line("out")
        ),
    );
    assert!(!reply.text.contains("11 B") && !reply.text.contains("18 B"));
    server
        .call(
            "list_directory_with_sizes",
            json!({"path": ".", "sortBy": "mtime"}),
        )
        .assert_error_contains("unknown variant `mtime`");
    let hello = env.path_str("hello.txt");
    assert_err(
        &server.call("list_directory_with_sizes", json!({ "path": hello })),
        &format!("ENOTDIR: not a directory, scandir '{hello}'"),
    );
    assert_err(
        &server.call("list_directory_with_sizes", json!({"path": "nope/x"})),
        "ENOENT: no such file or directory, scandir 'nope/x'",
    );
}

// ---------------------------------------------------------------------------
// directory_tree
// ---------------------------------------------------------------------------

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
        "Access denied - path outside allowed directories: link_out_dir",
    );
}

// ---------------------------------------------------------------------------
// search_files
// ---------------------------------------------------------------------------

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
