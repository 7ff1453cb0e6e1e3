//! The listing tools, over stdio, against the formats of the reference server
//! (`@modelcontextprotocol/server-filesystem` 2026.8.31, as observed over
//! stdio): `list_directory`, `list_directory_with_sizes`
//! (sorting, summary, formatSize); `directory_tree` is in [`super::tree`],
//! `search_files` in `search::files`. Listings never follow a symlink:
//! `[LINK] name`, no size, `"type": "symlink"`, never descended.

use serde_json::json;

use crate::util::{Server, THROUGH_LINK, TestEnv, assert_err, assert_text};

use super::ref_fixture;

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
        &format!("Access denied - path outside allowed directories: link_out_dir{THROUGH_LINK}"),
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
        "Parent directory does not exist: nope",
    );
}
