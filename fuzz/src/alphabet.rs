//! Byte-to-string decoders with a token alphabet.
//!
//! A byte below `0x80` is itself (an ASCII character, NUL included), so a
//! seed can be written as plain text. A byte `0x80 + i` is token `i` of the
//! table (taken modulo its length). Tokens whose key starts with `@` are
//! filled in from the fixture at startup (absolute spellings of the roots
//! and of their siblings, the outside names), the others are literal.
//!
//! `gen_seeds.py` reads the two tables below between their `BEGIN`/`END`
//! markers, so a seed file names tokens by key and stays in sync. Append new
//! tokens at the end so existing seeds keep their meaning.

use crate::fixture::Fixture;

/// Path tokens. Keep the `BEGIN`/`END` lines: `gen_seeds.py` parses them.
pub const PATH_TOKENS: &[&str] = &[
    // BEGIN PATH_TOKENS
    "@root",          // the first root's display spelling (through the `alias` symlink)
    "@root_resolved", // the first root's resolved spelling (`.../w/root`)
    "@root2",         // the second root
    "@sib",           // `.../w/root-sib`: a prefix sibling of the root, outside
    "@work",          // `.../w`: the roots' parent, outside
    "@base",          // the temp dir above `w`, outside
    "@outside",       // `.../w/outside-<m>`: the canary directory
    "@outside_name",  // `outside-<m>`
    "@canary_name",   // `canary-<m>`
    "@far_name",      // `far-<m>`, a canary file in `@base`
    "@long300",       // a 300-byte name (over NAME_MAX)
    "@long255",       // a 255-byte name (exactly NAME_MAX)
    "/",
    ".",
    "..",
    "../",
    "/..",
    "//",
    "\u{e9}",           // é, NFC
    "e\u{301}",         // é, NFD
    "\u{202e}",         // right-to-left override
    "\u{feff}",         // byte-order mark
    "\u{2215}",         // division slash
    "\u{ff0e}\u{ff0e}", // fullwidth dots
    "\u{0}",
    "/proc/self/root",
    "/proc/self/cwd",
    "/proc/self/fd/",
    "/etc",
    "/etc/passwd",
    "~",
    "%2e%2e",
    "\\",
    "C:\\",
    "file://",
    "file.txt",
    "crlf.txt",
    "empty",
    "a",
    "b",
    "c.txt",
    "sub",
    "up",
    "upup",
    "inner.txt",
    "deep",
    "rel_out",
    "rel_out_dir",
    "far_out",
    "abs_out",
    "abs_in",
    "etc",
    "proc_root",
    "proc_cwd",
    "chain_a",
    "chain_b",
    "chain_in_a",
    "dangling_out",
    "dangling_in",
    "dangling_abs",
    "loop_a",
    "self_loop",
    "sibling",
    "cross",
    "dir_link",
    "fifo",
    "img.png",
    "root",
    "root2",
    "root-sib",
    "alias",
    "w",
    "r.txt",
    "back",
    "new",
    "new.txt",
    // END PATH_TOKENS
];

/// Glob tokens. Keep the `BEGIN`/`END` lines: `gen_seeds.py` parses them.
pub const GLOB_TOKENS: &[&str] = &[
    // BEGIN GLOB_TOKENS
    "*",
    "**",
    "**/",
    "/**",
    "?",
    "[",
    "]",
    "[!",
    "[^",
    "{",
    "}",
    ",",
    "!",
    "\\",
    "{a,b}",
    "{{{{{{{{",
    "[[:alpha:]]",
    "*.txt",
    "**/*",
    "../",
    "@canary_name",
    "@outside_name",
    "\u{e9}",
    "\u{0}",
    // END GLOB_TOKENS
];

/// A decoder with its `@` tokens filled in.
#[derive(Debug, Clone)]
pub struct Alphabet {
    tokens: Vec<String>,
}

impl Alphabet {
    /// The path alphabet for `fx`.
    pub fn paths(fx: &Fixture) -> Self {
        Self::new(PATH_TOKENS, fx)
    }

    /// The glob alphabet for `fx`.
    pub fn globs(fx: &Fixture) -> Self {
        Self::new(GLOB_TOKENS, fx)
    }

    fn new(table: &[&str], fx: &Fixture) -> Self {
        let tokens = table
            .iter()
            .map(|t| match *t {
                "@root" => fx.root_display.clone(),
                "@root_resolved" => path_str(&fx.roots[0]),
                "@root2" => path_str(&fx.roots[1]),
                "@sib" => path_str(&fx.work.join("root-sib")),
                "@work" => path_str(&fx.work),
                "@base" => path_str(&fx.base),
                "@outside" => path_str(&fx.work.join(&fx.outside_name)),
                "@outside_name" => fx.outside_name.clone(),
                "@canary_name" => fx.canary_name.clone(),
                "@far_name" => fx.far_name.clone(),
                "@long300" => "l".repeat(300),
                "@long255" => "n".repeat(255),
                other => other.to_owned(),
            })
            .collect();
        Self { tokens }
    }

    /// Decodes `bytes` into a string.
    pub fn decode(&self, bytes: &[u8]) -> String {
        let mut s = String::new();
        for &b in bytes {
            if b < 0x80 {
                s.push(char::from(b));
            } else {
                let i = usize::from(b - 0x80) % self.tokens.len();
                s.push_str(&self.tokens[i]);
            }
        }
        s
    }
}

fn path_str(p: &std::path::Path) -> String {
    p.to_str().expect("temp paths are UTF-8").to_owned()
}
