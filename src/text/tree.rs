//! How a directory tree renders: the reference's pretty JSON of
//! `{name, type, children}` nodes, exactly as serde_json writes it with
//! [`SafeJsonFormatter`] (every control character escaped), but written
//! directly, node by node, into a string or a count of its bytes
//! ([`Sink`]), or a directory at a time with a slot for each
//! subdirectory's array ([`Rendered`]).
//! May touch: nothing.

use serde::Serialize;

use crate::text::fmt::{SafeJsonFormatter, is_control};

/// Where rendered JSON goes: a string, or a count of its bytes.
pub trait Sink {
    /// Takes the next piece of the rendering.
    fn put(&mut self, s: &str);
}

impl Sink for String {
    fn put(&mut self, s: &str) {
        self.push_str(s);
    }
}

/// Counts the bytes put to it.
pub struct Count(pub usize);

impl Sink for Count {
    fn put(&mut self, s: &str) {
        self.0 += s.len();
    }
}

const SPACES: &str = "                                                                ";

/// `levels` levels of two-space indentation.
fn indent(out: &mut impl Sink, levels: usize) {
    let mut n = 2 * levels;
    while n > 0 {
        let k = n.min(SPACES.len());
        out.put(SPACES.get(..k).unwrap_or_default());
        n -= k;
    }
}

/// Whether `name` is printable ASCII with nothing to escape in JSON (the
/// common case: such a name is written as it is).
pub fn is_plain(name: &str) -> bool {
    name.bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
}

/// `name` as a JSON string, as serde_json with [`SafeJsonFormatter`]
/// writes it: `"`, `\` and C0 as serde_json escapes them, DEL and C1 as
/// `\u00XX` too, so the text holds no raw control character.
fn put_name(out: &mut impl Sink, name: &str) {
    out.put("\"");
    if is_plain(name) {
        out.put(name);
    } else {
        let mut buf = [0u8; 4];
        for c in name.chars() {
            match c {
                '"' => out.put("\\\""),
                '\\' => out.put("\\\\"),
                '\n' => out.put("\\n"),
                '\r' => out.put("\\r"),
                '\t' => out.put("\\t"),
                '\u{8}' => out.put("\\b"),
                '\u{c}' => out.put("\\f"),
                c if is_control(c) => out.put(&format!("\\u{:04x}", c as u32)),
                c => out.put(c.encode_utf8(&mut buf)),
            }
        }
    }
    out.put("\"");
}

/// Everything of a node named `name` of type `kind` (at `depth`, the
/// first of its array or not) before its children's array, or before its end if it has none.
/// Entries at `depth` sit at indentation level `2 * depth - 1`, their keys
/// one deeper: serde_json's pretty layout of the reference's nodes.
pub fn open_node(
    out: &mut impl Sink,
    name: &str,
    kind: &str,
    is_dir: bool,
    depth: usize,
    first: bool,
) {
    out.put(if first { "\n" } else { ",\n" });
    indent(out, 2 * depth - 1);
    out.put("{\n");
    indent(out, 2 * depth);
    out.put("\"name\": ");
    put_name(out, name);
    out.put(",\n");
    indent(out, 2 * depth);
    out.put("\"type\": \"");
    out.put(kind);
    out.put("\"");
    if is_dir {
        out.put(",\n");
        indent(out, 2 * depth);
        out.put("\"children\": ");
    }
}

/// The end of a node at `depth`.
pub fn close_node(out: &mut impl Sink, depth: usize) {
    out.put("\n");
    indent(out, 2 * depth - 1);
    out.put("}");
}

/// The end of a non-empty array of nodes at `depth`.
pub fn close_array(out: &mut impl Sink, depth: usize) {
    out.put("\n");
    indent(out, 2 * depth - 2);
    out.put("]");
}

/// Writes `v` as pretty JSON whose strings escape every control character
/// (serde_json escapes C0; [`SafeJsonFormatter`] adds DEL and C1), so names
/// stay exact JSON strings and no raw control character reaches the client.
fn pretty_to<W: std::io::Write>(w: W, v: &impl Serialize) -> serde_json::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(w, SafeJsonFormatter::pretty());
    v.serialize(&mut ser)
}

/// `pretty_to` into a string.
pub fn pretty_string(v: &impl Serialize) -> serde_json::Result<String> {
    let mut buf = Vec::new();
    pretty_to(&mut buf, v)?;
    // serde_json writes UTF-8 only.
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The most a directory's rendering reserves up front (it grows past it).
const RESERVE_MAX_BYTES: usize = 64 << 10;

/// A directory's children array when it was not descended into.
const EMPTY_ARRAY: &str = "[]";

/// One directory's entries rendered as their pretty JSON array, with a
/// slot for each subdirectory's array (`None`: `[]`), to be put at its
/// offset in `text` (offsets in order).
#[derive(Debug, Default)]
pub struct Rendered {
    text: String,
    subs: Vec<(usize, Option<Rendered>)>,
    /// The bytes of the whole rendering, subdirectories included.
    len: usize,
}

impl Rendered {
    /// An empty directory's rendering, reserving `guess` bytes (at most
    /// `RESERVE_MAX_BYTES`).
    pub fn new(guess: usize) -> Self {
        Self {
            text: String::with_capacity(guess.min(RESERVE_MAX_BYTES)),
            subs: Vec::new(),
            len: 0,
        }
    }

    /// Adds a node at `depth`; returns the slot that [`Rendered::fill`] is
    /// given with a directory's own rendering (a directory left unfilled
    /// has `[]` children).
    pub fn add(&mut self, name: &str, kind: &str, is_dir: bool, depth: usize) -> usize {
        let first = self.text.is_empty();
        if first {
            self.text.push('[');
        }
        open_node(&mut self.text, name, kind, is_dir, depth, first);
        let slot = self.subs.len();
        if is_dir {
            self.subs.push((self.text.len(), None));
        }
        close_node(&mut self.text, depth);
        slot
    }

    /// Ends the directory's own nodes (at `depth`).
    pub fn end(&mut self, depth: usize) {
        if self.text.is_empty() {
            self.text.push_str("[]");
        } else {
            close_array(&mut self.text, depth);
        }
        self.len = self.text.len() + EMPTY_ARRAY.len() * self.subs.len();
    }

    /// Puts `sub`, the rendering of the directory added at `slot`.
    pub fn fill(&mut self, slot: usize, sub: Rendered) {
        if let Some((_, place)) = self.subs.get_mut(slot) {
            self.len = self.len - EMPTY_ARRAY.len() + sub.len;
            *place = Some(sub);
        }
    }

    /// The bytes of the whole rendering, subdirectories included.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the rendering is empty (not yet ended).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The whole text, followed by `tail`.
    pub fn join(&self, tail: &str) -> String {
        let mut out = String::with_capacity(self.len + tail.len());
        self.write_to(&mut out);
        out.push_str(tail);
        out
    }

    fn write_to(&self, out: &mut String) {
        let mut at = 0;
        for (offset, sub) in &self.subs {
            out.push_str(self.text.get(at..*offset).unwrap_or_default());
            match sub {
                Some(sub) => sub.write_to(out),
                None => out.push_str(EMPTY_ARRAY),
            }
            at = *offset;
        }
        out.push_str(self.text.get(at..).unwrap_or_default());
    }
}
