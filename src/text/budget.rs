//! Reply budgets: the one place that decides how much text a reply carries
//! and words the notice that ends a cut reply.
//!
//! Owns: [`ReplyBudget`] (`--max-reply-chars`: a reply's characters; a reply
//! that fits is returned unchanged, a longer one is cut at a whole line or
//! entry and ends with a notice that says how to get the rest), the paging
//! of lists ([`ReplyBudget::page`], one scheme for every listing, tree and
//! search: an `offset` counting entries or matches to skip), and
//! [`TextBudget`], the byte cap a parallel walk shares to bound its memory.
//! May touch: nothing (no I/O).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::limits::REPLY_NOTICE_RESERVE;

/// A byte budget for a walk's collected text, shared by the walk threads: a
/// visitor takes what each entry will cost, and once the budget is spent the
/// walk stops and its result says it was cut
/// ([`Truncation::Text`](crate::text::fmt::Truncation::Text)).
#[derive(Debug)]
pub struct TextBudget {
    used: AtomicUsize,
    full: AtomicBool,
    max: usize,
}

impl TextBudget {
    /// A budget of `max` bytes.
    pub fn new(max: usize) -> Self {
        Self {
            used: AtomicUsize::new(0),
            full: AtomicBool::new(false),
            max,
        }
    }

    /// Takes `n` bytes; `false` (and the budget is spent from now on) when
    /// they do not fit.
    pub fn take(&self, n: usize) -> bool {
        if self.used.fetch_add(n, Ordering::Relaxed) + n > self.max {
            self.full.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// The bytes taken so far.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Whether the budget is spent.
    pub fn is_full(&self) -> bool {
        self.full.load(Ordering::Relaxed)
    }
}

/// The most characters a cursor token takes in a reply of at most
/// `max_reply_chars` characters (0: no budget): [`MAX_CURSOR_CHARS`], or a
/// quarter of a small budget. A cut page keeps this much room for it.
///
/// [`MAX_CURSOR_CHARS`]: crate::limits::MAX_CURSOR_CHARS
pub fn cursor_room(max_reply_chars: usize) -> usize {
    let max = crate::limits::MAX_CURSOR_CHARS;
    if max_reply_chars == 0 {
        max
    } else {
        max.min(max_reply_chars / 4)
    }
}

/// Characters in `s` (what the reply budget counts).
pub fn chars(s: &str) -> usize {
    s.chars().count()
}

/// Ends `text` with `notice` as its last line, after a blank line (or as
/// the whole text when there is nothing before it). A reply's content is
/// then everything before the last `"\n\n["`.
pub fn append_notice(text: &mut String, notice: &str) {
    if !text.is_empty() {
        text.push_str("\n\n");
    }
    text.push_str(notice);
}

/// The characters one reply's text may take (`--max-reply-chars`); 0 is no
/// budget, the reference's behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyBudget {
    max: usize,
}

/// One page of a list: the items `start..end` of `total`, joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The joined items (no notice).
    pub text: String,
    /// Index of the first item shown (the `offset` asked for).
    pub start: usize,
    /// Index after the last item shown.
    pub end: usize,
    /// Items in the whole list.
    pub total: usize,
}

impl Page {
    /// Whether items after the page were left out.
    pub fn is_cut(&self) -> bool {
        self.end < self.total
    }
}

impl ReplyBudget {
    /// A budget of `max_reply_chars` characters; 0 is none.
    pub fn new(max_reply_chars: usize) -> Self {
        Self {
            max: max_reply_chars,
        }
    }

    /// The budget in characters, `None` when there is none.
    pub fn max(&self) -> Option<usize> {
        (self.max != 0).then_some(self.max)
    }

    /// Whether a whole reply of `n` characters fits.
    pub fn fits(&self, n: usize) -> bool {
        self.max == 0 || n <= self.max
    }

    /// Whether the whole reply `text` fits (counting characters only when
    /// the byte length does not already decide it).
    pub fn fits_text(&self, text: &str) -> bool {
        self.max == 0
            || text.len() <= self.max
            || (text.len() <= self.max.saturating_mul(4) && chars(text) <= self.max)
    }

    /// The characters a cut reply's content may take; its notice takes at
    /// most the rest ([`REPLY_NOTICE_RESERVE`]).
    pub fn room(&self) -> usize {
        if self.max == 0 {
            usize::MAX
        } else {
            self.max.saturating_sub(REPLY_NOTICE_RESERVE)
        }
    }

    /// The opening words of every notice of a reply cut by this budget.
    pub fn cut_words(&self) -> String {
        format!(
            "[reply cut at the {}-character limit (--max-reply-chars)",
            self.max
        )
    }

    /// The items from `offset` on, joined by `sep`: all of them when they
    /// fit with the `extra` characters the caller adds around them, else as
    /// many whole items as fit in [`room`](Self::room) minus `extra`.
    pub fn page<S: AsRef<str>>(&self, items: &[S], sep: &str, offset: usize, extra: usize) -> Page {
        let total = items.len();
        let start = offset.min(total);
        let rest = items.get(start..).unwrap_or_default();
        let sep_chars = chars(sep);
        let room = self.room().saturating_sub(extra);
        let whole = self.max.saturating_sub(extra);
        let mut used = 0usize;
        let mut fit_room = 0usize;
        let mut fits_whole = true;
        for (i, item) in rest.iter().enumerate() {
            let cost = chars(item.as_ref()) + if i > 0 { sep_chars } else { 0 };
            used = used.saturating_add(cost);
            if used <= room {
                fit_room = i + 1;
            }
            if self.max != 0 && used > whole {
                fits_whole = false;
                break;
            }
        }
        let n = if fits_whole { rest.len() } else { fit_room };
        let shown = rest.get(..n).unwrap_or_default();
        let mut text = String::new();
        for (i, item) in shown.iter().enumerate() {
            if i > 0 {
                text.push_str(sep);
            }
            text.push_str(item.as_ref());
        }
        Page {
            text,
            start,
            end: start + n,
            total,
        }
    }

    /// The notice that ends a cut page of `unit` (`entries`, `matches`),
    /// with how to get the rest (`offset`) and how to `narrow` the call.
    pub fn page_notice(&self, unit: &str, page: &Page, narrow: &str) -> String {
        let head = self.cut_words();
        if page.end == page.start {
            return format!(
                "{head}: the {unit} at offset {} is longer than the limit on its own; skip it with offset: {}, or narrow: {narrow}]",
                page.start,
                page.start + 1
            );
        }
        format!(
            "{head}: {unit} {}-{} of {} shown; for the next ones call again with the same arguments and offset: {}, or narrow: {narrow}]",
            page.start + 1,
            page.end,
            page.total,
            page.end
        )
    }

    /// A reply of `items` from `offset` on, joined by `sep`, leaving `extra`
    /// characters for what the caller adds: the page's text, the notice
    /// that must end the reply (cut, or nothing at `offset`), and whether
    /// the page reaches the end of the list.
    pub fn page_text<S: AsRef<str>>(
        &self,
        items: &[S],
        sep: &str,
        offset: usize,
        extra: usize,
        unit: &str,
        narrow: &str,
    ) -> (String, Option<String>, bool) {
        let page = self.page(items, sep, offset, extra);
        let notice = if page.is_cut() {
            Some(self.page_notice(unit, &page, narrow))
        } else if offset > 0 && offset >= page.total {
            Some(Self::past_end_notice(unit, offset, page.total))
        } else {
            None
        };
        let end = !page.is_cut();
        (page.text, notice, end)
    }

    /// The notice that ends a page of a walk cut by this budget, when more
    /// `unit` (`entries`, `matches`) follow from `cursor`.
    pub fn cursor_notice(&self, unit: &str, cursor: &str, narrow: &str) -> String {
        format!(
            "{}: more {unit} follow; for the next ones call again with the same arguments and cursor: \"{cursor}\", or narrow: {narrow}]",
            self.cut_words()
        )
    }

    /// The notice that ends a page whose next item (`entry`, `match`) does
    /// not fit the budget on its own: `cursor` goes on after it.
    pub fn skip_notice(&self, item: &str, cursor: &str, narrow: &str) -> String {
        format!(
            "{}: the next {item} is longer than the limit on its own; skip it with the same arguments and cursor: \"{cursor}\", or narrow: {narrow}]",
            self.cut_words()
        )
    }

    /// The notice that ends a page when the position of the next `unit`
    /// lies too deep below the call's path for a cursor to carry it.
    pub fn too_deep_notice(&self, unit: &str, narrow: &str) -> String {
        format!(
            "{}: more {unit} follow, but the next one lies too deep below path for a cursor to name it; call again with a deeper path, or narrow: {narrow}]",
            self.cut_words()
        )
    }

    /// The notice that ends a page of a walk that stopped at the entry cap
    /// of one call (`--max-entries`), which goes on from `cursor`.
    pub fn halt_notice(max_entries: usize, cursor: &str, narrow: &str) -> String {
        format!(
            "[the walk stopped after {max_entries} entries (--max-entries); more may follow: call again with the same arguments and cursor: \"{cursor}\", or narrow: {narrow}]"
        )
    }

    /// The notice for an `offset` at or past the end of a list.
    pub fn past_end_notice(unit: &str, offset: usize, total: usize) -> String {
        format!("[no {unit} from offset {offset}: there are {total}]")
    }
}

/// The longest prefix of `text` made of whole lines (each with its `\n`)
/// of at most `room` characters, and how many lines it holds.
pub fn whole_lines(text: &str, room: usize) -> (&str, usize) {
    let mut used = 0usize;
    let mut end = 0usize;
    let mut lines = 0usize;
    let mut start = 0usize;
    while let Some(i) = text.get(start..).and_then(|t| t.find('\n')) {
        let line_end = start + i + 1;
        used += chars(text.get(start..line_end).unwrap_or_default());
        if used > room {
            break;
        }
        end = line_end;
        lines += 1;
        start = line_end;
    }
    (text.get(..end).unwrap_or_default(), lines)
}

/// The longest prefix of `s` of at most `max` characters.
pub fn cut_chars(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => s.get(..i).unwrap_or_default(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_that_fits_is_the_whole_list() {
        let b = ReplyBudget::new(1024);
        let items = ["a", "b", "c"];
        let p = b.page(&items, "\n", 0, 0);
        assert_eq!(p.text, "a\nb\nc");
        assert!(!p.is_cut());
        let off = ReplyBudget::new(0).page(&items, "\n", 1, 0);
        assert_eq!((off.text.as_str(), off.start, off.end), ("b\nc", 1, 3));
    }

    #[test]
    fn a_cut_page_holds_whole_items_within_room() {
        let b = ReplyBudget::new(1024);
        let items: Vec<String> = (0..1000).map(|i| format!("item{i:04}")).collect();
        let mut seen = Vec::new();
        let mut offset = 0;
        loop {
            let p = b.page(&items, "\n", offset, 10);
            assert!(chars(&p.text) + 10 <= b.room() || !p.is_cut());
            assert!(p.end > p.start);
            seen.extend(p.text.split('\n').map(str::to_owned));
            let notice = b.page_notice("entries", &p, "x");
            assert!(chars(&notice) <= REPLY_NOTICE_RESERVE, "{notice}");
            if !p.is_cut() {
                break;
            }
            assert!(notice.contains(&format!("offset: {}", p.end)), "{notice}");
            offset = p.end;
        }
        assert_eq!(seen, items);
    }

    #[test]
    fn counts_characters_not_bytes() {
        let b = ReplyBudget::new(1024);
        let items = vec!["é".repeat(1000)];
        assert!(!b.page(&items, "\n", 0, 0).is_cut());
        assert!(b.fits_text(&items[0]));
        assert!(!b.fits_text(&"é".repeat(1025)));
    }

    #[test]
    fn whole_lines_stop_at_a_line_end() {
        assert_eq!(whole_lines("ab\ncd\nef", 6), ("ab\ncd\n", 2));
        assert_eq!(whole_lines("ab\ncd\nef", 5), ("ab\n", 1));
        assert_eq!(whole_lines("abcdef\n", 3), ("", 0));
        assert_eq!(whole_lines("é\r\nü\n", 3), ("é\r\n", 1));
        assert_eq!(cut_chars("héllo", 2), "hé");
        assert_eq!(cut_chars("hé", 5), "hé");
    }

    #[test]
    fn notice_follows_a_blank_line() {
        let mut t = String::from("x\n");
        append_notice(&mut t, "[n]");
        assert_eq!(t, "x\n\n\n[n]");
        let mut e = String::new();
        append_notice(&mut e, "[n]");
        assert_eq!(e, "[n]");
    }
}
