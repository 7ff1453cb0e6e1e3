//! Fixture trees: [`TestEnv`] (`B/root` the server may touch, `B/outside` with
//! the canary it must never touch) and [`Scratch`] (a bare scratch root on tmpfs
//! for big fixtures).

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::snapshot::Snapshot;

/// Content of `B/outside/canary.txt`.
pub const CANARY_CONTENT: &str = "CANARY-OUTSIDE-7f3a";

/// A temporary base directory `B` with `B/root` (allowed) and `B/outside` (forbidden,
/// containing the canary). Removed on drop.
pub struct TestEnv {
    _tmp: tempfile::TempDir,
    base: PathBuf,
}

impl Default for TestEnv {
    fn default() -> Self {
        Self::new()
    }
}

impl TestEnv {
    pub fn new() -> TestEnv {
        let tmp = tempfile::Builder::new()
            .prefix("tuls-test-")
            .tempdir()
            .expect("create temp dir");
        // Canonical, so paths the server reports can be compared with ours.
        let base = tmp.path().canonicalize().expect("canonicalize temp dir");
        std::fs::create_dir(base.join("root")).expect("create B/root");
        std::fs::create_dir(base.join("outside")).expect("create B/outside");
        std::fs::write(base.join("outside/canary.txt"), CANARY_CONTENT).expect("write canary");
        TestEnv { _tmp: tmp, base }
    }

    /// `B`
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// `B/root`, the directory to pass to the server.
    pub fn root(&self) -> PathBuf {
        self.base.join("root")
    }

    /// `B/outside`, which the server must never read or modify.
    pub fn outside(&self) -> PathBuf {
        self.base.join("outside")
    }

    /// `B/outside/canary.txt`
    pub fn canary(&self) -> PathBuf {
        self.outside().join("canary.txt")
    }

    /// `B/root` as a `String`.
    pub fn root_str(&self) -> String {
        super::path_string(self.root())
    }

    /// `rel` resolved against `B/root` (absolute paths are returned unchanged).
    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root().join(rel)
    }

    /// Same as [`TestEnv::path`] but as a `String`, handy inside `json!` arguments.
    pub fn path_str(&self, rel: impl AsRef<Path>) -> String {
        self.path(rel)
            .to_str()
            .expect("test paths are UTF-8")
            .to_owned()
    }

    /// Write a file (creating parent directories); returns its path.
    pub fn write(&self, rel: impl AsRef<Path>, bytes: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .unwrap_or_else(|e| panic!("create parents of {}: {e}", path.display()));
        }
        std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        path
    }

    /// Create a directory and its parents; returns its path.
    pub fn mkdir(&self, rel: impl AsRef<Path>) -> PathBuf {
        let path = self.path(rel);
        std::fs::create_dir_all(&path).unwrap_or_else(|e| panic!("mkdir {}: {e}", path.display()));
        path
    }

    /// Create symlink `rel_link` -> `target` (target stored verbatim, may be relative
    /// or dangling). Parents of the link are created. Returns the link path.
    pub fn symlink(&self, target: impl AsRef<Path>, rel_link: impl AsRef<Path>) -> PathBuf {
        let link = self.path(rel_link);
        if let Some(parent) = link.parent() {
            std::fs::create_dir_all(parent)
                .unwrap_or_else(|e| panic!("create parents of {}: {e}", link.display()));
        }
        std::os::unix::fs::symlink(target.as_ref(), &link).unwrap_or_else(|e| {
            panic!(
                "symlink {} -> {}: {e}",
                link.display(),
                target.as_ref().display()
            )
        });
        link
    }

    /// Create hard link `rel_link` to the existing file `existing`.
    pub fn hardlink(&self, existing: impl AsRef<Path>, rel_link: impl AsRef<Path>) -> PathBuf {
        let original = self.path(existing);
        let link = self.path(rel_link);
        std::fs::hard_link(&original, &link).unwrap_or_else(|e| {
            panic!(
                "hard link {} -> {}: {e}",
                link.display(),
                original.display()
            )
        });
        link
    }

    /// Create a named pipe with `mkfifo`; returns its path.
    pub fn mkfifo(&self, rel: impl AsRef<Path>) -> PathBuf {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .unwrap_or_else(|e| panic!("create parents of {}: {e}", path.display()));
        }
        let status = Command::new("mkfifo")
            .arg(&path)
            .status()
            .expect("run mkfifo");
        assert!(
            status.success(),
            "mkfifo {} failed: {status}",
            path.display()
        );
        path
    }

    /// Set permission bits (e.g. `0o000`, `0o4755`).
    pub fn chmod(&self, rel: impl AsRef<Path>, mode: u32) {
        let path = self.path(rel);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
            .unwrap_or_else(|e| panic!("chmod {:o} {}: {e}", mode, path.display()));
    }

    pub fn read(&self, rel: impl AsRef<Path>) -> Vec<u8> {
        let path = self.path(rel);
        std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
    }

    pub fn read_string(&self, rel: impl AsRef<Path>) -> String {
        String::from_utf8(self.read(&rel)).expect("file content is UTF-8")
    }

    /// Whether anything (including a dangling symlink) exists at `rel`; never follows
    /// a final symlink.
    pub fn exists(&self, rel: impl AsRef<Path>) -> bool {
        std::fs::symlink_metadata(self.path(rel)).is_ok()
    }

    /// Record the tree under `dir` (relative to root, or absolute) without following
    /// symlinks.
    pub fn snapshot(&self, dir: impl AsRef<Path>) -> Snapshot {
        Snapshot::take(self.path(dir))
    }

    /// Snapshot of `B/outside`.
    pub fn snapshot_outside(&self) -> Snapshot {
        Snapshot::take(self.outside())
    }

    /// Panic unless the canary still exists as a regular file with its original content.
    pub fn assert_canary_intact(&self) {
        let meta = std::fs::symlink_metadata(self.canary()).expect("canary still exists");
        assert!(
            meta.file_type().is_file(),
            "canary is no longer a regular file"
        );
        let content = std::fs::read(self.canary()).expect("read canary");
        assert_eq!(content, CANARY_CONTENT.as_bytes(), "canary content changed");
    }
}

/// A bare scratch root for big fixtures, on tmpfs (`/dev/shm`) when there is
/// one: making 100k files there takes a second, where a busy disk took 20.
pub struct Scratch {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Scratch {
    pub fn new() -> Scratch {
        let mut builder = tempfile::Builder::new();
        builder.prefix("tuls-bounds-");
        let tmp = Some(Path::new("/dev/shm"))
            .filter(|shm| shm.is_dir())
            .and_then(|shm| builder.tempdir_in(shm).ok())
            .unwrap_or_else(|| builder.tempdir().expect("temp dir"));
        let root = tmp.path().canonicalize().expect("canonical root");
        Scratch { _tmp: tmp, root }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, bytes).expect("write");
    }
}

/// Removes a tree too deep for `std::fs::remove_dir_all` under a low
/// descriptor limit (it holds one per level); GNU rm copes with any depth.
pub struct RemoveOnDrop(pub PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::process::Command::new("rm")
            .arg("-rf")
            .arg(&self.0)
            .status();
    }
}
