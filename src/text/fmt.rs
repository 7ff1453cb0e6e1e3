//! Small text utilities shared by the output formats.
//!
//! Owns: cutting a string at a UTF-8 boundary, the one escaping of control
//! characters in printed names and paths ([`printable`], and
//! [`SafeJsonFormatter`] for JSON), the one escaping of what the operator's
//! commands show a person on a terminal ([`for_terminal`], and
//! [`SafeJsonFormatter::for_terminal`]), the `file://` URI encoding and decoding,
//! a byte-counting writer, and the notes that end a cut listing or walk.
//! May touch: nothing (no I/O).

use std::borrow::Cow;
use std::io;

/// The longest prefix of `s` of at most `max` bytes that ends on a
/// character boundary.
pub fn cut(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or_default()
}

/// Whether `c` is a control character tuls never prints raw: C0
/// (U+0000–U+001F), DEL (U+007F) and C1 (U+0080–U+009F), i.e. Unicode's
/// `Cc` category.
pub fn is_control(c: char) -> bool {
    c.is_control()
}

/// A file name or path as tuls prints it: every control character escaped,
/// so a name can neither forge a line (`\n`, `\r`) nor send a terminal
/// escape (ESC, C1 CSI) to the client.
///
/// `\n`, `\r` and `\t` become those two-character escapes; every other
/// control character becomes `\u{XX}` (lowercase hex, as Rust's
/// `escape_debug` writes it), e.g. ESC is `\u{1b}`. Nothing else changes
/// (a backslash stays a backslash), so a name without control characters
/// prints exactly as the reference prints it. The escaping is one-way: a
/// name that literally contains `\n` prints the same as one with a newline.
///
/// This is the one place names and paths are escaped for text output; every
/// tool that prints a name read from disk or a path it built goes through
/// it. A client's own string echoed back (in an error, a success message or
/// a `read_multiple_files` header) is left as the client sent it: it can
/// only forge text in the client's own reply.
pub fn printable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_control(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Whether `c`, though not a control character, changes how the text around
/// it shows on a person's screen: the bidi controls (U+061C, U+200E, U+200F,
/// U+202A–U+202E, U+2066–U+2069), which reorder a line so that `txt.exe`
/// reads as `exe.txt`, and the line and paragraph separators U+2028/U+2029.
pub fn is_bidi_or_separator(c: char) -> bool {
    matches!(
        c,
        '\u{061c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// Whether [`for_terminal`] escapes `c`.
fn is_unsafe_on_terminal(c: char) -> bool {
    is_control(c) || is_bidi_or_separator(c)
}

/// A string shown to a person by the operator's commands (`tuls journal
/// list`, `revert`): a file name or path the agent chose, a session id, a
/// message naming one. Nothing in it can act on the terminal: no forged
/// line (`\n`, `\r`, NEL), no escape sequence (ESC, C1 CSI/OSC: erase a
/// line, OSC 52 set the clipboard, OSC 8 plant a link), no bidi control
/// reordering what is shown.
///
/// `\n`, `\r` and `\t` become those two-character escapes, a backslash
/// becomes `\\`, every other ASCII control (C0, DEL) `\xHH` (ESC is `\x1b`)
/// and every other escaped character `\u{H}` (lowercase hex: C1 such as
/// `\u{9b}`, the bidi controls such as `\u{202e}`, U+2028/U+2029). Since the
/// backslash is escaped too, the escaping is unambiguous: `a\nb` (a
/// backslash and an `n`) shows as `a\\nb`, a newline as `a\nb`. Unlike
/// [`printable`] (what the agent reads, kept as the reference prints it),
/// this is for a person's terminal only; `--json` output keeps the exact
/// strings ([`SafeJsonFormatter::for_terminal`]).
pub fn for_terminal(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c == '\\' || is_unsafe_on_terminal(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_ascii_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if is_unsafe_on_terminal(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// serde_json's pretty formatter, except that DEL and C1 characters in
/// strings are written as `\u007f`-style escapes too (serde_json escapes
/// only C0). The JSON is the same value, so a parsed name is the name on
/// disk, exactly; the text holds no raw control character.
#[derive(Debug)]
pub struct SafeJsonFormatter<'a> {
    pretty: serde_json::ser::PrettyFormatter<'a>,
    escape: fn(char) -> bool,
}

impl Default for SafeJsonFormatter<'_> {
    fn default() -> Self {
        Self::pretty()
    }
}

impl SafeJsonFormatter<'_> {
    /// A formatter with serde_json's pretty layout (two-space indent).
    pub fn pretty() -> Self {
        Self {
            pretty: serde_json::ser::PrettyFormatter::new(),
            escape: is_control,
        }
    }

    /// [`SafeJsonFormatter::pretty`] that also writes the characters
    /// [`for_terminal`] escapes (bidi controls, U+2028/U+2029) as `\u202e`
    /// -style escapes: the JSON a person's command prints (`tuls journal
    /// list --json`), whose strings parse back exactly.
    pub fn for_terminal() -> Self {
        Self {
            pretty: serde_json::ser::PrettyFormatter::new(),
            escape: is_unsafe_on_terminal,
        }
    }
}

/// `v` as pretty JSON through [`SafeJsonFormatter::for_terminal`].
pub fn json_for_terminal(v: &impl serde::Serialize) -> serde_json::Result<String> {
    let mut buf = Vec::new();
    let mut ser =
        serde_json::Serializer::with_formatter(&mut buf, SafeJsonFormatter::for_terminal());
    v.serialize(&mut ser)?;
    // serde_json writes UTF-8 only.
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

impl serde_json::ser::Formatter for SafeJsonFormatter<'_> {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        // The common case: ASCII below DEL holds no character to escape.
        if fragment.bytes().all(|b| b < 0x7f) {
            return w.write_all(fragment.as_bytes());
        }
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if (self.escape)(c) {
                w.write_all(fragment.get(start..i).unwrap_or_default().as_bytes())?;
                write!(w, "\\u{:04x}", c as u32)?;
                start = i + c.len_utf8();
            }
        }
        w.write_all(fragment.get(start..).unwrap_or_default().as_bytes())
    }
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.pretty.begin_array(w)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.pretty.end_array(w)
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.pretty.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.pretty.end_array_value(w)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.pretty.begin_object(w)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.pretty.end_object(w)
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.pretty.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.pretty.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.pretty.end_object_value(w)
    }
}

/// Percent-encodes an absolute path as a `file://` URI, as Node's
/// `pathToFileURL` does.
pub fn file_uri(path: &str) -> String {
    let mut out = String::from("file://");
    for b in path.bytes() {
        match b {
            b'A'..=b'Z'
            | b'a'..=b'z'
            | b'0'..=b'9'
            | b'/'
            | b'-'
            | b'.'
            | b'_'
            | b'~'
            | b'!'
            | b'$'
            | b'&'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b'+'
            | b','
            | b';'
            | b'='
            | b':'
            | b'@' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Parses a `file://` URI into an absolute path (percent-decoded: a URI is
/// encoded by definition, unlike a tool's path argument). `None` for any
/// other scheme, a relative path, a bad escape or a path that is not UTF-8.
pub fn file_uri_path(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let s = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(s, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A writer that counts the bytes written through it.
#[derive(Debug)]
pub struct Counted<W> {
    /// Bytes written so far.
    pub count: u64,
    /// The writer counted.
    pub inner: W,
}

impl<W> Counted<W> {
    /// Counts what goes to `inner`.
    pub fn new(inner: W) -> Self {
        Self { count: 0, inner }
    }
}

impl<W: std::io::Write> std::io::Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.count += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Why a walk's result is incomplete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Truncation {
    /// The entry cap was reached.
    Entries(usize),
    /// Some directory lay deeper than the depth cap.
    Depth(usize),
    /// The reply reached its size limit, in bytes.
    Text(usize),
}

/// The note that ends a truncated walk (`directory_tree`, `search_files`),
/// after a blank line.
pub fn truncation_note(t: Truncation) -> String {
    match t {
        Truncation::Entries(n) => format!(
            "\n\n[truncated: stopped after {n} entries (--max-entries); narrow the path or add excludePatterns]"
        ),
        Truncation::Depth(n) => format!(
            "\n\n[truncated: directories deeper than {n} levels were not descended (--max-depth)]"
        ),
        Truncation::Text(n) => format!(
            "\n\n[truncated: the result reached the {n}-byte reply limit; narrow the path or add excludePatterns]"
        ),
    }
}

/// Appends `line` to `text` as a new line (no separator before the first).
pub fn push_line(text: &mut String, line: &str) {
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(line);
}

/// The line that ends a cut directory listing.
pub fn list_truncated_line(max: usize) -> String {
    format!("[truncated: only the first {max} entries are listed]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_on_char_boundaries() {
        assert_eq!(cut("héllo", 2), "h");
        assert_eq!(cut("héllo", 3), "hé");
        assert_eq!(cut("abc", 10), "abc");
        assert_eq!(cut("", 0), "");
    }

    #[test]
    fn uri_encoding() {
        assert_eq!(file_uri("/b/with space.txt"), "file:///b/with%20space.txt");
        assert_eq!(file_uri("/b/é#?%"), "file:///b/%C3%A9%23%3F%25");
        for p in ["/b/with space.txt", "/b/é#?%", "/a/b"] {
            assert_eq!(file_uri_path(&file_uri(p)).as_deref(), Some(p));
        }
    }

    #[test]
    fn file_uris() {
        assert_eq!(file_uri_path("file:///a%20b/c").as_deref(), Some("/a b/c"));
        assert_eq!(file_uri_path("file://localhost/a").as_deref(), Some("/a"));
        assert_eq!(file_uri_path("http://x/a"), None);
        assert_eq!(file_uri_path("file:///a%zz"), None);
        assert_eq!(file_uri_path("file:///a%2"), None);
    }

    #[test]
    fn control_characters_are_escaped_and_nothing_else() {
        assert!(matches!(printable("plain é \\ name"), Cow::Borrowed(_)));
        assert_eq!(printable("a\n[DIR] b"), "a\\n[DIR] b");
        assert_eq!(
            printable("\r\t\u{1b}[31m\u{7f}\u{9b}\u{0}"),
            "\\r\\t\\u{1b}[31m\\u{7f}\\u{9b}\\u{0}"
        );
        assert_eq!(printable("\u{a0}\u{200b}"), "\u{a0}\u{200b}"); // not Cc
    }

    #[test]
    fn for_terminal_escapes_controls_bidi_and_the_backslash_unambiguously() {
        assert!(matches!(for_terminal("plain é name"), Cow::Borrowed(_)));
        assert_eq!(for_terminal("a\nb"), "a\\nb");
        assert_eq!(for_terminal("a\\nb"), "a\\\\nb");
        assert_eq!(
            for_terminal("\r\t\u{1b}]52;c;x\u{7}\u{7f}\u{0}"),
            "\\r\\t\\x1b]52;c;x\\x07\\x7f\\x00"
        );
        assert_eq!(
            for_terminal("\u{9b}\u{85}\u{202e}\u{2066}\u{200e}\u{61c}\u{2028}"),
            "\\u{9b}\\u{85}\\u{202e}\\u{2066}\\u{200e}\\u{61c}\\u{2028}"
        );
        assert_eq!(for_terminal("\u{a0}\u{200b}"), "\u{a0}\u{200b}");
    }

    #[test]
    fn terminal_json_escapes_bidi_too_and_round_trips() {
        let name = "a\u{202e}b\u{2069}\u{9b}\u{7f}\n";
        let text = json_for_terminal(&vec![name]).unwrap();
        assert!(
            text.contains("\\u202e") && text.contains("\\u2069"),
            "{text}"
        );
        assert!(
            !text.chars().any(|c| c != '\n' && is_unsafe_on_terminal(c)),
            "{text:?}"
        );
        let back: Vec<String> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, [name]);
    }

    #[test]
    fn safe_json_escapes_del_and_c1_and_round_trips() {
        use serde::Serialize;
        let name = "a\n\u{1b}\u{7f}\u{9b}é\"";
        let mut buf = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut buf, SafeJsonFormatter::pretty());
        vec![name].serialize(&mut ser).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert!(
            !text.chars().any(|c| c != '\n' && is_control(c)),
            "{text:?}"
        );
        assert!(
            text.contains("\\u007f") && text.contains("\\u009b"),
            "{text}"
        );
        let back: Vec<String> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, [name]);
        let plain = serde_json::to_string_pretty(&vec!["x"]).unwrap();
        let mut buf = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut buf, SafeJsonFormatter::pretty());
        vec!["x"].serialize(&mut ser).unwrap();
        assert_eq!(String::from_utf8(buf).unwrap(), plain);
    }

    #[test]
    fn counts() {
        use std::io::Write;
        let mut c = Counted::new(std::io::sink());
        c.write_all(b"hello").unwrap();
        assert_eq!(c.count, 5);
    }
}
