//! `read_text_file` line ranges: `offset`, `limit`, `lineNumbers`, read
//! streaming, so any range of a file past `--max-read-bytes` can be read.

use serde_json::json;

use crate::util::{Server, TestEnv};

/// The text of lines `first..first+count` of `text` (1-based), bytes as they are.
fn lines_of(text: &str, first: usize, count: usize) -> String {
    text.split_inclusive('\n')
        .skip(first - 1)
        .take(count)
        .collect()
}

fn numbered(text: &str, first: usize, count: usize) -> String {
    text.split_inclusive('\n')
        .enumerate()
        .skip(first - 1)
        .take(count)
        .map(|(i, l)| format!("{:>6}\t{l}", i + 1))
        .collect()
}

fn sample() -> String {
    (1..=50).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn offset_and_limit_pick_exact_lines() {
    let env = TestEnv::new();
    let text = sample();
    env.write("f.txt", &text);
    let server = Server::start(&args![env.root()]);
    let p = env.path_str("f.txt");
    let r = server.call(
        "read_text_file",
        json!({"path": p, "offset": 10, "limit": 3}),
    );
    assert_eq!(r.assert_ok().text, "line 10\nline 11\nline 12\n");
    let r = server.call("read_text_file", json!({"path": p, "offset": 48}));
    assert_eq!(r.assert_ok().text, lines_of(&text, 48, 99));
    let r = server.call("read_text_file", json!({"path": p, "limit": 2}));
    assert_eq!(r.assert_ok().text, "line 1\nline 2\n");
    // A limit past the end gives the lines there are, with no notice.
    let r = server.call(
        "read_text_file",
        json!({"path": p, "offset": 49, "limit": 100}),
    );
    assert_eq!(r.assert_ok().text, "line 49\nline 50\n");
    // Without the new arguments the text is the whole file, as before.
    let r = server.call("read_text_file", json!({"path": p}));
    assert_eq!(r.assert_ok().text, text);
}

#[test]
fn line_numbers_format_as_cat_n() {
    let env = TestEnv::new();
    let text = sample();
    env.write("f.txt", &text);
    let server = Server::start(&args![env.root()]);
    let p = env.path_str("f.txt");
    let r = server.call(
        "read_text_file",
        json!({"path": p, "offset": 9, "limit": 2, "lineNumbers": true}),
    );
    assert_eq!(r.assert_ok().text, "     9\tline 9\n    10\tline 10\n");
    let r = server.call("read_text_file", json!({"path": p, "lineNumbers": true}));
    assert_eq!(r.assert_ok().text, numbered(&text, 1, 50));
    // `cat -n` agrees, where it is installed.
    if let Ok(out) = std::process::Command::new("cat")
        .arg("-n")
        .arg(env.path("f.txt"))
        .output()
    {
        assert_eq!(r.text.as_bytes(), out.stdout.as_slice());
    }
    // lineNumbers: false is the plain text.
    let r = server.call("read_text_file", json!({"path": p, "lineNumbers": false}));
    assert_eq!(r.assert_ok().text, text);
}

#[test]
fn offset_past_the_end_says_how_many_lines_there_are() {
    let env = TestEnv::new();
    env.write("f.txt", "a\nb\nc\n");
    env.write("partial.txt", "a\nb");
    env.write("empty.txt", "");
    let server = Server::start(&args![env.root()]);
    let r = server.call(
        "read_text_file",
        json!({"path": env.path_str("f.txt"), "offset": 4}),
    );
    assert_eq!(
        r.assert_ok().text,
        "[offset 4 is past the end of the file: it has 3 lines]"
    );
    let r = server.call(
        "read_text_file",
        json!({"path": env.path_str("partial.txt"), "offset": 9}),
    );
    assert_eq!(
        r.assert_ok().text,
        "[offset 9 is past the end of the file: it has 2 lines]"
    );
    let r = server.call(
        "read_text_file",
        json!({"path": env.path_str("partial.txt"), "offset": 2}),
    );
    assert_eq!(r.assert_ok().text, "b");
    let r = server.call(
        "read_text_file",
        json!({"path": env.path_str("empty.txt"), "offset": 1}),
    );
    assert_eq!(r.assert_ok().text, "");
}

#[test]
fn bad_ranges_are_refused() {
    let env = TestEnv::new();
    env.write("f.txt", "a\nb\n");
    let server = Server::start(&args![env.root()]);
    let p = env.path_str("f.txt");
    for (args, needle) in [
        (
            json!({"path": p, "offset": 0}),
            "Invalid offset: 0; it must be a whole number of at least 1",
        ),
        (
            json!({"path": p, "offset": -3}),
            "Invalid offset: -3; it must be a whole number of at least 1",
        ),
        (
            json!({"path": p, "limit": 0}),
            "Invalid limit: 0; it must be a whole number of at least 1",
        ),
        (json!({"path": p, "limit": -1}), "Invalid limit: -1"),
        (
            json!({"path": p, "offset": 1.5}),
            "Invalid arguments for tool read_text_file",
        ),
        (
            json!({"path": p, "offset": 2, "head": 1}),
            "Cannot combine offset, limit or lineNumbers with head or tail",
        ),
        (
            json!({"path": p, "limit": 2, "tail": 1}),
            "Cannot combine offset, limit or lineNumbers with head or tail",
        ),
        (
            json!({"path": p, "lineNumbers": true, "head": 1}),
            "Cannot combine",
        ),
    ] {
        server
            .call("read_text_file", args)
            .assert_error_contains(needle);
    }
    // head/tail of 0 mean "not given" (as in the reference), so they combine.
    let r = server.call("read_text_file", json!({"path": p, "offset": 2, "head": 0}));
    assert_eq!(r.assert_ok().text, "b\n");
}

#[test]
fn crlf_lines_keep_their_endings() {
    let env = TestEnv::new();
    let text = "one\r\ntwo\r\nthree\r\n";
    env.write("crlf.txt", text);
    let server = Server::start(&args![env.root()]);
    let p = env.path_str("crlf.txt");
    let r = server.call(
        "read_text_file",
        json!({"path": p, "offset": 2, "limit": 1}),
    );
    assert_eq!(r.assert_ok().text, "two\r\n");
    let r = server.call(
        "read_text_file",
        json!({"path": p, "offset": 2, "lineNumbers": true}),
    );
    assert_eq!(r.assert_ok().text, "     2\ttwo\r\n     3\tthree\r\n");
}

#[test]
fn invalid_utf8_in_a_range_is_lossy() {
    let env = TestEnv::new();
    env.write("bad.txt", b"ok\nbad \xff\xfe here\nend\n");
    let server = Server::start(&args![env.root()]);
    let r = server.call(
        "read_text_file",
        json!({"path": env.path_str("bad.txt"), "offset": 2, "limit": 1}),
    );
    assert_eq!(r.assert_ok().text, "bad \u{fffd}\u{fffd} here\n");
}

/// A file past `--max-read-bytes` cannot be read whole, but any range of
/// it can: the read streams and stops at the range's end.
#[test]
fn ranges_of_a_file_past_the_read_limit() {
    let env = TestEnv::new();
    let text: String = (1..=20_000).map(|i| format!("row {i:05}\n")).collect();
    assert!(text.len() > 100_000);
    env.write("big.txt", &text);
    let server = Server::start(&args![env.root(), "--max-read-bytes", "4096"]);
    let p = env.path_str("big.txt");
    server
        .call("read_text_file", json!({"path": p}))
        .assert_error_contains("File too large");
    let r = server.call(
        "read_text_file",
        json!({"path": p, "offset": 19_990, "limit": 5}),
    );
    assert_eq!(r.assert_ok().text, lines_of(&text, 19_990, 5));
    // A range longer than the read limit is cut at a whole line, and the
    // notice's offset continues it.
    let r = server.call(
        "read_text_file",
        json!({"path": p, "offset": 100, "limit": 1000}),
    );
    let t = &r.assert_ok().text;
    let (body, notice) = t.rsplit_once("\n\n[").expect("a notice");
    assert!(body.len() <= 4096, "{}", body.len());
    assert!(
        notice.starts_with("reply cut at the 4096-byte read limit (--max-read-bytes)"),
        "{notice}"
    );
    let shown = body.split_inclusive('\n').count();
    assert_eq!(format!("{body}\n"), lines_of(&text, 100, shown) + "\n");
    assert!(
        notice.contains(&format!(
            "offset: {} and limit: {}",
            100 + shown,
            1000 - shown
        )),
        "{notice}"
    );
}

/// A range read stops at the range's end: the first lines of an 8 GiB
/// (sparse) file come back without the file being read whole (which would
/// pass the call's timeout).
#[test]
fn a_range_reads_only_as_far_as_it_needs() {
    let env = TestEnv::new();
    let path = env.write("huge.txt", "first\nsecond\nthird\n");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|f| f.set_len(8 << 30))
        .expect("sparse file");
    let server = Server::start(&args![env.root()]);
    let r = server.call(
        "read_text_file",
        json!({"path": env.path_str("huge.txt"), "offset": 2, "limit": 2}),
    );
    assert_eq!(r.assert_ok().text, "second\nthird\n");
    let r = server.call(
        "read_text_file",
        json!({"path": env.path_str("huge.txt"), "lineNumbers": true, "limit": 1}),
    );
    assert_eq!(r.assert_ok().text, "     1\tfirst\n");
}

/// Bytes the process has read (`rchar` in `/proc/<pid>/io`).
fn read_bytes(pid: u32) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).expect("/proc/<pid>/io");
    io.lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .and_then(|v| v.trim().parse().ok())
        .expect("rchar")
}

/// Finding F2 of the session fuzzer: `offset` on a 5 GiB sparse file
/// without newlines read up to 4 GiB of zeros (`MAX_LINE_SCAN_BYTES`),
/// seconds of CPU for one call. Now a hole before the range is skipped
/// (`SEEK_DATA`), not read. Ground truth: the bytes the process read
/// (`rchar`), and replies equal to those for the same lines in a file
/// written out whole.
#[test]
fn holes_before_the_range_are_skipped_not_read() {
    let env = TestEnv::new();
    let sparse = |name: &str, head: &[u8], hole: u64, tail: &[u8]| {
        use std::io::{Seek as _, Write as _};
        let mut f = std::fs::File::create(env.path(name)).expect("create");
        f.write_all(head).expect("write");
        f.seek(std::io::SeekFrom::Current(hole as i64))
            .expect("seek");
        f.write_all(tail).expect("write");
        f.set_len(head.len() as u64 + hole + tail.len() as u64)
            .expect("set_len");
    };
    sparse("big", b"", 5 << 30, b"");
    sparse("mid", b"a\nb\n", 1 << 30, b"c\nd\n");
    // The same lines with the hole's zeros written out (4 KiB of them).
    env.write(
        "mid-small",
        [b"a\nb\n".as_slice(), &[0u8; 4096], b"c\nd\n"].concat(),
    );
    env.write("big-small", [0u8; 4096]);
    let server = Server::start(&args![env.root()]);
    let pid = server.pid().expect("pid");
    let text = |name: &str, args: serde_json::Value| {
        let mut a = args;
        a["path"] = json!(env.path_str(name));
        let r = server.call("read_text_file", a);
        (r.is_error, r.text.replace(&env.path_str(name), "P"))
    };
    for (name, small, args) in [
        ("big", "big-small", json!({"offset": 2})),
        ("mid", "mid-small", json!({"offset": 4})),
        ("mid", "mid-small", json!({"offset": 4, "limit": 1})),
        ("mid", "mid-small", json!({"offset": 9})),
    ] {
        let before = read_bytes(pid);
        let got = text(name, args.clone());
        let read = read_bytes(pid) - before;
        assert!(
            read < 64 << 20,
            "{name} {args}: read {read} bytes of a file that is mostly a hole"
        );
        assert_eq!(got, text(small, args.clone()), "{name} {args}");
    }
}
