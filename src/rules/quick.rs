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
//! component). A directory none of whose components is any path rule's
//! (most directories) gets the plan worked out once for the root
//! ([`Plan::Base`]), after one look at each of its components. When none can, the last rule matching the entry (the one
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
    /// Every path rule's components, with a filter on their first byte and
    /// length: a directory none of whose components is one of them has
    /// the plan [`Plan::Base`].
    comps: Wanted,
    /// The plan of a directory none of whose components is a path rule's:
    /// each rule of one component wants it, the others can match nothing.
    base: Wanted,
    /// Whether names are compared without regard to ASCII case.
    fold: bool,
    /// Whether a name's raw bytes answer as its lossy spelling does: names
    /// do not fold, and every literal and component looked for is ASCII
    /// (an ASCII run sits at the same ends of both spellings, and only an
    /// ASCII name equals an ASCII component). Then a name is not checked
    /// for UTF-8 unless a glob must run.
    raw: bool,
}

/// What the entries of one directory need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Plan {
    /// Every entry takes the full check.
    Full,
    /// The name globs decide, except for an entry with one of these names
    /// (a path rule lacks just that component), which takes the full check.
    Names(Wanted),
    /// [`Plan::Names`] with [`Quick`]'s base: the directory holds no
    /// component of any path rule (most directories), planned without a
    /// comparison per rule and without allocating.
    Base,
}

/// The names that take the full check in a [`Plan::Names`] directory: the
/// one component each of some path rules lacks, as (rule, component)
/// indexes into [`Quick`]'s path rules, with a filter on their first byte
/// and length so that most names are passed over without a comparison.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Wanted {
    /// Bit [`Quick::slot`] of each name's first byte and length.
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
        q.raw = !fold
            && needles.iter().flatten().all(|n| n.text.is_ascii())
            && q.paths.iter().flatten().all(|c| c.is_ascii());
        if q.any_positive {
            // A set that does not build leaves every name to the globs.
            q.needles = needles.and_then(|n| LitSet::new(&n, fold).ok());
        }
        for (i, rule) in q.paths.iter().enumerate() {
            for (j, c) in rule.iter().enumerate() {
                let b = q.slot(c.as_bytes()[0], c.len());
                q.comps.first[usize::from(b >> 6)] |= 1 << (b & 63);
                q.comps.lens |= len_bit(c.len());
                q.comps.at.push((i as u32, j as u32, c.len()));
            }
        }
        // The root's plan: no component is in the root's empty path.
        if let Plan::Names(w) = q.plan_each("") {
            q.base = w;
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
        if self.paths.is_empty() {
            return Plan::Names(Wanted::default());
        }
        if self.fold && !dir.is_ascii() {
            return Plan::Full;
        }
        // No component of the directory is a path rule's: every rule
        // misses all its components, as in the root.
        if !dir
            .as_bytes()
            .split(|&b| b == b'/')
            .any(|c| self.wanted(&self.comps, c))
        {
            return Plan::Base;
        }
        self.plan_each(dir)
    }

    /// [`Quick::plan`], each path rule's components looked for in `dir`.
    fn plan_each(&self, dir: &str) -> Plan {
        if self.opaque {
            return Plan::Full;
        }
        let mut wanted = Wanted::default();
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
                    let b = self.slot(one.as_bytes()[0], one.len());
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

    fn eq_bytes(&self, a: &[u8], b: &[u8]) -> bool {
        if self.fold {
            a.eq_ignore_ascii_case(b)
        } else {
            a == b
        }
    }

    /// The bit of a name with first byte `b` and length `len` in
    /// [`Wanted`]'s filter: both in one lookup, so that a name sharing only
    /// its first byte or only its length with a wanted one (`tree` and
    /// `target`) is mostly passed over too.
    fn slot(&self, b: u8, len: usize) -> u8 {
        // Truncation intended: a hash of the two.
        (usize::from(self.key(b)).wrapping_add(len.wrapping_mul(37)) & 255) as u8
    }

    fn key(&self, b: u8) -> u8 {
        if self.fold { b.to_ascii_lowercase() } else { b }
    }

    /// Whether `name` is one of the names `w` sends to the full check.
    #[inline]
    fn wanted(&self, w: &Wanted, name: &[u8]) -> bool {
        let Some(&b) = name.first() else {
            return false;
        };
        if w.lens & len_bit(name.len()) == 0 || !bit(&w.first, self.slot(b, name.len())) {
            return false;
        }
        self.wanted_among(w, name)
    }

    /// [`Quick::wanted`] past its filter (out of line: most names stop at
    /// the filter).
    #[inline(never)]
    fn wanted_among(&self, w: &Wanted, name: &[u8]) -> bool {
        w.at.iter().any(|&(i, j, len)| {
            len == name.len()
                && self
                    .paths
                    .get(i as usize)
                    .and_then(|r| r.get(j as usize))
                    .is_none_or(|c| self.eq_bytes(c.as_bytes(), name))
        })
    }

    /// Whether the entry `name` (its bytes, as the directory gives them;
    /// one that is not UTF-8 is matched as its lossy spelling) of a
    /// directory with `plan` is hidden, when that can be told from the
    /// name: `None` leaves it to the full set. `globs` gives the hide
    /// globs, all of them, in their order (compiled when first asked for).
    #[inline]
    pub(super) fn hides<'g>(
        &self,
        plan: &Plan,
        globs: impl FnOnce() -> Option<&'g Gitignore>,
        name: &[u8],
        is_dir: bool,
    ) -> Option<bool> {
        let wanted = match plan {
            Plan::Full => return None,
            Plan::Names(w) => w,
            Plan::Base => &self.base,
        };
        // A name that is not ASCII is looked at as its lossy spelling, as
        // the full check sees it (unless its bytes answer the same); where
        // names fold, it takes the full check.
        let lossy;
        let name = if self.raw || name.is_ascii() {
            name
        } else if self.fold {
            return None;
        } else {
            lossy = String::from_utf8_lossy(name);
            lossy.as_bytes()
        };
        if self.wanted(wanted, name) {
            return None;
        }
        if !self.any_positive {
            return Some(false);
        }
        if let Some(n) = &self.needles
            && !n.in_bytes(name)
        {
            return Some(false);
        }
        let g = globs()?;
        let name = String::from_utf8_lossy(name);
        Some(matches!(g.matched(&*name, is_dir), Match::Ignore(_)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory holding no component of any path rule gets the base
    /// plan, which is the plan the rules give it one by one.
    #[test]
    fn the_base_plan_is_each_rules_plan() {
        let rules = [
            "/secrets",
            "config/prod/**",
            "**/private/**",
            "**/node_modules/**",
            "*.pem",
            "a/a/*.x",
        ];
        for fold in [false, true] {
            let ms: Vec<Matcher> = rules
                .iter()
                .map(|r| Matcher::Glob((*r).to_owned()))
                .collect();
            let q = Quick::new(ms.iter(), fold);
            let expand = |p: Plan| match p {
                Plan::Base => Plan::Names(q.base.clone()),
                p => p,
            };
            for dir in [
                "",
                "a",
                "a/b",
                "pkg009/mod004",
                "secrets",
                "x/config",
                "config/x",
                "Config",
                "x/PRIVATE",
                "node_modules/y",
                "priv",
                "privat",
                "private2",
                "conf/prod",
                "b//",
            ] {
                assert_eq!(expand(q.plan(dir)), q.plan_each(dir), "{dir} fold={fold}");
            }
            assert_eq!(q.plan("pkg009/mod004"), Plan::Base);
            assert_ne!(q.plan("x/config"), Plan::Base);
            assert_eq!(q.plan("Config") == Plan::Base, !fold);
            let Plan::Names(w) = q.plan_each("") else {
                panic!("a plan of names");
            };
            // `/secrets`, `**/private/**`, `**/node_modules/**`, `a/a/*.x`.
            assert_eq!(w.at.len(), 4);
        }
    }

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
