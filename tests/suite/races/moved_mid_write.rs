//! A directory that another process moves out of the root while tuls is in
//! the middle of a write (finding F7, docs/escape-testing.md). `strace`
//! holds the write's `fsync` (or an append's `fdatasync`) for a few seconds;
//! the test moves the directory out while it is held, snapshots it there,
//! lets the write finish and compares. Ground truth: whatever the moved-out
//! directory holds once it is out is what it holds after the call: tuls
//! changes nothing there after the move (before, a named temp file's bytes
//! were there and then removed, an append was cut back after its sync, and a
//! client root moved out of its operator's root took the whole write).
//! Landlock is off: it is the second wall; this is the first.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::util::{Options, Reply, Server, TestEnv, file_uri, have};

/// How long the traced sync is held.
const HOLD_US: &str = "3000000";

/// The binary under `strace`, each `call` (`fsync` or `fdatasync`) held
/// for [`HOLD_US`] before it runs; no other call stops (`--seccomp-bpf`).
fn holding(call: &str) -> Options {
    Options::new().wrapper(&[
        "strace".to_owned(),
        "-f".to_owned(),
        "-qq".to_owned(),
        "-o".to_owned(),
        "/dev/null".to_owned(),
        "--seccomp-bpf".to_owned(),
        "-e".to_owned(),
        format!("trace={call}"),
        "-e".to_owned(),
        format!("inject={call}:delay_enter={HOLD_US}"),
    ])
}

/// `fsync` and `fdatasync` as `/proc/<tid>/syscall` numbers them.
#[cfg(target_arch = "x86_64")]
const SYNC_CALLS: [&str; 2] = ["74", "75"];
#[cfg(target_arch = "aarch64")]
const SYNC_CALLS: [&str; 2] = ["82", "83"];
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const SYNC_CALLS: [&str; 2] = ["", ""];

/// Whether a thread of the process `strace` (pid `tracer`) runs is stopped
/// by the tracer in a sync call (a thread's start stops it briefly too, so
/// the call's number is checked).
fn held(tracer: u32) -> bool {
    let children = std::fs::read_to_string(format!("/proc/{tracer}/task/{tracer}/children"))
        .unwrap_or_default();
    children.split_whitespace().any(|pid| {
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|task| {
                let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
                let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
                let call = std::fs::read_to_string(task.path().join("syscall")).unwrap_or_default();
                let call = call.split_whitespace().next().unwrap_or_default();
                state.is_some_and(|s| s.starts_with('t')) && SYNC_CALLS.contains(&call)
            })
    })
}

/// Runs `call` on `server` while, as soon as its sync is held, `dir` is
/// moved to `to`; returns the reply and the snapshot of `to` taken right
/// after the move, and asserts `to` is the same after the call.
fn move_out_while_held(
    env: &TestEnv,
    server: &Server,
    dir: &Path,
    to: &Path,
    call: impl FnOnce() -> Reply + Send,
) -> Reply {
    let tracer = server.pid().expect("strace pid");
    let (reply, then) = std::thread::scope(|scope| {
        let call = scope.spawn(call);
        let until = Instant::now() + Duration::from_secs(60);
        while !held(tracer) {
            assert!(Instant::now() < until, "the sync was never held");
            std::thread::sleep(Duration::from_millis(5));
        }
        std::fs::rename(dir, to).expect("move the directory out");
        let then = env.snapshot(to);
        (call.join().expect("call thread"), then)
    });
    then.assert_same(
        &env.snapshot(to),
        "the directory moved out during the write",
    );
    reply
}

#[test]
#[ignore = "slow: holds a sync for 3 s under strace"]
fn an_append_is_not_cut_back_in_a_directory_moved_out_after_its_bytes_landed() {
    if !have("strace") {
        return;
    }
    let env = TestEnv::new();
    env.mkdir("sub");
    env.write("sub/log.txt", "first line\n");
    let server = Server::start_with(&args![env.root(), "--no-landlock"], holding("fdatasync"));
    let away = env.outside().join("away");
    let path = env.path_str("sub/log.txt");
    let reply = move_out_while_held(&env, &server, &env.path("sub"), &away, || {
        server.call("append_file", json!({"path": path, "content": "second\n"}))
    });
    // The bytes landed while the directory was inside; nothing cut them back.
    assert_eq!(
        std::fs::read_to_string(away.join("log.txt")).expect("read"),
        "first line\nsecond\n",
        "{}",
        reply.raw
    );
}

#[test]
#[ignore = "slow: holds a sync for 3 s under strace"]
fn a_write_leaves_nothing_in_a_directory_moved_out_while_its_temp_file_synced() {
    if !have("strace") {
        return;
    }
    let env = TestEnv::new();
    env.mkdir("sub");
    env.write("sub/old.txt", "old content\n");
    let server = Server::start_with(&args![env.root(), "--no-landlock"], holding("fsync"));
    let away = env.outside().join("away");
    for (name, content) in [("old.txt", "replaced\n"), ("new.txt", "created\n")] {
        std::fs::create_dir_all(env.path("sub")).expect("mkdir sub");
        let path = env.path_str(format!("sub/{name}"));
        let to = away.with_extension(name);
        let reply = move_out_while_held(&env, &server, &env.path("sub"), &to, || {
            server.call("write_file", json!({"path": path, "content": content}))
        });
        assert!(reply.is_error, "{name}: {}", reply.raw);
        assert!(
            reply.texts().join("").contains("its directory was moved"),
            "{name}: {}",
            reply.raw
        );
    }
    // The old file is as it was, where the directory went.
    assert_eq!(
        std::fs::read_to_string(away.with_extension("old.txt").join("old.txt")).expect("read"),
        "old content\n"
    );
    assert!(!away.with_extension("new.txt").join("new.txt").exists());
}

#[test]
#[ignore = "slow: holds a sync for 3 s under strace"]
fn a_client_root_moved_out_of_its_operator_root_takes_no_write() {
    if !have("strace") {
        return;
    }
    let env = TestEnv::new();
    // The operator's root is `root`; the client's root is `root/sub`,
    // which the test moves out of `root` entirely.
    env.mkdir("sub");
    let server = Server::start_with(
        &args![env.root(), "--no-landlock"],
        holding("fsync").roots(vec![file_uri(env.path("sub"))]),
    );
    let away = env.outside().join("away");
    let path = env.path_str("sub/new.txt");
    let reply = move_out_while_held(&env, &server, &env.path("sub"), &away, || {
        server.call("write_file", json!({"path": path, "content": "created\n"}))
    });
    assert!(reply.is_error, "{}", reply.raw);
    assert!(!away.join("new.txt").exists(), "{}", reply.raw);
}

/// Where the kernel will not link an unnamed temp file for this process
/// (before Linux 6.10, without `CAP_DAC_READ_SEARCH`; `strace` makes every
/// `linkat` fail so), writes still work: the content, mode and attributes
/// are copied into a named temp file, and no temp name is left behind.
#[test]
fn writes_work_where_an_unnamed_temp_file_cannot_be_linked() {
    if !have("strace") {
        return;
    }
    let env = TestEnv::new();
    let old = env.write("old.txt", "old\n");
    env.chmod("old.txt", 0o640);
    let xattr = std::process::Command::new("setfattr")
        .args(["-n", "user.kept", "-v", "yes"])
        .arg(&old)
        .status()
        .is_ok_and(|s| s.success());
    let server = Server::start_with(
        &args![env.root()],
        Options::new().wrapper(&[
            "strace",
            "-f",
            "-qq",
            "-o",
            "/dev/null",
            "--seccomp-bpf",
            "-e",
            "trace=linkat",
            "-e",
            "inject=linkat:error=ENOENT",
        ]),
    );
    for (name, content) in [("old.txt", "replaced\n"), ("new.txt", "created\n")] {
        let r = server.call(
            "write_file",
            json!({"path": env.path_str(name), "content": content}),
        );
        assert!(!r.is_error, "{name}: {}", r.raw);
        assert_eq!(env.read_string(name), content);
    }
    let r = server.call(
        "append_file",
        json!({"path": env.path_str("fresh.txt"), "content": "appended\n"}),
    );
    assert!(!r.is_error, "{}", r.raw);
    assert_eq!(env.read_string("fresh.txt"), "appended\n");
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(env.path("old.txt"))
        .expect("stat")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o640);
    if xattr {
        let out = std::process::Command::new("getfattr")
            .args(["--only-values", "-n", "user.kept"])
            .arg(env.path("old.txt"))
            .output()
            .expect("getfattr");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "yes");
    }
    let names: Vec<String> = std::fs::read_dir(env.root())
        .expect("list")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.contains(".tuls-")),
        "a temp name was left: {names:?}"
    );
}
