//! `append_file` and `copy_file` over stdio: their success texts, their
//! refusals (nothing changes on disk), what they keep (identity, mode,
//! mtime), and the races: an append whose file is swapped for a symbolic
//! link to an outside file, and a copy whose destination is created while
//! the copy runs (never overwritten). A sparse source is copied with its
//! holes, and a copy past `--max-copy-bytes` is refused with nothing left.
//! (Appends to a file with other hard links: `hard_links`.)

use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, UNIX_EPOCH};

use serde_json::json;

use crate::util::{Reply, Server, TestEnv, assert_text};

use super::write_file::temp_files;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn append(server: &Server, path: &str, content: &str) -> Reply {
    server.call("append_file", json!({"path": path, "content": content}))
}

fn copy(server: &Server, from: &str, to: &str) -> Reply {
    server.call("copy_file", json!({"source": from, "destination": to}))
}

#[test]
fn append_file_appends_exactly_and_keeps_the_file() {
    let env = TestEnv::new();
    let p = env.write("log.txt", "one\n");
    env.chmod("log.txt", 0o640);
    let ino = std::fs::metadata(&p).expect("stat").ino();
    let server = Server::start(&args![env.root()]);
    assert_text(
        &append(&server, "log.txt", "two"),
        "Successfully appended to log.txt",
    );
    assert_text(
        &append(&server, &env.path_str("log.txt"), "\nthree"),
        &format!("Successfully appended to {}", env.path_str("log.txt")),
    );
    assert_eq!(env.read("log.txt"), b"one\ntwo\nthree");
    let md = std::fs::metadata(&p).expect("stat");
    assert_eq!(md.ino(), ino, "the same file, not a replacement");
    assert_eq!(md.permissions().mode() & 0o7777, 0o640);
    // An empty append changes nothing; a missing file is created.
    assert_text(
        &append(&server, "log.txt", ""),
        "Successfully appended to log.txt",
    );
    assert_eq!(env.read("log.txt"), b"one\ntwo\nthree");
    assert_text(
        &append(&server, "fresh.txt", "first"),
        "Successfully appended to fresh.txt",
    );
    assert_eq!(env.read("fresh.txt"), b"first");
    // Multi-byte text is appended as UTF-8, byte for byte.
    assert_text(
        &append(&server, "fresh.txt", " é✓"),
        "Successfully appended to fresh.txt",
    );
    assert_eq!(env.read_string("fresh.txt"), "first é✓");
    // An in-root symbolic link appends to its target; the link stays.
    env.symlink("fresh.txt", "alias");
    append(&server, "alias", "!").assert_ok();
    assert_eq!(env.read_string("fresh.txt"), "first é✓!");
    assert!(env.path("alias").is_symlink());
}

#[test]
fn append_file_refusals_change_nothing() {
    let env = TestEnv::new();
    env.write("ro.txt", "ro");
    env.chmod("ro.txt", 0o444);
    env.mkdir("dir");
    env.mkfifo("fifo");
    env.symlink(env.canary(), "out-link");
    let server = Server::start(&args![env.root()]);
    let before = env.snapshot("");
    append(&server, "dir", "x").assert_error_contains("EISDIR");
    append(&server, "fifo", "x").assert_error_contains("not a regular file");
    append(&server, "ro.txt", "x").assert_error_contains("ro.txt");
    append(&server, "missing/x.txt", "x")
        .assert_error_contains("Parent directory does not exist: missing");
    append(&server, "out-link", "x").assert_error_contains("Access denied");
    append(&server, &env.canary().display().to_string(), "x")
        .assert_error_contains("Access denied");
    append(&server, "../outside.txt", "x").assert_error_contains("Access denied");
    let r = server.call(
        "append_file",
        json!({"path": "new.txt", "content": "x", "mode": "a"}),
    );
    r.assert_error_contains("unknown field");
    before.assert_same(&env.snapshot(""), "root");
    env.assert_canary_intact();
}

/// One append may add at most 32 MiB (`MAX_APPEND_BYTES`): at the limit it
/// is appended, one byte past it is refused and the file is unchanged.
#[test]
fn append_file_is_bounded() {
    let env = TestEnv::new();
    env.write("big.txt", "");
    let server = Server::start(&args![env.root()]);
    let limit = 32 * 1024 * 1024;
    let over = "a".repeat(limit + 1);
    append(&server, "big.txt", &over).assert_error_contains(&format!(
        "{} bytes to append to 'big.txt', over the {limit}-byte limit",
        limit + 1
    ));
    assert_eq!(
        std::fs::metadata(env.path("big.txt")).expect("stat").len(),
        0
    );
    append(&server, "big.txt", &over[1..]).assert_ok();
    assert_eq!(
        std::fs::metadata(env.path("big.txt")).expect("stat").len(),
        limit as u64
    );
}

/// A thread keeps swapping `target` between a regular file and a symbolic
/// link to a file outside the root while the client appends to it. The
/// outside file never changes, and every byte appended lands in the inside
/// file: as many markers there as successful appends.
#[test]
fn append_file_never_follows_a_link_swapped_in() {
    let env = TestEnv::new();
    env.write("target", "");
    let outside = env.outside().join("victim.txt");
    std::fs::write(&outside, "VICTIM\n").expect("victim");
    let server = Server::start(&args![env.root()]);
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, root, outside) = (stop.clone(), env.root(), outside.clone());
        std::thread::spawn(move || {
            // `target` is always there: RENAME_EXCHANGE swaps the file and
            // the link in one step (a missing name would be created).
            let cwd = rustix::fs::CWD;
            let (t, link) = (root.join("target"), root.join("lnk"));
            std::os::unix::fs::symlink(&outside, &link).expect("link");
            let xchg = || {
                rustix::fs::renameat_with(cwd, &t, cwd, &link, rustix::fs::RenameFlags::EXCHANGE)
                    .expect("exchange")
            };
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                xchg();
                std::thread::sleep(Duration::from_micros(200));
                xchg();
                std::thread::sleep(Duration::from_micros(200));
                swaps += 1;
            }
            swaps
        })
    };
    let mut ok = 0;
    for _ in 0..400 {
        let r = append(&server, "target", "M");
        if r.is_error {
            assert!(
                r.text.contains("Access denied")
                    || r.text.contains("changed while")
                    // The name was between the two swaps when looked up.
                    || r.text.starts_with("ENOENT: "),
                "unexpected refusal: {}",
                r.text
            );
        } else {
            ok += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().expect("swapper");
    assert!(swaps > 10, "the swap ran ({swaps} swaps)");
    assert_eq!(std::fs::read(&outside).expect("victim"), b"VICTIM\n");
    let inside = env.read("target");
    assert!(inside.iter().all(|&b| b == b'M'), "only markers inside");
    assert_eq!(inside.len(), ok, "each successful append landed once");
    assert!(ok > 0, "some appends succeeded");
    env.assert_canary_intact();
}

#[test]
fn copy_file_copies_content_mode_and_mtime() {
    let env = TestEnv::new();
    let mut data = b"#!/bin/sh\necho copy\n".to_vec();
    data.extend((0..200_000u32).map(|i| (i % 251) as u8));
    let src = env.write("bin/run.sh", &data);
    env.chmod("bin/run.sh", 0o751);
    let t = UNIX_EPOCH + Duration::from_secs(981_173_106);
    std::fs::File::open(&src)
        .and_then(|f| f.set_times(std::fs::FileTimes::new().set_modified(t)))
        .expect("set mtime");
    env.mkdir("dest");
    let server = Server::start(&args![env.root()]);
    let (from, to) = (env.path_str("bin/run.sh"), env.path_str("dest/run.sh"));
    assert_text(
        &copy(&server, &from, &to),
        &format!("Successfully copied {from} to {to}"),
    );
    assert_eq!(env.read("dest/run.sh"), data);
    assert_eq!(env.read("bin/run.sh"), data, "the source stays");
    let (s, d) = (
        std::fs::metadata(&src).expect("src"),
        std::fs::metadata(env.path("dest/run.sh")).expect("dst"),
    );
    assert_ne!(s.ino(), d.ino(), "a copy, not a link");
    assert_eq!(d.permissions().mode() & 0o7777, 0o751);
    assert_eq!(d.modified().expect("mtime"), t);
    // Relative paths, an empty file, and no temp file left behind.
    env.write("empty", "");
    assert_text(
        &copy(&server, "empty", "empty2"),
        "Successfully copied empty to empty2",
    );
    assert_eq!(env.read("empty2"), b"");
    // An in-root link as the source copies its target's content.
    env.symlink("empty", "alias");
    copy(&server, "alias", "from-alias").assert_ok();
    assert!(!env.path("from-alias").is_symlink());
    let names: Vec<String> = std::fs::read_dir(env.root())
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.contains(".tuls-")), "{names:?}");
}

#[test]
fn copy_file_never_overwrites_and_refuses_non_files() {
    let env = TestEnv::new();
    env.write("src.txt", "source");
    env.write("existing.txt", "existing");
    env.mkdir("dir");
    env.mkfifo("fifo");
    env.symlink("nowhere", "dangling");
    env.symlink(env.canary(), "out-link");
    let server = Server::start(&args![env.root()]);
    let before = env.snapshot("");
    for to in [
        "existing.txt",
        "dir",
        "dangling",
        "src.txt",
        "out-link",
        ".",
    ] {
        assert_eq!(
            copy(&server, "src.txt", to).assert_error().text,
            format!("Destination already exists: {to}")
        );
    }
    assert_eq!(
        copy(&server, "dir", "d2").assert_error().text,
        "EISDIR: illegal operation on a directory, copyfile 'dir' -> 'd2'"
    );
    assert_eq!(
        copy(&server, "missing", "m2").assert_error().text,
        "ENOENT: no such file or directory, copyfile 'missing' -> 'm2'"
    );
    copy(&server, "fifo", "f2").assert_error_contains("not a regular file");
    copy(&server, "out-link", "o2").assert_error_contains("Access denied");
    copy(&server, "src.txt", "../escaped.txt").assert_error_contains("Access denied");
    copy(&server, "src.txt", "nodir/x.txt")
        .assert_error_contains("Parent directory does not exist: nodir");
    copy(&server, &env.canary().display().to_string(), "c2").assert_error_contains("Access denied");
    before.assert_same(&env.snapshot(""), "root");
    assert!(!env.outside().join("escaped.txt").exists());
    env.assert_canary_intact();
}

/// A racer creates the destination (`O_EXCL`) at a random moment while
/// the copy runs. Exactly one of them wins, and the file holds the
/// winner's content: the copy never replaces a file created meanwhile.
#[test]
fn copy_file_destination_created_during_the_copy_is_kept() {
    let env = TestEnv::new();
    let data: Vec<u8> = (0..(4u32 << 20)).map(|i| (i % 253) as u8).collect();
    env.write("src.bin", &data);
    let server = Server::start(&args![env.root()]);
    // The racer's moment spreads over twice the time one copy takes here.
    let started = std::time::Instant::now();
    copy(&server, "src.bin", "warm").assert_ok();
    let span = (started.elapsed().as_micros() as u64).max(1000) * 2;
    let (mut copies, mut racers) = (0, 0);
    for i in 0..300u64 {
        if copies >= 5 && racers >= 5 {
            break;
        }
        let name = format!("dst-{i}");
        let path = env.path(&name);
        let racer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_micros((i * 7919) % span));
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .and_then(|mut f| std::io::Write::write_all(&mut f, b"RACER"))
                .is_ok()
        });
        let r = copy(&server, "src.bin", &name);
        let racer_won = racer.join().expect("racer");
        let got = env.read(&name);
        if r.is_error {
            assert_eq!(r.text, format!("Destination already exists: {name}"));
            assert!(racer_won, "a refusal without a racer: {}", r.text);
            assert_eq!(got, b"RACER", "the racer's file is kept");
            racers += 1;
        } else {
            assert!(!racer_won, "both the copy and the racer created {name}");
            assert!(got == data, "the copy is whole");
            copies += 1;
        }
    }
    assert!(
        copies > 0 && racers > 0,
        "both orders seen: {copies} / {racers}"
    );
}

/// Between two roots on different filesystems the copy is whole too, with
/// its mode and mtime (the kernel may refuse `copy_file_range` there; tuls
/// then carries the bytes itself).
#[test]
fn copy_file_across_filesystems() {
    let env = TestEnv::new();
    let other_fs = match crate::util::OtherFs::new(&env.root()) {
        Ok(other_fs) => other_fs,
        Err(why) => {
            crate::util::require_or_skip("copy_file across filesystems", &why);
            return;
        }
    };
    let other = other_fs.path().to_owned();
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 241) as u8).collect();
    env.write("big.bin", &data);
    env.chmod("big.bin", 0o600);
    let server = Server::start(&args![env.root(), other]);
    let to = crate::util::path_string(other.join("big.bin"));
    assert_text(
        &copy(&server, "big.bin", &to),
        &format!("Successfully copied big.bin to {to}"),
    );
    assert_eq!(std::fs::read(other.join("big.bin")).expect("copy"), data);
    let (s, d) = (
        std::fs::metadata(env.path("big.bin")).expect("src"),
        std::fs::metadata(other.join("big.bin")).expect("dst"),
    );
    assert_eq!(d.permissions().mode() & 0o7777, 0o600);
    assert_eq!(d.modified().expect("mtime"), s.modified().expect("mtime"));
}

/// Bytes of disk a file takes (`st_blocks` counts 512-byte units).
fn allocated(path: &Path) -> u64 {
    std::fs::metadata(path).expect("stat").blocks() * 512
}

/// A sparse file of `len` bytes holding `data` at each of `at`.
fn sparse(path: &Path, len: u64, data: &[u8], at: &[u64]) {
    let f = std::fs::File::create(path).expect("create");
    for &off in at {
        f.write_all_at(data, off).expect("write");
    }
    f.set_len(len).expect("set_len");
}

/// Whether `path` holds exactly `len` bytes: `data` at each of `at` and
/// zeros everywhere else (read 8 MiB at a time; each `at` lies within one
/// chunk).
fn holds(path: &Path, len: u64, data: &[u8], at: &[u64]) -> bool {
    const CHUNK: u64 = 8 * MIB;
    let f = std::fs::File::open(path).expect("open");
    let (mut buf, zeros) = (vec![0u8; CHUNK as usize], vec![0u8; CHUNK as usize]);
    let mut pos = 0u64;
    while pos < len {
        let n = f.read_at(&mut buf, pos).expect("read");
        if n == 0 {
            return false;
        }
        let mut want = zeros[..n].to_vec();
        for &off in at.iter().filter(|&&off| off >= pos && off < pos + n as u64) {
            let i = (off - pos) as usize;
            want[i..i + data.len()].copy_from_slice(data);
        }
        if buf[..n] != want[..] {
            return false;
        }
        pos += n as u64;
    }
    f.metadata().expect("stat").len() == len
}

/// A 1 GiB sparse file with two 4 KiB data extents (one in the middle,
/// one at the very end; a hole before each) is copied with its holes: the
/// copy allocates under 1 MiB, and holds the same extents and zeros
/// everywhere else. On the old code the copy allocated the whole GiB (and
/// took about 20 s).
#[test]
fn copy_file_keeps_the_holes_of_a_sparse_file() {
    let env = TestEnv::new();
    let extent: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8 + 1).collect();
    let at = [512 * MIB, GIB - 4096];
    sparse(&env.path("sparse.img"), GIB, &extent, &at);
    if allocated(&env.path("sparse.img")) >= MIB {
        crate::util::require_or_skip("sparse copy", "this filesystem has no holes");
        return;
    }
    let server = Server::start(&args![env.root()]);
    assert_text(
        &copy(&server, "sparse.img", "copy.img"),
        "Successfully copied sparse.img to copy.img",
    );
    let got = allocated(&env.path("copy.img"));
    assert!(got < MIB, "the copy allocates {got} bytes");
    assert!(holds(&env.path("copy.img"), GIB, &extent, &at));
}

/// A copy is bounded by the source's size (`--max-copy-bytes`, 4 GiB by
/// default): a file at the bound is copied (a trailing hole kept), one byte
/// past it is refused before anything is made, and the destination stays
/// absent, with no temp file either. On the old code there was no bound
/// (and no flag).
#[test]
fn copy_file_is_bounded() {
    let env = TestEnv::new();
    sparse(&env.path("at.img"), MIB, b"x", &[0]);
    sparse(&env.path("over.img"), MIB + 1, b"x", &[0]);
    let server = Server::start(&args![env.root(), "--max-copy-bytes", MIB.to_string()]);
    copy(&server, "at.img", "at-copy.img").assert_ok();
    assert!(holds(&env.path("at-copy.img"), MIB, b"x", &[0]));
    assert_eq!(
        copy(&server, "over.img", "over-copy.img")
            .assert_error()
            .text,
        format!(
            "File too large: 'over.img' is {} bytes, over the {MIB}-byte limit; \
             files are copied up to --max-copy-bytes; nothing was copied",
            MIB + 1
        )
    );
    assert!(!env.exists("over-copy.img"));
    assert_eq!(temp_files(&env.root()), Vec::<String>::new());
    drop(server);
    sparse(&env.path("huge.img"), 4 * GIB + 1, b"x", &[0]);
    let server = Server::start(&args![env.root()]);
    copy(&server, "huge.img", "huge-copy.img").assert_error_contains(&format!(
        "'huge.img' is {} bytes, over the {}-byte limit",
        4 * GIB + 1,
        4 * GIB
    ));
    assert!(!env.exists("huge-copy.img"));
    assert_eq!(temp_files(&env.root()), Vec::<String>::new());
}
