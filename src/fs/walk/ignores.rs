//! The ignore rules of a content search, as `rg` reads them.
//!
//! Owns: reading `.ignore`, `.gitignore` and `.git/info/exclude` through
//! directory fds (one name at a time, `O_NOFOLLOW`, bounded in size and in
//! rules), feeding their lines to the `ignore` crate's gitignore matcher,
//! and deciding an entry by `rg`'s precedence over the walked directories
//! and the start's ancestors.
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
    /// Reads the ignore files of the directory `dir`; `big` counts files
    /// over the size limit.
    pub(super) fn read(dir: impl AsFd, up: Vec<u8>, base: usize, big: &AtomicU64) -> Self {
        let dir = dir.as_fd();
        let has_git = rustix::fs::statat(dir, c".git", AtFlags::SYMLINK_NOFOLLOW).is_ok();
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
        Self {
            ignore: build(&[c".ignore"]),
            git: build(&[c".gitignore"]),
            exclude: if has_git {
                build(&[c".git", c"info", c"exclude"])
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
/// Each ancestor is opened from `start`'s root handle by the start's
/// components beneath the root.
pub(super) fn ancestor_levels(start: &crate::fs::scope::Target) -> (Vec<Level>, u64) {
    let (root, segs) = (&start.root.dir, &start.segs);
    let big = AtomicU64::new(0);
    let mut out = Vec::new();
    for i in 0..segs.len() {
        let (above, below) = segs.split_at(i);
        let dir = if above.is_empty() {
            root.try_clone()
        } else {
            root.open_dir(above.join("/"))
        };
        let Ok(dir) = dir else { continue };
        let mut up = below.join("/").into_bytes();
        up.push(b'/');
        out.push(Level::read(&dir, up, 0, &big));
    }
    (out, big.into_inner())
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
