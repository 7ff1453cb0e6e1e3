//! `search_file_contents`: output modes and context against `rg` on the same
//! fixture, ignore-file rules, hidden and binary files, odd names and
//! contents, the bounds and their notices, structured content, progress,
//! and the escape classes (symlinks out, `/proc` links, FIFOs) in a tree
//! searched whole. Replies are scanned for the outside canary.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{CANARY_CONTENT, RawServer, Reply, Server, TestEnv};

const TOOL: &str = "search_file_contents";

/// A tree with every default filter in play: a git repository with
/// `.gitignore` (nested, with a `!` re-include), `.ignore`,
/// `.git/info/exclude`, hidden files, a binary file and context to show.
fn rg_fixture() -> TestEnv {
    let env = TestEnv::new();
    env.mkdir(".git/info");
    env.write(".git/info/exclude", "excluded.txt\n");
    env.write(".git/config", "TODO in git config\n");
    env.write(".gitignore", "*.log\nbuild/\n");
    env.write(".ignore", "ignored-by-dot-ignore.txt\n");
    env.write(
        "a.txt",
        "one\nTODO first\nthree\nfour\nfive\nsix\nTODO second\neight\n",
    );
    env.write("b.md", "nothing here\n");
    env.write("x.log", "TODO in a log\n");
    env.write("keep/x.log", "TODO kept log\n");
    env.write("keep/.gitignore", "!x.log\n");
    env.write("build/out.txt", "TODO in build\n");
    env.write("excluded.txt", "TODO excluded\n");
    env.write("ignored-by-dot-ignore.txt", "TODO dot ignore\n");
    env.write(".hidden.txt", "TODO hidden\n");
    env.write(".hdir/inner.txt", "TODO in hidden dir\n");
    env.write("bin.dat", b"\0TODO binary\n");
    env.write(
        "src/lib.rs",
        "// todo: lower\nfn main() {}\n// TODO upper\n",
    );
    env.write("src/deep/mod.rs", "x\nTODO deep\ny\n");
    env.write("sub/.gitignore", "*.tmp\n");
    env.write("sub/a.tmp", "TODO tmp\n");
    env.write("sub/b.txt", "TODO sub b\n");
    env.write("crlf.txt", "TODO crlf\r\nnext\r\n");
    env.write("dots.txt", "a.c\nabc\n");
    env
}

/// `rg` on `dir` (run inside it, so its paths start with `./`), with `args`;
/// `None` (after saying why) when `rg` is not installed and `CI` is unset.
fn rg(dir: &Path, args: &[&str]) -> Option<String> {
    let out = match Command::new("rg")
        .args([
            "--no-heading",
            "--with-filename",
            "--sort",
            "path",
            "--no-config",
        ])
        .args(args)
        .arg(".")
        .current_dir(dir)
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "rg is needed in CI (apt-get install ripgrep): {e}"
            );
            eprintln!("skipping the rg comparison: rg not runnable ({e})");
            return None;
        }
    };
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "rg failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    Some(
        text.trim_end_matches('\n')
            .split('\n')
            .map(escaped_like_tuls)
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// A line of `rg`'s output with its control characters (but the tab) and
/// Unicode line separators escaped as tuls prints a matched line's text, so
/// a line cannot forge an entry (`\r` is `\\r`, ESC is `\\u{1b}`). rg's
/// paths here hold none.
fn escaped_like_tuls(line: &str) -> String {
    let mut out = String::new();
    for c in line.chars() {
        match c {
            '\t' => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

/// Our text, printed under the client's spelling `given` of the searched
/// directory, with that directory spelled `.`, as `rg` spells it.
fn as_rg(text: &str, given: &str) -> String {
    let t = text.replace(&format!("{}/", given.trim_end_matches('/')), "./");
    if t == "No matches found" {
        String::new()
    } else {
        t
    }
}

/// One content search that must succeed; its reply is scanned for the
/// outside canary.
pub(super) fn search(server: &Server, args: Value) -> Reply {
    let r = server.call(TOOL, args);
    r.assert_ok();
    assert!(
        !r.raw.to_string().contains(CANARY_CONTENT),
        "canary leaked: {}",
        r.raw
    );
    r
}

#[test]
fn modes_and_filters_match_rg() {
    let env = rg_fixture();
    let server = Server::start(&args![env.root()]);
    let root = env.root();
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({"pattern": "TODO"}), vec!["-n", "TODO"]),
        (
            json!({"pattern": "TODO", "contextLines": 2}),
            vec!["-n", "-C2", "TODO"],
        ),
        (
            json!({"pattern": "TODO", "contextLines": 1}),
            vec!["-n", "-C1", "TODO"],
        ),
        (
            json!({"pattern": "todo", "caseInsensitive": true}),
            vec!["-n", "-i", "todo"],
        ),
        (
            json!({"pattern": "TODO", "outputMode": "files"}),
            vec!["-l", "TODO"],
        ),
        (
            json!({"pattern": "TODO", "outputMode": "count"}),
            vec!["-c", "TODO"],
        ),
        (
            json!({"pattern": "TODO", "hidden": true}),
            vec!["-n", "--hidden", "-g", "!.git", "TODO"],
        ),
        (
            json!({"pattern": "TODO", "noIgnore": true}),
            vec!["-n", "--no-ignore", "TODO"],
        ),
        (
            json!({"pattern": "TODO", "include": ["*.rs"]}),
            vec!["-n", "-g", "*.rs", "TODO"],
        ),
        (
            json!({"pattern": "TODO", "include": ["src/**"]}),
            vec!["-n", "-g", "src/**", "TODO"],
        ),
        (
            json!({"pattern": "a.c", "literal": true}),
            vec!["-n", "-F", "a.c"],
        ),
        (json!({"pattern": "a.c"}), vec!["-n", "a.c"]),
        (json!({"pattern": r"^\w+$"}), vec!["-n", r"^\w+$"]),
    ];
    for (mut args, rg_args) in cases {
        args["path"] = json!(root.display().to_string());
        let ours = search(&server, args.clone());
        let Some(theirs) = rg(&root, &rg_args) else {
            return;
        };
        assert_eq!(
            as_rg(&ours.text, &root.display().to_string()),
            theirs,
            "{args} vs rg {rg_args:?}"
        );
    }
    // A subdirectory of the repository: the ignore files above it count.
    let sub = root.join("sub");
    let ours = search(&server, json!({"path": "sub", "pattern": "TODO"}));
    if let Some(theirs) = rg(&sub, &["-n", "TODO"]) {
        assert_eq!(as_rg(&ours.text, "sub"), theirs);
    }
    let keep = root.join("keep");
    let ours = search(&server, json!({"path": "keep", "pattern": "TODO"}));
    if let Some(theirs) = rg(&keep, &["-n", "TODO"]) {
        assert_eq!(as_rg(&ours.text, "keep"), theirs);
    }
}

#[test]
fn ignore_rules_hidden_and_binary() {
    let env = rg_fixture();
    let server = Server::start(&args![env.root()]);
    let files = |extra: Value| -> Vec<String> {
        let mut args = json!({"path": ".", "pattern": "TODO", "outputMode": "files"});
        for (k, v) in extra.as_object().expect("object") {
            args[k] = v.clone();
        }
        let r = search(&server, args);
        // Printed under the client's spelling of `path` (".").
        r.structured.expect("structured")["files"]
            .as_array()
            .expect("files")
            .iter()
            .map(|f| f["path"].as_str().expect("path").replacen("./", "", 1))
            .collect()
    };
    let default = files(json!({}));
    assert_eq!(
        default,
        [
            "a.txt",
            "crlf.txt",
            "keep/x.log",
            "src/deep/mod.rs",
            "src/lib.rs",
            "sub/b.txt"
        ]
    );
    let all = files(json!({"noIgnore": true, "hidden": true, "binary": true}));
    for f in [
        "x.log",
        "build/out.txt",
        "excluded.txt",
        "ignored-by-dot-ignore.txt",
        ".hidden.txt",
        ".hdir/inner.txt",
        "bin.dat",
        "sub/a.tmp",
        ".git/config",
    ] {
        assert!(all.iter().any(|a| a == f), "{f} not in {all:?}");
    }
    // `.git` stays skipped while ignore files are honoured.
    let hidden = files(json!({"hidden": true}));
    assert!(hidden.iter().any(|a| a == ".hidden.txt"));
    assert!(!hidden.iter().any(|a| a.starts_with(".git/")), "{hidden:?}");
    // Binary skipped by default, said when nothing else matched.
    let r = search(&server, json!({"path": "bin.dat", "pattern": "TODO"}));
    assert!(r.text.starts_with("No matches found"), "{}", r.text);
    assert!(r.text.contains("1 binary file(s) skipped"), "{}", r.text);
    let r = search(
        &server,
        json!({"path": "bin.dat", "pattern": "TODO", "binary": true}),
    );
    assert!(
        r.text.contains("bin.dat:1:\\u{0}TODO binary"),
        "{:?}",
        r.text
    );
    // An excluded directory is not entered.
    let r = files(json!({"excludePatterns": ["src"]}));
    assert!(!r.iter().any(|f| f.starts_with("src/")), "{r:?}");
}

#[test]
fn structured_content_carries_the_matches() {
    let env = rg_fixture();
    let server = Server::start(&args![env.root()]);
    let r = search(
        &server,
        json!({"path": "a.txt", "pattern": "TODO", "contextLines": 1}),
    );
    // A file searched by itself is printed as the client spelled it.
    let p = "a.txt";
    assert_eq!(
        r.text,
        format!(
            "{p}-1-one\n{p}:2:TODO first\n{p}-3-three\n--\n{p}-6-six\n{p}:7:TODO second\n{p}-8-eight"
        )
    );
    let s = r.structured.expect("structured");
    // The data does not repeat the text: each form fits the budget alone.
    assert!(s.get("content").is_none(), "{s}");
    assert_eq!(s["truncated"], json!(false));
    assert_eq!(s["filesSearched"], json!(1));
    assert_eq!(
        s["matches"],
        json!([
            {"path": p, "line": 2, "text": "TODO first",
             "before": [{"line": 1, "text": "one"}], "after": [{"line": 3, "text": "three"}]},
            {"path": p, "line": 7, "text": "TODO second",
             "before": [{"line": 6, "text": "six"}], "after": [{"line": 8, "text": "eight"}]},
        ])
    );
    // Adjacent matches share one group; lines between them are split.
    env.write("adj.txt", "m1\nc\nm2\n");
    let r = search(
        &server,
        json!({"path": "adj.txt", "pattern": "^m", "contextLines": 2}),
    );
    let m = &r.structured.expect("structured")["matches"];
    assert_eq!(m[0]["after"], json!([{"line": 2, "text": "c"}]));
    assert_eq!(m[1]["before"], json!([]));
    // Counts and files have their own shapes.
    let r = search(
        &server,
        json!({"path": ".", "pattern": "TODO", "outputMode": "count"}),
    );
    let s = r.structured.expect("structured");
    assert_eq!(s["files"][0], json!({"path": "./a.txt", "count": 2}));
    assert!(s.get("matches").is_none());
    // The output schema is listed.
    let tool = server
        .list_tools()
        .into_iter()
        .find(|t| t.name == TOOL)
        .expect("listed");
    let schema = serde_json::to_value(&tool.output_schema).expect("schema");
    assert_eq!(schema["required"], json!(["filesSearched", "truncated"]));
}

#[test]
fn odd_names_and_contents() {
    let env = TestEnv::new();
    env.write("new\nline.txt", "TODO newline name\n");
    let bad = OsStr::from_bytes(b"bad-\xff-name.txt");
    std::fs::write(env.root().join(bad), "TODO bad name\n").expect("write");
    env.write("latin1.txt", b"caf\xe9 TODO \xff\n");
    env.write("long.txt", format!("TODO {}\n", "é".repeat(2000)));
    env.write("noeol.txt", "last TODO");
    let server = Server::start(&args![env.root()]);
    let r = search(&server, json!({"path": ".", "pattern": "TODO"}));
    // Paths are under the client's spelling; a control character in a name
    // is escaped in the text (it cannot forge a line) and exact in the data.
    let root = ".";
    assert!(
        r.text
            .contains(&format!("{root}/bad-\u{fffd}-name.txt:1:TODO bad name")),
        "{}",
        r.text
    );
    assert!(
        r.text
            .contains(&format!("{root}/new\\nline.txt:1:TODO newline name"))
    );
    assert!(
        r.text
            .contains(&format!("{root}/latin1.txt:1:caf\u{fffd} TODO \u{fffd}"))
    );
    assert!(r.text.contains(&format!("{root}/noeol.txt:1:last TODO")));
    let long = r
        .text
        .lines()
        .find(|l| l.contains("long.txt"))
        .expect("long");
    assert!(
        long.ends_with("[... line cut at 500 of 4005 bytes]"),
        "{long}"
    );
    assert!(long.len() < 600, "{}", long.len());
    let s = r.structured.expect("structured");
    let names: Vec<&str> = s["matches"]
        .as_array()
        .expect("matches")
        .iter()
        .map(|m| m["path"].as_str().expect("path"))
        .collect();
    assert!(names.contains(&format!("{root}/new\nline.txt").as_str()));
}

#[test]
fn bounds_and_notices() {
    let env = TestEnv::new();
    for i in 0..30 {
        env.write(format!("f{i:02}.txt"), "TODO a\nTODO b\n".repeat(10));
    }
    let server = Server::start(&args![env.root()]);
    // maxResults: exactly that many, in path order, and said.
    let r = search(
        &server,
        json!({"path": ".", "pattern": "TODO", "maxResults": 25}),
    );
    assert_eq!(r.text.lines().filter(|l| l.contains(":TODO")).count(), 25);
    assert!(r.text.lines().next().expect("line").contains("f00.txt:1:"));
    assert!(
        r.text.contains("[truncated: stopped at maxResults=25"),
        "{}",
        r.text
    );
    assert_eq!(r.structured.as_ref().expect("s")["truncated"], json!(true));
    let again = search(
        &server,
        json!({"path": ".", "pattern": "TODO", "maxResults": 25}),
    );
    assert_eq!(again.text, r.text, "same result every run");
    // Exactly all: not cut.
    let r = search(
        &server,
        json!({"path": "f00.txt", "pattern": "TODO", "maxResults": 20}),
    );
    assert!(!r.text.contains("truncated"), "{}", r.text);
    let r = search(
        &server,
        json!({"path": ".", "pattern": "TODO", "outputMode": "files", "maxResults": 3}),
    );
    assert_eq!(r.text.lines().take_while(|l| !l.is_empty()).count(), 3);
    assert!(r.text.contains("stopped at maxResults=3 files"));
    // The reply budget: cut at a whole group, with a notice.
    env.write(
        "big.txt",
        format!("TODO {}\n", "x".repeat(400)).repeat(3000),
    );
    let r = search(
        &server,
        json!({"path": "big.txt", "pattern": "TODO", "maxResults": 5000, "contextLines": 0}),
    );
    assert!(r.text.chars().count() < 62_500, "{}", r.text.len());
    assert!(
        r.text
            .contains("its 62500-character limit (--max-reply-chars)"),
        "{}",
        &r.text[r.text.len() - 300..]
    );
    // Argument bounds and bad patterns: typed errors.
    server
        .call(
            TOOL,
            json!({"path": ".", "pattern": "x", "contextLines": 11}),
        )
        .assert_error_contains("contextLines is 11, it must be between 0 and 10");
    server
        .call(
            TOOL,
            json!({"path": ".", "pattern": "x", "maxResults": 5001}),
        )
        .assert_error_contains("maxResults is 5001");
    server
        .call(TOOL, json!({"path": ".", "pattern": "x", "maxResults": 0}))
        .assert_error_contains("maxResults is 0");
    server
        .call(TOOL, json!({"path": ".", "pattern": "(unclosed"}))
        .assert_error_contains("Invalid regular expression");
    server
        .call(TOOL, json!({"path": ".", "pattern": r"\w{1000}{1000}"}))
        .assert_error_contains("Regular expression too big");
    server
        .call(TOOL, json!({"path": ".", "pattern": "x".repeat(9000)}))
        .assert_error_contains("Regular expression too long");
    server
        .call(TOOL, json!({"path": ".", "pattern": "x", "bogus": 1}))
        .assert_error_contains("unknown field");
}

#[test]
fn escapes_in_the_tree_are_not_followed() {
    let env = TestEnv::new();
    env.write("inside.txt", "INSIDE line\n");
    env.symlink(env.canary(), "link-to-canary");
    env.symlink(env.outside(), "link-to-outside-dir");
    env.symlink("../outside/canary.txt", "rel-link-out");
    env.symlink("/proc/self/root", "proc-root");
    env.symlink("/proc/self/cwd", "proc-cwd");
    env.symlink("inside.txt", "inside-link");
    env.mkfifo("pipe");
    env.mkfifo("sub/pipe.txt");
    // A sibling of the root whose name starts with the root's.
    let sibling = env.base().join("root-sibling");
    std::fs::create_dir_all(&sibling).expect("sibling");
    std::fs::write(sibling.join("s.txt"), CANARY_CONTENT).expect("sibling file");
    for extra in [&[][..], &["--no-landlock"][..]] {
        let mut a = args![env.root()];
        a.extend(extra.iter().map(Into::into));
        let server = Server::start(&a);
        let started = Instant::now();
        for args in [
            json!({"path": ".", "pattern": "."}),
            json!({"path": ".", "pattern": ".", "hidden": true, "noIgnore": true, "binary": true}),
            json!({"path": ".", "pattern": "CANARY", "outputMode": "count"}),
            json!({"path": "sub", "pattern": "."}),
        ] {
            let r = search(&server, args);
            assert!(
                !r.text.contains("link"),
                "a symlink was searched: {}",
                r.text
            );
            assert!(!r.text.contains("pipe"), "a FIFO was searched: {}", r.text);
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "a FIFO blocked"
        );
        for p in [
            "link-to-canary",
            "link-to-outside-dir",
            "rel-link-out",
            "proc-root",
            "proc-cwd",
            "..",
            "../outside",
            "sub/../..",
        ] {
            let r = server.call(TOOL, json!({"path": p, "pattern": "."}));
            r.assert_error_contains("Access denied - path outside allowed directories");
            assert!(!r.raw.to_string().contains(CANARY_CONTENT));
        }
        let sib = sibling.display().to_string();
        server
            .call(TOOL, json!({"path": sib, "pattern": "."}))
            .assert_error_contains("Access denied - path outside allowed directories");
        let r = server.call(TOOL, json!({"path": "pipe", "pattern": "."}));
        r.assert_error_contains("FIFO");
        // A symlink given as the path, pointing inside, is searched.
        let r = search(&server, json!({"path": "inside-link", "pattern": "INSIDE"}));
        assert!(r.text.ends_with("inside-link:1:INSIDE line"), "{}", r.text);
    }
    env.assert_canary_intact();
}

#[test]
fn progress_is_reported_when_asked() {
    let env = TestEnv::new();
    for d in 0..20 {
        for f in 0..20 {
            env.write(format!("d{d:02}/f{f:02}.txt"), "TODO\n");
        }
    }
    let mut server =
        RawServer::start_with_env(&args![env.root()], &[("TULS_DEBUG_PROGRESS_NOW", "1")]);
    server.initialize("2025-06-18");
    for (tool, args) in [
        (
            TOOL,
            json!({"path": ".", "pattern": "TODO", "outputMode": "count"}),
        ),
        ("directory_tree", json!({"path": "."})),
        ("search_files", json!({"path": ".", "pattern": "**/*.txt"})),
    ] {
        let resp = server.request(
            "tools/call",
            json!({"name": tool, "arguments": args, "_meta": {"progressToken": "tok-1"}}),
        );
        assert!(resp["result"]["isError"] != json!(true), "{resp}");
        let mut progress = Vec::new();
        while let Some(msg) = server.recv(Duration::from_millis(300)) {
            if msg["method"] == "notifications/progress" {
                assert_eq!(msg["params"]["progressToken"], "tok-1");
                progress.push(msg["params"]["progress"].as_f64().expect("progress"));
            }
        }
        assert!(!progress.is_empty(), "{tool}: no progress notification");
        assert!(
            progress.windows(2).all(|w| w[0] < w[1]),
            "{tool}: progress must grow: {progress:?}"
        );
        // Without a token, none.
        let resp = server.request("tools/call", json!({"name": tool, "arguments": args}));
        assert!(resp["result"]["isError"] != json!(true), "{resp}");
        while let Some(msg) = server.recv(Duration::from_millis(300)) {
            assert_ne!(
                msg["method"], "notifications/progress",
                "{tool}: unasked progress"
            );
        }
    }
}

#[test]
fn the_deadline_cuts_and_says_so() {
    let env = TestEnv::new();
    for i in 0..200 {
        env.write(format!("d{}/f{i:03}.txt", i % 10), "TODO\n");
    }
    let opts = crate::util::Options::new().env("TULS_DEBUG_SEARCH_DEADLINE_MS", "0");
    let server = Server::start_with(&args![env.root()], opts);
    let r = search(&server, json!({"path": ".", "pattern": "TODO"}));
    assert!(
        r.text
            .contains("[truncated: the search stopped at its time limit (0s)"),
        "{}",
        r.text
    );
    assert_eq!(r.structured.expect("structured")["truncated"], json!(true));
}
