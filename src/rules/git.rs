//! What the repositories in a root make git run or obey, as read-only
//! rules of that root (source `git`).
//!
//! Owns: the set of in-root paths found by reading each repository's `.git`
//! (the git directory a `.git` file names, its `commondir`, the hooks path,
//! included configs, the targets of hooks that are links; found by
//! [`crate::fs::gitdirs`]), the question "does one of them cover this
//! path?" asked by [`crate::rules::Rules::effect`], and the refresh the
//! resolver asks for before a write ([`GitRules::refresh`]). A path is
//! covered when it is one of them or, for a directory, lies beneath it.
//! Only the operator's `--allow-path` lifts one (matched at or beneath the
//! git path, as for the built-in set); the built-in `.claude/*` exemptions
//! were made for `.claude` and lift none.
//! May touch: nothing (the [`Watch`] it holds does the reading).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// One path git runs or obeys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitRule {
    /// The path relative to the operator's root ("" for the root).
    pub path: String,
    /// Whether what lies beneath it is covered too (a directory).
    pub whole: bool,
    /// Why, for `--print-config`: `git: <file> <key>`.
    pub source: String,
}

/// The paths of one root, as last read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitPaths {
    /// Each path once, in the order found.
    pub rules: Vec<GitRule>,
    /// Symlinks at paths the rules hide or protect, each with the
    /// canonical in-root path it leads to: `(target, link)`. A path at or
    /// beneath a target is also matched as the link's path with the rest
    /// after it (`config/mcp.json` as `.mcp.json`), since the program that
    /// obeys the link's name reads the target.
    pub links: Vec<(String, String)>,
}

impl GitPaths {
    /// Adds `path` unless it is there already (the first source is kept).
    pub fn add(&mut self, path: String, whole: bool, source: &str) {
        if let Some(r) = self.rules.iter_mut().find(|r| r.path == path) {
            r.whole |= whole;
            return;
        }
        self.rules.push(GitRule {
            path,
            whole,
            source: source.to_owned(),
        });
    }

    /// Records that the link at `link` leads to `target` (once).
    pub fn link(&mut self, target: String, link: String) {
        if !self.links.iter().any(|(t, l)| *t == target && *l == link) {
            self.links.push((target, link));
        }
    }

    /// The rules covering `path`, with where each one's path ends in it.
    fn covering<'a>(&'a self, path: &'a str, fold: bool) -> impl Iterator<Item = usize> + 'a {
        self.rules.iter().filter_map(move |r| r.covers(path, fold))
    }
}

impl GitRule {
    /// Where this rule's path ends in `path`, when it covers it.
    fn covers(&self, path: &str, fold: bool) -> Option<usize> {
        let n = self.path.len();
        let head = path.get(..n)?;
        let same = if fold {
            head.eq_ignore_ascii_case(&self.path)
        } else {
            head == self.path
        };
        let ends = path.len() == n;
        let beneath = self.whole && (n == 0 || path.as_bytes().get(n) == Some(&b'/'));
        (same && (ends || beneath)).then_some(n)
    }
}

impl super::Rules {
    /// The git rules of this root: installed at startup, refreshed before
    /// a write resolves.
    pub fn git(&self) -> &GitRules {
        &self.git
    }

    /// Whether names are matched without regard to ASCII case.
    pub fn folds_case(&self) -> bool {
        self.case_insensitive
    }
}

/// Reads a root's repositories again when something they were read from
/// changed.
pub trait Watch: Send + Sync + std::fmt::Debug {
    /// The paths anew when a file they were read from changed since the
    /// last look; `None` when nothing did.
    fn refresh(&self) -> Option<GitPaths>;
}

/// The git rules of one root: the paths in force, the watch that renews
/// them, and the operator's `--allow-path` patterns that lift them.
#[derive(Debug, Default)]
pub struct GitRules {
    /// Whether any path is in force (the effect check's one load when
    /// none is).
    any: AtomicBool,
    paths: RwLock<Arc<GitPaths>>,
    watch: OnceLock<Box<dyn Watch>>,
    /// `--allow-path`, compiled (none given: `None`).
    allow: OnceLock<Option<Gitignore>>,
}

impl GitRules {
    /// Puts `paths` in force and keeps `watch` to renew them; `allow` are
    /// the operator's `--allow-path` patterns. Called once, at startup.
    pub fn install(&self, paths: GitPaths, watch: Box<dyn Watch>, allow: &[&str], fold: bool) {
        let allow = (!allow.is_empty())
            .then(|| {
                let mut b = GitignoreBuilder::new(".");
                b.case_insensitive(fold).ok();
                for a in allow {
                    b.add_line(None, a).ok();
                }
                b.build().ok()
            })
            .flatten();
        self.allow.set(allow).ok();
        self.set(paths);
        self.watch.set(watch).ok();
    }

    fn set(&self, paths: GitPaths) {
        self.any.store(
            !paths.rules.is_empty() || !paths.links.is_empty(),
            Ordering::Release,
        );
        *crate::sync::write(&self.paths) = Arc::new(paths);
    }

    /// The paths in force now.
    pub fn current(&self) -> Arc<GitPaths> {
        crate::sync::read(&self.paths).clone()
    }

    /// Reads the repositories again if a file they were read from changed:
    /// called by the resolver before it resolves a path for a call that
    /// may write.
    pub fn refresh(&self) {
        if let Some(paths) = self.watch.get().and_then(|w| w.refresh()) {
            tracing::info!(
                "git: repositories changed; {} paths in force",
                paths.rules.len()
            );
            self.set(paths);
        }
    }

    /// The other names of `path` through the links that lead to it or to
    /// a directory above it ([`GitPaths::links`]): each link's path with
    /// the rest of `path` after the target.
    pub fn link_names(&self, path: &str, fold: bool) -> Vec<String> {
        if !self.any.load(Ordering::Acquire) {
            return Vec::new();
        }
        let paths = self.current();
        paths
            .links
            .iter()
            .filter_map(|(target, link)| {
                let head = path.get(..target.len())?;
                let same = if fold {
                    head.eq_ignore_ascii_case(target)
                } else {
                    head == target
                };
                let rest = &path[target.len()..];
                (same && (rest.is_empty() || rest.starts_with('/')))
                    .then(|| format!("{link}{rest}"))
            })
            .collect()
    }

    /// Whether a git path covers `path` (not lifted by `--allow-path`).
    /// `is_dir` as for [`crate::rules::Rules::effect`].
    pub fn protects(&self, path: &str, is_dir: Option<bool>, fold: bool) -> bool {
        if !self.any.load(Ordering::Acquire) {
            return false;
        }
        let paths = self.current();
        let allow = self.allow.get().and_then(Option::as_ref);
        paths
            .covering(path, fold)
            .any(|end| allow.is_none_or(|a| !lifted(a, path, end, is_dir)))
    }
}

impl GitRules {
    /// The git path that protects `path` ([`GitRules::protects`]), for
    /// naming it in a refusal.
    pub fn protecting(&self, path: &str, is_dir: Option<bool>, fold: bool) -> Option<GitRule> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        let paths = self.current();
        let allow = self.allow.get().and_then(Option::as_ref);
        paths
            .rules
            .iter()
            .find(|r| {
                r.covers(path, fold)
                    .is_some_and(|end| allow.is_none_or(|a| !lifted(a, path, end, is_dir)))
            })
            .cloned()
    }
}

/// Whether an `--allow-path` pattern matches `path` or a prefix of it
/// that ends at or after `end` (at or beneath the git path).
fn lifted(allow: &Gitignore, path: &str, end: usize, is_dir: Option<bool>) -> bool {
    let hit = |p: &str, d: bool| matches!(allow.matched(p, d), Match::Ignore(_));
    let dirs = path
        .bytes()
        .enumerate()
        .skip(end.max(1))
        .filter(|&(_, b)| b == b'/');
    for (k, _) in dirs {
        if hit(&path[..k], true) {
            return true;
        }
    }
    match is_dir {
        Some(d) => hit(path, d),
        None => hit(path, false) || hit(path, true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Never;
    impl Watch for Never {
        fn refresh(&self) -> Option<GitPaths> {
            None
        }
    }

    fn rules(paths: &[(&str, bool)], allow: &[&str]) -> GitRules {
        let mut p = GitPaths::default();
        for (path, whole) in paths {
            p.add((*path).to_owned(), *whole, "git: test");
        }
        let g = GitRules::default();
        g.install(p, Box::new(Never), allow, false);
        g
    }

    #[test]
    fn a_git_path_covers_itself_and_what_is_beneath_a_directory() {
        let g = rules(&[(".githooks", true), ("scripts/pre-commit", false)], &[]);
        for (path, want) in [
            (".githooks", true),
            (".githooks/pre-commit", true),
            (".githooksx", false),
            ("scripts/pre-commit", true),
            ("scripts/pre-commit/x", false),
            ("scripts", false),
            ("", false),
        ] {
            assert_eq!(g.protects(path, None, false), want, "{path}");
        }
        assert!(GitRules::default().protects("", None, false).eq(&false));
        let root = rules(&[("", true)], &[]);
        assert!(root.protects("a/b", None, false));
        assert!(rules(&[(".githooks", true)], &[]).protects(".GITHOOKS/x", None, true));
    }

    #[test]
    fn allow_path_lifts_a_git_path_at_or_beneath_it_only() {
        let g = rules(&[("tools/hooks", true)], &["/tools/hooks/pre-commit"]);
        assert!(!g.protects("tools/hooks/pre-commit", None, false));
        assert!(g.protects("tools/hooks/pre-push", None, false));
        let g = rules(&[("tools/hooks", true)], &["/tools/hooks"]);
        assert!(!g.protects("tools/hooks/pre-push", None, false));
        // Matched above the git path: lifts nothing.
        let g = rules(&[("tools/hooks", true)], &["/tools"]);
        assert!(g.protects("tools/hooks/pre-push", None, false));
    }
}
