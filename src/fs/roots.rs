//! Opening the allowed roots: the one place in tuls with ambient authority.
//!
//! Owns: turning the operator's `DIR` arguments into [`Root`] handles, once, at
//! startup. May touch: the host filesystem by path, here and nowhere else
//! (clippy's `disallowed-methods` keeps it so).

use std::path::Path;
use std::sync::Arc;

use cap_std::fs::Dir;

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
}

impl Root {
    /// Every spelling a client may use to name this root.
    pub fn spellings(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.display.as_str()).chain(self.resolved.as_deref())
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
/// This is the only function in tuls that resolves a host path. It runs at
/// startup, before Landlock confines the process, and never again.
#[allow(clippy::disallowed_methods)] // the one ambient-authority site, by design
pub fn open(given: &Path) -> Result<Root, RootError> {
    let lossy = given.to_string_lossy().into_owned();
    if given.to_str().is_none() {
        return Err(RootError::NotUtf8(lossy));
    }
    let dir = match Dir::open_ambient_dir(given, cap_std::ambient_authority()) {
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
    Ok(Root {
        display,
        resolved,
        dir: Arc::new(dir),
    })
}

fn strip_trailing_slashes(s: &str) -> &str {
    let t = s.trim_end_matches('/');
    if t.is_empty() { "/" } else { t }
}
