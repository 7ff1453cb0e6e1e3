//! A line longer than one reply is never a dead end: every reply that shows
//! only part of a line names the call that returns the rest (the same
//! arguments and a cursor), and every refusal of the read path (too large,
//! too many lines to scan) names a call that works. Each suggested call is
//! made, until the whole line is read, and compared with the bytes on disk.

use serde_json::{Value, json};

use crate::util::{Server, TestEnv};

/// The reply budget of these servers (characters).
const BUDGET: &str = "3000";

/// A long line of multi-byte text: `n` characters, no newline.
fn long_line(n: usize) -> String {
    "aé€𝄞 xyz".chars().cycle().take(n).collect()
}

/// A reply's content and its notice (the last line, after a blank line,
/// in brackets), if it has one.
fn split(text: &str) -> (&str, Option<&str>) {
    match text.rfind("\n\n[") {
        Some(i) if text.ends_with(']') => (&text[..i], Some(&text[i + 2..])),
        _ => (text, None),
    }
}

/// The cursor a notice names.
fn cursor(notice: &str) -> Option<String> {
    let at = notice.find("cursor: \"")? + "cursor: \"".len();
    let end = notice[at..].find('"')?;
    Some(notice[at..at + end].to_owned())
}

/// Calls `read_text_file` with `args`, then again with each cursor given,
/// until a reply gives none: the contents joined, the last notice, and the
/// calls made.
fn follow(server: &Server, mut args: Value) -> (String, Option<String>, usize) {
    let mut joined = String::new();
    for calls in 1..10_000 {
        let r = server.call("read_text_file", args.clone());
        r.assert_ok();
        let (content, notice) = split(&r.text);
        assert!(
            r.text.chars().count() <= BUDGET.parse::<usize>().unwrap(),
            "over the budget: {}",
            r.text.len()
        );
        joined.push_str(content);
        let Some(tok) = notice.and_then(cursor) else {
            return (joined, notice.map(str::to_owned), calls);
        };
        args["cursor"] = json!(tok);
    }
    panic!("no end to the cursors");
}

fn server(env: &TestEnv, extra: &[&str]) -> Server {
    let mut a: Vec<String> = vec![env.root_str(), "--max-reply-chars".into(), BUDGET.into()];
    a.extend(extra.iter().map(|s| (*s).to_owned()));
    Server::start(&a)
}

#[test]
fn a_whole_read_of_a_long_first_line_goes_on_by_cursor_to_the_next_line() {
    let env = TestEnv::new();
    let line = long_line(20_000);
    env.write("long.txt", format!("{line}\nsecond\n"));
    let disk = env.read_string("long.txt");
    let server = server(&env, &[]);
    let (joined, notice, calls) = follow(&server, json!({"path": "long.txt"}));
    assert_eq!(joined, format!("{line}\n"), "the first line, whole");
    assert!(disk.starts_with(&joined));
    assert!(calls > 5, "{calls} calls");
    // The piece that ends the line names the call for the next ones.
    let notice = notice.expect("a notice after the line");
    assert!(
        notice.contains("line 1 ends here") && notice.contains("offset: 2"),
        "{notice}"
    );
    let (rest, notice, _) = follow(&server, json!({"path": "long.txt", "offset": 2}));
    assert_eq!(rest, "second\n");
    assert_eq!(notice, None);
    assert_eq!(joined + &rest, disk);
}

#[test]
fn head_range_and_tail_go_on_inside_a_long_line() {
    let env = TestEnv::new();
    let line = long_line(9_000);
    env.write("mid.txt", format!("short\n{line}\nthird\n"));
    env.write("last.txt", format!("first\n{line}"));
    let server = server(&env, &[]);
    // head: 1 of a file whose first line is long: the line without its
    // newline, as head gives its last line.
    env.write("first.txt", format!("{line}\nx\n"));
    let (joined, notice, _) = follow(&server, json!({"path": "first.txt", "head": 1}));
    assert_eq!((joined.as_str(), notice), (line.as_str(), None));
    // A range whose first line is long, numbered: the number once, then
    // the line; the notice after it keeps the range's end.
    let (joined, notice, _) = follow(
        &server,
        json!({"path": "mid.txt", "offset": 2, "limit": 2, "lineNumbers": true}),
    );
    assert_eq!(joined, format!("     2\t{line}\n"));
    let notice = notice.expect("the notice for line 3");
    assert!(notice.contains("offset: 3 and limit: 1"), "{notice}");
    let (third, _, _) = follow(
        &server,
        json!({"path": "mid.txt", "offset": 3, "limit": 1, "lineNumbers": true}),
    );
    assert_eq!(third, "     3\tthird\n");
    // tail: 1 of a file whose last line is long (and has no newline).
    let (joined, notice, _) = follow(&server, json!({"path": "last.txt", "tail": 1}));
    assert_eq!((joined.as_str(), notice), (line.as_str(), None));
}

#[test]
fn every_refusal_of_a_file_over_the_read_limit_names_a_call_that_works() {
    let env = TestEnv::new();
    // 60,000 characters, about 150 KB, on one line: over a 100,000-byte
    // read limit, and tail and head cannot find a line end within it.
    let line = long_line(60_000);
    env.write("huge.txt", &line);
    let server = server(&env, &["--max-read-bytes", "100000"]);

    let r = server.call("read_text_file", json!({"path": "huge.txt"}));
    r.assert_error_contains("File too large");
    r.assert_error_contains("call again with offset: 1");
    let (joined, notice, calls) = follow(&server, json!({"path": "huge.txt", "offset": 1}));
    assert_eq!((joined.as_str(), notice), (line.as_str(), None));
    assert!(calls >= 20, "{calls}");

    let r = server.call("read_text_file", json!({"path": "huge.txt", "head": 1}));
    r.assert_error_contains("call again with offset: 1 and limit: 1 instead of head");
    let (joined, _, _) = follow(
        &server,
        json!({"path": "huge.txt", "offset": 1, "limit": 1}),
    );
    assert_eq!(joined, line);

    let r = server.call("read_text_file", json!({"path": "huge.txt", "tail": 1}));
    r.assert_error_contains("read the lines from the start with offset: 1 instead of tail");

    // read_multiple_files names the read that works.
    let r = server.call("read_multiple_files", json!({"paths": ["huge.txt"]}));
    assert!(
        r.text
            .contains("read it in parts with read_text_file and offset: 1"),
        "{}",
        r.text
    );
}

#[test]
fn a_cursor_works_only_with_the_call_that_gave_it() {
    let env = TestEnv::new();
    env.write("long.txt", long_line(10_000));
    env.write("other.txt", long_line(10_000));
    let server = server(&env, &[]);
    let r = server.call("read_text_file", json!({"path": "long.txt"}));
    let tok = cursor(split(&r.text).1.expect("a notice")).expect("a cursor");
    for args in [
        json!({"path": "other.txt", "cursor": tok}),
        json!({"path": "long.txt", "head": 1, "cursor": tok}),
        json!({"path": "long.txt", "cursor": format!("{tok}A")}),
    ] {
        server
            .call("read_text_file", args)
            .assert_error_contains("Invalid cursor");
    }
}
