//! resolve: random path strings against a tree full of symlinks that lead out.
//!
//! Input: bytes decoded with the path alphabet (`src/alphabet.rs`): ASCII
//! as itself, `0x80 + i` as token `i` (`..`, fixture names, absolute root
//! and sibling spellings, NUL, long names, unicode).
//!
//! For each path: `Scope::resolve`, then `open`, `metadata`,
//! `symlink_metadata`, `open_dir` and `read` through the chosen root's handle.
//! Oracle: every success names an inode of that root's own tree (the set is
//! taken at setup by walking the tree without following symlinks), no read
//! returns the canary, and the target's display spelling lies under its root.

#![no_main]

use cap_std::fs::MetadataExt;
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use tuls_fuzz::alphabet::Alphabet;
use tuls_fuzz::fixture::Fixture;

static ALPHABET: OnceLock<Alphabet> = OnceLock::new();

static RUNS: AtomicU64 = AtomicU64::new(0);

fuzz_target!(|data: &[u8]| {
    let fx = Fixture::shared(false);
    let path = ALPHABET.get_or_init(|| Alphabet::paths(fx)).decode(data);
    check(fx, &path);
    // The oracle must not go quiet: if opens started failing for another
    // reason (a leaked descriptor per run, a broken fixture), every check
    // above would pass vacuously.
    if RUNS.fetch_add(1, Ordering::Relaxed).is_multiple_of(4096) {
        let t = fx
            .scope
            .snapshot()
            .resolve("sub/up/file.txt")
            .expect("resolve a known path");
        t.root.dir.read(t.rel()).expect("read a known file");
    }
});

fn check(fx: &Fixture, path: &str) {
    let resolved = fx.scope.snapshot().resolve(path);
    if tuls_fuzz::trace() {
        eprintln!(
            "resolve {path:?} -> {:?}",
            resolved.as_ref().map(|t| t.rel())
        );
    }
    let Ok(t) = resolved else {
        return;
    };
    assert!(!path.contains('\0'), "a path with NUL resolved: {path:?}");
    assert!(
        path.len() <= tuls::limits::MAX_PATH_BYTES,
        "an over-long path resolved"
    );
    let display = t.display();
    assert!(
        display == t.root.display || display.starts_with(&format!("{}/", t.root.display)),
        "display {display:?} is not under its root {:?} (input {path:?})",
        t.root.display
    );
    let idx = fx.root_index(&t.root.display);
    let inside = &fx.inodes[idx];
    let rel = t.rel();
    let dir = &t.root.dir;
    let escape = |op: &str, dev: u64, ino: u64| {
        panic!(
            "ESCAPE: {op}({rel:?}) under root {} gave inode ({dev}, {ino}) outside that root's tree; input {path:?}",
            t.root.display
        )
    };

    if let Ok(f) = dir.open(&rel) {
        let md = f.metadata().expect("fstat an open file");
        if !inside.contains(&(md.dev(), md.ino())) {
            escape("open", md.dev(), md.ino());
        }
    }
    if let Ok(md) = dir.metadata(&rel)
        && !inside.contains(&(md.dev(), md.ino()))
    {
        escape("metadata", md.dev(), md.ino());
    }
    if let Ok(md) = dir.symlink_metadata(&rel)
        && !inside.contains(&(md.dev(), md.ino()))
    {
        escape("symlink_metadata", md.dev(), md.ino());
    }
    if let Ok(d) = dir.open_dir(&rel) {
        let md = d.dir_metadata().expect("fstat an open dir");
        if !inside.contains(&(md.dev(), md.ino())) {
            escape("open_dir", md.dev(), md.ino());
        }
    }
    if tuls_fuzz::trace() {
        eprintln!(
            "  open {:?} metadata {:?} open_dir {:?} read {:?}",
            dir.open(&rel).map(|_| ()).map_err(|e| e.kind()),
            dir.metadata(&rel).map(|m| m.is_dir()).map_err(|e| e.kind()),
            dir.open_dir(&rel).map(|_| ()).map_err(|e| e.kind()),
            dir.read(&rel).map(|b| b.len()).map_err(|e| e.kind()),
        );
    }
    if let Ok(bytes) = dir.read(&rel) {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(&fx.canary),
            "ESCAPE: read({rel:?}) returned the canary; input {path:?}"
        );
    }
}
