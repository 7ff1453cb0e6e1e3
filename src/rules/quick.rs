//! The walks' first look: which entries of a directory the hide rules can
//! match at all, so that most entries are decided by their name alone.
//!
//! Owns: a conservative summary of one root's hide rules, built once with
//! them. Each hide rule is one of three shapes:
//! - a *name* glob (no `/`: `.env`, `*.pem`, `node_modules`), which
//!   `.gitignore` syntax matches against the last component only;
//! - a *path* rule (a glob with a `/`, an exact path), which can only match
//!   a path holding each of its literal components (`config/prod/**` needs
//!   `config` and `prod`; `**/private/**` needs `private`);
//! - *opaque* (a regex, `contains`, a glob with a class or an escape): it
//!   may match anything, and every entry takes the full check.
//!
//! [`Quick::plan`] works out, once per directory, which path rules could
//! still match an entry of it: none when two or more of a rule's literal
//! components are missing from the directory's path (an entry adds one
//! component). When none can, the last rule matching the entry (the one
//! that decides, `!` patterns included) is a name glob, so the name globs
//! alone, in their order, decide exactly as the full set would. The hide
//! globs are then matched against the bare name, without building the
//! entry's path: a name glob matches a bare name as it matches a path
//! ending in it, and a path glob can match a bare name only if every one of
//! its literal components is that name, so an entry with that name takes
//! the full check (as a rule lacking one component asks anyway). And a name
//! that does not hold, at its place, the literal some positive name glob
//! needs (`.pem` at its end, `node_modules` whole: see `rules::lits`) is
//! not hidden without running any glob. A leading `**/` matches at any
//! depth, as a line without a `/` does: `**/*.pem` is the name glob
//! `*.pem`. Anything else is left to the full rule set
//! ([`super::Rules::hides_entry`]).
//!
//! Where names fold case, a name or component that is not ASCII always
//! takes the full check (Unicode case folding could match it to an ASCII
//! literal). The unit tests compare this summary with the full set on
//! random rules and paths.
//! May touch: nothing (no I/O).

use ignore::Match;
use ignore::gitignore::Gitignore;

use super::Matcher;
use super::lits::{Lit, LitSet, literal};

/// The summary of one root's hide rules.
#[derive(Debug, Default)]
pub(super) struct Quick {
    /// Some hide rule may match any path: every entry takes the full check.
    opaque: bool,
    /// Whether some name glob hides (is not a `!` pattern).
    any_positive: bool,
    /// The literals the positive name globs need in the name, each at its
    /// place; `None` when one needs none (`*`) or they did not build, and
    /// then every name is matched.
    needles: Option<LitSet>,
    /// The literal components of each path rule (at least one each).
    paths: Vec<Vec<String>>,
    /// Whether names are compared without regard to ASCII case.
    fold: bool,
}

/// What the entries of one directory need.
#[derive(Debug, Clone)]
pub(super) enum Plan {
    /// Every entry takes the full check.
    Full,
    /// The name globs decide, except for an entry with one of these names
    /// (a path rule lacks just that component), which takes the full check.
    Names(Wanted),
}

/// The names that take the full check in a [`Plan::Names`] directory: the
/// one component each of some path rules lacks, as (rule, component)
/// indexes into [`Quick`]'s path rules, with a filter on their first byte
/// and length so that most names are passed over without a comparison.
#[derive(Debug, Clone, Default)]
pub(super) struct Wanted {
    first: [u64; 4],
    /// Bit `n` for a length `n` (the last bit for 63 and more).
    lens: u64,
    /// (rule, component, the component's length).
    at: Vec<(u32, u32, usize)>,
}

fn bit(set: &[u64; 4], b: u8) -> bool {
    set[usize::from(b >> 6)] & (1 << (b & 63)) != 0
}

fn len_bit(len: usize) -> u64 {
    1 << len.min(63)
}

/// The shape of one `.gitignore` line.
#[derive(Debug, PartialEq)]
enum Shape {
    Opaque,
    Name { positive: bool, needle: Option<Lit> },
    Path(Vec<String>),
}

/// Classifies a `.gitignore` line the way `ignore`'s builder reads it.
fn shape(line: &str, fold: bool) -> Shape {
    // Escapes and classes (which could stand for a `/`) are not analysed.
    if line.contains(['\\', '[']) || line.starts_with('#') {
        return Shape::Opaque;
    }
    // Without escapes, the builder trims every trailing space.
    let mut s = line.trim_end_matches(' ');
    let positive = match s.strip_prefix('!') {
        Some(rest) => {
            s = rest;
            false
        }
        None => true,
    };
    let absolute = match s.strip_prefix('/') {
        Some(rest) => {
            s = rest;
            true
        }
        None => false,
    };
    if let Some(rest) = s.strip_suffix('/') {
        s = rest;
    }
    // `**/x` (rooted or not) matches `x` at any depth, as `x` does.
    let mut anywhere = !absolute;
    while let Some(rest) = s.strip_prefix("**/") {
        s = rest;
        anywhere = true;
    }
    if s.is_empty() {
        return Shape::Opaque;
    }
    if anywhere && !s.contains('/') {
        let needle = if s.contains('{') || (fold && !s.is_ascii()) {
            None
        } else {
            literal(s)
        };
        return Shape::Name { positive, needle };
    }
    // Alternatives may hold a `/`.
    if s.contains('{') {
        return Shape::Opaque;
    }
    let mut comps: Vec<String> = Vec::new();
    for c in s.split('/') {
        if c.is_empty() || c == "." || c == ".." || c.contains(['*', '?']) {
            continue;
        }
        if fold && !c.is_ascii() {
            return Shape::Opaque;
        }
        if !comps.iter().any(|k| k == c) {
            comps.push(c.to_owned());
        }
    }
    if comps.is_empty() {
        Shape::Opaque
    } else {
        Shape::Path(comps)
    }
}

impl Quick {
    /// Summarises the hide rules `hide`, in their order.
    pub(super) fn new<'a>(hide: impl Iterator<Item = &'a Matcher>, fold: bool) -> Self {
        let mut q = Quick {
            fold,
            ..Quick::default()
        };
        let mut needles: Option<Vec<Lit>> = Some(Vec::new());
        for m in hide {
            match m {
                Matcher::Glob(g) => match shape(g, fold) {
                    Shape::Opaque => q.opaque = true,
                    Shape::Path(comps) => q.paths.push(comps),
                    Shape::Name { positive, needle } => {
                        if positive {
                            q.any_positive = true;
                            match (needle, needles.as_mut()) {
                                (Some(n), Some(v)) => v.push(n),
                                _ => needles = None,
                            }
                        }
                    }
                },
                Matcher::Exact(p) | Matcher::Prefix(p) => {
                    let mut comps: Vec<String> = Vec::new();
                    for c in p.split('/').filter(|c| !c.is_empty()) {
                        if !comps.iter().any(|k| k == c) {
                            comps.push(c.to_owned());
                        }
                    }
                    if comps.is_empty() || (fold && !p.is_ascii()) {
                        q.opaque = true;
                    } else {
                        q.paths.push(comps);
                    }
                }
                Matcher::Regex(_) | Matcher::Contains(_) | Matcher::All => q.opaque = true,
            }
        }
        if q.any_positive {
            // A set that does not build leaves every name to the globs.
            q.needles = needles.and_then(|n| LitSet::new(&n, fold).ok());
        }
        q
    }

    fn eq(&self, a: &str, b: &str) -> bool {
        if self.fold {
            a.eq_ignore_ascii_case(b)
        } else {
            a == b
        }
    }

    /// The plan for the entries of the directory at canonical `dir`
    /// (relative to the operator's root, "" for the root).
    pub(super) fn plan(&self, dir: &str) -> Plan {
        if self.opaque {
            return Plan::Full;
        }
        let mut wanted = Wanted::default();
        if self.paths.is_empty() {
            return Plan::Names(wanted);
        }
        if self.fold && !dir.is_ascii() {
            return Plan::Full;
        }
        let comps: Vec<&str> = dir.split('/').filter(|c| !c.is_empty()).collect();
        let has = |r: &str| comps.iter().any(|c| self.eq(c, r));
        for (i, rule) in self.paths.iter().enumerate() {
            let mut missing = rule.iter().enumerate().filter(|(_, r)| !has(r));
            match (missing.next(), missing.next()) {
                (None, _) => return Plan::Full,
                (Some((j, one)), None) => {
                    let b = self.key(one.as_bytes()[0]);
                    wanted.first[usize::from(b >> 6)] |= 1 << (b & 63);
                    wanted.lens |= len_bit(one.len());
                    // Both below `MAX_RULES` and a pattern's length.
                    wanted.at.push((i as u32, j as u32, one.len()));
                }
                _ => {}
            }
        }
        Plan::Names(wanted)
    }

    fn key(&self, b: u8) -> u8 {
        if self.fold { b.to_ascii_lowercase() } else { b }
    }

    /// Whether `name` is one of the names `w` sends to the full check.
    fn wanted(&self, w: &Wanted, name: &str) -> bool {
        let Some(&b) = name.as_bytes().first() else {
            return false;
        };
        if w.lens & len_bit(name.len()) == 0 || !bit(&w.first, self.key(b)) {
            return false;
        }
        w.at.iter().any(|&(i, j, len)| {
            len == name.len()
                && self
                    .paths
                    .get(i as usize)
                    .and_then(|r| r.get(j as usize))
                    .is_none_or(|c| self.eq(c, name))
        })
    }

    /// Whether the entry `name` of a directory with `plan` is hidden, when
    /// that can be told from the name: `None` leaves it to the full set.
    /// `globs` gives the hide globs, all of them, in their order (compiled
    /// when first asked for).
    pub(super) fn hides<'g>(
        &self,
        plan: &Plan,
        globs: impl FnOnce() -> Option<&'g Gitignore>,
        name: &str,
        is_dir: bool,
    ) -> Option<bool> {
        let Plan::Names(wanted) = plan else {
            return None;
        };
        if self.fold && !name.is_ascii() {
            return None;
        }
        if self.wanted(wanted, name) {
            return None;
        }
        if !self.any_positive {
            return Some(false);
        }
        if let Some(n) = &self.needles
            && !n.in_name(name)
        {
            return Some(false);
        }
        let g = globs()?;
        Some(matches!(g.matched(name, is_dir), Match::Ignore(_)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let name = |positive, needle: &str, head, tail| Shape::Name {
            positive,
            needle: Some(Lit {
                text: needle.to_owned(),
                head,
                tail,
            }),
        };
        let any = |positive| Shape::Name {
            positive,
            needle: None,
        };
        let path = |c: &[&str]| Shape::Path(c.iter().map(|s| (*s).to_owned()).collect());
        assert_eq!(shape(".env", false), name(true, ".env", true, true));
        assert_eq!(
            shape("!.env.example", false),
            name(false, ".env.example", true, true)
        );
        assert_eq!(shape("*.pem", false), name(true, ".pem", false, true));
        assert_eq!(shape("**/*.pem", false), name(true, ".pem", false, true));
        assert_eq!(shape("/**/.env*", false), name(true, ".env", true, false));
        assert_eq!(shape("**/**/k", false), name(true, "k", true, true));
        assert_eq!(shape("id_rsa*", false), name(true, "id_rsa", true, false));
        assert_eq!(
            shape("node_modules/", false),
            name(true, "node_modules", true, true)
        );
        assert_eq!(shape("*", false), any(true));
        assert_eq!(shape("**/*", false), any(true));
        assert_eq!(shape("{a,b}", false), any(true));
        assert_eq!(shape("/secrets", false), path(&["secrets"]));
        assert_eq!(shape("config/prod/**", false), path(&["config", "prod"]));
        assert_eq!(shape("**/private/**", false), path(&["private"]));
        assert_eq!(shape("**/a/b", false), path(&["a", "b"]));
        assert_eq!(shape("a/a/*.x", false), path(&["a"]));
        assert_eq!(shape("/*", false), Shape::Opaque);
        assert_eq!(shape("**/", false), any(true));
        assert_eq!(shape("/**/", false), Shape::Opaque);
        assert_eq!(shape("*.[pP]em", false), Shape::Opaque);
        assert_eq!(shape("\\!x", false), Shape::Opaque);
        assert_eq!(shape("{a/b,c}/d", false), Shape::Opaque);
        assert_eq!(shape("/é", true), Shape::Opaque);
        assert_eq!(shape("é", true), any(true));
    }
}
