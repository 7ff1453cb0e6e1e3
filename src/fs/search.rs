//! The walk of a content search: which files beneath a directory are
//! searched, with `rg`'s default filters, and opening each of them.
//!
//! Owns: what a search walk is asked and answers ([`Filter`], [`Bounds`],
//! [`Stop`], [`Consume`], [`WalkEnd`]). The work is in three rooms: the
//! ignore rules (`ignores`: reading `.ignore`, `.gitignore` and
//! `.git/info/exclude` through the directory fds, one name at a time,
//! `O_NOFOLLOW`, and `rg`'s precedence between them), opening what was
//! listed (`open`: each component `O_NOFOLLOW`, the file
//! `O_NOFOLLOW|O_NONBLOCK`, anything but a regular file refused on the
//! handle), and the walk itself (`stream`: the regular files under a
//! directory fd in path order, never following a symlink, handed on in
//! chunks while the walk goes on). A directory swapped for a symlink
//! mid-walk is never entered and a file swapped for one is never read.
//! May touch: directory fds opened beneath a root, by single entry names.

use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::text::glob::Excludes;

mod ignores;
mod open;
mod stream;

pub use ignores::{Level, ancestor_levels};
pub use open::{DirCache, FdReader, open_listed, open_listed_in, open_start};
pub use stream::walk_files;

/// Which files a search takes, as `rg`'s defaults and their switches.
#[derive(Debug)]
pub struct Filter {
    /// Search hidden files and directories (names starting with `.`).
    pub hidden: bool,
    /// Honour `.ignore`, `.gitignore` and `.git/info/exclude`.
    pub ignore_files: bool,
    /// When set, only files whose relative path matches are searched.
    pub include: Option<Excludes>,
    /// Files and directories whose relative path matches are skipped.
    pub exclude: Excludes,
}

/// Bounds, cancellation and progress of one walk.
pub struct Bounds<'a> {
    /// Entries to look at before stopping.
    pub max_entries: usize,
    /// Depth to descend to.
    pub max_depth: usize,
    /// Bytes of listed paths held at once (listed, not yet handed to the
    /// consumer) before stopping.
    pub max_path_bytes: usize,
    /// Stops the walk.
    pub cancel: &'a CancellationToken,
    /// Stops the walk when passed.
    pub deadline: Instant,
    /// Told the number of entries seen so far.
    pub progress: &'a (dyn Fn(u64) + Sync),
    /// Path rules: a hidden entry is not searched or entered (from
    /// [`crate::fs::scope::Target::walk_start`]).
    pub hide: Option<&'a crate::rules::Hide>,
}

/// Why a walk stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The entry cap.
    Entries(usize),
    /// The depth cap (deeper directories were not entered).
    Depth(usize),
    /// The cap on listed paths held at once.
    Paths(usize),
    /// The deadline.
    Deadline,
}

/// Takes the files of a walk, in path order, a chunk at a time, while the
/// walk goes on: a search starts on the first files before the whole tree is
/// listed, and stops the walk once its reply is full.
pub trait Consume {
    /// Files wanted per [`Consume::take`].
    fn chunk(&self) -> usize;
    /// The next files in path order (`/`-joined raw paths relative to the
    /// start); false stops the walk.
    fn take(&mut self, files: Vec<Vec<u8>>) -> bool;
}

/// What a walk ends with; its files went to the [`Consume`]r.
#[derive(Debug, Default)]
pub struct WalkEnd {
    /// Why the walk stopped early, if it did (not counting the consumer's stop).
    pub stop: Option<Stop>,
    /// Ignore files not used because they were over
    /// [`crate::limits::MAX_IGNORE_FILE_BYTES`].
    pub big_ignore_files: u64,
    /// Directory entries the walk looked at.
    pub seen: u64,
}
