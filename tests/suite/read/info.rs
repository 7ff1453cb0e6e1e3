//! `get_file_info` and `list_allowed_directories` over stdio, against the
//! reference server's formats (`@modelcontextprotocol/server-filesystem`
//! 2026.8.31; `hardLinks` from 2.3.0), and how a request path
//! picks its root: relative paths resolve against the first root, absolute
//! ones by whole path components.

use std::fs::{File, FileTimes, Permissions};
use std::os::unix::fs::PermissionsExt as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;

use crate::util::{Options, Server, TestEnv, assert_err, assert_text};

/// 2026-11-30 04:47:42 UTC and 2001-09-09 01:46:40 UTC.
const MTIME: u64 = 1_796_014_062;
const MTIME_JS: &str = "Mon Nov 30 2026 04:47:42 GMT+0000 (Coordinated Universal Time)";
const ATIME: u64 = 1_000_000_000;
const ATIME_JS: &str = "Sun Sep 09 2001 01:46:40 GMT+0000 (Coordinated Universal Time)";

fn set_times(path: &std::path::Path) {
    let f = File::open(path).expect("open for set_times");
    f.set_times(
        FileTimes::new()
            .set_modified(UNIX_EPOCH + Duration::from_secs(MTIME))
            .set_accessed(UNIX_EPOCH + Duration::from_secs(ATIME)),
    )
    .expect("set_times");
}

/// `Date#toString()` in UTC, for the birth time we cannot set.
fn js_date(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).expect("after epoch").as_secs();
    chrono::DateTime::from_timestamp(secs as i64, 0)
        .expect("timestamp")
        .format("%a %b %d %Y %H:%M:%S GMT+0000 (Coordinated Universal Time)")
        .to_string()
}

fn created(path: &std::path::Path) -> String {
    // `created` is the birth time; where the filesystem has none, the
    // server prints the epoch.
    std::fs::metadata(path)
        .and_then(|m| m.created())
        .map(js_date)
        .unwrap_or_else(|_| js_date(UNIX_EPOCH))
}

fn info(size: u64, created: &str, dir: bool, file: bool, perms: &str, links: u64) -> String {
    format!(
        "size: {size}\ncreated: {created}\nmodified: {MTIME_JS}\naccessed: {ATIME_JS}\n\
         isDirectory: {dir}\nisFile: {file}\npermissions: {perms}\nhardLinks: {links}"
    )
}

#[test]
fn get_file_info_of_a_file_prints_the_reference_lines_in_utc() {
    let env = TestEnv::new();
    let path = env.write("hello.txt", "line1\nline2\nline3\n");
    env.chmod("hello.txt", 0o640);
    set_times(&path);
    // A second name: `hardLinks: 2`, as the reference 2.3.0 prints it.
    env.hardlink("hello.txt", "again.txt");
    let expected = info(18, &created(&path), false, true, "640", 2);
    for tz in ["UTC", "America/New_York", "Asia/Kolkata"] {
        let server = Server::start_with(&args![env.root()], Options::new().env("TZ", tz));
        for p in [env.path_str("hello.txt"), "hello.txt".to_owned()] {
            assert_text(
                &server.call("get_file_info", json!({ "path": p })),
                &expected,
            );
        }
    }
}

#[test]
fn get_file_info_directories_symlinks_and_special_files() {
    let env = TestEnv::new();
    let dir = env.mkdir("sub");
    std::fs::set_permissions(&dir, Permissions::from_mode(0o751)).expect("chmod");
    let file = env.write("sub/data.bin", vec![b'z'; 12_345]);
    env.chmod("sub/data.bin", 0o4751);
    env.symlink("sub/data.bin", "link_file");
    env.symlink("sub", "link_dir");
    env.symlink("../link_file", "sub/link_up");
    let fifo = env.mkfifo("pipe");
    set_times(&file);
    set_times(&dir);
    let server = Server::start(&args![env.root()]);

    // A setuid file shows only the last three octal digits.
    let file_info = info(12_345, &created(&file), false, true, "751", 1);
    assert_text(
        &server.call("get_file_info", json!({"path": "sub/data.bin"})),
        &file_info,
    );
    // In-root symlinks are followed: the target's metadata, not the link's.
    assert_text(
        &server.call("get_file_info", json!({"path": "link_file"})),
        &file_info,
    );
    assert_text(
        &server.call("get_file_info", json!({"path": "sub/link_up"})),
        &file_info,
    );
    let dir_size = std::fs::metadata(&dir).expect("stat dir").len();
    let dir_links =
        std::os::unix::fs::MetadataExt::nlink(&std::fs::metadata(&dir).expect("stat dir"));
    let dir_info = info(dir_size, &created(&dir), true, false, "751", dir_links);
    assert_text(
        &server.call("get_file_info", json!({"path": "sub"})),
        &dir_info,
    );
    assert_text(
        &server.call("get_file_info", json!({"path": "link_dir/"})),
        &dir_info,
    );
    // A FIFO is stat'ed, never opened: no blocking.
    let reply = server.call("get_file_info", json!({"path": "pipe"}));
    reply.assert_ok();
    assert!(
        reply.text.starts_with("size: 0\n")
            && reply
                .text
                .ends_with("\nisDirectory: false\nisFile: false\npermissions: 644\nhardLinks: 1"),
        "{:?}",
        reply.text
    );
    drop(fifo);
    // The root itself, spelled four ways.
    let root_size = std::fs::metadata(env.root()).expect("stat root").len();
    for p in [
        env.path_str(""),
        ".".to_owned(),
        "".to_owned(),
        "sub/..".to_owned(),
    ] {
        let reply = server.call("get_file_info", json!({ "path": p }));
        reply.assert_ok();
        assert!(
            reply.text.starts_with(&format!("size: {root_size}\n"))
                && reply.text.contains("\nisDirectory: true\nisFile: false\n"),
            "{p:?}: {:?}",
            reply.text
        );
    }
}

#[test]
fn get_file_info_errors() {
    let env = TestEnv::new();
    env.write("hello.txt", "x");
    env.symlink("nowhere", "dangling");
    env.symlink("../outside/canary.txt", "link_out");
    let server = Server::start(&args![env.root()]);
    let nope = env.path_str("nope");
    assert_err(
        &server.call("get_file_info", json!({ "path": nope })),
        &format!("ENOENT: no such file or directory, stat '{nope}'"),
    );
    assert_err(
        &server.call("get_file_info", json!({"path": "dangling"})),
        "ENOENT: no such file or directory, stat 'dangling'",
    );
    assert_err(
        &server.call("get_file_info", json!({"path": "hello.txt/x"})),
        "ENOTDIR: not a directory, stat 'hello.txt/x'",
    );
    for p in ["link_out", "..", "../outside/canary.txt"] {
        assert_err(
            &server.call("get_file_info", json!({ "path": p })),
            &server.escape_denial(p),
        );
    }
    server
        .call(
            "get_file_info",
            json!({"path": "hello.txt", "follow": false}),
        )
        .assert_error_contains("unknown field `follow`");
    server
        .call("get_file_info", json!({}))
        .assert_error_contains("missing field `path`");
}

#[test]
fn list_allowed_directories_lists_every_spelling_in_order() {
    let env = TestEnv::new();
    let root2 = env.base().join("root2");
    std::fs::create_dir(&root2).expect("root2");
    std::os::unix::fs::symlink("root", env.base().join("rootlink")).expect("rootlink");
    let root = env.root().display().to_string();
    let root2 = root2.display().to_string();
    let rootlink = env.base().join("rootlink").display().to_string();

    let server = Server::start(&args![env.root()]);
    let reply = server.call("list_allowed_directories", json!({}));
    reply.assert_ok();
    // The roots, then (by default) the built-in protections: read-only
    // patterns are named, hidden ones never are.
    let (dirs, rules) = reply
        .text
        .split_once("\n\n")
        .expect("a path-rules paragraph");
    assert_eq!(dirs, format!("Allowed directories:\n{root}"));
    assert!(
        rules.starts_with("Path rules are in force. Read-only"),
        "{rules}"
    );
    assert!(
        rules.contains(".git, ") && rules.contains("(except .claude/commands"),
        "{rules}"
    );
    let bare = Server::start(&args![env.root(), "--no-default-protection"]);
    assert_text(
        &bare.call("list_allowed_directories", json!({})),
        &format!("Allowed directories:\n{root}"),
    );
    let hiding = Server::start(&args![
        env.root(),
        "--no-default-protection",
        "--hide",
        "secret-name"
    ]);
    let text = hiding.call("list_allowed_directories", json!({})).text;
    assert!(!text.contains("secret-name"), "{text}");
    // No arguments at all is the same as {}.
    assert_eq!(
        server
            .call("list_allowed_directories", serde_json::Value::Null)
            .text,
        reply.text
    );
    server
        .call("list_allowed_directories", json!({"path": "."}))
        .assert_error_contains("unknown field `path`");

    // Order kept; a root given through a symlink shows both spellings, the
    // given one first; a trailing slash is dropped.
    let server = Server::start(&args![
        &root2,
        format!("{rootlink}/"),
        "--no-default-protection"
    ]);
    assert_text(
        &server.call("list_allowed_directories", json!({})),
        &format!("Allowed directories:\n{root2}\n{rootlink}\n{root}"),
    );
    // Both spellings of the symlinked root work.
    env.write("hello.txt", "hi\n");
    for p in [format!("{rootlink}/hello.txt"), format!("{root}/hello.txt")] {
        assert_text(&server.call("read_text_file", json!({ "path": p })), "hi\n");
    }

    // A relative root is made absolute against the server's working directory.
    let server = Server::start_with(
        &args!["root", "--no-default-protection"],
        Options::new().current_dir(env.base()),
    );
    assert_text(
        &server.call("list_allowed_directories", json!({})),
        &format!("Allowed directories:\n{root}"),
    );
}

#[test]
fn relative_paths_use_the_first_root_and_absolute_paths_whole_components() {
    let env = TestEnv::new();
    let root2 = env.base().join("root2");
    std::fs::create_dir(&root2).expect("root2");
    std::fs::write(root2.join("r2.txt"), "r2\n").expect("r2");
    std::fs::write(root2.join("both.txt"), "from root2\n").expect("both");
    env.write("both.txt", "from root\n");
    // `root-evil` shares `root`'s prefix; `2` would be its "rest" under a
    // string-prefix match of `root2`.
    std::fs::create_dir(env.base().join("root-evil")).expect("root-evil");
    std::fs::write(env.base().join("root-evil/e.txt"), "EVIL\n").expect("e");
    env.write("2/r2.txt", "WRONG ROOT\n");
    let server = Server::start(&args![env.root(), &root2]);
    let r2 = root2.display().to_string();

    assert_text(
        &server.call("read_text_file", json!({"path": "both.txt"})),
        "from root\n",
    );
    assert_text(
        &server.call("read_text_file", json!({"path": format!("{r2}/both.txt")})),
        "from root2\n",
    );
    assert_text(
        &server.call("read_text_file", json!({"path": format!("{r2}/r2.txt")})),
        "r2\n",
    );
    // Only in the second root: a relative path does not find it.
    assert_err(
        &server.call("read_text_file", json!({"path": "r2.txt"})),
        "ENOENT: no such file or directory, open 'r2.txt'",
    );
    // Climbing out of the first root into the second is refused (the
    // reference allows it).
    assert_err(
        &server.call("read_text_file", json!({"path": "../root2/r2.txt"})),
        "Access denied - path outside allowed directories: ../root2/r2.txt",
    );
    let evil = env.base().join("root-evil/e.txt").display().to_string();
    assert_err(
        &server.call("read_text_file", json!({ "path": evil })),
        &format!("Access denied - path outside allowed directories: {evil}"),
    );
    // Listing the second root lists the second root.
    assert_text(
        &server.call("list_directory", json!({ "path": r2 })),
        "[FILE] both.txt\n[FILE] r2.txt",
    );
    assert_text(
        &server.call("list_directory", json!({"path": format!("{r2}/")})),
        "[FILE] both.txt\n[FILE] r2.txt",
    );
}
