//! The paged walk: a tree walked in order, one entry at a time, that stops
//! as soon as its visitor has a page, and goes on later from a position.
//!
//! Owns: visiting the entries beneath a start directory in pre-order, names
//! in byte order (the reference's and `find`'s order once sorted), never
//! following a symlink (each directory opened `O_NOFOLLOW` from its
//! parent's handle, by one entry name), leaving out what the path rules
//! hide; stopping when the visitor says its page is full, at the entry cap,
//! or on cancellation, with the position of the next entry to visit; and
//! resuming at such a position ([`crate::fs::cursor::Cursor`]'s `rel`) by
//! re-entering its directories one name at a time from the start, under
//! the same rules and depth cap, and seeking each listing by name, so a
//! page costs what it shows, not the whole walk, and the pages of a stable
//! tree give each entry exactly once.
//! May touch: directory fds opened beneath a root, by single entry names
//! only.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;

use rustix::fs::{Mode, OFlags};

use crate::error::{Error, Result};
use crate::fs::scope::Start;
use crate::fs::walk::{Entry, Kind, Listing, WalkLimits};
use crate::limits::MAX_WALK_DEPTH_CEILING;
use crate::rules::HideDir;

/// What the visitor makes of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Leave it out and do not enter it.
    Skip,
    /// Go on (and enter it, if it is a directory within the depth cap).
    Go,
    /// The page is full: stop before this entry, the next page's first.
    Stop,
}

/// Decides, for each entry in order, what the walk does with it.
pub trait Visit {
    /// Whether [`Visit::visit`] looks at `rel` as text; when not, it is
    /// given an empty string.
    fn wants_rel(&self) -> bool;
    /// `rel`: the entry's `/`-joined path below the start (lossy UTF-8),
    /// `raw`: the same as raw bytes, `depth`: 1 for the start's entries.
    fn visit(&mut self, rel: &str, raw: &[u8], entry: &Entry, depth: usize) -> Flow;
}

/// Why a walk stopped before its visitor's page was full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Halt {
    /// The entry cap of one call.
    Entries(usize),
}

/// How a paged walk ended.
#[derive(Debug, Default)]
pub struct Paged {
    /// The next entry to visit (`None`: the walk reached its end).
    pub next: Option<Vec<u8>>,
    /// Why it stopped, when it was not the visitor.
    pub halt: Option<Halt>,
    /// A directory at the depth cap was not entered.
    pub depth_cut: bool,
    /// The directories it resumed inside, outermost first (raw names).
    pub resumed_in: Vec<Vec<u8>>,
}

/// One directory being walked.
struct Frame<'h> {
    fd: OwnedFd,
    list: Listing,
    /// The next entry of `list` to visit.
    next: usize,
    /// The length of this directory's own path in the walk's `rel`.
    prefix: usize,
    /// The depth of its entries.
    depth: usize,
    hide: Option<HideDir<'h>>,
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// The walk's state: its stack of directories and the current path.
struct Walk<'h> {
    start: &'h Start,
    stack: Vec<Frame<'h>>,
    rel: Vec<u8>,
    /// Listings of finished directories, reused.
    spare: Vec<Listing>,
    max_depth: usize,
}

impl<'h> Walk<'h> {
    /// Opens `name` in the top directory and pushes it (its path is `rel`).
    fn enter(&mut self, name: &[u8]) -> bool {
        let Some(top) = self.stack.last() else {
            return false;
        };
        let Ok(fd) =
            rustix::fs::openat(&top.fd, OsStr::from_bytes(name), dir_flags(), Mode::empty())
        else {
            return false;
        };
        let depth = top.depth + 1;
        let mut list = self.spare.pop().unwrap_or_default();
        if list.reread(&fd).is_err() {
            self.spare.push(list);
            return false;
        }
        let hide = self
            .start
            .hide
            .as_ref()
            .map(|h| h.in_dir(&String::from_utf8_lossy(&self.rel)));
        self.stack.push(Frame {
            fd,
            list,
            next: 0,
            prefix: self.rel.len(),
            depth,
            hide,
        });
        true
    }

    /// Sets `rel` to the path of `name` in the top directory.
    fn set_rel(&mut self, prefix: usize, name: &[u8]) {
        self.rel.truncate(prefix);
        if prefix > 0 {
            self.rel.push(b'/');
        }
        self.rel.extend_from_slice(name);
    }

    /// Moves to `pos`: the first entry at or after it in pre-order (with
    /// `after`, the first after it: its children first, if it is a
    /// directory within the depth cap).
    fn seek(&mut self, pos: &[u8], after: bool, out: &mut Paged) {
        let comps: Vec<&[u8]> = pos.split(|&b| b == b'/').collect();
        let last = comps.len().saturating_sub(1);
        for (k, comp) in comps.into_iter().enumerate() {
            let Some(top) = self.stack.last_mut() else {
                return;
            };
            let (i, found) = top.list.position(comp);
            if k == last && !after {
                top.next = i;
                return;
            }
            // The position lies inside `comp`: the directory itself was
            // visited on an earlier page.
            top.next = i + usize::from(found);
            let is_dir = found && top.list.get(i).is_some_and(|(_, kind)| kind == Kind::Dir);
            let hidden = top
                .hide
                .as_mut()
                .is_some_and(|h| h.hides(&String::from_utf8_lossy(comp), true));
            if !is_dir || hidden || top.depth >= self.max_depth {
                return;
            }
            let prefix = top.prefix;
            self.set_rel(prefix, comp);
            if !self.enter(comp) {
                return;
            }
            out.resumed_in.push(comp.to_vec());
        }
    }
}

/// Walks the tree under `start` in order from `from` (the next entry to
/// visit, or with `true` the entry just before it; `None`: the beginning),
/// calling `visitor` for each entry the path
/// rules do not hide, until it says [`Flow::Stop`], the entry cap of
/// `limits` is reached, or the tree ends.
pub fn walk(
    start: &Start,
    from: Option<(&[u8], bool)>,
    limits: &WalkLimits,
    visitor: &mut impl Visit,
) -> Result<Paged> {
    let fd = rustix::fs::openat(&start.dir, c".", dir_flags(), Mode::empty())
        .map_err(|e| Error::io("scandir", ".", &std::io::Error::from(e)))?;
    let list = Listing::of(&fd).map_err(|e| Error::io("scandir", ".", &std::io::Error::from(e)))?;
    let mut w = Walk {
        start,
        stack: vec![Frame {
            fd,
            list,
            next: 0,
            prefix: 0,
            depth: 1,
            hide: start.hide.as_ref().map(|h| h.in_dir("")),
        }],
        rel: Vec::new(),
        spare: Vec::new(),
        max_depth: limits.max_depth.min(MAX_WALK_DEPTH_CEILING),
    };
    let mut out = Paged::default();
    if let Some((pos, after)) = from {
        w.seek(pos, after, &mut out);
    }
    let wants_rel = visitor.wants_rel();
    let mut entry = Entry::from_bytes(b"", Kind::Other);
    let mut visited = 0usize;
    let mut text = String::new();
    while let Some(top) = w.stack.last_mut() {
        let Some((name, kind)) = top.list.get(top.next) else {
            if let Some(f) = w.stack.pop() {
                w.spare.push(f.list);
            }
            continue;
        };
        top.next += 1;
        let (prefix, depth) = (top.prefix, top.depth);
        if top
            .hide
            .as_mut()
            .is_some_and(|h| h.hides(&String::from_utf8_lossy(name), kind == Kind::Dir))
        {
            continue;
        }
        entry.set(name, kind);
        let name = name.to_vec();
        w.set_rel(prefix, &name);
        if visited >= limits.max_entries {
            out.halt = Some(Halt::Entries(limits.max_entries));
            out.next = Some(w.rel.clone());
            break;
        }
        if visited.is_multiple_of(1024) {
            if limits.cancel.is_cancelled() {
                return Err(Error::Cancelled);
            }
            if let Some(p) = &limits.progress {
                p.report(visited as u64);
            }
        }
        text.clear();
        if wants_rel {
            text.push_str(&String::from_utf8_lossy(&w.rel));
        }
        let flow = visitor.visit(&text, &w.rel, &entry, depth);
        if flow == Flow::Stop {
            out.next = Some(w.rel.clone());
            break;
        }
        visited += 1;
        if flow == Flow::Go && kind == Kind::Dir {
            if depth >= w.max_depth {
                out.depth_cut = true;
            } else {
                w.enter(&name);
            }
        }
    }
    if limits.cancel.is_cancelled() {
        return Err(Error::Cancelled);
    }
    if let Some(p) = &limits.progress {
        p.report(visited as u64);
    }
    Ok(out)
}
