//! Unit tests of the one writer.

use std::sync::Arc;

use super::temp::temp_name;
use super::*;
use crate::fs::record::Recorders;
use crate::fs::roots::Root;
use crate::fs::scope::resolve_in;

/// A temp directory opened as a root (through `roots::open`, the one
/// ambient-authority site), and the std path to inspect it.
fn root() -> (tempfile::TempDir, Arc<Root>) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = Arc::new(crate::fs::roots::open(tmp.path()).expect("open root"));
    (tmp, root)
}

/// `p` resolved for a write, as the server resolves every write (the
/// walk backend); an escape the walk refuses is that error.
fn walked(root: &Arc<Root>, p: &str) -> Result<Target> {
    let mut t = read_target(root, p);
    crate::fs::scope::walk(&mut t, crate::fs::resolve::Final::Follow)?;
    Ok(t)
}

fn target(root: &Arc<Root>, p: &str) -> Target {
    walked(root, p).expect("walk")
}

/// `p` as a read in a root whose rules hide nothing resolves it: the kernel
/// backend, which no writer takes.
fn read_target(root: &Arc<Root>, p: &str) -> Target {
    resolve_in(std::slice::from_ref(root), p, 4096).expect("resolve")
}

fn names(root: &Root) -> Vec<String> {
    let mut v: Vec<String> = root
        .dir
        .entries()
        .expect("entries")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn temp_names_are_hidden_random_and_bounded() {
    let a = temp_name("notes.txt").unwrap();
    let b = temp_name("notes.txt").unwrap();
    assert_ne!(a, b);
    assert!(
        a.starts_with(".notes.txt.tuls-") && a.ends_with(".tmp"),
        "{a}"
    );
    assert_eq!(a.len(), ".notes.txt.tuls-".len() + 16 + ".tmp".len());
    let long = "é".repeat(127); // 254 bytes
    let t = temp_name(&long).unwrap();
    assert!(t.len() <= 255, "{}", t.len());
    assert!(!t.contains('/'));
}

#[test]
fn replaces_keeping_mode_and_creates_with_umask() {
    let (_tmp, root) = root();
    root.dir.write("f", "old").unwrap();
    root.dir
        .set_permissions("f", Permissions::from_mode(0o640))
        .unwrap();
    write(&target(&root, "f"), b"new", &Recorders::NONE).unwrap();
    assert_eq!(root.dir.read("f").unwrap(), b"new");
    assert_eq!(root.dir.metadata("f").unwrap().mode() & 0o7777, 0o640);
    write(&target(&root, "g"), b"fresh", &Recorders::NONE).unwrap();
    root.dir.write("probe", "").unwrap(); // what the umask gives 0666
    let want = root.dir.metadata("probe").unwrap().mode() & 0o777;
    assert_eq!(root.dir.metadata("g").unwrap().mode() & 0o777, want);
    assert_eq!(names(&root), ["f", "g", "probe"]);
    // cap-std's handles are O_PATH: fsync on them directly fails.
    assert!(rustix::fs::fsync(&*root.dir).is_err());
    sync_dir(&root.dir).expect("a root handle can be fsynced");
    sync_dir(&root.dir.open_dir(".").unwrap()).expect("so can one opened beneath it");
}

#[test]
fn a_failure_after_the_temp_exists_removes_it_and_keeps_the_target() {
    let (_tmp, root) = root();
    root.dir.write("f", "v1").unwrap();
    let dest = Dest::locate(&target(&root, "f")).unwrap();
    // Someone else changes the file after it was located.
    std::thread::sleep(std::time::Duration::from_millis(10));
    root.dir.write("f", "v2-other").unwrap();
    let err = dest
        .replace(b"mine", Guard::Unchanged, &Recorders::NONE)
        .unwrap_err();
    assert!(matches!(err, Error::Changed { .. }), "{err}");
    assert_eq!(root.dir.read("f").unwrap(), b"v2-other");
    assert_eq!(names(&root), ["f"]);

    // The name becomes a non-empty directory: the rename itself fails.
    let dest = Dest::locate(&target(&root, "f")).unwrap();
    root.dir.remove_file("f").unwrap();
    root.dir.create_dir("f").unwrap();
    root.dir.write("f/keep", "k").unwrap();
    assert!(
        dest.replace(b"mine", Guard::None, &Recorders::NONE)
            .is_err()
    );
    assert_eq!(root.dir.read("f/keep").unwrap(), b"k");
    assert_eq!(names(&root), ["f"]);
}

/// An outside writer that rewrote the file in place within one
/// timestamp tick after the check (same identity, size and times: the
/// stamp check before the rename passes) is caught by content: the
/// exchange swaps its file out, the hash differs, it is swapped back.
/// The rewrite is stood in for by a check that saw other content.
#[test]
fn a_change_after_the_check_is_swapped_back_by_content() {
    let (_tmp, root) = root();
    root.dir.write("f", "v2-bbbb").unwrap();
    let dest = Dest::locate(&target(&root, "f")).unwrap();
    let guard = |named| Guard::Content {
        version: Version::of(b"v1-aaaa"),
        limit: 1 << 20,
        named,
    };
    let err = dest
        .replace(b"mine", guard(true), &Recorders::NONE)
        .unwrap_err();
    assert!(matches!(err, Error::VersionMismatch { .. }), "{err}");
    assert!(
        err.to_string().contains(Version::of(b"v2-bbbb").as_str()),
        "{err}"
    );
    assert_eq!(root.dir.read("f").unwrap(), b"v2-bbbb");
    assert_eq!(names(&root), ["f"]);
    // Without ifMatch (edit_file's own check) it is a plain "changed".
    let err = dest
        .replace(b"mine", guard(false), &Recorders::NONE)
        .unwrap_err();
    assert!(matches!(err, Error::Changed { .. }), "{err}");
    assert_eq!(root.dir.read("f").unwrap(), b"v2-bbbb");
    assert_eq!(names(&root), ["f"]);
    // The version it has: the write goes through (located afresh: the
    // swaps back changed its ctime).
    let dest = Dest::locate(&target(&root, "f")).unwrap();
    let ok = Guard::Content {
        version: Version::of(b"v2-bbbb"),
        limit: 1 << 20,
        named: true,
    };
    dest.replace(b"mine", ok, &Recorders::NONE).unwrap();
    assert_eq!(root.dir.read("f").unwrap(), b"mine");
    assert_eq!(names(&root), ["f"]);
}

#[test]
fn read_only_targets_are_refused_without_a_temp() {
    let (_tmp, root) = root();
    root.dir.write("ro", "keep").unwrap();
    root.dir
        .set_permissions("ro", Permissions::from_mode(0o444))
        .unwrap();
    let err = write(&target(&root, "ro"), b"x", &Recorders::NONE).unwrap_err();
    assert!(matches!(err, Error::ReadOnly { mode: 0o444, .. }), "{err}");
    assert_eq!(root.dir.read("ro").unwrap(), b"keep");
    assert_eq!(names(&root), ["ro"]);
}

#[test]
fn final_symlinks_are_followed_inside_and_refused_otherwise() {
    let (tmp, root) = root();
    root.dir.create_dir("sub").unwrap();
    root.dir.write("sub/real", "r").unwrap();
    root.dir.symlink("sub/real", "in").unwrap();
    root.dir.symlink("nowhere", "dangling").unwrap();
    root.dir.symlink("sub", "dirlink").unwrap();
    write(&target(&root, "in"), b"via", &Recorders::NONE).unwrap();
    assert_eq!(root.dir.read("sub/real").unwrap(), b"via");
    assert!(root.dir.symlink_metadata("in").unwrap().is_symlink());
    let err = write(&target(&root, "dangling"), b"x", &Recorders::NONE).unwrap_err();
    assert!(matches!(err, Error::DanglingSymlink { .. }), "{err}");
    assert!(root.dir.symlink_metadata("nowhere").is_err());
    let err = write(&target(&root, "dirlink"), b"x", &Recorders::NONE).unwrap_err();
    assert!(err.to_string().starts_with("EISDIR"), "{err}");
    // An absolute link is refused even when it points inside.
    #[allow(clippy::disallowed_methods)] // cap-std will not create one
    std::os::unix::fs::symlink(tmp.path().join("sub/real"), tmp.path().join("abs")).unwrap();
    assert!(
        walked(&root, "abs")
            .and_then(|t| write(&t, b"x", &Recorders::NONE))
            .unwrap_err()
            .is_outside()
    );
    // Out of the root, to a name that exists or not: the same refusal.
    root.dir.symlink("../../x", "sub/up").unwrap();
    assert!(
        walked(&root, "sub/up")
            .and_then(|t| write(&t, b"x", &Recorders::NONE))
            .unwrap_err()
            .is_outside()
    );
    root.dir.symlink("..", "sub/parent").unwrap();
    assert!(
        write(&target(&root, "sub/parent"), b"x", &Recorders::NONE)
            .unwrap_err()
            .to_string()
            .starts_with("EISDIR")
    );
    assert_eq!(root.dir.read("sub/real").unwrap(), b"via");
}

#[test]
fn chained_and_climbing_links_are_followed_hop_by_hop_and_loops_end() {
    let (_tmp, root) = root();
    root.dir.create_dir("sub").unwrap();
    root.dir.create_dir("sub/deeper").unwrap();
    root.dir.write("top.txt", "t").unwrap();
    root.dir.symlink("../top.txt", "sub/up").unwrap();
    root.dir.symlink("sub/up", "chain").unwrap();
    // `sub/deeper/..` is resolved by the kernel: `sub`, whatever the string says.
    root.dir.symlink("deeper/../up", "sub/round").unwrap();
    write(&target(&root, "chain"), b"1", &Recorders::NONE).unwrap();
    assert_eq!(root.dir.read("top.txt").unwrap(), b"1");
    write(&target(&root, "sub/round"), b"2", &Recorders::NONE).unwrap();
    assert_eq!(root.dir.read("top.txt").unwrap(), b"2");
    root.dir.symlink("l2", "l1").unwrap();
    root.dir.symlink("l1", "l2").unwrap();
    let err = write(&target(&root, "l1"), b"x", &Recorders::NONE).unwrap_err();
    assert!(err.to_string().starts_with("ELOOP"), "{err}");
    assert_eq!(names(&root), ["chain", "l1", "l2", "sub", "top.txt"]);
}

/// A target resolved for reading only (the kernel backend, not walked)
/// never reaches a write, in a root with rules or without: every writer
/// refuses it with an internal error before touching anything; walked, it
/// is written.
#[test]
fn an_unwalked_target_is_refused_by_every_writer() {
    let (tmp, plain) = root();
    let mut ruled = crate::fs::roots::open(tmp.path()).expect("open root");
    let rule = crate::rules::config::read_only_dir("ro", "ro");
    ruled.rules = Arc::new(crate::rules::Rules::new(vec![rule]).expect("rules"));
    let ruled = Arc::new(ruled);
    ruled.dir.write("f", "old").unwrap();
    let internal = |r: Result<()>| {
        let e = r.expect_err("refused");
        assert!(matches!(e, Error::Internal(_)), "{e}");
    };
    for root in [&ruled, &plain] {
        internal(Dest::locate(&read_target(root, "f")).map(drop));
        internal(Dest::locate(&read_target(root, "new")).map(drop));
        internal(Dest::locate_new(&read_target(root, "new")).map(drop));
        internal(read_target(root, "f").check_write("open"));
        internal(write(&read_target(root, "f"), b"new", &Recorders::NONE));
        internal(crate::fs::mkdir::create_dir_all(
            &read_target(root, "d"),
            &Recorders::NONE,
        ));
        let (s, d) = (read_target(root, "f"), read_target(root, "g"));
        internal(crate::fs::rename::check_move(&s, &d, &root.dir, "f", 100));
        internal(crate::fs::rename::check_move(
            &s,
            &target(root, "d"),
            &root.dir,
            "f",
            100,
        ));
    }
    assert_eq!(names(&ruled), ["f"]);
    assert_eq!(ruled.dir.read("f").unwrap(), b"old");
    // Walked, the same writes go through.
    write(&target(&ruled, "f"), b"new", &Recorders::NONE).unwrap();
    crate::fs::mkdir::create_dir_all(&target(&ruled, "d"), &Recorders::NONE).unwrap();
    assert_eq!(ruled.dir.read("f").unwrap(), b"new");
    write(&target(&plain, "g"), b"fresh", &Recorders::NONE).unwrap();
    assert_eq!(names(&plain), ["d", "f", "g"]);
}
