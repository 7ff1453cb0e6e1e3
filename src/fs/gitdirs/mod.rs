//! Finding the git repositories in a root and what git runs or obeys there
//! ([`crate::rules::git`] keeps the result as read-only rules).
//!
//! Owns: the startup search for `.git` entries (breadth first, bounded by
//! [`MAX_GIT_SCAN_DIRS`], [`MAX_GIT_SCAN_ENTRIES`], [`MAX_GIT_SCAN_DEPTH`]
//! and [`MAX_GIT_REPOS`], a log line past each), reading each one
//! (`repo`), and the refresh rule: every file read (each `.git`, `commondir`,
//! config and included config), each hooks directory and each component of
//! a hooks path or include is stamped (device, inode, size, mtime, ctime;
//! for a link, its target's too) when read; before a path is resolved for a
//! call that may write, the stamps are taken again, and if one differs the
//! whole root is searched and read again. A `.git` at the top of the root
//! is always stamped, so `git init` there is seen; a repository made deeper
//! while tuls runs is found at the next start.
//!
//! # Security
//!
//! Everything is read through the root's [`Dir`] (cap-std: a link is
//! followed only within the root, never out of it); an absolute path git
//! names (`gitdir: /abs/...`, an absolute hook link, `~/`) counts only when
//! it lies beneath one of the root's own spellings; anything else is
//! outside, where tuls cannot write, and is not protected. Files are opened
//! `O_NONBLOCK` and read only when regular, at most
//! [`crate::limits::MAX_GIT_CONFIG_BYTES`].
//! May touch: the root `Dir` handles, for reading.

mod repo;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use cap_fs_ext::DirExt;
use cap_std::fs::{Dir, MetadataExt};

use crate::limits::{MAX_GIT_REPOS, MAX_GIT_SCAN_DEPTH, MAX_GIT_SCAN_DIRS, MAX_GIT_SCAN_ENTRIES};
use crate::rules::git::{GitPaths, Watch};

/// A root as git may name it: its handle, the absolute spellings of its
/// path, and `$HOME` (for `~/` in a config).
#[derive(Debug, Clone)]
pub struct Place {
    /// The root's handle.
    pub dir: Arc<Dir>,
    /// The root's absolute path as given and as resolved; the first is
    /// shown in sources.
    pub spellings: Vec<String>,
    /// `$HOME` at startup.
    pub home: Option<String>,
    /// Whether names are compared without ASCII case.
    pub fold: bool,
    /// The root's flag rules (the built-in set, `--read-only-path`,
    /// `--allow-path`; no git rules): a symlink found at a path they make
    /// read-only protects its in-root target under the target's own name,
    /// since the program that obeys the link's name reads the target.
    pub obeyed: Option<Arc<crate::rules::Rules>>,
}

impl Place {
    /// `abs` (an absolute path) relative to the root, when it lies beneath
    /// one of its spellings (by whole components); `None` otherwise.
    fn inside(&self, abs: &str) -> Option<String> {
        let parts: Vec<&str> = abs.split('/').filter(|s| !s.is_empty()).collect();
        self.spellings.iter().find_map(|s| {
            let base: Vec<&str> = s.split('/').filter(|c| !c.is_empty()).collect();
            let same = |a: &&str, b: &&str| {
                if self.fold {
                    a.eq_ignore_ascii_case(b)
                } else {
                    a == b
                }
            };
            (parts.len() >= base.len() && parts.iter().zip(&base).all(|(a, b)| same(a, b)))
                .then(|| parts[base.len()..].join("/"))
        })
    }

    /// The absolute spelling of `rel`, for sources and the log.
    fn show(&self, rel: &str) -> String {
        let base = self.spellings.first().map_or("", String::as_str);
        match (base, rel.is_empty()) {
            (b, true) => b.to_owned(),
            ("/", false) => format!("/{rel}"),
            (b, false) => format!("{b}/{rel}"),
        }
    }
}

/// What a file looked like when read: device, inode, size, mtime and ctime
/// (seconds and nanoseconds), of the name and, for a link, of its target.
type Stamp = Option<([i64; 7], Option<[i64; 7]>)>;

/// What is compared of a path: all of [`Stamp`], or (for a directory on
/// the way to a file git reads, whose times change with every entry made
/// in it) only which object it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Look {
    Whole,
    Identity,
}

/// Stamps `rel` beneath `dir` (`None`: it is not there).
fn stamp(dir: &Dir, rel: &str, look: Look) -> Stamp {
    let of = |md: cap_std::fs::Metadata| match look {
        Look::Whole => [
            md.dev() as i64,
            md.ino() as i64,
            md.size() as i64,
            md.mtime(),
            md.mtime_nsec(),
            md.ctime(),
            md.ctime_nsec(),
        ],
        Look::Identity => [md.dev() as i64, md.ino() as i64, 0, 0, 0, 0, 0],
    };
    let md = dir.symlink_metadata(rel).ok()?;
    let link = md.file_type().is_symlink();
    Some((
        of(md),
        link.then(|| dir.metadata(rel).ok().map(of)).flatten(),
    ))
}

/// A path read, how it is compared, and its stamp from just before.
type Watched = (String, Look, Stamp);

/// The git rules' [`Watch`] for one root.
#[derive(Debug)]
pub struct Watcher {
    place: Place,
    /// Each path read, with its stamp from just before it was read.
    stamps: Mutex<Vec<Watched>>,
}

impl Watcher {
    /// Searches `place` and reads its repositories: the watch and the
    /// paths found.
    pub fn new(place: Place) -> (Self, GitPaths) {
        let (paths, stamps) = discover(&place);
        let w = Watcher {
            place,
            stamps: Mutex::new(stamps),
        };
        (w, paths)
    }
}

impl Watch for Watcher {
    fn refresh(&self) -> Option<GitPaths> {
        let mut stamps = crate::sync::lock(&self.stamps);
        if stamps
            .iter()
            .all(|(p, look, s)| stamp(&self.place.dir, p, *look) == *s)
        {
            return None;
        }
        let (paths, fresh) = discover(&self.place);
        *stamps = fresh;
        Some(paths)
    }
}

/// Searches the root breadth first for `.git` entries, within the limits,
/// and reads each repository found.
fn discover(place: &Place) -> (GitPaths, Vec<Watched>) {
    let mut r = repo::Reader::new(place);
    // `git init` at the top is seen at the next write.
    r.watch_as(".git", Look::Identity);
    // The tests reach the bounds through these (debug builds only).
    let max_dirs = crate::limits::debug_bound("TULS_DEBUG_GIT_SCAN_DIRS", |n| n, MAX_GIT_SCAN_DIRS);
    let max_repos = crate::limits::debug_bound("TULS_DEBUG_GIT_REPOS", |n| n, MAX_GIT_REPOS);
    let mut queue = VecDeque::from([(String::new(), 0usize)]);
    let (mut dirs, mut entries, mut repos) = (0usize, 0usize, 0usize);
    let name_is_git = |n: &str| {
        if place.fold {
            n.eq_ignore_ascii_case(".git")
        } else {
            n == ".git"
        }
    };
    while let Some((rel, depth)) = queue.pop_front() {
        if dirs == max_dirs {
            tracing::warn!(
                "git: searched {max_dirs} directories of '{}' for repositories and \
                 stopped (MAX_GIT_SCAN_DIRS); a repository beyond them is not read: its .git \
                 stays read-only, but a hooks path, included config or git directory it names \
                 elsewhere in the root is not protected",
                place.show("")
            );
            break;
        }
        dirs += 1;
        // One open beneath the root (no link followed) and the walk
        // engine's one-buffer listing, sorted by name.
        let Some(fd) = open_listable(&place.dir, &rel) else {
            continue;
        };
        let left = MAX_GIT_SCAN_ENTRIES.saturating_sub(entries);
        let Ok((list, cut)) = crate::fs::walk::read_entries_fd(&fd, false, left, "") else {
            continue;
        };
        entries += list.len();
        let mut found = false;
        for e in list {
            if e.raw.is_some() {
                continue;
            }
            if name_is_git(&e.name) {
                found = true;
            } else if e.kind == crate::fs::walk::Kind::Symlink {
                let link = join(&rel, &e.name);
                if place
                    .obeyed
                    .as_ref()
                    .is_some_and(|o| o.effect(&link, None) != crate::rules::Effect::None)
                {
                    r.link_target(&link);
                }
            } else if depth < MAX_GIT_SCAN_DEPTH && e.kind == crate::fs::walk::Kind::Dir {
                queue.push_back((join(&rel, &e.name), depth + 1));
            }
        }
        if cut {
            tracing::warn!(
                "git: looked at {MAX_GIT_SCAN_ENTRIES} entries of '{}' for repositories and \
                 stopped (MAX_GIT_SCAN_ENTRIES); repositories beyond them are not read",
                place.show("")
            );
            queue.clear();
        }
        if found {
            repos += 1;
            if repos > max_repos {
                tracing::warn!(
                    "git: more than {max_repos} repositories in '{}' (MAX_GIT_REPOS); the \
                     others are not read",
                    place.show("")
                );
                break;
            }
            r.repo(&rel);
        }
    }
    r.finish()
}

/// The directory `rel` beneath `dir`, opened for listing (its own file
/// offset), no link followed on the way: one `openat2` beneath the root
/// where the kernel has it, else the parent through cap-std and the leaf
/// `O_NOFOLLOW` from it. `O_NOATIME` where the kernel allows it (the
/// directory is ours): the search leaves the directories' access times as
/// they were.
fn open_listable(dir: &Dir, rel: &str) -> Option<rustix::fd::OwnedFd> {
    use rustix::fs::OFlags;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    match open_beneath(dir, rel, flags | OFlags::NOATIME) {
        Err(rustix::io::Errno::PERM) => {}
        r => return r.ok(),
    }
    open_beneath(dir, rel, flags).ok()
}

/// [`open_listable`] with `flags`.
fn open_beneath(
    dir: &Dir,
    rel: &str,
    flags: rustix::fs::OFlags,
) -> rustix::io::Result<rustix::fd::OwnedFd> {
    use rustix::fs::Mode;
    if rel.is_empty() {
        return rustix::fs::openat(dir, ".", flags, Mode::empty());
    }
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    {
        use rustix::fs::ResolveFlags;
        let how = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        // Anything but a plain answer (ENOSYS, a seccomp filter's EPERM,
        // EXDEV, ELOOP) takes the portable way, which says it again.
        let r = rustix::fs::openat2(dir, rel, flags, Mode::empty(), how);
        if let Ok(_) | Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) = r {
            return r;
        }
    }
    match rel.rsplit_once('/') {
        Some((parent, leaf)) => {
            let parent = dir.open_dir_nofollow(parent).map_err(|e| {
                e.raw_os_error()
                    .map_or(rustix::io::Errno::IO, rustix::io::Errno::from_raw_os_error)
            })?;
            rustix::fs::openat(&parent, leaf, flags, Mode::empty())
        }
        None => rustix::fs::openat(dir, rel, flags, Mode::empty()),
    }
}

/// `rel` and `name` joined by `/` ("" is the root).
fn join(rel: &str, name: &str) -> String {
    if rel.is_empty() {
        name.to_owned()
    } else {
        format!("{rel}/{name}")
    }
}

/// Installs the git rules of `root` (an operator's root) into its rules,
/// and returns them as `--print-config` shows them. `allow` are the
/// operator's `--allow-path` patterns.
pub fn install(
    root: &crate::fs::roots::Root,
    allow: &[&str],
    obeyed: Option<Arc<crate::rules::Rules>>,
) -> Vec<serde_json::Value> {
    let place = Place {
        obeyed,
        dir: root.dir.clone(),
        spellings: root.spellings().map(str::to_owned).collect(),
        home: std::env::var("HOME").ok().filter(|h| h.starts_with('/')),
        fold: root.rules.folds_case(),
    };
    let (watch, paths) = Watcher::new(place);
    let shown = paths
        .rules
        .iter()
        .map(|r| {
            serde_json::json!({"id": "git", "source": r.source, "pattern": format!("/{}", r.path),
                "match": if r.whole { "prefix" } else { "exact" }, "effect": "read-only",
                "root": root.display})
        })
        .chain(paths.links.iter().map(|(target, link)| {
            serde_json::json!({"id": "link", "source": format!("link: {}", place_show(&root.display, link)),
                "pattern": format!("/{target}"), "match": "as-link", "effect": "as the link's path",
                "root": root.display})
        }))
        .collect();
    let fold = root.rules.folds_case();
    root.rules
        .git()
        .install(paths, Box::new(watch), allow, fold);
    shown
}

/// `rel` beneath the root shown as `display`.
fn place_show(display: &str, rel: &str) -> String {
    match display {
        "/" => format!("/{rel}"),
        d => format!("{d}/{rel}"),
    }
}
