//! Exact, fail-closed text edits. This module owns the `edit_file` matching
//! rules: edits apply in order, each `old_text` must occur exactly once
//! (overlapping occurrences count) in the text as it stands after the earlier
//! edits, and nothing is normalized — whitespace, indentation and line endings
//! must match byte for byte. `new_text` is inserted literally and every byte
//! outside the replaced occurrence is preserved. Any failing edit fails the
//! whole batch. Pure string processing: no I/O.
//!
//! A missing match gets a [`Hint`] when the text would match with the file's
//! line endings, or with whitespace at the ends of lines ignored: the error
//! teaches what to send. Nothing is ever normalized; only the error changes.

use crate::limits::{
    EDIT_HINT_LINE_COMPARISONS as HINT_BUDGET, EDIT_HINT_MAX_LINES as HINT_MAX_LINES,
};

/// One replacement: the unique `old_text` becomes `new_text`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edit<'a> {
    /// The text to find: it must occur exactly once.
    pub old_text: &'a str,
    /// What replaces it.
    pub new_text: &'a str,
}

/// Why an edit was refused; `index` is the 0-based position in the batch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// `oldText` is empty.
    #[error("edit {index}: oldText is empty; give the exact text to replace")]
    EmptyOldText {
        /// The edit's position in the batch.
        index: usize,
    },
    /// `hint` says what would have matched, when something close does.
    #[error(
        "edit {index}: oldText not found (0 matches). Matching is exact: whitespace, indentation and line endings (\\n vs \\r\\n) must match the file as it stands after the earlier edits{}",
        hint_text(.hint)
    )]
    NotFound {
        /// The edit's position in the batch.
        index: usize,
        /// What would have matched.
        hint: Option<Hint>,
    },
    /// `lines` holds the 1-based line numbers of the first (up to 5) matches.
    #[error(
        "edit {index}: oldText is ambiguous ({count} matches, at lines {}); include more surrounding context so it matches exactly once",
        join_numbers(.lines)
    )]
    Ambiguous {
        /// The edit's position in the batch.
        index: usize,
        /// How many times `oldText` occurs.
        count: usize,
        /// Where the first matches are.
        lines: Vec<usize>,
    },
}

impl EditError {
    /// The same error without its hint (for comparing outcomes by kind).
    #[must_use]
    pub fn without_hint(self) -> Self {
        match self {
            EditError::NotFound { index, .. } => EditError::NotFound { index, hint: None },
            other => other,
        }
    }
}

/// What a missing `oldText` would have matched with, in the file as it
/// stands. Only ever part of an error message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hint {
    /// The file uses `\r\n`; `oldText` would match with its `\n`s as `\r\n`.
    FileUsesCrlf,
    /// The file uses `\n`; `oldText` would match with its `\r\n`s as `\n`.
    FileUsesLf,
    /// `oldText` would match at 1-based `line` with whitespace at the end of
    /// each line ignored.
    TrailingWhitespace {
        /// Where it would match.
        line: usize,
    },
    /// `oldText` would match at 1-based `line` with whitespace at both ends
    /// of each line (indentation included) ignored.
    Indentation {
        /// Where it would match.
        line: usize,
    },
}

fn hint_text(hint: &Option<Hint>) -> String {
    match hint {
        None => String::new(),
        Some(Hint::FileUsesCrlf) => ". The file uses \\r\\n (CRLF) line endings and oldText uses \\n: it would match with \\r\\n. Send oldText (and newText) with the file's line endings, \\r\\n".to_owned(),
        Some(Hint::FileUsesLf) => ". The file uses \\n line endings and oldText uses \\r\\n: it would match with \\n. Send oldText (and newText) with the file's line endings, \\n".to_owned(),
        Some(Hint::TrailingWhitespace { line }) => format!(
            ". The nearest match is at line {line}, which differs only in trailing whitespace: send the spaces and tabs at the ends of those lines exactly as the file has them"
        ),
        Some(Hint::Indentation { line }) => format!(
            ". The nearest match is at line {line}, which differs only in indentation or trailing whitespace: send the leading spaces and tabs of those lines exactly as the file has them"
        ),
    }
}

/// Why `old` (not found in `text`) did not match, if it nearly does: line
/// endings first, then whitespace at the ends of lines. Linear in the text
/// for the line-ending check; the whitespace search gives up (no hint)
/// after a fixed number of line comparisons.
pub fn near_miss(text: &str, old: &str) -> Option<Hint> {
    if old.contains('\n') {
        let lf = old.replace("\r\n", "\n");
        if text.contains("\r\n") && lf.len() + lf.matches('\n').count() != old.len() {
            let crlf = lf.replace('\n', "\r\n");
            if text.contains(crlf.as_str()) {
                return Some(Hint::FileUsesCrlf);
            }
        }
        if lf.len() != old.len() && text.contains(lf.as_str()) {
            return Some(Hint::FileUsesLf);
        }
    }
    whitespace_near(text, old)
}

fn whitespace_near(text: &str, old: &str) -> Option<Hint> {
    if old.trim().is_empty() || old.matches('\n').count() >= HINT_MAX_LINES {
        return None;
    }
    let want: Vec<&str> = old.split('\n').collect();
    let mut budget = HINT_BUDGET;
    let mut offset = 0usize;
    for (index, line) in text.split('\n').enumerate() {
        let window = text.get(offset..).unwrap_or_default().split('\n');
        offset = offset.saturating_add(line.len() + 1);
        match window_matches(window, &want, &mut budget)? {
            Fit::No => continue,
            Fit::Trailing => return Some(Hint::TrailingWhitespace { line: index + 1 }),
            Fit::Indentation => return Some(Hint::Indentation { line: index + 1 }),
        }
    }
    None
}

enum Fit {
    No,
    Trailing,
    Indentation,
}

/// Whether the lines of `want` match the lines from `have` on, with
/// whitespace at the ends of lines ignored: the first line of `want` may end
/// a line, the last may start one, a single line may lie inside one. `None`
/// once the budget is spent.
fn window_matches<'a>(
    have: impl Iterator<Item = &'a str>,
    want: &[&str],
    budget: &mut usize,
) -> Option<Fit> {
    let last = want.len().saturating_sub(1);
    let mut trailing_only = true;
    let mut seen = 0usize;
    for (i, (h, w)) in have.zip(want).enumerate() {
        *budget = budget.checked_sub(1)?;
        seen += 1;
        let fits = |h: &str, w: &str| match (i == 0, i == last) {
            (true, true) => h.contains(w),
            (true, false) => h.ends_with(w),
            (false, true) => h.starts_with(w),
            (false, false) => h == w,
        };
        if !fits(h.trim(), w.trim()) {
            return Some(Fit::No);
        }
        trailing_only = trailing_only && fits(h.trim_end(), w.trim_end());
    }
    Some(match (seen == want.len(), trailing_only) {
        (false, _) => Fit::No,
        (true, true) => Fit::Trailing,
        (true, false) => Fit::Indentation,
    })
}

/// How many match positions an [`EditError::Ambiguous`] reports.
const REPORTED_MATCHES: usize = 5;

fn join_numbers(numbers: &[usize]) -> String {
    numbers
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Applies `edits` in order to `original` and returns the new text.
///
/// # Errors
///
/// The first edit whose `old_text` is empty, absent, or present more than
/// once in the text as it stands then; nothing is applied in that case.
pub fn apply_edits(original: &str, edits: &[Edit<'_>]) -> Result<String, EditError> {
    let mut text = original.to_owned();
    for (index, edit) in edits.iter().enumerate() {
        if edit.old_text.is_empty() {
            return Err(EditError::EmptyOldText { index });
        }
        let (count, starts) = occurrences(text.as_bytes(), edit.old_text.as_bytes());
        let start = match (count, starts.first()) {
            (1, Some(&start)) => start,
            (0, _) | (_, None) => {
                let hint = near_miss(&text, edit.old_text);
                return Err(EditError::NotFound { index, hint });
            }
            _ => {
                let lines = line_numbers(&text, &starts);
                return Err(EditError::Ambiguous {
                    index,
                    count,
                    lines,
                });
            }
        };
        let end = start.saturating_add(edit.old_text.len());
        // A byte match of valid UTF-8 in valid UTF-8 sits on char boundaries,
        // so both slices exist; fail closed if that ever did not hold.
        let (Some(prefix), Some(suffix)) = (text.get(..start), text.get(end..)) else {
            return Err(EditError::NotFound { index, hint: None });
        };
        text = [prefix, edit.new_text, suffix].concat();
    }
    Ok(text)
}

/// Counts every occurrence of `needle` in `haystack`, overlapping ones
/// included, and returns the byte offsets of the first few. Knuth-Morris-Pratt,
/// so linear time even for repetitive inputs. `needle` must be non-empty.
fn occurrences(haystack: &[u8], needle: &[u8]) -> (usize, Vec<usize>) {
    // border[i]: length of the longest proper border of needle[..=i].
    let mut border = vec![0usize; needle.len()];
    let mut k = 0usize;
    for (i, &byte) in needle.iter().enumerate().skip(1) {
        while k > 0 && needle.get(k) != Some(&byte) {
            k = border.get(k - 1).copied().unwrap_or(0);
        }
        if needle.get(k) == Some(&byte) {
            k += 1;
        }
        if let Some(slot) = border.get_mut(i) {
            *slot = k;
        }
    }
    let (mut count, mut starts, mut matched) = (0usize, Vec::new(), 0usize);
    for (i, &byte) in haystack.iter().enumerate() {
        while matched > 0 && needle.get(matched) != Some(&byte) {
            matched = border.get(matched - 1).copied().unwrap_or(0);
        }
        if needle.get(matched) == Some(&byte) {
            matched += 1;
        }
        if matched > 0 && matched == needle.len() {
            count += 1;
            if starts.len() < REPORTED_MATCHES {
                starts.push((i + 1).saturating_sub(matched));
            }
            matched = border.get(matched - 1).copied().unwrap_or(0);
        }
    }
    (count, starts)
}

/// 1-based line numbers (1 + '\n' bytes before) of ascending byte offsets.
fn line_numbers(text: &str, starts: &[usize]) -> Vec<usize> {
    let (mut line, mut from) = (1usize, 0usize);
    starts
        .iter()
        .map(|&start| {
            let skipped = text.as_bytes().get(from..start).unwrap_or_default();
            line += skipped.iter().filter(|&&b| b == b'\n').count();
            from = from.max(start);
            line
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit<'a>(old_text: &'a str, new_text: &'a str) -> Edit<'a> {
        Edit { old_text, new_text }
    }

    #[test]
    fn single_edit_and_empty_batch() {
        assert_eq!(
            apply_edits("a\nb\nc\n", &[edit("b", "B")]).as_deref(),
            Ok("a\nB\nc\n")
        );
        assert_eq!(apply_edits("x\r\ny", &[]).as_deref(), Ok("x\r\ny"));
    }

    #[test]
    fn sequential_edits_see_earlier_results() {
        let edits = [
            edit("foo()", "bar()"),
            edit("bar();", "baz();"),
            edit("\n}", "\n}\n"),
        ];
        assert_eq!(
            apply_edits("fn f() {\n    foo();\n}", &edits).as_deref(),
            Ok("fn f() {\n    baz();\n}\n")
        );
        // Edit 1 no longer matches once edit 0 replaced it: the batch fails.
        let stale = [edit("foo", "bar"), edit("foo", "qux")];
        assert_eq!(
            apply_edits("foo", &stale),
            Err(EditError::NotFound {
                index: 1,
                hint: None
            })
        );
    }

    #[test]
    fn line_endings_are_never_normalized() {
        let crlf = "a\r\nb\r\nc\r\n";
        assert_eq!(
            apply_edits(crlf, &[edit("a\nb", "x")]),
            Err(EditError::NotFound {
                index: 0,
                hint: Some(Hint::FileUsesCrlf)
            })
        );
        assert_eq!(
            apply_edits(crlf, &[edit("b", "B\n")]).as_deref(),
            Ok("a\r\nB\n\r\nc\r\n")
        );
        assert_eq!(
            apply_edits(crlf, &[edit("a\r\nb", "z")]).as_deref(),
            Ok("z\r\nc\r\n")
        );
        assert_eq!(
            apply_edits("  x\n", &[edit("x\n", "y\n"), edit("\ty", "z")]),
            Err(EditError::NotFound {
                index: 1,
                hint: Some(Hint::Indentation { line: 1 })
            })
        );
    }

    #[test]
    fn a_near_miss_names_what_would_match() {
        let hint = |text: &str, old: &str| match apply_edits(text, &[edit(old, "x")]) {
            Err(EditError::NotFound { hint, .. }) => hint,
            other => panic!("{text:?} / {old:?}: {other:?}"),
        };
        // Line endings, both ways; a lone \n in a CRLF file is no hint.
        assert_eq!(hint("a\r\nb\r\n", "a\nb\n"), Some(Hint::FileUsesCrlf));
        assert_eq!(hint("a\nb\n", "a\r\nb"), Some(Hint::FileUsesLf));
        assert_eq!(hint("a\r\nb\r\n", "a\nc"), None);
        // Trailing whitespace, on either side.
        let code = "fn f() {\n    let a = 1;  \n    g(a);\n}\n";
        assert_eq!(
            hint(code, "let a = 1;\n    g(a);"),
            Some(Hint::TrailingWhitespace { line: 2 })
        );
        assert_eq!(
            hint(code, "    g(a); \n}"),
            Some(Hint::TrailingWhitespace { line: 3 })
        );
        // Indentation (tabs for spaces, or a different depth).
        assert_eq!(
            hint(code, "\tlet a = 1;\n\tg(a);\n}"),
            Some(Hint::Indentation { line: 2 })
        );
        assert_eq!(hint(code, "\tg(a);"), Some(Hint::Indentation { line: 3 }));
        // Nothing close, or only whitespace: no hint.
        assert_eq!(hint(code, "let b = 2;"), None);
        assert_eq!(hint(code, "let a = 1;\n    h(a);"), None);
        assert_eq!(hint(code, " \n\t"), None);
        // The hint is part of the message; the text without one is unchanged.
        let err = apply_edits(code, &[edit("let a = 1;\n    g(a);", "x")]).unwrap_err();
        assert!(
            err.to_string().ends_with(". The nearest match is at line 2, which differs only in trailing whitespace: send the spaces and tabs at the ends of those lines exactly as the file has them"),
            "{err}"
        );
        let err = apply_edits("a\r\n", &[edit("a\n", "x")]).unwrap_err();
        assert!(
            err.to_string()
                .contains("Send oldText (and newText) with the file's line endings, \\r\\n"),
            "{err}"
        );
    }

    #[test]
    fn the_hint_search_is_bounded() {
        // Every window matches all but its last line: quadratic without the
        // budget. It gives up (no hint) instead.
        let text = "a\n".repeat(200_000);
        let old = format!("{}b", " a\n".repeat(5_000));
        let started = std::time::Instant::now();
        assert_eq!(
            apply_edits(&text, &[edit(&old, "x")]),
            Err(EditError::NotFound {
                index: 0,
                hint: None
            })
        );
        eprintln!("gave up after {:?}", started.elapsed());
    }

    #[test]
    fn ambiguous_reports_count_and_first_five_lines() {
        let text = "x = 1\ny\nx = 1\n\nx = 1\nx = 1 x = 1\nx = 1\nx = 1\n";
        assert_eq!(
            apply_edits(text, &[edit("y", "c"), edit("x = 1", "z")]),
            Err(EditError::Ambiguous {
                index: 1,
                count: 7,
                lines: vec![1, 3, 5, 6, 6],
            })
        );
        let msg = apply_edits("k\nk\n", &[edit("k", "")]).map_err(|e| e.to_string());
        assert_eq!(msg, Err("edit 0: oldText is ambiguous (2 matches, at lines 1, 2); include more surrounding context so it matches exactly once".to_owned()));
    }

    #[test]
    fn overlapping_occurrences_are_ambiguous() {
        let expected = EditError::Ambiguous {
            index: 0,
            count: 2,
            lines: vec![1, 1],
        };
        assert_eq!(apply_edits("aaa", &[edit("aa", "b")]), Err(expected));
        let expected = EditError::Ambiguous {
            index: 0,
            count: 3,
            lines: vec![1, 1, 2],
        };
        assert_eq!(apply_edits("ababa\naba", &[edit("aba", "")]), Err(expected));
    }

    #[test]
    fn empty_old_text_and_messages() {
        let err = apply_edits("abc", &[edit("a", "b"), edit("", "x")]);
        assert_eq!(err, Err(EditError::EmptyOldText { index: 1 }));
        let msgs = [
            (
                EditError::EmptyOldText { index: 1 },
                "edit 1: oldText is empty; give the exact text to replace",
            ),
            (
                EditError::NotFound {
                    index: 2,
                    hint: None,
                },
                "edit 2: oldText not found (0 matches). Matching is exact: whitespace, indentation and line endings (\\n vs \\r\\n) must match the file as it stands after the earlier edits",
            ),
        ];
        for (err, msg) in msgs {
            assert_eq!(err.to_string(), msg);
        }
    }

    #[test]
    fn replacement_is_literal_and_unicode_safe() {
        assert_eq!(
            apply_edits("x\ny\nz", &[edit("y", "$& $1 $$ \\0")]).as_deref(),
            Ok("x\n$& $1 $$ \\0\nz")
        );
        let text = "naïve 𝄞 café\n日本語 😀\n";
        assert_eq!(
            apply_edits(text, &[edit("𝄞 caf", "♪ ")]).as_deref(),
            Ok("naïve ♪ é\n日本語 😀\n")
        );
        assert_eq!(
            apply_edits(text, &[edit("語 😀\n", "")]).as_deref(),
            Ok("naïve 𝄞 café\n日本")
        );
        // 'é' and 'è' share their first UTF-8 byte; no partial-char matches.
        assert_eq!(
            apply_edits("è", &[edit("é", "e")]),
            Err(EditError::NotFound {
                index: 0,
                hint: None
            })
        );
    }

    struct XorShift(u64);
    impl XorShift {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            usize::try_from(self.0 % n.max(1) as u64).unwrap_or(0)
        }
    }

    #[test]
    fn randomized_against_naive_search() {
        const ALPHABET: [&str; 7] = ["a", "b", "\n", "\r\n", " ", "é", "𝄞"];
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        let mut outcomes = [0usize; 4];
        for case in 0..600 {
            let pick = |rng: &mut XorShift, max: usize| -> String {
                let len = rng.below(max);
                (0..len)
                    .map(|_| ALPHABET[rng.below(ALPHABET.len())])
                    .collect()
            };
            let text = pick(&mut rng, 24);
            let new_text = pick(&mut rng, 4);
            let bounds: Vec<usize> = (0..=text.len())
                .filter(|&i| text.is_char_boundary(i))
                .collect();
            let old_text = if case % 4 == 0 || bounds.len() < 2 {
                pick(&mut rng, 4)
            } else {
                let a = bounds[rng.below(bounds.len() - 1)];
                let rest: Vec<usize> = bounds.iter().copied().filter(|&b| b > a).collect();
                let b = rest[rng.below(rest.len()).min(rng.below(4))];
                text[a..b].to_owned()
            };
            let got =
                apply_edits(&text, &[edit(&old_text, &new_text)]).map_err(EditError::without_hint);
            let hits: Vec<usize> = bounds
                .iter()
                .copied()
                .filter(|&i| text[i..].starts_with(old_text.as_str()))
                .collect();
            let expected = match hits.as_slice() {
                _ if old_text.is_empty() => Err(EditError::EmptyOldText { index: 0 }),
                [] => Err(EditError::NotFound {
                    index: 0,
                    hint: None,
                }),
                [at] => Ok(format!(
                    "{}{new_text}{}",
                    &text[..*at],
                    &text[at + old_text.len()..]
                )),
                many => Err(EditError::Ambiguous {
                    index: 0,
                    count: many.len(),
                    lines: many
                        .iter()
                        .take(5)
                        .map(|&i| 1 + text[..i].matches('\n').count())
                        .collect(),
                }),
            };
            assert_eq!(got, expected, "case {case}: {text:?} / {old_text:?}");
            outcomes[match got {
                Ok(_) => 0,
                Err(EditError::NotFound { .. }) => 1,
                Err(EditError::Ambiguous { .. }) => 2,
                Err(EditError::EmptyOldText { .. }) => 3,
            }] += 1;
        }
        eprintln!("unique/not found/ambiguous/empty: {outcomes:?}");
        assert!(outcomes[0] >= 200 && outcomes[1] >= 50 && outcomes[2] >= 50);
    }
}
