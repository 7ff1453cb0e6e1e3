//! The sink of a content search: what one file's search keeps, as the
//! output mode needs it, bounded by the matches wanted, the reply's
//! characters and what the file's chunk may hold; matches an earlier page
//! gave are left out with their context.
//! May touch: nothing (it keeps what the searcher hands it).

use std::sync::atomic::{AtomicUsize, Ordering};

use grep_searcher::{Searcher, Sink, SinkContext, SinkMatch};

use super::OutputMode;
use crate::text::matches::{Hits, Line, line_text};

/// The sink: keeps what the mode needs, bounded.
pub(super) struct Collect<'a> {
    pub(super) mode: OutputMode,
    /// Matches to keep from this file.
    pub(super) want: u64,
    /// Matches of this file an earlier page gave, left out here (with the
    /// context lines after them).
    pub(super) skip: u64,
    pub(super) skipped: u64,
    /// After-context lines of a left-out match are left out too.
    pub(super) dropping: bool,
    /// Before-context lines seen while leaving matches out.
    pub(super) before: Vec<(Option<u64>, Vec<u8>)>,
    pub(super) taken: u64,
    pub(super) chars: usize,
    /// The reply's character budget ([`crate::text::matches::Reply::room`]).
    pub(super) max_chars: usize,
    pub(super) cur: Vec<Line>,
    pub(super) hits: Hits,
    pub(super) cancel: &'a tokio_util::sync::CancellationToken,
    /// Characters held by the chunk's files, and whether this file is
    /// exempt (the first of its chunk).
    pub(super) held: &'a AtomicUsize,
    pub(super) exempt: bool,
    /// See [`super::chunks::chunk_held_chars`].
    pub(super) held_cap: usize,
}

impl Collect<'_> {
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

    pub(super) fn close(&mut self) {
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
