//! A directory moved out mid-write does not take the write with it (issue
//! 11 §5). A racing thread renames the directory the client writes into out
//! of the root (a plain move, no symlink) and puts a fresh one in its place,
//! over and over; every moved-out directory stays outside. Ground truth: a
//! name that appears in a moved-out directory after it left the root was
//! created outside by tuls.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::util::{Options, Server, TestEnv, file_uri};

fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|it| {
            it.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Runs the race with `server` writing into `sub` (the directory `sub` of
/// `env.root()`); returns the names created outside and the number of moves.
fn race(env: &TestEnv, server: &Server) -> (Vec<String>, usize, usize) {
    let sub = env.path("sub");
    std::fs::create_dir(&sub).expect("mkdir sub");
    let held = env.outside().join("held");
    std::fs::create_dir(&held).expect("mkdir held");
    // Big enough that the write takes a while between opening the parent
    // and the rename.
    let content = "x".repeat(256 << 10);
    let stop = AtomicBool::new(false);
    let oks = AtomicUsize::new(0);
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut seen: Vec<(PathBuf, BTreeSet<String>)> = Vec::new();
    std::thread::scope(|scope| {
        for w in 0..2 {
            let (stop, oks, content, env) = (&stop, &oks, &content, env);
            scope.spawn(move || {
                for i in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let path = env.path_str(format!("sub/w{w}_{i}.txt"));
                    let r = server.call("write_file", json!({"path": path, "content": content}));
                    if !r.is_error {
                        oks.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
        // At least 3 s, and until the race has had enough moves and
        // writes to tell anything (a loaded machine is slower), at most 20 s.
        let cap = Instant::now() + Duration::from_secs(20);
        for k in 0..4000 {
            let now = Instant::now();
            let enough = k >= 50 && oks.load(Ordering::Relaxed) >= 5;
            if (now > deadline && enough) || now > cap {
                break;
            }
            // Short stays catch writes in flight; long ones let writes finish.
            std::thread::sleep(Duration::from_millis(if k % 2 == 0 { 2 } else { 15 }));
            let out = held.join(k.to_string());
            std::fs::rename(&sub, &out).expect("move sub out");
            // What is there once it is out; anything newer was created outside.
            seen.push((out.clone(), names(&out)));
            std::fs::create_dir(&sub).expect("fresh sub");
        }
        stop.store(true, Ordering::Relaxed);
    });
    let mut escaped = Vec::new();
    for (dir, then) in &seen {
        for n in names(dir).difference(then) {
            escaped.push(format!("{}/{n}", dir.display()));
        }
    }
    (escaped, seen.len(), oks.load(Ordering::Relaxed))
}

#[test]
#[ignore = "slow: a 3 s race"]
fn moved_out_directory_takes_no_write_without_landlock() {
    let env = TestEnv::new();
    let server = Server::start(&args![env.root(), "--no-landlock"]);
    let (escaped, moves, oks) = race(&env, &server);
    assert!(
        escaped.is_empty(),
        "{} files written outside the root ({moves} moves, {oks} writes ok): {:?}",
        escaped.len(),
        &escaped[..escaped.len().min(5)]
    );
    assert!(moves >= 50 && oks >= 5, "{moves} moves, {oks} writes");
    env.assert_canary_intact();
}

#[test]
#[ignore = "slow: a 3 s race"]
fn moved_out_directory_takes_no_write_from_a_client_root() {
    // Landlock covers the CLI root (the base, which holds `outside`); the
    // client root `root` is what the race leaves.
    let env = TestEnv::new();
    let server = Server::start_with(
        &args![env.base()],
        Options::new().roots(vec![file_uri(env.root())]),
    );
    let (escaped, moves, oks) = race(&env, &server);
    assert!(
        escaped.is_empty(),
        "{} files written outside the client root ({moves} moves, {oks} writes ok): {:?}",
        escaped.len(),
        &escaped[..escaped.len().min(5)]
    );
    assert!(moves >= 50 && oks >= 5, "{moves} moves, {oks} writes");
}
