//! Parallel, bounded tree walks beneath a root that never follow symlinks.
//!
//! Owns: collecting a directory tree with a small rayon pool sized to the
//! cores. Each directory is read once (`getdents`, types from `d_type`), its
//! entries collected and its `ReadDir` dropped before its subdirectories are
//! walked in parallel, each opened `O_NOFOLLOW` from its parent's handle
//! (a directory swapped for a symlink mid-walk is simply not entered).
//! Results keep the reference's order: pre-order, names in byte order.
//! The entry cap is shared by all threads; when it trips, which entries made
//! it in is unspecified, and the result says it was truncated.
//! May touch: `Dir` handles, by single entry names only.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use std::os::fd::OwnedFd;

use cap_std::fs::Dir;
use rayon::prelude::*;
use rustix::fs::{Mode, OFlags};

use crate::error::{Error, Result};
use crate::fs::walk::{self, Entry, Kind, Truncation, WalkLimits};
use crate::limits::MAX_WALK_DEPTH_CEILING;

/// One visited entry, with what the visitor made of it, and for a directory
/// that was descended into, its children.
#[derive(Debug)]
pub struct Item<T> {
    /// The entry.
    pub entry: Entry,
    /// The visitor's value.
    pub value: T,
    /// Children, for directories (empty when not descended).
    pub children: Option<Vec<Item<T>>>,
}

/// A walk's items and, if it was cut short, why.
pub type Walked<T> = (Vec<Item<T>>, Option<Truncation>);

/// Decides, for each entry (parent handle, `/`-joined path relative to the
/// walk's start, entry, depth), whether to keep it and what to record.
pub trait ParVisitor: Sync {
    /// What is recorded per entry.
    type Value: Send;
    /// `None` prunes the entry (it is left out and not descended into).
    fn visit(&self, rel: &str, entry: &Entry, depth: usize) -> Option<Self::Value>;
    /// Whether [`ParVisitor::visit`] looks at `rel`; when not, it is given
    /// an empty string (and a walk of many entries builds no path for each).
    fn wants_rel(&self) -> bool {
        true
    }
    /// Whether the visitor wants no more entries (e.g. its output budget is
    /// spent); the walk then stops, as when it is cancelled.
    fn full(&self) -> bool {
        false
    }
}

pub use crate::text::budget::TextBudget;

/// Stack of each walk thread. The walk recurses once per directory level,
/// plus rayon's join frames (more of them on machines with more cores), so
/// its stack grows with `--max-depth`: a debug build used about 5 KiB a
/// level, and the 2 MiB default overflowed, aborting the server, at about
/// 400 levels (release: about 1500). Only the pages touched become resident.
const WALK_STACK_BYTES: usize = 64 << 20;

/// How many walk threads to start; 0 until [`set_walk_threads`] is called.
static WALK_THREADS: AtomicUsize = AtomicUsize::new(0);

/// Sets the number of walk threads, before the first walk. Startup calls it
/// with the CPU count it computed before Landlock: asked later, the standard
/// library reads `/proc/self/cgroup` and `/sys/fs/cgroup`, host paths that
/// tuls does not touch after startup.
pub fn set_walk_threads(n: usize) {
    WALK_THREADS.store(n, Ordering::Relaxed);
}

/// The CPU count given to [`set_walk_threads`] (2 when it was not called).
pub fn walk_threads() -> usize {
    match WALK_THREADS.load(Ordering::Relaxed) {
        0 => 2,
        n => n,
    }
}

/// The walk threads: one per CPU (as set by [`set_walk_threads`]; rayon's
/// default when unset, as in unit tests), with big stacks. The content
/// search uses them too.
pub(crate) fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(WALK_THREADS.load(Ordering::Relaxed))
            .thread_name(|i| format!("tuls-walk-{i}"))
            .stack_size(WALK_STACK_BYTES)
            .build()
            .map_err(|e| tracing::warn!(error = %e, "cannot start the walk threads"))
            .ok()
    })
    .as_ref()
}

struct Shared<'a> {
    limits: &'a WalkLimits,
    /// `limits.max_depth`, capped at [`MAX_WALK_DEPTH_CEILING`].
    max_depth: usize,
    visited: AtomicUsize,
    entries_cut: AtomicBool,
    depth_cut: AtomicBool,
}

/// Walks the tree under `start` and returns its items in pre-order, with
/// the reason it was cut short, if it was.
pub fn collect<V: ParVisitor>(
    start: &Dir,
    limits: &WalkLimits,
    visitor: &V,
) -> Result<Walked<V::Value>> {
    let max_depth = limits.max_depth.min(MAX_WALK_DEPTH_CEILING);
    let shared = Shared {
        limits,
        max_depth,
        visited: AtomicUsize::new(0),
        entries_cut: AtomicBool::new(false),
        depth_cut: AtomicBool::new(false),
    };
    // Every level of the recursion runs on a walk thread, never on the
    // caller's (smaller) stack.
    // A handle of our own on the start directory (its read offset moves).
    let start = rustix::fs::openat(start, c".", dir_flags(), Mode::empty())
        .map_err(|e| Error::io("scandir", ".", &std::io::Error::from(e)))?;
    let walk = || walk_dir(start, "", 1, visitor, &shared);
    let Some(pool) = pool() else {
        return Err(Error::Internal(
            "Cannot walk the tree: the walk threads could not be started".to_owned(),
        ));
    };
    let items = pool.install(walk);
    if limits.cancel.is_cancelled() {
        return Err(Error::Cancelled);
    }
    let truncated = if visitor.full() {
        Some(Truncation::Text(crate::limits::MAX_WALK_TEXT_BYTES))
    } else if shared.entries_cut.load(Ordering::Relaxed) {
        Some(Truncation::Entries(limits.max_entries))
    } else if shared.depth_cut.load(Ordering::Relaxed) {
        Some(Truncation::Depth(max_depth))
    } else {
        None
    };
    Ok((items, truncated))
}

/// How each directory is opened: read-only, must be a directory, and
/// `O_NOFOLLOW`, so a directory swapped for a symlink is never entered.
fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

fn walk_dir<V: ParVisitor>(
    dir: OwnedFd,
    prefix: &str,
    depth: usize,
    visitor: &V,
    shared: &Shared<'_>,
) -> Vec<Item<V::Value>> {
    if shared.limits.cancel.is_cancelled()
        || shared.entries_cut.load(Ordering::Relaxed)
        || visitor.full()
    {
        return Vec::new();
    }
    let Ok((entries, _)) = walk::read_entries_fd(&dir, false, usize::MAX, prefix) else {
        return Vec::new();
    };
    // Claim this directory's entries against the shared cap.
    let n = entries.len();
    let before = shared.visited.fetch_add(n, Ordering::Relaxed);
    if let Some(p) = &shared.limits.progress {
        p.report((before + n) as u64);
    }
    let allowed = shared.limits.max_entries.saturating_sub(before).min(n);
    if allowed < n {
        shared.entries_cut.store(true, Ordering::Relaxed);
    }
    // An entry's relative path is built when it is needed and not kept: it
    // grows with the depth (up to ~32 KiB at 128 levels of 255-byte names),
    // and keeping one per entry of a wide directory took gigabytes.
    let wants_rel = visitor.wants_rel();
    let rel_of = |name: &str| {
        if prefix.is_empty() {
            name.to_owned()
        } else {
            format!("{prefix}/{name}")
        }
    };
    let mut kept: Vec<Item<V::Value>> = Vec::with_capacity(allowed);
    for entry in entries.into_iter().take(allowed) {
        let rel = if wants_rel {
            rel_of(&entry.name)
        } else {
            String::new()
        };
        if let Some(value) = visitor.visit(&rel, &entry, depth) {
            let children = (entry.kind == Kind::Dir).then(Vec::new);
            kept.push(Item {
                entry,
                value,
                children,
            });
        }
    }
    let descend = |item: &mut Item<V::Value>| {
        if item.entry.kind != Kind::Dir {
            return;
        }
        if depth >= shared.max_depth {
            shared.depth_cut.store(true, Ordering::Relaxed);
            return;
        }
        // O_NOFOLLOW: a directory swapped for a symlink is not entered.
        // One entry name beneath this directory's fd (never `.`, `..` or a
        // name with `/`: getdents gives plain names and skips those two).
        if let Ok(sub) = rustix::fs::openat(&dir, item.entry.os_name(), dir_flags(), Mode::empty())
        {
            let rel = rel_of(&item.entry.name);
            item.children = Some(walk_dir(sub, &rel, depth + 1, visitor, shared));
        }
    };
    let subdirs = kept.iter().filter(|i| i.entry.kind == Kind::Dir).count();
    if subdirs > 1 {
        kept.par_iter_mut().for_each(descend);
    } else {
        kept.iter_mut().for_each(descend);
    }
    kept
}
