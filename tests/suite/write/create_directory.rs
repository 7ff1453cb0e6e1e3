//! `create_directory` over stdio (issue 3 §4): recursive and idempotent, the
//! reference's texts, component by component beneath the root, existing
//! in-root symlinked directories followed, files in the way refused.

use std::os::unix::fs::PermissionsExt as _;

use serde_json::json;

use crate::util::{Server, TestEnv, assert_text};

fn is_dir(env: &TestEnv, rel: &str) -> bool {
    std::fs::symlink_metadata(env.path(rel)).is_ok_and(|m| m.is_dir())
}

#[test]
fn create_directory_is_recursive_and_idempotent() {
    let env = TestEnv::new();
    let server = Server::start(&args![env.root()]);
    let p = env.path_str("a/b/c");
    for _ in 0..2 {
        assert_text(
            &server.call("create_directory", json!({"path": p})),
            &format!("Successfully created directory {p}"),
        );
        assert!(is_dir(&env, "a/b/c"));
    }
    // 0777 minus the umask, as mkdir(2) gives.
    let probe = env.base().join("umask-probe");
    std::fs::create_dir(&probe).expect("probe dir");
    let want = std::fs::metadata(&probe)
        .expect("stat")
        .permissions()
        .mode()
        & 0o777;
    let got = std::fs::metadata(env.path("a/b"))
        .expect("stat")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(got, want);

    let root = env.root().to_str().expect("utf-8").to_owned();
    assert_text(
        &server.call("create_directory", json!({"path": root})),
        &format!("Successfully created directory {root}"),
    );
    assert_text(
        &server.call("create_directory", json!({"path": "rel/dir/"})),
        "Successfully created directory rel/dir/",
    );
    assert!(is_dir(&env, "rel/dir"));
    // `.` and a `..` that stays inside are the kernel's business.
    server
        .call("create_directory", json!({"path": "x/./y/../z"}))
        .assert_ok();
    assert!(is_dir(&env, "x/y") && is_dir(&env, "x/z"));
    env.assert_canary_intact();
}

#[test]
fn create_directory_files_in_the_way() {
    let env = TestEnv::new();
    env.write("hello.txt", "hi");
    let server = Server::start(&args![env.root()]);
    let p = env.path_str("hello.txt");
    assert_eq!(
        server
            .call("create_directory", json!({"path": p}))
            .assert_error()
            .text,
        format!("EEXIST: file already exists, mkdir '{p}'")
    );
    let p = env.path_str("hello.txt/sub");
    assert_eq!(
        server
            .call("create_directory", json!({"path": p}))
            .assert_error()
            .text,
        format!("ENOTDIR: not a directory, mkdir '{p}'")
    );
    assert_eq!(env.read("hello.txt"), b"hi");
    let reply = server.call(
        "create_directory",
        json!({"path": env.path_str("newdir2"), "mode": 448}),
    );
    reply.assert_error_contains("unknown field");
    assert!(!env.exists("newdir2"));
}

#[test]
fn create_directory_follows_in_root_links_and_refuses_dangling_ones() {
    let env = TestEnv::new();
    env.mkdir("real");
    env.symlink("real", "alias");
    env.symlink("nowhere", "dangling");
    let server = Server::start(&args![env.root()]);
    server
        .call(
            "create_directory",
            json!({"path": env.path_str("alias/n/m")}),
        )
        .assert_ok();
    assert!(is_dir(&env, "real/n/m"));
    assert!(
        std::fs::symlink_metadata(env.path("alias"))
            .expect("lstat")
            .file_type()
            .is_symlink()
    );
    // The link itself as the final component: it is an existing directory.
    server
        .call("create_directory", json!({"path": env.path_str("alias")}))
        .assert_ok();

    for rel in ["dangling", "dangling/sub"] {
        let p = env.path_str(rel);
        assert_eq!(
            server
                .call("create_directory", json!({"path": p}))
                .assert_error()
                .text,
            format!(
                "Refusing to write through a dangling symbolic link: '{p}' (its target does not exist)"
            )
        );
    }
    assert!(!env.exists("nowhere"));
}

/// `..` after a name that does not exist yet: made as `mkdir -p` makes it
/// (each name, then back up), never refused as a directory moved mid-call
/// (found by an attack: `nothere/..` and `exists/deep/new/../n2` were).
#[test]
fn dot_dot_after_a_new_name_makes_what_mkdir_p_makes() {
    let env = TestEnv::new();
    env.mkdir("exists/deep");
    let server = Server::start(&args![env.root()]);
    for (path, made) in [
        ("nothere/..", &["nothere"][..]),
        ("exists/new/..", &["exists/new"][..]),
        (
            "exists/deep/new/../n2",
            &["exists/deep/new", "exists/deep/n2"][..],
        ),
        ("x/y/..", &["x/y"][..]),
        ("a/b/../c", &["a/b", "a/c"][..]),
    ] {
        assert_text(
            &server.call("create_directory", json!({"path": path})),
            &format!("Successfully created directory {path}"),
        );
        for dir in made {
            assert!(is_dir(&env, dir), "{path}: {dir} not made");
        }
    }
    // Above the root stays refused, and nothing is made on the way.
    let r = server.call("create_directory", json!({"path": "m/../../z"}));
    assert!(r.is_error, "{}", r.text);
    assert!(!env.exists("m"));
}
