//! The one walk engine: every walk of a directory tree beneath a root,
//! never following a symlink, with one vocabulary for its bounds, its stop,
//! cancellation and progress ([`Bounds`], [`Stop`]).
//!
//! Owns: reading a directory's entries (`entries`: `getdents64` into a
//! reused, name-sorted [`Listing`]), opening what a walk reaches (`fds`:
//! one entry name beneath its parent's fd, `O_NOFOLLOW`, and the count of
//! opens that ran out of descriptors, so a walk that lost a directory says
//! so), the walk threads (`pool`: the server's [`WalkPool`], handed to each
//! walk in its [`Bounds`]), and the three orders a tool walks in:
//! - the whole tree, in parallel, folded a directory at a time ([`tree`]:
//!   `directory_tree`, `search_files`);
//! - one entry at a time from a position, stopping when a page is full
//!   ([`paged`]: the cursors of `directory_tree` and `search_files`);
//! - the regular files to search, in path order, handed on in chunks while
//!   the walk goes on ([`files`], with `rg`'s ignore files in `ignores`
//!   and the opening of what was listed in `open`), and the chunked,
//!   parallel search of them ([`chunks`], one file at a time in `grep`:
//!   `search_file_contents`).
//!
//! Every walk leaves out what the path rules hide (never entering it),
//! caps the depth at [`MAX_WALK_DEPTH_CEILING`], stops at the entry cap
//! and on cancellation ([`Error::Cancelled`]) (the content search also at
//! its deadline), reports the entries seen to the call's progress, and
//! fails with [`Error::OutOfDescriptors`] rather than leave out a
//! directory it could not open.
//! May touch: directory fds opened beneath a root, by single entry names
//! only (names from `getdents`, never `.` or `..`, never containing `/`),
//! and the regular files listed beneath them.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::limits::MAX_WALK_DEPTH_CEILING;
use crate::progress::Progress;
use crate::text::fmt::Truncation;
use crate::text::matches::Halted;

pub mod chunks;
mod entries;
mod fds;
pub mod files;
mod grep;
mod ignores;
mod open;
pub mod paged;
mod pool;
pub mod tree;

pub use entries::{Entry, Kind, Listing, read_entries, read_entries_fd, with_listing};
pub use fds::{note_open_error, open_at};
pub use pool::WalkPool;

/// Bounds, cancellation and progress of one walk, whichever its order.
#[derive(Debug, Clone)]
pub struct Bounds {
    /// Entries to look at before stopping ([`Stop::Entries`]).
    pub max_entries: usize,
    /// Depth to descend to (the start directory's entries are at depth 1;
    /// deeper directories are not entered: [`Stop::Depth`]); at most
    /// [`MAX_WALK_DEPTH_CEILING`] whatever is asked.
    pub max_depth: usize,
    /// Stops the walk, which then fails with [`Error::Cancelled`].
    pub cancel: CancellationToken,
    /// Told the number of entries seen so far (plus, for a search, the
    /// files searched), when the client asked.
    pub progress: Option<Progress>,
    /// Stops the walk when passed ([`Stop::Deadline`]); `None`: never.
    /// Only the content search has one (the file walk and the search of
    /// its files stop at it); the tree and paged walks are given `None`.
    pub deadline: Option<Instant>,
    /// The server's walk threads, which the tree walk and the content
    /// search run on (the paged walk runs on the caller's thread).
    pub pool: WalkPool,
}

impl Bounds {
    /// The depth cap in force: [`Bounds::max_depth`], at most
    /// [`MAX_WALK_DEPTH_CEILING`].
    pub fn depth(&self) -> usize {
        self.max_depth.min(MAX_WALK_DEPTH_CEILING)
    }

    /// Whether the deadline has passed.
    pub fn late(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Whether the walk must stop now: cancelled, or past its deadline.
    pub fn halted(&self) -> bool {
        self.cancel.is_cancelled() || self.late()
    }

    /// Reports `n` items done to the progress sink, if there is one.
    pub fn report(&self, n: u64) {
        if let Some(p) = &self.progress {
            p.report(n);
        }
    }
}

/// Why a walk stopped early (cancellation is an error, not a stop).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The entry cap.
    Entries(usize),
    /// The depth cap (deeper directories were not entered).
    Depth(usize),
    /// The text the walk builds (a rendered tree, matched paths, listed
    /// paths waiting to be searched) reached its bound, in bytes.
    Text(usize),
    /// The deadline.
    Deadline,
}

impl Stop {
    /// The note of a walk tool (`directory_tree`, `search_files`), which
    /// has no deadline.
    pub fn truncation(self) -> Option<Truncation> {
        match self {
            Self::Entries(n) => Some(Truncation::Entries(n)),
            Self::Depth(n) => Some(Truncation::Depth(n)),
            Self::Text(n) => Some(Truncation::Text(n)),
            Self::Deadline => None,
        }
    }

    /// The note of a content search whose deadline was `after`.
    pub fn halted(self, after: Duration) -> Halted {
        match self {
            Self::Entries(n) => Halted::Entries(n),
            Self::Depth(n) => Halted::Depth(n),
            Self::Text(n) => Halted::Paths(n),
            Self::Deadline => Halted::Deadline(after),
        }
    }
}

/// What a walk has counted so far, shared by its threads: the entries
/// seen, the items done after them (files searched), and which bounds
/// tripped.
pub(crate) struct Tally<'a> {
    pub(crate) bounds: &'a Bounds,
    seen: AtomicUsize,
    done: AtomicU64,
    pub(crate) entries_cut: AtomicBool,
    pub(crate) depth_cut: AtomicBool,
    pub(crate) text_cut: AtomicBool,
    pub(crate) late: AtomicBool,
    /// The descriptor count when the walk began ([`fds::descriptor_mark`]).
    mark: u64,
}

impl<'a> Tally<'a> {
    /// A walk under `bounds` begins.
    pub(crate) fn new(bounds: &'a Bounds) -> Self {
        Self {
            bounds,
            seen: AtomicUsize::new(0),
            done: AtomicU64::new(0),
            entries_cut: AtomicBool::new(false),
            depth_cut: AtomicBool::new(false),
            text_cut: AtomicBool::new(false),
            late: AtomicBool::new(false),
            mark: fds::descriptor_mark(),
        }
    }

    /// Claims a directory's `n` entries against the entry cap, and reports
    /// progress: how many of them may be looked at.
    pub(crate) fn claim(&self, n: usize) -> usize {
        let before = self.seen.fetch_add(n, Ordering::Relaxed);
        if self.bounds.progress.is_some() {
            self.bounds
                .report((before + n) as u64 + self.done.load(Ordering::Relaxed));
        }
        let allowed = self.bounds.max_entries.saturating_sub(before).min(n);
        if allowed < n {
            self.entries_cut.store(true, Ordering::Relaxed);
        }
        allowed
    }

    /// Counts `n` items done after the walk (files searched), and reports
    /// progress: the entries seen plus the items done.
    pub(crate) fn done(&self, n: u64) {
        self.done.store(n, Ordering::Relaxed);
        self.bounds.report(self.seen() + n);
    }

    /// Reports the entries seen plus the items done.
    pub(crate) fn report(&self) {
        self.bounds
            .report(self.seen() + self.done.load(Ordering::Relaxed));
    }

    /// The entries seen.
    pub(crate) fn seen(&self) -> u64 {
        self.seen.load(Ordering::Relaxed) as u64
    }

    /// Whether the walk must stop: cancelled, past its deadline (noted),
    /// or at its entry or text bound.
    pub(crate) fn stopped(&self) -> bool {
        if self.bounds.cancel.is_cancelled()
            || self.entries_cut.load(Ordering::Relaxed)
            || self.text_cut.load(Ordering::Relaxed)
            || self.late.load(Ordering::Relaxed)
        {
            return true;
        }
        if self.bounds.late() {
            self.late.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// How the walk ends: [`Error::Cancelled`] when it was cancelled,
    /// [`Error::OutOfDescriptors`] when some open ran out of descriptors
    /// while it ran (in this walk or one beside it: either way this walk
    /// may have missed a directory).
    pub(crate) fn end(&self) -> Result<()> {
        if self.bounds.cancel.is_cancelled() {
            return Err(Error::Cancelled);
        }
        fds::descriptors_ran_out_since(self.mark)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(max_entries: usize) -> Bounds {
        Bounds {
            max_entries,
            max_depth: usize::MAX,
            cancel: CancellationToken::new(),
            progress: None,
            deadline: None,
            pool: WalkPool::new(0),
        }
    }

    #[test]
    fn claims_share_the_entry_cap_and_trip_it_once_over() {
        let b = bounds(10);
        let t = Tally::new(&b);
        assert_eq!(t.claim(4), 4);
        assert!(!t.stopped());
        assert_eq!(t.claim(6), 6, "exactly at the cap is not over it");
        assert!(!t.stopped());
        assert_eq!(t.claim(3), 0);
        assert!(t.entries_cut.load(Ordering::Relaxed));
        assert!(t.stopped());
        assert_eq!(t.seen(), 13);
        assert!(t.end().is_ok());
    }

    #[test]
    fn the_depth_cap_has_a_ceiling() {
        assert_eq!(bounds(1).depth(), MAX_WALK_DEPTH_CEILING);
        let b = Bounds {
            max_depth: 3,
            ..bounds(1)
        };
        assert_eq!(b.depth(), 3);
    }

    #[test]
    fn cancellation_stops_and_ends_the_walk_with_an_error() {
        let b = bounds(usize::MAX);
        let t = Tally::new(&b);
        b.cancel.cancel();
        assert!(t.stopped() && b.halted());
        assert!(matches!(t.end(), Err(Error::Cancelled)));
    }

    #[test]
    fn a_passed_deadline_stops_the_walk_and_is_noted() {
        let b = Bounds {
            deadline: Some(Instant::now()),
            ..bounds(usize::MAX)
        };
        let t = Tally::new(&b);
        assert!(b.late() && b.halted());
        assert!(t.stopped());
        assert!(t.late.load(Ordering::Relaxed));
        assert!(t.end().is_ok(), "a deadline is a stop, not an error");
        assert!(!bounds(1).halted(), "no deadline: never late");
    }

    #[test]
    fn each_stop_has_its_note() {
        let d = Duration::from_secs(60);
        assert_eq!(Stop::Entries(5).truncation(), Some(Truncation::Entries(5)));
        assert_eq!(Stop::Depth(2).truncation(), Some(Truncation::Depth(2)));
        assert_eq!(Stop::Text(9).truncation(), Some(Truncation::Text(9)));
        assert_eq!(Stop::Deadline.truncation(), None);
        assert!(matches!(Stop::Text(9).halted(d), Halted::Paths(9)));
        assert!(matches!(Stop::Deadline.halted(d), Halted::Deadline(x) if x == d));
        assert!(matches!(Stop::Entries(5).halted(d), Halted::Entries(5)));
        assert!(matches!(Stop::Depth(2).halted(d), Halted::Depth(2)));
    }
}
