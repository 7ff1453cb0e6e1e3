//! `move_file` over stdio (issue 3 §5): the reference's texts, no overwrite
//! ever (files, directories, itself), a symlink source moves the link (a
//! deliberate difference from the reference), moves between roots, `EXDEV`
//! and a directory into itself refused clearly.

use std::path::Path;

use serde_json::json;

use crate::util::{
    OtherFs, Reply, Server, Snapshot, TestEnv, assert_text, device, path_string, require_or_skip,
};

fn mv(server: &Server, from: &str, to: &str) -> Reply {
    server.call("move_file", json!({"source": from, "destination": to}))
}

#[test]
fn move_file_renames_files_and_directories() {
    let env = TestEnv::new();
    env.write("a.txt", "A");
    env.write("dir-a/inner.txt", "I");
    env.mkdir("dest");
    let server = Server::start(&args![env.root()]);
    let (from, to) = (env.path_str("a.txt"), env.path_str("moved.txt"));
    assert_text(
        &mv(&server, &from, &to),
        &format!("Successfully moved {from} to {to}"),
    );
    assert!(!env.exists("a.txt"));
    assert_eq!(env.read("moved.txt"), b"A");

    let (from, to) = (env.path_str("dir-a"), env.path_str("dest/dir-a"));
    assert_text(
        &mv(&server, &from, &to),
        &format!("Successfully moved {from} to {to}"),
    );
    assert_eq!(env.read("dest/dir-a/inner.txt"), b"I");

    assert_text(
        &mv(&server, "moved.txt", "dest/renamed.txt"),
        "Successfully moved moved.txt to dest/renamed.txt",
    );
    assert_eq!(env.read("dest/renamed.txt"), b"A");
}

#[test]
fn move_file_never_replaces_anything() {
    let env = TestEnv::new();
    env.write("src.txt", "source");
    env.write("existing.txt", "existing");
    env.write("dir/keep.txt", "k");
    env.symlink("nowhere", "dangling");
    let server = Server::start(&args![env.root()]);
    let before = env.snapshot("");
    let from = env.path_str("src.txt");
    for to in [
        env.path_str("existing.txt"),
        env.path_str("dir"),
        env.path_str("dangling"),
        from.clone(),
        path_string(env.root()),
    ] {
        let reply = mv(&server, &from, &to);
        assert_eq!(
            reply.assert_error().text,
            format!("Destination already exists: {to}")
        );
    }
    before.assert_same(&env.snapshot(""), "root");
}

#[test]
fn move_file_error_paths() {
    let env = TestEnv::new();
    env.write("f.txt", "f");
    env.write("d/sub/x", "x");
    let server = Server::start(&args![env.root()]);
    let before = env.snapshot("");

    let (from, to) = (env.path_str("missing.txt"), env.path_str("x.txt"));
    assert_eq!(
        mv(&server, &from, &to).assert_error().text,
        format!("ENOENT: no such file or directory, rename '{from}' -> '{to}'")
    );
    let (from, to) = (env.path_str("f.txt"), env.path_str("nodir/m.txt"));
    assert_eq!(
        mv(&server, &from, &to).assert_error().text,
        format!("Parent directory does not exist: {}", env.path_str("nodir"))
    );
    let (from, to) = (env.path_str("d"), env.path_str("d/sub/d2"));
    assert_eq!(
        mv(&server, &from, &to).assert_error().text,
        format!(
            "Cannot move '{from}' to '{to}': a directory cannot be moved into itself or into one of its own subdirectories"
        )
    );
    let (from, to) = (env.path_str("f.txt/"), env.path_str("g.txt"));
    assert_eq!(
        mv(&server, &from, &to).assert_error().text,
        format!("ENOTDIR: not a directory, rename '{from}' -> '{to}'")
    );
    let root = path_string(env.root());
    mv(&server, &root, &env.path_str("elsewhere"))
        .assert_error_contains("names an allowed directory itself");
    let reply = server.call(
        "move_file",
        json!({"source": env.path_str("f.txt"), "destination": env.path_str("r3.txt"), "overwrite": true}),
    );
    reply.assert_error_contains("unknown field");
    let reply = server.call("move_file", json!({"source": env.path_str("f.txt")}));
    reply.assert_error_contains("destination");
    before.assert_same(&env.snapshot(""), "root");
}

#[test]
fn move_file_moves_a_symlink_itself_not_its_target() {
    let env = TestEnv::new();
    env.write("hello.txt", "hi");
    env.symlink("hello.txt", "link_in");
    let server = Server::start(&args![env.root()]);
    mv(
        &server,
        &env.path_str("link_in"),
        &env.path_str("link_moved"),
    )
    .assert_ok();
    assert!(!env.exists("link_in"));
    let md = std::fs::symlink_metadata(env.path("link_moved")).expect("lstat");
    assert!(md.file_type().is_symlink());
    assert_eq!(
        std::fs::read_link(env.path("link_moved")).expect("readlink"),
        Path::new("hello.txt")
    );
    assert_eq!(env.read("hello.txt"), b"hi", "the target stays put");
}

#[test]
fn move_file_between_two_roots_on_one_filesystem() {
    let env = TestEnv::new();
    let root2 = env.base().join("root2");
    std::fs::create_dir(&root2).expect("root2");
    env.write("a.txt", "A");
    std::fs::write(root2.join("b.txt"), "B").expect("b");
    let server = Server::start(&args![env.root(), root2]);
    let (from, to) = (env.path_str("a.txt"), path_string(root2.join("a.txt")));
    assert_text(
        &mv(&server, &from, &to),
        &format!("Successfully moved {from} to {to}"),
    );
    assert_eq!(std::fs::read(root2.join("a.txt")).expect("read"), b"A");
    let (from, to) = (path_string(root2.join("b.txt")), env.path_str("b.txt"));
    mv(&server, &from, &to).assert_ok();
    assert_eq!(env.read("b.txt"), b"B");
}

#[test]
fn move_file_across_filesystems_is_refused_not_copied() {
    let env = TestEnv::new();
    let other_fs = match OtherFs::new(&env.root()) {
        Ok(other_fs) => other_fs,
        Err(why) => {
            require_or_skip("move_file across filesystems (EXDEV)", &why);
            return;
        }
    };
    let other = other_fs.path().to_owned();
    assert_ne!(device(&other), device(&env.root()), "two filesystems");
    env.write("a.txt", "A");
    let server = Server::start(&args![env.root(), other]);
    let before = Snapshot::take(&other);
    let (from, to) = (env.path_str("a.txt"), path_string(other.join("a.txt")));
    assert_eq!(
        mv(&server, &from, &to).assert_error().text,
        format!(
            "Cannot move '{from}' to '{to}': they are on different filesystems, and move_file only renames, it never copies"
        )
    );
    assert_eq!(env.read("a.txt"), b"A");
    before.assert_same(&Snapshot::take(&other), "the other filesystem");
}
