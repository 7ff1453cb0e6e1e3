//! Path rules: which paths inside a root are hidden or read-only.
//!
//! Owns: the compiled rule set of one root and the one question asked of
//! it, "what effect does this canonical in-root path have?"
//! ([`Rules::effect`]). A rule on a directory covers everything beneath it:
//! every prefix of the path is matched, so `secrets` covers `secrets/a/b`.
//! Paths are canonical (no `.`, `..`, symlink or repeated `/`), relative to
//! the operator's root, components joined by `/`; the resolver
//! ([`crate::fs::resolve`]) and the walks produce them, never a client string.
//!
//! Two effects, the stronger winning: [`Effect::Hidden`] (the path does not
//! exist for the client) and [`Effect::ReadOnly`] (readable, never changed).
//! Exemptions lift a default protection for the paths they match (e.g.
//! `.claude/commands` inside a read-only `.claude`), only the protections
//! matched at or above the exempt path (a `.git` beneath
//! `.claude/skills` is protected again); they never lift a rule the
//! operator wrote.
//!
//! Building a rule set from flags and the rules file is in [`config`].
//! May touch: nothing (no I/O).

pub mod config;
mod defaults;
pub mod git;
pub mod gitconfig;
mod hide;
mod lint;
mod lits;
mod needles;
mod probes;
mod quick;
mod why;

use std::sync::OnceLock;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use regex_automata::meta::Regex;

use crate::limits::EAGER_GLOB_BYTES;
use needles::Needles;
use quick::Quick;

pub use hide::{Hide, HideDir};
pub use why::Why;

/// What the rules make of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Effect {
    /// No rule applies.
    #[default]
    None,
    /// Readable and listable; nothing may write, create, move or remove it.
    ReadOnly,
    /// Absent for the client: every tool answers as for a missing path.
    Hidden,
}

/// How a rule's pattern is matched against each prefix of a path.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// `.gitignore` syntax (compiled into the root's [`Gitignore`] sets).
    Glob(String),
    /// The whole prefix equals the pattern (and so covers what is beneath).
    Exact(String),
    /// The pattern's components are a leading run of the path's.
    Prefix(String),
    /// The regex matches somewhere in a prefix.
    Regex(Box<Regex>),
    /// The prefix contains the pattern.
    Contains(String),
    /// Everything in the root (a `--read-only-dir` that contains the root).
    All,
}

/// One rule: a matcher, its effect, and where it came from.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The rule's name in messages and `--print-config` (`--hide`,
    /// `default`, the rules file's `id`).
    pub id: String,
    /// Where it came from: `default`, `--hide`, `--read-only-path`,
    /// `--read-only-dir`, `--allow-path`, or the rules file's path.
    pub source: String,
    /// The pattern as written, for `--print-config`.
    pub pattern: String,
    /// How it matches.
    pub matcher: Matcher,
    /// What it does; [`Effect::None`] for an exemption.
    pub effect: Effect,
    /// Whether it is a built-in protection that `--allow-path` can lift.
    pub default: bool,
    /// Its place in the rules file, from 1 (`None`: not from the file).
    pub position: Option<usize>,
}

/// The compiled rules of one root.
#[derive(Debug, Default)]
pub struct Rules {
    /// Every rule, for `--print-config` and `list_allowed_directories`.
    rules: Vec<Rule>,
    hide: Set,
    read_only_own: Set,
    read_only_default: Set,
    exempt: Set,
    case_insensitive: bool,
    /// The walks' first look at the hide rules.
    quick: Quick,
    /// The rules of the other operator directories that contain this one
    /// or lie inside it (`tuls filesystem /r /r/sub`): a path is matched
    /// against the rules of every operator directory that contains it.
    others: Vec<(std::sync::Arc<Rules>, Relation)>,
    /// What the root's repositories make git run or obey (`rules::git`).
    git: git::GitRules,
}

/// Where another operator directory lies from this one.
#[derive(Debug, Clone)]
pub enum Relation {
    /// It contains this one, which is at this path beneath it.
    Outer(String),
    /// It lies inside this one, at this path.
    Inner(String),
}

impl Relation {
    /// `path` (beneath this directory) as the other directory's rules see
    /// it, when that directory contains it.
    fn there(&self, path: &str) -> Option<String> {
        match self {
            Relation::Outer(at) if path.is_empty() => Some(at.clone()),
            Relation::Outer(at) => Some(format!("{at}/{path}")),
            Relation::Inner(at) => match path.strip_prefix(at.as_str()) {
                Some("") => Some(String::new()),
                Some(rest) => rest.strip_prefix('/').map(str::to_owned),
                None => None,
            },
        }
    }
}

/// The rules of one effect: one gitignore matcher for every glob, and the
/// other matchers, tried one by one.
#[derive(Debug, Default)]
struct Set {
    globs: Globs,
    /// What a path needs for some glob to match it (see `rules::needles`).
    needles: Needles,
    others: Vec<Matcher>,
    /// What the set answers for a path its globs must decide when they did
    /// not compile: fail closed (a hidden or read-only set covers it, an
    /// exemption lifts nothing).
    broken_covers: bool,
}

/// The globs of one set: checked at startup, parsed and compiled (into
/// one [`Gitignore`]) when a path first needs them, since a set of a few
/// dozen globs takes longer to compile than the process to start, and
/// most paths never reach them (see `rules::needles`).
#[derive(Debug, Default)]
struct Globs {
    /// The `.gitignore` lines, in order (none: the set has no glob).
    lines: Vec<String>,
    fold: bool,
    /// `None` inside: they did not compile (only possible past
    /// [`EAGER_GLOB_BYTES`], where startup compiles and stops on it; kept
    /// as a fail-closed answer all the same).
    compiled: OnceLock<Option<Gitignore>>,
}

/// Whether `ignore` may refuse the line: only a class, braces or an escape
/// can make a glob fail to parse (globset's parser has no other error), so
/// only such a line is parsed at startup, the others when first needed.
fn may_not_parse(line: &str) -> bool {
    line.contains(['[', '{', '}', '\\'])
}

impl Globs {
    fn is_none(&self) -> bool {
        self.lines.is_empty()
    }

    /// Parses and compiles the lines.
    fn build(&self) -> Result<Gitignore, ignore::Error> {
        let mut b = GitignoreBuilder::new(".");
        b.case_insensitive(self.fold)?;
        for l in &self.lines {
            b.add_line(None, l)?;
        }
        b.build()
    }

    /// The compiled globs (compiling them on first use); `Err` when they
    /// did not compile.
    fn get(&self) -> Option<Result<&Gitignore, ()>> {
        if self.is_none() {
            return None;
        }
        let compiled = self.compiled.get_or_init(|| match self.build() {
            Ok(g) => Some(g),
            Err(e) => {
                tracing::error!("path rules did not compile ({e}); failing closed");
                None
            }
        });
        Some(compiled.as_ref().ok_or(()))
    }
}

impl Set {
    fn is_empty(&self) -> bool {
        self.globs.is_none() && self.others.is_empty()
    }

    /// The globs worth running on `path` and its prefixes: none when the
    /// path holds none of the literals they need.
    fn globs_for(&self, path: &str) -> Option<Result<&Gitignore, ()>> {
        if self.globs.is_none() || !self.needles.may_match(path) {
            return None;
        }
        self.globs.get()
    }

    /// Whether `path` itself (not its prefixes) matches.
    fn matches(&self, path: &str, is_dir: bool, fold: bool) -> bool {
        self.matches_with(self.globs_for(path), path, is_dir, fold)
    }

    /// [`Set::matches`] with the globs worth running (`globs`).
    fn matches_with(
        &self,
        globs: Option<Result<&Gitignore, ()>>,
        path: &str,
        is_dir: bool,
        fold: bool,
    ) -> bool {
        match globs {
            Some(Ok(g)) if matches!(g.matched(path, is_dir), Match::Ignore(_)) => return true,
            Some(Err(())) if self.broken_covers => return true,
            _ => {}
        }
        self.others.iter().any(|m| other_matches(m, path, fold))
    }

    /// Whether `path` or any of its leading prefixes matches (each prefix
    /// but the last is a directory). `is_dir` says whether the path itself
    /// is a directory; `None` (it does not exist yet) checks it both ways.
    fn covers(&self, path: &str, is_dir: Option<bool>, fold: bool) -> bool {
        if self.is_empty() || path.is_empty() {
            return matches!(self.others.first(), Some(Matcher::All));
        }
        // One look at the whole path answers for every prefix of it.
        let globs = self.globs_for(path);
        if globs.is_none() && self.others.is_empty() {
            return false;
        }
        let m = |p: &str, d: bool| self.matches_with(globs, p, d, fold);
        let mut end = 0;
        while let Some(i) = path[end..].find('/') {
            if m(&path[..end + i], true) {
                return true;
            }
            end += i + 1;
        }
        match is_dir {
            Some(d) => m(path, d),
            None => m(path, false) || m(path, true),
        }
    }
}

fn other_matches(m: &Matcher, path: &str, fold: bool) -> bool {
    let eq = |a: &str, b: &str| {
        if fold {
            a.eq_ignore_ascii_case(b)
        } else {
            a == b
        }
    };
    match m {
        Matcher::Glob(_) => false,
        Matcher::All => true,
        Matcher::Exact(p) | Matcher::Prefix(p) => eq(p, path),
        // `regex` and `contains` see the path with a leading `/`, as the
        // operator writes it (`^/secrets`, `/.env`); rules with them are few.
        Matcher::Regex(r) => r.is_match(&format!("/{path}")),
        Matcher::Contains(p) if fold => format!("/{path}")
            .to_ascii_lowercase()
            .contains(p.to_ascii_lowercase().as_str()),
        Matcher::Contains(p) => format!("/{path}").contains(p.as_str()),
    }
}

/// Whether names are matched without regard to ASCII case: where the
/// filesystem commonly folds case (macOS, and the portable backend that
/// stands in for it), `./.ENV` is the file `.env`.
pub const FOLD_CASE: bool = cfg!(any(target_os = "macos", feature = "portable"));

impl Rules {
    /// Compiles `rules`. A glob that does not parse is an error naming the
    /// rule; so is a set of globs too big to compile (a set of up to
    /// [`EAGER_GLOB_BYTES`] always compiles, and does so when first
    /// needed).
    pub fn new(rules: Vec<Rule>) -> Result<Self, String> {
        Self::build(rules, FOLD_CASE)
    }

    /// [`Rules::new`], folding ASCII case in names or not.
    fn build(rules: Vec<Rule>, fold: bool) -> Result<Self, String> {
        let mut out = Rules {
            case_insensitive: fold,
            ..Rules::default()
        };
        // Checks the lines that may not parse, naming the rule.
        let mut check = GitignoreBuilder::new(".");
        check.case_insensitive(fold).ok();
        let mut lines: [Vec<&str>; 4] = Default::default();
        for rule in &rules {
            let slot = match (rule.effect, rule.default) {
                (Effect::Hidden, _) => 0,
                (Effect::ReadOnly, false) => 1,
                (Effect::ReadOnly, true) => 2,
                (Effect::None, _) => 3,
            };
            let set = match slot {
                0 => &mut out.hide,
                1 => &mut out.read_only_own,
                2 => &mut out.read_only_default,
                _ => &mut out.exempt,
            };
            match &rule.matcher {
                Matcher::Glob(g) => {
                    if may_not_parse(g) {
                        check
                            .add_line(None, g)
                            .map_err(|e| format!("rule '{}': bad pattern '{g}': {e}", rule.id))?;
                    }
                    lines[slot].push(g);
                }
                Matcher::All => set.others.insert(0, Matcher::All),
                Matcher::Exact(p) | Matcher::Prefix(p) => {
                    set.others.push(Matcher::Exact(p.clone()));
                }
                other => set.others.push(other.clone()),
            }
        }
        for (slot, lines) in lines.into_iter().enumerate() {
            let set = match slot {
                0 => &mut out.hide,
                1 => &mut out.read_only_own,
                2 => &mut out.read_only_default,
                _ => &mut out.exempt,
            };
            set.broken_covers = slot != 3;
            if lines.is_empty() {
                continue;
            }
            set.needles = Needles::new(lines.iter().copied(), fold);
            set.globs.fold = fold;
            set.globs.lines = lines.iter().map(|&l| l.to_owned()).collect();
            if lines.iter().map(|l| l.len()).sum::<usize>() > EAGER_GLOB_BYTES {
                let g = set.globs.build().map_err(|e| format!("bad pattern: {e}"))?;
                set.globs.compiled.set(Some(g)).ok();
            }
        }
        out.quick = Quick::new(
            rules
                .iter()
                .filter(|r| r.effect == Effect::Hidden)
                .map(|r| &r.matcher),
            fold,
        );
        out.rules = rules;
        Ok(out)
    }

    /// These rules, also matching every path against `others`: the rules
    /// of the other operator directories that contain this one or lie
    /// inside it.
    pub fn with_others(mut self, others: Vec<(std::sync::Arc<Rules>, Relation)>) -> Self {
        self.others = others;
        self
    }

    /// Whether no rule is in force (the resolver then takes its plain path).
    pub fn is_empty(&self) -> bool {
        self.hide.is_empty()
            && self.read_only_own.is_empty()
            && self.read_only_default.is_empty()
            && self.others.iter().all(|(r, _)| r.is_empty())
    }

    /// The hide globs, compiled (`None` when there are none or they did
    /// not compile: then the full check decides, failing closed).
    fn hide_globs(&self) -> Option<&Gitignore> {
        self.hide.globs.get().and_then(Result::ok)
    }

    /// Whether some rule may hide a path (walks check each entry only then).
    pub fn hides_any(&self) -> bool {
        !self.hide.is_empty() || self.others.iter().any(|(r, _)| r.hides_any())
    }

    /// The rules, for `--print-config` and `list_allowed_directories`.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The read-only patterns and the exemptions from them, as written,
    /// for `list_allowed_directories` (hidden patterns are never named).
    pub fn read_only_patterns(&self) -> (Vec<&str>, Vec<&str>) {
        let mut ro = Vec::new();
        let mut exempt = Vec::new();
        for r in &self.rules {
            let list = match r.effect {
                Effect::ReadOnly => &mut ro,
                Effect::None => &mut exempt,
                Effect::Hidden => continue,
            };
            if !list.contains(&r.pattern.as_str()) {
                list.push(r.pattern.as_str());
            }
        }
        (ro, exempt)
    }

    /// The effect on the canonical in-root `path` ("" for the root itself):
    /// the strongest over the path and every prefix of it. `is_dir` says
    /// whether the path itself is a directory; a path that does not exist
    /// yet is checked both ways.
    pub fn effect(&self, path: &str, is_dir: Option<bool>) -> Effect {
        self.others
            .iter()
            .filter_map(|(r, rel)| rel.there(path).map(|p| r.effect(&p, is_dir)))
            .fold(self.own_effect(path, is_dir), Effect::max)
    }

    /// [`Rules::effect`] of this directory's own rules, over `path` and
    /// the names the links found at protected or hidden paths give it
    /// ([`git::GitRules::link_names`]).
    fn own_effect(&self, path: &str, is_dir: Option<bool>) -> Effect {
        self.git
            .link_names(path, self.case_insensitive)
            .iter()
            .map(|name| self.effect_at(name, is_dir))
            .fold(self.effect_at(path, is_dir), Effect::max)
    }

    /// [`Rules::own_effect`] of `path` alone.
    fn effect_at(&self, path: &str, is_dir: Option<bool>) -> Effect {
        let both = |set: &Set| set.covers(path, is_dir, self.case_insensitive);
        if both(&self.hide) {
            return Effect::Hidden;
        }
        if both(&self.read_only_own) {
            return Effect::ReadOnly;
        }
        if both(&self.read_only_default) && self.default_protects(path, is_dir) {
            return Effect::ReadOnly;
        }
        // git: what the root's repositories make git run or obey.
        if self.git.protects(path, is_dir, self.case_insensitive) {
            return Effect::ReadOnly;
        }
        Effect::None
    }

    /// Whether a built-in protection holds at `path` once the exemptions
    /// are weighed: the path's prefixes are taken from the root down, a
    /// built-in rule matching one protects it and what is beneath, and an
    /// exemption matching one lifts the protections matched at or above it
    /// only. So `.claude/skills` lifts `.claude`, but a `.git` beneath it
    /// (`.claude/skills/foo/.git/config`) is protected again, unless an
    /// exemption names that path too.
    fn default_protects(&self, path: &str, is_dir: Option<bool>) -> bool {
        let (ro, ex) = (&self.read_only_default, &self.exempt);
        if ex.is_empty() {
            return true;
        }
        let fold = self.case_insensitive;
        let (ro_globs, ex_globs) = (ro.globs_for(path), ex.globs_for(path));
        let hit = |set: &Set, globs, p: &str, d: Option<bool>| match d {
            Some(d) => set.matches_with(globs, p, d, fold),
            None => {
                set.matches_with(globs, p, false, fold) || set.matches_with(globs, p, true, fold)
            }
        };
        let mut protected = false;
        let mut end = 0;
        loop {
            let (p, d, next) = match path[end..].find('/') {
                Some(i) => (&path[..end + i], Some(true), Some(end + i + 1)),
                None => (path, is_dir, None),
            };
            if hit(ro, ro_globs, p, d) {
                protected = true;
            }
            if protected && hit(ex, ex_globs, p, d) {
                protected = false;
            }
            match next {
                Some(n) => end = n,
                None => return protected,
            }
        }
    }

    /// Whether the entry at canonical `path`, whose parent directory is not
    /// hidden, is hidden: only `path` itself is matched (a walk has checked
    /// the prefixes on its way down).
    pub fn hides_entry(&self, path: &str, is_dir: bool) -> bool {
        self.hide.matches(path, is_dir, self.case_insensitive)
            || self.others.iter().any(|(r, rel)| {
                rel.there(path)
                    .is_some_and(|p| !p.is_empty() && r.hides_entry(&p, is_dir))
            })
    }

    /// Whether the walks' first look (by name, `rules::quick`) may decide
    /// an entry: not when other operator directories' rules must be
    /// matched too.
    fn quick_decides(&self) -> bool {
        self.others.is_empty()
    }
}

#[cfg(test)]
mod tests;
