//! How a search prints one line: its text, and its `path:line:text` (or
//! `path-line-text`) entry.
//! May touch: nothing (no I/O).

use crate::limits::MAX_SEARCH_LINE_BYTES;
use crate::text::fmt::cut;

/// One line of a file's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Its 1-based number.
    pub number: u64,
    /// Its text as printed ([`line_text`]).
    pub text: String,
    /// A matching line (else a context line).
    pub is_match: bool,
}

/// A line's text as a search prints it: without its line terminator,
/// invalid UTF-8 as U+FFFD, cut at [`MAX_SEARCH_LINE_BYTES`] with a marker,
/// and every control character (C0 but the tab, DEL, C1) and U+2028/U+2029
/// escaped as names are ([`crate::text::fmt::printable`]'s escapes). A line holding `\r` or NEL could
/// otherwise print a second, forged `path:line:text` entry in a renderer
/// that breaks lines there, and ESC sequences would reach a terminal. The
/// tab stays raw: it breaks no line, and source code is full of it.
pub fn line_text(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let text = if bytes.len() <= MAX_SEARCH_LINE_BYTES {
        String::from_utf8_lossy(bytes)
    } else {
        let head = bytes.get(..MAX_SEARCH_LINE_BYTES + 3).unwrap_or(bytes);
        let head = String::from_utf8_lossy(head);
        let kept = cut(&head, MAX_SEARCH_LINE_BYTES);
        std::borrow::Cow::Owned(format!(
            "{kept} [... line cut at {MAX_SEARCH_LINE_BYTES} of {} bytes]",
            bytes.len()
        ))
    };
    if !text.chars().any(needs_escape) {
        return text.into_owned();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if needs_escape(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\t') || c == '\u{2028}' || c == '\u{2029}'
}

pub(super) fn push_line(out: &mut String, shown: &str, l: &Line) {
    let sep = if l.is_match { ':' } else { '-' };
    out.push_str(shown);
    out.push(sep);
    out.push_str(&l.number.to_string());
    out.push(sep);
    out.push_str(&l.text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_cut_at_a_char_boundary() {
        assert_eq!(line_text(b"abc\n"), "abc");
        let long = "é".repeat(400);
        let p = line_text(long.as_bytes());
        assert!(p.ends_with(" [... line cut at 500 of 800 bytes]"), "{p}");
        assert!(p.starts_with(&"é".repeat(250)));
        assert_eq!(line_text(b"\xff ok"), "\u{fffd} ok");
    }

    #[test]
    fn line_text_cannot_forge_an_entry_or_reach_a_terminal() {
        assert_eq!(line_text(b"a\r\n"), "a\\r");
        assert_eq!(
            line_text(b"hello needle\r./id_rsa:1:KEY"),
            "hello needle\\r./id_rsa:1:KEY"
        );
        assert_eq!(line_text(b"x\x1b[2K\x1b[1Ay"), "x\\u{1b}[2K\\u{1b}[1Ay");
        assert_eq!(line_text("a\u{85}b".as_bytes()), "a\\u{85}b");
        assert_eq!(
            line_text("a\u{2028}b\u{2029}".as_bytes()),
            "a\\u{2028}b\\u{2029}"
        );
        assert_eq!(line_text(b"a\x7fb"), "a\\u{7f}b");
        // Tabs stay, wherever they are.
        assert_eq!(line_text(b"\tx\t\x01\t"), "\tx\t\\u{1}\t");
        assert_eq!(line_text(b"\t\t"), "\t\t");
    }
}
