//! The notices that end a content search's reply (why it was cut, how it
//! goes on, what was skipped), and the room the reply keeps for them.
//! May touch: nothing (no I/O).

use std::time::Duration;

use super::OutputMode;
use crate::limits::{MAX_IGNORE_FILE_BYTES, MAX_SEARCH_LINE_BUFFER, MAX_SEARCH_RESULTS};
use crate::text::budget::{chars, cursor_room};

/// Why a walk stopped early, as the notices word it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Halted {
    /// The call's time limit passed.
    Deadline(Duration),
    /// `--max-entries` entries were walked.
    Entries(usize),
    /// Directories deeper than `--max-depth` were not entered.
    Depth(usize),
    /// The bound on listed paths waiting to be searched.
    Paths(usize),
}

/// What the search found besides its matches, for the notices.
#[derive(Debug, Clone, Copy, Default)]
pub struct Facts {
    /// The walk stopped early.
    pub halted: Option<Halted>,
    /// Files that could not be searched to the end.
    pub failed: u64,
    /// Ignore files not used (too big, or past the rule bounds).
    pub big_ignore: u64,
    /// Binary files skipped.
    pub binary: u64,
    /// The call asked for binary files to be searched.
    pub binary_asked: bool,
    /// Files searched.
    pub searched: u64,
}

/// How a cut reply goes on.
#[derive(Debug, Clone, Default)]
pub enum Next {
    /// It does not (or only by narrowing the search).
    #[default]
    Narrow,
    /// From this cursor.
    Cursor(String),
    /// The position lies too deep below the search path for a cursor.
    TooDeep,
}

/// How a reply was cut, for the notices.
pub(super) struct Cut {
    pub(super) max_cut: bool,
    pub(super) size_cut: bool,
    pub(super) mode: OutputMode,
    pub(super) max: u64,
    pub(super) max_reply_chars: usize,
    pub(super) reserve: usize,
    pub(super) any_shown: bool,
}

/// The notices that end a reply, one a line.
pub(super) fn notices(cut: &Cut, f: &Facts, next: &Next) -> Vec<String> {
    let mut notes = Vec::new();
    if cut.max_cut {
        let what = if cut.mode == OutputMode::Content {
            "matching lines"
        } else {
            "files"
        };
        notes.push(format!(
            "[truncated: stopped at maxResults={} {what}; more may exist]",
            cut.max
        ));
    }
    if cut.size_cut {
        if cut.max_reply_chars == 0 {
            notes.push(format!(
                "[truncated: the reply reached the {}-byte bound on a search's text]",
                crate::limits::MAX_WALK_TEXT_BYTES
            ));
        } else {
            notes.push(format!(
                "[truncated: the reply reached its {}-character limit (--max-reply-chars), of which up to {} are kept for these notices]",
                cut.max_reply_chars, cut.reserve
            ));
        }
    }
    match f.halted {
        Some(Halted::Deadline(d)) => notes.push(format!(
            "[truncated: the search stopped at its time limit ({}s); not every file was searched]",
            d.as_secs()
        )),
        Some(Halted::Entries(n)) => notes.push(format!(
            "[truncated: the walk stopped after {n} entries (--max-entries)]"
        )),
        Some(Halted::Depth(n)) => notes.push(format!(
            "[truncated: directories deeper than {n} levels were not searched (--max-depth)]"
        )),
        Some(Halted::Paths(n)) => notes.push(format!(
            "[truncated: the walk stopped with {n} bytes of listed paths waiting to be searched]"
        )),
        None => {}
    }
    if f.failed > 0 {
        notes.push(format!(
            "[{} file(s) could not be searched to the end (unreadable, or a line over {MAX_SEARCH_LINE_BUFFER} bytes)]",
            f.failed
        ));
    }
    if f.big_ignore > 0 {
        notes.push(format!(
            "[{} ignore file(s) over {MAX_IGNORE_FILE_BYTES} bytes or past the ignore-rule bounds were not used]",
            f.big_ignore
        ));
    }
    if f.binary > 0 && !cut.any_shown && !f.binary_asked {
        notes.push(format!(
            "[{} binary file(s) skipped; binary: true searches them]",
            f.binary
        ));
    }
    if cut.max_cut || cut.size_cut || f.halted.is_some() {
        let mut how = match next {
            Next::Cursor(c) => format!(
                "[more results follow: for the next ones call again with the same arguments and cursor: \"{c}\"; or narrow the search: a deeper path, include or excludePatterns, or a more specific pattern"
            ),
            Next::TooDeep => String::from(
                "[more results follow, but the next one lies too deep below path for a cursor to name it; narrow the search: a deeper path, include or excludePatterns, or a more specific pattern",
            ),
            Next::Narrow => String::from(
                "[to see more, narrow the search: a deeper path, include or excludePatterns, or a more specific pattern",
            ),
        };
        if cut.max_cut && cut.max < MAX_SEARCH_RESULTS as u64 {
            how.push_str(&format!(
                "; or raise maxResults (up to {MAX_SEARCH_RESULTS})"
            ));
        }
        if cut.size_cut {
            how.push_str("; or use outputMode 'files' or 'count' first");
        }
        how.push(']');
        notes.push(how);
    }
    notes
}

/// The characters a reply keeps for its notices: all of them at once, with
/// the longest numbers (`notices` joined by newlines, after a blank line).
pub fn notice_reserve(max_reply_chars: usize, max: u64) -> usize {
    let cut = Cut {
        max_cut: true,
        size_cut: true,
        mode: OutputMode::Content,
        max: max.min(MAX_SEARCH_RESULTS as u64 - 1),
        max_reply_chars: max_reply_chars.max(1),
        reserve: usize::MAX,
        any_shown: false,
    };
    let halts = [
        Halted::Deadline(Duration::from_secs(u64::MAX)),
        Halted::Entries(usize::MAX),
        Halted::Depth(usize::MAX),
        Halted::Paths(usize::MAX),
    ]
    .into_iter();
    let longest = |next: &Next| {
        halts
            .clone()
            .map(|h| {
                let f = Facts {
                    halted: Some(h),
                    failed: u64::MAX,
                    big_ignore: u64::MAX,
                    binary: u64::MAX,
                    binary_asked: false,
                    searched: u64::MAX,
                };
                let notes = notices(&cut, &f, next);
                notes.iter().map(|n| chars(n) + 1).sum::<usize>() + 2
            })
            .max()
            .unwrap_or(0)
    };
    // The opening line when no match fits is longer than "No matches found".
    let narrow = longest(&Next::Narrow) + 64;
    let cursor = longest(&Next::Cursor("x".repeat(cursor_room(max_reply_chars)))) + 64;
    // A small budget keeps no room for a cursor: its reply gives one only
    // when the notices that apply leave room for it.
    if max_reply_chars == 0 || cursor.saturating_mul(4) <= max_reply_chars {
        cursor
    } else {
        narrow
    }
}

/// The characters of content one reply may carry: `--max-reply-chars` less
/// the notices' room, or, with the budget off, the walk tools' text bound.
pub fn content_room(max_reply_chars: usize, max: u64) -> usize {
    if max_reply_chars == 0 {
        crate::limits::MAX_WALK_TEXT_BYTES
    } else {
        max_reply_chars.saturating_sub(notice_reserve(max_reply_chars, max))
    }
}
