//! The search of one file of a content search: opened by the walk (or by
//! the caller, for a search of one file), read whole into a reused buffer
//! when small (one `read(2)`) and searched as a slice, else searched as a
//! stream that stops with the search; what it keeps is the sink's
//! ([`crate::text::matches::Collect`]).
//! May touch: the file it is given (read only).

use std::sync::atomic::AtomicUsize;

use grep_regex::RegexMatcher;
use grep_searcher::{Searcher, SearcherBuilder};

use super::Bounds;
use super::open::FdReader;
use crate::text::matches::{Collect, Hits, Keep, OutputMode};

/// Files up to this size are read whole, with one `read(2)`, into a buffer
/// each walk thread keeps, and searched as a slice; bigger ones as a stream.
const SLICE_FILE_BYTES: usize = 1 << 20;

/// What a content search looks for, and how.
pub struct Grep<'a> {
    /// The compiled pattern.
    pub matcher: &'a RegexMatcher,
    /// How files are searched (context, binary detection, line buffer);
    /// each walk thread builds a searcher of its own.
    pub searcher: &'a SearcherBuilder,
    /// What the reply lists.
    pub mode: OutputMode,
}

/// When a search stops (the bounds: the client cancelled, or the deadline
/// passed), and what one file may keep.
pub(super) struct Halt<'a> {
    pub(super) bounds: &'a Bounds,
    /// The reply's character budget, which also bounds what one file's
    /// matches may collect.
    pub(super) max_chars: usize,
    /// What the files of one chunk may hold at once, in characters.
    pub(super) held_cap: usize,
}

/// A reader that fails once the search must stop, so a long file without
/// matches is not read to its end after a cancel or past the deadline.
struct Stoppable<'a, R> {
    inner: R,
    stop: &'a Bounds,
}

impl<R: std::io::Read> std::io::Read for Stoppable<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.stop.halted() {
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

/// Searches one opened file as a stream; `held` counts the characters its
/// chunk holds (`None`: no chunk, nothing else is held).
pub(super) fn search_one<R: std::io::Read>(
    searcher: &mut Searcher,
    reader: std::io::Result<R>,
    grep: &Grep<'_>,
    want: Want,
    stop: &Halt<'_>,
    held: Option<&AtomicUsize>,
) -> Hits {
    let Ok(inner) = reader else {
        return Hits::default();
    };
    let reader = Stoppable {
        inner,
        stop: stop.bounds,
    };
    search_with(grep.mode, want, stop, held, |sink| {
        searcher.search_reader(grep.matcher, reader, sink)
    })
}

/// Searches one listed file: whole from `buf` (kept per thread) when it
/// is at most [`SLICE_FILE_BYTES`], which takes one read, else as a stream.
pub(super) fn search_listed(
    searcher: &mut Searcher,
    file: std::io::Result<FdReader>,
    buf: &mut Vec<u8>,
    grep: &Grep<'_>,
    want: Want,
    stop: &Halt<'_>,
    held: Option<&AtomicUsize>,
) -> Hits {
    let Ok(mut file) = file else {
        return Hits::default();
    };
    match file.read_small(buf, SLICE_FILE_BYTES) {
        Ok(true) => search_with(grep.mode, want, stop, held, |sink| {
            searcher.search_slice(grep.matcher, buf, sink)
        }),
        Ok(false) => {
            let reader = std::io::Read::chain(std::io::Cursor::new(buf.as_slice()), file);
            search_one(searcher, Ok(reader), grep, want, stop, held)
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
    mode: OutputMode,
    want: Want,
    stop: &Halt<'_>,
    held: Option<&AtomicUsize>,
    search: impl FnOnce(&mut Collect<'_>) -> std::io::Result<()>,
) -> Hits {
    let alone = AtomicUsize::new(0);
    let keep = Keep {
        mode,
        want: want.n,
        skip: want.skip,
        max_chars: stop.max_chars,
        held_cap: stop.held_cap,
    };
    let mut sink = Collect::new(keep, &stop.bounds.cancel, held, &alone);
    let res = search(&mut sink);
    let mut hits = sink.finish();
    // A file cut by the stop is not "failed": the stop is reported itself.
    if res.is_err() && !stop.bounds.halted() {
        hits.failed = true;
    }
    hits
}
