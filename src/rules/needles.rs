//! The resolver's first look: whether any glob of a rule set could match a
//! path, from the literals its globs need, before any glob runs.
//!
//! Owns: for one set of `.gitignore` lines, one literal per positive line
//! and its place in a component (see `rules::lits`: `.env` a whole
//! component, `.pem` of `*.pem` the end of one, `secrets` of `/secrets/**`
//! a whole one). Every path a line matches holds its literal there, and so
//! does every longer path it is a prefix of. A path none of whose
//! components holds one of a set's literals is matched by none of its
//! positive lines, at any prefix: the set does not cover it (the last
//! matching line decides, and only a positive line hides or protects), and
//! no glob runs.
//!
//! Lines that are not analysed make every path take the globs: a class or
//! an escape (`[pP]`, `\!`), alternatives (`{a,b}`), a line without a
//! literal (`*`, `**/*`), and, where names fold case, a line that is not
//! ASCII. Where names fold case, a path that is not ASCII always takes the
//! globs (Unicode folding can match it to an ASCII literal). The unit tests
//! compare this look with the globs on random rule sets and paths.
//! May touch: nothing (no I/O).

use super::lits::{Lit, LitSet, literal};

/// What a path needs for some positive line of a set to match it.
#[derive(Debug, Clone, Default)]
pub(super) enum Needles {
    /// No positive line: no path is matched.
    #[default]
    Never,
    /// Some line is not analysed: every path takes the globs.
    Always,
    /// One of these literals, at its place.
    Any(Box<LitSet>),
}

/// The literal a positive `.gitignore` line needs in every path it matches;
/// `Ok(None)` for a line that matches nothing (a `!` line, an empty one);
/// `Err(())` when the line is not analysed.
fn needle(line: &str, fold: bool) -> Result<Option<Lit>, ()> {
    if line.contains(['\\', '[', '{']) || line.starts_with('#') || (fold && !line.is_ascii()) {
        return Err(());
    }
    if line.starts_with('!') {
        return Ok(None);
    }
    // What `ignore`'s builder strips before globbing (without escapes,
    // every trailing space).
    let body = line.trim_end_matches(' ');
    let body = body.strip_prefix('/').unwrap_or(body);
    let body = body.strip_suffix('/').unwrap_or(body);
    match literal(body) {
        Some(l) => Ok(Some(l)),
        // A positive line without a literal (`*`, `/`, ` `): it may match
        // anything, or nothing; either way the globs decide.
        None => Err(()),
    }
}

impl Needles {
    /// The look for the `.gitignore` lines `lines`.
    pub(super) fn new<'a>(lines: impl Iterator<Item = &'a str>, fold: bool) -> Self {
        let mut found: Vec<Lit> = Vec::new();
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
        // A set that does not build leaves every path to the globs.
        match LitSet::new(&found, fold) {
            Ok(s) => Needles::Any(Box::new(s)),
            Err(()) => Needles::Always,
        }
    }

    /// Whether some positive line may match `path` or a prefix of it.
    pub(super) fn may_match(&self, path: &str) -> bool {
        match self {
            Needles::Never => false,
            Needles::Always => true,
            Needles::Any(s) => (s.fold() && !path.is_ascii()) || s.in_path(path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals() {
        let text = |l: &str, fold| needle(l, fold).map(|n| n.map(|n| n.text));
        let some = |t: &str| Ok(Some(t.to_owned()));
        assert_eq!(text(".env", false), some(".env"));
        assert_eq!(text(".env.*", false), some(".env."));
        assert_eq!(text("*.pem", false), some(".pem"));
        assert_eq!(text("/secrets", false), some("secrets"));
        assert_eq!(text("/secrets/", false), some("secrets"));
        assert_eq!(text("config/prod/**", false), some("config"));
        assert_eq!(text("**/private/**", false), some("private"));
        assert_eq!(text("./a", false), some("a"));
        assert_eq!(text("a\t", false), some("a"));
        assert_eq!(text("a  ", false), some("a"));
        assert_eq!(needle("!.env.example", false), Ok(None));
        assert_eq!(needle("*", false), Err(()));
        assert_eq!(needle("**/*", false), Err(()));
        assert_eq!(needle("*.[pP]em", false), Err(()));
        assert_eq!(needle("\\!a", false), Err(()));
        assert_eq!(needle("{a,b}", false), Err(()));
        assert_eq!(needle("é", true), Err(()));
        assert_eq!(text("é", false), some("é"));
        let n = Needles::new([".env", "!x", "*.pem"].into_iter(), false);
        assert!(n.may_match("a/.env") && n.may_match("k.pem/x") && !n.may_match("a/b"));
        assert!(!n.may_match("a/.envrc") && !n.may_match("k.pem.x"));
        assert!(!n.may_match("A/.ENV"));
        let f = Needles::new([".env"].into_iter(), true);
        assert!(f.may_match("A/.ENV") && f.may_match("é") && !f.may_match("a"));
        assert!(!Needles::new(["!a"].into_iter(), false).may_match("a"));
        assert!(Needles::new(["a", "*"].into_iter(), false).may_match("b"));
    }
}
