//! Both backends over one case table, as libpathrs's `resolve_tests!`:
//! every path must reach the same object (device and inode), or fail the
//! same way (outside, missing, not a directory, a loop), whether the
//! kernel resolves it at use or the walk resolves it first.

use std::sync::Arc;

use crate::fs::roots::Root;
use crate::fs::scope::{Target, resolve_in, walk};

use super::Final;

/// A tree with every kind of component the resolvers take.
#[allow(clippy::disallowed_methods)] // the fixture, made before any root is open
fn tree() -> (tempfile::TempDir, Arc<Root>) {
    let tmp = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(tmp.path().join("root")).expect("root");
    std::fs::create_dir(tmp.path().join("outside")).expect("outside");
    std::fs::write(tmp.path().join("outside/secret"), "s").expect("secret");
    let root = Arc::new(crate::fs::roots::open(&tmp.path().join("root")).expect("open root"));
    let d = &root.dir;
    d.create_dir_all("a/b/c").unwrap();
    d.write("a/b/c/f.txt", "f").unwrap();
    d.write("top.txt", "t").unwrap();
    d.create_dir_all("store.git/hooks").unwrap();
    d.write("store.git/hooks/pre-commit", "h").unwrap();
    for (target, link) in [
        ("store.git", ".git"),
        ("a/b", "ab"),
        ("ab/c", "abc"),
        ("abc/f.txt", "fl"),
        ("../top.txt", "a/up"),
        ("../../..", "a/b/c/rootlink"),
        ("missing", "dangling"),
        ("../outside", "out"),
        ("../../../outside/secret", "a/b/out2"),
        ("loop2", "loop1"),
        ("loop1", "loop2"),
        ("a/b/c/..", "cdots"),
        ("top.txt/x", "through_file"),
    ] {
        d.symlink(target, link).unwrap();
    }
    // cap-std will not make an absolute link.
    std::os::unix::fs::symlink(tmp.path().join("root/top.txt"), tmp.path().join("root/abs"))
        .unwrap();
    (tmp, root)
}

const PATHS: &[&str] = &[
    "",
    ".",
    "top.txt",
    "a",
    "a/b/c/f.txt",
    "a/./b//c/f.txt",
    "a/b/../b/c/f.txt",
    ".git/hooks/pre-commit",
    ".git/hooks",
    "ab/c/f.txt",
    "abc/f.txt",
    "fl",
    "a/up",
    "a/b/c/rootlink/top.txt",
    "a/b/c/rootlink/a/b/c/rootlink/top.txt",
    "abc/../c/f.txt",
    "ab/..",
    "ab/../top.txt",
    "cdots/c/f.txt",
    "missing",
    "a/missing/x",
    "dangling",
    "dangling/x",
    "top.txt/x",
    "through_file",
    "fl/x",
    "out",
    "out/secret",
    "a/b/out2",
    "loop1",
    "loop1/x",
    "abs",
    "a/..",
    "a/b/c/../../../top.txt",
];

/// How a path came out: the object reached, or the kind of failure.
fn outcome(t: Result<Target, crate::error::Error>) -> String {
    let t = match t {
        Ok(t) => t,
        Err(e) if e.is_outside() => return "outside".to_owned(),
        Err(e) => return format!("resolve: {e}"),
    };
    match t.metadata("open") {
        Ok(md) => {
            use cap_std::fs::MetadataExt as _;
            format!("{}:{}", md.dev(), md.ino())
        }
        Err(e) if e.is_outside() => "outside".to_owned(),
        Err(e) => e
            .to_string()
            .split(':')
            .next()
            .unwrap_or_default()
            .to_owned(),
    }
}

#[test]
fn both_backends_reach_the_same_object() {
    let (_tmp, root) = tree();
    let roots = [root];
    let mut reached = 0;
    for p in PATHS {
        let kernel = resolve_in(&roots, p, 4096);
        let walked = resolve_in(&roots, p, 4096).and_then(|mut t| {
            walk(&mut t, Final::Follow)?;
            Ok(t)
        });
        if let Ok(t) = &kernel {
            assert!(t.walked().is_none(), "{p}: resolve_in walked");
        }
        if let Ok(t) = &walked {
            assert!(t.walked().is_some(), "{p}: not walked");
        }
        let (k, w) = (outcome(kernel), outcome(walked));
        assert_eq!(k, w, "{p}: the kernel backend and the walk disagree");
        reached += usize::from(k.contains(':') && !k.starts_with('E'));
    }
    // The table reaches objects, not only failures.
    assert!(reached >= 15, "{reached}");
}

/// The walk's canonical path, for the cases where it names one.
#[test]
fn the_walk_names_the_canonical_path() {
    let (_tmp, root) = tree();
    let roots = [root];
    for (p, canonical) in [
        ("top.txt", "top.txt"),
        (".git/hooks/pre-commit", "store.git/hooks/pre-commit"),
        ("abc/f.txt", "a/b/c/f.txt"),
        ("fl", "a/b/c/f.txt"),
        ("a/up", "top.txt"),
        ("a/b/c/rootlink/top.txt", "top.txt"),
        ("cdots/c/f.txt", "a/b/c/f.txt"),
        ("ab/..", "a"),
        ("a/missing/x", "a/missing/x"),
    ] {
        let mut t = resolve_in(&roots, p, 4096).unwrap();
        walk(&mut t, Final::Follow).unwrap();
        assert_eq!(t.resolved().local, canonical, "{p}");
    }
}
