//! Framing of JSON-RPC over stdio, pure and fuzzable: bounded lines
//! ([`LineReader`]), the top-level `id` of a line read without parsing it
//! ([`top_level_id`], [`raw_id`]), what parsing a line would cost
//! ([`parse_cost`]), and the error reply to a line that is not a message
//! tuls reads (`not_a_message`).
//! May touch: nothing (it reads only what it is given).

use rmcp::model::{ErrorData, RequestId};

use super::rpc_error;

/// How many bytes of an oversized line are kept to look for its id.
const ID_PREFIX: usize = 4096;

/// One line read by [`LineReader::next_line`].
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A complete line (without its `\n`).
    Complete(Vec<u8>),
    /// A line longer than the bound; only its first bytes are kept.
    Oversized(Vec<u8>),
}

/// Splits input into bounded lines.
pub struct LineReader<R> {
    reader: std::io::BufReader<R>,
    buf: Vec<u8>,
    oversized: bool,
    max: usize,
}

impl<R: std::io::Read> LineReader<R> {
    /// Reads lines from `reader`, keeping at most `max` bytes of each.
    pub fn new(reader: R, max: usize) -> Self {
        Self {
            reader: std::io::BufReader::with_capacity(64 * 1024, reader),
            buf: Vec::new(),
            oversized: false,
            max,
        }
    }

    /// The next line, or `None` at end of input.
    pub fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        use std::io::BufRead as _;
        loop {
            let avail = match self.reader.fill_buf() {
                Ok(avail) => avail,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail.is_empty() {
                if self.buf.is_empty() && !self.oversized {
                    return Ok(None);
                }
                return Ok(Some(self.take()));
            }
            let (chunk, used, done) = match avail.iter().position(|&b| b == b'\n') {
                Some(i) => (avail.get(..i).unwrap_or(&[]), i + 1, true),
                None => (avail, avail.len(), false),
            };
            if done && self.buf.is_empty() && !self.oversized && chunk.len() <= self.max {
                // The common case: the whole line is in the read buffer;
                // one allocation of its exact size.
                let line = chunk.to_vec();
                self.reader.consume(used);
                return Ok(Some(Line::Complete(line)));
            }
            if !self.oversized && self.buf.len() + chunk.len() > self.max {
                self.oversized = true;
                let keep = ID_PREFIX.saturating_sub(self.buf.len()).min(chunk.len());
                self.buf.extend_from_slice(chunk.get(..keep).unwrap_or(&[]));
            } else if !self.oversized {
                self.buf.extend_from_slice(chunk);
            }
            self.reader.consume(used);
            if done {
                return Ok(Some(self.take()));
            }
        }
    }

    fn take(&mut self) -> Line {
        let buf = std::mem::take(&mut self.buf);
        if std::mem::replace(&mut self.oversized, false) {
            Line::Oversized(buf)
        } else {
            Line::Complete(buf)
        }
    }
}

/// The `id` of a JSON-RPC request from the first bytes of its line: only a
/// key of the top-level object counts (an `"id"` inside the params is
/// skipped). `None` when no top-level id is seen in `prefix`, or it is not
/// a plain number or string.
pub fn top_level_id(prefix: &[u8]) -> Option<RequestId> {
    id_value(raw_id(prefix)?)
}

/// The text of the top-level `id` value of a JSON-RPC message from the
/// first bytes of its line (a string with its quotes, or the bytes of any
/// other value up to the next `,`, `}` or whitespace), or `None` when no
/// top-level `id` key is seen in `prefix`. Keeps no stack: any nesting
/// depth is scanned in constant memory.
pub fn raw_id(prefix: &[u8]) -> Option<&[u8]> {
    let mut depth = 0usize;
    let mut i = 0;
    let mut expect_key = false;
    while let Some(&b) = prefix.get(i) {
        match b {
            b'{' => {
                depth += 1;
                expect_key = depth == 1;
            }
            b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' => expect_key = depth == 1,
            b'"' => {
                let end = string_end(prefix, i)?;
                if depth == 1 && expect_key {
                    let key = prefix.get(i + 1..end)?;
                    let rest = prefix.get(end + 1..)?;
                    let rest = rest.trim_ascii_start().strip_prefix(b":")?;
                    if key == b"id" {
                        let v = rest.trim_ascii_start();
                        if v.first() == Some(&b'"') {
                            return v.get(..=string_end(v, 0)?);
                        }
                        let len = v
                            .iter()
                            .take_while(|c| {
                                !matches!(c, b',' | b'}' | b']') && !c.is_ascii_whitespace()
                            })
                            .count();
                        return v.get(..len);
                    }
                }
                expect_key = false;
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Whether `raw` (an id as [`raw_id`] reads it) is a number that tuls
/// would not echo as written: rmcp keeps an id as an `i64`, so `1e3`,
/// `1.0`, `-0` or `1E+2` would be answered as `1000`, `1`, `0` or `100`, an
/// id the client never sent. Such a request is refused at its id as written.
pub fn is_unechoable_id(raw: &[u8]) -> bool {
    if raw
        .first()
        .is_none_or(|b| !(b.is_ascii_digit() || *b == b'-'))
    {
        return false;
    }
    // Not a JSON number (`007`): the line is not JSON, a parse error.
    if serde_json::from_slice::<serde_json::Number>(raw).is_err() {
        return false;
    }
    let Ok(text) = std::str::from_utf8(raw) else {
        return false;
    };
    match text.parse::<i64>() {
        Ok(n) => n.to_string() != text,
        Err(_) => true,
    }
}

/// Heap bytes that parsing one JSON value of a message may take, beyond
/// its bytes: rmcp's message types are untagged, so serde first buffers the
/// whole message as its private content tree (a node per value, plus a
/// `Vec` per array and object), then builds `serde_json` values from it.
/// Measured through the binary: 194 bytes of RSS per value of a line of
/// `0,0,...`, 195 of `[],[],...` or `"","",...`.
pub const PARSE_BYTES_PER_VALUE: u64 = 256;

/// Heap bytes one JSON object may take on top of its values: a `serde_json`
/// map is a B-tree of nodes of eleven entries (measured: 1,384 bytes per
/// `{"a":0}`, three values).
pub const PARSE_BYTES_PER_OBJECT: u64 = 1024;

/// Heap bytes per byte of the line: the line itself, and its strings
/// copied into the content tree and again into values.
pub const PARSE_BYTES_PER_BYTE: u64 = 4;

/// What parsing `line` may take on the heap ([`PARSE_BYTES_PER_BYTE`] per
/// byte, [`PARSE_BYTES_PER_VALUE`] per JSON value and
/// [`PARSE_BYTES_PER_OBJECT`] per object), counted in one pass that keeps
/// no stack: a value starts at the line's start or after a `[`, `{`, `,`
/// or `:` outside a string.
pub fn parse_cost(line: &[u8]) -> u64 {
    let (mut values, mut objects): (u64, u64) = (1, 0);
    let mut i = 0;
    while let Some(&b) = line.get(i) {
        match b {
            b'{' => {
                values += 1;
                objects += 1;
            }
            b'[' | b',' | b':' => values += 1,
            b'"' => match string_end(line, i) {
                Some(end) => i = end,
                None => break,
            },
            _ => {}
        }
        i += 1;
    }
    (line.len() as u64)
        .saturating_mul(PARSE_BYTES_PER_BYTE)
        .saturating_add(values.saturating_mul(PARSE_BYTES_PER_VALUE))
        .saturating_add(objects.saturating_mul(PARSE_BYTES_PER_OBJECT))
}

/// The index of the quote that closes the string opening at `start`.
fn string_end(s: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while let Some(&b) = s.get(i) {
        match b {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// A number or a plain string id at the start of `s`.
fn id_value(s: &[u8]) -> Option<RequestId> {
    if s.first() == Some(&b'"') {
        let end = string_end(s, 0)?;
        let raw = s.get(..=end)?;
        let id: String = serde_json::from_slice(raw).ok()?;
        return Some(RequestId::String(id.into()));
    }
    let len = s
        .iter()
        .take_while(|c| c.is_ascii_digit() || **c == b'-')
        .count();
    let num = std::str::from_utf8(s.get(..len)?).ok()?;
    num.parse::<i64>().ok().map(RequestId::Number)
}

/// The error reply for a complete line that is not a JSON-RPC message
/// (JSON-RPC 2.0 §5), or `None` when no reply is due.
///
/// - Not JSON: `-32700 Parse error`, `id: null`.
/// - Nested past serde_json's depth limit: `-32600 Invalid Request`, at its
///   top-level `id` when the scanner reads one ([`top_level_id`]), else
///   `id: null`.
/// - JSON that is a notification or a response but not one tuls reads: no
///   reply (neither is ever answered); logged.
/// - Any other JSON (not an object, a batch, a request whose method or
///   params do not fit): `-32600 Invalid Request`, at its top-level `id`
///   when that is a number or a string, else `id: null`.
pub(crate) fn not_a_message(
    bytes: &[u8],
    e: &serde_json::Error,
) -> Option<(Option<RequestId>, ErrorData)> {
    use serde_json::error::Category;
    if is_too_deep(e) {
        // Valid JSON nested past serde_json's depth limit: answered at its
        // top-level id when one can be read (the scanner keeps no stack), so
        // a client waiting on that id is not left waiting.
        let id = top_level_id(bytes);
        tracing::warn!(error = %e, "a request line nests too deep; answered with an error");
        return Some((id, rpc_error::too_deep()));
    }
    if !matches!(e.classify(), Category::Data) {
        tracing::warn!(error = %e, "a request line is not valid JSON; answered with a parse error");
        return Some((None, rpc_error::parse_error(e)));
    }
    #[derive(serde::Deserialize)]
    struct Shape {
        #[serde(default)]
        id: Present,
        #[serde(default)]
        method: Option<serde::de::IgnoredAny>,
        #[serde(default)]
        result: Option<serde::de::IgnoredAny>,
        #[serde(default)]
        error: Option<serde::de::IgnoredAny>,
    }
    let invalid = |id| Some((id, rpc_error::not_a_message()));
    let is_object = bytes.trim_ascii_start().first() == Some(&b'{');
    let Some(shape) = is_object
        .then(|| serde_json::from_slice::<Shape>(bytes).ok())
        .flatten()
    else {
        tracing::warn!(error = %e, "a request line is not a JSON-RPC message; answered with an error");
        return invalid(None);
    };
    if shape.method.is_none() && (shape.result.is_some() || shape.error.is_some()) {
        tracing::warn!(error = %e, "skipping a response that is not one tuls reads");
        return None;
    }
    if shape.method.is_some() && shape.id.0 == Some(serde_json::Value::Null) {
        // `"id": null` is not a notification (that has no id): JSON-RPC
        // answers it as an invalid request, at `id: null`.
        tracing::warn!("a request has \"id\": null; answered with an error");
        return invalid(None);
    }
    if shape.method.is_some() && shape.id.0.is_none() {
        tracing::warn!(error = %e, "skipping a notification that is not one tuls reads");
        return None;
    }
    tracing::warn!(error = %e, "a request line is not a JSON-RPC request tuls accepts; answered with an error");
    let id = match shape.id.0 {
        Some(serde_json::Value::Number(n)) => n.as_i64().map(RequestId::Number),
        Some(serde_json::Value::String(s)) => Some(RequestId::String(s.into())),
        _ => None,
    };
    invalid(id)
}

/// A key's value when the key is there (`null` included), `None` when it
/// is not: `Option<Value>` reads `null` and absence alike.
#[derive(Default)]
struct Present(Option<serde_json::Value>);

impl<'de> serde::Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde_json::Value::deserialize(d).map(|v| Present(Some(v)))
    }
}

/// Whether `e` is serde_json's depth limit (128 levels), which it reports
/// as a syntax error though the JSON may be valid.
fn is_too_deep(e: &serde_json::Error) -> bool {
    e.to_string().starts_with("recursion limit exceeded")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        let id = |s: &[u8]| top_level_id(s);
        assert_eq!(
            id(br#"{"jsonrpc":"2.0","id":42,"method":"x"#),
            Some(RequestId::Number(42))
        );
        assert_eq!(
            id(br#"{"id": "ab-1", "#),
            Some(RequestId::String("ab-1".into()))
        );
        assert_eq!(id(br#"{"method":"x""#), None);
        assert_eq!(
            id(br#"{"id":"a\"b"}"#),
            Some(RequestId::String("a\"b".into()))
        );
        // An "id" inside the params is not the request's id.
        assert_eq!(
            id(br#"{"jsonrpc":"2.0","params":{"id":7,"x":["id"]},"id":9}"#),
            Some(RequestId::Number(9))
        );
        assert_eq!(
            id(br#"{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"id":7,"#),
            None
        );
        assert_eq!(id(br#"{"method":"id","id":3}"#), Some(RequestId::Number(3)));
        assert_eq!(id(br#"{"a":"x\\","id":5}"#), Some(RequestId::Number(5)));
    }

    fn lines(input: &[u8], max: usize) -> Vec<Line> {
        let mut r = LineReader::new(input, max);
        let mut out = Vec::new();
        while let Some(l) = r.next_line().unwrap() {
            out.push(l);
        }
        out
    }

    #[test]
    fn bounds_at_and_past_the_limit() {
        let got = lines(b"0123456789\n01234567890\nab", 10);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], Line::Complete(b"0123456789".to_vec()));
        assert!(matches!(got[1], Line::Oversized(_)));
        assert_eq!(got[2], Line::Complete(b"ab".to_vec()));
    }

    #[test]
    fn oversized_keeps_only_a_prefix() {
        let mut input = vec![b'x'; 100_000];
        input.push(b'\n');
        let got = lines(&input, 10);
        let Line::Oversized(prefix) = &got[0] else {
            panic!("{got:?}")
        };
        assert!(prefix.len() <= ID_PREFIX);
    }

    #[test]
    fn a_line_split_across_reads_is_whole() {
        // A reader that gives one byte per read.
        struct Trickle<'a>(&'a [u8]);
        impl std::io::Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let Some((first, rest)) = self.0.split_first() else {
                    return Ok(0);
                };
                buf[0] = *first;
                self.0 = rest;
                Ok(1)
            }
        }
        let mut r = LineReader::new(Trickle(b"{\"a\":1}\n{\"b\":2}\n"), 100);
        assert_eq!(
            r.next_line().unwrap(),
            Some(Line::Complete(b"{\"a\":1}".to_vec()))
        );
        assert_eq!(
            r.next_line().unwrap(),
            Some(Line::Complete(b"{\"b\":2}".to_vec()))
        );
        assert_eq!(r.next_line().unwrap(), None);
    }

    #[test]
    fn raw_ids_and_which_cannot_be_echoed() {
        assert_eq!(raw_id(br#"{"id":1e3,"method":"x"}"#), Some(&b"1e3"[..]));
        assert_eq!(
            raw_id(br#"{"params":{"id":1},"id" : "a,b"}"#),
            Some(&br#""a,b""#[..])
        );
        assert_eq!(raw_id(br#"{"id":null}"#), Some(&b"null"[..]));
        for bad in ["1e3", "1.0", "-0", "1E+2", "12345678901234567890"] {
            assert!(is_unechoable_id(bad.as_bytes()), "{bad}");
        }
        for good in [
            "0",
            "7",
            "-3",
            "9223372036854775807",
            "\"s\"",
            "null",
            "007",
        ] {
            assert!(!is_unechoable_id(good.as_bytes()), "{good}");
        }
    }

    #[test]
    fn parse_cost_counts_values_and_objects_outside_strings() {
        let per =
            |line: &str| parse_cost(line.as_bytes()) - line.len() as u64 * PARSE_BYTES_PER_BYTE;
        assert_eq!(per("0"), PARSE_BYTES_PER_VALUE);
        assert_eq!(per("[0,0]"), 3 * PARSE_BYTES_PER_VALUE);
        assert_eq!(
            per(r#"{"a":0}"#),
            3 * PARSE_BYTES_PER_VALUE + PARSE_BYTES_PER_OBJECT
        );
        // Structural bytes inside strings are not values.
        assert_eq!(per(r#""[,{:\"]""#), PARSE_BYTES_PER_VALUE);
    }
}
