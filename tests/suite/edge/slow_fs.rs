//! A slow filesystem stalls only the calls that touch it. tuls has no
//! per-call filesystem timeout (the reference 2.3.0 gives up after 15 s):
//! a call blocked in the kernel holds its own worker, and the pool adds a
//! worker for the calls queued behind it (docs/reference-differences.md,
//! "Walk bounds"). `strace` makes every `getdents64` of the real binary take
//! seconds, as on a hung network mount: more walks than there are workers
//! stall on it, and reads, which list no directory, must still be answered
//! while they wait; the walks are answered in the end.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;

use crate::util::{Options, Server, TestEnv, have};

/// Seconds each `getdents64` is held before it runs.
const STALL_SECS: u64 = 3;

#[test]
#[ignore = "slow: walks held for seconds in the kernel; CI runs it"]
fn walks_stalled_on_a_slow_filesystem_do_not_hold_up_other_calls() {
    if !have("strace") {
        return;
    }
    let env = TestEnv::new();
    env.write("a.txt", "alpha\n");
    env.write("tree/b/c.txt", "gamma\n");
    let delay = format!("inject=getdents64:delay_enter={}", STALL_SECS * 1_000_000);
    let opts = Options::new()
        .wrapper(&[
            "strace",
            "-f",
            "-qq",
            "-o",
            "/dev/null",
            "--seccomp-bpf",
            "-e",
            "trace=getdents64",
            "-e",
            delay.as_str(),
        ])
        .timeout(Duration::from_secs(120));
    // No repository search at startup: it lists directories too. Each walk
    // reserves its worst case of reply budget (96 MiB) before it runs, and
    // a call waiting for budget holds up the reading of every request after
    // it (docs/limits.md): the budget is raised so that four walks fit, as
    // an operator whose agents walk slow mounts would.
    let server = Server::start_with(
        &args![
            env.root(),
            "--no-default-protection",
            "--max-pending-reply-bytes",
            "536870912"
        ],
        opts,
    );
    // More stalled walks than a 2-core machine starts workers for.
    const WALKS: usize = 4;
    let walks_done = AtomicUsize::new(0);
    let reads_while_stalled = AtomicUsize::new(0);
    let tree = env.path_str("tree");
    let file = env.path_str("a.txt");
    server.block_on(async {
        let client = server.client();
        let walk = || async {
            let reply = client.call("directory_tree", json!({"path": tree})).await;
            walks_done.fetch_add(1, Ordering::SeqCst);
            reply
        };
        let walks = async {
            let (a, b, c, d) = tokio::join!(walk(), walk(), walk(), walk());
            [a, b, c, d]
        };
        let reads = async {
            // Let the walks reach the kernel first.
            tokio::time::sleep(Duration::from_millis(300)).await;
            for _ in 0..10 {
                let reply = client.call("read_text_file", json!({"path": file})).await;
                reply.assert_ok();
                assert_eq!(reply.text, "alpha\n");
                if walks_done.load(Ordering::SeqCst) == 0 {
                    reads_while_stalled.fetch_add(1, Ordering::SeqCst);
                }
            }
        };
        let (walked, ()) = tokio::join!(walks, reads);
        for reply in walked {
            reply.assert_ok();
            assert!(
                reply.text.contains("c.txt"),
                "the stalled walk's tree: {}",
                reply.text
            );
        }
    });
    assert_eq!(
        reads_while_stalled.load(Ordering::SeqCst),
        10,
        "every read must be answered while {WALKS} walks wait on the filesystem"
    );
}
