//! Which rule decides a path's effect, and the names a rule goes by in
//! messages.
//!
//! Owns: [`Rules::why`], asked only when a call is refused, so that the
//! effect check itself carries no rule identity (it asks the compiled sets
//! again, which glob matched, and compiles the built-in rules one at a
//! time), and the names: [`Rule::label`]
//! for startup messages, [`Why`] for the operator's log line and, for a
//! read-only path only, the agent's reply ([`Why::for_agent`]). A hidden
//! path's rule is never named to the agent: its reply is a missing path's.
//! May touch: the log (one `info` line per refusal, [`Why::log`]).

use ignore::Match;

use super::{Effect, Matcher, Rule, Rules};

/// The rule that decides a path's effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Why {
    /// The rule's id: the rules file's `id`, the flag (`--hide`),
    /// `default` for the built-in set, `git` for what a repository names.
    pub id: String,
    /// Its pattern as written.
    pub pattern: String,
    /// Where it came from, for the log: `built-in`, the flag, `rules file
    /// 'F', rule #2`, or `git: <file> <key>`.
    pub source: String,
    /// How the agent's read-only refusal names it ([`Why::for_agent`]).
    agent: String,
    /// What it does.
    pub effect: Effect,
}

impl Rule {
    /// The rule as startup messages name it: `rules file 'F': rule #2 (id
    /// 'x')` for the rules file's, `--hide '.env'` for a flag's, `built-in
    /// '.git'` for the built-in set's.
    pub fn label(&self) -> String {
        if let Some(n) = self.position {
            return format!("rules file '{}': rule #{n} (id '{}')", self.source, self.id);
        }
        match self.id.as_str() {
            "default" => format!("built-in '{}'", self.pattern),
            "--read-only-dir" => self.source.clone(),
            id if id.starts_with("--") => format!("{id} '{}'", self.pattern),
            id => format!("rule '{id}'"),
        }
    }

    fn why(&self) -> Why {
        let (source, agent) = match (self.position, self.id.as_str()) {
            (Some(n), id) => (
                format!("rules file '{}', rule #{n}", self.source),
                format!("rule \"{id}\" from the rules file"),
            ),
            (None, "default") => (
                "built-in".to_owned(),
                format!("built-in rule '{}'", self.pattern),
            ),
            // The directory as the operator named it may lie outside every
            // root: the agent is not told it.
            (None, "--read-only-dir") => (self.source.clone(), "rule --read-only-dir".to_owned()),
            (None, id) => (self.source.clone(), format!("rule {id} '{}'", self.pattern)),
        };
        Why {
            id: self.id.clone(),
            pattern: self.pattern.clone(),
            source,
            agent,
            effect: self.effect,
        }
    }
}

impl Why {
    /// How a read-only refusal names the rule to the agent (`rule "lock"
    /// from the rules file`, `built-in rule '.git'`, `rule --read-only-path
    /// 'docs/**'`); `None` for any other effect: a hidden path's rule is
    /// never named to the agent.
    pub fn for_agent(&self) -> Option<&str> {
        (self.effect == Effect::ReadOnly).then_some(self.agent.as_str())
    }

    /// The operator's log line (`info`) for a refusal of the client's
    /// path `given` by this rule; the call it belongs to is named by the
    /// span it is logged in (`tool`, `id`).
    pub fn log(&self, given: &str) {
        let what = match self.effect {
            Effect::Hidden => "hidden (answered as missing)",
            Effect::ReadOnly => "read-only",
            Effect::None => return,
        };
        tracing::info!(
            path = given,
            rule = self.id.as_str(),
            pattern = self.pattern.as_str(),
            source = self.source.as_str(),
            "path rule refused: {what}"
        );
    }
}

impl Rules {
    /// The rule that gives the canonical in-root `path` its effect
    /// ([`Rules::effect`]; `is_dir` as there), or `None` when no rule
    /// applies. Asked when a call is refused, never on the way to the
    /// answer (see the module doc for its cost).
    pub fn why(&self, path: &str, is_dir: Option<bool>) -> Option<Why> {
        let effect = self.effect(path, is_dir);
        if effect == Effect::None {
            return None;
        }
        let mut names = vec![path.to_owned()];
        names.extend(self.git.link_names(path, self.case_insensitive));
        for name in &names {
            if self.effect_at(name, is_dir) == effect
                && let Some(why) = self.why_at(name, is_dir, effect)
            {
                return Some(why);
            }
        }
        self.others.iter().find_map(|(r, rel)| {
            let p = rel.there(path)?;
            (r.effect(&p, is_dir) == effect)
                .then(|| r.why(&p, is_dir))
                .flatten()
        })
    }

    /// [`Rules::why`] for this directory's own rules, on `path` alone.
    fn why_at(&self, path: &str, is_dir: Option<bool>, effect: Effect) -> Option<Why> {
        let own = |r: &Rule| r.effect == effect && !r.default;
        let found = match effect {
            Effect::Hidden => self.matched_in(&self.hide, path, is_dir, own),
            Effect::ReadOnly => self
                .matched_in(&self.read_only_own, path, is_dir, own)
                .or_else(|| self.built_in(path, is_dir)),
            Effect::None => None,
        };
        if let Some(r) = found {
            return Some(r.why());
        }
        let git = self.git.protecting(path, is_dir, self.case_insensitive)?;
        Some(Why {
            id: "git".to_owned(),
            pattern: git.path,
            source: git.source,
            agent: "built-in rule: a path git runs or obeys".to_owned(),
            effect: Effect::ReadOnly,
        })
    }

    /// The rule of `set` (its rules: those `of_set` takes) that matches
    /// `path` or the first of its leading directories it matches, as
    /// `Set::covers` matches them: a glob by the set's compiled globs
    /// (which weigh the `!` lines), another matcher alone.
    fn matched_in(
        &self,
        set: &super::Set,
        path: &str,
        is_dir: Option<bool>,
        of_set: impl Fn(&Rule) -> bool,
    ) -> Option<&Rule> {
        let fold = self.case_insensitive;
        let globs = set.globs.get().and_then(Result::ok);
        let mut probes: Vec<(&str, bool)> = path
            .match_indices('/')
            .map(|(i, _)| (&path[..i], true))
            .collect();
        match is_dir {
            Some(d) => probes.push((path, d)),
            None => probes.extend([(path, false), (path, true)]),
        }
        probes.into_iter().find_map(|(p, d)| {
            if let Some(Match::Ignore(glob)) = globs.map(|g| g.matched(p, d)) {
                let line = glob.original();
                let r = self
                    .rules
                    .iter()
                    .find(|r| of_set(r) && matches!(&r.matcher, Matcher::Glob(g) if g == line));
                if r.is_some() {
                    return r;
                }
            }
            self.rules.iter().find(|r| {
                of_set(r)
                    && !matches!(r.matcher, Matcher::Glob(_))
                    && super::other_matches(&r.matcher, p, fold)
            })
        })
    }

    /// The built-in rule that protects `path` once the exemptions are
    /// weighed: each alone, with the exemptions, is compiled and asked (a
    /// few dozen small sets, on a refusal only).
    fn built_in(&self, path: &str, is_dir: Option<bool>) -> Option<&Rule> {
        let exempt: Vec<Rule> = self
            .rules
            .iter()
            .filter(|r| r.effect == Effect::None)
            .cloned()
            .collect();
        self.rules
            .iter()
            .filter(|r| r.default && r.effect == Effect::ReadOnly && !is_lift(r))
            .find(|r| {
                let mut alone = vec![(*r).clone()];
                alone.extend(exempt.iter().cloned());
                Rules::build(alone, self.case_insensitive)
                    .is_ok_and(|a| a.effect_at(path, is_dir) == Effect::ReadOnly)
            })
    }
}

/// Whether a rule is a `!` glob line (it lifts, never decides).
fn is_lift(r: &Rule) -> bool {
    matches!(&r.matcher, Matcher::Glob(g) if g.starts_with('!'))
}

#[cfg(test)]
mod tests {
    use super::super::config::{Spec, build};
    use super::*;

    fn rules(spec: &Spec) -> Rules {
        Rules::new(build(spec).expect("rules").rules).expect("compile")
    }

    fn pattern(r: &Rules, path: &str) -> Option<String> {
        r.why(path, Some(false)).map(|w| w.pattern)
    }

    /// The rule named is one that gives the effect: a `!` line after a
    /// glob lifts it, a later rule of the same set can decide instead.
    #[test]
    fn the_rule_named_is_the_one_that_decides() {
        let r = rules(&Spec {
            hide: vec![".env*".into(), "!.env.example".into(), "secrets".into()],
            read_only: vec!["docs/**".into()],
            no_default: true,
            ..Spec::default()
        });
        assert_eq!(pattern(&r, ".env.local").as_deref(), Some(".env*"));
        assert_eq!(pattern(&r, ".env.example"), None);
        assert_eq!(pattern(&r, "secrets/a/b").as_deref(), Some("secrets"));
        assert_eq!(pattern(&r, "docs/secrets").as_deref(), Some("secrets"));
        let w = r.why("docs/a.md", Some(false)).expect("read-only");
        assert_eq!(w.for_agent(), Some("rule --read-only-path 'docs/**'"));
        let hidden = r.why("secrets", Some(true)).expect("hidden");
        assert_eq!(
            hidden.for_agent(),
            None,
            "a hidden path's rule is never named"
        );
    }

    /// A built-in protection lifted by an exemption is not named; one
    /// beneath it that holds again is.
    #[test]
    fn a_built_in_rule_is_named_where_it_holds() {
        let r = rules(&Spec::default());
        assert_eq!(
            pattern(&r, ".claude/settings.json").as_deref(),
            Some(".claude")
        );
        assert_eq!(pattern(&r, ".claude/skills/x.md"), None);
        assert_eq!(
            pattern(&r, ".claude/skills/s/.git/config").as_deref(),
            Some(".git")
        );
        let w = r.why(".git/config", Some(false)).expect("read-only");
        assert_eq!((w.id.as_str(), w.source.as_str()), ("default", "built-in"));
        assert_eq!(w.for_agent(), Some("built-in rule '.git'"));
    }
}
