//! The reply budget (`--max-reply-chars`): a reply longer than it is cut at
//! a whole line or entry and ends with a notice; following the notice's
//! `offset` reaches everything exactly once.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::util::{RawServer, Server, TestEnv, assert_within};

const BUDGET: usize = 2000;

/// A reply's content and its notice (the last `[...]` after a blank line).
fn split(text: &str) -> (&str, Option<&str>) {
    if text.starts_with('[') && text.ends_with(']') && !text.contains('\n') {
        return ("", Some(text));
    }
    match text.rfind("\n\n[") {
        Some(i) if text.ends_with(']') => (&text[..i], Some(&text[i + 2..])),
        _ => (text, None),
    }
}

/// The number after `key` in a notice.
fn number_after(notice: &str, key: &str) -> usize {
    let i = notice
        .find(key)
        .unwrap_or_else(|| panic!("no {key:?} in {notice}"));
    notice[i + key.len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .expect("a number")
}

fn mixed_text() -> String {
    let mut s = String::new();
    for i in 0..600 {
        match i % 5 {
            0 => s.push_str(&format!("plain line {i}\n")),
            1 => s.push_str(&format!("crlf line {i}\r\n")),
            2 => s.push_str(&format!("ünïcödé {i} {}\n", "é".repeat(i % 40))),
            3 => s.push('\n'),
            _ => s.push_str(&format!("{}\n", "x".repeat(i % 150))),
        }
    }
    s.push_str("no final newline");
    s
}

/// Reads every page of a file by following the notices; returns the pages'
/// content, concatenated.
fn read_by_pages(server: &Server, path: &str, numbers: bool) -> (String, usize) {
    let mut out = String::new();
    let mut args = json!({"path": path});
    if numbers {
        args["lineNumbers"] = json!(true);
    }
    let mut pages = 0;
    loop {
        pages += 1;
        assert!(pages < 1000, "no progress");
        let r = server.call("read_text_file", args.clone());
        let text = &r.assert_ok().text;
        assert_within(text, BUDGET);
        let (body, notice) = split(text);
        out.push_str(body);
        let Some(notice) = notice else { break };
        assert!(
            notice.starts_with(&format!("[reply cut at the {BUDGET}-character limit")),
            "{notice}"
        );
        let next = number_after(notice, "offset: ");
        args["offset"] = json!(next);
    }
    (out, pages)
}

#[test]
fn a_long_file_reads_whole_by_following_the_offsets() {
    let env = TestEnv::new();
    let text = mixed_text();
    env.write("f.txt", &text);
    let server = Server::start(&args![env.root(), "--max-reply-chars", BUDGET.to_string()]);
    let (got, pages) = read_by_pages(&server, &env.path_str("f.txt"), false);
    assert!(pages > 5, "{pages} pages");
    assert_eq!(got, text);
    // Numbered pages number every line once, in order.
    let (got, _) = read_by_pages(&server, &env.path_str("f.txt"), true);
    let expected: String = text
        .split_inclusive('\n')
        .enumerate()
        .map(|(i, l)| format!("{:>6}\t{l}", i + 1))
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn budget_zero_is_the_whole_reply() {
    let env = TestEnv::new();
    let text = mixed_text();
    env.write("f.txt", &text);
    for i in 0..300 {
        env.write(format!("d/file-{i:03}.txt"), "");
    }
    let server = Server::start(&args![env.root(), "--max-reply-chars", "0"]);
    let r = server.call("read_text_file", json!({"path": env.path_str("f.txt")}));
    assert_eq!(r.assert_ok().text, text);
    let r = server.call("list_directory", json!({"path": env.path_str("d")}));
    assert_eq!(r.assert_ok().text.lines().count(), 300);
    assert!(!r.text.contains("[reply cut"));
    // The default budget cuts the same file.
    let server = Server::start(&args![env.root(), "--max-reply-chars", "1024"]);
    let r = server.call("read_text_file", json!({"path": env.path_str("f.txt")}));
    assert!(
        r.assert_ok()
            .text
            .contains("[reply cut at the 1024-character limit")
    );
}

#[test]
fn head_and_tail_cuts_say_how_to_continue() {
    let env = TestEnv::new();
    let text: String = (1..=400).map(|i| format!("line number {i:04}\n")).collect();
    env.write("f.txt", &text);
    let server = Server::start(&args![env.root(), "--max-reply-chars", BUDGET.to_string()]);
    let p = env.path_str("f.txt");
    let r = server.call("read_text_file", json!({"path": p, "head": 300}));
    let t = &r.assert_ok().text;
    assert_within(t, BUDGET);
    let (body, notice) = split(t);
    let notice = notice.expect("cut");
    let k = body.lines().count();
    assert_eq!(body, text.lines().take(k).collect::<Vec<_>>().join("\n"));
    assert!(
        notice.contains(&format!("offset: {} and limit: {}", k + 1, 300 - k)),
        "{notice}"
    );
    // tail: the first lines of the tail, and the tail that gives the rest.
    let r = server.call("read_text_file", json!({"path": p, "tail": 200}));
    let t = &r.assert_ok().text;
    assert_within(t, BUDGET);
    let (body, notice) = split(t);
    let rest = number_after(notice.expect("cut"), "tail: ");
    let r2 = server.call("read_text_file", json!({"path": p, "tail": rest}));
    let want = server_with_no_budget(&env).call("read_text_file", json!({"path": p, "tail": 200}));
    let r2text = r2.assert_ok().text.clone();
    let (body2, _) = split(&r2text);
    // The second part may itself be cut; the two parts start the tail in order.
    assert!(
        want.text.starts_with(&format!("{body}\n{body2}")),
        "parts do not join"
    );
}

fn server_with_no_budget(env: &TestEnv) -> Server {
    Server::start(&args![env.root(), "--max-reply-chars", "0"])
}

/// Pages through a list tool, returning every item of every page.
fn list_pages(
    server: &Server,
    tool: &str,
    mut args: Value,
    body_lines: impl Fn(&str) -> Vec<String>,
) -> Vec<String> {
    let mut all = Vec::new();
    let mut pages = 0;
    loop {
        pages += 1;
        assert!(pages < 1000);
        let r = server.call(tool, args.clone());
        let text = &r.assert_ok().text;
        assert_within(text, BUDGET);
        let (body, notice) = split(text);
        all.extend(body_lines(body));
        let Some(notice) = notice else { break };
        let next = number_after(notice, "offset: ");
        assert_eq!(next, all.len(), "{notice}");
        args["offset"] = json!(next);
    }
    assert!(pages > 3, "{pages} pages");
    all
}

#[test]
fn listings_and_searches_page_through_every_entry_once() {
    let env = TestEnv::new();
    for i in 0..400 {
        env.write(
            format!("d/entry-with-a-long-name-{i:04}.txt"),
            "x".repeat(i),
        );
    }
    env.mkdir("d/sub");
    let server = Server::start(&args![env.root(), "--max-reply-chars", BUDGET.to_string()]);
    let whole = server_with_no_budget(&env);
    let d = env.path_str("d");

    let lines = |b: &str| b.lines().map(str::to_owned).collect::<Vec<_>>();
    let got = list_pages(&server, "list_directory", json!({"path": d}), lines);
    let want = whole.call("list_directory", json!({"path": d}));
    assert_eq!(got.join("\n"), want.text);

    // With sizes: the entries before the totals, which every page repeats.
    let sized = |b: &str| {
        let (entries, totals) = b.rsplit_once("\n\n").expect("totals");
        assert!(
            totals.starts_with("Total: 400 files, 1 directories"),
            "{totals}"
        );
        lines(entries)
    };
    for sort in ["name", "size"] {
        let got = list_pages(
            &server,
            "list_directory_with_sizes",
            json!({"path": d, "sortBy": sort}),
            sized,
        );
        let want = whole.call(
            "list_directory_with_sizes",
            json!({"path": d, "sortBy": sort}),
        );
        assert_eq!(
            format!("{}\n\n", got.join("\n")),
            want.text.split("Total:").next().unwrap()
        );
    }

    // `offset` pages as it always did (a call without it pages by cursor:
    // tests/suite/list/cursors.rs).
    let got = list_pages(
        &server,
        "search_files",
        json!({"path": d, "pattern": "*.txt", "offset": 0}),
        lines,
    );
    let want = whole.call("search_files", json!({"path": d, "pattern": "*.txt"}));
    assert_eq!(got.join("\n"), want.text);
    assert_eq!(got.len(), 400);

    // Past the end: nothing, and a notice that says so.
    let r = server.call("list_directory", json!({"path": d, "offset": 401}));
    assert_eq!(
        r.assert_ok().text,
        "[no entries from offset 401: there are 401]"
    );
    let r = server.call(
        "search_files",
        json!({"path": d, "pattern": "*.txt", "offset": 999}),
    );
    assert_eq!(
        r.assert_ok().text,
        "[no matches from offset 999: there are 400]"
    );
    server
        .call("list_directory", json!({"path": d, "offset": -1}))
        .assert_error_contains("Invalid offset: -1; it must be a whole number of at least 0");
}

/// Every path in a `directory_tree` page, and whether each is a
/// `continued` repeat of an earlier page's directory.
fn tree_paths(nodes: &Value, prefix: &str, out: &mut Vec<(String, bool)>) {
    for node in nodes.as_array().expect("an array of nodes") {
        let name = node["name"].as_str().expect("name");
        let path = format!("{prefix}{name}");
        let continued = node.get("continued") == Some(&json!(true));
        out.push((path.clone(), continued));
        if let Some(children) = node.get("children") {
            tree_paths(children, &format!("{path}/"), out);
        }
    }
}

#[test]
fn directory_tree_pages_are_valid_json_and_reach_every_entry_once() {
    let env = TestEnv::new();
    // About 2,500 entries, up to 5 levels deep, some directories empty.
    for a in 0..6 {
        for b in 0..7 {
            env.mkdir(format!("t/a{a}/b{b}/empty"));
            for c in 0..8 {
                for f in 0..6 {
                    env.write(format!("t/a{a}/b{b}/c{c}/file{f}.rs"), "");
                }
            }
        }
    }
    env.symlink("a0", "t/link");
    let server = Server::start(&args![env.root(), "--max-reply-chars", "4000"]);
    let whole = server_with_no_budget(&env);
    let t = env.path_str("t");
    let full = whole.call("directory_tree", json!({"path": t}));
    let full: Value = serde_json::from_str(&full.assert_ok().text).expect("the whole tree is JSON");
    let mut want = Vec::new();
    tree_paths(&full, "", &mut want);
    let want: Vec<String> = want.into_iter().map(|(p, _)| p).collect();
    assert!(want.len() > 2000, "{}", want.len());

    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut order = Vec::new();
    let mut offset = 0usize;
    let mut pages = 0;
    loop {
        pages += 1;
        assert!(pages < 2000, "no progress");
        let r = server.call("directory_tree", json!({"path": t, "offset": offset}));
        let text = &r.assert_ok().text;
        assert_within(text, 4000);
        let (body, notice) = split(text);
        let page: Value = serde_json::from_str(body)
            .unwrap_or_else(|e| panic!("page at {offset} is not JSON ({e}): {body}"));
        let mut paths = Vec::new();
        tree_paths(&page, "", &mut paths);
        for (p, continued) in paths {
            if continued {
                // A repeat of a directory listed on an earlier page.
                assert!(seen.contains_key(&p), "continued {p} was not listed before");
            } else {
                *seen.entry(p.clone()).or_default() += 1;
                order.push(p);
            }
        }
        let Some(notice) = notice else { break };
        let next = number_after(notice, "offset: ");
        assert_eq!(next, order.len(), "{notice}");
        offset = next;
    }
    assert!(pages > 10, "{pages} pages");
    assert!(seen.values().all(|n| *n == 1), "an entry was listed twice");
    assert_eq!(
        order, want,
        "pages in order are the whole tree in pre-order"
    );
}

#[test]
fn directory_tree_max_depth() {
    let env = TestEnv::new();
    env.write("t/a/b/c.txt", "");
    env.write("t/top.txt", "");
    let server = Server::start(&args![env.root()]);
    let r = server.call(
        "directory_tree",
        json!({"path": env.path_str("t"), "maxDepth": 1}),
    );
    let (body, notice) = split(&r.assert_ok().text);
    let v: Value = serde_json::from_str(body).expect("JSON");
    assert_eq!(
        v,
        json!([{"name": "a", "type": "directory", "children": []}, {"name": "top.txt", "type": "file"}])
    );
    assert_eq!(
        notice,
        Some(
            "[directories at depth 1 were not descended (maxDepth: 1); their children arrays are empty]"
        )
    );
    let r = server.call(
        "directory_tree",
        json!({"path": env.path_str("t"), "maxDepth": 3}),
    );
    assert!(r.assert_ok().text.contains("c.txt"));
    assert!(!r.text.contains("maxDepth"), "{}", r.text);
    server
        .call(
            "directory_tree",
            json!({"path": env.path_str("t"), "maxDepth": 0}),
        )
        .assert_error_contains("Invalid maxDepth: 0; it must be a whole number of at least 1");
}

#[test]
fn read_multiple_files_is_cut_after_a_whole_file() {
    let env = TestEnv::new();
    let body: String = (0..40).map(|i| format!("line {i:02} of text\n")).collect();
    let paths: Vec<String> = (0..4)
        .map(|i| {
            env.write(format!("f{i}.txt"), &body);
            env.path_str(format!("f{i}.txt"))
        })
        .collect();
    let server = Server::start(&args![env.root(), "--max-reply-chars", "1500"]);
    let r = server.call("read_multiple_files", json!({"paths": paths}));
    let t = &r.assert_ok().text;
    assert_within(t, 1500);
    let (got, notice) = split(t);
    assert_eq!(got, format!("{}:\n{body}\n", paths[0]));
    let notice = notice.expect("cut");
    assert!(notice.contains("files 1-1 of 4 shown"), "{notice}");
    assert!(notice.contains("from number 2 on"), "{notice}");
    // Not even one file fits: its first whole lines, and the offset of the rest.
    let big: String = (0..400).map(|i| format!("row {i:03}\n")).collect();
    env.write("big.txt", &big);
    let r = server.call(
        "read_multiple_files",
        json!({"paths": [env.path_str("big.txt"), paths[0]]}),
    );
    let (got, notice) = split(&r.assert_ok().text);
    let next = number_after(notice.expect("cut"), "offset: ");
    let header = format!("{}:\n", env.path_str("big.txt"));
    assert_eq!(
        got,
        format!(
            "{header}{}",
            big.lines()
                .take(next - 1)
                .map(|l| format!("{l}\n"))
                .collect::<String>()
        )
    );
}

#[test]
fn a_small_budget_is_refused_at_startup() {
    let env = TestEnv::new();
    let (code, stderr) = Server::start_expect_fail(&args![env.root(), "--max-reply-chars", "100"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("must be 0 (no budget) or at least 1024"),
        "{stderr}"
    );
}

#[test]
fn initialize_carries_instructions() {
    let env = TestEnv::new();
    let mut raw = RawServer::start(&args![env.root(), "--max-reply-chars", "5000"]);
    let result = raw.initialize("2025-06-18");
    let text = result["instructions"].as_str().expect("instructions");
    let root = env.root();
    assert!(text.contains(root.to_str().unwrap()), "{text}");
    assert!(
        text.contains("relative path resolves against the first"),
        "{text}"
    );
    assert!(text.contains("at most 5000 characters"), "{text}");
    assert!(text.contains("offset"), "{text}");
    assert!(
        text.contains("read_text_file with offset and limit"),
        "{text}"
    );
    // The limits are said here, once, not in each tool's description.
    assert!(
        text.contains("over 33554432 bytes is read in parts"),
        "{text}"
    );
    assert!(
        text.contains("append_file adds at most 33554432 bytes"),
        "{text}"
    );
    assert!(
        text.contains("stops at 1000000 entries or 128 levels"),
        "{text}"
    );
    assert!(text.chars().count() < 1000, "{text}");
    // With the budget off it says nothing of it; a read-less policy says
    // nothing of line ranges.
    let mut raw = RawServer::start(&args![
        env.root(),
        "--max-reply-chars",
        "0",
        "--deny",
        "filesystem/read_text_file"
    ]);
    let result = raw.initialize("2025-06-18");
    let text = result["instructions"].as_str().expect("instructions");
    assert!(!text.contains("characters"), "{text}");
    assert!(!text.contains("read_text_file"), "{text}");
}

#[test]
fn a_long_edit_diff_is_cut_with_its_fence_closed() {
    let env = TestEnv::new();
    let old: String = (0..300).map(|i| format!("old line {i}\n")).collect();
    let new: String = (0..300).map(|i| format!("new line {i}\n")).collect();
    env.write("f.txt", &old);
    let server = Server::start(&args![env.root(), "--max-reply-chars", BUDGET.to_string()]);
    let r = server.call(
        "edit_file",
        json!({"path": env.path_str("f.txt"), "edits": [{"oldText": old, "newText": new}]}),
    );
    let t = &r.assert_ok().text;
    assert_within(t, BUDGET);
    let (body, notice) = split(t);
    assert!(
        body.starts_with("```diff\n") && body.ends_with("\n```\n"),
        "{body}"
    );
    assert!(notice.expect("cut").contains("the edits were written"));
    assert_eq!(env.read_string("f.txt"), new);
}
