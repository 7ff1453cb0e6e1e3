//! Exact, fail-closed text edits. This module owns the `edit_file` matching
//! rules: edits apply in order, each `old_text` must occur exactly once
//! (overlapping occurrences count) in the text as it stands after the earlier
//! edits, and nothing is normalized — whitespace, indentation and line endings
//! must match byte for byte. `new_text` is inserted literally and every byte
//! outside the replaced occurrence is preserved. Any failing edit fails the
//! whole batch. Pure string processing: no I/O.

/// One replacement: the unique `old_text` becomes `new_text`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edit<'a> {
    pub old_text: &'a str,
    pub new_text: &'a str,
}

/// Why an edit was refused; `index` is the 0-based position in the batch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("edit {index}: oldText is empty; give the exact text to replace")]
    EmptyOldText { index: usize },
    #[error(
        "edit {index}: oldText not found (0 matches). Matching is exact: whitespace, indentation and line endings (\\n vs \\r\\n) must match the file as it stands after the earlier edits"
    )]
    NotFound { index: usize },
    /// `lines` holds the 1-based line numbers of the first (up to 5) matches.
    #[error(
        "edit {index}: oldText is ambiguous ({count} matches, at lines {}); include more surrounding context so it matches exactly once",
        join_numbers(.lines)
    )]
    Ambiguous {
        index: usize,
        count: usize,
        lines: Vec<usize>,
    },
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
            (0, _) | (_, None) => return Err(EditError::NotFound { index }),
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
            return Err(EditError::NotFound { index });
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
            Err(EditError::NotFound { index: 1 })
        );
    }

    #[test]
    fn line_endings_are_never_normalized() {
        let crlf = "a\r\nb\r\nc\r\n";
        assert_eq!(
            apply_edits(crlf, &[edit("a\nb", "x")]),
            Err(EditError::NotFound { index: 0 })
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
            Err(EditError::NotFound { index: 1 })
        );
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
                EditError::NotFound { index: 2 },
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
            Err(EditError::NotFound { index: 0 })
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
            let got = apply_edits(&text, &[edit(&old_text, &new_text)]);
            let hits: Vec<usize> = bounds
                .iter()
                .copied()
                .filter(|&i| text[i..].starts_with(old_text.as_str()))
                .collect();
            let expected = match hits.as_slice() {
                _ if old_text.is_empty() => Err(EditError::EmptyOldText { index: 0 }),
                [] => Err(EditError::NotFound { index: 0 }),
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
