//! The ignore rules of a content search, as `rg` reads them.
//!
//! Owns: reading `.ignore`, `.gitignore` and `.git/info/exclude` through
//! directory fds (one name at a time, `O_NOFOLLOW`, bounded in size and in
//! rules), feeding their lines to the `ignore` crate's gitignore matcher,
//! and deciding an entry by `rg`'s precedence over the walked directories
//! and the start's ancestors. An ignore file, a `.git`, or a directory on
//! the way to `.git/info/exclude` that the path rules hide is absent here
//! as everywhere ([`Veil`]): the walk then behaves as on a tree without it.
//! May touch: directory fds opened beneath a root, by single entry names.

use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rustix::fs::AtFlags;

use super::fds::dir_flags;
use super::open::open_file_at;
use crate::limits::{MAX_IGNORE_FILE_BYTES, MAX_IGNORE_RULES, MAX_IGNORE_WILDCARDS};
use crate::rules::{Hide, HideDir};

/// The path rules as a level's reads see them: which of its directory's
/// entries (and of the entries beneath its `.git`) are hidden.
///
/// # Security
///
/// Whether an ignore file is used, and which files it leaves out, shows in
/// a search's results; whether a `.git` is there decides whether the git
/// ignore files count. A hidden one read here would let a client confirm
/// that it exists and guess its lines. So each name a level reads is
/// matched first, every component of `.git/info/exclude` in turn, and a
/// hidden one is treated as missing.
pub(super) struct Veil<'a, 'h> {
    /// The rules, from the base the directory's path is relative to.
    pub(super) hide: &'h Hide,
    /// The directory's own entries, planned once by the caller.
    pub(super) here: &'a mut HideDir<'h>,
    /// The directory's path relative to `hide`'s base ("" for the base).
    pub(super) rel: &'a str,
}

impl Veil<'_, '_> {
    /// Whether `names` (a path below the directory, the last a directory
    /// when `is_dir`, the others directories) is hidden, or anything on the
    /// way to it.
    fn hides(&mut self, names: &[&str], is_dir: bool) -> bool {
        let mut at = self.rel.to_owned();
        for (i, name) in names.iter().enumerate() {
            let dir = is_dir || i + 1 < names.len();
            let hidden = if i == 0 {
                self.here.hides(name, dir)
            } else {
                self.hide.in_dir(&at).hides(name, dir)
            };
            if hidden {
                return true;
            }
            if !at.is_empty() {
                at.push('/');
            }
            at.push_str(name);
        }
        false
    }
}

/// [`Veil::hides`] when there are rules that hide.
fn veiled(veil: &mut Option<Veil<'_, '_>>, names: &[&str], is_dir: bool) -> bool {
    veil.as_mut().is_some_and(|v| v.hides(names, is_dir))
}

/// The ignore rules of one directory, and how to reach it from a path
/// relative to the walk's start.
#[derive(Debug, Default)]
pub(super) struct Level {
    ignore: Option<Gitignore>,
    git: Option<Gitignore>,
    exclude: Option<Gitignore>,
    has_git: bool,
    /// For a directory above the start: the start's path below it, with a
    /// trailing `/`.
    up: Vec<u8>,
    /// For a directory at or below the start: the bytes of its own relative
    /// path plus `/` (0 for the start), stripped from an entry's path.
    base: usize,
}

impl Level {
    /// Reads the ignore files of the directory `dir`, leaving out those
    /// `veil` hides (and not seeing a hidden `.git`); `big` counts files
    /// over the size limit.
    pub(super) fn read(
        dir: impl AsFd,
        up: Vec<u8>,
        base: usize,
        big: &AtomicU64,
        mut veil: Option<Veil<'_, '_>>,
    ) -> Self {
        let dir = dir.as_fd();
        let has_git = rustix::fs::statat(dir, c".git", AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| {
            let is_dir = rustix::fs::FileType::from_raw_mode(st.st_mode).is_dir();
            !veiled(&mut veil, &[".git"], is_dir)
        });
        let build = |path: &[&std::ffi::CStr]| -> Option<Gitignore> {
            let bytes = match read_small(dir, path) {
                Small::Missing => return None,
                Small::TooBig => {
                    big.fetch_add(1, Ordering::Relaxed);
                    return None;
                }
                Small::Bytes(b) => b,
            };
            let text = String::from_utf8_lossy(&bytes);
            if !within_rule_bounds(&text) {
                big.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            let mut b = GitignoreBuilder::new(".");
            for line in text.lines() {
                // A bad line is skipped, as `rg` does.
                let _ = b.add_line(None, line);
            }
            b.build().ok().filter(|g| !g.is_empty())
        };
        // Only a regular file is read: a hidden name is matched as one.
        let mut unless_hidden = |names: &[&str], path: &[&std::ffi::CStr]| {
            if veiled(&mut veil, names, false) {
                None
            } else {
                build(path)
            }
        };
        Self {
            ignore: unless_hidden(&[".ignore"], &[c".ignore"]),
            git: unless_hidden(&[".gitignore"], &[c".gitignore"]),
            exclude: if has_git {
                unless_hidden(
                    &[".git", "info", "exclude"],
                    &[c".git", c"info", c"exclude"],
                )
            } else {
                None
            },
            has_git,
            up,
            base,
        }
    }

    fn rel_for<'p>(&self, rel: &'p [u8]) -> std::borrow::Cow<'p, [u8]> {
        if self.up.is_empty() {
            std::borrow::Cow::Borrowed(rel.get(self.base..).unwrap_or_default())
        } else {
            let mut p = self.up.clone();
            p.extend_from_slice(rel);
            std::borrow::Cow::Owned(p)
        }
    }
}

/// The ignore levels of the directories from the root down to (not
/// including) the start, nearest last, so that a search in a subdirectory
/// of a repository honours the repository's ignore files as `rg` does.
/// Each ancestor is opened from `start`'s root handle by the components of
/// the start's canonical path beneath the root (after in-root symlinks, as
/// `rg` takes the canonical path's parents): the resolver's own when it
/// walked the path (always, when some rule hides), else the root handle's
/// `canonicalize`, so that a rule that hides something elsewhere changes
/// nothing here. What the rules hide in an ancestor is absent here too (see
/// [`Veil`]).
pub(super) fn ancestor_levels(start: &crate::fs::scope::Target) -> (Vec<Level>, u64) {
    let root = &start.root.dir;
    let canonical = match start.walked() {
        Some(w) => w.local.clone(),
        None => canonical_beneath(root, &start.resolved().local),
    };
    let segs: Vec<&str> = canonical.split('/').filter(|s| !s.is_empty()).collect();
    // The rules from the root, for the ancestors' own entries.
    let hide = Hide::new(&start.root.rules, start.root.rule_path(""));
    let big = AtomicU64::new(0);
    let mut out = Vec::new();
    for i in 0..segs.len() {
        let (above, below) = segs.split_at(i);
        let above = above.join("/");
        let dir = if above.is_empty() {
            root.try_clone()
        } else {
            root.open_dir(&above)
        };
        let Ok(dir) = dir else { continue };
        let mut up = below.join("/").into_bytes();
        up.push(b'/');
        let mut here = hide.as_ref().map(|h| (h, h.in_dir(&above)));
        let veil = here.as_mut().map(|(hide, here)| Veil {
            hide,
            here,
            rel: &above,
        });
        out.push(Level::read(&dir, up, 0, &big, veil));
    }
    (out, big.into_inner())
}

/// The canonical spelling beneath `root` of `local` (a path beneath it,
/// `/`-joined, "" for the root), or `local` itself when it cannot be had
/// (the start was opened already; a swap since makes this fall back).
fn canonical_beneath(root: &cap_std::fs::Dir, local: &str) -> String {
    let path = if local.is_empty() { "." } else { local };
    let Ok(canonical) = root.canonicalize(path) else {
        return local.to_owned();
    };
    let mut out = Vec::new();
    for c in canonical.components() {
        match c {
            std::path::Component::Normal(name) => match name.to_str() {
                Some(name) => out.push(name),
                None => return local.to_owned(),
            },
            std::path::Component::CurDir => {}
            _ => return local.to_owned(),
        }
    }
    out.join("/")
}

/// The walk's stack of levels: the walked directories (nearest first)
/// and then the ancestors.
pub(super) struct Chain<'a> {
    pub(super) level: Option<&'a Level>,
    pub(super) parent: Option<&'a Chain<'a>>,
    pub(super) ancestors: &'a [Level],
}

impl Chain<'_> {
    fn levels(&self) -> impl Iterator<Item = &Level> {
        let mut walked = Vec::new();
        let mut c = Some(self);
        while let Some(ch) = c {
            if let Some(l) = ch.level {
                walked.push(l);
            }
            c = ch.parent;
        }
        walked.into_iter().chain(self.ancestors.iter().rev())
    }

    /// `Some(true)`: ignored; `Some(false)`: re-included (`!pattern`);
    /// `None`: no rule says. `rg`'s precedence: any `.ignore` rule (nearest
    /// first) wins over any `.gitignore` rule, which wins over
    /// `.git/info/exclude`; git rules apply only inside a repository and not
    /// above its top.
    pub(super) fn decide(&self, rel: &[u8], is_dir: bool) -> Option<bool> {
        let any_git = self.levels().any(|l| l.has_git);
        let (mut m_ignore, mut m_git, mut m_exclude) = (None, None, None);
        let mut saw_git = false;
        let check = |g: &Option<Gitignore>, l: &Level| -> Option<bool> {
            let g = g.as_ref()?;
            let p = l.rel_for(rel);
            let m = g.matched(Path::new(OsStr::from_bytes(&p)), is_dir);
            if m.is_ignore() {
                Some(true)
            } else if m.is_whitelist() {
                Some(false)
            } else {
                None
            }
        };
        for l in self.levels() {
            if m_ignore.is_none() {
                m_ignore = check(&l.ignore, l);
            }
            if any_git && !saw_git {
                if m_git.is_none() {
                    m_git = check(&l.git, l);
                }
                if m_exclude.is_none() {
                    m_exclude = check(&l.exclude, l);
                }
            }
            saw_git |= l.has_git;
        }
        m_ignore.or(m_git).or(m_exclude)
    }
}

/// Whether the rules of an ignore file are within the bounds on what
/// compiling them may cost ([`MAX_IGNORE_RULES`], [`MAX_IGNORE_WILDCARDS`]).
fn within_rule_bounds(text: &str) -> bool {
    let (mut rules, mut wildcards) = (0usize, 0usize);
    for line in text.lines() {
        let rule = line.trim();
        if rule.is_empty() || rule.starts_with('#') {
            continue;
        }
        rules += 1;
        wildcards += rule
            .bytes()
            .filter(|b| matches!(b, b'*' | b'?' | b'['))
            .count();
        if rules > MAX_IGNORE_RULES || wildcards > MAX_IGNORE_WILDCARDS {
            return false;
        }
    }
    true
}

enum Small {
    Missing,
    TooBig,
    Bytes(Vec<u8>),
}

/// Reads the small regular file at `path` (names, each opened `O_NOFOLLOW`
/// from the last) beneath `dir`. Anything missing, unreadable or not a
/// regular file is [`Small::Missing`].
fn read_small(dir: rustix::fd::BorrowedFd<'_>, path: &[&std::ffi::CStr]) -> Small {
    let Some((last, dirs)) = path.split_last() else {
        return Small::Missing;
    };
    let mut held: Option<OwnedFd> = None;
    for name in dirs {
        let from = held.as_ref().map_or(dir, |f| f.as_fd());
        match super::fds::open_at(from, *name, dir_flags()) {
            Ok(fd) => held = Some(fd),
            Err(_) => return Small::Missing,
        }
    }
    let from = held.as_ref().map_or(dir, |f| f.as_fd());
    let Ok(fd) = open_file_at(from, *last) else {
        return Small::Missing;
    };
    let mut buf = Vec::new();
    match fd.take(MAX_IGNORE_FILE_BYTES + 1).read_to_end(&mut buf) {
        Ok(_) if buf.len() as u64 > MAX_IGNORE_FILE_BYTES => Small::TooBig,
        Ok(_) => Small::Bytes(buf),
        Err(_) => Small::Missing,
    }
}
