//! Content search under a hostile client: its reply memory is counted
//! whole (text and `structuredContent`), planted ignore files cannot take
//! the memory, every reply keeps the reply budget in both of its forms, a
//! file whose matches outgrow a reply is cut between two matches (never
//! "No matches found"), and a matched line cannot forge an entry. Ground
//! truth only: VmHWM from `/proc`, reply sizes counted on the wire, matches
//! compared with `rg`.

use std::io::{BufRead as _, Write as _};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::*;

const TOOL: &str = "search_file_contents";

/// The peak RSS (VmHWM) of `pid` while `secs` pass, in KiB.
fn peak_over(pid: u32, secs: u64) -> u64 {
    let start = Instant::now();
    let mut last = 0;
    while start.elapsed() < Duration::from_secs(secs) {
        last = status_kib(pid, "VmHWM");
        std::thread::sleep(Duration::from_millis(50));
    }
    last
}

/// 600 pipelined searches whose replies each hold about 3 MiB as
/// `serde_json` values (5,000 matches of "a"), from a client that does not
/// read stdout: before, each reply was counted at its text (about 40 KB)
/// and RSS reached 3.4 GiB. Now each is counted as it sits on the heap, so
/// the server reads no further request once the budget is held, RSS levels
/// off under the budget plus a small constant, and every reply arrives once
/// the client reads.
#[test]
#[ignore = "slow: piles up unread search replies for 12 s, then reads 600"]
fn unread_search_replies_stay_within_the_reply_budget() {
    const BUDGET: u64 = 64 << 20;
    const SLACK_KIB: u64 = 24 * 1024;
    // 600 (not 1,200: each search takes about 0.2 s in a debug build) still
    // held 1.7 GiB before the fix.
    const CALLS: u64 = 600;
    let env = TestEnv::new();
    env.write("a.txt", "a\n".repeat(5000));
    let budget = BUDGET.to_string();
    let mut s = session(env.root(), &["--max-pending-reply-bytes", &budget]);
    let base = status_kib(s.pid, "VmRSS");
    let mut stdin = s.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        for id in 1..=CALLS {
            let req = call(
                id,
                TOOL,
                json!({"path": ".", "pattern": "a", "maxResults": 5000}),
            );
            if writeln!(stdin, "{req}").is_err() {
                break;
            }
        }
        stdin
    });
    let limit = base + BUDGET / 1024 + SLACK_KIB;
    let peak = peak_over(s.pid, 12);
    eprintln!(
        "search_bounds: unread searches: RSS {base} KiB -> peak {peak} KiB, limit {limit} KiB"
    );
    assert!(
        peak <= limit,
        "peak RSS {peak} KiB past {limit} KiB with unread search replies"
    );
    // Every reply arrives once the client reads.
    let mut seen = std::collections::BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut line = String::new();
    while seen.len() < CALLS as usize && Instant::now() < deadline {
        line.clear();
        if s.out().read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        let msg: Value = serde_json::from_str(&line).expect("a JSON line");
        if let Some(id) = msg["id"].as_u64() {
            assert!(msg["result"]["isError"] != json!(true), "{msg}");
            assert!(seen.insert(id), "id {id} answered twice");
        }
    }
    drop(writer.join());
    assert_eq!(seen.len(), CALLS as usize, "every search is answered");
}

/// Nine planted `.gitignore` files of about 1,000 KiB each, lines of
/// `*a*b*c*...` with 200 wildcards: under the 1 MiB size cap, but each cost
/// 631 MiB to compile (1,250 MiB for one default search). Now a file past
/// the bounds on rules and wildcards is not used, with a notice, and the
/// search stays under 64 MiB above idle.
#[test]
#[ignore = "slow: writes 9 MiB of ignore files and measures a search"]
fn planted_ignore_files_cannot_take_the_memory() {
    let env = TestEnv::new();
    let rule: String = ('a'..='z')
        .cycle()
        .take(200)
        .map(|c| format!("*{c}"))
        .collect();
    let file = format!("{rule}\n").repeat(1000 * 1024 / (rule.len() + 1));
    assert!(file.len() < 1024 * 1024);
    for i in 0..9 {
        let dir = (0..=i)
            .map(|k| format!("d{k}"))
            .collect::<Vec<_>>()
            .join("/");
        env.write(format!("{dir}/.gitignore"), &file);
        env.write(format!("{dir}/x.txt"), "needle\n");
    }
    // A small rule file within the bounds still applies.
    env.write(".gitignore", "skipped.txt\n");
    env.write("skipped.txt", "needle\n");
    env.write(".git/HEAD", "ref: refs/heads/main\n");
    let mut s = session(env.root(), &[]);
    let base = status_kib(s.pid, "VmRSS");
    let mut stdin = s.stdin.take().expect("stdin");
    let req = call(1, TOOL, json!({"path": ".", "pattern": "needle"}));
    writeln!(stdin, "{req}").expect("write");
    let mut line = String::new();
    s.out().read_line(&mut line).expect("a reply");
    let peak = status_kib(s.pid, "VmHWM");
    let msg: Value = serde_json::from_str(&line).expect("JSON");
    let text = msg["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    eprintln!("search_bounds: planted ignore files: RSS {base} KiB -> peak {peak} KiB");
    assert!(
        peak <= base + 64 * 1024,
        "peak RSS {peak} KiB, more than 64 MiB above {base} KiB"
    );
    assert!(
        text.contains(
            "[9 ignore file(s) over 1048576 bytes or past the ignore-rule bounds were not used]"
        ),
        "{text}"
    );
    // The planted files' directories are searched; the small rule applies.
    assert!(text.contains("d0/x.txt:1:needle"), "{text}");
    assert!(!text.contains("skipped.txt"), "{text}");

    // Files just within the bounds (20 such rules, 4,000 wildcards each
    // file) are used, and nine of them still cost little.
    let within = format!("{rule}\n").repeat(20);
    for i in 0..9 {
        let dir = (0..=i)
            .map(|k| format!("d{k}"))
            .collect::<Vec<_>>()
            .join("/");
        env.write(format!("{dir}/.gitignore"), &within);
    }
    let req = call(2, TOOL, json!({"path": ".", "pattern": "needle"}));
    writeln!(stdin, "{req}").expect("write");
    line.clear();
    s.out().read_line(&mut line).expect("a reply");
    let peak = status_kib(s.pid, "VmHWM");
    let msg: Value = serde_json::from_str(&line).expect("JSON");
    let text = msg["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    eprintln!("search_bounds: ignore files at the bound: peak {peak} KiB");
    assert!(!text.contains("ignore file(s)"), "{text}");
    assert!(text.contains("d0/x.txt:1:needle"), "{text}");
    assert!(
        peak <= base + 64 * 1024,
        "peak RSS {peak} KiB, more than 64 MiB above {base} KiB"
    );
}

/// A file with 2,000 matching lines (every other line of 4,000) searched
/// with `maxResults` from 1 to 5,000: the lines shown are a prefix of
/// `rg -n`'s, in order, and never empty; before, every `maxResults` of
/// 1,500 or more gave "No matches found" (the file's matches were one group
/// added whole or not at all).
#[test]
fn a_file_whose_matches_outgrow_the_reply_is_cut_between_matches() {
    let env = TestEnv::new();
    let log: String = (0..4000)
        .map(|i| {
            if i % 2 == 1 {
                format!("ERROR request {i} failed\n")
            } else {
                format!("INFO request {i} ok\n")
            }
        })
        .collect();
    env.write("logs/server.log", &log);
    let server = Server::start(&args![env.root()]);
    let rg = Command::new("rg")
        .args([
            "-n",
            "--no-heading",
            "--with-filename",
            "--no-config",
            "ERROR",
            "logs/server.log",
        ])
        .current_dir(env.root())
        .output();
    let rg_lines: Vec<String> = match rg {
        Ok(out) => String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect(),
        Err(e) => {
            assert!(std::env::var_os("CI").is_none(), "rg is needed in CI: {e}");
            eprintln!("skipping the rg comparison: {e}");
            return;
        }
    };
    assert_eq!(rg_lines.len(), 2000);
    for max in [
        1u64, 2, 10, 100, 500, 1000, 1400, 1500, 1999, 2000, 2001, 3000, 5000,
    ] {
        let r = server.call(
            TOOL,
            json!({"path": "logs", "pattern": "ERROR", "maxResults": max}),
        );
        r.assert_ok();
        assert!(!r.text.starts_with("No matches found"), "maxResults {max}");
        let shown: Vec<&str> = r
            .text
            .split("\n\n[")
            .next()
            .unwrap_or_default()
            .lines()
            .collect();
        assert!(!shown.is_empty(), "maxResults {max}: nothing shown");
        assert!(
            shown.len() as u64 <= max,
            "maxResults {max}: {}",
            shown.len()
        );
        for (ours, theirs) in shown.iter().zip(&rg_lines) {
            assert_eq!(*ours, theirs.as_str(), "maxResults {max}");
        }
        let data = r.structured.as_ref().expect("structuredContent");
        assert_eq!(data["matches"].as_array().map(Vec::len), Some(shown.len()));
        if (shown.len() as u64) < max.min(2000) {
            assert!(
                r.text.contains("[truncated: the reply reached"),
                "{}",
                r.text
            );
        }
    }
}

/// A matched line holding CR, NEL, U+2028 or terminal escapes prints as one
/// entry: its control characters are escaped, in the text and in the data.
#[test]
fn a_matched_line_cannot_forge_an_entry() {
    let env = TestEnv::new();
    let forged = "hello needle\r./id_rsa:1:-----BEGIN OPENSSH PRIVATE KEY-----\n\
                  needle nel\u{85}./x:2:forged\n\
                  needle ls\u{2028}./y:3:forged\u{2029}\n\
                  needle \x1b[2K\x1b[1A erased\n\
                  needle\ttab stays\n";
    env.write("notes.txt", forged);
    let server = Server::start(&args![env.root()]);
    for context in [0, 1] {
        let r = server.call(
            TOOL,
            json!({"path": "notes.txt", "pattern": "needle", "contextLines": context}),
        );
        r.assert_ok();
        for bad in ['\r', '\u{85}', '\u{2028}', '\u{2029}', '\u{1b}'] {
            assert!(!r.text.contains(bad), "{bad:?} in {:?}", r.text);
            let data = r.structured.clone().unwrap_or(Value::Null);
            for m in data["matches"].as_array().into_iter().flatten() {
                let texts = std::iter::once(&m["text"])
                    .chain(
                        m["before"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|l| &l["text"]),
                    )
                    .chain(
                        m["after"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|l| &l["text"]),
                    );
                for t in texts {
                    let t = t.as_str().unwrap_or_default();
                    assert!(!t.contains(bad), "{bad:?} in {m}");
                }
            }
        }
        let entries: Vec<&str> = r.text.lines().collect();
        assert_eq!(entries.len(), 5, "{entries:?}");
        assert!(
            entries.iter().all(|l| l.starts_with("notes.txt:")),
            "{entries:?}"
        );
        assert_eq!(
            entries[0],
            "notes.txt:1:hello needle\\r./id_rsa:1:-----BEGIN OPENSSH PRIVATE KEY-----"
        );
        assert_eq!(entries[3], "notes.txt:4:needle \\u{1b}[2K\\u{1b}[1A erased");
        assert_eq!(entries[4], "notes.txt:5:needle\ttab stays");
    }
}

/// A small deterministic generator (no extra crate): xorshift64*.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

/// Characters of `v` as compact JSON.
fn json_chars(v: &Value) -> usize {
    serde_json::to_string(v).map_or(0, |s| s.chars().count())
}

/// Random trees, random arguments and random budgets from the smallest
/// allowed up: no reply of any tool that can grow is over its budget, in
/// its text or in its `structuredContent`. (A text tool's
/// `structuredContent` is `{"content": text}`, the text itself; a search's
/// is its own data, which must fit as compact JSON.)
#[test]
fn every_reply_fits_the_budget_in_both_forms() {
    let mut rng = Rng(0x7075_6c73_2019);
    let words = [
        "alpha",
        "TODO",
        "needle",
        "x",
        "é",
        "ü日本",
        "\"q\"",
        "back\\slash",
        "tab\there",
    ];
    for round in 0..3 {
        let env = TestEnv::new();
        let files = 20 + rng.below(40);
        for f in 0..files {
            let depth = rng.below(4);
            let dir: String = (0..depth).map(|d| format!("d{}/", (f + d) % 5)).collect();
            let lines = 1 + rng.below(400);
            let text: String = (0..lines)
                .map(|_| {
                    let n = 1 + rng.below(30);
                    let mut l: Vec<&str> = (0..n).map(|_| *rng.pick(&words)).collect();
                    l.push("\n");
                    l.join(" ")
                })
                .collect();
            env.write(format!("{dir}f{f}.txt"), text);
        }
        for budget in [1024u64, 1500, 4096, 20_000] {
            let b = budget.to_string();
            let server = Server::start(&args![env.root(), "--max-reply-chars", b]);
            for _ in 0..6 {
                let pattern = *rng.pick(&["TODO", "needle", "a", "é|x", "q"]);
                let calls = [
                    (
                        TOOL,
                        json!({"path": ".", "pattern": pattern,
                            "maxResults": 1 + rng.below(5000),
                            "contextLines": rng.below(4),
                            "outputMode": *rng.pick(&["content", "content", "files", "count"])}),
                    ),
                    ("search_files", json!({"path": ".", "pattern": "**/*.txt"})),
                    ("directory_tree", json!({"path": "."})),
                    ("list_directory_with_sizes", json!({"path": "."})),
                    (
                        "read_text_file",
                        json!({"path": format!("f{}.txt", rng.below(files))}),
                    ),
                    (
                        "read_multiple_files",
                        json!({"paths": (0..files).map(|f| format!("f{f}.txt")).collect::<Vec<_>>()}),
                    ),
                ];
                for (tool, args) in calls {
                    let r = server.call(tool, args.clone());
                    if r.is_error {
                        continue;
                    }
                    let chars = r.text.chars().count() as u64;
                    assert!(
                        chars <= budget,
                        "round {round}, budget {budget}: {tool} {args}: text of {chars} characters"
                    );
                    let s = r.structured.clone().unwrap_or(Value::Null);
                    if tool == TOOL {
                        let n = json_chars(&s) as u64;
                        assert!(
                            n <= budget,
                            "round {round}, budget {budget}: {tool} {args}: structuredContent of {n} characters"
                        );
                    } else {
                        assert_eq!(
                            s["content"],
                            json!(r.text),
                            "{tool}: structuredContent is the text"
                        );
                    }
                }
            }
        }
    }
}

/// 1 GiB without a newline and 160 MiB of lines: the peak RSS stays under
/// 100 MiB.
#[test]
#[ignore = "slow: searches 1 GiB sparse files and 160 MiB of lines in a debug build"]
fn memory_stays_bounded_on_huge_files() {
    use std::io::Write as _;
    let env = TestEnv::new();
    // No newline in 1 GiB: the line buffer stops at its heap limit.
    std::fs::File::create(env.path("zeros.bin"))
        .and_then(|f| f.set_len(1 << 30))
        .expect("zeros");
    // 160 MiB of short lines, the match at the very end.
    let mut f =
        std::io::BufWriter::new(std::fs::File::create(env.path("lines.log")).expect("lines"));
    let chunk = "just a line of text\n".repeat(1 << 16);
    while f.get_ref().metadata().expect("md").len() < 160 << 20 {
        f.write_all(chunk.as_bytes()).expect("write");
        f.flush().expect("flush");
    }
    f.write_all(b"NEEDLE at the end\n").expect("needle");
    drop(f);
    let server = Server::start(&args![env.root()]);
    let pid = server.pid().expect("pid");
    let r = super::contents::search(
        &server,
        json!({"path": "zeros.bin", "pattern": "x", "binary": true}),
    );
    assert!(
        r.text.contains("could not be searched to the end"),
        "{}",
        r.text
    );
    let r = super::contents::search(&server, json!({"path": "zeros.bin", "pattern": "x"}));
    assert!(r.text.contains("binary file(s) skipped"), "{}", r.text);
    let r = super::contents::search(
        &server,
        json!({"path": ".", "pattern": "NEEDLE", "noIgnore": true}),
    );
    assert!(r.text.ends_with(":NEEDLE at the end"), "{}", r.text);
    let hwm = status_kib(pid, "VmHWM");
    eprintln!("search_file_contents: peak RSS {hwm} KiB");
    assert!(hwm < 100 * 1024, "peak RSS {hwm} KiB");
}
