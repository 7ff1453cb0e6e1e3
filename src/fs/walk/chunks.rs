//! The content search of a tree: the file walk's files taken a chunk at a
//! time, each chunk searched in parallel on the walk threads (one searcher
//! per thread, kept from chunk to chunk) and merged into the reply in path
//! order, so the result and where a cut falls are the same on every run;
//! the chunk grows while it fits and shrinks after one that held too much.
//!
//! Owns: the two entries of a content search, [`search_tree`] and
//! [`search_file`], and the chunk scheduler between the file walk
//! ([`super::files`]) and the search of one file (`grep`).
//! May touch: the files listed by the walk, opened through `open`.

use std::os::fd::OwnedFd;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;

use grep_searcher::Searcher;

use super::files::{Consume, Filter, walk_files};
pub use super::grep::Grep;
use super::grep::{Halt, Want, search_listed, search_one};
use super::ignores::ancestor_levels;
use super::open::{DirCache, open_listed_in};
use super::{Bounds, Stop, Tally, fds};
use crate::error::{Error, Result};
use crate::fs::cursor::{Cursor, FLAG_AFTER};
use crate::fs::scope::Target;
use crate::text::matches::{Hits, Reply};

/// Files searched in parallel at a time, at first; results are merged in
/// path order after each chunk, so at most one chunk is searched past a cut.
/// The chunk doubles after each chunk merged whole, up to
/// [`MAX_CHUNK_FILES`], so that a long search waits less often for its
/// slowest file; after a chunk that held too much (see
/// [`CHUNK_HELD_CHARS`]) it is as big as what fitted.
const CHUNK_FILES: usize = 64;

/// The most files searched in parallel at a time.
const MAX_CHUNK_FILES: usize = 1024;

/// Characters of matching lines the files of one chunk may hold at once
/// (beyond its first file, whose own bounds hold): a file that would go past
/// it stops, and is searched again at the head of the next chunk, so memory
/// stays bounded whatever the chunk size.
pub const CHUNK_HELD_CHARS: usize = 8 << 20;

/// How a content search ended; its matches went to the reply.
#[derive(Debug, Default)]
pub struct Searched {
    /// Why it stopped early, if it did (not counting a full reply).
    pub stop: Option<Stop>,
    /// Where the reply was cut: the file, and its matches given in all.
    pub cut: Option<(Vec<u8>, u64)>,
    /// Files searched.
    pub searched: u64,
    /// Binary files skipped.
    pub binary: u64,
    /// Files whose search failed.
    pub failed: u64,
    /// Ignore files not used because they were over
    /// [`crate::limits::MAX_IGNORE_FILE_BYTES`].
    pub big_ignore_files: u64,
}

/// The position a one-file search's cursor names (only its count of matches
/// given matters).
const ONE_FILE: &[u8] = b"0";

/// Searches one file, already opened (as the read tools open it: regular
/// files only, never blocking), into `reply` under the client's name
/// `path`, from the cursor `from`.
pub fn search_file<R: std::io::Read>(
    file: R,
    path: &str,
    grep: &Grep<'_>,
    bounds: &Bounds,
    from: Option<&Cursor>,
    reply: &mut Reply,
) -> Searched {
    let halt = Halt {
        bounds,
        max_chars: reply.room(),
        held_cap: chunk_held_chars(),
    };
    let mut s = grep.searcher.build();
    let skip = from.map_or(0, |c| c.skip);
    let want = Want {
        n: reply.wanted(),
        skip,
    };
    let hits = search_one(&mut s, Ok(file), grep, want, &halt, None);
    let mut out = Searched {
        searched: u64::from(hits.searched),
        ..Searched::default()
    };
    if hits.binary {
        out.binary += 1;
    } else {
        out.failed += u64::from(hits.failed);
        reply.add_file(path, hits);
        // The cursor of a one-file search names no entry of its own.
        out.cut = reply.cut_at().map(|n| (ONE_FILE.to_vec(), skip + n));
    }
    out
}

/// Searches the files under the directory `t` names, with `filter` and its
/// ignore files (the start's ancestors' too), into `reply` (whose paths
/// begin with its prefix), from the cursor `from`.
pub fn search_tree(
    t: &Target,
    filter: &Filter,
    grep: &Grep<'_>,
    bounds: &Bounds,
    from: Option<&Cursor>,
    reply: &mut Reply,
) -> Result<Searched> {
    let walk_start = t.walk_start("scandir")?;
    let start = fds::open_start(&walk_start.dir, &t.given)?;
    let (ancestors, big) = if filter.ignore_files {
        ancestor_levels(t)
    } else {
        (Vec::new(), 0)
    };
    let Some(pool) = bounds.pool.get() else {
        return Err(Error::Internal(
            "Cannot search: the walk threads could not be started".to_owned(),
        ));
    };
    let tally = Tally::new(bounds);
    let halt = Halt {
        bounds,
        max_chars: reply.room(),
        held_cap: chunk_held_chars(),
    };
    let states: Vec<Mutex<(Searcher, DirCache, Vec<u8>)>> = (0..pool.current_num_threads())
        .map(|_| Mutex::new((grep.searcher.build(), DirCache::default(), Vec::new())))
        .collect();
    let mut run = Searching {
        pool,
        states: &states,
        start: &start,
        grep,
        halt: &halt,
        tally: &tally,
        reply,
        chunk: CHUNK_FILES,
        searched: 0,
        binary: 0,
        failed: 0,
        late: false,
        resume: from.map(|c| (c.rel.as_slice(), c.skip)),
        cut: None,
    };
    let end = walk_files(
        pool,
        start
            .try_clone()
            .map_err(|e| Error::io("scandir", &t.given, &e))?,
        walk_start.hide.as_ref(),
        &ancestors,
        filter,
        &tally,
        from.map(|c| (c.rel.as_slice(), c.flags & FLAG_AFTER != 0)),
        &mut run,
    );
    tally.end()?;
    let out = Searched {
        stop: if run.late {
            Some(Stop::Deadline)
        } else {
            end.stop
        },
        cut: run.cut.take(),
        searched: run.searched,
        binary: run.binary,
        failed: run.failed,
        big_ignore_files: big + end.big_ignore_files,
    };
    tally.report();
    Ok(out)
}

/// The search of a directory: takes the walk's files a chunk at a time,
/// searches each chunk in parallel (one searcher per walk thread, kept from
/// chunk to chunk) and merges it into the reply in path order.
struct Searching<'a, 'r> {
    pool: &'a rayon::ThreadPool,
    /// Per walk thread: its searcher (and buffers) and its last directory.
    states: &'a [Mutex<(Searcher, DirCache, Vec<u8>)>],
    start: &'a OwnedFd,
    grep: &'a Grep<'a>,
    halt: &'a Halt<'a>,
    /// Told the files searched, for progress.
    tally: &'a Tally<'a>,
    reply: &'r mut Reply,
    chunk: usize,
    searched: u64,
    binary: u64,
    failed: u64,
    /// The deadline passed between chunks.
    late: bool,
    /// The file a cursor resumes in, and its matches already given.
    resume: Option<(&'a [u8], u64)>,
    /// Where the reply was cut: the file, and its matches it gave in all.
    cut: Option<(Vec<u8>, u64)>,
}

impl Searching<'_, '_> {
    /// Matches of the file at `rel` given on earlier pages.
    fn skip_of(&self, rel: &[u8]) -> u64 {
        self.resume.filter(|(r, _)| *r == rel).map_or(0, |(_, n)| n)
    }
}

impl Consume for Searching<'_, '_> {
    fn chunk(&self) -> usize {
        self.chunk
    }

    fn take(&mut self, files: Vec<Vec<u8>>) -> bool {
        use rayon::prelude::*;
        let mut from = 0;
        while from < files.len() {
            let end = files.len().min(from + self.chunk);
            let Some(part) = files.get(from..end) else {
                break;
            };
            if self.halt.bounds.cancel.is_cancelled() {
                return false;
            }
            if self.halt.bounds.late() {
                self.late = true;
                return false;
            }
            let want = self.reply.wanted();
            let held = AtomicUsize::new(0);
            let (states, start, grep, halt) = (self.states, self.start, self.grep, self.halt);
            let this = &*self;
            let results: Vec<Hits> = self.pool.install(|| {
                part.par_iter()
                    .enumerate()
                    .map(|(k, rel)| {
                        let i = rayon::current_thread_index().unwrap_or(0);
                        let Some(state) = states.get(i % states.len().max(1)) else {
                            return Hits::default();
                        };
                        let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
                        let (s, dirs, buf) = &mut *st;
                        let held = (k > 0).then_some(&held);
                        let file = open_listed_in(dirs, start, rel);
                        let want = Want {
                            n: want,
                            skip: this.skip_of(rel),
                        };
                        search_listed(s, file, buf, grep, want, halt, held)
                    })
                    .collect()
            });
            let mut merged = 0;
            for (rel, hits) in part.iter().zip(results) {
                if hits.incomplete {
                    break;
                }
                merged += 1;
                self.searched += u64::from(hits.searched);
                if hits.binary {
                    self.binary += 1;
                    continue;
                }
                self.failed += u64::from(hits.failed);
                if !self.reply.done() {
                    let path = format!("{}{}", self.reply.prefix(), String::from_utf8_lossy(rel));
                    self.reply.add_file(&path, hits);
                    if let Some(n) = self.reply.cut_at() {
                        self.cut = Some((rel.clone(), self.skip_of(rel) + n));
                    }
                }
            }
            from += merged.max(1);
            self.tally.done(self.searched);
            if self.reply.done() {
                return false;
            }
            // A chunk that held too much: the next one is as big as what
            // fitted, then grows again.
            self.chunk = if merged < part.len() {
                merged.max(1)
            } else {
                (self.chunk * 2).min(MAX_CHUNK_FILES)
            };
        }
        true
    }
}

/// [`CHUNK_HELD_CHARS`]. Debug builds only: `TULS_DEBUG_CHUNK_HELD_CHARS`
/// lowers it, so the tests can reach it with small files.
fn chunk_held_chars() -> usize {
    crate::limits::debug_bound("TULS_DEBUG_CHUNK_HELD_CHARS", |n| n, CHUNK_HELD_CHARS)
}
