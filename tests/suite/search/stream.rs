//! `search_file_contents` over trees whose files are searched while the walk
//! goes on (the walk hands its files on in groups of sibling directories,
//! and the search takes them in chunks that grow): the result is in path
//! order and the same as a whole listing would give, whatever the grouping,
//! and a chunk whose files hold too many lines at once is searched again
//! from the file where it stopped, never skipping one.

use serde_json::{Value, json};

use crate::util::{Server, TestEnv};

const TOOL: &str = "search_file_contents";

fn search(server: &Server, args: Value) -> Vec<String> {
    let r = server.call(TOOL, args);
    r.assert_ok();
    r.texts()[0].lines().map(str::to_owned).collect()
}

/// More sibling directories than one group walks at once, files between
/// them in name order, and nesting, each file with one hit.
fn wide_tree() -> (TestEnv, Vec<String>) {
    let env = TestEnv::new();
    let mut paths = Vec::new();
    for d in 0..150 {
        for sub in ["a", "b"] {
            for f in 0..3 {
                let rel = format!("t/d{d:03}/{sub}/f{f}.txt");
                env.write(&rel, format!("x\nhit {rel}\ny\n"));
                paths.push(rel);
            }
        }
        // A file named between two directories.
        let rel = format!("t/d{d:03}.txt");
        env.write(&rel, "hit between\n");
        paths.push(rel);
    }
    // Path order: names in byte order, each directory before what follows
    // it ("d000" and all beneath it before "d000.txt").
    paths.sort_by(|a, b| a.split('/').cmp(b.split('/')));
    (env, paths)
}

#[test]
fn files_come_in_path_order_across_groups_and_chunks() {
    let (env, paths) = wide_tree();
    let server = Server::start(&args![env.root(), "--max-reply-chars", "0"]);
    let t = env.path_str("t");
    let got = search(
        &server,
        json!({"path": t, "pattern": "hit", "outputMode": "files", "maxResults": 5000}),
    );
    let want: Vec<String> = paths
        .iter()
        .map(|p| format!("{}/{}", env.root_str(), p))
        .collect();
    assert_eq!(got, want);
    // Cut inside the walk: the first N in path order, and said.
    let got = search(
        &server,
        json!({"path": t, "pattern": "hit", "outputMode": "files", "maxResults": 333}),
    );
    assert_eq!(got[..333], want[..333]);
    assert!(
        got[333..].iter().any(|l| l.contains("maxResults=333")),
        "{got:?}"
    );
}

#[test]
fn a_chunk_over_its_held_lines_is_searched_again_from_where_it_stopped() {
    // 40 files of 10 matches with 10 lines of context each side: each file
    // holds about 10k characters of lines; with the chunk's hold lowered to
    // 30k, a chunk stops after a few files and the rest are searched again.
    let env = TestEnv::new();
    let mut text = String::new();
    for i in 0..210 {
        if i % 21 == 10 {
            text.push_str(&format!("MATCH {i:04} {}\n", "m".repeat(20)));
        } else {
            text.push_str(&format!("line {i:04} {}\n", "f".repeat(20)));
        }
    }
    for f in 0..40 {
        env.write(format!("big/f{f:02}.txt"), &text);
    }
    let opts = crate::util::Options::new().env("TULS_DEBUG_CHUNK_HELD_CHARS", "30000");
    let server = Server::start_with(&args![env.root(), "--max-reply-chars", "0"], opts);
    let r = server.call(
        TOOL,
        json!({"path": env.path_str("big"), "pattern": "MATCH", "contextLines": 10, "maxResults": 5000}),
    );
    r.assert_ok();
    let data = r.structured.clone().expect("structured");
    let matches = data["matches"].as_array().expect("matches");
    // Every file whole, in path order, none skipped or twice.
    let mut per_file: Vec<(String, usize)> = Vec::new();
    for m in matches {
        let path = m["path"].as_str().expect("path").to_owned();
        assert_eq!(m["before"].as_array().map(Vec::len), Some(10), "{m}");
        match per_file.last_mut() {
            Some((p, n)) if *p == path => *n += 1,
            _ => per_file.push((path, 1)),
        }
    }
    assert_eq!(per_file.len(), 40);
    for (i, (path, n)) in per_file.iter().enumerate() {
        assert!(path.ends_with(&format!("big/f{i:02}.txt")), "{i}: {path}");
        assert_eq!(*n, 10, "{path}");
    }
    let text = &r.texts()[0];
    assert!(!text.contains("[truncated"), "{text}");
    assert_eq!(text.lines().filter(|l| l.contains(":MATCH ")).count(), 400);
}
