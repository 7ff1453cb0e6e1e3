//! [`Snapshot`]: a no-follow recording of a whole tree, to prove that a tree was
//! left alone (`before.assert_same(&after, "outside")`).

use std::collections::BTreeMap;
use std::hash::Hasher as _;
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

/// Kind of a tree entry; symlinks record their (unresolved) target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink(PathBuf),
    Fifo,
    Socket,
    CharDevice,
    BlockDevice,
    /// `symlink_metadata` failed (raced away, permission denied, ...).
    Unreadable(String),
}

/// One recorded entry. `digest` is a hash of a regular file's bytes (None for
/// non-files or unreadable files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub kind: Kind,
    pub len: u64,
    pub mode: u32,
    pub nlink: u64,
    pub digest: Option<u64>,
}

/// Map from path relative to the snapshot root (`""` is the root itself) to entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snapshot(pub BTreeMap<PathBuf, Entry>);

impl std::ops::Deref for Snapshot {
    type Target = BTreeMap<PathBuf, Entry>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl Snapshot {
    /// Walk `dir` (itself included) without following any symlink.
    pub fn take(dir: impl AsRef<Path>) -> Snapshot {
        let dir = dir.as_ref();
        let mut map = BTreeMap::new();
        Self::walk(dir, Path::new(""), &mut map);
        Snapshot(map)
    }

    fn walk(abs: &Path, rel: &Path, map: &mut BTreeMap<PathBuf, Entry>) {
        let meta = match std::fs::symlink_metadata(abs) {
            Ok(meta) => meta,
            Err(e) => {
                let entry = Entry {
                    kind: Kind::Unreadable(e.kind().to_string()),
                    len: 0,
                    mode: 0,
                    nlink: 0,
                    digest: None,
                };
                map.insert(rel.to_path_buf(), entry);
                return;
            }
        };
        let ft = meta.file_type();
        let kind = if ft.is_symlink() {
            Kind::Symlink(std::fs::read_link(abs).unwrap_or_default())
        } else if ft.is_dir() {
            Kind::Dir
        } else if ft.is_file() {
            Kind::File
        } else if ft.is_fifo() {
            Kind::Fifo
        } else if ft.is_socket() {
            Kind::Socket
        } else if ft.is_char_device() {
            Kind::CharDevice
        } else {
            Kind::BlockDevice
        };
        let digest = if kind == Kind::File {
            std::fs::read(abs).ok().map(|bytes| {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                h.write(&bytes);
                h.finish()
            })
        } else {
            None
        };
        let is_dir = kind == Kind::Dir;
        map.insert(
            rel.to_path_buf(),
            Entry {
                kind,
                len: if is_dir { 0 } else { meta.len() },
                mode: meta.permissions().mode() & 0o7777,
                nlink: if is_dir { 0 } else { meta.nlink() },
                digest,
            },
        );
        if is_dir && let Ok(rd) = std::fs::read_dir(abs) {
            for child in rd.flatten() {
                let name = child.file_name();
                Self::walk(&abs.join(&name), &rel.join(&name), map);
            }
        }
    }

    /// Human-readable differences from `self` (before) to `later` (after).
    pub fn diff(&self, later: &Snapshot) -> Vec<String> {
        let mut out = Vec::new();
        for (path, before) in &self.0 {
            match later.0.get(path) {
                None => out.push(format!("removed: {} ({:?})", path.display(), before.kind)),
                Some(after) if after != before => out.push(format!(
                    "changed: {}\n    before: {before:?}\n    after:  {after:?}",
                    path.display()
                )),
                Some(_) => {}
            }
        }
        for (path, after) in &later.0 {
            if !self.0.contains_key(path) {
                out.push(format!("added: {} ({:?})", path.display(), after.kind));
            }
        }
        out
    }

    /// Panic with the differences if `later` differs from `self`.
    pub fn assert_same(&self, later: &Snapshot, what: &str) {
        let diff = self.diff(later);
        assert!(
            diff.is_empty(),
            "{what} tree was modified:\n{}",
            diff.join("\n")
        );
    }
}
