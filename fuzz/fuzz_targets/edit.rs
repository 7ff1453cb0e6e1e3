//! edit: arbitrary text and edits against `edit::apply_edits`.
//!
//! Input: parts separated by the byte `0xff` (never valid UTF-8, so never
//! inside a string): the text, then `oldText`, `newText` pairs (a missing
//! last `newText` is empty). Each part is decoded as lossy UTF-8.
//!
//! Oracle: a model written here replays the batch step by step with a naive
//! search: an empty `oldText` fails; one that occurs (overlapping occurrences
//! count) zero or several times in the text as it stands after the earlier
//! edits fails the whole batch, at that index; otherwise exactly that
//! occurrence is replaced and every other byte is kept. `apply_edits` must
//! agree: the same text on success, the same failing index, kind, count and
//! first line numbers on error. Matching bytes exactly also means an `\n`
//! never matches inside an `\r\n` as if the two were one line ending.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tuls::text::edit::{Edit, EditError, apply_edits};

/// Start offsets of every occurrence of `needle` in `hay`, overlapping ones
/// included.
fn naive_occurrences(hay: &str, needle: &str) -> Vec<usize> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    if n.len() > h.len() {
        return Vec::new();
    }
    (0..=h.len() - n.len())
        .filter(|&i| &h[i..i + n.len()] == n)
        .collect()
}

fn line_of(text: &str, at: usize) -> usize {
    1 + text.as_bytes()[..at]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

fn model(text: &str, edits: &[Edit<'_>]) -> Result<String, EditError> {
    let mut cur = text.to_owned();
    for (index, e) in edits.iter().enumerate() {
        if e.old_text.is_empty() {
            return Err(EditError::EmptyOldText { index });
        }
        let hits = naive_occurrences(&cur, e.old_text);
        match hits.as_slice() {
            [] => return Err(EditError::NotFound { index, hint: None }),
            [at] => {
                let end = at + e.old_text.len();
                assert!(cur.is_char_boundary(*at) && cur.is_char_boundary(end));
                let next = format!("{}{}{}", &cur[..*at], e.new_text, &cur[end..]);
                // Every other byte preserved: the prefix and suffix survive
                // unchanged around exactly the new text.
                assert_eq!(next.len(), cur.len() - e.old_text.len() + e.new_text.len());
                cur = next;
            }
            many => {
                return Err(EditError::Ambiguous {
                    index,
                    count: many.len(),
                    lines: many.iter().take(5).map(|&i| line_of(&cur, i)).collect(),
                });
            }
        }
    }
    Ok(cur)
}

fuzz_target!(|data: &[u8]| {
    let parts: Vec<String> = data
        .split(|&b| b == 0xff)
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    let Some((text, rest)) = parts.split_first() else {
        return;
    };
    let edits: Vec<Edit<'_>> = rest
        .chunks(2)
        .map(|c| Edit {
            old_text: &c[0],
            new_text: c.get(1).map_or("", String::as_str),
        })
        .collect();
    // Hints (what would have matched) only word the error; compare kinds.
    let got = apply_edits(text, &edits).map_err(EditError::without_hint);
    let want = model(text, &edits);
    assert_eq!(got, want, "text {text:?} edits {edits:?}");
    // Restated for the simplest line-ending case: a lone `\n` oldText
    // succeeds only on a text with exactly one line feed and replaces just
    // that byte; a `\r` before it stays, so `\r\n` is never taken as a unit.
    if let Ok(out) = &got
        && let [e] = edits.as_slice()
        && e.old_text == "\n"
    {
        let lf = text.matches('\n').count();
        assert_eq!(lf, 1, "a lone \\n edit succeeded on {lf} line feeds");
        assert_eq!(out, &text.replacen('\n', e.new_text, 1));
    }
});
