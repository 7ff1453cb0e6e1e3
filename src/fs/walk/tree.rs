//! The whole tree, walked in parallel, each directory folded into a value
//! as it is read.
//!
//! Owns: collecting a directory tree ([`collect`]), or folding each of its
//! directories into a value ([`fold`]), on the walk threads. Each directory
//! is read once (`getdents`, types from `d_type`) into its walk thread's
//! reused [`Listing`](super::Listing), and its entries visited and folded,
//! before its subdirectories are walked in parallel, each opened
//! `O_NOFOLLOW` from its parent's handle (a directory swapped for a symlink
//! mid-walk is simply not entered); a directory's handle is closed before
//! its fold is finished.
//! Results keep the reference's order: pre-order, names in byte order.
//! The entry cap is shared by all threads; when it trips, which entries made
//! it in is unspecified, and the result says it was truncated.
//! May touch: `Dir` handles, by single entry names only.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::Ordering;

use rayon::prelude::*;

use super::fds::{dir_flags, open_at, open_start};
use super::{Bounds, Entry, Kind, Stop, Tally, with_listing};
use crate::error::{Error, Result};
use crate::fs::scope::Start;
use crate::rules::Hide;

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
pub type Walked<T> = (Vec<Item<T>>, Option<Stop>);

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

/// A walk that folds each directory into one value on the walk thread that
/// reads it (so per-directory work, such as rendering, runs in parallel
/// with the rest of the walk, and nothing is kept per entry unless the fold
/// keeps it): for each directory, [`ParFold::begin`], then for each entry
/// that [`ParVisitor::visit`] keeps, in name order, [`ParFold::add`], then
/// [`ParFold::end`]; then its subdirectories are walked, and the fold of
/// each one that was descended into is put in its slot by
/// [`ParFold::fill`].
pub trait ParFold: ParVisitor {
    /// What one directory becomes.
    type Out: Send;
    /// Starts a directory whose entries are at `depth` (the start
    /// directory's are at depth 1): at most `entries` of them, with names
    /// of `name_bytes` bytes in all.
    fn begin(&self, depth: usize, entries: usize, name_bytes: usize) -> Self::Out;
    /// Adds a kept entry; returns the slot that [`ParFold::fill`] is given
    /// with the entry's own fold if it is a directory that gets descended
    /// into (a directory not descended into is left as it is).
    fn add(&self, out: &mut Self::Out, entry: &Entry, value: Self::Value, depth: usize) -> usize;
    /// Ends a directory's own entries.
    fn end(&self, out: &mut Self::Out, depth: usize);
    /// Puts `sub`, the fold of the subdirectory added at `slot`.
    fn fill(&self, out: &mut Self::Out, slot: usize, sub: Self::Out);
}

/// Collects [`Item`]s: the fold behind [`collect`].
struct Collect<'a, V>(&'a V);

impl<V: ParVisitor> ParVisitor for Collect<'_, V> {
    type Value = V::Value;
    fn visit(&self, rel: &str, entry: &Entry, depth: usize) -> Option<V::Value> {
        self.0.visit(rel, entry, depth)
    }
    fn wants_rel(&self) -> bool {
        self.0.wants_rel()
    }
    fn full(&self) -> bool {
        self.0.full()
    }
}

impl<V: ParVisitor> ParFold for Collect<'_, V> {
    type Out = Vec<Item<V::Value>>;
    fn begin(&self, _depth: usize, entries: usize, _name_bytes: usize) -> Self::Out {
        Vec::with_capacity(entries)
    }
    fn add(&self, out: &mut Self::Out, entry: &Entry, value: V::Value, _depth: usize) -> usize {
        out.push(Item {
            entry: entry.clone(),
            value,
            children: (entry.kind == Kind::Dir).then(Vec::new),
        });
        out.len() - 1
    }
    fn end(&self, _out: &mut Self::Out, _depth: usize) {}
    fn fill(&self, out: &mut Self::Out, slot: usize, sub: Self::Out) {
        if let Some(item) = out.get_mut(slot) {
            item.children = Some(sub);
        }
    }
}

struct Shared<'a> {
    tally: Tally<'a>,
    /// Path rules: a hidden entry is left out and never entered.
    hide: Option<&'a Hide>,
}

/// Walks the tree under `start` and returns its items in pre-order, with
/// the reason it was cut short, if it was.
pub fn collect<V: ParVisitor>(
    start: &Start,
    bounds: &Bounds,
    visitor: &V,
) -> Result<Walked<V::Value>> {
    fold(start, bounds, &Collect(visitor))
}

/// Walks the tree under `start`, folding each directory's listing with
/// `visitor`, and returns the start directory's fold, with the reason the
/// walk was cut short, if it was.
pub fn fold<F: ParFold>(
    start: &Start,
    bounds: &Bounds,
    visitor: &F,
) -> Result<(F::Out, Option<Stop>)> {
    let shared = Shared {
        tally: Tally::new(bounds),
        hide: start.hide.as_ref(),
    };
    // A handle of our own on the start directory (its read offset moves).
    let start = open_start(&start.dir, ".")?;
    // Every level of the recursion runs on a walk thread, never on the
    // caller's (smaller) stack.
    let walk = || walk_dir(start, "", 1, visitor, &shared);
    let Some(pool) = bounds.pool.get() else {
        return Err(Error::Internal(
            "Cannot walk the tree: the walk threads could not be started".to_owned(),
        ));
    };
    let out = pool.install(walk);
    shared.tally.end()?;
    let truncated = if visitor.full() {
        Some(Stop::Text(crate::limits::MAX_WALK_TEXT_BYTES))
    } else if shared.tally.entries_cut.load(Ordering::Relaxed) {
        Some(Stop::Entries(bounds.max_entries))
    } else if shared.tally.depth_cut.load(Ordering::Relaxed) {
        Some(Stop::Depth(bounds.depth()))
    } else {
        None
    };
    Ok((out, truncated))
}

/// A subdirectory to walk: its slot in the parent's fold, where its name
/// is in the parent's name buffer, and, once walked, its fold.
type Sub<O> = (usize, std::ops::Range<usize>, Option<O>);

fn walk_dir<F: ParFold>(
    dir: OwnedFd,
    prefix: &str,
    depth: usize,
    visitor: &F,
    shared: &Shared<'_>,
) -> F::Out {
    let empty = || {
        let mut out = visitor.begin(depth, 0, 0);
        visitor.end(&mut out, depth);
        out
    };
    if shared.tally.stopped() || visitor.full() {
        return empty();
    }
    // An entry's relative path is built when it is needed and not kept: it
    // grows with the depth (up to ~32 KiB at 128 levels of 255-byte names),
    // and keeping one per entry of a wide directory took gigabytes.
    let hide = shared.hide;
    let wants_rel = visitor.wants_rel() || hide.is_some();
    let rel_of = |name: &str| {
        if !wants_rel {
            String::new()
        } else if prefix.is_empty() {
            name.to_owned()
        } else {
            format!("{prefix}/{name}")
        }
    };
    // The subdirectories to walk, and their names, one after another.
    let mut subs: Vec<Sub<F::Out>> = Vec::new();
    let mut sub_names: Vec<u8> = Vec::new();
    let read = with_listing(&dir, usize::MAX, |listing, _| {
        // Path rules first: a hidden entry is not counted, listed or
        // entered (nothing is allocated when no rule can hide).
        let hidden: Vec<bool> = match hide {
            Some(h) => {
                let mut h = h.in_dir(prefix);
                listing
                    .iter()
                    .map(|(name, kind)| h.hides_bytes(name, kind == Kind::Dir))
                    .collect()
            }
            None => Vec::new(),
        };
        let shown = |i: usize| !hidden.get(i).copied().unwrap_or(false);
        // Claim this directory's entries against the shared cap.
        let n = listing.len() - hidden.iter().filter(|h| **h).count();
        let allowed = shared.tally.claim(n);
        let mut out = visitor.begin(depth, allowed, listing.name_bytes());
        // One entry, its name's buffer reused for each.
        let mut entry = Entry::from_bytes(b"", Kind::Other);
        let visible = listing
            .iter()
            .enumerate()
            .filter(|(i, _)| shown(*i))
            .map(|(_, e)| e);
        for (name, kind) in visible.take(allowed) {
            entry.set(name, kind);
            let rel = if visitor.wants_rel() {
                rel_of(&entry.name)
            } else {
                String::new()
            };
            let Some(value) = visitor.visit(&rel, &entry, depth) else {
                continue;
            };
            let slot = visitor.add(&mut out, &entry, value, depth);
            if kind != Kind::Dir {
                continue;
            }
            if depth >= shared.tally.bounds.depth() {
                shared.tally.depth_cut.store(true, Ordering::Relaxed);
                continue;
            }
            subs.push((slot, sub_names.len()..sub_names.len() + name.len(), None));
            sub_names.extend_from_slice(name);
        }
        visitor.end(&mut out, depth);
        out
    });
    let Ok(mut out) = read else {
        return empty();
    };
    let descend = |(_, name, sub): &mut Sub<F::Out>| {
        let Some(name) = sub_names.get(name.clone()) else {
            return;
        };
        // O_NOFOLLOW: a directory swapped for a symlink is not entered.
        // One entry name beneath this directory's fd (never `.`, `..` or a
        // name with `/`: getdents gives plain names and skips those two).
        let name = OsStr::from_bytes(name);
        if let Ok(fd) = open_at(&dir, name, dir_flags()) {
            let rel = if wants_rel {
                rel_of(&name.to_string_lossy())
            } else {
                String::new()
            };
            *sub = Some(walk_dir(fd, &rel, depth + 1, visitor, shared));
        }
    };
    if subs.len() > 1 {
        subs.par_iter_mut().for_each(descend);
    } else {
        subs.iter_mut().for_each(descend);
    }
    drop(dir);
    for (slot, _, sub) in subs {
        if let Some(sub) = sub {
            visitor.fill(&mut out, slot, sub);
        }
    }
    out
}
