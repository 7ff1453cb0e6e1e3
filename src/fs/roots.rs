//! Opening the allowed roots: the one place in tuls with ambient authority.
//!
//! Owns: turning the operator's `DIR` arguments into [`Root`] handles, once, at
//! startup, and noticing when an operator's path no longer names the directory
//! opened there ([`Root::check_in_place`]). May touch: the host filesystem by
//! path, here and nowhere else (clippy's `disallowed-methods` keeps it so).
//!
//! The one exception to "no host path after startup": [`Root::check_in_place`]
//! runs a metadata-only `stat` of the operator's own root path on each call
//! that resolves a path under that root. It opens nothing, reads nothing and
//! learns only a device and inode number, which it compares with the handle's.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cap_std::fs::Dir;

use crate::error::Error;
use crate::fs::record::Place;
use crate::fs::resolve::Beneath;
use crate::fs::sys::dev_ino;
use crate::rules::Rules;

/// One allowed directory: a capability handle plus the spellings clients use.
#[derive(Debug)]
pub struct Root {
    /// The spelling tuls prints: the operator's path made absolute (lexically,
    /// against the startup working directory), without a trailing slash.
    pub display: String,
    /// The spelling resolved at startup (symlinks followed), if it differs.
    pub resolved: Option<String>,
    /// The handle every operation under this root goes through.
    pub dir: Arc<Dir>,
    /// The operator's root this one is (or lies beneath), as opened at
    /// startup; shared by the client roots opened beneath it.
    pub origin: Arc<Origin>,
    /// The path rules of the operator's root this one is (or lies beneath).
    pub rules: Arc<Rules>,
    /// This root's canonical path beneath its operator's root ("" for the
    /// operator's root itself), which rules are matched from.
    pub prefix: String,
}

impl Root {
    /// The path rules match for `local`, a canonical path beneath this
    /// root's handle.
    pub fn rule_path(&self, local: &str) -> String {
        self.beneath().rule_path(local)
    }

    /// Where `local` (a canonical path beneath this root's handle, `""`
    /// for the root) is, for the change recorder; `given` is the client's
    /// spelling.
    pub fn place(&self, local: &str, given: &str) -> Place {
        let local = local.trim_matches('/');
        let shown = if local.is_empty() {
            self.display.clone()
        } else {
            format!("{}/{local}", self.display.trim_end_matches('/'))
        };
        Place {
            origin: self.origin.path().to_string_lossy().into_owned(),
            beneath: self.rule_path(local),
            shown,
            given: given.to_owned(),
        }
    }

    /// [`Root::place`] of the entry `leaf` in the directory `parent_rel`
    /// (canonical, beneath this root's handle; `.` for the root itself).
    pub fn place_in(&self, parent_rel: &str, leaf: &str, given: &str) -> Place {
        let mut local: Vec<&str> = parent_rel
            .split('/')
            .filter(|s| !s.is_empty() && *s != ".")
            .collect();
        local.push(leaf);
        self.place(&local.join("/"), given)
    }

    /// What a path resolves against beneath this root.
    pub fn beneath(&self) -> Beneath<'_> {
        Beneath {
            dir: &self.dir,
            prefix: &self.prefix,
            rules: &self.rules,
        }
    }

    /// Every spelling a client may use to name this root.
    pub fn spellings(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.display.as_str()).chain(self.resolved.as_deref())
    }

    /// Whether `other` is the same directory as this root, as opened at
    /// startup (by device and inode): a `DIR` given twice.
    pub fn same_directory(&self, other: &Root) -> bool {
        self.origin.id == other.origin.id
    }

    /// Whether `handle`, opened at `rel` beneath this root's handle, is
    /// still the directory a fresh resolve beneath this root reaches and,
    /// for a client root, whether the client root itself is still where its
    /// canonical prefix leads from the operator's root: a client root that
    /// another process moved out takes its own handle with it, so the
    /// first check alone would pass. See [`still_reached`].
    pub fn still_reaches(&self, rel: &str, handle: &Dir) -> bool {
        still_reached(&self.dir, rel, handle)
            && (self.prefix.is_empty() || still_reached(&self.origin.dir, &self.prefix, &self.dir))
    }

    /// Refuses a call on this root (`path` is the client's path, for the
    /// message) once the operator's path no longer names the directory opened
    /// at startup. See [`Origin::check`].
    pub fn check_in_place(&self, path: &str) -> Result<(), Error> {
        if self.origin.check() {
            Ok(())
        } else {
            Err(Error::RootMoved {
                path: path.to_owned(),
            })
        }
    }
}

/// An operator's root as opened at startup: its path and the device and
/// inode of the directory opened there.
#[derive(Debug)]
pub struct Origin {
    /// The operator's path, made absolute at startup (`~` expanded).
    path: PathBuf,
    /// Device and inode of the directory opened at startup.
    id: (u64, u64),
    /// Set, for good, the first time the check fails.
    moved: AtomicBool,
    /// The operator's root as opened at startup, for the client roots
    /// beneath it too: a writer checks from here that the directory it
    /// writes in is still beneath the operator's root (a client root moved
    /// out takes its own handle with it).
    dir: Arc<Dir>,
}

impl Origin {
    /// The operator's path, as made absolute at startup (where the undo
    /// journal says a changed file lives).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the operator's path still names the directory opened at
    /// startup (same device and inode). Once it does not, it never does
    /// again in this process: the root stays refused, the operator restarts
    /// tuls, and the error is logged once.
    ///
    /// # Ambient Authority
    ///
    /// A metadata-only `stat` of the operator's own root path (following
    /// symlinks, as opening it did). It opens nothing; Landlock does not
    /// restrict `stat`, so it works inside the sandbox too. This is the one
    /// host path tuls looks at after startup.
    pub fn check(&self) -> bool {
        if self.moved.load(Ordering::Relaxed) {
            return false;
        }
        let same = rustix::fs::stat(&self.path).is_ok_and(|st| dev_ino(&st) == self.id);
        if !same && !self.moved.swap(true, Ordering::Relaxed) {
            tracing::error!(
                "allowed directory '{}' was moved, replaced or removed while tuls was running: \
                 that path no longer names the directory opened at startup; every call on it \
                 is refused until tuls is restarted",
                self.path.display()
            );
        }
        same
    }
}

/// Why a root could not be opened. Startup stops with exit status 2.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    /// The directory does not exist.
    #[error("allowed directory '{0}' does not exist")]
    Missing(String),
    /// The path names something that is not a directory.
    #[error("allowed directory '{0}' is not a directory")]
    NotADirectory(String),
    /// The path is not valid UTF-8, so clients could not name it.
    #[error("allowed directory '{0}' is not valid UTF-8")]
    NotUtf8(String),
    /// The directory lives on procfs, whose magic links tuls refuses to serve.
    #[error("allowed directory '{0}' is on /proc, which tuls refuses to serve")]
    Procfs(String),
    /// Opening failed for another reason.
    #[error("allowed directory '{path}' cannot be opened: {source}")]
    Open {
        /// The directory as given.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Opens `given` as a root.
///
/// # Ambient Authority
///
/// It opens the path through `ambient_dir`, the one site that opens a
/// host directory by path; it runs at startup, before Landlock confines
/// the process, and never again.
#[allow(clippy::disallowed_methods)] // the one ambient-authority site, by design
pub fn open(given: &Path) -> Result<Root, RootError> {
    let lossy = given.to_string_lossy().into_owned();
    if given.to_str().is_none() {
        return Err(RootError::NotUtf8(lossy));
    }
    let dir = match ambient_dir(given) {
        Ok(dir) => dir,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(RootError::Missing(lossy));
        }
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::NOTDIR.raw_os_error()) => {
            return Err(RootError::NotADirectory(lossy));
        }
        Err(source) => {
            return Err(RootError::Open {
                path: lossy,
                source,
            });
        }
    };
    if crate::fs::sys::is_procfs(&dir) {
        return Err(RootError::Procfs(lossy));
    }
    let absolute = std::path::absolute(given).map_err(|source| RootError::Open {
        path: lossy.clone(),
        source,
    })?;
    let display = strip_trailing_slashes(&absolute.to_string_lossy()).to_owned();
    let resolved = std::fs::canonicalize(given)
        .ok()
        .and_then(|p| p.to_str().map(|s| strip_trailing_slashes(s).to_owned()))
        .filter(|r| *r != display);
    let st = rustix::fs::fstat(&dir).map_err(|e| RootError::Open {
        path: lossy.clone(),
        source: e.into(),
    })?;
    let dir = Arc::new(dir);
    let origin = Arc::new(Origin {
        path: absolute,
        id: dev_ino(&st),
        moved: AtomicBool::new(false),
        dir: dir.clone(),
    });
    Ok(Root {
        display,
        resolved,
        dir,
        origin,
        rules: Arc::new(Rules::default()),
        prefix: String::new(),
    })
}

fn strip_trailing_slashes(s: &str) -> &str {
    let t = s.trim_end_matches('/');
    if t.is_empty() { "/" } else { t }
}

/// Opens a directory the operator named for tuls's own records (the undo
/// journal, `--journal`), creating it (mode 0700) when missing; or, for
/// `tuls journal`, the journal to read and the roots it names.
///
/// # Ambient Authority
///
/// Resolves a host path the operator named, at startup (before Landlock)
/// or in the `tuls journal` command; follows symlinks, as opening a root
/// does (the caller checks, by device and inode, where it landed).
#[allow(clippy::disallowed_methods)] // startup only, by design
pub fn open_operator_dir(given: &Path, create: bool) -> Result<Dir, String> {
    let shown = given.display();
    if create {
        match rustix::fs::mkdir(given, rustix::fs::Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(format!("cannot create '{shown}': {e}")),
        }
    }
    ambient_dir(given).map_err(|e| format!("cannot open '{shown}': {e}"))
}

/// The one call in tuls that opens a host directory by its ambient path:
/// the roots and the operator's own directories (the journal), at startup
/// only, before Landlock confines the process.
#[allow(clippy::disallowed_methods)] // the one ambient-authority site, by design
fn ambient_dir(given: &Path) -> std::io::Result<Dir> {
    Dir::open_ambient_dir(given, cap_std::ambient_authority())
}

/// Reads an operator's configuration file (`--rules`), whole, at startup.
///
/// # Ambient Authority
///
/// Reads a host path the operator named on the command line, before
/// Landlock confines the process; never called after startup. Bounded by
/// `max_bytes`.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)] // startup only, by design
pub fn read_operator_file(given: &Path, max_bytes: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let shown = given.display();
    let file = std::fs::File::open(given).map_err(|e| format!("cannot read '{shown}': {e}"))?;
    let mut bytes = Vec::new();
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read '{shown}': {e}"))?;
    if bytes.len() as u64 > max_bytes {
        return Err(format!("'{shown}' is larger than {max_bytes} bytes"));
    }
    Ok(bytes)
}

/// The path `given` (a `--read-only-dir`) resolves to, which must be an
/// existing directory: absolute, symlinks followed, `~` already expanded.
///
/// # Ambient Authority
///
/// Resolves a host path the operator named, at startup only.
#[allow(clippy::disallowed_methods)] // startup only, by design
pub fn resolve_operator_dir(given: &Path) -> Result<String, String> {
    let shown = given.display();
    let real = std::fs::canonicalize(given)
        .map_err(|e| format!("--read-only-dir '{shown}' cannot be resolved: {e}"))?;
    let md = std::fs::metadata(&real)
        .map_err(|e| format!("--read-only-dir '{shown}' cannot be resolved: {e}"))?;
    if !md.is_dir() {
        return Err(format!("--read-only-dir '{shown}' is not a directory"));
    }
    real.to_str()
        .map(|s| strip_trailing_slashes(s).to_owned())
        .ok_or_else(|| format!("--read-only-dir '{shown}' is not valid UTF-8"))
}

/// Whether `handle` is still the directory a fresh resolve of `rel`
/// beneath `root` reaches (same device and inode).
///
/// A directory opened beneath a root stays usable wherever it is moved;
/// acting through it after another process moved it out of the root would
/// act outside. Writers call this just before their final step (rename,
/// renameat2); the window left is the one between this check and that
/// syscall. `root` is the handle the target was resolved from: for a
/// client root, the client root's own handle.
pub fn still_reached(root: &Dir, rel: &str, handle: &Dir) -> bool {
    let Ok(fresh) = root.open_dir(rel) else {
        return false;
    };
    match (rustix::fs::fstat(&fresh), rustix::fs::fstat(handle)) {
        (Ok(a), Ok(b)) => a.st_dev == b.st_dev && a.st_ino == b.st_ino,
        _ => false,
    }
}
