//! The files of a content search: the regular files under a directory fd,
//! in path order, with `rg`'s default filters, handed to the consumer a
//! chunk at a time while the walk goes on.
//!
//! Owns: what a file walk is asked and answers ([`Filter`], [`Consume`],
//! [`WalkEnd`]); listing each directory (after the path rules, the filters
//! and the ignore rules of `ignores`), the bounds (entries, depth, listed
//! path bytes, deadline, cancellation: [`Bounds`]), walking sibling
//! subtrees in parallel in growing groups while keeping path order, and
//! resuming at a position. Symlinks are never followed and FIFOs, sockets
//! and devices never opened.
//! May touch: directory fds opened beneath a root, by single entry names.

use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use rayon::prelude::*;

use super::fds::{dir_flags, open_at};
use super::ignores::{Chain, Level, Veil};
use super::{Bounds, Kind, Stop, Tally, read_entries_fd};
use crate::limits::MAX_WALK_TEXT_BYTES;
use crate::rules::Hide;
use crate::text::glob::Excludes;

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
}

struct Shared<'a> {
    filter: &'a Filter,
    tally: &'a Tally<'a>,
    /// Path rules: a hidden entry is not searched or entered.
    hide: Option<&'a Hide>,
    /// Bytes of listed paths held at once (listed, not yet handed to the
    /// consumer); past [`MAX_WALK_TEXT_BYTES`] the walk stops.
    path_bytes: AtomicUsize,
    big: AtomicU64,
}

/// Sibling subtrees walked at once, at most: a streamed directory's
/// subdirectories are walked in groups of 1, 2, 4, ... up to this many (each
/// group in parallel, then handed on in path order), so the first files come
/// soon and a wide tree is still walked in parallel.
const MAX_GROUP_DIRS: usize = 64;

/// Hands listed files to the consumer in chunks, in path order. The paths
/// held here count against `max_path_bytes` until they are handed on.
struct Emitter<'a, C: Consume> {
    pending: std::collections::VecDeque<Vec<u8>>,
    consumer: &'a mut C,
    done: bool,
}

impl<C: Consume> Emitter<'_, C> {
    fn push(&mut self, rel: Vec<u8>, shared: &Shared<'_>) {
        self.pending.push_back(rel);
        self.flush(false, shared);
    }

    fn flush(&mut self, all: bool, shared: &Shared<'_>) {
        while !self.done && !self.pending.is_empty() {
            let n = self.consumer.chunk().max(1);
            if self.pending.len() < n && !all {
                break;
            }
            let chunk: Vec<Vec<u8>> = self.pending.drain(..n.min(self.pending.len())).collect();
            let bytes = chunk.iter().map(Vec::len).sum::<usize>();
            shared.path_bytes.fetch_sub(bytes, Ordering::Relaxed);
            if !self.consumer.take(chunk) {
                self.done = true;
            }
        }
    }
}

/// Walks the files to search under `start` (an fd the caller owns),
/// leaving out what `hide` hides and honouring `ancestors`' ignore rules
/// too, and hands them to `consumer` in path order as they are listed, from
/// the file at or after `from` (a `/`-joined path below the start; with
/// `true`, the first after it), or from the first. Runs on the walk
/// threads (the consumer too); the caller ends the `tally`
/// ([`Tally::end`]).
#[allow(clippy::too_many_arguments)]
pub(super) fn walk_files<C: Consume + Send>(
    pool: &rayon::ThreadPool,
    start: OwnedFd,
    hide: Option<&Hide>,
    ancestors: &[Level],
    filter: &Filter,
    tally: &Tally<'_>,
    from: Option<(&[u8], bool)>,
    consumer: &mut C,
) -> WalkEnd {
    let shared = Shared {
        filter,
        tally,
        hide,
        path_bytes: AtomicUsize::new(0),
        big: AtomicU64::new(0),
    };
    let top = Chain {
        level: None,
        parent: None,
        ancestors,
    };
    pool.install(|| {
        let mut em = Emitter {
            pending: std::collections::VecDeque::new(),
            consumer,
            done: false,
        };
        let comps: Vec<&[u8]> = from
            .map(|(rel, _)| rel.split(|&b| b == b'/').collect())
            .unwrap_or_default();
        let seek = from.map(|(_, after)| Seek {
            comps: &comps,
            after,
        });
        stream_dir(start, &[], 1, &top, &shared, &mut em, seek);
        em.flush(true, &shared);
    });
    let bounds: &Bounds = tally.bounds;
    let stop = if tally.late.load(Ordering::Relaxed) {
        Some(Stop::Deadline)
    } else if tally.entries_cut.load(Ordering::Relaxed) {
        Some(Stop::Entries(bounds.max_entries))
    } else if tally.text_cut.load(Ordering::Relaxed) {
        Some(Stop::Text(MAX_WALK_TEXT_BYTES))
    } else if tally.depth_cut.load(Ordering::Relaxed) {
        Some(Stop::Depth(bounds.depth()))
    } else {
        None
    };
    WalkEnd {
        stop,
        big_ignore_files: shared.big.into_inner(),
    }
}

enum Slot {
    File(Vec<u8>),
    Dir(Vec<u8>, std::ffi::OsString, Vec<Vec<u8>>),
    Taken,
}

/// Lists `dir` (whose relative path is `prefix`): its files and the
/// subdirectories to enter, in name order, after the filters; and the
/// directory's own ignore rules. `None` if it cannot be listed or the walk
/// has stopped.
fn slots_of(
    dir: &OwnedFd,
    prefix: &[u8],
    depth: usize,
    parent: &Chain<'_>,
    shared: &Shared<'_>,
) -> Option<(Vec<Slot>, Option<Level>)> {
    if shared.tally.stopped() {
        return None;
    }
    let Ok((entries, _)) = read_entries_fd(dir, false, usize::MAX, "") else {
        return None;
    };
    let allowed = shared.tally.claim(entries.len());
    let filter = shared.filter;
    // The path rules' look at this directory's entries, planned once.
    let dir_rel = String::from_utf8_lossy(prefix);
    let mut hide = shared.hide.map(|h| h.in_dir(&dir_rel));
    let level = filter.ignore_files.then(|| {
        let base = if prefix.is_empty() {
            0
        } else {
            prefix.len() + 1
        };
        // Its ignore files and `.git`, unless the rules hide them.
        let veil = shared.hide.zip(hide.as_mut()).map(|(hide, here)| Veil {
            hide,
            here,
            rel: &dir_rel,
        });
        Level::read(dir, Vec::new(), base, &shared.big, veil)
    });
    let chain = Chain {
        level: level.as_ref(),
        parent: Some(parent),
        ancestors: parent.ancestors,
    };
    let mut slots = Vec::new();
    for entry in entries.into_iter().take(allowed) {
        let name = entry.os_name().as_bytes();
        let mut rel = Vec::with_capacity(prefix.len() + 1 + name.len());
        rel.extend_from_slice(prefix);
        if !rel.is_empty() {
            rel.push(b'/');
        }
        rel.extend_from_slice(name);
        let is_dir = match entry.kind {
            Kind::Dir => true,
            Kind::File => false,
            // Symlinks are never followed and FIFOs, sockets and devices
            // never opened.
            Kind::Symlink | Kind::Other => continue,
        };
        if hide.as_mut().is_some_and(|h| h.hides_bytes(name, is_dir)) {
            continue;
        }
        let rel_str = String::from_utf8_lossy(&rel);
        if filter.exclude.is_match(&rel_str) {
            continue;
        }
        let decided = if filter.ignore_files {
            chain.decide(&rel, is_dir)
        } else {
            None
        };
        if decided == Some(true) {
            continue;
        }
        let hidden = name.first() == Some(&b'.');
        if hidden && !filter.hidden && decided != Some(false) {
            continue;
        }
        // `.git` is both hidden and version-control data: it is searched
        // only with `hidden` and without ignore files.
        if is_dir && name == b".git" && (filter.ignore_files || !filter.hidden) {
            continue;
        }
        if is_dir {
            if depth >= shared.tally.bounds.depth() {
                shared.tally.depth_cut.store(true, Ordering::Relaxed);
                continue;
            }
            slots.push(Slot::Dir(rel, entry.os_name().to_owned(), Vec::new()));
        } else {
            if filter
                .include
                .as_ref()
                .is_some_and(|i| !i.is_match(&rel_str))
            {
                continue;
            }
            let bytes = shared.path_bytes.fetch_add(rel.len(), Ordering::Relaxed) + rel.len();
            if bytes > MAX_WALK_TEXT_BYTES {
                shared.tally.text_cut.store(true, Ordering::Relaxed);
                break;
            }
            slots.push(Slot::File(rel));
        }
    }
    Some((slots, level))
}

/// Walks the subdirectory of `slot` (opened when it is walked: one name
/// beneath `dir`, `O_NOFOLLOW`, so a wide directory does not hold an fd per
/// child) into the slot's list.
fn descend(dir: &OwnedFd, slot: &mut Slot, depth: usize, chain: &Chain<'_>, shared: &Shared<'_>) {
    if let Slot::Dir(rel, name, found) = slot
        && let Ok(sub) = open_at(dir, name.as_os_str(), dir_flags())
    {
        walk_dir(sub, rel, depth + 1, chain, shared, found);
    }
}

/// Where a resumed walk goes on: the path components, below the directory
/// being walked, of the first file to hand on (with `after`, of the file
/// just before it).
#[derive(Clone, Copy)]
struct Seek<'a> {
    comps: &'a [&'a [u8]],
    after: bool,
}

fn slot_name(slot: &Slot) -> &[u8] {
    match slot {
        Slot::File(rel) => rel.rsplit(|&b| b == b'/').next().unwrap_or_default(),
        Slot::Dir(_, name, _) => name.as_bytes(),
        Slot::Taken => &[],
    }
}

/// Drops the slots before `seek` from `slots` (a directory's, in name
/// order); returns the slot the position lies inside, with the rest of the
/// position, to be walked first.
fn seek_slots<'a>(slots: &mut Vec<Slot>, seek: Seek<'a>) -> Option<(Slot, Seek<'a>)> {
    let (first, rest) = seek.comps.split_first()?;
    let i = slots.partition_point(|s| slot_name(s) < *first);
    slots.drain(..i);
    let at = slots.first().is_some_and(|s| slot_name(s) == *first);
    if !at {
        return None;
    }
    if rest.is_empty() {
        // The position's own entry: a file is handed on (or, with `after`,
        // not); a directory is walked whole either way.
        if seek.after && matches!(slots.first(), Some(Slot::File(_))) {
            slots.remove(0);
        }
        return None;
    }
    // Inside it: it was entered on an earlier page.
    let slot = slots.remove(0);
    matches!(slot, Slot::Dir(..)).then_some((
        slot,
        Seek {
            comps: rest,
            after: seek.after,
        },
    ))
}

/// Walks `dir` and hands its files on in path order as they are listed:
/// its subdirectories go in groups of 1, 2, 4, ... [`MAX_GROUP_DIRS`]; a
/// group of one is streamed itself, a bigger one is walked whole (in
/// parallel) and then handed on.
fn stream_dir<C: Consume>(
    dir: OwnedFd,
    prefix: &[u8],
    depth: usize,
    parent: &Chain<'_>,
    shared: &Shared<'_>,
    em: &mut Emitter<'_, C>,
    seek: Option<Seek<'_>>,
) {
    if em.done {
        return;
    }
    let Some((mut slots, level)) = slots_of(&dir, prefix, depth, parent, shared) else {
        return;
    };
    let chain = Chain {
        level: level.as_ref(),
        parent: Some(parent),
        ancestors: parent.ancestors,
    };
    if let Some((Slot::Dir(rel, name, _), inner)) = seek.and_then(|s| seek_slots(&mut slots, s))
        && let Ok(sub) = open_at(&dir, name.as_os_str(), dir_flags())
    {
        stream_dir(sub, &rel, depth + 1, &chain, shared, em, Some(inner));
        if em.done {
            return;
        }
    }
    let (mut i, mut group) = (0, 1);
    while i < slots.len() {
        let mut j = i;
        let mut dirs = 0;
        while let Some(slot) = slots.get(j) {
            if matches!(slot, Slot::Dir(..)) {
                if dirs == group {
                    break;
                }
                dirs += 1;
            }
            j += 1;
        }
        let Some(part) = slots.get_mut(i..j) else {
            break;
        };
        if dirs > 1 {
            part.par_iter_mut()
                .for_each(|slot| descend(&dir, slot, depth, &chain, shared));
        }
        for slot in part.iter_mut() {
            match std::mem::replace(slot, Slot::Taken) {
                Slot::File(rel) => em.push(rel, shared),
                Slot::Dir(_, _, found) if dirs > 1 => {
                    for rel in found {
                        em.push(rel, shared);
                    }
                }
                Slot::Dir(rel, name, _) => {
                    if let Ok(sub) = open_at(&dir, name.as_os_str(), dir_flags()) {
                        stream_dir(sub, &rel, depth + 1, &chain, shared, em, None);
                    }
                }
                Slot::Taken => {}
            }
            if em.done {
                return;
            }
        }
        if dirs > 0 {
            group = (group * 2).min(MAX_GROUP_DIRS);
        }
        i = j;
    }
}

/// Walks `dir` whole into `out`, its subdirectories in parallel.
fn walk_dir(
    dir: OwnedFd,
    prefix: &[u8],
    depth: usize,
    parent: &Chain<'_>,
    shared: &Shared<'_>,
    out: &mut Vec<Vec<u8>>,
) {
    let Some((mut slots, level)) = slots_of(&dir, prefix, depth, parent, shared) else {
        return;
    };
    let chain = Chain {
        level: level.as_ref(),
        parent: Some(parent),
        ancestors: parent.ancestors,
    };
    let dirs = slots.iter().filter(|s| matches!(s, Slot::Dir(..))).count();
    if dirs > 1 {
        slots
            .par_iter_mut()
            .for_each(|slot| descend(&dir, slot, depth, &chain, shared));
    } else {
        slots
            .iter_mut()
            .for_each(|slot| descend(&dir, slot, depth, &chain, shared));
    }
    for slot in slots {
        match slot {
            Slot::File(rel) => out.push(rel),
            Slot::Dir(_, _, found) => out.extend(found),
            Slot::Taken => {}
        }
    }
}
