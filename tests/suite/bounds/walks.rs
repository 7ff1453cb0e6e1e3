//! Walk bounds: entries, depth (and the `--max-depth` ceiling), glob
//! pattern size and complexity, and cancellation of a long walk.

use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};

use crate::util::{RemoveOnDrop, Reply, Scratch, Server, TestEnv, cpu_ticks, wait_until};

use super::{ambient, count_nodes, deep_chain, split_note, still_works, tree_of};

// ---------------------------------------------------------------------------
// Walks: entry and depth caps
// ---------------------------------------------------------------------------

/// `count` entries under `tree/`: 5 directories holding files.
fn entries_fixture(env: &TestEnv, count: usize) {
    let dirs = 5;
    for d in 0..dirs {
        env.mkdir(format!("tree/d{d}"));
    }
    for f in 0..count - dirs {
        env.write(format!("tree/d{}/f{f}", f % dirs), "");
    }
}

#[test]
fn walk_entries_at_and_past_max_entries() {
    const CAP: usize = 50;
    for (count, cut) in [(CAP, false), (CAP + 1, true)] {
        let env = TestEnv::new();
        entries_fixture(&env, count);
        // The whole reply in one (no reply budget): the cap cuts it.
        let server = Server::start(&args![
            env.root(),
            "--max-entries",
            CAP.to_string(),
            "--max-reply-chars",
            "0"
        ]);

        let (tree, note) = tree_of(&server.call("directory_tree", json!({"path": "tree"})));
        let search = server.call("search_files", json!({"path": "tree", "pattern": "**"}));
        search.assert_ok();
        let (found, search_note) = split_note(&search.text);
        let found = found.lines().count();
        if cut {
            let expected = format!(
                "[truncated: stopped after {CAP} entries (--max-entries); narrow the path or add excludePatterns]"
            );
            assert_eq!(note.as_deref(), Some(expected.as_str()));
            assert_eq!(search_note, Some(expected.as_str()));
            assert!(count_nodes(&tree) <= CAP, "{}", count_nodes(&tree));
            assert!(found <= CAP, "{found}");
        } else {
            assert_eq!(note, None, "at the cap nothing is cut");
            assert_eq!(search_note, None);
            assert_eq!(count_nodes(&tree), CAP);
            assert_eq!(found, CAP);
        }
        still_works(&server);

        // In pages (the default reply budget), the cap bounds one call, and
        // its cursor goes on.
        let server = Server::start(&args![env.root(), "--max-entries", CAP.to_string()]);
        for (tool, args) in [
            ("directory_tree", json!({"path": "tree"})),
            ("search_files", json!({"path": "tree", "pattern": "**"})),
        ] {
            let r = server.call(tool, args.clone());
            let text = &r.assert_ok().text;
            let halted = format!(
                "\n\n[the walk stopped after {CAP} entries (--max-entries); more may follow: call again with the same arguments and cursor: \""
            );
            assert_eq!(text.contains(&halted), cut, "{text}");
            if !cut {
                continue;
            }
            let i = text.find(&halted).expect("halted") + halted.len();
            let cursor = &text[i..i + text[i..].find('"').expect("cursor end")];
            let mut next = args;
            next["cursor"] = json!(cursor);
            let rest = server.call(tool, next);
            let rest = &rest.assert_ok().text;
            assert!(!rest.contains("cursor"), "{rest}");
            let shown = |t: &str| match tool {
                "directory_tree" => t.matches("\"name\"").count(),
                _ => t.lines().count(),
            };
            let (first, _) = text.split_once("\n\n[").expect("notice");
            if tool == "directory_tree" {
                // The directory whose children go on is marked.
                assert!(first.contains("\"more\": true"), "{first}");
            }
            let continued = rest.matches("\"continued\": true").count();
            assert_eq!(
                shown(first) + shown(rest) - continued,
                CAP + 1,
                "{text}\n{rest}"
            );
        }
    }
}

/// Directories `d1/d2/.../d<dirs>` under `chain/`, with `f.txt` inside the
/// last one, at depth `dirs + 1`.
fn depth_fixture(env: &TestEnv, dirs: usize) -> String {
    let rel: Vec<String> = (1..=dirs).map(|i| format!("d{i}")).collect();
    let rel = format!("chain/{}/f.txt", rel.join("/"));
    env.write(&rel, "deep");
    rel
}

/// The depth and text of the deepest node of a `directory_tree` text (too
/// deep for serde_json's recursion limit): a node's fields at depth `d` are
/// indented by `4 * d` spaces.
fn deepest(text: &str) -> (usize, String) {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let (i, depth) = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with("\"name\": "))
        .map(|(i, l)| (i, indent(l) / 4))
        .max_by_key(|&(i, depth)| (depth, std::cmp::Reverse(i)))
        .expect("a node");
    let node: Vec<&str> = lines[i..]
        .iter()
        .map(|l| l.trim())
        .take_while(|l| !l.starts_with('}'))
        .collect();
    (depth, node.join(" "))
}

/// Nodes in a `directory_tree` text, by their `"name"` lines.
fn count_name_lines(text: &str) -> usize {
    text.lines()
        .filter(|l| l.trim_start().starts_with("\"name\": "))
        .count()
}

#[test]
fn walk_depth_at_and_past_max_depth() {
    // With the cap D, entries at depth D are listed and directories there
    // are not opened: a file at depth D is the deepest thing that fits.
    for (cap, flag) in [(5usize, true), (128, false)] {
        for (dirs, cut) in [(cap - 1, false), (cap, true)] {
            let env = TestEnv::new();
            let file = depth_fixture(&env, dirs);
            let server = if flag {
                Server::start(&args![
                    env.root(),
                    "--max-reply-chars",
                    "0",
                    "--max-depth",
                    cap.to_string()
                ])
            } else {
                Server::start(&args![env.root(), "--max-reply-chars", "0"])
            };
            let tree = server.call("directory_tree", json!({"path": "chain"}));
            tree.assert_ok();
            let (tree, note) = split_note(&tree.text);
            let search = server.call(
                "search_files",
                json!({"path": "chain", "pattern": "**/f.txt"}),
            );
            search.assert_ok();
            let (found, search_note) = split_note(&search.text);
            let (depth, node) = deepest(tree);
            assert_eq!(depth, cap, "cap {cap}");
            if cut {
                let expected = format!(
                    "[truncated: directories deeper than {cap} levels were not descended (--max-depth)]"
                );
                assert_eq!(note, Some(expected.as_str()), "cap {cap}");
                assert_eq!(search_note, Some(expected.as_str()));
                assert_eq!(found, "No matches found");
                // The directory at the cap is listed, not opened.
                assert_eq!(
                    node,
                    format!(r#""name": "d{cap}", "type": "directory", "children": []"#)
                );
            } else {
                assert_eq!(note, None, "cap {cap}: at the cap nothing is cut");
                assert_eq!(search_note, None);
                assert_eq!(found, file, "spelled under the path given, `chain`");
                assert_eq!(node, r#""name": "f.txt", "type": "file""#);
            }
            still_works(&server);
        }
    }
}

/// `--max-depth` itself is bounded: 512 is accepted and works on a tree of
/// the shape that overflowed the walk's stack before (a sibling directory at
/// every level makes rayon split there); 513 is refused at startup.
#[test]
#[ignore = "slow: a 512-level deep walk (about 4 s)"]
fn max_depth_flag_at_and_past_its_ceiling() {
    let env = TestEnv::new();
    let base = env.path("deep");
    let _cleanup = RemoveOnDrop(base.clone());
    deep_chain(&base, 520, true);

    let server = Server::start(&args![
        env.root(),
        "--max-reply-chars",
        "0",
        "--max-depth",
        "512"
    ]);
    let tree = server.call("directory_tree", json!({"path": "deep"}));
    tree.assert_ok();
    let (tree, note) = split_note(&tree.text);
    assert_eq!(
        note,
        Some("[truncated: directories deeper than 512 levels were not descended (--max-depth)]")
    );
    assert_eq!(deepest(tree).0, 512);
    assert_eq!(count_name_lines(tree), 2 * 512);
    let search = server.call("search_files", json!({"path": "deep", "pattern": "**/e"}));
    let (found, note) = split_note(&search.text);
    assert_eq!(found.lines().count(), 512);
    assert!(note.is_some_and(|n| n.contains("deeper than 512 levels")));
    still_works(&server);

    let (code, stderr) = Server::start_expect_fail(&args![env.root(), "--max-depth", "513"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("513 is not in 0..=512"), "{stderr}");
}

// ---------------------------------------------------------------------------
// Glob patterns
// ---------------------------------------------------------------------------

/// A brace pattern of exactly `len` bytes whose first alternative is `first`.
fn pattern_of_len(first: &str, len: usize) -> String {
    let p = format!("{{{first},{}}}", "z".repeat(len - first.len() - 3));
    assert_eq!(p.len(), len);
    p
}

fn search(server: &Server, pattern: &str, excludes: &[String]) -> Reply {
    server.call(
        "search_files",
        json!({"path": "g", "pattern": pattern, "excludePatterns": excludes}),
    )
}

fn tree_names(server: &Server, excludes: &[String]) -> Result<Vec<String>, String> {
    let r = server.call(
        "directory_tree",
        json!({"path": "g", "excludePatterns": excludes}),
    );
    if r.is_error {
        return Err(r.text);
    }
    let (tree, note) = tree_of(&r);
    assert_eq!(note, None);
    Ok(tree
        .as_array()
        .expect("array")
        .iter()
        .map(|n| n["name"].as_str().expect("name").to_owned())
        .collect())
}

#[test]
fn glob_pattern_size_and_complexity_at_and_past_the_limits() {
    let env = TestEnv::new();
    for f in ["g/a.txt", "g/b.txt", "g/sub/c.txt"] {
        env.write(f, "");
    }
    let server = Server::start(&args![env.root()]);
    // `search` passes `path: "g"`; matches are spelled under it.
    let g = |rel: &str| format!("g/{rel}");

    // Length: 1024 bytes is fine, 1025 is refused (pattern and excludes).
    let at = pattern_of_len("a.txt", 1024);
    assert_eq!(search(&server, &at, &[]).text, g("a.txt"));
    let past = pattern_of_len("a.txt", 1025);
    search(&server, &past, &[])
        .assert_error_contains("Glob pattern too long: 1025 bytes, the limit is 1024");
    let ex_at = vec![pattern_of_len("b.txt", 1024)];
    assert_eq!(search(&server, "*.txt", &ex_at).text, g("a.txt"));
    assert_eq!(tree_names(&server, &ex_at).unwrap(), ["a.txt", "sub"]);
    let ex_past = vec![pattern_of_len("b.txt", 1025)];
    search(&server, "*.txt", &ex_past).assert_error_contains("too long: 1025 bytes");
    assert!(
        tree_names(&server, &ex_past)
            .unwrap_err()
            .contains("too long: 1025 bytes")
    );

    // Brace nesting: 3 deep is fine, 4 is refused.
    let nest3 = "{a.txt,{b.txt,{c,d}}}";
    assert_eq!(
        search(&server, nest3, &[]).text,
        format!("{}\n{}", g("a.txt"), g("b.txt"))
    );
    search(&server, "{a.txt,{b.txt,{c,{d,e}}}}", &[])
        .assert_error_contains("braces nest deeper than 3");

    // Alternatives: 256 are fine, 257 are refused.
    let alts = |n: usize| {
        let mut v = vec!["n"; n - 1];
        v.push("a.txt");
        format!("{{{}}}", v.join(","))
    };
    assert_eq!(search(&server, &alts(256), &[]).text, g("a.txt"));
    search(&server, &alts(257), &[]).assert_error_contains("more than 256 alternatives");

    // Exclude patterns: 256 are fine, 257 are refused.
    let excludes = |n: usize| {
        let mut v: Vec<String> = (1..n).map(|i| format!("x{i}")).collect();
        v.push("b.txt".to_owned());
        v
    };
    assert_eq!(search(&server, "*.txt", &excludes(256)).text, g("a.txt"));
    assert_eq!(
        tree_names(&server, &excludes(256)).unwrap(),
        ["a.txt", "sub"]
    );
    search(&server, "*.txt", &excludes(257))
        .assert_error_contains("Too many exclude patterns: 257 given, the limit is 256");

    // Exclude patterns together: 16 KiB is fine, one byte more is refused.
    let mut total: Vec<String> = (0..16)
        .map(|i| pattern_of_len(&format!("q{i}"), 1024))
        .collect();
    total[15] = pattern_of_len("b.txt", 1024);
    assert_eq!(search(&server, "*.txt", &total).text, g("a.txt"));
    assert_eq!(tree_names(&server, &total).unwrap(), ["a.txt", "sub"]);
    total.push("b".to_owned());
    search(&server, "*.txt", &total)
        .assert_error_contains("too long together: 16385 bytes, the limit is 16384");
    assert!(
        tree_names(&server, &total)
            .unwrap_err()
            .contains("16385 bytes")
    );
    still_works(&server);
}

// ---------------------------------------------------------------------------
// Cancellation
// ---------------------------------------------------------------------------

/// `notifications/cancelled` for a running walk stops it: the server's CPU
/// time stops growing soon after, having used a fraction of what the same
/// walk costs uncancelled. (A walk of symlinks: each match is resolved, so
/// the walk is long for a tree that is quick to make.)
#[test]
#[ignore = "slow: a 100k-entry walk run whole, then cancelled (about 4 s)"]
fn cancelling_a_long_walk_stops_it() {
    // 100k matches: the whole walk's reply must stay under the 16 MiB line
    // limit of rmcp's client (the text is sent twice, as content and as
    // structuredContent).
    const DIRS: usize = 200;
    const LINKS: usize = 500;
    let env = Scratch::new();
    env.write("b/t.txt", "");
    let big = env.path("b");
    std::thread::scope(|s| {
        for half in 0..2 {
            let big = &big;
            s.spawn(move || {
                let root = ambient(big);
                for d in (half..DIRS).step_by(2) {
                    let name = format!("d{d:03}");
                    root.create_dir(&name).expect("mkdir");
                    let dir = root.open_dir(&name).expect("open");
                    for l in 0..LINKS {
                        rustix::fs::symlinkat("../t.txt", &dir, format!("l{l:03}"))
                            .expect("symlink");
                    }
                }
            });
        }
    });
    let server = Server::start(&args![env.root(), "--max-reply-chars", "0"]);
    let pid = server.pid().expect("server pid");
    let args = json!({"path": "b", "pattern": "**/l*"});

    // The whole walk, for scale (it also warms the caches).
    let before = cpu_ticks(pid);
    let full = server.call("search_files", args.clone());
    let full_ticks = cpu_ticks(pid) - before;
    full.assert_ok();
    assert_eq!(full.text.lines().count(), DIRS * LINKS);
    drop(full);

    // The same walk, cancelled once it has used a tenth of that.
    let start = cpu_ticks(pid);
    server.block_on(async {
        let peer = server.client().peer();
        let Value::Object(map) = args else {
            unreachable!()
        };
        let call =
            CallToolRequest::new(CallToolRequestParams::new("search_files").with_arguments(map));
        let handle = peer
            .send_cancellable_request(
                ClientRequest::CallToolRequest(call),
                PeerRequestOptions::no_options(),
            )
            .await
            .expect("send search_files");
        let deadline = Instant::now() + Duration::from_secs(30);
        while cpu_ticks(pid) - start < full_ticks / 10 {
            assert!(Instant::now() < deadline, "the walk never started");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        handle
            .cancel(Some("test: stop the walk".to_owned()))
            .await
            .expect("send notifications/cancelled");
    });
    let cancelled_at = cpu_ticks(pid) - start;

    // The server goes quiet: no CPU used over 300 ms.
    let mut last = cpu_ticks(pid);
    let mut quiet_since = Instant::now();
    let settled = wait_until(Duration::from_secs(20), || {
        let now = cpu_ticks(pid);
        if now > last + 1 {
            last = now;
            quiet_since = Instant::now();
        }
        quiet_since.elapsed() >= Duration::from_millis(300)
    });
    let used = cpu_ticks(pid) - start;
    eprintln!(
        "bounds: walk CPU ticks: whole {full_ticks}, cancelled at {cancelled_at}, total when cancelled {used}"
    );
    assert!(settled, "the cancelled walk kept the server busy");
    assert!(
        used * 2 < full_ticks,
        "the cancelled walk used {used} ticks of the whole walk's {full_ticks}"
    );
    // The session goes on, and so do walks.
    still_works(&server);
    let again = server.call("search_files", json!({"path": "b", "pattern": "d00*/l00*"}));
    assert_eq!(again.text.lines().count(), 100);
}
