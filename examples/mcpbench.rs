//! mcpbench: latency, throughput, CPU and peak-RSS benchmark for MCP filesystem
//! servers over stdio (JSON-RPC 2.0, one message per line), on a generated tree.
//!
//! Give one `--server` to measure it, or more to compare them with the first:
//! rounds alternate A,B,C,A,B,C,... and a table per B, C, ... shows B/A of the
//! medians plus the min–max of the per-round B/A ratios. `{root}` (or `{roots}`)
//! in a command is the fixture root. `--with-baseline` also runs each workload's
//! baseline command (find, rg, cat, ...) right after the workload, for every server
//! and round, and shows each server's time over its own paired baseline times.
//!
//! ```sh
//! cargo build --release
//! REF="node /path/to/@modelcontextprotocol/server-filesystem/dist/index.js {root}"
//! cargo run --release --example mcpbench -- --server "$REF" --name reference \
//!     --server "target/release/tuls filesystem {root}" --name tuls \
//!     --rounds 3 --json /tmp/bench.json > /tmp/bench.md
//! cargo run --release --example mcpbench -- baseline        # find/ls/cat proxies
//! cargo run --release --example mcpbench -- fixture --tree-files 20000  # build only
//! cargo run --release --example mcpbench -- --server "target/release/tuls filesystem {root}" \
//!     --only seq_read_1k,pipelined --tree-files 1000         # a quick look
//! # content search: tuls (whole replies), the reference (SKIP), rust-mcp-filesystem, rg
//! G=grep_literal,grep_literal_files,grep_word_i,grep_word_i_files,grep_regex_alt,grep_regex_alt_files
//! cargo run --release --example mcpbench -- --only $G --with-baseline \
//!     --server "target/release/tuls filesystem --max-reply-chars 0 {root}" --name tuls \
//!     --server "$REF" --name reference --server "rust-mcp-filesystem {root}" --name rmfs
//! ```
//!
//! Workloads: initialize (spawn -> initialize response), tools_list, seq_read_1k
//! (`--seq-n` sequential reads of a 1 KiB file after `--warmup` calls), pipelined
//! (`--pipeline-n` reads written by one thread while this one reads the replies),
//! directory_tree and search_files `**/*.rs` on the big tree; content searches of
//! the big tree's text (grep_*: a literal, a case-insensitive word, a regex with
//! alternation, each in content and files mode; the reply's count must be the
//! fixture's; a reply cut by the reply budget counts as a first page: give a server
//! without `--max-reply-chars 0` to time first pages; grep_rare, for the 1M-file
//! tree, and grep_dense, a first page of a common word, run only when `--only`
//! names them; so do directory_tree_next, search_files_next and grep_dense_next,
//! which time the second page: the call with the cursor the first page gave),
//! list_sizes_10k,
//! read_multiple_200 (200 x 4 KiB), head10_1g/tail10_1g (1 GiB sparse file),
//! read_20m, write_new_1m/write_over_1m (`--writes` x 1 MiB in a scratch dir that
//! is removed afterwards), edit_1m (one line of a 1 MiB file, `--reps-small` times).
//!
//! Per workload: wall-clock metrics (timed from the request write to the end of
//! the response line), the server's CPU (utime+stime of its process group, 10 ms
//! ticks), this client's CPU (close to the wall time means the client is the
//! bottleneck) and the server's peak RSS (VmHWM, reset through
//! `/proc/PID/clear_refs` before each workload when permitted) and its peak
//! count of open descriptors (sampled every `--fd-sample-ms`). Status: OK,
//! ERR(n) (isError, JSON-RPC error or wrong content; the first message is shown;
//! no ratio), TIMEOUT (`--timeout` per workload; the server is restarted), CRASH,
//! SKIP (the server has no such tool). The fixture is built once, deterministically,
//! in `--fixture DIR`/n<tree-files> (default: the system temp dir) and reused.

// This client builds its fixture and reads /proc with std::fs; the clippy.toml
// rule (every access through a root Dir) is for the server in src/.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use clap::{Parser, ValueEnum};
use rustix::process::{Pid, Signal, kill_process_group};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

const WORKLOADS: &str = "initialize tools_list seq_read_1k pipelined directory_tree \
    search_files grep_literal grep_literal_files grep_word_i grep_word_i_files grep_regex_alt \
    grep_regex_alt_files grep_rare grep_rare_files grep_dense grep_dense_files directory_tree_next \
    search_files_next grep_dense_next list_sizes_10k read_multiple_200 head10_1g \
    tail10_1g read_20m write_new_1m write_over_1m edit_1m";
/// Workloads run only when `--only` names them: grep_rare is for the
/// one-million-file tree, grep_dense times a first page (it has more hits than
/// one call returns), neither compares with rg's whole run on the 100k tree.
/// The *_next workloads time a second page: the call with the cursor the
/// first page (untimed) gave.
const OPT_IN: [&str; 7] = [
    "grep_rare",
    "grep_rare_files",
    "grep_dense",
    "grep_dense_files",
    "directory_tree_next",
    "search_files_next",
    "grep_dense_next",
];
const EXTS: [&str; 10] = [
    "rs", "txt", "md", "json", "toml", "py", "js", "c", "h", "yaml",
];
const TEXT_20M: usize = 20 << 20;
/// tuls's `maxResults` cap for `search_file_contents` (src/limits.rs).
const MAX_SEARCH_RESULTS: u64 = 5000;
const SIDE: [&str; 4] = ["cpu_ms", "client_cpu_ms", "peak_rss_mib", "peak_fds"];

#[derive(Parser, Serialize)]
#[command(about = "Benchmark MCP stdio filesystem servers side by side (see the //! doc)")]
struct Args {
    /// run: benchmark; baseline: coreutils proxies; fixture: only build the fixture
    #[arg(value_enum, default_value_t = Mode::Run)]
    mode: Mode,
    /// Server command with `{root}`; once to measure, twice to compare A and B
    #[arg(long = "server")]
    servers: Vec<String>,
    /// Display name per --server
    #[arg(long = "name")]
    names: Vec<String>,
    /// Suite runs per server (alternating A,B per round)
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Files in the big tree (in files/10 directories, 10% *.rs)
    #[arg(long, default_value_t = 100_000)]
    tree_files: usize,
    /// Comma-separated workloads to run
    #[arg(long, default_value = "")]
    only: String,
    /// Fixture cache directory [default: <temp dir>/tuls-mcpbench]
    #[arg(long)]
    fixture: Option<PathBuf>,
    /// Also write every raw result to this JSON file
    #[arg(long)]
    json: Option<PathBuf>,
    /// Deadline per workload, in seconds
    #[arg(long, default_value_t = 120.0)]
    timeout: f64,
    /// Calls in seq_read_1k
    #[arg(long, default_value_t = 2000)]
    seq_n: usize,
    /// Untimed calls before seq_read_1k
    #[arg(long, default_value_t = 50)]
    warmup: usize,
    /// Requests in the pipelined burst
    #[arg(long, default_value_t = 5000)]
    pipeline_n: usize,
    /// 1 MiB writes per write workload
    #[arg(long, default_value_t = 200)]
    writes: usize,
    /// Repetitions of head/tail/read_multiple/edit (median)
    #[arg(long, default_value_t = 20)]
    reps_small: usize,
    /// Repetitions of read_20m (median)
    #[arg(long, default_value_t = 3)]
    reps_big: usize,
    /// Stop repeating a call after this many seconds (at least one call)
    #[arg(long, default_value_t = 15.0)]
    rep_budget: f64,
    /// Glob given to search_files
    #[arg(long, default_value = "**/*.rs")]
    search_pattern: String,
    /// Sample the server group's open descriptors every this many ms during a
    /// workload (the peak_fds column); 0 turns it off
    #[arg(long, default_value_t = 2.0)]
    fd_sample_ms: f64,
    /// Threads for rg in the baseline (tuls's search uses one per CPU)
    #[arg(long)]
    rg_threads: Option<usize>,
    /// In run mode, also run each workload's baseline command (rg, find, ...)
    /// right after it, and show each server's time over its baseline's
    #[arg(long)]
    with_baseline: bool,
}

#[derive(Clone, Copy, PartialEq, ValueEnum, Serialize)]
enum Mode {
    Run,
    Baseline,
    Fixture,
}

// ---------------------------------------------------------------- fixture

/// The fixture's layout version: a cached fixture of another version is rebuilt.
/// 2: the tree's files hold generated source-like text with planted search hits.
/// 3: and the count of lines with the common word of grep_dense.
const FIXTURE_VERSION: u64 = 3;

#[derive(Serialize, Deserialize)]
struct Manifest {
    version: u64,
    tree_files: usize,
    tree_dirs: usize,
    rs_files: usize,
    /// Bytes of text in the tree's files.
    tree_bytes: u64,
    /// Lines in the tree's files.
    tree_lines: u64,
    /// Per search in [`GREPS`] (same order): (matching lines, files with a match).
    grep_hits: Vec<(u64, u64)>,
}

/// One content search: workload names (content, files mode), pattern, literal, case-insensitive.
struct Grep {
    name: &'static str,
    files_name: &'static str,
    pattern: &'static str,
    literal: bool,
    icase: bool,
}

/// The content searches. The tree's text is built so that a line matches one of
/// these exactly when the generator planted it (the vocabulary holds none of them,
/// only near misses), so the expected counts are known without a regex engine.
const GREPS: [Grep; 5] = [
    Grep {
        name: "grep_literal",
        files_name: "grep_literal_files",
        pattern: "parse_header(",
        literal: true,
        icase: false,
    },
    Grep {
        name: "grep_word_i",
        files_name: "grep_word_i_files",
        pattern: r"\bdeprecated\b",
        literal: false,
        icase: true,
    },
    Grep {
        name: "grep_regex_alt",
        files_name: "grep_regex_alt_files",
        pattern: r"fn (open|close|flush)_[a-z]+\(",
        literal: false,
        icase: false,
    },
    // One line in every 500th file: for the 1M-file tree, whose other searches
    // match more lines than one call returns (maxResults <= 5000).
    Grep {
        name: "grep_rare",
        files_name: "grep_rare_files",
        pattern: "XYZZY_MARKER",
        literal: true,
        icase: false,
    },
    // A common word (about one line in ten): more hits than one call returns,
    // for the time to a first page with the reply budget on.
    Grep {
        name: "grep_dense",
        files_name: "grep_dense_files",
        pattern: "return",
        literal: true,
        icase: false,
    },
];

fn find_grep(workload: &str) -> Option<(usize, &'static Grep, bool)> {
    GREPS.iter().enumerate().find_map(|(i, g)| {
        (g.name == workload || g.files_name == workload).then_some((i, g, g.files_name == workload))
    })
}

/// xorshift64*: deterministic text without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Source-like words. None contains a pattern of [`GREPS`]; some are near misses
/// (`parse_headers`, `deprecated_api`, `undeprecated`, `open_file` without `fn `).
const WORDS: [&str; 64] = [
    "let",
    "mut",
    "self",
    "value",
    "index",
    "buffer",
    "count",
    "result",
    "error",
    "config",
    "return",
    "match",
    "if",
    "else",
    "for",
    "in",
    "while",
    "loop",
    "break",
    "struct",
    "impl",
    "pub",
    "use",
    "crate",
    "super",
    "Some",
    "None",
    "Ok",
    "Err",
    "len",
    "push",
    "pop",
    "insert",
    "remove",
    "iter",
    "map",
    "filter",
    "collect",
    "into",
    "from",
    "parse_headers",
    "header",
    "parser",
    "request",
    "response",
    "stream",
    "socket",
    "timeout",
    "deprecated_api",
    "undeprecated",
    "open_file",
    "close",
    "flush",
    "reader",
    "writer",
    "path",
    "name",
    "size",
    "offset",
    "limit",
    "total",
    "items",
    "entry",
    "node",
];
const PUNCT: [&str; 8] = [" = ", "(", ", ", ");", " { ", " }", ".", " -> "];

/// One file's text: its header line, then generated lines with planted hits,
/// counted into `hits` (lines, and files with a hit) in [`GREPS`] order.
fn tree_text(header: &str, seed: u64, file_no: usize, hits: &mut [(u64, u64)]) -> (String, u64) {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut s = format!("// {header}\n");
    let lines = 8 + rng.below(60);
    let mut found = [0u64; GREPS.len()];
    let rare_at = (file_no % 500 == 123).then(|| rng.below(lines));
    for n in 0..lines {
        let line_start = s.len();
        s.push_str(&"    "[..4 * rng.below(2)]);
        let words = 3 + rng.below(8);
        for w in 0..words {
            if w > 0 {
                s.push_str(PUNCT[rng.below(PUNCT.len())]);
            }
            s.push_str(WORDS[rng.below(WORDS.len())]);
        }
        let r = rng.below(10_000);
        let planted = match r {
            0..6 => Some((0, " parse_header(buf);")),
            6..9 => Some((1, " // deprecated")),
            9..11 => Some((1, " // Deprecated: use the new one")),
            11..14 => Some((1, " // DEPRECATED since 2.0")),
            14..20 => None, // near misses are in the vocabulary
            20..22 => Some((2, " fn open_stream(")),
            22..24 => Some((2, " fn close_socket(")),
            24..25 => Some((2, " fn flush_writer(")),
            _ => None,
        };
        if let Some((i, text)) = planted {
            s.push_str(text);
            found[i] += 1;
        }
        if rare_at == Some(n) {
            s.push_str(" XYZZY_MARKER");
            found[3] += 1;
        }
        found[4] += u64::from(s[line_start..].contains("return"));
        s.push('\n');
    }
    for (h, f) in hits.iter_mut().zip(found) {
        h.0 += f;
        h.1 += u64::from(f > 0);
    }
    (s, 1 + lines as u64)
}

/// Exactly `n` bytes of unique numbered 72-byte lines ("tag 000000042 the quick ...\n").
fn numbered_text(tag: &str, n: usize) -> String {
    let filler = "the quick brown fox jumps over the lazy dog 0123456789 ";
    let mut s = String::with_capacity(n + 72);
    for i in 0.. {
        if s.len() >= n {
            break;
        }
        let start = s.len();
        let _ = write!(s, "{tag} {i:09} ");
        s.extend(filler.chars().cycle().take(71 - (s.len() - start)));
        s.push('\n');
    }
    s.truncate(n - 1);
    s + "\n"
}

fn ensure_fixture(base: &Path, tree_files: usize) -> io::Result<(PathBuf, Manifest)> {
    let dest = base.join(format!("n{tree_files}"));
    let marker = fs::read(dest.join(".complete")).unwrap_or_default();
    match serde_json::from_slice::<Manifest>(&marker) {
        Ok(m) if m.version == FIXTURE_VERSION => return Ok((dest, m)),
        _ if dest.exists() => fs::remove_dir_all(&dest)?, // incomplete or old
        _ => {}
    }
    let tmp = base.join(format!("n{tree_files}.building-{}", std::process::id()));
    eprintln!(
        "building fixture {} (cached for later runs) ...",
        dest.display()
    );
    fs::create_dir_all(&tmp)?;
    let m = build_fixture(&tmp, tree_files)?;
    fs::rename(&tmp, &dest)?;
    fs::write(dest.join(".complete"), serde_json::to_vec(&m)?)?;
    Ok((dest, m))
}

fn build_fixture(root: &Path, tree_files: usize) -> io::Result<Manifest> {
    for d in ["small", "multi", "wide", "tree", "big", "edit", "scratch"] {
        fs::create_dir(root.join(d))?;
    }
    fs::write(root.join("small/file1k.txt"), numbered_text("small", 1024))?;
    for i in 0..200 {
        let text = numbered_text(&format!("multi{i:03}"), 4096);
        fs::write(root.join(format!("multi/f{i:03}.txt")), text)?;
    }
    for i in 0..10_000usize {
        fs::write(
            root.join(format!("wide/w{i:05}.dat")),
            vec![b'x'; (i * 7919) % 4096],
        )?;
    }
    // ~sqrt(leaves) top dirs of leaf dirs with 10 files each; one in 10 is *.rs.
    let leaves = (tree_files / 10).max(1);
    let top = ((leaves as f64).sqrt().round() as usize).max(1);
    let (mut made, mut dirs, mut rs) = (0, 0, 0);
    let (mut tree_bytes, mut tree_lines, mut grep_hits) = (0, 0, vec![(0, 0); GREPS.len()]);
    for t in 0..top {
        let tdir = root.join(format!("tree/pkg{t:03}"));
        fs::create_dir(&tdir)?;
        dirs += 1;
        for m in 0..leaves.div_ceil(top).min(leaves - made) {
            let ldir = tdir.join(format!("mod{m:03}"));
            fs::create_dir(&ldir)?;
            (dirs, made) = (dirs + 1, made + 1);
            for k in 0..10 {
                let name = format!("item{k:02}.{}", EXTS[(made + k) % EXTS.len()]);
                rs += usize::from(name.ends_with(".rs"));
                let header = format!("pkg{t:03}/mod{m:03}/{name}");
                let file_no = (made - 1) * 10 + k;
                let (text, lines) = tree_text(&header, file_no as u64 + 1, file_no, &mut grep_hits);
                (tree_bytes, tree_lines) = (tree_bytes + text.len() as u64, tree_lines + lines);
                fs::write(ldir.join(&name), text)?;
            }
        }
    }
    let mut sparse = File::create(root.join("big/sparse-1g.txt"))?;
    sparse.write_all(numbered_text("head", 2000 * 72).as_bytes())?;
    let tail = numbered_text("tail", 2000 * 72);
    sparse.seek(SeekFrom::Start((1 << 30) - tail.len() as u64))?;
    sparse.write_all(tail.as_bytes())?;
    fs::write(
        root.join("big/text-20m.txt"),
        numbered_text("big", TEXT_20M),
    )?;
    fs::write(root.join("edit/src-1m.txt"), numbered_text("edit", 1 << 20))?;
    let (tree_files, tree_dirs, rs_files) = (made * 10, dirs, rs);
    Ok(Manifest {
        version: FIXTURE_VERSION,
        tree_files,
        tree_dirs,
        rs_files,
        tree_bytes,
        tree_lines,
        grep_hits,
    })
}

/// Walk and read the fixture once so that the first server does not pay for a cold cache.
fn warm_cache(dir: &Path) -> usize {
    let mut n = 0;
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        n += 1;
        match e.file_type() {
            Ok(t) if t.is_dir() => n += warm_cache(&e.path()),
            // The tree's files too, for the content searches.
            Ok(t) if t.is_file() && e.metadata().is_ok_and(|m| m.len() < 1 << 16) => {
                let _ = fs::read(e.path());
            }
            _ => {}
        }
    }
    for f in ["big/text-20m.txt", "edit/src-1m.txt"] {
        let _ = fs::read(dir.join(f));
    }
    n
}

// ---------------------------------------------------------------- /proc

/// (pgrp, utime+stime in seconds) of a pid, from /proc/PID/stat.
fn proc_stat(pid: &str) -> Option<(u32, f64)> {
    let raw = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f: Vec<&str> = raw[raw.rfind(')')? + 2..].split(' ').collect();
    let ticks = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some((f.get(2)?.parse().ok()?, ticks / 100.0)) // USER_HZ is 100 on Linux
}

/// The live processes of the server's process group (the server and its children).
fn group_pids(pgid: u32) -> Vec<String> {
    let mut out = vec![pgid.to_string()];
    for e in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let pid = e.file_name().to_string_lossy().into_owned();
        if pid != out[0] && proc_stat(&pid).is_some_and(|s| s.0 == pgid) {
            out.push(pid);
        }
    }
    out
}

/// (CPU seconds, VmHWM KiB) summed over the server's process group.
fn group_usage(pgid: u32) -> Option<(f64, u64)> {
    proc_stat(&pgid.to_string())?;
    let (mut cpu, mut hwm) = (0.0, 0);
    for pid in group_pids(pgid) {
        cpu += proc_stat(&pid).map_or(0.0, |s| s.1);
        let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let line = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .unwrap_or("");
        hwm += line
            .trim()
            .trim_end_matches(" kB")
            .parse::<u64>()
            .unwrap_or(0);
    }
    Some((cpu, hwm))
}

/// Open descriptors of the server's process group, sampled by a thread every
/// `every` (or 9 times as long as a sample took, whichever is longer) until
/// stopped (the group's pid list is refreshed every 100 ms).
struct FdSampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<u64>,
}

impl FdSampler {
    fn start(pgid: u32, every: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let (mut peak, mut pids, mut listed) = (0, group_pids(pgid), Instant::now());
            loop {
                let t0 = Instant::now();
                let fds =
                    |p: &String| fs::read_dir(format!("/proc/{p}/fd")).map_or(0, |d| d.count());
                peak = peak.max(pids.iter().map(fds).sum::<usize>() as u64);
                if flag.load(Ordering::Relaxed) {
                    return peak;
                }
                if listed.elapsed() > Duration::from_millis(100) {
                    (pids, listed) = (group_pids(pgid), Instant::now());
                }
                // At most ~10% of a core: a server with thousands of open
                // descriptors is sampled less often rather than slowed down.
                std::thread::sleep(every.max(t0.elapsed() * 9));
            }
        });
        FdSampler { stop, thread }
    }
    /// The peak over the sampling (one last sample is taken after the stop).
    fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or(0)
    }
}

/// Reset VmHWM to the current RSS (Linux >= 4.0); false where not permitted.
fn reset_hwm(pgid: u32) -> bool {
    let clear = |p: &String| fs::write(format!("/proc/{p}/clear_refs"), "5").is_ok();
    group_pids(pgid).iter().all(clear)
}

// ---------------------------------------------------------------- processes

static LIVE: Mutex<Vec<u32>> = Mutex::new(Vec::new());
static SCRATCH: Mutex<Option<PathBuf>> = Mutex::new(None);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn kill_group(pgid: u32, sig: Signal) {
    if let Some(pid) = Pid::from_raw(pgid as i32) {
        let _ = kill_process_group(pid, sig);
    }
}

/// On SIGINT/SIGTERM/SIGHUP: kill every live server group, remove the scratch dir, exit.
fn install_signal_handler() {
    std::thread::spawn(|| {
        use tokio::signal::unix::{SignalKind, signal};
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
        let code = rt.expect("runtime").block_on(async {
            let mut term = signal(SignalKind::terminate()).ok()?;
            let mut hup = signal(SignalKind::hangup()).ok()?;
            tokio::select! {
                _ = tokio::signal::ctrl_c() => Some(130),
                _ = term.recv() => Some(143),
                _ = hup.recv() => Some(129),
            }
        });
        lock(&LIVE)
            .iter()
            .for_each(|&pgid| kill_group(pgid, Signal::KILL));
        if let Some(dir) = lock(&SCRATCH).take() {
            let _ = fs::remove_dir_all(dir);
        }
        std::process::exit(code.unwrap_or(1));
    });
}

/// Kills the server's process group if it is still alive after `limit`.
struct Watchdog(Arc<(Mutex<bool>, Condvar, AtomicBool)>);

impl Watchdog {
    fn start(pgid: u32, limit: f64) -> Self {
        let state = Arc::new((Mutex::new(false), Condvar::new(), AtomicBool::new(false)));
        let s = state.clone();
        std::thread::spawn(move || {
            let limit = Duration::from_secs_f64(limit);
            let done = s.1.wait_timeout_while(lock(&s.0), limit, |done| !*done);
            if !*done.unwrap_or_else(|e| e.into_inner()).0 {
                s.2.store(true, Ordering::SeqCst);
                kill_group(pgid, Signal::KILL);
            }
        });
        Watchdog(state)
    }
    /// Stop watching; true if the deadline had passed.
    fn stop(self) -> bool {
        *lock(&self.0.0) = true;
        self.0.1.notify_all();
        self.0.2.load(Ordering::SeqCst)
    }
}

/// Split a command template like a shell (quotes, backslashes), then fill in `{root}`.
fn build_argv(template: &str, root: &str) -> Vec<String> {
    let (mut argv, mut cur, mut quote, mut word) = (vec![], String::new(), None, false);
    let mut chars = template.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, c) if c.is_whitespace() => {
                if std::mem::take(&mut word) {
                    argv.push(std::mem::take(&mut cur));
                }
            }
            (None, '\'' | '"') => (quote, word) = (Some(c), true),
            (Some(q), c) if c == q => quote = None,
            (None | Some('"'), '\\') => cur.extend(chars.next()),
            _ => (cur, word) = (cur + c.encode_utf8(&mut [0; 4]), true),
        }
    }
    argv.extend(word.then_some(cur));
    let fill = |a: String| a.replace("{roots}", root).replace("{root}", root);
    argv.into_iter().map(fill).collect()
}

// ---------------------------------------------------------------- MCP client

enum Fail {
    Skip(String),
    Died(String),
}

fn died(e: impl std::fmt::Display) -> Fail {
    Fail::Died(e.to_string())
}

/// A message from the server: (time its line was read, parsed JSON, line length).
type Msg = (Instant, Value, usize);

/// A server in its own process group, driven synchronously by the calling thread.
struct Server {
    child: Child,
    pgid: u32,
    stdin: ChildStdin,
    out: BufReader<ChildStdout>,
    line: Vec<u8>,
    stderr: File,
    next_id: u64,
    stash: HashMap<u64, Msg>,
    root: String,
    tools: HashMap<String, Value>,
}

fn read_message(out: &mut BufReader<ChildStdout>, line: &mut Vec<u8>) -> Result<Msg, Fail> {
    loop {
        line.clear();
        match out.read_until(b'\n', line) {
            Ok(0) | Err(_) => return Err(died("server closed stdout")),
            Ok(n) => {
                let at = Instant::now();
                if let Ok(v) = serde_json::from_slice::<Value>(line) {
                    return Ok((at, v, n));
                }
            }
        }
    }
}

fn request(id: u64, method: &str, params: Value) -> Vec<u8> {
    let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut buf = serde_json::to_vec(&msg).expect("json");
    buf.push(b'\n');
    buf
}

/// A reply's text split into its body and tuls's trailing notes (after a blank
/// line, each in brackets), and whether the notes say that the reply is a page
/// cut by the reply budget (`--max-reply-chars`, with an `offset` for the rest).
fn split_notes(text: &str) -> (&str, &str, bool) {
    let (body, notes) = match text.rfind("\n\n[") {
        Some(i) => (&text[..i], &text[i + 2..]),
        None if text.starts_with("[truncated") => ("", text),
        None => (text, ""),
    };
    let page = notes.contains("--max-reply-chars") || notes.contains("offset: ");
    (body, notes, page)
}

fn is_failure(m: &Value) -> bool {
    m.get("error").is_some() || m["result"]["isError"] == json!(true)
}

fn first_text(m: &Value) -> &str {
    let text = m["result"]["content"][0]["text"].as_str();
    text.or(m["error"]["message"].as_str()).unwrap_or("")
}

impl Server {
    /// Spawn, then initialize; returns the server and the spawn -> response time in ms.
    fn start(argv: &[String], root: &Path, timeout: f64) -> Result<(Server, f64), Fail> {
        let err = |e| died(format!("cannot start {argv:?}: {e}"));
        let stderr = tempfile::tempfile().map_err(err)?;
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        cmd.stderr(stderr.try_clone().map_err(err)?)
            .process_group(0);
        let started = Instant::now();
        let mut child = cmd.spawn().map_err(err)?;
        lock(&LIVE).push(child.id());
        let (stdin, stdout) = (child.stdin.take().expect("piped"), child.stdout.take());
        let out = BufReader::with_capacity(1 << 20, stdout.expect("piped"));
        let (root, pgid) = (root.to_string_lossy().into_owned(), child.id());
        let (line, stash, tools) = (Vec::new(), HashMap::new(), HashMap::new());
        let mut s = Server {
            child,
            pgid,
            stdin,
            out,
            line,
            stderr,
            next_id: 1,
            stash,
            root,
            tools,
        };
        let dog = Watchdog::start(pgid, timeout);
        let init_ms = s.handshake(started);
        if dog.stop() {
            return Err(died("no initialize response before --timeout"));
        }
        Ok((s, init_ms?))
    }

    fn handshake(&mut self, started: Instant) -> Result<f64, Fail> {
        let info = json!({"name": "mcpbench-rs", "version": "0.1.0"});
        let params =
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": info});
        self.write(&request(0, "initialize", params))?;
        let (at, msg, _) = self.wait(0)?;
        if is_failure(&msg) {
            return Err(died(format!("initialize failed: {msg}")));
        }
        self.write(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")?;
        let (msg, _, _) = self.call("tools/list", json!({}))?;
        for t in msg["result"]["tools"].as_array().into_iter().flatten() {
            let name = t["name"].as_str().unwrap_or_default().to_string();
            self.tools.insert(name, t["inputSchema"].clone());
        }
        Ok((at - started).as_secs_f64() * 1e3)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), Fail> {
        self.stdin
            .write_all(bytes)
            .map_err(|e| died(format!("write to server: {e}")))
    }

    /// Answer a server-to-client request (ping, roots/list); false if `m` is none.
    fn answer(&mut self, m: &Value) -> Result<bool, Fail> {
        let (Some(method), Some(id)) = (m["method"].as_str(), m.get("id")) else {
            return Ok(false);
        };
        let roots = json!({"roots": [{"uri": format!("file://{}", self.root), "name": "root"}]});
        let mut reply = json!({"jsonrpc": "2.0", "id": id, "result": {}});
        match method {
            "ping" => {}
            "roots/list" => reply["result"] = roots,
            _ => {
                reply = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "unsupported"}})
            }
        }
        self.write(&[serde_json::to_vec(&reply).expect("json"), b"\n".to_vec()].concat())?;
        Ok(true)
    }

    fn wait(&mut self, id: u64) -> Result<Msg, Fail> {
        loop {
            if let Some(m) = self.stash.remove(&id) {
                return Ok(m);
            }
            let m = read_message(&mut self.out, &mut self.line)?;
            if !self.answer(&m.1)?
                && let Some(rid) = m.1["id"].as_u64()
            {
                self.stash.insert(rid, m);
            }
        }
    }

    /// One request; (response, seconds from the write to the end of the response line, bytes).
    fn call(&mut self, method: &str, params: Value) -> Result<(Value, f64, usize), Fail> {
        let id = self.next_id;
        self.next_id += 1;
        let buf = request(id, method, params);
        let t0 = Instant::now();
        self.write(&buf)?;
        let (at, msg, n) = self.wait(id)?;
        Ok((msg, (at - t0).as_secs_f64(), n))
    }

    fn stderr_tail(&mut self) -> String {
        let (mut s, len) = (
            String::new(),
            self.stderr.seek(SeekFrom::End(0)).unwrap_or(0),
        );
        let _ = self.stderr.seek(SeekFrom::Start(len.saturating_sub(300)));
        let _ = self.stderr.read_to_string(&mut s);
        s.trim().replace('\n', " / ")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        kill_group(self.pgid, Signal::TERM);
        let t0 = Instant::now();
        while matches!(self.child.try_wait(), Ok(None)) && t0.elapsed().as_secs() < 2 {
            std::thread::sleep(Duration::from_millis(5));
        }
        kill_group(self.pgid, Signal::KILL); // and any straggler in the group
        let _ = self.child.wait();
        lock(&LIVE).retain(|&p| p != self.pgid);
    }
}

// ---------------------------------------------------------------- suite

type Metrics = Vec<(String, f64)>;
type Outcome = Result<(Vec<(&'static str, f64)>, String), Fail>;

#[derive(Serialize)]
struct WlResult {
    status: String,
    metrics: Metrics,
    detail: String,
}

#[derive(Serialize, Default)]
struct Run {
    results: Vec<(String, WlResult)>,
    /// With --with-baseline: (workload, baseline command ms, its output), timed
    /// right after the workload, so that each server has its own paired baseline.
    baseline: Vec<(String, f64, String)>,
    peak_rss_mib: f64,
    cpu_s: f64,
    wall_s: f64,
    restarts: usize,
    fatal: Option<String>,
}

fn get(m: &Metrics, key: &str) -> Option<f64> {
    m.iter().find(|x| x.0 == key).map(|x| x.1)
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    let rank = (q / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    (s[(n - 1) / 2] + s[n / 2]) / 2.0
}

fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        })
}

/// 1 MiB of ASCII text with quotes, backslashes and tabs (all need JSON escapes).
fn payload(i: usize) -> String {
    let line = format!("let s{i} = \"quoted \\\"text\\\"\\tand a backslash \\\\ here\";\n");
    line.repeat((1 << 20) / line.len() + 1)[..1 << 20].to_string()
}

/// One suite run against one server (restarted after a TIMEOUT or CRASH).
/// `run` accumulates CPU and peak RSS of the server instances that were retired.
struct Suite<'a> {
    args: &'a Args,
    fx: &'a Path,
    mf: &'a Manifest,
    cases: &'a [Case],
    argv: Vec<String>,
    scratch: PathBuf,
    srv: Option<Server>,
    init: (f64, f64, u64),
    errors: Vec<String>,
    run: Run,
}

impl Suite<'_> {
    fn path(&self, rel: &str) -> String {
        self.fx.join(rel).to_string_lossy().into_owned()
    }

    fn start(&mut self) -> Result<(), Fail> {
        let (srv, ms) = Server::start(&self.argv, self.fx, self.args.timeout)?;
        let (cpu, hwm) = group_usage(srv.pgid).unwrap_or_default();
        self.init = (ms, cpu, hwm);
        self.peak(hwm);
        self.srv = Some(srv);
        Ok(())
    }

    fn retire(&mut self) {
        if let Some(srv) = self.srv.take()
            && let Some((cpu, hwm)) = group_usage(srv.pgid)
        {
            self.run.cpu_s += cpu;
            self.peak(hwm);
        }
    }

    fn srv(&mut self) -> &mut Server {
        self.srv.as_mut().expect("server running")
    }

    fn has(&self, tool: &str) -> bool {
        self.srv
            .as_ref()
            .is_some_and(|s| s.tools.contains_key(tool))
    }

    fn need(&self, tool: &str) -> Result<(), Fail> {
        match self.has(tool) {
            true => Ok(()),
            false => Err(Fail::Skip(format!("server has no tool {tool}"))),
        }
    }

    fn error(&mut self, msg: String) {
        self.errors.push(msg.chars().take(300).collect());
    }

    fn peak(&mut self, hwm_kb: u64) {
        self.run.peak_rss_mib = self.run.peak_rss_mib.max(hwm_kb as f64 / 1024.0);
    }

    fn tool(&mut self, name: &str, arguments: Value) -> Result<(Value, f64, usize), Fail> {
        let params = json!({"name": name, "arguments": arguments});
        let r = self.srv().call("tools/call", params)?;
        if is_failure(&r.0) {
            self.error(format!("{name}: {}", first_text(&r.0)));
        }
        Ok(r)
    }

    /// Up to `reps` calls (fewer once --rep-budget is spent); median and min latency.
    /// `check` validates the last reply's text: Ok(note) or Err(message, counted as an error).
    fn repeated<F>(&mut self, reps: usize, tool: &str, args: Value, check: F) -> Outcome
    where
        F: Fn(&str) -> Result<String, String>,
    {
        self.need(tool)?;
        let (mut lat, mut last, t0) = (Vec::new(), Value::Null, Instant::now());
        while lat.len() < reps
            && (lat.is_empty() || t0.elapsed().as_secs_f64() < self.args.rep_budget)
        {
            let (m, secs, _) = self.tool(tool, args.clone())?;
            (last, _) = (m, lat.push(secs));
        }
        let note = match is_failure(&last) {
            true => Ok(String::new()),
            false => check(first_text(&last)),
        };
        let note = note.unwrap_or_else(|e| {
            self.error(e.clone());
            e
        });
        let ms = vec![
            ("ms", median(&lat) * 1e3),
            ("min_ms", min_max(&lat).0 * 1e3),
        ];
        Ok((ms, format!("{note}; {tool}, median of {}", lat.len())))
    }

    fn workload(&mut self, name: &str) -> Outcome {
        let a = self.args;
        match name {
            "initialize" => {
                let (ms, cpu, hwm) = self.init;
                let m = vec![
                    ("ms", ms),
                    ("cpu_ms", (cpu * 1e3).round()),
                    ("peak_rss_mib", hwm as f64 / 1024.0),
                ];
                Ok((m, "spawn -> response; CPU and RSS since spawn".into()))
            }
            "tools_list" => {
                let (m, secs, n) = self.srv().call("tools/list", json!({}))?;
                let tools = m["result"]["tools"].as_array().map_or(0, |t| t.len());
                Ok((vec![("ms", secs * 1e3)], format!("{tools} tools, {n} B")))
            }
            "seq_read_1k" => {
                self.need("read_text_file")?;
                let args = json!({"path": self.path("small/file1k.txt")});
                for _ in 0..a.warmup {
                    self.tool("read_text_file", args.clone())?;
                }
                let (mut lat, t0) = (Vec::with_capacity(a.seq_n), Instant::now());
                for _ in 0..a.seq_n {
                    lat.push(self.tool("read_text_file", args.clone())?.1);
                }
                let (total, n) = (t0.elapsed().as_secs_f64(), lat.len() as f64);
                lat.sort_by(f64::total_cmp);
                let (p50, p99) = (percentile(&lat, 50.0) * 1e3, percentile(&lat, 99.0) * 1e3);
                let m = vec![("calls_per_s", n / total), ("p50_ms", p50), ("p99_ms", p99)];
                Ok((m, format!("n={n} after {} warm-up calls", a.warmup)))
            }
            "pipelined" => self.pipelined(),
            "directory_tree" => {
                self.need(name)?;
                let (m, secs, n) = self.tool(name, json!({"path": self.path("tree")}))?;
                let (body, notes, page) = split_notes(first_text(&m));
                if !notes.is_empty() && !page {
                    self.error(format!("directory_tree: cut: {}", notes.replace('\n', " ")));
                }
                let lines = body.lines().count();
                let mb = n as f64 / 1e6;
                let first = if page { "first page: " } else { "" };
                Ok((
                    vec![("ms", secs * 1e3)],
                    format!("{first}{mb:.1} MB response, {lines} text lines"),
                ))
            }
            "search_files" => {
                self.need(name)?;
                let args = json!({"path": self.path("tree"), "pattern": a.search_pattern});
                let (m, secs, _) = self.tool(name, args)?;
                let (body, _, page) = split_notes(first_text(&m).trim());
                let found = match is_failure(&m) || body == "No matches found" {
                    true => 0,
                    false => body.lines().count(),
                };
                let want = self.mf.rs_files;
                let (ok, note) = match page {
                    true => (found > 0 && found <= want, "first page: "),
                    false => (found == want, ""),
                };
                let note = format!(
                    "{note}{:?}: {found} matches, expected {want}",
                    a.search_pattern
                );
                if !ok && !is_failure(&m) {
                    self.error(format!("search_files: {note}"));
                }
                Ok((vec![("ms", secs * 1e3)], note))
            }
            "list_sizes_10k" => {
                self.need("list_directory_with_sizes")?;
                let args = json!({"path": self.path("wide")});
                let (m, secs, n) = self.tool("list_directory_with_sizes", args)?;
                let entries = first_text(&m).matches(".dat").count();
                let kb = n as f64 / 1e3;
                Ok((
                    vec![("ms", secs * 1e3)],
                    format!("{entries} entries, {kb:.0} kB response"),
                ))
            }
            "read_multiple_200" => {
                let alt = ["read_multiple_files", "read_multiple_text_files"];
                let tool = alt.into_iter().find(|t| self.has(t)).unwrap_or(alt[0]);
                let paths: Vec<String> = (0..200)
                    .map(|i| self.path(&format!("multi/f{i:03}.txt")))
                    .collect();
                let ok = |t: &str| Ok(format!("{} chars", t.len()));
                self.repeated(a.reps_small, tool, json!({"paths": paths}), ok)
            }
            "head10_1g" | "tail10_1g" => {
                // read_text_file {head|tail: 10}, else a head_file/tail_file tool {lines: 10}.
                let (key, path) = (&name[..4], self.path("big/sparse-1g.txt"));
                let schema = self
                    .srv
                    .as_ref()
                    .and_then(|s| s.tools.get("read_text_file"));
                let (tool, args) = match schema.is_some_and(|t| t["properties"].get(key).is_some())
                {
                    true => ("read_text_file".to_string(), json!({"path": path, key: 10})),
                    false => (format!("{key}_file"), json!({"path": path, "lines": 10})),
                };
                // The reference returns 9 lines for tail=10 of a file that ends in "\n".
                self.repeated(a.reps_small, &tool, args, |t| {
                    let lines: Vec<&str> = t.lines().collect();
                    let n = lines.len();
                    match matches!(n, 9 | 10) && lines.iter().all(|l| l.starts_with(key)) {
                        true => Ok(format!("{n} lines")),
                        false => Err(format!("{name}: unexpected content ({n} lines)")),
                    }
                })
            }
            "read_20m" => {
                let args = json!({"path": self.path("big/text-20m.txt")});
                self.repeated(a.reps_big, "read_text_file", args, |t| match t.len() {
                    TEXT_20M => Ok(format!("{TEXT_20M} chars")),
                    n => Err(format!("read_20m: {n} chars, expected {TEXT_20M}")),
                })
            }
            "directory_tree_next" | "search_files_next" | "grep_dense_next" => self.next_page(name),
            "write_new_1m" => self.writes("new", false),
            "write_over_1m" => self.writes("over", true),
            "edit_1m" => self.edit(),
            _ if find_grep(name).is_some() => self.grep(name),
            _ => unreachable!("unknown workload {name}"),
        }
    }

    /// N reads written by a writer thread while this thread reads; time to the last reply.
    fn pipelined(&mut self) -> Outcome {
        self.need("read_text_file")?;
        let (n, path) = (self.args.pipeline_n as u64, self.path("small/file1k.txt"));
        let srv = self.srv();
        let ids = srv.next_id..srv.next_id + n;
        let params = json!({"name": "read_text_file", "arguments": {"path": path}});
        let buf: Vec<u8> = ids
            .clone()
            .flat_map(|id| request(id, "tools/call", params.clone()))
            .collect();
        srv.next_id += n;
        let Server {
            stdin,
            out,
            line,
            stash,
            ..
        } = srv;
        let (mut got, mut bad, mut asks) = (0, Vec::new(), Vec::new());
        let t0 = Instant::now();
        let (total, read) = std::thread::scope(|s| {
            let writer = s.spawn(move || stdin.write_all(&buf));
            let mut read = Ok(());
            while got < n {
                match read_message(out, line) {
                    Err(e) => (read, got) = (Err(e), n),
                    Ok(m) if m.1.get("method").is_some() => asks.push(m.1),
                    Ok(m) => match m.1["id"].as_u64() {
                        Some(id) if ids.contains(&id) => {
                            got += 1;
                            if is_failure(&m.1) {
                                bad.push(first_text(&m.1).to_string());
                            }
                        }
                        Some(id) => drop(stash.insert(id, m)),
                        None => {}
                    },
                }
            }
            let total = t0.elapsed().as_secs_f64();
            let _ = writer.join();
            (total, read)
        });
        read?;
        for m in asks {
            srv.answer(&m)?;
        }
        bad.into_iter()
            .for_each(|e| self.error(format!("read_text_file: {e}")));
        let m = vec![("total_ms", total * 1e3), ("req_per_s", n as f64 / total)];
        Ok((m, format!("n={n}")))
    }

    /// A content search over the whole tree with the server's search tool; the
    /// reply's match (or file) count must be the fixture's. A reply cut by the
    /// reply budget (`--max-reply-chars`) is a first page: OK when it holds some
    /// of the expected results. Any other cut (maxResults, time) is an error.
    /// A second page: the first (untimed) gives a cursor, the call with it
    /// is timed.
    fn next_page(&mut self, name: &str) -> Outcome {
        let tree = self.path("tree");
        let (tool, args) = match name {
            "directory_tree_next" => ("directory_tree", json!({"path": tree})),
            "search_files_next" => (
                "search_files",
                json!({"path": tree, "pattern": self.args.search_pattern}),
            ),
            _ => (
                "search_file_contents",
                json!({"path": tree, "pattern": "return", "literal": true,
                    "maxResults": MAX_SEARCH_RESULTS}),
            ),
        };
        self.need(tool)?;
        let (m, _, _) = self.tool(tool, args.clone())?;
        let text = first_text(&m);
        let key = "cursor: \"";
        let Some(at) = text.rfind(key).map(|i| i + key.len()) else {
            return Err(Fail::Skip("no cursor on the first page".into()));
        };
        let cursor = text[at..].split('"').next().unwrap_or_default().to_owned();
        let mut next = args;
        next["cursor"] = json!(cursor);
        let (m, secs, n) = self.tool(tool, next)?;
        if is_failure(&m) {
            self.error(format!("{name}: {}", first_text(&m)));
        }
        let kb = n as f64 / 1e3;
        Ok((
            vec![("ms", secs * 1e3)],
            format!("second page (from the first page's cursor): {kb:.0} kB"),
        ))
    }

    fn grep(&mut self, name: &str) -> Outcome {
        let (i, g, files) = find_grep(name).expect("a grep workload");
        let (lines, nfiles) = self.mf.grep_hits[i];
        let want = if files { nfiles } else { lines };
        let tree = self.path("tree");
        let mode = if files { "files" } else { "content" };
        // More hits than tuls returns at once: the first MAX_SEARCH_RESULTS of
        // them (or a page) are what is timed.
        let capped = want > MAX_SEARCH_RESULTS;
        let (tool, args) = if self.has("search_file_contents") {
            let args = json!({"path": tree, "pattern": g.pattern, "literal": g.literal,
                "caseInsensitive": g.icase, "outputMode": mode, "maxResults": MAX_SEARCH_RESULTS});
            ("search_file_contents", args)
        } else if self.has("search_files_content") {
            // rust-mcp-filesystem: always case-insensitive (the fixture's hits do
            // not depend on case but for grep_word_i, which asks for it); one
            // output, each file's path and its matching lines.
            let args =
                json!({"path": tree, "pattern": "*", "query": g.pattern, "is_regex": !g.literal});
            ("search_files_content", args)
        } else {
            return Err(Fail::Skip("server has no content search tool".into()));
        };
        let (m, secs, n) = self.tool(tool, args)?;
        let text = first_text(&m);
        let (got, page) = if tool == "search_file_contents" {
            let (body, notes, page) = split_notes(text);
            let got = match body {
                "No matches found" => 0,
                b => b.lines().count() as u64,
            };
            if g.literal && !files && body.lines().any(|l| !l.contains(g.pattern)) {
                self.error(format!("{name}: a content line without {:?}", g.pattern));
            }
            let max_cut = capped && got == MAX_SEARCH_RESULTS && notes.contains("maxResults=");
            let page = page || max_cut;
            if !notes.is_empty() && !page {
                self.error(format!("{name}: cut: {}", notes.replace('\n', " ")));
            }
            (got, page)
        } else {
            let (matched, paths) = text.lines().fold((0, 0), |(m, p), l| match l {
                "" => (m, p),
                l if l.starts_with("  ") => (m + 1, p),
                _ => (m, p + 1),
            });
            (if files { paths } else { matched }, false)
        };
        let ok = if page {
            got > 0 && got <= want
        } else {
            got == want
        };
        let what = if files { "files" } else { "lines" };
        let note = match page {
            true => format!("first page: {got} of {want} {what}"),
            false => format!("{got} {what}, expected {want}"),
        };
        if !ok && !is_failure(&m) {
            self.error(format!("{name}: {note}"));
        }
        let kb = n as f64 / 1e3;
        Ok((
            vec![("ms", secs * 1e3)],
            format!("{note}; {tool}, {kb:.0} kB reply"),
        ))
    }

    fn writes(&mut self, sub: &str, over: bool) -> Outcome {
        self.need("write_file")?;
        let dir = self.scratch.join(sub);
        fs::create_dir_all(&dir).map_err(died)?;
        let file = |i: usize| match over {
            true => dir.join(format!("f{}.txt", i % 10)),
            false => dir.join(format!("f{i:03}.txt")),
        };
        for i in 0..if over { 10 } else { 0 } {
            fs::write(file(i), "old\n").map_err(died)?;
        }
        let (mut lat, t0) = (Vec::new(), Instant::now());
        for i in 0..self.args.writes {
            let args = json!({"path": file(i).to_string_lossy(), "content": payload(i)});
            lat.push(self.tool("write_file", args)?.1);
        }
        let (total, n) = (t0.elapsed().as_secs_f64(), lat.len() as f64);
        lat.sort_by(f64::total_cmp);
        let p50 = percentile(&lat, 50.0) * 1e3;
        let m = vec![
            ("total_ms", total * 1e3),
            ("MiB_per_s", n / total),
            ("p50_ms", p50),
        ];
        Ok((m, format!("{n} x 1 MiB")))
    }

    fn edit(&mut self) -> Outcome {
        self.need("edit_file")?;
        let target = self.scratch.join("edit-1m.txt");
        let src = fs::read_to_string(self.fx.join("edit/src-1m.txt")).map_err(died)?;
        fs::write(&target, &src).map_err(died)?;
        let lines: Vec<&str> = src.split_inclusive('\n').collect();
        let (reps, mut lat) = (self.args.reps_small, Vec::new());
        for i in 0..reps {
            let old = lines[(i + 1) * lines.len() / (reps + 1)];
            let edits = json!([{"oldText": old, "newText": format!("EDITED {old}")}]);
            let args = json!({"path": target.to_string_lossy(), "edits": edits});
            lat.push(self.tool("edit_file", args)?.1);
        }
        let edited = fs::read_to_string(&target).unwrap_or_default();
        let landed = edited.matches("EDITED ").count();
        if landed != reps {
            self.error(format!("edit_file: {landed}/{reps} edits landed"));
        }
        let m = vec![
            ("ms", median(&lat) * 1e3),
            ("min_ms", min_max(&lat).0 * 1e3),
        ];
        Ok((m, format!("{landed}/{reps} edits landed; median of {reps}")))
    }

    fn run_one(&mut self, name: &str) -> WlResult {
        let res = |status: &str, metrics, detail| WlResult {
            status: status.into(),
            metrics,
            detail,
        };
        let Some(pgid) = self.srv.as_ref().map(|s| s.pgid) else {
            return res("FAILED", vec![], "server could not be restarted".into());
        };
        self.errors.clear();
        let before = group_usage(pgid);
        self.peak(before.map_or(0, |u| u.1));
        let hwm_reset = name != "initialize" && reset_hwm(pgid);
        let every = self.args.fd_sample_ms;
        let fds = (every > 0.0 && name != "initialize")
            .then(|| FdSampler::start(pgid, Duration::from_secs_f64(every / 1e3)));
        let cli0 = proc_stat("self").map_or(0.0, |s| s.1);
        let dog = Watchdog::start(pgid, self.args.timeout);
        let outcome = self.workload(name);
        let timed_out = dog.stop();
        let peak_fds = fds.map(FdSampler::stop);
        let cli_ms = ((proc_stat("self").map_or(0.0, |s| s.1) - cli0) * 1e3).round();
        let (mut metrics, mut detail) = match outcome {
            Ok(ok) => ok,
            Err(Fail::Skip(why)) => return res("SKIP", vec![], why),
            Err(Fail::Died(why)) => {
                let tail = self.srv().stderr_tail();
                self.retire();
                self.run.restarts += 1;
                if let Err(Fail::Died(e) | Fail::Skip(e)) = self.start() {
                    eprintln!("restart failed: {e}");
                }
                return match timed_out {
                    true => res(
                        "TIMEOUT",
                        vec![],
                        format!("> {} s; server restarted", self.args.timeout),
                    ),
                    false => res("CRASH", vec![], format!("{why}; stderr: {tail}")),
                };
            }
        };
        if let (Some((cpu0, _)), Some((cpu, hwm))) = (before, group_usage(pgid)) {
            if name != "initialize" {
                metrics.push(("cpu_ms", ((cpu - cpu0) * 1e3).round()));
                metrics.extend(hwm_reset.then_some(("peak_rss_mib", hwm as f64 / 1024.0)));
            }
            self.peak(hwm);
        }
        metrics.extend((name != "initialize").then_some(("client_cpu_ms", cli_ms)));
        metrics.extend(peak_fds.map(|n| ("peak_fds", n as f64)));
        if let Some(e) = self.errors.first() {
            detail = format!("{detail}; first error: {e}");
        }
        let status = match self.errors.len() {
            0 => "OK".to_string(),
            n => format!("ERR({n})"),
        };
        res(
            &status,
            metrics
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            detail,
        )
    }

    fn run(mut self, label: &str, workloads: &[&str]) -> Run {
        let t0 = Instant::now();
        *lock(&SCRATCH) = Some(self.scratch.clone());
        if let Err(e) = fs::create_dir_all(&self.scratch) {
            self.run.fatal = Some(format!("scratch dir: {e}"));
        } else if let Err(Fail::Died(e) | Fail::Skip(e)) = self.start() {
            self.run.fatal = Some(format!("server failed to start: {e}"));
        }
        for &w in if self.run.fatal.is_none() {
            workloads
        } else {
            &[]
        } {
            let r = self.run_one(w);
            let m = r.metrics.iter().map(|(k, v)| format!(" {k}={}", fmt(*v)));
            let m: String = m.collect();
            eprintln!("  [{label}] {w:18} {:8}{m}  ({})", r.status, r.detail);
            let ok = r.status == "OK";
            self.run.results.push((w.to_string(), r));
            // The baseline command right after, on the same warm cache and load.
            for c in self.cases.iter().filter(|c| ok && c.workload == Some(w)) {
                match time_pipeline(&c.cmds, 1) {
                    Ok((secs, text)) => {
                        let shown = case_output(c, text);
                        eprintln!("  [baseline] {w:18} ms={}  ({shown})", fmt(secs * 1e3));
                        self.run.baseline.push((w.to_string(), secs * 1e3, shown));
                    }
                    Err(e) => eprintln!("  [baseline] {w}: {e}"),
                }
            }
        }
        self.retire();
        let _ = fs::remove_dir_all(&self.scratch);
        *lock(&SCRATCH) = None;
        self.run.wall_s = t0.elapsed().as_secs_f64();
        self.run
    }
}

/// Every round runs each server's suite in turn (A,B,A,B,...); one list of runs per server.
/// Each workload with a command in `cases` is followed by that command.
fn run_rounds(
    args: &Args,
    fx: &Path,
    mf: &Manifest,
    names: &[String],
    cases: &[Case],
) -> Vec<Vec<Run>> {
    let mut runs: Vec<Vec<Run>> = names.iter().map(|_| Vec::new()).collect();
    for round in 0..args.rounds {
        for (i, name) in names.iter().enumerate() {
            eprintln!("round {}/{}: {name}", round + 1, args.rounds);
            let scratch = fx.join(format!("scratch/{name}-{}-{round}", std::process::id()));
            let argv = build_argv(&args.servers[i], &fx.to_string_lossy());
            let (srv, init, errors, run) = (None, (0.0, 0.0, 0), vec![], Run::default());
            let suite = Suite {
                args,
                fx,
                mf,
                cases,
                argv,
                scratch,
                srv,
                init,
                errors,
                run,
            };
            let run = suite.run(name, &workloads(args));
            if let Some(f) = &run.fatal {
                eprintln!("  [{name}] FATAL: {f}");
            }
            runs[i].push(run);
        }
    }
    runs
}

// ---------------------------------------------------------------- reporting

fn fmt(v: f64) -> String {
    match v.abs() {
        0.0 => "0".into(),
        a if a >= 1000.0 => {
            let digits = format!("{a:.0}");
            let mut out = String::from(if v < 0.0 { "-" } else { "" });
            for (i, c) in digits.chars().enumerate() {
                if i > 0 && (digits.len() - i) % 3 == 0 {
                    out.push(',');
                }
                out.push(c);
            }
            out
        }
        a if a >= 10.0 => format!("{v:.1}"),
        a if a >= 1.0 => format!("{v:.2}"),
        a if a >= 0.1 => format!("{v:.3}"),
        _ => format!("{v:.4}"),
    }
}

/// One workload on one server over all rounds: joined statuses, per-metric medians
/// (of the OK rounds, else of every round with metrics) and the last detail.
fn aggregate(runs: &[Run], wl: &str) -> WlResult {
    let rs: Vec<&WlResult> = runs
        .iter()
        .flat_map(|r| r.results.iter().filter(|x| x.0 == wl))
        .map(|x| &x.1)
        .collect();
    let mut statuses: Vec<&str> = rs.iter().map(|r| r.status.as_str()).collect();
    statuses.sort();
    statuses.dedup();
    let ok: Vec<&WlResult> = rs.iter().copied().filter(|r| r.status == "OK").collect();
    let used = if ok.is_empty() { rs.clone() } else { ok };
    let mut metrics: Metrics = Vec::new();
    for (k, _) in used.iter().flat_map(|r| &r.metrics) {
        if get(&metrics, k).is_none() {
            let vals: Vec<f64> = used.iter().filter_map(|r| get(&r.metrics, k)).collect();
            metrics.push((k.clone(), median(&vals)));
        }
    }
    let detail = rs
        .last()
        .map_or(String::new(), |r| r.detail.replace('|', "/"));
    WlResult {
        status: statuses.join("/"),
        metrics,
        detail,
    }
}

fn median_of(runs: &[Run], f: fn(&Run) -> f64) -> f64 {
    median(&runs.iter().map(f).collect::<Vec<_>>())
}

fn print_single(out: &mut String, name: &str, runs: &[Run], workloads: &[&str]) {
    let _ = writeln!(out, "\n### {name}: medians of {} run(s)\n", runs.len());
    out.push_str(
        "| workload | status | metrics | srv CPU ms | client CPU ms | peak RSS MiB | peak fds | detail |\n",
    );
    out.push_str("|---|---|---|---:|---:|---:|---:|---|\n");
    for wl in workloads {
        let r = aggregate(runs, wl);
        let main: Vec<String> = r
            .metrics
            .iter()
            .filter(|m| !SIDE.contains(&m.0.as_str()))
            .map(|(k, v)| format!("{k} {}", fmt(*v)))
            .collect();
        let [cpu, cli, rss, fds] = SIDE.map(|k| get(&r.metrics, k).map_or("-".into(), fmt));
        let _ = writeln!(
            out,
            "| {wl} | {} | {} | {cpu} | {cli} | {rss} | {fds} | {} |",
            r.status,
            main.join(", "),
            r.detail
        );
    }
    let (rss, cpu) = (
        median_of(runs, |r| r.peak_rss_mib),
        median_of(runs, |r| r.cpu_s),
    );
    let (wall, restarts) = (
        median_of(runs, |r| r.wall_s),
        runs.iter().map(|r| r.restarts).sum::<usize>(),
    );
    let _ = writeln!(
        out,
        "\n{name}: peak RSS over the whole run {rss:.1} MiB, server CPU {cpu:.2} s, suite wall {wall:.1} s, restarts {restarts}"
    );
}

fn compare(
    out: &mut String,
    (na, nb): (&str, &str),
    a: &[Run],
    b: &[Run],
    workloads: &[&str],
) -> Vec<Value> {
    let _ = writeln!(
        out,
        "\n### compare: A = {na}, B = {nb} ({} alternating rounds)\n",
        a.len()
    );
    out.push_str("B/A = ratio of the medians (ms, MiB: below 1 means B is better; calls/s, req/s, MiB/s: above 1);\n");
    out.push_str(
        "per-round = min–max of the B/A ratios within each round; n/a = a side is not OK.\n\n",
    );
    let _ = writeln!(
        out,
        "| workload | metric | A {na} | B {nb} | B/A | per-round | status A/B |\n|---|---|---:|---:|---:|---|---|"
    );
    let mut rows = Vec::new();
    for wl in workloads {
        let (ra, rb) = (aggregate(a, wl), aggregate(b, wl));
        let (sa, sb) = (&ra.status, &rb.status);
        let mut keys: Vec<&String> = ra.metrics.iter().map(|m| &m.0).collect();
        keys.extend(
            rb.metrics
                .iter()
                .map(|m| &m.0)
                .filter(|k| get(&ra.metrics, k).is_none()),
        );
        if keys.is_empty() {
            let _ = writeln!(out, "| {wl} | - | - | - | n/a | | {sa}/{sb} |");
        }
        for (i, k) in keys.into_iter().enumerate() {
            let (va, vb) = (get(&ra.metrics, k), get(&rb.metrics, k));
            let both_ok = sa == "OK" && sb == "OK";
            let ratio = va
                .zip(vb)
                .filter(|&(x, _)| both_ok && x != 0.0)
                .map(|(x, y)| y / x);
            let one = |r: &Run| {
                r.results
                    .iter()
                    .find(|x| x.0 == *wl && x.1.status == "OK")
                    .and_then(|x| get(&x.1.metrics, k))
            };
            let paired: Vec<f64> = a
                .iter()
                .zip(b)
                .filter_map(|(x, y)| Some((one(x)?, one(y)?)))
                .filter(|p| p.0 != 0.0)
                .map(|(x, y)| y / x)
                .collect();
            let (lo, hi) = min_max(&paired);
            let range = if paired.is_empty() {
                String::new()
            } else {
                format!("{lo:.3}–{hi:.3}")
            };
            let show = |v: Option<f64>| v.map_or("-".into(), fmt);
            let (w, st) = if i == 0 {
                (*wl, format!("{sa}/{sb}"))
            } else {
                ("", String::new())
            };
            let r = ratio.map_or("n/a".into(), |r| format!("{r:.3}"));
            let _ = writeln!(
                out,
                "| {w} | {k} | {} | {} | {r} | {range} | {st} |",
                show(va),
                show(vb)
            );
            rows.push(json!({"workload": wl, "metric": k, "a": va, "b": vb, "ratio": ratio, "paired": paired, "status": [sa, sb]}));
        }
    }
    let (pa, pb) = (
        median_of(a, |r| r.peak_rss_mib),
        median_of(b, |r| r.peak_rss_mib),
    );
    let (ca, cb) = (median_of(a, |r| r.cpu_s), median_of(b, |r| r.cpu_s));
    let _ = writeln!(
        out,
        "\n| whole run (median of rounds) | A {na} | B {nb} | B/A |\n|---|---:|---:|---:|"
    );
    let _ = writeln!(
        out,
        "| peak RSS MiB (VmHWM) | {pa:.1} | {pb:.1} | {:.3} |",
        pb / pa
    );
    let _ = writeln!(out, "| server CPU s | {ca:.2} | {cb:.2} | {:.3} |", cb / ca);
    rows
}

// ---------------------------------------------------------------- baseline

/// Median wall time of a shell-free pipeline over `reps` runs after one warm-up run.
fn time_pipeline(cmds: &[Vec<String>], reps: usize) -> io::Result<(f64, String)> {
    let (mut times, mut bytes) = (Vec::new(), Vec::new());
    for _ in 0..=reps {
        let t0 = Instant::now();
        let mut children: Vec<Child> = Vec::new();
        for cmd in cmds {
            let prev = children.last_mut().and_then(|c| c.stdout.take());
            let stdin = prev.map_or(Stdio::null(), Stdio::from);
            children.push(
                Command::new(&cmd[0])
                    .args(&cmd[1..])
                    .stdin(stdin)
                    .stdout(Stdio::piped())
                    .spawn()?,
            );
        }
        bytes.clear();
        children
            .last_mut()
            .and_then(|c| c.stdout.take())
            .expect("piped")
            .read_to_end(&mut bytes)?;
        for mut c in children {
            c.wait()?;
        }
        times.push(t0.elapsed().as_secs_f64());
    }
    Ok((
        median(&times[1..]),
        String::from_utf8_lossy(&bytes).trim().to_string(),
    ))
}

/// One baseline command: the workload it stands for (if any), its label and its pipeline.
struct Case {
    workload: Option<&'static str>,
    label: String,
    cmds: Vec<Vec<String>>,
    /// The count the output should show, if known.
    expected: Option<u64>,
}

/// The baseline commands, for the selected workloads (`None`: all). The rg rows
/// use rg's defaults (ignore files, no hidden or binary files), `-j threads`.
fn baseline_cases(fx: &Path, mf: &Manifest, threads: usize, only: Option<&[&str]>) -> Vec<Case> {
    let p = |rel: &str| fx.join(rel).to_string_lossy().into_owned();
    let arg = |w: &str| w.strip_prefix('@').map_or(w.to_string(), p);
    let cmd = |s: &str| s.split(' ').map(arg).collect::<Vec<String>>();
    let case = |workload, label: &str, cmds, expected| Case {
        workload,
        label: label.to_string(),
        cmds,
        expected,
    };
    let mut cases = vec![
        case(
            Some("directory_tree"),
            "find tree -type f | wc -l",
            vec![cmd("find @tree -type f"), cmd("wc -l")],
            Some(mf.tree_files as u64),
        ),
        case(
            Some("search_files"),
            "find tree -name '*.rs' | wc -l",
            vec![cmd("find @tree -name *.rs"), cmd("wc -l")],
            Some(mf.rs_files as u64),
        ),
        case(
            None,
            "find tree | wc -l",
            vec![cmd("find @tree"), cmd("wc -l")],
            None,
        ),
        case(
            Some("list_sizes_10k"),
            "ls -l wide (10k) | wc -l",
            vec![cmd("ls -l @wide"), cmd("wc -l")],
            None,
        ),
        case(
            Some("read_20m"),
            "cat text-20m | wc -c",
            vec![cmd("cat @big/text-20m.txt"), cmd("wc -c")],
            Some(TEXT_20M as u64),
        ),
        case(
            Some("head10_1g"),
            "head -n 10 sparse-1g",
            vec![cmd("head -n 10 @big/sparse-1g.txt")],
            None,
        ),
        case(
            Some("tail10_1g"),
            "tail -n 10 sparse-1g",
            vec![cmd("tail -n 10 @big/sparse-1g.txt")],
            None,
        ),
    ];
    for (i, g) in GREPS.iter().enumerate() {
        for files in [false, true] {
            let mut argv: Vec<String> = ["rg", if files { "-l" } else { "-n" }, "-j"]
                .map(String::from)
                .to_vec();
            argv.push(threads.to_string());
            argv.extend(g.literal.then(|| "-F".to_string()));
            argv.extend(g.icase.then(|| "-i".to_string()));
            argv.extend(["-e".to_string(), g.pattern.to_string(), p("tree")]);
            let shown: Vec<String> = argv
                .iter()
                .map(|a| match a {
                    a if a == g.pattern => format!("'{a}'"),
                    a if a.starts_with('/') => "tree".to_string(),
                    a => a.clone(),
                })
                .collect();
            let label = format!("{} | wc -l", shown.join(" "));
            let workload = if files { g.files_name } else { g.name };
            let (lines, nfiles) = mf.grep_hits[i];
            let expected = Some(if files { nfiles } else { lines });
            cases.push(case(
                Some(workload),
                &label,
                vec![argv, cmd("wc -l")],
                expected,
            ));
        }
    }
    cases.retain(|c| only.is_none_or(|o| c.workload.is_none_or(|w| o.contains(&w))));
    cases
}

/// A command's output as shown: short output whole, else its line count; and
/// the expected count when known.
fn case_output(c: &Case, text: String) -> String {
    let mut shown = if text.len() < 40 {
        text
    } else {
        format!("{} lines", text.lines().count())
    };
    if let Some(e) = c.expected {
        let _ = write!(shown, " (expected {e})");
    }
    shown
}

/// Times each case (median of `reps` after a warm-up run); (label, workload, ms, output) rows.
fn time_cases(cases: &[Case], reps: usize) -> io::Result<Vec<Value>> {
    let mut rows = Vec::new();
    for c in cases {
        let (secs, text) = time_pipeline(&c.cmds, reps)?;
        let shown = case_output(c, text);
        rows.push(
            json!({"command": c.label, "workload": c.workload, "ms": secs * 1e3, "output": shown}),
        );
    }
    Ok(rows)
}

fn baseline_table(rows: &[Value], title: &str) -> String {
    let mut out = format!("\n### baseline: {title}\n\n");
    out.push_str("| command | workload | ms | output |\n|---|---|---:|---|\n");
    for r in rows {
        let cell = r["command"].as_str().unwrap_or("").replace('|', "\\|");
        let wl = r["workload"].as_str().unwrap_or("-");
        let ms = fmt(r["ms"].as_f64().unwrap_or(0.0));
        let _ = writeln!(
            out,
            "| `{cell}` | {wl} | {ms} | {} |",
            r["output"].as_str().unwrap_or("")
        );
    }
    out
}

/// Each server's median time per workload over the median of its baseline command.
fn versus_baseline(
    out: &mut String,
    names: &[String],
    runs: &[Vec<Run>],
    cases: &[Case],
    workloads: &[&str],
) -> Vec<Value> {
    let _ = write!(
        out,
        "\n### versus the baseline commands\n\nEach baseline command ran right after its workload, \
         once per server and round; ratio = median of the per-round (server ms / its baseline ms), \
         with the min–max over the rounds.\n\n| workload | baseline command | output |"
    );
    for n in names {
        let _ = write!(out, " {n} ms | baseline ms | {n} / baseline |");
    }
    out.push_str("\n|---|---|---|");
    out.push_str(&"---:|---:|---:|".repeat(names.len()));
    out.push('\n');
    let mut rows = Vec::new();
    for wl in workloads {
        let Some(case) = cases.iter().find(|c| c.workload == Some(wl)) else {
            continue;
        };
        let shown = runs
            .iter()
            .flatten()
            .flat_map(|r| &r.baseline)
            .find(|b| b.0 == *wl)
            .map_or(String::new(), |b| b.2.clone());
        let label = case.label.replace('|', "\\|");
        let _ = write!(out, "| {wl} | `{label}` | {shown} |");
        for (name, rs) in names.iter().zip(runs) {
            let (mut ms, mut bms, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
            for r in rs {
                let res = r.results.iter().find(|x| x.0 == *wl && x.1.status == "OK");
                let v = res.and_then(|x| get(&x.1.metrics, "ms").or(get(&x.1.metrics, "total_ms")));
                let b = r.baseline.iter().find(|b| b.0 == *wl).map(|b| b.1);
                if let (Some(v), Some(b)) = (v, b) {
                    ms.push(v);
                    bms.push(b);
                    ratios.push(v / b);
                }
            }
            if ratios.is_empty() {
                let _ = write!(out, " {} | | n/a |", aggregate(rs, wl).status);
                continue;
            }
            let (lo, hi) = min_max(&ratios);
            let ratio = median(&ratios);
            let _ = write!(
                out,
                " {} | {} | {ratio:.2} ({lo:.2}–{hi:.2}) |",
                fmt(median(&ms)),
                fmt(median(&bms))
            );
            rows.push(json!({"workload": wl, "server": name, "command": case.label, "ms": ms, "baseline_ms": bms, "ratios": ratios}));
        }
        out.push('\n');
    }
    rows
}

// ---------------------------------------------------------------- main

/// The workloads selected by --only, in their fixed order.
fn workloads(args: &Args) -> Vec<&'static str> {
    let only: Vec<&str> = args.only.split(',').filter(|s| !s.is_empty()).collect();
    let all: Vec<&str> = WORKLOADS.split_whitespace().collect();
    if let Some(bad) = only.iter().find(|w| !all.contains(w)) {
        fatal(format!(
            "unknown workload {bad:?}; known: {}",
            all.join(", ")
        ));
    }
    all.into_iter()
        .filter(|w| match only.is_empty() {
            true => !OPT_IN.contains(w),
            false => only.contains(w),
        })
        .collect()
}

fn fatal(msg: String) -> ! {
    eprintln!("{msg}");
    std::process::exit(2)
}

fn main() {
    let args = Args::parse();
    install_signal_handler();
    let workloads = workloads(&args);
    let base = args
        .fixture
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("tuls-mcpbench"));
    let (fx, mf) =
        ensure_fixture(&base, args.tree_files).unwrap_or_else(|e| fatal(format!("fixture: {e}")));
    let tree = format!(
        "{} files in {} dirs, {} *.rs",
        mf.tree_files, mf.tree_dirs, mf.rs_files
    );
    eprintln!("fixture {}: {tree}", fx.display());
    let mut report = json!({"tool": "mcpbench-rs", "fixture": fx, "manifest": mf, "config": args});
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let rg_threads = args.rg_threads.unwrap_or(cores);
    let mut out = String::new();
    match args.mode {
        Mode::Fixture => return,
        Mode::Baseline => {
            let only = (!args.only.is_empty()).then_some(&workloads[..]);
            let cases = baseline_cases(&fx, &mf, rg_threads, only);
            let reps = args.rounds.max(3);
            let rows = time_cases(&cases, reps).unwrap_or_else(|e| fatal(format!("baseline: {e}")));
            let title =
                format!("the same fixture, warm cache, median of {reps}; rg -j {rg_threads}");
            out = baseline_table(&rows, &title);
            report["baseline"] = json!(rows);
        }
        Mode::Run => {
            if args.servers.is_empty() {
                fatal("give --server once (measure), or more to compare with the first".into());
            }
            let name = |i: usize| {
                let letter = char::from(b'A' + (i % 26) as u8);
                args.names.get(i).cloned().unwrap_or(letter.to_string())
            };
            let names: Vec<String> = (0..args.servers.len()).map(name).collect();
            eprintln!("page-cache warm-up: {} fixture entries", warm_cache(&fx));
            let cases = match args.with_baseline {
                true => baseline_cases(&fx, &mf, rg_threads, Some(&workloads)),
                false => Vec::new(),
            };
            let runs = run_rounds(&args, &fx, &mf, &names, &cases);
            let _ = writeln!(
                out,
                "## mcpbench: {tree}; {} round(s); {cores} cores\n",
                args.rounds
            );
            for (name, cmd) in names.iter().zip(&args.servers) {
                let _ = writeln!(out, "- {name}: `{cmd}`");
            }
            for (name, rs) in names.iter().zip(&runs) {
                print_single(&mut out, name, rs, &workloads);
            }
            let mut compares = Vec::new();
            for (i, b) in runs.iter().enumerate().skip(1) {
                let pair = (names[0].as_str(), names[i].as_str());
                compares.push(json!(compare(&mut out, pair, &runs[0], b, &workloads)));
            }
            if !cases.is_empty() {
                report["baseline"] =
                    json!(versus_baseline(&mut out, &names, &runs, &cases, &workloads));
            }
            report["compare"] = json!(compares);
            let raw: Vec<Value> = names
                .iter()
                .zip(&runs)
                .map(|(n, r)| json!({"name": n, "runs": r}))
                .collect();
            report["runs"] = json!(raw);
        }
    }
    print!("{out}");
    if let Some(path) = &args.json
        && let Err(e) = fs::write(path, serde_json::to_vec_pretty(&report).expect("json"))
    {
        eprintln!("writing {}: {e}", path.display());
    }
}
