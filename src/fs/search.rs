//! The walk of a content search: which files beneath a directory are
//! searched, with `rg`'s default filters, and opening each of them.
//!
//! Owns: listing the regular files under a directory fd in path order,
//! never following a symlink (symlinks are skipped, as `rg` does without
//! `--follow`) and never opening anything but a directory or a regular file;
//! reading `.ignore`, `.gitignore` and `.git/info/exclude` through the
//! directory fds (one name at a time, `O_NOFOLLOW`) and feeding their lines
//! to the `ignore` crate's gitignore matcher, with `rg`'s precedence; and
//! re-opening a listed file beneath the start fd, one component at a time,
//! `O_NOFOLLOW|O_NONBLOCK`, refusing anything but a regular file on the
//! handle. A directory swapped for a symlink mid-walk is never entered and a
//! file swapped for one is never read.
//! May touch: directory fds opened beneath a root, by single entry names.

use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rayon::prelude::*;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::fs::walk::{self, Kind};
use crate::limits::{
    MAX_IGNORE_FILE_BYTES, MAX_IGNORE_RULES, MAX_IGNORE_WILDCARDS, MAX_WALK_DEPTH_CEILING,
};
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

/// Bounds, cancellation and progress of one walk.
pub struct Bounds<'a> {
    /// Entries to look at before stopping.
    pub max_entries: usize,
    /// Depth to descend to.
    pub max_depth: usize,
    /// Bytes of listed paths held at once (listed, not yet handed to the
    /// consumer) before stopping.
    pub max_path_bytes: usize,
    /// Stops the walk.
    pub cancel: &'a CancellationToken,
    /// Stops the walk when passed.
    pub deadline: Instant,
    /// Told the number of entries seen so far.
    pub progress: &'a (dyn Fn(u64) + Sync),
    /// Path rules: a hidden entry is not searched or entered (from
    /// [`crate::fs::scope::Target::walk_start`]).
    pub hide: Option<&'a crate::rules::Hide>,
}

/// Why a walk stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The entry cap.
    Entries(usize),
    /// The depth cap (deeper directories were not entered).
    Depth(usize),
    /// The cap on listed paths held at once.
    Paths(usize),
    /// The deadline.
    Deadline,
}

/// The ignore rules of one directory, and how to reach it from a path
/// relative to the walk's start.
#[derive(Debug, Default)]
pub struct Level {
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
    fn read(dir: impl AsFd, up: Vec<u8>, base: usize, big: &AtomicU64) -> Self {
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
/// `segs` are the start's path components beneath the root.
pub fn ancestor_levels(root: &cap_std::fs::Dir, segs: &[String]) -> (Vec<Level>, u64) {
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
struct Chain<'a> {
    level: Option<&'a Level>,
    parent: Option<&'a Chain<'a>>,
    ancestors: &'a [Level],
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
    fn decide(&self, rel: &[u8], is_dir: bool) -> Option<bool> {
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
        match crate::fs::walk::open_at(from, *name, dir_flags()) {
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

/// How each directory is opened: read-only, must be a directory,
/// `O_NOFOLLOW`, so a directory swapped for a symlink is never entered.
fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// Opens the regular file `name` in `dir`: `O_NOFOLLOW` (a symlink is
/// refused), `O_NONBLOCK|O_NOCTTY` (a FIFO or device never blocks the open),
/// then refused unless the handle is a regular file.
fn open_file_at<P: rustix::path::Arg>(
    dir: rustix::fd::BorrowedFd<'_>,
    name: P,
) -> std::io::Result<FdReader> {
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = crate::fs::walk::open_at(dir, name, flags)?;
    let st = rustix::fs::fstat(&fd)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(FdReader(fd, u64::try_from(st.st_size).unwrap_or(0)))
}

/// A regular file's fd as a reader (reads with `read(2)`; no memory map),
/// with its size when it was opened.
#[derive(Debug)]
pub struct FdReader(OwnedFd, u64);

impl FdReader {
    /// The file's size when it was opened.
    pub fn size(&self) -> u64 {
        self.1
    }

    /// Reads the whole file into `buf` (cleared first) when it holds at
    /// most `max` bytes: true if `buf` holds it all, false if it is bigger
    /// (`buf` then holds what was read, to be searched before the rest).
    /// A file of its opened size takes one `read(2)`: a short read of a
    /// regular file is its end.
    pub fn read_small(&mut self, buf: &mut Vec<u8>, max: usize) -> std::io::Result<bool> {
        buf.clear();
        let size = usize::try_from(self.1).unwrap_or(usize::MAX);
        if size > max {
            return Ok(false);
        }
        // One byte more than the size, to see a file that grew.
        buf.resize(size + 1, 0);
        let mut got = 0;
        loop {
            let n = match rustix::io::read(&self.0, buf.get_mut(got..).unwrap_or_default()) {
                Ok(n) => n,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => {
                    buf.truncate(got);
                    return Err(e.into());
                }
            };
            got += n;
            if n == 0 || got < buf.len() {
                buf.truncate(got);
                return Ok(true);
            }
            if buf.len() > max {
                buf.truncate(got);
                return Ok(false);
            }
            let more = (buf.len() * 2).min(max + 1);
            buf.resize(more, 0);
        }
    }
}

impl Read for FdReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        Ok(rustix::io::read(&self.0, buf)?)
    }
}

/// Opens the listed file `rel` beneath `start`: each directory component
/// `O_DIRECTORY|O_NOFOLLOW` from the last, the file as `open_file_at` opens it.
/// Fails (and the file is skipped) if anything was swapped since the walk.
pub fn open_listed(start: &OwnedFd, rel: &[u8]) -> std::io::Result<FdReader> {
    let mut parts = rel.split(|&b| b == b'/').peekable();
    let mut held: Option<OwnedFd> = None;
    while let Some(name) = parts.next() {
        if name.is_empty() || name == b"." || name == b".." {
            return Err(std::io::Error::other("bad listed name"));
        }
        let from = held.as_ref().map_or(start.as_fd(), |f| f.as_fd());
        let name = OsStr::from_bytes(name);
        if parts.peek().is_none() {
            return open_file_at(from, name);
        }
        held = Some(crate::fs::walk::open_at(from, name, dir_flags())?);
    }
    Err(std::io::Error::other("empty listed path"))
}

/// Directory levels [`DirCache`] keeps open: the fds a search thread holds.
const DIR_CACHE_LEVELS: usize = 4;

/// The directories [`open_listed_in`] opened last, to open the next file
/// from (the files come in path order, so neighbours share directories):
/// the first `DIR_CACHE_LEVELS` levels of the last parent path, one fd
/// per level, and the last parent itself when it is deeper.
#[derive(Debug, Default)]
pub struct DirCache {
    levels: Vec<(Vec<u8>, OwnedFd)>,
    deep: Option<(Vec<u8>, OwnedFd)>,
}

fn bad_name(name: &[u8]) -> bool {
    name.is_empty() || name == b"." || name == b".."
}

/// [`open_listed`], opening the file from the cached directories: only the
/// components past what the last file shared with this one are opened
/// (each cached fd was opened the same way, one component at a time with
/// `O_NOFOLLOW`, from the start).
pub fn open_listed_in(
    cache: &mut DirCache,
    start: &OwnedFd,
    rel: &[u8],
) -> std::io::Result<FdReader> {
    let Some(slash) = rel.iter().rposition(|&b| b == b'/') else {
        return open_listed(start, rel);
    };
    let (parent, name) = (
        rel.get(..slash).unwrap_or_default(),
        rel.get(slash + 1..).unwrap_or_default(),
    );
    if bad_name(name) {
        return Err(std::io::Error::other("bad listed name"));
    }
    let name = OsStr::from_bytes(name);
    if let Some((p, dir)) = &cache.deep
        && p.as_slice() == parent
    {
        return open_file_at(dir.as_fd(), name);
    }
    let comps: Vec<&[u8]> = parent.split(|&b| b == b'/').collect();
    if comps.iter().any(|c| bad_name(c)) {
        return Err(std::io::Error::other("bad listed name"));
    }
    let shared = cache
        .levels
        .iter()
        .zip(&comps)
        .take_while(|(l, c)| l.0.as_slice() == **c)
        .count();
    cache.levels.truncate(shared);
    cache.deep = None;
    let mut held: Option<OwnedFd> = None;
    for (i, comp) in comps.iter().enumerate().skip(shared) {
        let from = match (&held, cache.levels.last()) {
            (Some(fd), _) => fd.as_fd(),
            (None, Some(l)) => l.1.as_fd(),
            (None, None) => start.as_fd(),
        };
        let fd = crate::fs::walk::open_at(from, OsStr::from_bytes(comp), dir_flags())?;
        if i < DIR_CACHE_LEVELS && held.is_none() {
            cache.levels.push((comp.to_vec(), fd));
        } else {
            held = Some(fd);
        }
    }
    if let Some(fd) = held {
        let file = open_file_at(fd.as_fd(), name);
        cache.deep = Some((parent.to_vec(), fd));
        return file;
    }
    match cache.levels.last() {
        Some((_, dir)) => open_file_at(dir.as_fd(), name),
        None => open_file_at(start.as_fd(), name),
    }
}

/// A handle of its own on the directory `dir` (for `getdents`; cap-std's
/// handles may be `O_PATH`).
pub fn open_start(dir: &cap_std::fs::Dir, given: &str) -> Result<OwnedFd> {
    rustix::fs::openat(dir, c".", dir_flags(), Mode::empty())
        .map_err(|e| Error::io("scandir", given, &std::io::Error::from(e)))
}

struct Shared<'a> {
    filter: &'a Filter,
    bounds: &'a Bounds<'a>,
    max_depth: usize,
    seen: AtomicUsize,
    path_bytes: AtomicUsize,
    big: AtomicU64,
    entries_cut: AtomicBool,
    depth_cut: AtomicBool,
    paths_cut: AtomicBool,
    late: AtomicBool,
}

impl Shared<'_> {
    fn stopped(&self) -> bool {
        if self.bounds.cancel.is_cancelled()
            || self.entries_cut.load(Ordering::Relaxed)
            || self.paths_cut.load(Ordering::Relaxed)
            || self.late.load(Ordering::Relaxed)
        {
            return true;
        }
        if Instant::now() >= self.bounds.deadline {
            self.late.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }
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
    /// [`MAX_IGNORE_FILE_BYTES`].
    pub big_ignore_files: u64,
    /// Directory entries the walk looked at.
    pub seen: u64,
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
/// honouring `ancestors`' ignore rules too, and hands them to `consumer` in
/// path order as they are listed, from the file at or after `from` (a
/// `/`-joined path below the start; with `true`, the first after it), or
/// from the first. Runs on `pool` (the consumer too).
pub fn walk_files<C: Consume + Send>(
    pool: &rayon::ThreadPool,
    start: OwnedFd,
    ancestors: &[Level],
    filter: &Filter,
    bounds: &Bounds<'_>,
    from: Option<(&[u8], bool)>,
    consumer: &mut C,
) -> Result<WalkEnd> {
    let shared = Shared {
        filter,
        bounds,
        max_depth: bounds.max_depth.min(MAX_WALK_DEPTH_CEILING),
        seen: AtomicUsize::new(0),
        path_bytes: AtomicUsize::new(0),
        big: AtomicU64::new(0),
        entries_cut: AtomicBool::new(false),
        depth_cut: AtomicBool::new(false),
        paths_cut: AtomicBool::new(false),
        late: AtomicBool::new(false),
    };
    let top = Chain {
        level: None,
        parent: None,
        ancestors,
    };
    let mark = walk::descriptor_mark();
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
    if bounds.cancel.is_cancelled() {
        return Err(Error::Cancelled);
    }
    walk::descriptors_ran_out_since(mark)?;
    let stop = if shared.late.load(Ordering::Relaxed) {
        Some(Stop::Deadline)
    } else if shared.entries_cut.load(Ordering::Relaxed) {
        Some(Stop::Entries(bounds.max_entries))
    } else if shared.paths_cut.load(Ordering::Relaxed) {
        Some(Stop::Paths(bounds.max_path_bytes))
    } else if shared.depth_cut.load(Ordering::Relaxed) {
        Some(Stop::Depth(shared.max_depth))
    } else {
        None
    };
    Ok(WalkEnd {
        stop,
        big_ignore_files: shared.big.into_inner(),
        seen: shared.seen.into_inner() as u64,
    })
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
    if shared.stopped() {
        return None;
    }
    let Ok((entries, _)) = walk::read_entries_fd(dir, false, usize::MAX, "") else {
        return None;
    };
    let n = entries.len();
    let before = shared.seen.fetch_add(n, Ordering::Relaxed);
    (shared.bounds.progress)((before + n) as u64);
    let allowed = shared.bounds.max_entries.saturating_sub(before).min(n);
    if allowed < n {
        shared.entries_cut.store(true, Ordering::Relaxed);
    }
    let filter = shared.filter;
    let level = filter.ignore_files.then(|| {
        let base = if prefix.is_empty() {
            0
        } else {
            prefix.len() + 1
        };
        Level::read(dir, Vec::new(), base, &shared.big)
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
        let rel_str = String::from_utf8_lossy(&rel);
        if shared
            .bounds
            .hide
            .is_some_and(|h| h.hides(&rel_str, is_dir))
        {
            continue;
        }
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
            if depth >= shared.max_depth {
                shared.depth_cut.store(true, Ordering::Relaxed);
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
            if bytes > shared.bounds.max_path_bytes {
                shared.paths_cut.store(true, Ordering::Relaxed);
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
        && let Ok(sub) = crate::fs::walk::open_at(dir, name.as_os_str(), dir_flags())
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
        && let Ok(sub) = crate::fs::walk::open_at(&dir, name.as_os_str(), dir_flags())
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
                    if let Ok(sub) = crate::fs::walk::open_at(&dir, name.as_os_str(), dir_flags()) {
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
