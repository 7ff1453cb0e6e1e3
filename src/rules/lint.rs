//! Startup checks for rules that load but cannot do what they read.
//!
//! Owns: the refusals (exit status 2, naming the rule) of a pattern that
//! names no path (`/`, `!`), an unclosed `[` (git matches nothing there,
//! where globset would read the `[` literally), a `!` line with nothing
//! before it to lift (order matters, as in `.gitignore`), and a regex that
//! can never match a path as matched (with a leading `/`: `^secrets`); and
//! the warnings for what is merely suspicious: an `--allow-path` that no
//! built-in protection is under.
//! May touch: nothing (no I/O).

use ignore::Match;
use ignore::gitignore::GitignoreBuilder;
use regex_automata::hybrid::dfa::DFA;
use regex_automata::{Input, util::syntax};

use super::{Effect, Matcher, Rule, Rules};

/// Refuses a glob that names no path, or has an unclosed `[`.
pub(super) fn glob_shape(pattern: &str) -> Result<(), String> {
    let body = pattern.strip_prefix('!').unwrap_or(pattern);
    if body.trim().trim_matches('/').is_empty() {
        return Err(format!(
            "pattern '{pattern}' names no path, and matches nothing (as in git); \
             '**' covers everything in the root, '!name' lifts a name an earlier pattern matched"
        ));
    }
    if unclosed_class(pattern) {
        return Err(format!(
            "pattern '{pattern}' has an unclosed '[': git matches nothing with it, where it \
             would be read literally; write '\\[' for a literal '['"
        ));
    }
    Ok(())
}

/// Whether a `[` opens a class no `]` closes (git's wildmatch: a `]` right
/// after `[`, `[!` or `[^` is a member; `\` escapes the next byte).
fn unclosed_class(p: &str) -> bool {
    let b = p.as_bytes();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'\\' => i += 2,
            b'[' => {
                let mut j = i + 1;
                if matches!(b.get(j), Some(b'!' | b'^')) {
                    j += 1;
                }
                if b.get(j) == Some(&b']') {
                    j += 1;
                }
                loop {
                    match b.get(j) {
                        None => return true,
                        Some(b'\\') => j += 2,
                        Some(b']') => break,
                        Some(_) => j += 1,
                    }
                }
                i = j + 1;
            }
            _ => i += 1,
        }
    }
    false
}

/// States of the lazy DFA [`regex_never_matches`] explores before giving
/// up (and so accepting the regex).
const REGEX_STATES: usize = 4096;

/// Whether `pattern` can match no path as rules see it: `/` followed by
/// the canonical path (`^secrets`, `^[^/]+$`, `^$`). Explores every state
/// the regex's DFA reaches after a leading `/`; gives up, answering
/// `false`, when the DFA is too big or quits.
pub(super) fn regex_never_matches(pattern: &str, fold: bool) -> bool {
    let Ok(dfa) = DFA::builder()
        .syntax(syntax::Config::new().case_insensitive(fold))
        .configure(
            DFA::config()
                .cache_capacity(crate::limits::MAX_REGEX_COMPILED_BYTES * 8)
                .minimum_cache_clear_count(Some(0)),
        )
        .build(pattern)
    else {
        return false;
    };
    let mut cache = dfa.create_cache();
    let Ok(start) = dfa.start_state_forward(&mut cache, &Input::new("/")) else {
        return false;
    };
    let Ok(first) = dfa.next_state(&mut cache, start, b'/') else {
        return false;
    };
    let units: Vec<u8> = dfa
        .byte_classes()
        .representatives(..)
        .filter_map(|u| u.as_u8())
        .collect();
    let mut seen = std::collections::HashSet::from([first]);
    let mut todo = vec![first];
    while let Some(s) = todo.pop() {
        if s.is_match() || s.is_quit() || s.is_unknown() || seen.len() > REGEX_STATES {
            return false;
        }
        if s.is_dead() {
            continue;
        }
        match dfa.next_eoi_state(&mut cache, s) {
            Ok(e) if !e.is_match() && !e.is_quit() => {}
            _ => return false,
        }
        for &u in &units {
            let Ok(n) = dfa.next_state(&mut cache, s, u) else {
                return false;
            };
            if seen.insert(n) {
                todo.push(n);
            }
        }
    }
    cache.clear_count() == 0
}

/// The set a rule's globs join in [`Rules`] (their order there is theirs
/// here): hidden, the operator's read-only, the built-in read-only, the
/// exemptions.
fn slot(r: &Rule) -> usize {
    match (r.effect, r.default) {
        (Effect::Hidden, _) => 0,
        (Effect::ReadOnly, false) => 1,
        (Effect::ReadOnly, true) => 2,
        (Effect::None, _) => 3,
    }
}

/// Whether a glob holds no wildcard, class, brace or escape.
fn literal(g: &str) -> bool {
    !g.contains(['*', '?', '[', '{', '\\'])
}

/// Whether one of `lines` matches the path `probe`, as a file or a
/// directory.
fn any_matches(lines: &[&str], probe: &str, fold: bool) -> bool {
    let mut b = GitignoreBuilder::new(".");
    b.case_insensitive(fold).ok();
    for l in lines {
        if b.add_line(None, l).is_err() {
            return true;
        }
    }
    b.build().is_ok_and(|g| {
        matches!(g.matched(probe, false), Match::Ignore(_))
            || matches!(g.matched(probe, true), Match::Ignore(_))
    })
}

/// The lines of `part` that are not `!` lines.
fn positive<'a>(part: &[(&Rule, &'a str)]) -> Vec<&'a str> {
    part.iter()
        .map(|(_, l)| *l)
        .filter(|l| !l.starts_with('!'))
        .collect()
}

/// Checks the whole rule list: a `!` line that comes before every line it
/// could lift is an error naming it; an `--allow-path` under no built-in
/// protection is a warning (returned, for the log).
pub(super) fn rules(rules: &[Rule], no_default: bool) -> Result<Vec<String>, String> {
    let fold = super::FOLD_CASE;
    for s in 0..4 {
        let set: Vec<(&Rule, &str)> = rules
            .iter()
            .filter(|r| slot(r) == s)
            .filter_map(|r| match &r.matcher {
                Matcher::Glob(g) => Some((r, g.as_str())),
                _ => None,
            })
            .collect();
        for (i, (rule, line)) in set.iter().enumerate() {
            let Some(body) = line.strip_prefix('!') else {
                continue;
            };
            let (before, after) = set.split_at(i);
            let (before, after) = (positive(before), positive(after.get(1..).unwrap_or(&[])));
            let probe = body.trim_matches('/');
            let late = || {
                after
                    .iter()
                    .find(|l| !literal(body) || any_matches(&[l], probe, fold))
            };
            let misplaced = if before.is_empty() {
                Some(late())
            } else if literal(body) && !any_matches(&before, probe, fold) {
                late().map(Some)
            } else {
                None
            };
            let who = match rule.position {
                Some(_) => rule.label(),
                None => format!("rule '{}'", rule.id),
            };
            match misplaced {
                Some(Some(l)) => {
                    return Err(format!(
                        "{who}: '{line}' comes before '{l}', which it would lift: as in \
                         .gitignore, a '!' line lifts only what the lines before it matched; \
                         put it after them"
                    ));
                }
                Some(None) => {
                    return Err(format!(
                        "{who}: '{line}' lifts nothing: no pattern of its kind comes before it"
                    ));
                }
                None => {}
            }
        }
    }
    let mut warnings = duplicates(rules);
    warnings.extend(allow_paths(rules, no_default)?);
    Ok(warnings)
}

/// What a rule matches, as its set compares it: `exact` and `prefix` are
/// one matcher there. `None` for the built-in protections (only the
/// operator's rules are compared) and `--read-only-dir`.
fn key(r: &Rule) -> Option<(&'static str, &str)> {
    if r.default && r.effect != Effect::None {
        return None;
    }
    Some(match &r.matcher {
        Matcher::Glob(g) => ("glob", g.as_str()),
        Matcher::Exact(p) | Matcher::Prefix(p) => ("path", p.as_str()),
        Matcher::Contains(p) => ("contains", p.as_str()),
        Matcher::Regex(_) => ("regex", r.pattern.as_str()),
        Matcher::All => return None,
    })
}

/// Warnings for each rule that does nothing because another matches the
/// same paths: one of the same effect before it, or a hide rule where it
/// makes them read-only (hiding wins).
fn duplicates(rules: &[Rule]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, x) in rules.iter().enumerate() {
        let Some(kx) = key(x) else { continue };
        let over = rules.iter().enumerate().find(|&(j, y)| {
            j != i
                && key(y) == Some(kx)
                && ((y.effect == x.effect && j < i)
                    || (x.effect == Effect::ReadOnly && y.effect == Effect::Hidden))
        });
        if let Some((_, y)) = over {
            let does = match y.effect {
                Effect::Hidden => "hides the same paths",
                Effect::ReadOnly => "makes the same paths read-only",
                Effect::None => "lifts the built-in protections on the same paths",
            };
            out.push(format!(
                "{} does nothing: {} already {does}",
                x.label(),
                y.label()
            ));
        }
    }
    out
}

/// Warnings for each `--allow-path` that lifts no built-in protection.
fn allow_paths(rules: &[Rule], no_default: bool) -> Result<Vec<String>, String> {
    let allow: Vec<&str> = rules
        .iter()
        .filter(|r| r.source == "--allow-path")
        .map(|r| r.pattern.as_str())
        .filter(|p| !p.starts_with('!'))
        .collect();
    if allow.is_empty() {
        return Ok(Vec::new());
    }
    let why = "--allow-path lifts only the built-in protections (--print-config shows them as \
               'default'); it grants no access, and never lifts --hide, --read-only-* or the \
               rules file";
    if no_default {
        return Ok(allow
            .iter()
            .map(|p| {
                format!(
                    "--allow-path '{p}' lifts nothing: --no-default-protection has lifted every \
                     built-in protection ({why})"
                )
            })
            .collect());
    }
    let defaults = Rules::new(
        rules
            .iter()
            .filter(|r| r.default && r.effect == Effect::ReadOnly)
            .cloned()
            .collect(),
    )?;
    Ok(allow
        .iter()
        .filter(|p| literal(p))
        .filter(|p| {
            let probe = p.trim_matches('/');
            defaults.effect(probe, None) == Effect::None
        })
        .map(|p| {
            format!(
                "--allow-path '{p}' lifts nothing: no built-in protection covers '{}' or a \
                 directory above it ({why})",
                p.trim_matches('/')
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A regex is refused when no path, with its leading `/`, can match it.
    #[test]
    fn a_regex_no_path_can_match_is_refused() {
        for re in ["^secrets", "^$", "^[^/]+$", "\\Asecrets", "^(a|b)/c"] {
            assert!(regex_never_matches(re, false), "{re}");
        }
        for re in [
            "^/secrets",
            "secrets",
            "$",
            "^",
            "(^|/)x$",
            "^.*x",
            "\\.pem$",
            "^/",
            "a|^b",
            // A name may hold a newline, after which `(?m)^` matches.
            "(?m)^secrets",
        ] {
            assert!(!regex_never_matches(re, false), "{re}");
        }
        assert!(regex_never_matches("^SECRETS", true));
    }
}
