//! The three read tools, over stdio, against the formats of the reference
//! server (`@modelcontextprotocol/server-filesystem` 2026.8.31, as observed
//! over stdio):
//! `read_text_file` (whole file, head/tail table, lossy UTF-8, errors, the
//! read limit) here; `read_media_file` (the MIME table, the resource URI) and
//! `read_multiple_files` (the joined format, per-file errors, `--max-paths`)
//! in [`super::media_multiple`]. The reference fixture is shared.

use std::os::unix::fs::FileExt as _;

use serde_json::{Value, json};

use crate::util::{Server, TestEnv, assert_err, assert_text};

/// The reference fixture's text files.
const HELLO: &str = "line1\nline2\nline3\n";
const CRLF: &str = "a\r\nb\r\nc\r\n";
const NOEOL: &str = "x\ny\nz";

pub(super) fn fixture() -> TestEnv {
    let env = TestEnv::new();
    env.write("hello.txt", HELLO);
    env.write("crlf.txt", CRLF);
    env.write("noeol.txt", NOEOL);
    env.write("empty.txt", "");
    env.write("solo.txt", "solo");
    env.write("blank.txt", "\n\n\n");
    env.write("bad.bin", b"ab\xff\xfe\x00cd\n");
    env.write("bom.txt", "\u{feff}bom\n");
    env.write("sub/lib.rs", "pub mod x;\n");
    env
}

// ---------------------------------------------------------------------------
// read_text_file
// ---------------------------------------------------------------------------

#[test]
fn read_text_file_whole_file_absolute_and_relative() {
    let env = fixture();
    let server = Server::start(&args![env.root()]);
    assert_text(
        &server.call("read_text_file", json!({"path": env.path_str("hello.txt")})),
        HELLO,
    );
    assert_text(
        &server.call("read_text_file", json!({"path": "hello.txt"})),
        HELLO,
    );
    assert_text(
        &server.call("read_text_file", json!({"path": "./sub/../hello.txt"})),
        HELLO,
    );
    assert_text(
        &server.call("read_text_file", json!({"path": env.path_str("crlf.txt")})),
        CRLF,
    );
    assert_text(
        &server.call("read_text_file", json!({"path": "empty.txt"})),
        "",
    );
    // An in-root symlink is followed.
    env.symlink("hello.txt", "link_in");
    env.symlink("../hello.txt", "sub/up");
    assert_text(
        &server.call("read_text_file", json!({"path": "link_in"})),
        HELLO,
    );
    assert_text(
        &server.call("read_text_file", json!({"path": "sub/up"})),
        HELLO,
    );
}

/// Every row of reference-server.md §3.1, plus the edges it implies.
#[test]
fn read_text_file_head_tail_table() {
    let env = fixture();
    let server = Server::start(&args![env.root()]);
    let rows: &[(&str, Value, &str)] = &[
        // head: complete lines joined with \n, no trailing newline.
        ("hello.txt", json!({"head": 1}), "line1"),
        ("hello.txt", json!({"head": 2}), "line1\nline2"),
        ("hello.txt", json!({"head": 3}), "line1\nline2\nline3"),
        ("hello.txt", json!({"head": 9}), "line1\nline2\nline3"),
        ("hello.txt", json!({"head": 0}), HELLO),
        ("hello.txt", json!({"head": -1}), ""),
        ("hello.txt", json!({"head": -7.5}), ""),
        ("hello.txt", json!({"head": 1.5}), "line1\nline2"),
        ("hello.txt", json!({"head": 0.1}), "line1"),
        // tail: the trailing newline counts as a (last, empty) line.
        ("hello.txt", json!({"tail": 1}), ""),
        ("hello.txt", json!({"tail": 2}), "line3\n"),
        ("hello.txt", json!({"tail": 3}), "line2\nline3\n"),
        ("hello.txt", json!({"tail": 4}), HELLO),
        ("hello.txt", json!({"tail": 9}), HELLO),
        ("hello.txt", json!({"tail": 0}), HELLO),
        ("hello.txt", json!({"tail": -1}), ""),
        ("hello.txt", json!({"tail": 1.5}), ""),
        ("hello.txt", json!({"tail": 2.9}), "line3\n"),
        // 0 means "not given", so the other one applies.
        ("hello.txt", json!({"head": 1, "tail": 0}), "line1"),
        ("hello.txt", json!({"head": 0, "tail": 2}), "line3\n"),
        ("hello.txt", json!({"head": 0, "tail": 0}), HELLO),
        // CRLF: whole reads, head and tail all keep the file's bytes (the
        // reference's tail turns CRLF into LF; a listed difference).
        ("crlf.txt", json!({}), CRLF),
        ("crlf.txt", json!({"head": 2}), "a\r\nb\r"),
        ("crlf.txt", json!({"tail": 2}), "c\r\n"),
        ("crlf.txt", json!({"tail": 3}), "b\r\nc\r\n"),
        // No final newline.
        ("noeol.txt", json!({"tail": 2}), "y\nz"),
        ("noeol.txt", json!({"tail": 1}), "z"),
        ("noeol.txt", json!({"tail": 9}), NOEOL),
        ("noeol.txt", json!({"head": 1}), "x"),
        ("noeol.txt", json!({"head": 5}), NOEOL),
        ("solo.txt", json!({"head": 1}), "solo"),
        ("solo.txt", json!({"tail": 1}), "solo"),
        ("blank.txt", json!({"head": 2}), "\n"),
        ("blank.txt", json!({"tail": 2}), "\n"),
        ("empty.txt", json!({"head": 1}), ""),
        ("empty.txt", json!({"tail": 1}), ""),
    ];
    for (file, extra, expected) in rows {
        let mut args = extra.clone();
        args["path"] = json!(env.path_str(file));
        let reply = server.call("read_text_file", args.clone());
        reply.assert_ok();
        assert_eq!(
            &reply.text, expected,
            "read_text_file {args}: got {:?}",
            reply.text
        );
        crate::util::assert_mirrors(&reply, json!(expected));
    }
    for both in [
        json!({"head": 1, "tail": 1}),
        json!({"head": -1, "tail": 2}),
    ] {
        let mut args = both.clone();
        args["path"] = json!("hello.txt");
        assert_err(
            &server.call("read_text_file", args),
            "Cannot specify both head and tail parameters simultaneously",
        );
    }
}

/// head/tail read in chunks; a multi-byte character split across a chunk
/// boundary must still decode (upstream #4666).
#[test]
fn read_text_file_head_tail_multibyte_across_chunk_boundaries() {
    let env = TestEnv::new();
    let mut text = String::new();
    let mut i = 0;
    while text.len() < 300 * 1024 {
        // Odd lengths shift the boundaries through the characters.
        text.push_str(&format!("{i} é€😀{}\n", "ä".repeat(i % 7)));
        i += 1;
    }
    env.write("multi.txt", &text);
    let lines: Vec<&str> = text.split('\n').collect();
    // Replies up to 300 KiB: past the reply budget, which is off here.
    let server = Server::start(&args![env.root(), "--max-reply-chars", "0"]);
    for n in [1usize, 2, 3, 50, 4000] {
        let head = server.call("read_text_file", json!({"path": "multi.txt", "head": n}));
        let want_head = lines[..n.min(lines.len() - 1)].join("\n");
        assert_text(&head, &want_head);
        let tail = server.call("read_text_file", json!({"path": "multi.txt", "tail": n}));
        let want_tail = lines[lines.len() - n..].join("\n");
        assert_text(&tail, &want_tail);
        assert!(!tail.text.contains('\u{fffd}') && !head.text.contains('\u{fffd}'));
    }
    assert_text(
        &server.call("read_text_file", json!({"path": "multi.txt"})),
        &text,
    );
}

#[test]
fn read_text_file_decodes_invalid_utf8_lossily() {
    let env = fixture();
    let server = Server::start(&args![env.root()]);
    // As the reference: each invalid byte is U+FFFD, NUL passes, BOM stays.
    assert_text(
        &server.call("read_text_file", json!({"path": "bad.bin"})),
        "ab\u{fffd}\u{fffd}\u{0}cd\n",
    );
    assert_text(
        &server.call("read_text_file", json!({"path": "bad.bin", "head": 1})),
        "ab\u{fffd}\u{fffd}\u{0}cd",
    );
    assert_text(
        &server.call("read_text_file", json!({"path": "bad.bin", "tail": 2})),
        "ab\u{fffd}\u{fffd}\u{0}cd\n",
    );
    assert_text(
        &server.call("read_text_file", json!({"path": "bom.txt"})),
        "\u{feff}bom\n",
    );
}

#[test]
fn read_text_file_errors() {
    let env = fixture();
    let server = Server::start(&args![env.root()]);
    let sub = env.path_str("sub");
    let nope = env.path_str("nope.txt");
    let cases = [
        (
            sub.clone(),
            "EISDIR: illegal operation on a directory, read".to_owned(),
        ),
        (
            "sub".to_owned(),
            "EISDIR: illegal operation on a directory, read".to_owned(),
        ),
        (
            "".to_owned(),
            "EISDIR: illegal operation on a directory, read".to_owned(),
        ),
        (
            nope.clone(),
            format!("ENOENT: no such file or directory, open '{nope}'"),
        ),
        (
            "nope.txt".to_owned(),
            "ENOENT: no such file or directory, open 'nope.txt'".to_owned(),
        ),
        (
            "nodir/nope.txt".to_owned(),
            "Parent directory does not exist: nodir".to_owned(),
        ),
        (
            "hello.txt/x".to_owned(),
            "ENOTDIR: not a directory, open 'hello.txt/x'".to_owned(),
        ),
    ];
    for (path, expected) in &cases {
        assert_err(
            &server.call("read_text_file", json!({"path": path})),
            expected,
        );
        // head and tail report the same errors.
        assert_err(
            &server.call("read_text_file", json!({"path": path, "head": 1})),
            expected,
        );
        assert_err(
            &server.call("read_text_file", json!({"path": path, "tail": 1})),
            expected,
        );
    }
    // A dangling in-root symlink is simply missing.
    env.symlink("nowhere", "dangling");
    assert_err(
        &server.call("read_text_file", json!({"path": "dangling"})),
        "ENOENT: no such file or directory, open 'dangling'",
    );
    // Schema errors are isError results naming the problem.
    server
        .call("read_text_file", json!({}))
        .assert_error_contains("missing field `path`");
    server
        .call("read_text_file", json!({"path": "hello.txt", "head": "2"}))
        .assert_error_contains("invalid type");
    server
        .call("read_text_file", json!({"path": 7}))
        .assert_error_contains("invalid type");
    server
        .call("read_text_file", json!({"path": "hello.txt", "bogus": 1}))
        .assert_error_contains("unknown field `bogus`");
    // A Windows path is refused as the reference refuses it.
    assert_err(
        &server.call("read_text_file", json!({"path": "C:\\Windows\\x"})),
        "Access denied - Windows-style path received on a POSIX host: C:\\Windows\\x",
    );
}

/// No trimming, quote stripping, percent-decoding or `~` expansion: each
/// string names exactly the entry it spells.
#[test]
fn read_text_file_path_reaches_the_kernel_verbatim() {
    let env = fixture();
    env.write(" spaced.txt ", "SPACED\n");
    env.write("'quoted.txt'", "QUOTED\n");
    env.write("%41.txt", "PERCENT\n");
    env.write("~/home.txt", "TILDE-DIR\n");
    env.write("caf\u{e9}.txt", "NFC\n");
    let server = Server::start(&args![env.root()]);
    let read = |p: &str| server.call("read_text_file", json!({ "path": p }));
    assert_text(&read(" spaced.txt "), "SPACED\n");
    assert_text(&read("'quoted.txt'"), "QUOTED\n");
    assert_text(&read("%41.txt"), "PERCENT\n");
    assert_text(&read("~/home.txt"), "TILDE-DIR\n");
    assert_text(&read("caf\u{e9}.txt"), "NFC\n");
    for p in [
        "spaced.txt",
        " spaced.txt",
        "quoted.txt",
        "\"hello.txt\"",
        "'hello.txt'",
        " hello.txt",
        "hello.txt ",
        "hello%2etxt",
        "A.txt",
        "~/hello.txt",
        // NFD spelling of the NFC name: no Unicode normalization either.
        "cafe\u{301}.txt",
    ] {
        assert_err(
            &read(p),
            &format!("ENOENT: no such file or directory, open '{p}'"),
        );
    }
    // Repeated slashes and `.` are harmless.
    assert_text(
        &read(&format!("{}//./hello.txt", env.root().display())),
        HELLO,
    );
}

/// `--max-read-bytes`: a whole read above it is refused with a hint; head
/// and tail still work on the large file; exactly the limit is fine.
#[test]
fn read_limit_refuses_whole_file_but_head_and_tail_work() {
    let env = TestEnv::new();
    env.write("exact.txt", "x".repeat(1000));
    env.write("over.txt", "y".repeat(1001));
    let mut log = String::new();
    for i in 0..2000 {
        log.push_str(&format!("log line {i}\n"));
    }
    env.write("big.log", &log);
    env.write("big.png", vec![7u8; 1001]);
    let server = Server::start(&args![env.root(), "--max-read-bytes", "1000"]);

    assert_text(
        &server.call("read_text_file", json!({"path": "exact.txt"})),
        &"x".repeat(1000),
    );
    for (path, size) in [("over.txt", 1001usize), ("big.log", log.len())] {
        let r = server.call("read_text_file", json!({ "path": path }));
        r.assert_error_contains("too large");
        for needle in [path, &size.to_string(), "1000", "head", "tail"] {
            assert!(r.text.contains(needle), "{:?} lacks {needle:?}", r.text);
        }
    }
    assert_text(
        &server.call("read_text_file", json!({"path": "big.log", "head": 2})),
        "log line 0\nlog line 1",
    );
    // tail needs only the end, even when the file is far above the limit.
    assert_text(
        &server.call("read_text_file", json!({"path": "big.log", "tail": 3})),
        "log line 1998\nlog line 1999\n",
    );
    assert_text(
        &server.call("read_text_file", json!({"path": "big.log", "tail": 1})),
        "",
    );
    // The other whole-file readers obey the same limit.
    server
        .call("read_media_file", json!({"path": "big.png"}))
        .assert_error_contains("too large");
    let multi = server.call(
        "read_multiple_files",
        json!({"paths": ["exact.txt", "over.txt"]}),
    );
    multi.assert_ok();
    let expected_start = format!(
        "exact.txt:\n{}\n\n---\nover.txt: Error - ",
        "x".repeat(1000)
    );
    assert!(
        multi.text.starts_with(&expected_start) && multi.text.contains("too large"),
        "{:?}",
        multi.text
    );
}

/// With the default limit, a 1 GiB (sparse) file: a whole read is refused
/// at once, head and tail touch only the ends.
#[test]
fn read_limit_default_on_a_gib_file() {
    let env = TestEnv::new();
    let path = env.path("huge.log");
    let f = std::fs::File::create(&path).expect("create huge.log");
    let size: u64 = 1 << 30;
    f.set_len(size).expect("set_len");
    f.write_all_at(b"first line\nsecond\n", 0)
        .expect("write head");
    let end = b"\nantepenultimate\npenultimate\nlast\n";
    f.write_all_at(end, size - end.len() as u64)
        .expect("write tail");
    drop(f);
    let server = Server::start(&args![env.root()]);
    let started = std::time::Instant::now();
    let whole = server.call("read_text_file", json!({"path": "huge.log"}));
    whole.assert_error_contains("too large");
    assert!(whole.text.contains(&size.to_string()) && whole.text.contains("tail"));
    assert_text(
        &server.call("read_text_file", json!({"path": "huge.log", "head": 2})),
        "first line\nsecond",
    );
    assert_text(
        &server.call("read_text_file", json!({"path": "huge.log", "tail": 3})),
        "penultimate\nlast\n",
    );
    server
        .call("read_media_file", json!({"path": "huge.log"}))
        .assert_error_contains("too large");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "bounded reads took {:?}",
        started.elapsed()
    );
}
