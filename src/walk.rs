//! Listing directories and walking trees beneath a root, without following
//! symlinks.
//!
//! Owns: reading directory entries (type from `d_type`, `lstat` only when the
//! kernel does not say or when sizes are asked for), and the bounds of a
//! walk. The walks themselves are in [`crate::tree`].
//!
//! May touch: `Dir` handles, by single entry names only.

use cap_std::fs::{Dir, MetadataExt};
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};

/// What an entry is, never following a symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A symbolic link (its target is never looked at).
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

/// One directory entry.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The name, lossily decoded if it is not UTF-8.
    pub name: String,
    /// The name as the kernel gave it, for further `*at` calls.
    pub raw: std::ffi::OsString,
    /// Its kind.
    pub kind: Kind,
    /// Its `lstat` size, when asked for (regular files and directories;
    /// a directory's size is used only for sorting, as in the reference).
    pub size: Option<u64>,
}

/// Reads the entries of `dir`, sorted by name in byte order. With `sizes`,
/// regular files get their size from `lstat`.
pub fn read_entries(dir: &Dir, sizes: bool, max: usize, given: &str) -> Result<(Vec<Entry>, bool)> {
    let mut out = Vec::new();
    let mut truncated = false;
    let iter = dir.entries().map_err(|e| Error::io("scandir", given, &e))?;
    for entry in iter {
        let entry = entry.map_err(|e| Error::io("scandir", given, &e))?;
        if out.len() >= max {
            truncated = true;
            break;
        }
        let name = entry.file_name();
        let ft = match entry.file_type() {
            Ok(ft) => ft,
            Err(_) => continue,
        };
        let mut kind = kind_of(ft);
        let mut size = None;
        let unknown = !ft.is_dir() && !ft.is_file() && !ft.is_symlink() && kind == Kind::Other;
        if unknown || (sizes && matches!(kind, Kind::File | Kind::Dir)) {
            // lstat: a single-component fstatat(AT_SYMLINK_NOFOLLOW).
            if let Ok(md) = dir.symlink_metadata(&name) {
                kind = kind_of(md.file_type());
                if matches!(kind, Kind::File | Kind::Dir) {
                    size = Some(md.size());
                }
            }
        }
        out.push(Entry {
            name: name.to_string_lossy().into_owned(),
            raw: name.clone(),
            kind,
            size,
        });
    }
    out.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    Ok((out, truncated))
}

fn kind_of(ft: cap_std::fs::FileType) -> Kind {
    if ft.is_symlink() {
        Kind::Symlink
    } else if ft.is_dir() {
        Kind::Dir
    } else if ft.is_file() {
        Kind::File
    } else {
        Kind::Other
    }
}

/// Bounds and cancellation for one walk.
#[derive(Debug, Clone)]
pub struct WalkLimits {
    /// Entries to visit before stopping.
    pub max_entries: usize,
    /// Depth to descend to (the start directory's children are depth 1).
    pub max_depth: usize,
    /// Stops the walk when cancelled.
    pub cancel: CancellationToken,
}

/// Why a walk's result is incomplete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Truncation {
    /// The entry cap was reached.
    Entries(usize),
    /// Some directory lay deeper than the depth cap.
    Depth(usize),
    /// The reply reached its size limit, in bytes.
    Text(usize),
}

/// A note appended to a truncated result.
pub fn truncation_note(t: Truncation) -> String {
    match t {
        Truncation::Entries(n) => format!(
            "[truncated: stopped after {n} entries (--max-entries); narrow the path or add excludePatterns]"
        ),
        Truncation::Depth(n) => format!(
            "[truncated: directories deeper than {n} levels were not descended (--max-depth)]"
        ),
        Truncation::Text(n) => format!(
            "[truncated: the result reached the {n}-byte reply limit; narrow the path or add excludePatterns]"
        ),
    }
}
