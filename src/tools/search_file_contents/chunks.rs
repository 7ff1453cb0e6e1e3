//! The chunked parallel search of a content search: the walk's files taken
//! a chunk at a time, each chunk searched in parallel on the walk pool (one
//! searcher per thread, kept from chunk to chunk) and merged into the reply
//! in path order, so the result and where a cut falls are the same on every
//! run; the chunk grows while it fits and shrinks after one that held too
//! much. Also how one opened file is searched (whole from a buffer when
//! small, else as a stream that stops with the search).
//! May touch: files listed by the walk, opened through [`crate::fs::search`].

use std::os::fd::OwnedFd;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;
use std::time::Instant;

use grep_regex::RegexMatcher;
use grep_searcher::Searcher;

use super::Params;
use super::sink::Collect;
use crate::fs::search;
use crate::text::matches::{Hits, Reply};

/// Files searched in parallel at a time, at first; results are merged in
/// path order after each chunk, so at most one chunk is searched past a cut.
/// The chunk doubles after each chunk merged whole, up to
/// [`MAX_CHUNK_FILES`], so that a long search waits less often for its
/// slowest file; after a chunk that held too much (see
/// [`CHUNK_HELD_CHARS`]) it is as big as what fitted.
pub(super) const CHUNK_FILES: usize = 64;

/// The most files searched in parallel at a time.
const MAX_CHUNK_FILES: usize = 1024;

/// Characters of matching lines the files of one chunk may hold at once
/// (beyond its first file, whose own bounds hold): a file that would go past
/// it stops, and is searched again at the head of the next chunk, so memory
/// stays bounded whatever the chunk size.
pub(super) const CHUNK_HELD_CHARS: usize = 8 << 20;

/// Files up to this size are read whole, with one `read(2)`, into a buffer
/// each walk thread keeps, and searched as a slice; bigger ones as a stream.
const SLICE_FILE_BYTES: usize = 1 << 20;
/// When a search stops: the client cancelled, or the deadline passed.
pub(super) struct Halt<'a> {
    pub(super) cancel: &'a tokio_util::sync::CancellationToken,
    pub(super) deadline: Instant,
    /// The reply's character budget, which also bounds what one file's
    /// matches may collect.
    pub(super) max_chars: usize,
    /// See [`chunk_held_chars`].
    pub(super) held_cap: usize,
}

impl Halt<'_> {
    fn now(&self) -> bool {
        self.cancel.is_cancelled() || Instant::now() >= self.deadline
    }
}

/// A reader that fails once the search must stop, so a long file without
/// matches is not read to its end after a cancel or past the deadline.
struct Stoppable<'a, R> {
    inner: R,
    stop: &'a Halt<'a>,
}

impl<R: std::io::Read> std::io::Read for Stoppable<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.stop.now() {
            return Err(std::io::Error::other("search stopped"));
        }
        self.inner.read(buf)
    }
}

/// What to take from one file.
#[derive(Debug, Clone, Copy)]
pub(super) struct Want {
    /// Matches to keep.
    pub(super) n: u64,
    /// Matches to leave out first (given on an earlier page).
    pub(super) skip: u64,
}

/// Searches one opened file; `held` counts the characters its chunk holds
/// (`None`: no chunk, nothing else is held).
pub(super) fn search_one<R: std::io::Read>(
    searcher: &mut Searcher,
    reader: std::io::Result<R>,
    matcher: &RegexMatcher,
    p: &Params,
    want: Want,
    stop: &Halt<'_>,
    held: Option<&AtomicUsize>,
) -> Hits {
    let Ok(inner) = reader else {
        return Hits::default();
    };
    let reader = Stoppable { inner, stop };
    search_with(p, want, stop, held, |sink| {
        searcher.search_reader(matcher, reader, sink)
    })
}

/// Searches one listed file: whole from `buf` (kept per thread) when it
/// is at most [`SLICE_FILE_BYTES`], which takes one read, else as a stream.
#[allow(clippy::too_many_arguments)]
fn search_listed(
    searcher: &mut Searcher,
    file: std::io::Result<search::FdReader>,
    buf: &mut Vec<u8>,
    matcher: &RegexMatcher,
    p: &Params,
    want: Want,
    stop: &Halt<'_>,
    held: Option<&AtomicUsize>,
) -> Hits {
    let Ok(mut file) = file else {
        return Hits::default();
    };
    match file.read_small(buf, SLICE_FILE_BYTES) {
        Ok(true) => search_with(p, want, stop, held, |sink| {
            searcher.search_slice(matcher, buf, sink)
        }),
        Ok(false) => {
            let reader = std::io::Read::chain(std::io::Cursor::new(buf.as_slice()), file);
            search_one(searcher, Ok(reader), matcher, p, want, stop, held)
        }
        Err(_) => Hits {
            searched: true,
            failed: true,
            ..Hits::default()
        },
    }
}

/// Runs `search` with a fresh sink and returns what it collected.
fn search_with(
    p: &Params,
    want: Want,
    stop: &Halt<'_>,
    held: Option<&AtomicUsize>,
    search: impl FnOnce(&mut Collect<'_>) -> std::io::Result<()>,
) -> Hits {
    let alone = AtomicUsize::new(0);
    let mut sink = Collect {
        mode: p.output_mode,
        want: want.n,
        skip: want.skip,
        skipped: 0,
        dropping: false,
        before: Vec::new(),
        taken: 0,
        chars: 0,
        max_chars: stop.max_chars,
        cur: Vec::new(),
        hits: Hits {
            searched: true,
            ..Hits::default()
        },
        cancel: stop.cancel,
        held: held.unwrap_or(&alone),
        exempt: held.is_none(),
        held_cap: stop.held_cap,
    };
    let res = search(&mut sink);
    sink.close();
    let mut hits = sink.hits;
    // A file cut by the stop is not "failed": the stop is reported itself.
    if res.is_err() && !stop.now() {
        hits.failed = true;
    }
    hits
}
/// The search of a directory: takes the walk's files a chunk at a time,
/// searches each chunk in parallel (one searcher per walk thread, kept from
/// chunk to chunk) and merges it into the reply in path order.
pub(super) struct Searching<'a, 'r> {
    pub(super) pool: &'a rayon::ThreadPool,
    /// Per walk thread: its searcher (and buffers) and its last directory.
    pub(super) states: &'a [Mutex<(Searcher, search::DirCache, Vec<u8>)>],
    pub(super) start: &'a OwnedFd,
    pub(super) matcher: &'a RegexMatcher,
    pub(super) p: &'a Params,
    pub(super) halt: &'a Halt<'a>,
    pub(super) progress: &'a (dyn Fn(u64) + Sync),
    pub(super) reply: &'r mut Reply,
    pub(super) chunk: usize,
    pub(super) searched: u64,
    pub(super) binary: u64,
    pub(super) failed: u64,
    /// The deadline passed between chunks.
    pub(super) late: bool,
    /// The file a cursor resumes in, and its matches already given.
    pub(super) resume: Option<(&'a [u8], u64)>,
    /// Where the reply was cut: the file, and its matches it gave in all.
    pub(super) cut: Option<(Vec<u8>, u64)>,
}

impl Searching<'_, '_> {
    /// Matches of the file at `rel` given on earlier pages.
    fn skip_of(&self, rel: &[u8]) -> u64 {
        self.resume.filter(|(r, _)| *r == rel).map_or(0, |(_, n)| n)
    }
}

impl search::Consume for Searching<'_, '_> {
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
            if self.halt.cancel.is_cancelled() {
                return false;
            }
            if Instant::now() >= self.halt.deadline {
                self.late = true;
                return false;
            }
            let want = self.reply.wanted();
            let held = AtomicUsize::new(0);
            let (states, start, matcher, p, halt) =
                (self.states, self.start, self.matcher, self.p, self.halt);
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
                        let file = search::open_listed_in(dirs, start, rel);
                        let want = Want {
                            n: want,
                            skip: this.skip_of(rel),
                        };
                        search_listed(s, file, buf, matcher, p, want, halt, held)
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
            (self.progress)(self.searched);
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
pub(super) fn chunk_held_chars() -> usize {
    crate::limits::debug_bound("TULS_DEBUG_CHUNK_HELD_CHARS", |n| n, CHUNK_HELD_CHARS)
}
