//! Cursors: where a paged walk goes on, as an opaque token the client sends
//! back.
//!
//! Owns: encoding a walk position ([`Cursor`]: the path, relative to the
//! walk's start, of the next entry to visit, raw bytes split at `/`, and how
//! many matches of that entry were already given) into a bounded base64url
//! token sealed by a MAC, and checking a token on its way back. The MAC is
//! blake3 keyed with 32 random bytes drawn once per process, over what the
//! cursor is bound to ([`Binding`]: the tool, the root, the resolved start
//! directory and every other argument of the call), so a cursor works only
//! in the server process that issued it, for the same tool, root, path and
//! arguments. A cursor is never a path that bypasses the resolver: the
//! caller resolves `path` again and the walk re-enters the position one
//! entry name at a time beneath the start, `O_NOFOLLOW`, under the path
//! rules (see [`crate::fs::walk::paged`]); a forged position could only name
//! what the walk itself reaches, and the MAC keeps it from being forged.
//!
//! Also here: [`LineCursor`], where a read of one line longer than a reply
//! goes on (`read_text_file`): a byte offset in the file, sealed and bound
//! the same way. The continuation reads from that offset through the same
//! resolver and handle as any read; the MAC keeps the offset one tuls gave.
//! May touch: the process's randomness, once.

use std::sync::OnceLock;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::error::{Error, Result};
use crate::limits::{MAX_CURSOR_CHARS, MAX_WALK_DEPTH_CEILING};
pub use crate::text::budget::cursor_room as token_room;

/// Bytes of MAC a cursor carries.
const MAC_BYTES: usize = 16;

/// The cursor format's version (its first byte).
const VERSION: u8 = 1;

/// Flag: a directory deeper than the depth cap was skipped on an earlier
/// page (so the last page can say so).
pub const FLAG_DEPTH_CUT: u8 = 1;

/// Flag: the walk goes on right after the entry named (its children first,
/// if it is a directory the walk enters), not at it: a page whose next
/// entry does not fit a reply on its own skips it this way.
pub const FLAG_AFTER: u8 = 2;

/// The format's version of a [`LineCursor`] (its first byte): never a walk
/// cursor's.
const LINE_VERSION: u8 = 0x4c;

/// Where the rest of a line too long for one reply starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LineCursor {
    /// A byte offset in the file where decoding starts: the start of the
    /// line, or of a piece of it already given.
    pub at: u64,
    /// Characters after `at` (decoded as the reply decodes them) already
    /// given: at most one reply's worth.
    pub skip: u64,
    /// The line's number (0 when the call does not number lines: `tail`).
    pub line: u64,
    /// For `tail`: the lines after this one (what `tail` gives the rest).
    pub after: u64,
}

impl LineCursor {
    /// The token for this position, bound to `bind`.
    pub fn encode(&self, bind: &Binding) -> Result<String> {
        let mut payload = Vec::with_capacity(48);
        payload.push(LINE_VERSION);
        for v in [self.at, self.skip, self.line, self.after] {
            put_varint(&mut payload, v);
        }
        let tag = mac(key()?, bind, &payload);
        payload.extend_from_slice(&tag);
        Ok(URL_SAFE_NO_PAD.encode(payload))
    }

    /// The position a token names, if it was issued by this process for
    /// `bind`.
    pub fn decode(token: &str, bind: &Binding) -> Result<Self> {
        let payload = unseal(token, bind)?;
        let bad = || Error::InvalidCursor {
            reason: "it is not a cursor tuls gave",
        };
        let Some((&LINE_VERSION, mut rest)) = payload.split_first() else {
            return Err(bad());
        };
        let mut v = [0u64; 4];
        for slot in &mut v {
            let (n, used) = get_varint(rest).ok_or_else(bad)?;
            *slot = n;
            rest = rest.get(used..).unwrap_or_default();
        }
        if !rest.is_empty() {
            return Err(bad());
        }
        let [at, skip, line, after] = v;
        Ok(Self {
            at,
            skip,
            line,
            after,
        })
    }
}

/// The payload of a token sealed for `bind`: refused when it is not one
/// this process gave for it.
fn unseal(token: &str, bind: &Binding) -> Result<Vec<u8>> {
    let bad = |reason: &'static str| Error::InvalidCursor { reason };
    if token.len() > MAX_CURSOR_CHARS {
        return Err(bad("it is longer than any cursor tuls gives"));
    }
    let mut bytes = URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| bad("it is not a cursor tuls gave"))?;
    let Some(split) = bytes.len().checked_sub(MAC_BYTES) else {
        return Err(bad("it is not a cursor tuls gave"));
    };
    let tag = bytes.split_off(split);
    let want = mac(key()?, bind, &bytes);
    // Not a secret compared in a loop an attacker can time finely, but
    // compare in constant time anyway.
    let diff = want.iter().zip(&tag).fold(0u8, |d, (a, b)| d | (a ^ b));
    if diff != 0 {
        return Err(bad(
            "it was not given by this server process for this tool, path and these arguments",
        ));
    }
    Ok(bytes)
}

/// A walk position.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Cursor {
    /// The next entry to visit, relative to the walk's start (`/`-joined
    /// raw names); the walk resumes at the first entry at or after it in
    /// pre-order (names in byte order).
    pub rel: Vec<u8>,
    /// Matches of that entry already given (a content search cut inside a
    /// file); 0 for the directory walks.
    pub skip: u64,
    /// [`FLAG_DEPTH_CUT`] and future flags.
    pub flags: u8,
}

/// What a cursor is bound to: every part must be the same when it comes
/// back.
#[derive(Debug)]
pub struct Binding {
    bytes: Vec<u8>,
}

impl Binding {
    /// A binding to the tool `tool`, the root `root` (its display spelling),
    /// the start directory `start` beneath it, and the call's other
    /// arguments `args` (as the tool spells them, without the cursor).
    pub fn new(tool: &str, root: &str, start: &str, args: &str) -> Self {
        let mut bytes = Vec::with_capacity(tool.len() + root.len() + start.len() + args.len() + 32);
        for part in [tool, root, start, args] {
            bytes.extend_from_slice(&(part.len() as u64).to_le_bytes());
            bytes.extend_from_slice(part.as_bytes());
        }
        Self { bytes }
    }
}

/// The per-process MAC key.
fn key() -> Result<&'static [u8; 32]> {
    static KEY: OnceLock<Option<[u8; 32]>> = OnceLock::new();
    KEY.get_or_init(|| {
        let mut k = [0u8; 32];
        getrandom::fill(&mut k).ok().map(|()| k)
    })
    .as_ref()
    .ok_or_else(|| Error::Internal("Cannot make a cursor: no randomness for its key".to_owned()))
}

fn mac(key: &[u8; 32], bind: &Binding, payload: &[u8]) -> [u8; MAC_BYTES] {
    let mut h = blake3::Hasher::new_keyed(key);
    h.update(b"tuls cursor v1\0");
    h.update(&(bind.bytes.len() as u64).to_le_bytes());
    h.update(&bind.bytes);
    h.update(payload);
    let mut out = [0u8; MAC_BYTES];
    out.copy_from_slice(
        h.finalize()
            .as_bytes()
            .get(..MAC_BYTES)
            .unwrap_or(&[0; MAC_BYTES]),
    );
    out
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn get_varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, b) in bytes.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// The characters of the cursor token for a position of `rel_len` path
/// bytes (with a skip below 2^28): what a reply must keep room for.
pub fn token_chars(rel_len: usize) -> usize {
    (2 + 4 + rel_len + MAC_BYTES).div_ceil(3) * 4
}

impl Cursor {
    /// Whether this position fits a token of at most `room` characters.
    pub fn fits(&self, room: usize) -> bool {
        token_chars(self.rel.len()) <= room
    }

    /// The token for this position, bound to `bind`.
    pub fn encode(&self, bind: &Binding) -> Result<String> {
        let mut payload = Vec::with_capacity(self.rel.len() + 16 + MAC_BYTES);
        payload.push(VERSION);
        payload.push(self.flags);
        put_varint(&mut payload, self.skip);
        payload.extend_from_slice(&self.rel);
        let tag = mac(key()?, bind, &payload);
        payload.extend_from_slice(&tag);
        Ok(URL_SAFE_NO_PAD.encode(payload))
    }

    /// The position a token names, if it was issued by this process for
    /// `bind`. The position's names are checked too (none empty, `.`, `..`
    /// or holding NUL; at most [`MAX_WALK_DEPTH_CEILING`] of them), though
    /// the MAC already vouches for them.
    pub fn decode(token: &str, bind: &Binding) -> Result<Self> {
        let bad = |reason: &'static str| Error::InvalidCursor { reason };
        let payload = unseal(token, bind)?;
        let [version, flags, rest @ ..] = payload.as_slice() else {
            return Err(bad("it is not a cursor tuls gave"));
        };
        if *version != VERSION {
            return Err(bad("it is from another version of tuls"));
        }
        let (skip, n) = get_varint(rest).ok_or_else(|| bad("it is not a cursor tuls gave"))?;
        let rel = rest.get(n..).unwrap_or_default().to_vec();
        let comps = rel.split(|&b| b == b'/');
        let mut depth = 0usize;
        for c in comps {
            depth += 1;
            if c.is_empty() || c == b"." || c == b".." || c.contains(&0) {
                return Err(bad("it names no entry"));
            }
        }
        if depth > MAX_WALK_DEPTH_CEILING {
            return Err(bad("it lies deeper than any walk goes"));
        }
        Ok(Self {
            rel,
            skip,
            flags: *flags,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bind(args: &str) -> Binding {
        Binding::new("search_files", "/r", "sub", args)
    }

    #[test]
    fn a_cursor_comes_back_as_it_went() {
        let c = Cursor {
            rel: b"a/b\xff/c".to_vec(),
            skip: 300,
            flags: FLAG_DEPTH_CUT,
        };
        let t = c.encode(&bind("x")).unwrap();
        assert!(t.len() <= token_chars(c.rel.len()), "{t}");
        assert_eq!(Cursor::decode(&t, &bind("x")).unwrap(), c);
    }

    #[test]
    fn a_cursor_is_bound_and_sealed() {
        let c = Cursor {
            rel: b"a/b".to_vec(),
            ..Cursor::default()
        };
        let t = c.encode(&bind("x")).unwrap();
        for other in [
            Binding::new("directory_tree", "/r", "sub", "x"),
            Binding::new("search_files", "/s", "sub", "x"),
            Binding::new("search_files", "/r", "sub/a", "x"),
            bind("y"),
        ] {
            assert!(Cursor::decode(&t, &other).is_err());
        }
        // Any flipped bit is refused.
        let raw = URL_SAFE_NO_PAD.decode(&t).unwrap();
        for i in 0..raw.len() {
            let mut r = raw.clone();
            r[i] ^= 1;
            assert!(Cursor::decode(&URL_SAFE_NO_PAD.encode(&r), &bind("x")).is_err());
        }
        for junk in ["", "!!", "AAAA", &"A".repeat(MAX_CURSOR_CHARS + 4)] {
            assert!(Cursor::decode(junk, &bind("x")).is_err());
        }
    }

    #[test]
    fn a_line_cursor_comes_back_as_it_went_and_is_no_walk_cursor() {
        let c = LineCursor {
            at: 1 << 40,
            skip: 62_100,
            line: 7,
            after: 0,
        };
        let t = c.encode(&bind("x")).unwrap();
        assert_eq!(LineCursor::decode(&t, &bind("x")).unwrap(), c);
        assert!(LineCursor::decode(&t, &bind("y")).is_err());
        assert!(Cursor::decode(&t, &bind("x")).is_err());
        let w = Cursor {
            rel: b"a".to_vec(),
            ..Cursor::default()
        };
        assert!(LineCursor::decode(&w.encode(&bind("x")).unwrap(), &bind("x")).is_err());
    }

    #[test]
    fn a_position_that_names_no_entry_is_refused_even_when_sealed() {
        for rel in [&b"../x"[..], b"a//b", b"/a", b"a/.", b"a\0b"] {
            let c = Cursor {
                rel: rel.to_vec(),
                ..Cursor::default()
            };
            let t = c.encode(&bind("x")).unwrap();
            assert!(Cursor::decode(&t, &bind("x")).is_err(), "{rel:?}");
        }
    }
}
