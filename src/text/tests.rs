//! The in-process tier for pure formatting: reply texts that this layer
//! builds and that were checked only through the binary (`tests/suite/`),
//! pinned here byte for byte, where a failure names the function. Kept
//! small: a text that a tool assembles from these belongs in the suite.

use super::budget::{append_notice, cursor_room};
use super::edit::{Edit, EditError, Hint, apply_edits, near_miss};
use super::fmt::{Truncation, list_truncated_line, push_line, truncation_note};
use crate::limits::MAX_CURSOR_CHARS;

#[test]
fn truncation_notes_name_their_flag_after_a_blank_line() {
    assert_eq!(
        truncation_note(Truncation::Entries(7)),
        "\n\n[truncated: stopped after 7 entries (--max-entries); narrow the path or add excludePatterns]"
    );
    assert_eq!(
        truncation_note(Truncation::Depth(3)),
        "\n\n[truncated: directories deeper than 3 levels were not descended (--max-depth)]"
    );
    assert_eq!(
        truncation_note(Truncation::Text(4096)),
        "\n\n[truncated: the result reached the 4096-byte reply limit; narrow the path or add excludePatterns]"
    );
    assert_eq!(
        list_truncated_line(2),
        "[truncated: only the first 2 entries are listed]"
    );
}

#[test]
fn lines_and_notices_join_without_a_leading_separator() {
    let mut text = String::new();
    push_line(&mut text, "a");
    push_line(&mut text, "");
    push_line(&mut text, "b");
    assert_eq!(text, "a\n\nb");

    let mut alone = String::new();
    append_notice(&mut alone, "[n]");
    assert_eq!(alone, "[n]");
    let mut after = "x".to_owned();
    append_notice(&mut after, "[n]");
    assert_eq!(after, "x\n\n[n]");
}

#[test]
fn a_cursor_keeps_a_quarter_of_a_small_budget_at_most() {
    assert_eq!(cursor_room(0), MAX_CURSOR_CHARS);
    assert_eq!(cursor_room(400), 100);
    assert_eq!(cursor_room(usize::MAX), MAX_CURSOR_CHARS);
}

#[test]
fn a_near_miss_says_which_difference_it_is() {
    let crlf = "a\r\nb\r\n";
    assert_eq!(near_miss(crlf, "a\nb"), Some(Hint::FileUsesCrlf));
    assert_eq!(near_miss("a\nb\n", "a\r\nb"), Some(Hint::FileUsesLf));
    let text = "one\ntwo  \nthree\n";
    assert_eq!(
        near_miss(text, "two\nthree"),
        Some(Hint::TrailingWhitespace { line: 2 })
    );
    assert_eq!(
        near_miss("x\n    two\n    three\n", "two\nthree"),
        Some(Hint::Indentation { line: 2 })
    );
    assert_eq!(near_miss(text, "four"), None);
}

/// The whole refusal text an edit gets, hint included, as `edit_file`
/// sends it after the path.
#[test]
fn a_missing_old_text_is_refused_with_its_hint() {
    let edits = [Edit {
        old_text: "a\nb",
        new_text: "c",
    }];
    let err = apply_edits("a\r\nb\r\n", &edits).expect_err("no exact match");
    assert!(matches!(err, EditError::NotFound { index: 0, .. }));
    assert_eq!(
        err.to_string(),
        "edit 0: oldText not found (0 matches). Matching is exact: whitespace, indentation and line endings (\\n vs \\r\\n) must match the file as it stands after the earlier edits. The file uses \\r\\n (CRLF) line endings and oldText uses \\n: it would match with \\r\\n. Send oldText (and newText) with the file's line endings, \\r\\n"
    );
    let plain = apply_edits(
        "xyz",
        &[Edit {
            old_text: "q",
            new_text: "r",
        }],
    )
    .expect_err("no match at all");
    assert!(
        plain.to_string().ends_with("after the earlier edits"),
        "{plain}"
    );
}
