//! Path rules: which paths inside a root are hidden or read-only.
//!
//! Owns: the compiled rule set of one root and the one question asked of
//! it, "what effect does this canonical in-root path have?"
//! ([`Rules::effect`]). A rule on a directory covers everything beneath it:
//! every prefix of the path is matched, so `secrets` covers `secrets/a/b`.
//! Paths are canonical (no `.`, `..`, symlink or repeated `/`), relative to
//! the operator's root, components joined by `/`; the resolver
//! ([`crate::fs::canon`]) and the walks produce them, never a client string.
//!
//! Two effects, the stronger winning: [`Effect::Hidden`] (the path does not
//! exist for the client) and [`Effect::ReadOnly`] (readable, never changed).
//! Exemptions lift a default protection for the paths they match (e.g.
//! `.claude/commands` inside a read-only `.claude`); they never lift a rule
//! the operator wrote.
//!
//! Building a rule set from flags and the rules file is in [`config`].
//! May touch: nothing (no I/O).

pub mod config;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use regex_automata::meta::Regex;

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
}

/// The rules of one effect: one gitignore matcher for every glob, and the
/// other matchers, tried one by one.
#[derive(Debug, Default)]
struct Set {
    globs: Option<Gitignore>,
    others: Vec<Matcher>,
}

impl Set {
    fn is_empty(&self) -> bool {
        self.globs.is_none() && self.others.is_empty()
    }

    /// Whether `path` itself (not its prefixes) matches.
    fn matches(&self, path: &str, is_dir: bool, fold: bool) -> bool {
        if let Some(g) = &self.globs
            && matches!(g.matched(path, is_dir), Match::Ignore(_))
        {
            return true;
        }
        self.others.iter().any(|m| other_matches(m, path, fold))
    }

    /// Whether `path` or any of its leading prefixes matches (each prefix
    /// but the last is a directory).
    fn covers(&self, path: &str, is_dir: bool, fold: bool) -> bool {
        if self.is_empty() || path.is_empty() {
            return matches!(self.others.first(), Some(Matcher::All));
        }
        let mut end = 0;
        while let Some(i) = path[end..].find('/') {
            let prefix = &path[..end + i];
            if self.matches(prefix, true, fold) {
                return true;
            }
            end += i + 1;
        }
        self.matches(path, is_dir, fold)
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
        Matcher::Regex(r) => r.is_match(path),
        Matcher::Contains(p) => {
            if fold {
                path.to_ascii_lowercase()
                    .contains(p.to_ascii_lowercase().as_str())
            } else {
                path.contains(p.as_str())
            }
        }
    }
}

/// Whether names are matched without regard to ASCII case: where the
/// filesystem commonly folds case (macOS, and the portable backend that
/// stands in for it), `./.ENV` is the file `.env`.
pub const FOLD_CASE: bool = cfg!(any(target_os = "macos", feature = "portable"));

impl Rules {
    /// Compiles `rules`. A glob that does not compile is an error naming the
    /// rule.
    pub fn new(rules: Vec<Rule>) -> Result<Self, String> {
        let fold = FOLD_CASE;
        let mut out = Rules {
            case_insensitive: fold,
            ..Rules::default()
        };
        let mut builders: [Option<GitignoreBuilder>; 4] = [None, None, None, None];
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
                    let b = builders[slot].get_or_insert_with(|| {
                        let mut b = GitignoreBuilder::new(".");
                        b.case_insensitive(fold).ok();
                        b
                    });
                    b.add_line(None, g)
                        .map_err(|e| format!("rule '{}': bad pattern '{g}': {e}", rule.id))?;
                }
                Matcher::All => set.others.insert(0, Matcher::All),
                Matcher::Exact(p) | Matcher::Prefix(p) => {
                    set.others.push(Matcher::Exact(p.clone()));
                }
                other => set.others.push(other.clone()),
            }
        }
        for (slot, b) in builders.iter().enumerate() {
            let Some(b) = b else { continue };
            let g = b.build().map_err(|e| format!("bad pattern: {e}"))?;
            let set = match slot {
                0 => &mut out.hide,
                1 => &mut out.read_only_own,
                2 => &mut out.read_only_default,
                _ => &mut out.exempt,
            };
            set.globs = Some(g);
        }
        out.rules = rules;
        Ok(out)
    }

    /// Whether no rule is in force (the resolver then takes its plain path).
    pub fn is_empty(&self) -> bool {
        self.hide.is_empty() && self.read_only_own.is_empty() && self.read_only_default.is_empty()
    }

    /// Whether some rule may hide a path (walks check each entry only then).
    pub fn hides_any(&self) -> bool {
        !self.hide.is_empty()
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
        let both = |set: &Set| match is_dir {
            Some(d) => set.covers(path, d, self.case_insensitive),
            None => {
                set.covers(path, false, self.case_insensitive)
                    || set.covers(path, true, self.case_insensitive)
            }
        };
        if both(&self.hide) {
            return Effect::Hidden;
        }
        if both(&self.read_only_own) {
            return Effect::ReadOnly;
        }
        if both(&self.read_only_default) && !both(&self.exempt) {
            return Effect::ReadOnly;
        }
        Effect::None
    }

    /// Whether the entry at canonical `path`, whose parent directory is not
    /// hidden, is hidden: only `path` itself is matched (a walk has checked
    /// the prefixes on its way down).
    pub fn hides_entry(&self, path: &str, is_dir: bool) -> bool {
        self.hide.matches(path, is_dir, self.case_insensitive)
    }
}

/// What a walk checks each entry against: a root's rules and the
/// canonical path (beneath its operator root) of the directory the walk
/// starts from. Only built when some rule may hide a path.
#[derive(Debug, Clone)]
pub struct Hide {
    rules: std::sync::Arc<Rules>,
    base: String,
}

impl Hide {
    /// Rules checked beneath `base`, or `None` when they hide nothing.
    pub fn new(rules: &std::sync::Arc<Rules>, base: String) -> Option<Self> {
        rules.hides_any().then(|| Self {
            rules: rules.clone(),
            base,
        })
    }

    /// A checker for the entries of the directory at `dir_rel` (relative to
    /// the walk's start), which builds each entry's path in one buffer.
    pub fn in_dir(&self, dir_rel: &str) -> HideDir<'_> {
        let mut buf = String::with_capacity(self.base.len() + dir_rel.len() + 64);
        buf.push_str(&self.base);
        if !dir_rel.is_empty() {
            if !buf.is_empty() {
                buf.push('/');
            }
            buf.push_str(dir_rel);
        }
        if !buf.is_empty() {
            buf.push('/');
        }
        let len = buf.len();
        HideDir {
            rules: &self.rules,
            buf,
            len,
        }
    }

    /// Whether the entry at `rel` (relative to the walk's start; its parent
    /// was not hidden) is hidden.
    pub fn hides(&self, rel: &str, is_dir: bool) -> bool {
        if self.base.is_empty() {
            return self.rules.hides_entry(rel, is_dir);
        }
        thread_local! {
            static BUF: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
        }
        BUF.with(|b| {
            let Ok(mut buf) = b.try_borrow_mut() else {
                return self
                    .rules
                    .hides_entry(&format!("{}/{rel}", self.base), is_dir);
            };
            buf.clear();
            buf.push_str(&self.base);
            buf.push('/');
            buf.push_str(rel);
            self.rules.hides_entry(&buf, is_dir)
        })
    }
}

/// [`Hide`] for the entries of one directory.
#[derive(Debug)]
pub struct HideDir<'a> {
    rules: &'a Rules,
    buf: String,
    len: usize,
}

impl HideDir<'_> {
    /// Whether the entry `name` of this directory is hidden.
    pub fn hides(&mut self, name: &str, is_dir: bool) -> bool {
        self.buf.truncate(self.len);
        self.buf.push_str(name);
        self.rules.hides_entry(&self.buf, is_dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(p: &str, effect: Effect) -> Rule {
        Rule {
            id: p.to_owned(),
            source: "test".to_owned(),
            pattern: p.to_owned(),
            matcher: Matcher::Glob(p.to_owned()),
            effect,
            default: false,
        }
    }

    #[test]
    fn gitignore_shapes() {
        let r = Rules::new(vec![
            rule(".env", Effect::Hidden),
            rule("/secrets", Effect::Hidden),
            rule("keys/**", Effect::Hidden),
            rule(".git", Effect::ReadOnly),
        ])
        .unwrap();
        let e = |p: &str| r.effect(p, Some(false));
        assert_eq!(e(".env"), Effect::Hidden);
        assert_eq!(e("a/b/.env"), Effect::Hidden);
        assert_eq!(e(".env/x"), Effect::Hidden);
        assert_eq!(e(".envrc"), Effect::None);
        assert_eq!(e("secrets/x"), Effect::Hidden);
        assert_eq!(e("a/secrets/x"), Effect::None);
        assert_eq!(e("keys"), Effect::None);
        assert_eq!(e("keys/k"), Effect::Hidden);
        assert_eq!(e(".git/hooks/pre-commit"), Effect::ReadOnly);
        assert_eq!(e("sub/.git/config"), Effect::ReadOnly);
        assert_eq!(e("src/main.rs"), Effect::None);
        assert_eq!(e(""), Effect::None);
        assert!(r.hides_entry("x/.env", false));
        assert!(!r.hides_entry("x/y", false));
    }

    #[test]
    fn exemptions_lift_defaults_only() {
        let mut d = rule(".claude", Effect::ReadOnly);
        d.default = true;
        let mut ex = rule(".claude/commands", Effect::None);
        ex.default = true;
        let r = Rules::new(vec![d, ex, rule("/.claude/commands/x", Effect::ReadOnly)]).unwrap();
        assert_eq!(
            r.effect(".claude/settings.json", Some(false)),
            Effect::ReadOnly
        );
        assert_eq!(r.effect(".claude/commands/a.md", Some(false)), Effect::None);
        assert_eq!(
            r.effect(".claude/commands/x", Some(false)),
            Effect::ReadOnly
        );
    }
}
