//! JSON string escaping, once per reply.
//!
//! Owns: writing a `&str` as a JSON string literal, byte-identical to
//! `serde_json`'s output (`"` `\\` `\n` `\r` `\t` `\u{8}` `\u{c}` get
//! two-character escapes, other control characters `\u00XX` with lowercase
//! hex, everything else verbatim), eight bytes at a time: a word with no
//! byte to escape (the common case in text) is copied without looking at
//! its bytes one by one.
//! May touch: nothing (no I/O).

/// Appends `s` to `out` as a quoted JSON string.
pub fn escape_into(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    escape_body_into(out, s);
    out.push(b'"');
}

/// Appends `s` to `out` escaped as inside a JSON string, without the
/// quotes (a text escaped piece by piece gives the same bytes as whole).
pub fn escape_body_into(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len());
    let mut start = 0; // first byte not yet copied
    let mut i = 0;
    while i < bytes.len() {
        // Skip whole words that need no escape, two at a time, then land
        // on the first byte that does (the lowest flagged byte of a word
        // is exact: see `escape_mask`).
        while let Some(chunk) = bytes.get(i..i + 16) {
            let (a, b) = chunk.split_at(8);
            let (ma, mb) = (escape_mask(word(a)), escape_mask(word(b)));
            if ma | mb == 0 {
                i += 16;
                continue;
            }
            i += if ma != 0 {
                first_flagged(ma)
            } else {
                8 + first_flagged(mb)
            };
            break;
        }
        if bytes.len() - i < 16 {
            // The tail: at most one word, then byte by byte.
            if let Some(chunk) = bytes.get(i..i + 8) {
                let m = escape_mask(word(chunk));
                if m == 0 {
                    i += 8;
                    continue;
                }
                i += first_flagged(m);
            }
        }
        let Some(&b) = bytes.get(i) else { break };
        let esc = escape_of(b);
        if esc == Escape::None {
            i += 1;
            continue;
        }
        out.extend_from_slice(bytes.get(start..i).unwrap_or_default());
        match esc {
            Escape::Short(c) => out.extend_from_slice(&[b'\\', c]),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xf)]);
            }
        }
        i += 1;
        start = i;
    }
    out.extend_from_slice(bytes.get(start..).unwrap_or_default());
}

/// The first eight bytes of `b` (which has at least eight) as a word.
fn word(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(b.get(..8).unwrap_or(&[0; 8]));
    u64::from_le_bytes(w)
}

/// The index of the lowest byte whose high bit is set in `mask` (not 0).
fn first_flagged(mask: u64) -> usize {
    (mask.trailing_zeros() / 8) as usize
}

/// Whether any byte of `w` is below 0x20, `"` or `\`.
#[cfg(test)]
fn needs_escape(w: u64) -> bool {
    escape_mask(w) != 0
}

/// The high bit of each byte of `w` that is below 0x20, `"` or `\`, and
/// maybe of bytes above such a byte (a borrow carries upward only from a
/// flagged byte), so the lowest flagged byte is always exact.
fn escape_mask(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // A zero byte of `x` (or one below `n`) sets its high bit in these;
    // bytes >= 0x80 are excluded by `!w`.
    let below_0x20 = w.wrapping_sub(ONES * 0x20) & !w;
    let quote = w ^ (ONES * u64::from(b'"'));
    let backslash = w ^ (ONES * u64::from(b'\\'));
    let is_quote = quote.wrapping_sub(ONES) & !quote;
    let is_backslash = backslash.wrapping_sub(ONES) & !backslash;
    (below_0x20 | is_quote | is_backslash) & HIGHS
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    None,
    Short(u8),
    Unicode,
}

fn escape_of(b: u8) -> Escape {
    match b {
        b'"' => Escape::Short(b'"'),
        b'\\' => Escape::Short(b'\\'),
        b'\n' => Escape::Short(b'n'),
        b'\r' => Escape::Short(b'r'),
        b'\t' => Escape::Short(b't'),
        0x08 => Escape::Short(b'b'),
        0x0c => Escape::Short(b'f'),
        0x00..=0x1f => Escape::Unicode,
        _ => Escape::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours(s: &str) -> String {
        let mut out = Vec::new();
        escape_into(&mut out, s);
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn matches_serde_json_on_every_byte_class() {
        let mut all = String::new();
        for c in (0u32..0x100).filter_map(char::from_u32) {
            all.push(c);
        }
        let samples = [
            "",
            "plain ascii text, longer than one word",
            "\"quoted\" and \\back\\slashed\\",
            "line1\nline2\r\n\ttab\u{8}\u{c}",
            "\u{0}\u{1}\u{1f}\u{7f}\u{80}\u{9f}é日本語🎉",
            "12345678\n12345678\"1234567\\",
            all.as_str(),
        ];
        for s in samples {
            assert_eq!(ours(s), serde_json::to_string(s).unwrap(), "{s:?}");
        }
    }

    #[test]
    fn every_offset_of_an_escape_is_found() {
        for special in ['"', '\\', '\n', '\u{0}', '\u{1f}', '\u{7f}', 'é'] {
            for len in 0..20 {
                for at in 0..=len {
                    let mut s: String = "a".repeat(len);
                    s.insert(at, special);
                    assert_eq!(ours(&s), serde_json::to_string(&s).unwrap(), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn runs_of_escapes_at_every_offset() {
        // Several escapes per word and per 16-byte block, at every
        // alignment, mixed with multi-byte characters.
        let parts = [
            "a", "\"", "\\", "\n", "\u{1}", "é", "bcdefgh", "日", "\t\t", "🎉",
        ];
        let mut x: u32 = 12345;
        for _ in 0..3000 {
            let mut s = String::new();
            for _ in 0..(x % 40) {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                s.push_str(parts[(x >> 16) as usize % parts.len()]);
            }
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            assert_eq!(ours(&s), serde_json::to_string(&s).unwrap(), "{s:?}");
        }
    }

    #[test]
    fn lowest_flagged_byte_is_exact() {
        for b in 0u8..=255 {
            for at in 0..8 {
                let mut w = [b'a'; 8];
                w[at] = b;
                // Bytes above it that also need escaping must not move
                // the first flag.
                for hi in (at + 1)..8 {
                    w[hi] = [0u8, b'"', b'\\', 0x1f, 0xff][hi % 5];
                }
                let m = escape_mask(u64::from_le_bytes(w));
                let expect = b < 0x20 || b == b'"' || b == b'\\';
                if expect {
                    assert_eq!(first_flagged(m), at, "byte {b:#x} at {at}");
                } else if m != 0 {
                    assert!(first_flagged(m) > at, "byte {b:#x} at {at}");
                }
            }
        }
    }

    #[test]
    fn word_test_is_exact() {
        for b in 0u8..=255 {
            let w = u64::from_le_bytes([b'a', b'a', b, b'a', b'a', b'a', b'a', b'a']);
            let expect = b < 0x20 || b == b'"' || b == b'\\';
            assert_eq!(needs_escape(w), expect, "byte {b:#x}");
        }
    }
}
