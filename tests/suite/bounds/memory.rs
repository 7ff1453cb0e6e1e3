//! The server's peak RSS while it handles hostile inputs, each under one
//! generous bound. Numbers are printed to stderr (`-- --nocapture`).

use std::time::Instant;

use serde_json::{Value, json};

use crate::util::{RemoveOnDrop, Reply, Scratch, Server, status_kib};

use super::{count_nodes, create_files, deep_chain, still_works, tree_of};

// ---------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------

/// The generous bound on the server's peak RSS for any one hostile input.
const PEAK_RSS_BOUND_KIB: u64 = 200 * 1024;

/// Peak RSS of a fresh server while it answers `tool(args)`; checks the
/// reply with `check` and bounds its size.
fn peak_rss(env: &Scratch, what: &str, tool: &str, args: Value, check: impl Fn(&Reply)) -> u64 {
    let started = Instant::now();
    let server = Server::start(&args![env.root(), "--max-reply-chars", "0"]);
    let pid = server.pid().expect("pid");
    let reply = server.call(tool, args);
    let hwm = status_kib(pid, "VmHWM");
    check(&reply);
    eprintln!(
        "bounds: peak RSS {hwm:>7} KiB, reply {:>9} bytes, {:>6.2?}: {what}",
        reply.text.len(),
        started.elapsed()
    );
    assert!(
        reply.text.len() <= 33 << 20,
        "{what}: reply of {} bytes",
        reply.text.len()
    );
    assert!(
        hwm < PEAK_RSS_BOUND_KIB,
        "{what}: peak RSS {hwm} KiB, bound {PEAK_RSS_BOUND_KIB} KiB"
    );
    drop(reply);
    still_works(&server);
    hwm
}

#[test]
#[ignore = "slow: peak RSS under hostile inputs, 100k-file fixtures (10-15 s)"]
fn hostile_inputs_keep_peak_rss_bounded() {
    use std::os::unix::fs::FileExt as _;
    let started = Instant::now();
    let env = Scratch::new();
    const GIB: u64 = 1 << 30;
    // 1 GiB sparse files: one all zeros (no newline anywhere), one with
    // lines only at its ends.
    std::fs::File::create(env.path("zeros.bin"))
        .and_then(|f| f.set_len(GIB))
        .expect("zeros.bin");
    let ends = std::fs::File::create(env.path("ends.log")).expect("ends.log");
    ends.set_len(GIB).expect("set_len");
    ends.write_all_at(b"first\nsecond\n", 0).expect("head");
    ends.write_all_at(b"\npenultimate\nlast\n", GIB - 18)
        .expect("tail");
    // Millions of empty lines (few enough that the reply, escaped and sent
    // twice, fits rmcp's 16 MiB client line limit).
    const NEWLINES: usize = 3 << 20;
    env.write("newlines.txt", vec![b'\n'; NEWLINES]);
    create_files(&env.path("wide"), 100_000, |i| format!("f{i:06}"));
    let deep = env.path("deep");
    let _cleanup = RemoveOnDrop(deep.clone());
    deep_chain(&deep, 2000, false);
    create_files(&env.path("g"), 1000, |i| format!("f{i:03}.txt"));

    eprintln!("bounds: fixtures made in {:.2?}", started.elapsed());
    let baseline = {
        let server = Server::start(&args![env.root(), "--max-reply-chars", "0"]);
        still_works(&server);
        status_kib(server.pid().expect("pid"), "VmHWM")
    };
    eprintln!("bounds: peak RSS {baseline:>7} KiB: idle server");

    let scan_refused = |r: &Reply| {
        r.assert_error_contains("Refusing to scan more than 33554432 bytes");
    };
    let too_large = |r: &Reply| {
        r.assert_error_contains("File too large");
    };
    let ok = |r: &Reply| {
        r.assert_ok();
    };
    peak_rss(
        &env,
        "tail 10 of 1 GiB of zeros",
        "read_text_file",
        json!({"path": "zeros.bin", "tail": 10}),
        scan_refused,
    );
    peak_rss(
        &env,
        "head 10 of 1 GiB of zeros",
        "read_text_file",
        json!({"path": "zeros.bin", "head": 10}),
        scan_refused,
    );
    peak_rss(
        &env,
        "whole read of 1 GiB",
        "read_text_file",
        json!({"path": "zeros.bin"}),
        too_large,
    );
    peak_rss(
        &env,
        "256 whole reads of 1 GiB",
        "read_multiple_files",
        json!({"paths": vec!["zeros.bin"; 256]}),
        |r: &Reply| {
            assert_eq!(r.text.matches("File too large").count(), 256);
        },
    );
    peak_rss(
        &env,
        "media read of 1 GiB",
        "read_media_file",
        json!({"path": "zeros.bin"}),
        too_large,
    );
    peak_rss(
        &env,
        "tail 2 of a 1 GiB log",
        "read_text_file",
        json!({"path": "ends.log", "tail": 2}),
        |r: &Reply| {
            assert_eq!(r.text, "last\n");
        },
    );
    peak_rss(
        &env,
        "head 2 of a 1 GiB log",
        "read_text_file",
        json!({"path": "ends.log", "head": 2}),
        |r: &Reply| {
            assert_eq!(r.text, "first\nsecond");
        },
    );
    // Splitting into a Vec of every line cost 16 bytes a line (48 MiB
    // here); the text itself needs a few copies at most.
    for (what, args, len) in [
        (
            "tail 1e9 of 3 Mi empty lines",
            json!({"path": "newlines.txt", "tail": 1e9}),
            NEWLINES,
        ),
        (
            "head 1e9 of 3 Mi empty lines",
            json!({"path": "newlines.txt", "head": 1e9}),
            NEWLINES - 1,
        ),
    ] {
        let hwm = peak_rss(&env, what, "read_text_file", args, |r: &Reply| {
            assert_eq!(r.text.len(), len);
        });
        let bound = baseline + 10 * NEWLINES as u64 / 1024;
        assert!(hwm < bound, "{what}: peak RSS {hwm} KiB, bound {bound} KiB");
    }

    let lines = |n: usize| {
        move |r: &Reply| {
            r.assert_ok();
            assert!(r.text.lines().count() >= n, "{:.200}", r.text);
        }
    };
    peak_rss(
        &env,
        "list_directory of 100k entries",
        "list_directory",
        json!({"path": "wide"}),
        lines(100_000),
    );
    peak_rss(
        &env,
        "list_directory_with_sizes of 100k entries",
        "list_directory_with_sizes",
        json!({"path": "wide"}),
        lines(100_000),
    );
    peak_rss(
        &env,
        "list_directory_with_sizes of 100k entries by size",
        "list_directory_with_sizes",
        json!({"path": "wide", "sortBy": "size"}),
        lines(100_000),
    );
    peak_rss(
        &env,
        "directory_tree of 100k entries",
        "directory_tree",
        json!({"path": "wide"}),
        |r: &Reply| {
            assert_eq!(count_nodes(&tree_of(r).0), 100_000);
        },
    );
    peak_rss(
        &env,
        "search_files ** over 100k entries",
        "search_files",
        json!({"path": "wide", "pattern": "**"}),
        lines(100_000),
    );

    let depth_cut = |r: &Reply| {
        r.assert_ok();
        assert!(
            r.text
                .ends_with("deeper than 128 levels were not descended (--max-depth)]")
        );
    };
    peak_rss(
        &env,
        "directory_tree of a 2000-level tree",
        "directory_tree",
        json!({"path": "deep"}),
        depth_cut,
    );
    peak_rss(
        &env,
        "search_files ** over a 2000-level tree",
        "search_files",
        json!({"path": "deep", "pattern": "**"}),
        depth_cut,
    );
    let bottom = format!("deep/{}", ["d"; 2000].join("/"));
    // The portable backend resolves a path one directory handle per level,
    // bounded by MAX_RESOLVE_DEPTH (1024 levels; macOS's own PATH_MAX is 1024
    // bytes): deeper is ENAMETOOLONG, with memory as flat.
    let deep_ok = |r: &Reply| {
        if cfg!(feature = "portable") {
            r.assert_error_contains("ENAMETOOLONG");
        } else {
            r.assert_ok();
        }
    };
    peak_rss(
        &env,
        "list_directory 2000 levels down",
        "list_directory",
        json!({ "path": bottom }),
        deep_ok,
    );

    // Huge globs: a 1 KiB include pattern and 16 KiB of excludes, all
    // wildcards; and 256 KiB of excludes, refused before compiling.
    let wild = |tag: usize| format!("{}{tag:02x}", "?*".repeat(511));
    let excludes: Vec<String> = (0..16).map(wild).collect();
    let bare: Vec<String> = (0..16)
        .map(|i| format!("{}{i:02}", "?".repeat(1022)))
        .collect();
    peak_rss(
        &env,
        "search_files with 1 KiB pattern, 16 KiB of excludes",
        "search_files",
        json!({"path": "g", "pattern": format!("**/{}", "?*".repeat(510)),
               "excludePatterns": excludes}),
        ok,
    );
    peak_rss(
        &env,
        "directory_tree with 16 KiB of bare-name excludes",
        "directory_tree",
        json!({"path": "g", "excludePatterns": bare}),
        ok,
    );
    let huge: Vec<String> = (0..256).map(wild).collect();
    peak_rss(
        &env,
        "search_files with 256 KiB of excludes",
        "search_files",
        json!({"path": "g", "pattern": "**", "excludePatterns": huge}),
        |r: &Reply| {
            r.assert_error_contains("too long together");
        },
    );
}
