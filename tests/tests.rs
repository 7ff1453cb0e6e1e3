//! The single integration-test binary for `tuls`.
//!
//! The harness lives in `tests/util/`, one module per topic (see the module docs
//! of `tests/util/mod.rs`). Test modules go in `tests/suite/<area>/` (one
//! folder per area, declared inside `mod suite` below) — NOT as
//! `tests/<name>.rs`, because Cargo builds every top-level `tests/*.rs` file as a
//! separate test binary (which would not see `util`).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)] // tests build fixtures with std::fs

#[macro_use]
mod util;

/// Test modules, one per area: `tests/suite/<area>.rs`, or
/// `tests/suite/<area>/mod.rs` with one file per topic. Add a test to the
/// area it checks, not to a file named after the change that brought it.
mod suite {
    mod bounds;
    mod config;
    mod docs;
    mod edge;
    mod escape;
    mod list;
    mod protocol;
    mod races;
    mod read;
    mod roots;
    mod rules;
    mod search;
    mod write;
}

/// End-to-end smoke test of the server through the rmcp client.
mod smoke {
    use serde_json::json;

    use crate::util::{Server, TestEnv};

    #[test]
    fn lists_tools_and_reads_a_file() {
        let env = TestEnv::new();
        env.write("hello.txt", "hello from the harness\n");
        let server = Server::start(&args![env.root()]);

        let tools = server.tool_names();
        assert!(
            tools.iter().any(|t| t == "read_text_file"),
            "read_text_file missing from tools/list: {tools:?}"
        );

        let allowed = server.call("list_allowed_directories", json!({}));
        allowed.assert_ok();
        let root = env.root();
        assert!(
            allowed
                .text
                .contains(root.to_str().expect("UTF-8 temp path")),
            "allowed directories {:?} do not mention {}",
            allowed.text,
            root.display()
        );

        let read = server.call("read_text_file", json!({"path": env.path_str("hello.txt")}));
        read.assert_ok();
        assert!(
            read.text.contains("hello from the harness"),
            "unexpected read_text_file reply: {:?}",
            read.raw
        );
        env.assert_canary_intact();
    }
}

/// Checks of the harness itself (no server needed).
mod harness_selftest {
    use std::path::Path;

    use crate::util::{CANARY_CONTENT, Kind, OtherFs, TestEnv, device, file_uri, require_or_skip};

    #[test]
    fn env_layout_and_fixture_helpers() {
        let env = TestEnv::new();
        assert_eq!(env.root(), env.base().join("root"));
        assert_eq!(
            std::fs::read_to_string(env.canary()).expect("canary"),
            CANARY_CONTENT
        );

        env.write("a/b/c.txt", "x");
        assert_eq!(env.read("a/b/c.txt"), b"x");
        env.mkdir("d/e");
        env.symlink(env.canary(), "link");
        env.symlink("missing", "dangling");
        env.mkfifo("pipe");
        assert!(env.exists("a/b/c.txt") && env.exists("d/e") && env.exists("dangling"));
        assert!(!env.exists("nope"));

        let snap = env.snapshot("");
        assert_eq!(snap[Path::new("link")].kind, Kind::Symlink(env.canary()));
        assert_eq!(snap[Path::new("pipe")].kind, Kind::Fifo);
        assert_eq!(snap[Path::new("d/e")].kind, Kind::Dir);
        env.assert_canary_intact();
    }

    #[test]
    fn snapshot_detects_changes() {
        let env = TestEnv::new();
        let before = env.snapshot_outside();
        assert_eq!(before, env.snapshot_outside());

        std::fs::write(env.canary(), "CANARY-OUTSIDE-7f3b").expect("overwrite canary");
        std::fs::write(env.outside().join("new"), "").expect("create file");
        let diff = before.diff(&env.snapshot_outside());
        assert_eq!(diff.len(), 2, "{diff:#?}");
    }

    /// Next to `/dev/shm` itself, a second filesystem needs a fresh tmpfs
    /// (as root) or an honest reason why there is none.
    #[test]
    fn other_fs_is_on_another_device_even_next_to_dev_shm() {
        let near = Path::new("/dev/shm");
        if !near.is_dir() {
            require_or_skip("a second filesystem next to /dev/shm", "no /dev/shm");
            return;
        }
        match OtherFs::new(near) {
            Ok(other) => {
                assert_ne!(device(other.path()), device(near));
                std::fs::write(other.path().join("f"), "x").expect("write on it");
            }
            Err(why) => require_or_skip("a second filesystem next to /dev/shm", &why),
        }
    }

    #[test]
    fn file_uri_encodes() {
        assert_eq!(file_uri("/tmp/a b/%x"), "file:///tmp/a%20b/%25x");
    }
}
