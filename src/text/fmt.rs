//! Small text utilities shared by the output formats.
//!
//! Owns: cutting a string at a UTF-8 boundary, the `file://` URI encoding
//! and decoding, a byte-counting writer, and the notes that end a cut
//! listing or walk.
//! May touch: nothing (no I/O).

/// The longest prefix of `s` of at most `max` bytes that ends on a
/// character boundary.
pub fn cut(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or_default()
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
    fn counts() {
        use std::io::Write;
        let mut c = Counted::new(std::io::sink());
        c.write_all(b"hello").unwrap();
        assert_eq!(c.count, 5);
    }
}
