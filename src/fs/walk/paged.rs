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

use super::fds::{dir_flags, open_at, open_start};
use super::{Bounds, Entry, Kind, Listing, Stop, Tally};
use crate::error::{Error, Result};
use crate::fs::scope::Start;
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

/// How a paged walk ended.
#[derive(Debug, Default)]
pub struct Paged {
    /// The next entry to visit (`None`: the walk reached its end).
    pub next: Option<Vec<u8>>,
    /// Why it stopped, when it was not the visitor (only
    /// [`Stop::Entries`]: the entry cap of one call).
    pub halt: Option<Stop>,
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
        let Ok(fd) = open_at(&top.fd, OsStr::from_bytes(name), dir_flags()) else {
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
            let hidden = top.hide.as_mut().is_some_and(|h| h.hides_bytes(comp, true));
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
/// `bounds` is reached, or the tree ends.
pub fn walk(
    start: &Start,
    from: Option<(&[u8], bool)>,
    bounds: &Bounds,
    visitor: &mut impl Visit,
) -> Result<Paged> {
    let tally = Tally::new(bounds);
    let fd = open_start(&start.dir, ".")?;
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
        max_depth: bounds.depth(),
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
            .is_some_and(|h| h.hides_bytes(name, kind == Kind::Dir))
        {
            continue;
        }
        entry.set(name, kind);
        let name = name.to_vec();
        w.set_rel(prefix, &name);
        if visited >= bounds.max_entries {
            out.halt = Some(Stop::Entries(bounds.max_entries));
            out.next = Some(w.rel.clone());
            break;
        }
        if visited.is_multiple_of(1024) {
            if bounds.cancel.is_cancelled() {
                return Err(Error::Cancelled);
            }
            bounds.report(visited as u64);
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
    if bounds.cancel.is_cancelled() {
        return Err(Error::Cancelled);
    }
    bounds.report(visited as u64);
    tally.end()?;
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, clippy::disallowed_types)] // fixtures built with std::fs
mod tests {
    use super::*;
    use tokio_util::sync::CancellationToken;

    /// Records every entry's raw path; stops after `page` entries.
    struct Record {
        page: usize,
        seen: Vec<Vec<u8>>,
    }

    impl Visit for Record {
        fn wants_rel(&self) -> bool {
            false
        }
        fn visit(&mut self, _rel: &str, raw: &[u8], _entry: &Entry, _depth: usize) -> Flow {
            if self.seen.len() == self.page {
                return Flow::Stop;
            }
            self.seen.push(raw.to_vec());
            Flow::Go
        }
    }

    fn limits(max_entries: usize) -> Bounds {
        Bounds {
            max_entries,
            max_depth: 64,
            cancel: CancellationToken::new(),
            progress: None,
            deadline: None,
            pool: crate::fs::walk::WalkPool::new(0),
        }
    }

    /// A tree whose names sort differently as paths and as components.
    fn fixture() -> (tempfile::TempDir, Start) {
        let tmp = tempfile::tempdir().expect("tempdir");
        for d in ["a/x/y", "a-b/z", "a.b", "b/c/d/e", "empty"] {
            std::fs::create_dir_all(tmp.path().join(d)).expect("mkdir");
        }
        for f in [
            "a/1",
            "a/x/2",
            "a/x/y/3",
            "a-b/4",
            "b/c/5",
            "b/c/d/e/6",
            "z",
            "\u{e9}",
        ] {
            std::fs::write(tmp.path().join(f), "").expect("write");
        }
        std::os::unix::fs::symlink("a", tmp.path().join("link")).expect("symlink");
        let dir = cap_std::fs::Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority())
            .expect("open");
        (tmp, Start { dir, hide: None })
    }

    fn all(start: &Start, from: Option<(&[u8], bool)>) -> Vec<Vec<u8>> {
        let mut v = Record {
            page: usize::MAX,
            seen: Vec::new(),
        };
        let out = walk(start, from, &limits(usize::MAX), &mut v).expect("walk");
        assert!(out.next.is_none());
        v.seen
    }

    #[test]
    fn resuming_at_any_entry_gives_the_rest_in_order() {
        let (_tmp, start) = fixture();
        let whole = all(&start, None);
        let mut sorted = whole.clone();
        sorted.sort_by(|a, b| a.split(|&c| c == b'/').cmp(b.split(|&c| c == b'/')));
        assert_eq!(whole, sorted, "pre-order, names in byte order");
        assert_eq!(whole.len(), 20);
        for (i, pos) in whole.iter().enumerate() {
            assert_eq!(all(&start, Some((pos, false))), whole[i..], "at {pos:?}");
            // After it: its children first when it is a directory.
            assert_eq!(
                all(&start, Some((pos, true))),
                whole[i + 1..],
                "after {pos:?}"
            );
        }
        // A position that no longer exists: the first entry after it.
        assert_eq!(all(&start, Some((b"a/w", false)))[0], b"a/x");
        assert_eq!(all(&start, Some((b"a/q/r", false)))[0], b"a/x");
        assert_eq!(all(&start, Some((b"zz", false))), [b"\xc3\xa9".to_vec()]);
        assert!(all(&start, Some((b"\xff", false))).is_empty());
    }

    #[test]
    fn pages_stop_when_full_and_go_on_from_the_next_entry() {
        let (_tmp, start) = fixture();
        let whole = all(&start, None);
        for page in 1..5 {
            let mut got = Vec::new();
            let mut from: Option<Vec<u8>> = None;
            loop {
                let mut v = Record {
                    page,
                    seen: Vec::new(),
                };
                let out = walk(
                    &start,
                    from.as_deref().map(|f| (f, false)),
                    &limits(usize::MAX),
                    &mut v,
                )
                .expect("walk");
                assert!(v.seen.len() <= page);
                got.extend(v.seen);
                match out.next {
                    Some(n) => from = Some(n),
                    None => break,
                }
            }
            assert_eq!(got, whole, "pages of {page}");
        }
    }

    #[test]
    fn the_entry_cap_stops_one_call_at_the_next_entry() {
        let (_tmp, start) = fixture();
        let whole = all(&start, None);
        let mut v = Record {
            page: usize::MAX,
            seen: Vec::new(),
        };
        let out = walk(&start, None, &limits(5), &mut v).expect("walk");
        assert_eq!(out.halt, Some(Stop::Entries(5)));
        assert_eq!(v.seen, whole[..5]);
        assert_eq!(out.next.as_deref(), Some(whole[5].as_slice()));
    }

    #[test]
    fn a_cancelled_walk_is_an_error() {
        let (_tmp, start) = fixture();
        let l = limits(usize::MAX);
        l.cancel.cancel();
        let mut v = Record {
            page: usize::MAX,
            seen: Vec::new(),
        };
        assert!(matches!(
            walk(&start, None, &l, &mut v),
            Err(Error::Cancelled)
        ));
    }
}
