//! `write_file` over stdio (issue 3): the reference's success and error
//! texts, the atomic replace (permission bits kept, a fresh inode, no temp
//! file left behind), the read-only refusal, symlink handling inside the
//! root, and crash safety under `kill -9`.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::util::{RawServer, Server, TestEnv, assert_err, assert_text};

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .expect("stat")
        .permissions()
        .mode()
        & 0o7777
}

/// What the umask makes of 0666 in this process (the server inherits it).
fn umask_file_mode(env: &TestEnv) -> u32 {
    let probe = env.base().join("umask-probe");
    std::fs::write(&probe, "").expect("probe");
    let m = mode(&probe);
    std::fs::remove_file(&probe).expect("remove probe");
    m
}

/// Every name under `dir`, recursively, that looks like a tuls temp file.
pub fn temp_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.contains(".tuls-") {
            out.push(name.clone());
        }
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(temp_files(&entry.path()));
        }
    }
    out
}

#[test]
fn write_file_success_texts_match_the_reference() {
    let env = TestEnv::new();
    env.mkdir("sub");
    let server = Server::start(&args![env.root()]);
    let p = env.path_str("new.txt");
    assert_text(
        &server.call(
            "write_file",
            json!({"path": p, "content": "hello\r\nworld"}),
        ),
        &format!("Successfully wrote to {p}"),
    );
    assert_eq!(env.read("new.txt"), b"hello\r\nworld", "written verbatim");
    assert_text(
        &server.call("write_file", json!({"path": "rel.txt", "content": "r"})),
        "Successfully wrote to rel.txt",
    );
    assert_eq!(env.read("rel.txt"), b"r");
    assert_text(
        &server.call(
            "write_file",
            json!({"path": "./sub/../empty.txt", "content": ""}),
        ),
        "Successfully wrote to ./sub/../empty.txt",
    );
    assert_eq!(env.read("empty.txt"), b"");
    let uni = "\u{fc}nic\u{f8}de \u{2713} \u{1f600}\n";
    server
        .call("write_file", json!({"path": p, "content": uni}))
        .assert_ok();
    assert_eq!(env.read_string("new.txt"), uni);
    assert!(temp_files(&env.root()).is_empty());
    env.assert_canary_intact();
}

#[test]
fn write_file_keeps_permission_bits_and_gives_new_files_the_umask() {
    let env = TestEnv::new();
    let server = Server::start(&args![env.root()]);
    for (name, bits) in [("a.txt", 0o640), ("run.sh", 0o755), ("private", 0o600)] {
        env.write(name, "old");
        env.chmod(name, bits);
        server
            .call(
                "write_file",
                json!({"path": env.path_str(name), "content": "new"}),
            )
            .assert_ok();
        assert_eq!(env.read(name), b"new");
        assert_eq!(mode(&env.path(name)), bits, "{name} keeps {bits:o}");
    }
    // setuid/setgid/sticky are not carried over (mode & 0o777).
    env.write("suid", "old");
    env.chmod("suid", 0o4755);
    server
        .call(
            "write_file",
            json!({"path": env.path_str("suid"), "content": "new"}),
        )
        .assert_ok();
    assert_eq!(mode(&env.path("suid")), 0o755);

    server
        .call(
            "write_file",
            json!({"path": env.path_str("fresh.txt"), "content": "x"}),
        )
        .assert_ok();
    assert_eq!(mode(&env.path("fresh.txt")), umask_file_mode(&env));
    assert!(temp_files(&env.root()).is_empty());
}

#[test]
fn write_file_replaces_the_inode_and_keeps_the_owner_when_root() {
    let env = TestEnv::new();
    let server = Server::start(&args![env.root()]);
    env.write("f.txt", "old");
    env.hardlink("f.txt", "other-link");
    let ino = std::fs::metadata(env.path("f.txt")).expect("stat").ino();
    let root = rustix::process::geteuid().is_root();
    if root {
        std::process::Command::new("chown")
            .args(["1234:2345", env.path_str("f.txt").as_str()])
            .status()
            .expect("chown");
    }
    server
        .call(
            "write_file",
            json!({"path": env.path_str("f.txt"), "content": "new"}),
        )
        .assert_ok();
    let md = std::fs::metadata(env.path("f.txt")).expect("stat");
    assert_ne!(md.ino(), ino, "a new inode was renamed into place");
    assert_eq!(
        env.read("other-link"),
        b"old",
        "a hard link is not written through"
    );
    if root {
        assert_eq!((md.uid(), md.gid()), (1234, 2345), "owner kept");
    } else {
        eprintln!("not root: owner preservation not checked");
    }
}

#[test]
fn write_file_refuses_a_read_only_file_even_as_root() {
    let env = TestEnv::new();
    let server = Server::start(&args![env.root()]);
    env.write("ro.txt", "keep me");
    env.chmod("ro.txt", 0o444);
    let p = env.path_str("ro.txt");
    let reply = server.call("write_file", json!({"path": p, "content": "overwritten"}));
    assert_err(
        &reply,
        &format!(
            "Refusing to overwrite '{p}': the file is read-only (mode 0444); change its permissions first if it should be writable"
        ),
    );
    assert_eq!(env.read("ro.txt"), b"keep me");
    assert_eq!(mode(&env.path("ro.txt")), 0o444);
    // Any write bit makes it writable.
    env.chmod("ro.txt", 0o464);
    server
        .call("write_file", json!({"path": p, "content": "ok"}))
        .assert_ok();
    assert_eq!(env.read("ro.txt"), b"ok");
    assert!(temp_files(&env.root()).is_empty());
}

#[test]
fn write_file_error_paths() {
    let env = TestEnv::new();
    env.mkdir("emptydir");
    env.write("file.txt", "f");
    env.mkfifo("pipe");
    env.symlink("missing-target", "dangling");
    let server = Server::start(&args![env.root()]);
    let call = |path: &str| server.call("write_file", json!({"path": path, "content": "x"}));

    let p = env.path_str("nodir/f.txt");
    assert_err(
        &call(&p),
        &format!("Parent directory does not exist: {}", env.path_str("nodir")),
    );
    let p = env.path_str("emptydir");
    assert_err(
        &call(&p),
        &format!("EISDIR: illegal operation on a directory, open '{p}'"),
    );
    let p = env.root().to_str().expect("utf-8").to_owned();
    assert_err(
        &call(&p),
        &format!("EISDIR: illegal operation on a directory, open '{p}'"),
    );
    let p = env.path_str("file.txt/");
    assert_err(&call(&p), &format!("ENOTDIR: not a directory, open '{p}'"));
    let p = env.path_str("file.txt/under");
    assert_err(&call(&p), &format!("ENOTDIR: not a directory, open '{p}'"));
    let p = env.path_str("new/");
    assert_err(
        &call(&p),
        &format!("EISDIR: illegal operation on a directory, open '{p}'"),
    );
    let p = env.path_str("pipe");
    assert_err(
        &call(&p),
        &format!("Refusing to open '{p}': it is a FIFO, not a regular file"),
    );
    let p = env.path_str("dangling");
    assert_err(
        &call(&p),
        &format!(
            "Refusing to write through a dangling symbolic link: '{p}' (its target does not exist)"
        ),
    );
    assert!(
        !env.exists("missing-target"),
        "nothing created at the link's target"
    );

    // Unknown fields are refused before any effect.
    let reply = server.call(
        "write_file",
        json!({"path": env.path_str("extra.txt"), "content": "x", "mode": "0600"}),
    );
    reply.assert_error_contains("unknown field");
    assert!(!env.exists("extra.txt"));
    let reply = server.call("write_file", json!({"path": env.path_str("nocontent.txt")}));
    reply.assert_error_contains("content");
    assert!(!env.exists("nocontent.txt"));

    assert_eq!(env.read("file.txt"), b"f");
    assert!(temp_files(&env.root()).is_empty());
    env.assert_canary_intact();
}

#[test]
fn write_file_through_an_in_root_symlink_writes_the_target() {
    let env = TestEnv::new();
    env.write("sub/target.txt", "old");
    env.symlink("sub/target.txt", "link");
    env.symlink("link", "chain"); // a link to a link
    env.symlink("../sub/target.txt", "deeper/rel-link");
    let server = Server::start(&args![env.root()]);
    for (link, content) in [
        ("link", "one"),
        ("chain", "two"),
        ("deeper/rel-link", "three"),
    ] {
        let p = env.path_str(link);
        assert_text(
            &server.call("write_file", json!({"path": p, "content": content})),
            &format!("Successfully wrote to {p}"),
        );
        assert_eq!(env.read("sub/target.txt"), content.as_bytes());
        assert!(
            std::fs::symlink_metadata(env.path(link))
                .expect("lstat")
                .file_type()
                .is_symlink(),
            "{link} stays a link"
        );
    }
    assert!(temp_files(&env.root()).is_empty());
}

/// 8 MiB of one repeated line: a torn mix of two of these is easy to spot.
fn big(fill: char) -> String {
    let line: String = std::iter::repeat_n(fill, 63).chain(['\n']).collect();
    line.repeat(8 * 1024 * 1024 / 64)
}

/// xorshift64: a random delay per round without a dev-dependency.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn write_request(path: &str, content: &str) -> Vec<u8> {
    let msg = json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "write_file", "arguments": {"path": path, "content": content}},
    });
    let mut line = msg.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// Whether process `pid` holds a temp file of tuls's open in `dir`: an
/// unnamed one (`O_TMPFILE`, shown as `<dir>/#<inode> (deleted)`) or a
/// named `.…tuls-….tmp`.
fn temp_open(pid: u32, dir: &Path) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|to| {
            to.parent() == Some(dir)
                && to.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy();
                    n.starts_with('#') || n.contains(".tuls-")
                })
        })
    })
}

/// Polls until `pid` holds a temp file open in `dir` (true) or `limit`
/// passes.
fn wait_for_temp(pid: u32, dir: &Path, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if temp_open(pid, dir) {
            return true;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    false
}

/// `kill -9` the server while it replaces an 8 MiB file, at a random moment
/// of the whole call on every fourth round and of the temp file's short life
/// on the others: the target always holds the whole old or the whole new
/// content, never a torn mix, and a kill while the temp file was being
/// written leaves no temp name behind (it is unnamed until it is whole).
#[test]
#[ignore = "slow: kill -9 mid-write over many rounds of 8 MiB files (12-15 s)"]
fn write_file_survives_kill_9_mid_write() {
    let env = TestEnv::new();
    let (a, b) = (big('a'), big('b'));
    env.write("big.txt", &a);
    let path = env.path_str("big.txt");
    let root = env.root();

    // Calibrate: how long one uninterrupted call takes, and how long its
    // temp file is open (write + fchmod + fsync + link + rename).
    let mut raw = RawServer::start(&args![env.root()]);
    raw.initialize("2025-11-25");
    let watcher = {
        let (root, pid) = (root.clone(), raw.pid());
        std::thread::spawn(move || {
            if !wait_for_temp(pid, &root, Duration::from_secs(30)) {
                return Duration::ZERO;
            }
            let seen = Instant::now();
            while temp_open(pid, &root) {
                std::thread::sleep(Duration::from_micros(200));
            }
            seen.elapsed()
        })
    };
    let t0 = Instant::now();
    let resp = raw.call_tool("write_file", json!({"path": path, "content": b}));
    let full = t0.elapsed();
    let phase = watcher.join().expect("watcher");
    assert_eq!(
        crate::util::raw_reply(&resp).text,
        format!("Successfully wrote to {path}")
    );
    drop(raw);
    let mut current = &b;

    let mut seed = u64::from(std::process::id()) | 1;
    let window = full.as_micros().max(1000) as u64 * 3 / 2;
    let temp_window = phase.as_micros().max(200) as u64 * 3 / 2;
    let (mut kept_old, mut got_new, mut mid_write, mut temps_left) = (0, 0, 0, 0);
    // A slow (#[ignore]d) test: on a loaded machine the calibrated windows
    // are noisy, so it goes on, bounded, until a kill has landed mid-write.
    let deadline = Instant::now() + Duration::from_secs(60);
    for round in 0..40 {
        if round >= 8 && mid_write > 0 {
            break;
        }
        if Instant::now() > deadline {
            eprintln!("stopping after {round} rounds to stay within the time budget");
            break;
        }
        let next_content = if current == &a { &b } else { &a };
        let mut raw = RawServer::start(&args![env.root()]);
        raw.initialize("2025-11-25");
        let during_temp = round % 4 != 3;
        let delay =
            Duration::from_micros(next(&mut seed) % if during_temp { temp_window } else { window });
        let pid = raw.pid();
        let dir = root.clone();
        let killer = std::thread::spawn(move || {
            if during_temp {
                wait_for_temp(pid, &dir, Duration::from_secs(10));
            }
            std::thread::sleep(delay);
            // Whether the temp file was still open just before the kill.
            let open = temp_open(pid, &dir);
            let pid = i32::try_from(pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw);
            let pid = pid.expect("a child pid");
            // ESRCH cannot happen: the child is not reaped before the join.
            rustix::process::kill_process(pid, rustix::process::Signal::KILL).expect("kill -9");
            open
        });
        // Fails with EPIPE when the kill lands before the server read it all.
        let _ = raw.send_bytes(&write_request(&path, next_content));
        let open = killer.join().expect("killer thread");
        assert!(
            raw.wait_exit(Duration::from_secs(10)).is_some(),
            "server did not die"
        );
        drop(raw);

        let on_disk = std::fs::read_to_string(env.path("big.txt")).expect("read target");
        if on_disk == *current {
            kept_old += 1;
            if open {
                mid_write += 1;
            }
        } else if on_disk == *next_content {
            got_new += 1;
            current = next_content;
        } else {
            panic!(
                "round {round}: torn file after kill -9 at {delay:?}: {} bytes, starts {:?}",
                on_disk.len(),
                on_disk.get(..80)
            );
        }
        // A temp name exists only between the link and the rename (a few
        // system calls); one left there by a kill is tuls's own.
        for t in temp_files(&root) {
            assert!(
                t.starts_with(".big.txt.tuls-") && t.ends_with(".tmp"),
                "{t}"
            );
            std::fs::remove_file(env.path(&t)).expect("remove stray temp");
            temps_left += 1;
        }
    }
    eprintln!(
        "kill -9 rounds: old kept {kept_old} ({mid_write} killed with the temp file open), new landed {got_new}, stray temp names {temps_left}; call {full:?}, temp open {phase:?}"
    );
    // The point of the test: some kills landed while the temp file was being
    // written (three rounds in four aim there).
    assert!(
        mid_write > 0,
        "no kill landed mid-write; the test proved nothing"
    );
}
