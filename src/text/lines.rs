//! Line ranges: picking lines `first..first+count` out of a byte stream fed
//! in chunks, numbering them as `cat -n` does, and stopping at a budget.
//!
//! Owns: what a line is (bytes up to and including `\n`; a non-empty final
//! part without `\n` is a line too; an empty file has none), the `cat -n`
//! prefix, and where a range stops. A range's text is its lines' bytes as
//! they are (CRLF kept), each decoded lossily on its own (a `\n` never lies
//! inside a UTF-8 sequence, so this equals decoding the whole). Memory stays
//! bounded by the caps, however long a line is.
//! May touch: nothing (no I/O).

use super::budget::{chars, cut_chars};

/// The `cat -n` prefix of line `n`: the number right-aligned in 6 columns,
/// then a tab.
pub fn number_prefix(n: u64) -> String {
    format!("{n:>6}\t")
}

/// The most text (in bytes) a range of a file of `file_bytes` bytes can
/// make, within the text cap: each byte of a line decodes to at most three
/// (U+FFFD for an invalid one) and a `\n` to one, and with `numbers` each
/// line adds its prefix. With `L` lines that is at most
/// `3 * (file_bytes - L) + L * (prefix + 1)`, largest when every line is
/// empty: a file of newlines numbered makes eight bytes of text per byte.
pub fn text_most(range: Range, caps: Caps, file_bytes: u64) -> u64 {
    let per_byte = if range.numbers {
        let digits = file_bytes.saturating_add(1).checked_ilog10().unwrap_or(0) + 1;
        u64::from(digits.max(6)) + 2
    } else {
        3
    };
    file_bytes.saturating_mul(per_byte).min(caps.bytes as u64)
}

/// Which lines to pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    /// The first line, 1-based.
    pub first: u64,
    /// How many lines; `None` is to the end.
    pub count: Option<u64>,
    /// Prefix each line with its number (`cat -n`).
    pub numbers: bool,
}

/// How much text a range may return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Characters of the whole text when it is returned uncut
    /// (`--max-reply-chars`; `usize::MAX` for none).
    pub whole_chars: usize,
    /// Characters of a cut text (the budget less its notice).
    pub cut_chars: usize,
    /// Bytes of the text (`--max-read-bytes`).
    pub bytes: usize,
}

/// Which cap stopped a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    /// The reply budget (characters).
    Chars,
    /// The read limit (bytes).
    Bytes,
}

/// How a range ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Every line asked for (or every line to the end of the file).
    Complete,
    /// The range starts after the last of the file's `lines` lines.
    PastEof {
        /// Lines in the file.
        lines: u64,
    },
    /// Cut by `cap` after whole lines; the rest starts at line `next`.
    Cut {
        /// The cap that stopped it.
        cap: Cap,
        /// The first line not shown.
        next: u64,
    },
    /// The range's first line alone is over `cap`; only its first `shown`
    /// characters are in the text.
    LongLine {
        /// The cap that stopped it.
        cap: Cap,
        /// That line's number.
        line: u64,
        /// Characters of it shown.
        shown: usize,
    },
}

/// Collects a range from chunks of a file, in order.
#[derive(Debug)]
pub struct Collector {
    range: Range,
    caps: Caps,
    /// The number of the line the next byte belongs to.
    line: u64,
    /// Whether the current line has any byte yet.
    started: bool,
    /// The current line's bytes (only inside the range), at most `keep`.
    cur: Vec<u8>,
    /// The current line is longer than `keep`.
    cur_over: bool,
    keep: usize,
    out: String,
    /// The capacity `out` grows to at most, unless a line needs more (what
    /// the reply budget covers; see [`Collector::hold_at_most`]).
    room: usize,
    out_chars: usize,
    /// `out` at the last line end within `cut_chars`: (bytes, lines shown).
    mark: (usize, u64),
    shown: u64,
    end: Option<End>,
    /// Bytes fed so far.
    fed: u64,
    /// Where (in bytes fed) the range's first line starts, once known.
    first_at: Option<u64>,
}

impl Collector {
    /// A collector of `range` within `caps`.
    pub fn new(range: Range, caps: Caps) -> Self {
        // A line longer than every cap cannot be shown whole; its first
        // bytes are kept for a cut display, no more.
        let keep = caps
            .bytes
            .min(caps.whole_chars.saturating_mul(4))
            .saturating_add(1);
        Self {
            range,
            caps,
            line: 1,
            started: false,
            cur: Vec::new(),
            cur_over: false,
            keep,
            out: String::new(),
            room: usize::MAX,
            out_chars: 0,
            mark: (0, 0),
            shown: 0,
            end: None,
            fed: 0,
            first_at: (range.first <= 1).then_some(0),
        }
    }

    /// Where the range's first line starts, in bytes fed (the caller maps
    /// that to its place in the file), once the feed has reached it.
    pub fn first_start(&self) -> Option<u64> {
        self.first_at
    }

    /// Whether the range is done (no more input is needed).
    pub fn is_done(&self) -> bool {
        self.end.is_some()
    }

    /// The bytes of the text so far and of the current line: within
    /// [`text_most`] of the bytes fed.
    pub fn text_bytes(&self) -> u64 {
        self.out.len().saturating_add(self.cur.len()) as u64
    }

    /// Keeps the text's capacity within `bytes` as it grows (it doubles,
    /// but never past `bytes` unless the text itself needs more), so that
    /// a text within what the reply budget covers is held within it too.
    pub fn hold_at_most(&mut self, bytes: u64) {
        self.room = usize::try_from(bytes).unwrap_or(usize::MAX);
    }

    /// Appends `text` to the text, growing its capacity within `room`.
    fn push_out(&mut self, text: &str) {
        let need = self.out.len().saturating_add(text.len());
        if need > self.out.capacity() {
            let grown = self
                .out
                .capacity()
                .saturating_mul(2)
                .max(need)
                .max(64)
                .min(self.room.max(need));
            self.out.reserve_exact(grown - self.out.len());
        }
        self.out.push_str(text);
    }

    /// Whether the collector is still before the range's first line.
    pub fn before_range(&self) -> bool {
        self.line < self.range.first
    }

    /// Feeds the next bytes of the file.
    pub fn feed(&mut self, mut chunk: &[u8]) {
        while !chunk.is_empty() && self.end.is_none() {
            let nl = chunk.iter().position(|&b| b == b'\n');
            let (part, rest, ends) = match nl {
                Some(i) => (
                    chunk.get(..=i).unwrap_or_default(),
                    chunk.get(i + 1..).unwrap_or_default(),
                    true,
                ),
                None => (chunk, &[][..], false),
            };
            chunk = rest;
            self.fed += part.len() as u64;
            if self.line < self.range.first {
                if ends {
                    self.line += 1;
                    self.started = false;
                    if self.line == self.range.first {
                        self.first_at = Some(self.fed);
                    }
                } else {
                    self.started = true;
                }
                continue;
            }
            self.started = true;
            let room = self.keep.saturating_sub(self.cur.len());
            if part.len() > room {
                self.cur
                    .extend_from_slice(part.get(..room).unwrap_or_default());
                self.cur_over = true;
                // Over every cap: no need to read the rest of this line.
                self.finish_line();
                return;
            }
            self.cur.extend_from_slice(part);
            if ends {
                self.finish_line();
            }
        }
    }

    /// Ends the current line (with or without its `\n`) inside the range.
    fn finish_line(&mut self) {
        let bytes = std::mem::take(&mut self.cur);
        let over = std::mem::take(&mut self.cur_over);
        self.started = false;
        let mut text = if self.range.numbers {
            number_prefix(self.line)
        } else {
            String::new()
        };
        text.push_str(&String::from_utf8_lossy(&bytes));
        let n = chars(&text);
        let within = !over
            && self.out_chars.saturating_add(n) <= self.caps.whole_chars
            && self.out.len().saturating_add(text.len()) <= self.caps.bytes;
        if within {
            self.push_out(&text);
            self.out_chars += n;
            self.shown += 1;
            self.line += 1;
            if self.out_chars <= self.caps.cut_chars {
                self.mark = (self.out.len(), self.shown);
            }
            if self.range.count.is_some_and(|c| self.shown >= c) {
                self.end = Some(End::Complete);
            }
            return;
        }
        let cap = if over && bytes.len() >= self.caps.bytes
            || self.out.len().saturating_add(text.len()) > self.caps.bytes
        {
            Cap::Bytes
        } else {
            Cap::Chars
        };
        let (len, kept) = self.mark;
        if kept > 0 {
            self.out.truncate(len);
            self.end = Some(End::Cut {
                cap,
                next: self.range.first + kept,
            });
            return;
        }
        // The range's first line alone does not fit the cut: show its start.
        // It is `out`'s first line if `out` holds any, else this one.
        let source = if self.out.is_empty() {
            text
        } else {
            std::mem::take(&mut self.out)
        };
        let mut shown = cut_chars(&source, self.caps.cut_chars).to_owned();
        while shown.len() > self.caps.bytes {
            shown.pop();
        }
        let prefix = if self.range.numbers {
            chars(&number_prefix(self.range.first))
        } else {
            0
        };
        self.end = Some(End::LongLine {
            cap,
            line: self.range.first,
            shown: chars(&shown).saturating_sub(prefix),
        });
        self.out = shown;
    }

    /// Ends the input (end of file): the text and how the range ended.
    pub fn finish(mut self) -> (String, End) {
        if self.end.is_none() {
            let partial = self.started;
            if self.line >= self.range.first && partial {
                self.finish_line();
            }
            if self.end.is_none() {
                // Nothing of the range exists: it starts after the last line
                // (an empty file read from line 1 is just empty).
                self.end = Some(if self.shown == 0 && self.range.first > 1 {
                    End::PastEof {
                        lines: self.line - 1 + u64::from(partial),
                    }
                } else {
                    End::Complete
                });
            }
        }
        let end = self.end.unwrap_or(End::Complete);
        (self.out, end)
    }
}

/// Where a piece of one line lies in `bytes` (which start at a character
/// boundary of the line as a read decodes it, lossily): after `skip`
/// characters, at most `take` more, up to and including a `\n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// The byte where the piece starts (after the characters skipped).
    pub start: usize,
    /// The byte after its last one.
    pub end: usize,
    /// Its characters.
    pub chars: usize,
    /// Whether it ends the line: its last byte is the `\n`, or the bytes
    /// ran out before `take` characters (`at_eof` says they are the file's
    /// last).
    pub ends_line: bool,
}

/// The piece of `bytes` after `skip` characters: at most `take` characters,
/// up to and including the first `\n` (see [`Piece`]). Each invalid UTF-8
/// sequence counts as one character (U+FFFD), as a lossy decoding makes
/// it, so the count matches the text a read shows. `at_eof`: `bytes` end
/// where the file does (else a line that runs past them goes on).
pub fn piece(bytes: &[u8], skip: usize, take: usize, at_eof: bool) -> Piece {
    let mut seen = 0usize;
    let mut pos = 0usize;
    let mut start = (skip == 0).then_some(0);
    for chunk in bytes.utf8_chunks() {
        let invalid = chunk.invalid();
        let units = chunk
            .valid()
            .chars()
            .map(|c| (c.len_utf8(), c == '\n'))
            .chain((!invalid.is_empty()).then_some((invalid.len(), false)));
        for (len, newline) in units {
            if seen < skip {
                seen += 1;
                pos += len;
                if newline {
                    // The line ended within what was already given.
                    return Piece {
                        start: pos,
                        end: pos,
                        chars: 0,
                        ends_line: true,
                    };
                }
                if seen == skip {
                    start = Some(pos);
                }
                continue;
            }
            let given = seen - skip;
            if given == take {
                return Piece {
                    start: start.unwrap_or(pos),
                    end: pos,
                    chars: take,
                    ends_line: false,
                };
            }
            seen += 1;
            pos += len;
            if newline {
                return Piece {
                    start: start.unwrap_or(pos),
                    end: pos,
                    chars: given + 1,
                    ends_line: true,
                };
            }
        }
    }
    Piece {
        start: start.unwrap_or(pos),
        end: pos,
        chars: seen.saturating_sub(skip),
        ends_line: at_eof,
    }
}

#[cfg(test)]
mod tests;
