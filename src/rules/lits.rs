//! Literals anchored to a path component: the first look both the resolver
//! ([`super::needles`]) and the walks ([`super::quick`]) take before any
//! glob runs.
//!
//! Owns: for one positive `.gitignore` line, the longest run of literal
//! characters (between `/`, `*`, `?` and whitespace) and where it sits in a
//! component: a run that starts the line or follows a `/` starts a
//! component of every path the line matches (a line without a `/` is
//! matched at any depth, one with a `/` from the root); one that ends the
//! line or comes before a `/` ends one. So `.env` is a whole component,
//! `.pem` of `*.pem` ends one, `id_rsa` of `id_rsa*` starts one, `key` of
//! `*key*` is somewhere inside one. A glob's literal characters match
//! themselves and its wildcards never match a `/`, so every path the line
//! matches (and every longer path it is a prefix of) has a component that
//! holds the run there.
//!
//! [`LitSet`] asks that of each component of a path by its first and last
//! byte (a table lookup; most components start and end with a byte no
//! literal does), and looks for the few literals anchored at neither end in
//! one Aho-Corasick pass. Lines that are not analysed (escapes, classes,
//! braces, no literal, not ASCII where names fold case) are the callers'
//! to refuse.
//! May touch: nothing (no I/O).

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind};

/// The literal one line needs, and where in a component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Lit {
    /// The run of literal characters (never empty).
    pub text: String,
    /// It starts a component.
    pub head: bool,
    /// It ends a component.
    pub tail: bool,
}

/// The literal of a pattern `body`: a line without its `!`, leading `/`,
/// trailing spaces and trailing `/`, holding no escape, class or brace.
/// `None` when it holds no literal (`*`, `**/*`).
pub(super) fn literal(body: &str) -> Option<Lit> {
    let bytes = body.as_bytes();
    let mut best: Option<(usize, usize)> = None;
    let mut start = 0;
    for end in 0..=bytes.len() {
        let sep = match bytes.get(end) {
            None => true,
            Some(b) => matches!(b, b'/' | b'*' | b'?') || b.is_ascii_whitespace(),
        };
        if !sep {
            continue;
        }
        let run = &body[start..end];
        // `max_by_key` keeps the last of the longest: so does this.
        if !run.is_empty()
            && run != "."
            && run != ".."
            && best.is_none_or(|(s, e)| e - s <= run.len())
        {
            best = Some((start, end));
        }
        start = end + 1;
    }
    let (s, e) = best?;
    Some(Lit {
        text: body[s..e].to_owned(),
        head: s == 0 || bytes[s - 1] == b'/',
        tail: e == bytes.len() || bytes[e] == b'/',
    })
}

/// Literals, each found at its place in some component.
#[derive(Debug, Clone)]
pub(super) struct LitSet {
    /// Compare without regard to ASCII case (literals are kept in lower
    /// case then).
    fold: bool,
    /// Literals that start a component (`true`: and end it), ordered by
    /// their first byte; those starting with byte `b` are
    /// `heads[head_at[b]..head_at[b + 1]]`.
    heads: Vec<(Box<[u8]>, bool)>,
    head_at: Box<[u32; 257]>,
    /// The first bytes of `heads` and the last bytes of `tails`, as bit
    /// sets: most components are passed over on these two bits alone.
    head_bytes: [u64; 4],
    tail_bytes: [u64; 4],
    /// The second bytes of `heads` and the next-to-last bytes of `tails`,
    /// as bit sets, for a component of two bytes or more (every bit when a
    /// literal has one byte); and whether one has a single byte, for a
    /// component of one. Names that share a first or last byte with a
    /// literal (`item05.rs` and `id_rsa`) mostly differ at the next one.
    head_next: [u64; 4],
    tail_next: [u64; 4],
    head_short: bool,
    tail_short: bool,
    /// Literals that end a component and do not start one, ordered by
    /// their last byte, indexed as `heads`.
    tails: Vec<Box<[u8]>>,
    tail_at: Box<[u32; 257]>,
    /// Literals anchored at neither end.
    inner: Option<AhoCorasick>,
}

/// Orders `items` by `key` and returns the index of each key's first item.
fn index<T>(items: &mut [T], key: impl Fn(&T) -> u8) -> Box<[u32; 257]> {
    items.sort_by_key(|t| key(t));
    let mut at = Box::new([0u32; 257]);
    for t in items.iter() {
        at[usize::from(key(t)) + 1] += 1;
    }
    for b in 0..256 {
        at[b + 1] += at[b];
    }
    at
}

impl LitSet {
    /// The set of `lits`; `Err` when the few inner ones did not build into
    /// a searcher (the caller then matches every path).
    pub(super) fn new(lits: &[Lit], fold: bool) -> Result<Self, ()> {
        let norm = |t: &str| -> Box<[u8]> {
            if fold {
                t.to_ascii_lowercase().into_bytes().into()
            } else {
                t.as_bytes().into()
            }
        };
        let mut heads: Vec<(Box<[u8]>, bool)> = Vec::new();
        let mut tails: Vec<Box<[u8]>> = Vec::new();
        let mut inner: Vec<Box<[u8]>> = Vec::new();
        for l in lits {
            let t = norm(&l.text);
            match (l.head, l.tail) {
                (true, whole) => heads.push((t, whole)),
                (false, true) => tails.push(t),
                (false, false) => inner.push(t),
            }
        }
        // Every text is non-empty (see `literal`).
        let head_at = index(&mut heads, |h| h.0[0]);
        let tail_at = index(&mut tails, |t| t[t.len() - 1]);
        let bits = |keys: &mut dyn Iterator<Item = u8>| {
            let mut set = [0u64; 4];
            for b in keys {
                set[usize::from(b >> 6)] |= 1 << (b & 63);
            }
            set
        };
        let head_bytes = bits(&mut heads.iter().map(|h| h.0[0]));
        let tail_bytes = bits(&mut tails.iter().map(|t| t[t.len() - 1]));
        let head_short = heads.iter().any(|h| h.0.len() == 1);
        let tail_short = tails.iter().any(|t| t.len() == 1);
        let next = |short: bool, keys: &mut dyn Iterator<Item = u8>| {
            if short { [u64::MAX; 4] } else { bits(keys) }
        };
        let head_next = next(
            head_short,
            &mut heads.iter().filter_map(|h| h.0.get(1).copied()),
        );
        let tail_next = next(
            tail_short,
            &mut tails
                .iter()
                .filter_map(|t| t.len().checked_sub(2).map(|i| t[i])),
        );
        let inner = if inner.is_empty() {
            None
        } else {
            // A contiguous NFA builds in a fraction of a DFA's time and
            // searches a short path about as fast.
            let ac = AhoCorasickBuilder::new()
                .kind(Some(AhoCorasickKind::ContiguousNFA))
                .ascii_case_insensitive(fold)
                .build(&inner)
                .map_err(|_| ())?;
            Some(ac)
        };
        Ok(LitSet {
            fold,
            heads,
            head_at,
            head_bytes,
            tail_bytes,
            head_next,
            tail_next,
            head_short,
            tail_short,
            tails,
            tail_at,
            inner,
        })
    }

    /// Whether it compares without regard to ASCII case.
    pub(super) fn fold(&self) -> bool {
        self.fold
    }

    fn key(&self, b: u8) -> usize {
        usize::from(if self.fold { b.to_ascii_lowercase() } else { b })
    }

    fn eq(&self, a: &[u8], lit: &[u8]) -> bool {
        if self.fold {
            a.eq_ignore_ascii_case(lit)
        } else {
            a == lit
        }
    }

    /// Whether the component `c` (no `/`) holds some literal at its place,
    /// leaving the inner ones aside.
    #[inline]
    fn anchored_in(&self, c: &[u8]) -> bool {
        let (Some(&first), Some(&last)) = (c.first(), c.last()) else {
            return false;
        };
        let (first, last) = (self.key(first), self.key(last));
        let has = |set: &[u64; 4], b: usize| set[b >> 6] & (1 << (b & 63)) != 0;
        // A literal at the start needs the first byte and then the second
        // (or has one byte); at the end, the last and the one before it.
        let (head, tail) = match c.len() {
            1 => (
                self.head_short && has(&self.head_bytes, first),
                self.tail_short && has(&self.tail_bytes, last),
            ),
            n => (
                has(&self.head_bytes, first) && has(&self.head_next, self.key(c[1])),
                has(&self.tail_bytes, last) && has(&self.tail_next, self.key(c[n - 2])),
            ),
        };
        (head || tail) && self.anchored_at(c, head.then_some(first), tail.then_some(last))
    }

    /// [`LitSet::anchored_in`] past its filter: the literals starting with
    /// byte `head` and those ending with byte `tail` (out of line: most
    /// components stop at the filter).
    #[inline(never)]
    fn anchored_at(&self, c: &[u8], head: Option<usize>, tail: Option<usize>) -> bool {
        if let Some(k) = head {
            let heads = &self.heads[self.head_at[k] as usize..self.head_at[k + 1] as usize];
            let fits =
                |lit: &[u8], whole: bool| c.len() == lit.len() || (!whole && c.len() > lit.len());
            if heads
                .iter()
                .any(|(lit, whole)| fits(lit, *whole) && self.eq(&c[..lit.len()], lit))
            {
                return true;
            }
        }
        let Some(k) = tail else {
            return false;
        };
        let tails = &self.tails[self.tail_at[k] as usize..self.tail_at[k + 1] as usize];
        tails
            .iter()
            .any(|lit| c.len() >= lit.len() && self.eq(&c[c.len() - lit.len()..], lit))
    }

    /// Whether the name `c` (one component) holds some literal at its place.
    #[cfg(test)]
    pub(super) fn in_name(&self, c: &str) -> bool {
        self.in_bytes(c.as_bytes())
    }

    /// Whether the name `c` (one component, its bytes) holds some literal
    /// at its place.
    #[inline]
    pub(super) fn in_bytes(&self, c: &[u8]) -> bool {
        self.anchored_in(c) || self.inner.as_ref().is_some_and(|ac| ac.is_match(c))
    }

    /// Whether some component of `path` holds some literal at its place.
    pub(super) fn in_path(&self, path: &str) -> bool {
        path.as_bytes()
            .split(|&b| b == b'/')
            .any(|c| self.anchored_in(c))
            || self.inner.as_ref().is_some_and(|ac| ac.is_match(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(text: &str, head: bool, tail: bool) -> Option<Lit> {
        Some(Lit {
            text: text.to_owned(),
            head,
            tail,
        })
    }

    #[test]
    fn literals_and_their_place() {
        assert_eq!(literal(".env"), lit(".env", true, true));
        assert_eq!(literal(".env*"), lit(".env", true, false));
        assert_eq!(literal(".env.*"), lit(".env.", true, false));
        assert_eq!(literal("*.pem"), lit(".pem", false, true));
        assert_eq!(literal("*key*"), lit("key", false, false));
        assert_eq!(literal("x?z"), lit("z", false, true));
        assert_eq!(literal("config/prod/**"), lit("config", true, true));
        assert_eq!(literal("**/private/**"), lit("private", true, true));
        assert_eq!(literal("a/b"), lit("b", true, true));
        assert_eq!(literal("./a"), lit("a", true, true));
        assert_eq!(literal("a b"), lit("b", false, true));
        assert_eq!(literal("ab\tc"), lit("ab", true, false));
        assert_eq!(literal("*"), None);
        assert_eq!(literal("**/*"), None);
        assert_eq!(literal("../*"), None);
    }

    /// The next byte in from either end passes over names that share the
    /// first or last byte with a literal, and lets every name through
    /// where a literal has one byte.
    #[test]
    fn the_next_byte_in_passes_over_near_misses() {
        let set = |pats: &[&str], fold| {
            let lits: Vec<Lit> = pats.iter().filter_map(|p| literal(p)).collect();
            LitSet::new(&lits, fold).unwrap()
        };
        let s = set(&["id_rsa*", "*.jks", "*.pem"], false);
        for hit in ["id_rsa", "id_rsa.pub", "a.jks", ".jks", "x.pem"] {
            assert!(s.in_name(hit), "{hit}");
        }
        for miss in ["item05.rs", "i", "id", "s", "item.js", "x.pen", "ipem", "m"] {
            assert!(!s.in_name(miss), "{miss}");
        }
        let s = set(&["k*", "*z", "id_rsa*", "*.pem"], false);
        for hit in ["k", "kx", "ki", "z", "az", "id_rsa", "x.pem"] {
            assert!(s.in_name(hit), "{hit}");
        }
        for miss in ["i", "id", "x", "m", "x.pex"] {
            assert!(!s.in_name(miss), "{miss}");
        }
        let f = set(&["ID_RSA*", "*.JKS"], true);
        for hit in ["Id_Rsa", "id_rsa.pub", "x.jKs"] {
            assert!(f.in_name(hit), "{hit}");
        }
        for miss in ["iTem.rs", "I", "x.js"] {
            assert!(!f.in_name(miss), "{miss}");
        }
    }

    #[test]
    fn components_are_looked_at_by_their_ends() {
        let lits: Vec<Lit> = [".env", "id_rsa*", "*.pem", "*key*", "a/b"]
            .iter()
            .filter_map(|p| literal(p))
            .collect();
        let s = LitSet::new(&lits, false).unwrap();
        for hit in [
            ".env",
            "x/.env",
            "id_rsa",
            "id_rsa.pub",
            "k.pem",
            ".pem/x",
            "monkeys",
            "b",
        ] {
            assert!(s.in_path(hit), "{hit}");
        }
        for miss in [
            ".envrc",
            "x.env",
            "my_id_rsa",
            "k.pem.bak",
            "a/c",
            "bb",
            "",
            "src/main.rs",
        ] {
            assert!(!s.in_path(miss), "{miss}");
        }
        assert!(!s.in_path("X/.ENV") && s.in_name(".env") && !s.in_name(".Env"));
        let f = LitSet::new(&lits, true).unwrap();
        assert!(f.in_path("X/.ENV") && f.in_name("K.PEM") && f.in_name("MonKey"));
        assert!(!f.in_name(".ENVRC"));
    }
}
