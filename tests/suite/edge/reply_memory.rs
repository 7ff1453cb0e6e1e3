//! The reply budget at the MCP edge (`--max-pending-reply-bytes`): a reply
//! whose file grows while it is read, batches waiting for budget, edits with
//! a large `newText` and numbered reads of empty lines all stay within it.
//! Ground truth: RSS and threads from `/proc`, replies on the wire.

use std::io::{BufRead as _, Write as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::util::*;

use super::in_flight::count_dir;

/// [`session`] with a reply budget of `budget` bytes and no reply cap.
fn budgeted(root: std::path::PathBuf, budget: u64) -> Session {
    let budget = budget.to_string();
    session(
        root,
        &[
            "--max-pending-reply-bytes",
            &budget,
            "--max-reply-chars",
            "0",
        ],
    )
}

/// A file that grows after it was opened (a log being appended to) must
/// not let a read hold more than its share of the reply budget: with a
/// client that does not read its replies, the server's memory levels off
/// near `--max-pending-reply-bytes`, however much the files grew. (This
/// end-to-end check passed before the fix too: a reader chasing an appender
/// rarely gets far past the size it saw. The deterministic check is the
/// unit test `fs::file::tests::bytes_past_the_size_at_open_are_covered_before_they_are_held`.)
#[test]
#[ignore = "slow: appends hundreds of MiB while about 40 reads race it"]
fn a_file_growing_while_it_is_read_does_not_escape_the_reply_budget() {
    const BUDGET: u64 = 4 << 20;
    const GROWN: usize = 8 << 20;
    const CALLS: u64 = 40;
    const SLACK_KIB: u64 = 40 * 1024;
    let env = TestEnv::new();
    let log = env.write("grow.log", "");
    // The appender: the file starts empty, grows to GROWN in 64 KiB
    // appends as fast as it can, is truncated, and again.
    let stop = Arc::new(AtomicBool::new(false));
    let appender = {
        let stop = stop.clone();
        let log = log.clone();
        std::thread::spawn(move || {
            let chunk = vec![b'a'; 64 << 10];
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&log)
                .expect("open log");
            while !stop.load(Ordering::Relaxed) {
                f.set_len(0).expect("truncate");
                for _ in 0..GROWN / chunk.len() {
                    f.write_all(&chunk).expect("append");
                }
            }
        })
    };
    let mut s = budgeted(env.root(), BUDGET);
    let (pid, mut stdin) = (s.pid, s.take_stdin());
    let base = status_kib(pid, "VmRSS");
    // Written from a thread: the server may stop reading (back-pressure).
    let path = env.path_str("grow.log");
    let writer = std::thread::spawn(move || {
        for id in 1..=CALLS {
            let req = call(id, "read_text_file", json!({"path": path}));
            if writeln!(stdin, "{req}").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        stdin
    });
    // Never read: the peak must level off under the budget plus slack.
    let limit = base + BUDGET / 1024 + SLACK_KIB;
    let mut last = 0;
    let mut still = Instant::now();
    let mut over = None;
    while still.elapsed() < Duration::from_secs(3) {
        let hwm = status_kib(pid, "VmHWM");
        if hwm > limit {
            over = Some(hwm);
            break;
        }
        if hwm != last {
            last = hwm;
            still = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    let _ = s.child.kill();
    let _ = s.child.wait();
    let _ = appender.join();
    let _ = writer.join();
    if let Some(hwm) = over {
        panic!(
            "peak RSS {hwm} KiB past {limit} KiB (started at {base} KiB) with unread replies of a growing file"
        );
    }
    eprintln!("review_edge: peak RSS {last} KiB (started at {base} KiB, limit {limit} KiB)");
}

/// The server's filesystem worker threads (named `tuls-fs-N`).
fn worker_threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|t| {
                    std::fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|c| c.starts_with("tuls-fs-"))
                })
                .count()
        })
        .unwrap_or(0)
}

/// `read_multiple_files` grows its reply budget file by file, and a call
/// that must wait for more gives back what it holds first (so that two
/// calls cannot deadlock) — while it still holds the text of the files it
/// has read. With many workers (started by a burst of slow calls), each
/// waiting call then holds its first file uncounted: the server's memory
/// must still level off near `--max-pending-reply-bytes` for a client that
/// does not read its replies.
#[test]
#[ignore = "slow: starts the whole worker pool with 32 searches of a 30 MB file"]
fn batches_waiting_for_more_budget_hold_nothing_uncounted() {
    const BUDGET: u64 = 16 << 20;
    const SLACK_KIB: u64 = 12 * 1024;
    const BATCHES: u64 = 30;
    let env = TestEnv::new();
    env.write(
        "big.txt",
        "abcdefghij".repeat(10).add_line().repeat(300_000),
    );
    // The first file takes most of the budget (four bytes per byte), the
    // second then needs all of it.
    let line = "0123456789abcdef".repeat(4).add_line();
    env.write("f1.txt", line.repeat(48_000)); // ~3 MiB
    env.write("f2.txt", line.repeat(16_000)); // ~1 MiB
    let mut s = budgeted(env.root(), BUDGET);
    let (pid, mut stdin) = (s.pid, s.take_stdin());
    let mut stdout = s.stdout.take().expect("stdout");
    // Slow calls, paced so that the queue stalls and workers are added.
    for id in 1..=32 {
        let req = call(
            id,
            "search_file_contents",
            json!({"path": env.path_str("big.txt"), "pattern": "zq[0-9]+x"}),
        );
        writeln!(stdin, "{req}").expect("write");
        stdin.flush().expect("flush");
        std::thread::sleep(Duration::from_millis(25));
    }
    let mut reply = Vec::new();
    for _ in 0..32 {
        reply.clear();
        stdout.read_until(b'\n', &mut reply).expect("search reply");
    }
    let threads = count_dir(format!("/proc/{pid}/task"));
    let workers = worker_threads(pid);
    let base = status_kib(pid, "VmRSS");
    let hwm_before = status_kib(pid, "VmHWM");
    let paths = [env.path_str("f1.txt"), env.path_str("f2.txt")];
    // A search for every worker, then the batches: they queue behind the
    // searches, so they are all read before any of them runs, and then
    // run side by side.
    let mut burst = String::new();
    let searches = (workers as u64 + 2).min(64 - BATCHES);
    for id in 50..50 + searches {
        let req = call(
            id,
            "search_file_contents",
            json!({"path": env.path_str("big.txt"), "pattern": "zq[0-9]+x"}),
        );
        burst.push_str(&req.to_string());
        burst.push('\n');
    }
    for id in 100..100 + BATCHES {
        burst.push_str(&call(id, "read_multiple_files", json!({"paths": paths})).to_string());
        burst.push('\n');
    }
    // From a thread: the server may stop reading (back-pressure).
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(burst.as_bytes());
        let _ = stdin.flush();
        stdin
    });
    let limit = base.max(hwm_before) + BUDGET / 1024 + SLACK_KIB;
    let mut last = 0;
    let mut over = None;
    // The searches take a few seconds on a small machine; then the batches.
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(12) && over.is_none() {
        let hwm = status_kib(pid, "VmHWM");
        if hwm > limit {
            over = Some(hwm);
        }
        last = hwm;
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = s.child.kill();
    let _ = s.child.wait();
    let _ = writer.join();
    eprintln!(
        "review_edge: {threads} threads, {workers} workers; RSS {base} KiB (peak before {hwm_before} KiB) -> peak {last} KiB, limit {limit} KiB"
    );
    if let Some(hwm) = over {
        panic!(
            "peak RSS {hwm} KiB past {limit} KiB: batches waiting for budget held their first files uncounted"
        );
    }
}

/// `edit_file` builds a reply from the request's new text as much as from
/// the file: a tiny file edited with a large `newText` (dry run, so the file
/// stays as it is) makes a large diff. Its reply budget must cover that,
/// not only the file's size: with a client that does not read its replies,
/// the server's memory levels off near `--max-pending-reply-bytes`.
#[test]
#[ignore = "slow: writes 80 MiB of edit requests"]
fn edits_with_large_new_text_stay_within_the_reply_budget() {
    const BUDGET: u64 = 16 << 20;
    const SLACK_KIB: u64 = 24 * 1024;
    const EDITS: u64 = 40;
    const NEW: usize = 2 << 20;
    let env = TestEnv::new();
    env.write("tiny.txt", "a\n");
    let mut s = budgeted(env.root(), BUDGET);
    let (pid, mut stdin) = (s.pid, s.take_stdin());
    let base = status_kib(pid, "VmRSS");
    let path = env.path_str("tiny.txt");
    let writer = std::thread::spawn(move || {
        let new = "b".repeat(NEW - 1) + "\n";
        for id in 1..=EDITS {
            let req = call(
                id,
                "edit_file",
                json!({"path": path, "dryRun": true,
                    "edits": [{"oldText": "a\n", "newText": new}]}),
            );
            if writeln!(stdin, "{req}").is_err() {
                break;
            }
        }
        stdin
    });
    let limit = base + BUDGET / 1024 + SLACK_KIB;
    let mut last = 0;
    let mut over = None;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(15) {
        let hwm = status_kib(pid, "VmHWM");
        if hwm > limit && over.is_none() {
            over = Some(hwm);
        }
        last = hwm;
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = s.child.kill();
    let _ = s.child.wait();
    let _ = writer.join();
    eprintln!("review_edge: edits: RSS {base} KiB -> peak {last} KiB, limit {limit} KiB");
    if over.is_some() {
        panic!("peak RSS {last} KiB past {limit} KiB with unread replies of edits of a tiny file");
    }
}

/// `read_text_file` with `lineNumbers` gives each line a number: a file of
/// empty lines comes to eight bytes of text per byte (nine past line
/// 999,999), more than twice what a read's share of the reply budget at
/// open (four per byte) covers. With a client that does not read its
/// replies, the server's memory must still level off near
/// `--max-pending-reply-bytes`: a numbered range read covers the most text
/// its file can make before it reads a byte, and keeps the text's capacity
/// within it. Before that, each reply of these 2 MiB files (18 MiB of text)
/// was counted at 8 MiB: the peak came to 57 MiB over the 32 MiB budget
/// (76 MiB of RSS from 19 MiB; now 41 MiB), and with 1 MiB files it passed
/// or failed by chance (the CI of the stop on `c61dead` failed it).
#[test]
#[ignore = "slow: piles up unread replies of 18 MiB for 10 s"]
fn numbered_reads_of_empty_lines_stay_within_the_reply_budget() {
    const BUDGET: u64 = 32 << 20;
    const SLACK_KIB: u64 = 8 * 1024;
    const READS: u64 = 40;
    let env = TestEnv::new();
    env.write("nl.txt", "\n".repeat(2 << 20));
    let mut s = budgeted(env.root(), BUDGET);
    let (pid, mut stdin) = (s.pid, s.take_stdin());
    let base = status_kib(pid, "VmRSS");
    let path = env.path_str("nl.txt");
    let writer = std::thread::spawn(move || {
        for id in 1..=READS {
            let req = call(
                id,
                "read_text_file",
                json!({"path": path, "lineNumbers": true}),
            );
            if writeln!(stdin, "{req}").is_err() {
                break;
            }
        }
        stdin
    });
    let limit = base + BUDGET / 1024 + SLACK_KIB;
    let mut last = 0;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        last = status_kib(pid, "VmHWM");
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = s.child.kill();
    let _ = s.child.wait();
    let _ = writer.join();
    eprintln!("review_edge: numbered reads: RSS {base} KiB -> peak {last} KiB, limit {limit} KiB");
    assert!(
        last <= limit,
        "peak RSS {last} KiB past {limit} KiB with unread numbered replies"
    );
}

trait AddLine {
    fn add_line(&self) -> String;
}

impl AddLine for str {
    fn add_line(&self) -> String {
        format!("{self}\n")
    }
}
