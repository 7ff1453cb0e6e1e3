//! The walk backend: resolving a client path component by component
//! beneath its root, so that path rules match the object actually touched.
//!
//! Owns: turning the components of a path into the canonical in-root path
//! of what they name (after in-root symlinks and `..`) and a handle on its
//! parent directory (and on itself, when it is a directory), checking the
//! path rules on the way. Each directory is opened `O_NOFOLLOW` from the
//! one before; a symlink is read (`readlinkat`) and its target's components
//! are walked the same way, never followed by the kernel; a link that is
//! absolute or climbs above the root is an escape. Every canonical path the
//! walk passes through is matched, so a hidden directory cannot even be
//! passed through (`secrets/../x`). The final effect is the strongest over
//! the canonical path and every other name the path reached it by (each
//! symlink's own path with the rest of the path after it): a protected name
//! that is a link (`.git -> store.git`) protects what it leads to. The
//! operation then acts on the handles the walk produced (the path checked
//! is the path used): a directory or symlink swapped in after the check is
//! not followed.
//!
//! One method per kind of component, as cap-std's `manually/open.rs` has
//! them: `.`, `..` ([`Walk::up`]), a name ([`Walk::name`]) that is a
//! symlink ([`Walk::symlink`]), a directory ([`Walk::enter`]) or where the
//! walk ends ([`Walk::leaf`]), and the end on a directory
//! ([`Walk::end_on_dir`]).
//!
//! The walk never decides how an error is worded: a path it cannot go on
//! with (missing, not a directory, hidden) leaves the result *void* with an
//! errno, and each operation words that as it words its own failures, so a
//! hidden path reads exactly like a missing one for every tool.
//! May touch: root `Dir`s and directories opened beneath them, by single
//! names (never `.`, `..`, or a name with `/`).

use std::sync::Arc;

use cap_fs_ext::DirExt;
use cap_std::fs::Dir;
use rustix::fs::{AtFlags, FileType};
use rustix::io::Errno;

use super::{Backend, Beneath, Final, Resolved};
use crate::error::{Error, Outside, Result};
use crate::limits::{MAX_RESOLVE_DEPTH, MAX_SYMLINK_HOPS};
use crate::rules::{Effect, Rules};

/// Walks `segs` beneath `at`, checking its rules.
pub(super) fn walk(at: Beneath<'_>, segs: &[String], last: Final, given: &str) -> Result<Resolved> {
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    if let Some(r) = super::kernel::no_symlinks(at, segs, last) {
        return Ok(r);
    }
    Walk::new(at, segs, last, given).run()
}

/// A walk under way.
struct Walk<'a> {
    at: Beneath<'a>,
    last: Final,
    given: &'a str,
    /// Directories entered, the root first, each with where its name ends
    /// in `local` and whether it was reached through a link.
    dirs: Vec<(Arc<Dir>, usize, bool)>,
    /// The canonical path so far.
    local: String,
    /// Components still to walk, the next one last, each marked when it
    /// came from a symlink's target.
    pending: Vec<(String, bool)>,
    hops: usize,
    /// The other in-root names of what the path reaches: at each symlink
    /// passed, the link's own path with the rest of the path after it (the
    /// name a program that spells the path that way reads it by).
    aliases: Vec<String>,
    out: Resolved,
}

/// What a component leads to.
enum Step {
    /// Go on with the next component.
    Next,
    /// The walk ended.
    Done(Resolved),
}

impl<'a> Walk<'a> {
    fn new(at: Beneath<'a>, segs: &[String], last: Final, given: &'a str) -> Self {
        Walk {
            at,
            last,
            given,
            dirs: vec![(at.dir.clone(), 0, false)],
            local: String::new(),
            pending: segs.iter().rev().map(|s| (s.clone(), false)).collect(),
            hops: 0,
            aliases: Vec::new(),
            out: Resolved {
                how: Backend::Walk,
                base: at.dir.clone(),
                rel: Vec::new(),
                held: Some(at.dir.clone()),
                local: String::new(),
                parent_end: None,
                effect: Effect::None,
                decided: None,
                void: None,
                via_link: false,
                missing: false,
                parent_missing: false,
                is_dir: true,
            },
        }
    }

    /// The escape refusal. The scope refused a path whose `..` climbs
    /// above the root as written, so an escape here went through a link
    /// (one read on the way: `hops`).
    fn outside(&self) -> Error {
        Error::OutsideRoots {
            path: self.given.to_owned(),
            why: if self.hops > 0 {
                Outside::Link
            } else {
                Outside::Path
            },
        }
    }

    fn rules(&self) -> &'a Rules {
        self.at.rules
    }

    fn run(mut self) -> Result<Resolved> {
        while let Some((c, from_link)) = self.pending.pop() {
            let step = match c.as_str() {
                "" | "." => Step::Next,
                ".." => self.up()?,
                _ => self.name(c, from_link)?,
            };
            if let Step::Done(r) = step {
                return Ok(r);
            }
        }
        self.end_on_dir()
    }

    /// `..`: back to the directory before (never above the root).
    fn up(&mut self) -> Result<Step> {
        if self.dirs.len() <= 1 {
            return Err(self.outside());
        }
        self.dirs.pop();
        let end = self.dirs.last().map_or(0, |d| d.1);
        self.local.truncate(end);
        Ok(Step::Next)
    }

    /// Ends the walk at `c` in `cur`, void with `errno`.
    fn stop(&mut self, cur: Arc<Dir>, c: String, end_before: usize, errno: Errno) -> Resolved {
        let mut out = self.out.clone();
        out.base = cur;
        out.rel = vec![c];
        out.held = None;
        out.local = std::mem::take(&mut self.local);
        out.parent_end = Some(end_before);
        out.void = Some(errno);
        out
    }

    /// A name: matched (a hidden one is missing, whether or not it exists,
    /// and cannot be passed through), then taken by its kind.
    fn name(&mut self, c: String, from_link: bool) -> Result<Step> {
        let is_last = self.pending.iter().all(|(p, _)| p.is_empty() || p == ".");
        let Some((cur, _, _)) = self.dirs.last().cloned() else {
            return Err(self.outside());
        };
        let end_before = self.local.len();
        if !self.local.is_empty() {
            self.local.push('/');
        }
        self.local.push_str(&c);
        let st = match rustix::fs::statat(&*cur, c.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Some(st),
            Err(Errno::NOENT) => None,
            Err(e) => {
                let rest: Vec<String> = std::iter::once(c)
                    .chain(self.pending.drain(..).rev().map(|p| p.0))
                    .collect();
                let mut out = self.stop(cur, String::new(), end_before, e);
                out.rel = rest;
                return Ok(Step::Done(out));
            }
        };
        let ft = st.map(|st| FileType::from_raw_mode(st.st_mode));
        let is_dir = ft == Some(FileType::Directory);
        let rules = self.rules();
        let hidden_at = rules.hides_any().then(|| self.at.rule_path(&self.local));
        if let Some(rp) = hidden_at.filter(|rp| {
            rules.hides_entry(rp, is_dir) || (ft.is_none() && rules.hides_entry(rp, true))
        }) {
            let mut out = self.stop(cur, c, end_before, Errno::NOENT);
            out.effect = Effect::Hidden;
            out.decided = Some(rp);
            // As a missing name: a final one reached through a link is a
            // dangling link, one with more after it a missing parent.
            out.missing = true;
            out.via_link = from_link && is_last;
            out.parent_missing = !is_last;
            return Ok(Step::Done(out));
        }
        match ft {
            Some(FileType::Symlink) if !(is_last && self.last == Final::Link) => {
                self.symlink(cur, c, end_before)
            }
            Some(FileType::Directory) => Ok(self.enter(cur, c, end_before, from_link)),
            _ => Ok(Step::Done(
                self.leaf(cur, c, end_before, ft, from_link, is_last),
            )),
        }
    }

    /// A symlink: its target's components are walked next, from the
    /// directory it is in; an absolute target is an escape.
    fn symlink(&mut self, cur: Arc<Dir>, c: String, end_before: usize) -> Result<Step> {
        self.hops += 1;
        if self.hops > MAX_SYMLINK_HOPS {
            return Ok(Step::Done(self.stop(cur, c, end_before, Errno::LOOP)));
        }
        let link = match rustix::fs::readlinkat(&*cur, c.as_str(), Vec::new()) {
            Ok(link) => link,
            // No longer a link (or gone): replaced since the lstat. As any
            // path the walk cannot go on with: void, worded by each
            // operation as a missing path.
            Err(Errno::INVAL | Errno::NOENT) => {
                return Ok(Step::Done(self.stop(cur, c, end_before, Errno::NOENT)));
            }
            Err(e) => return Err(Error::io("open", self.given, &e.into())),
        };
        let link = link.to_str().map_err(|_| Error::InvalidPath {
            path: self.given.to_owned(),
            reason: "its symbolic link leads to a name that is not valid UTF-8",
        })?;
        if link.starts_with('/') {
            return Err(self.outside());
        }
        if let Some(a) = alias(self.at.rule_path(&self.local), &self.pending) {
            self.aliases.push(a);
        }
        self.local.truncate(end_before);
        self.pending
            .extend(link.split('/').rev().map(|p| (p.to_owned(), true)));
        Ok(Step::Next)
    }

    /// A directory: opened `O_NOFOLLOW` from the one before.
    fn enter(&mut self, cur: Arc<Dir>, c: String, end_before: usize, from_link: bool) -> Step {
        if self.dirs.len() > MAX_RESOLVE_DEPTH {
            let mut out = self.stop(cur, c, end_before, Errno::NAMETOOLONG);
            out.parent_end = None;
            return Step::Done(out);
        }
        match cur.open_dir_nofollow(c.as_str()) {
            Ok(d) => {
                self.dirs.push((Arc::new(d), self.local.len(), from_link));
                Step::Next
            }
            // Swapped for something else since the lstat.
            Err(e) => {
                let errno = e
                    .raw_os_error()
                    .map_or(Errno::NOENT, Errno::from_raw_os_error);
                Step::Done(self.stop(cur, c, end_before, errno))
            }
        }
    }

    /// A file, a kept final link, or a missing name: the walk ends here.
    fn leaf(
        &mut self,
        cur: Arc<Dir>,
        c: String,
        end_before: usize,
        ft: Option<FileType>,
        from_link: bool,
        is_last: bool,
    ) -> Resolved {
        let mut out = self.out.clone();
        out.base = cur;
        out.rel = std::iter::once(c)
            .chain(self.pending.drain(..).rev().map(|p| p.0))
            .collect();
        out.held = None;
        out.parent_end = Some(end_before);
        out.missing = ft.is_none();
        out.is_dir = false;
        out.via_link = from_link;
        let mut local = std::mem::take(&mut self.local);
        let errno = if ft.is_some() {
            Errno::NOTDIR
        } else {
            Errno::NOENT
        };
        if !is_last {
            // A missing or non-directory component with more after it: the
            // rest is matched lexically, and nothing but create_directory
            // (which makes the missing ones) goes on.
            let mut parts: Vec<&str> = Vec::new();
            for p in out.rel.iter().skip(1) {
                match p.as_str() {
                    "" | "." => {}
                    ".." => {
                        parts.pop();
                    }
                    p => parts.push(p),
                }
            }
            for p in parts {
                local.push('/');
                local.push_str(p);
            }
            out.local = local;
            (out.effect, out.decided) = self.strongest(&out.local, None);
            if out.effect == Effect::Hidden {
                out.rel.truncate(1);
            }
            out.void = Some(errno);
            // A missing directory on the way: the parent is missing.
            out.parent_missing = ft.is_none();
            return out;
        }
        out.local = local;
        if out.rel.len() > 1 {
            // Only `.`s follow a name that is not a directory (`f.txt/.`):
            // not a directory, as the kernel would say.
            (out.effect, out.decided) = self.strongest(&out.local, None);
            out.void = Some(errno);
            return out;
        }
        let kind = if ft.is_none() { None } else { Some(false) };
        (out.effect, out.decided) = self.strongest(&out.local, kind);
        if out.effect == Effect::Hidden {
            out.void = Some(Errno::NOENT);
        }
        out
    }

    /// The path ended on a directory (or the root).
    fn end_on_dir(mut self) -> Result<Resolved> {
        let Some((held, end, from_link)) = self.dirs.pop() else {
            return Err(self.outside());
        };
        let mut out = self.out.clone();
        out.held = Some(held);
        out.via_link = from_link;
        out.local = std::mem::take(&mut self.local);
        if let Some((parent, parent_end, _)) = self.dirs.last() {
            out.base = parent.clone();
            out.parent_end = Some(*parent_end);
            let start = if *parent_end == 0 { 0 } else { parent_end + 1 };
            out.rel = vec![out.local.get(start..end).unwrap_or_default().to_owned()];
        }
        (out.effect, out.decided) = self.strongest(&out.local, Some(true));
        if out.effect == Effect::Hidden {
            out.held = None;
            out.void = Some(Errno::NOENT);
        }
        Ok(out)
    }

    /// The strongest effect over the canonical `local` and the other names
    /// the walk reached it by: a protection holds for every name by which a
    /// program that obeys the file reads it (`.git -> store.git` makes
    /// `store.git/hooks` what git runs as `.git/hooks`). With it, the name
    /// that gave it ([`Resolved::decided`]).
    fn strongest(&self, local: &str, kind: Option<bool>) -> (Effect, Option<String>) {
        let rules = self.rules();
        if rules.is_empty() {
            return (Effect::None, None);
        }
        let canonical = self.at.rule_path(local);
        let mut best = (rules.effect(&canonical, kind), canonical);
        for a in &self.aliases {
            let e = rules.effect(a, kind);
            if e > best.0 {
                best = (e, a.clone());
            }
        }
        match best {
            (Effect::None, _) => (Effect::None, None),
            (e, at) => (e, Some(at)),
        }
    }
}

/// The name a path has through the symlink at rule path `link`: the link's
/// own path followed by the components still to walk (`pending`, the next
/// one last), `..` taken lexically. `None` when it climbs above the root.
fn alias(mut link: String, pending: &[(String, bool)]) -> Option<String> {
    for (p, _) in pending.iter().rev() {
        match p.as_str() {
            "" | "." => {}
            ".." => {
                if link.is_empty() {
                    return None;
                }
                let cut = link.rfind('/').unwrap_or(0);
                link.truncate(cut);
            }
            p => {
                if !link.is_empty() {
                    link.push('/');
                }
                link.push_str(p);
            }
        }
    }
    Some(link)
}
