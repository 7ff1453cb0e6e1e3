//! The sink of a content search: what one file's search keeps, as the
//! output mode needs it, bounded by the matches wanted, the reply's
//! characters and what the file's chunk may hold; matches an earlier page
//! gave are left out with their context.
//! May touch: nothing (it keeps what the searcher hands it).

use std::sync::atomic::{AtomicUsize, Ordering};

use grep_searcher::{Searcher, Sink, SinkContext, SinkMatch};

use super::{Hits, Line, OutputMode, line_text};

/// The sink: keeps what the mode needs, bounded.
pub struct Collect<'a> {
    mode: OutputMode,
    /// Matches to keep from this file.
    want: u64,
    /// Matches of this file an earlier page gave, left out here (with the
    /// context lines after them).
    skip: u64,
    skipped: u64,
    /// After-context lines of a left-out match are left out too.
    dropping: bool,
    /// Before-context lines seen while leaving matches out.
    before: Vec<(Option<u64>, Vec<u8>)>,
    taken: u64,
    chars: usize,
    /// The reply's character budget ([`super::Reply::room`]).
    max_chars: usize,
    cur: Vec<Line>,
    hits: Hits,
    cancel: &'a tokio_util::sync::CancellationToken,
    /// Characters held by the chunk's files, and whether this file is
    /// exempt (the first of its chunk).
    held: &'a AtomicUsize,
    exempt: bool,
    /// What the chunk's files may hold at once, in characters.
    held_cap: usize,
}

/// What one file's sink keeps, and its bounds.
#[derive(Debug, Clone, Copy)]
pub struct Keep {
    /// The output mode.
    pub mode: OutputMode,
    /// Matches to keep.
    pub want: u64,
    /// Matches to leave out first (given on an earlier page).
    pub skip: u64,
    /// The reply's character budget ([`super::Reply::room`]), which also
    /// bounds what one file's matches may collect.
    pub max_chars: usize,
    /// What the files of one chunk may hold at once, in characters
    /// (beyond its first file, whose own bounds hold).
    pub held_cap: usize,
}

impl<'a> Collect<'a> {
    /// A sink for one file: `held` counts the characters its chunk holds
    /// (`None`: no chunk, nothing else is held, and `alone` is counted
    /// instead); it stops when `cancel` is cancelled.
    pub fn new(
        keep: Keep,
        cancel: &'a tokio_util::sync::CancellationToken,
        held: Option<&'a AtomicUsize>,
        alone: &'a AtomicUsize,
    ) -> Self {
        Self {
            mode: keep.mode,
            want: keep.want,
            skip: keep.skip,
            skipped: 0,
            dropping: false,
            before: Vec::new(),
            taken: 0,
            chars: 0,
            max_chars: keep.max_chars,
            cur: Vec::new(),
            hits: Hits {
                searched: true,
                ..Hits::default()
            },
            cancel,
            held: held.unwrap_or(alone),
            exempt: held.is_none(),
            held_cap: keep.held_cap,
        }
    }

    /// Ends the file: what it kept.
    pub fn finish(mut self) -> Hits {
        self.close();
        self.hits
    }

    /// Keeps a line; false (and the file is incomplete) when the chunk holds
    /// too much already.
    fn push(&mut self, number: Option<u64>, bytes: &[u8], is_match: bool) -> bool {
        let text = line_text(bytes);
        let n = text.len() + 16;
        if !self.exempt && self.held.fetch_add(n, Ordering::Relaxed) + n > self.held_cap {
            self.hits.incomplete = true;
            return false;
        }
        self.chars += n;
        self.cur.push(Line {
            number: number.unwrap_or(0),
            text,
            is_match,
        });
        true
    }

    fn close(&mut self) {
        if !self.cur.is_empty() {
            self.hits.groups.push(std::mem::take(&mut self.cur));
        }
    }
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> std::io::Result<bool> {
        if self.cancel.is_cancelled() {
            return Ok(false);
        }
        if self.skipped < self.skip {
            self.skipped += 1;
            self.before.clear();
            self.dropping = true;
            return Ok(true);
        }
        self.dropping = false;
        for (n, bytes) in std::mem::take(&mut self.before) {
            if self.mode == OutputMode::Content && !self.push(n, &bytes, false) {
                return Ok(false);
            }
        }
        match self.mode {
            OutputMode::Files => {
                self.hits.count += 1;
                Ok(false)
            }
            OutputMode::Count => {
                self.hits.count += 1;
                Ok(true)
            }
            OutputMode::Content => {
                // One more than wanted tells the merge that there is more.
                self.hits.count += 1;
                if self.taken >= self.want {
                    return Ok(false);
                }
                if self.chars > self.max_chars {
                    // More than one reply can carry: the reply says so.
                    self.hits.size_stopped = true;
                    return Ok(false);
                }
                self.taken += 1;
                Ok(self.push(m.line_number(), m.bytes(), true))
            }
        }
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> std::io::Result<bool> {
        let after = *c.kind() == grep_searcher::SinkContextKind::After;
        if self.dropping && after {
            // After-context of a left-out match.
            return Ok(!self.cancel.is_cancelled());
        }
        self.dropping = false;
        if self.skipped < self.skip {
            // Before-context: of a left-out match, or of the first match
            // kept (at most `context` lines are held).
            self.before.push((c.line_number(), c.bytes().to_vec()));
            return Ok(!self.cancel.is_cancelled());
        }
        if self.mode == OutputMode::Content && !self.push(c.line_number(), c.bytes(), false) {
            return Ok(false);
        }
        Ok(!self.cancel.is_cancelled())
    }

    fn context_break(&mut self, _: &Searcher) -> std::io::Result<bool> {
        self.close();
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> std::io::Result<bool> {
        self.hits.binary = true;
        Ok(false)
    }
}
