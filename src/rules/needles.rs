//! The resolver's first look: whether any glob of a rule set could match a
//! path, from the literals its globs need, before any glob runs.
//!
//! Owns: for one set of `.gitignore` lines, one literal per positive line
//! (the longest run of literal characters between `/`, `*`, `?` and
//! whitespace: `.env` of `.env.*`, `secrets` of `/secrets/**`). A glob's
//! literal characters match themselves, so every path a line matches holds
//! that run, and so does every longer path it is a prefix of. A path that
//! holds none of a set's literals, searched in one pass (Aho-Corasick), is
//! matched by none of its positive lines, at any prefix: the set does not
//! cover it (the last matching line decides, and only a positive line
//! hides or protects), and no glob runs.
//!
//! Lines that are not analysed make every path take the globs: a class or
//! an escape (`[pP]`, `\!`), alternatives (`{a,b}`), a line without a
//! literal (`*`, `**/*`), and, where names fold case, a line that is not
//! ASCII. Where names fold case, a path that is not ASCII always takes the
//! globs (Unicode folding can match it to an ASCII literal). The unit tests
//! compare this look with the globs on random rule sets and paths.
//! May touch: nothing (no I/O).

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind};

/// What a path needs for some positive line of a set to match it.
#[derive(Debug, Clone, Default)]
pub(super) enum Needles {
    /// No positive line: no path is matched.
    #[default]
    Never,
    /// Some line is not analysed: every path takes the globs.
    Always,
    /// One of these literals.
    Any { ac: AhoCorasick, fold: bool },
}

/// The literal a positive `.gitignore` line needs in every path it matches;
/// `Ok(None)` for a line that matches nothing (a `!` line, an empty one);
/// `Err(())` when the line is not analysed.
fn needle(line: &str, fold: bool) -> Result<Option<&str>, ()> {
    if line.contains(['\\', '[', '{']) || line.starts_with('#') || (fold && !line.is_ascii()) {
        return Err(());
    }
    if line.starts_with('!') {
        return Ok(None);
    }
    let best = line
        .split(|c: char| c == '/' || c == '*' || c == '?' || c.is_whitespace())
        .filter(|p| !p.is_empty() && *p != "." && *p != "..")
        .max_by_key(|p| p.len());
    match best {
        Some(p) => Ok(Some(p)),
        // A positive line without a literal (`*`, `/`, ` `): it may match
        // anything, or nothing; either way the globs decide.
        None => Err(()),
    }
}

impl Needles {
    /// The look for the `.gitignore` lines `lines`.
    pub(super) fn new<'a>(lines: impl Iterator<Item = &'a str>, fold: bool) -> Self {
        let mut found: Vec<&str> = Vec::new();
        for line in lines {
            match needle(line, fold) {
                Err(()) => return Needles::Always,
                Ok(Some(n)) => {
                    if !found.contains(&n) {
                        found.push(n);
                    }
                }
                Ok(None) => {}
            }
        }
        if found.is_empty() {
            return Needles::Never;
        }
        // A contiguous NFA builds in a fraction of a DFA's time (startup
        // with 50 globs) and searches a path of a few dozen bytes about as
        // fast. A set that does not build leaves every path to the globs.
        match AhoCorasickBuilder::new()
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .ascii_case_insensitive(fold)
            .build(&found)
        {
            Ok(ac) => Needles::Any { ac, fold },
            Err(_) => Needles::Always,
        }
    }

    /// Whether some positive line may match `path` or a prefix of it.
    pub(super) fn may_match(&self, path: &str) -> bool {
        match self {
            Needles::Never => false,
            Needles::Always => true,
            Needles::Any { ac, fold } => (*fold && !path.is_ascii()) || ac.is_match(path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals() {
        assert_eq!(needle(".env", false), Ok(Some(".env")));
        assert_eq!(needle(".env.*", false), Ok(Some(".env.")));
        assert_eq!(needle("*.pem", false), Ok(Some(".pem")));
        assert_eq!(needle("/secrets", false), Ok(Some("secrets")));
        assert_eq!(needle("config/prod/**", false), Ok(Some("config")));
        assert_eq!(needle("**/private/**", false), Ok(Some("private")));
        assert_eq!(needle("./a", false), Ok(Some("a")));
        assert_eq!(needle("a\t", false), Ok(Some("a")));
        assert_eq!(needle("!.env.example", false), Ok(None));
        assert_eq!(needle("*", false), Err(()));
        assert_eq!(needle("**/*", false), Err(()));
        assert_eq!(needle("*.[pP]em", false), Err(()));
        assert_eq!(needle("\\!a", false), Err(()));
        assert_eq!(needle("{a,b}", false), Err(()));
        assert_eq!(needle("é", true), Err(()));
        assert_eq!(needle("é", false), Ok(Some("é")));
        let n = Needles::new([".env", "!x", "*.pem"].into_iter(), false);
        assert!(n.may_match("a/.env") && n.may_match("k.pem/x") && !n.may_match("a/b"));
        assert!(!n.may_match("A/.ENV"));
        let f = Needles::new([".env"].into_iter(), true);
        assert!(f.may_match("A/.ENV") && f.may_match("é") && !f.may_match("a"));
        assert!(!Needles::new(["!a"].into_iter(), false).may_match("a"));
        assert!(Needles::new(["a", "*"].into_iter(), false).may_match("b"));
    }
}
