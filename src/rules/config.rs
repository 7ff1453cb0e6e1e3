//! Building the rule list from the operator's flags, the built-in
//! protections and a rules file.
//!
//! Owns: the rules-file schema and its validation, and the mapping of every
//! flag and of the built-in set (`rules::defaults`, re-exported here) to
//! [`Rule`]s. Everything fails closed: a malformed rule, an unknown field
//! or method, a bad regex, an over-complex glob, or a rule that can never
//! do what it reads (`rules::lint`) is an error naming the rule, and
//! startup stops with exit status 2.
//! May touch: nothing (no I/O; the file's bytes are read by startup).

use serde::Deserialize;

pub use super::defaults::{DEFAULT_EXEMPT, DEFAULT_READ_ONLY, SECRET_PRESET};
use super::{Effect, Matcher, Rule};
use crate::limits::{MAX_PATTERN_BYTES, MAX_REGEX_COMPILED_BYTES, MAX_RULES};

/// What the operator asked for, before compiling.
#[derive(Debug, Default, Clone)]
pub struct Spec {
    /// `--hide` patterns.
    pub hide: Vec<String>,
    /// `--read-only-path` patterns.
    pub read_only: Vec<String>,
    /// `--allow-path` patterns: lift built-in protections where they match.
    pub allow: Vec<String>,
    /// `--no-default-protection`.
    pub no_default: bool,
    /// The rules file: its name (for messages) and contents.
    pub file: Option<(String, Vec<u8>)>,
}

/// The rule list [`build`] makes, with what to log about it.
#[derive(Debug)]
pub struct Built {
    /// The rules, in order.
    pub rules: Vec<Rule>,
    /// Rules that were skipped (disabled, or operations a filesystem
    /// server does not enforce), for the log.
    pub notes: Vec<String>,
    /// Rules that load but look like they do not do what the operator
    /// meant (an `--allow-path` that lifts nothing), for a warning.
    pub warnings: Vec<String>,
}

/// Builds the rule list (without `--read-only-dir`, which is per root). A
/// rule that can never do what it reads (see `rules::lint`) is an error
/// naming it.
pub fn build(spec: &Spec) -> Result<Built, String> {
    let mut rules = Vec::new();
    let mut notes = Vec::new();
    if !spec.no_default {
        for (p, _) in DEFAULT_READ_ONLY {
            rules.push(glob_rule("default", "default", p, Effect::ReadOnly, true)?);
        }
        for p in DEFAULT_EXEMPT {
            rules.push(glob_rule("default", "default", p, Effect::None, true)?);
        }
    }
    for p in &spec.allow {
        rules.push(glob_rule(
            "--allow-path",
            "--allow-path",
            p,
            Effect::None,
            true,
        )?);
    }
    for p in &spec.hide {
        rules.push(glob_rule("--hide", "--hide", p, Effect::Hidden, false)?);
    }
    for p in &spec.read_only {
        rules.push(glob_rule(
            "--read-only-path",
            "--read-only-path",
            p,
            Effect::ReadOnly,
            false,
        )?);
    }
    if let Some((name, bytes)) = &spec.file {
        let (mut r, mut n) = parse_file(name, bytes)?;
        rules.append(&mut r);
        notes.append(&mut n);
    }
    if rules.len() > MAX_RULES {
        return Err(format!(
            "too many path rules: {} given, the limit is {MAX_RULES}",
            rules.len()
        ));
    }
    let warnings = super::lint::rules(&rules, spec.no_default)?;
    Ok(Built {
        rules,
        notes,
        warnings,
    })
}

/// A rule from a `.gitignore`-syntax pattern.
fn glob_rule(
    id: &str,
    source: &str,
    pattern: &str,
    effect: Effect,
    default: bool,
) -> Result<Rule, String> {
    // Parsed once, by `Rules::new`, which names the rule as this would:
    // a second parse here cost a third of the 50-glob startup.
    check_glob(id, pattern, false)?;
    Ok(Rule {
        id: id.to_owned(),
        source: source.to_owned(),
        pattern: pattern.to_owned(),
        matcher: Matcher::Glob(pattern.to_owned()),
        effect,
        default,
    })
}

/// Checks a glob's size and shape; with `parse`, parses it too (a rules
/// file's errors name the file, which `Rules::new` does not know).
fn check_glob(id: &str, pattern: &str, parse: bool) -> Result<(), String> {
    if pattern.trim().is_empty() || pattern.starts_with('#') {
        return Err(format!(
            "rule '{id}': empty pattern '{pattern}' (a pattern must name a path)"
        ));
    }
    if pattern.contains('\0') || pattern.contains('\n') {
        return Err(format!(
            "rule '{id}': the pattern contains a NUL or newline"
        ));
    }
    crate::text::glob::check_one(pattern, MAX_PATTERN_BYTES)
        .map_err(|e| format!("rule '{id}': {e}"))?;
    super::lint::glob_shape(pattern).map_err(|e| format!("rule '{id}': {e}"))?;
    if !parse {
        return Ok(());
    }
    let mut b = ignore::gitignore::GitignoreBuilder::new(".");
    b.add_line(None, pattern)
        .map_err(|e| format!("rule '{id}': bad pattern '{pattern}': {e}"))?;
    Ok(())
}

/// The rules file: `{"rules": [...]}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    rules: Vec<FileRule>,
}

/// One rule of the rules file, in the vocabulary agent hosts store.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRule {
    id: String,
    #[serde(default = "yes")]
    enabled: bool,
    /// `path` (the default) or `command`; command rules are not a
    /// filesystem server's to enforce, and are skipped.
    #[serde(default, rename = "type")]
    kind: Option<String>,
    pattern: String,
    #[serde(rename = "match")]
    method: Method,
    operations: Vec<Operation>,
    #[serde(default)]
    reason: Option<String>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Method {
    Exact,
    Prefix,
    Glob,
    Regex,
    Contains,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Operation {
    Read,
    Write,
    Delete,
    Execute,
    Delegate,
}

/// Parses and validates a rules file's bytes; `name` is its path, for
/// messages and `--print-config`.
pub fn parse_file(name: &str, bytes: &[u8]) -> Result<(Vec<Rule>, Vec<String>), String> {
    let file: File = serde_json::from_slice(bytes)
        .map_err(|e| format!("rules file '{name}': {e} (nothing was loaded)"))?;
    let mut rules = Vec::new();
    let mut notes = Vec::new();
    let mut ids = std::collections::HashSet::new();
    for (i, r) in file.rules.iter().enumerate() {
        let id = if r.id.trim().is_empty() {
            return Err(format!(
                "rules file '{name}': rule #{} has an empty id",
                i + 1
            ));
        } else {
            r.id.as_str()
        };
        let at = |why: String| format!("rules file '{name}': rule '{id}': {why}");
        if !ids.insert(id) {
            return Err(at("the id is used twice".to_owned()));
        }
        if let Some(reason) = &r.reason
            && reason.len() > MAX_PATTERN_BYTES
        {
            return Err(at("reason longer than the pattern limit".to_owned()));
        }
        match r.kind.as_deref() {
            None | Some("path") => {}
            Some("command") => {
                notes.push(format!("rule '{id}': a command rule; skipped (not a path)"));
                continue;
            }
            Some(other) => return Err(at(format!("unknown type '{other}' (path or command)"))),
        }
        if r.operations.is_empty() {
            return Err(at("no operations".to_owned()));
        }
        let effect = if r.operations.contains(&Operation::Read) {
            Effect::Hidden
        } else if r
            .operations
            .iter()
            .any(|o| matches!(o, Operation::Write | Operation::Delete))
        {
            Effect::ReadOnly
        } else {
            Effect::None
        };
        let matcher = matcher(r.method, &r.pattern).map_err(at)?;
        if r.operations
            .iter()
            .any(|o| matches!(o, Operation::Execute | Operation::Delegate))
        {
            notes.push(format!(
                "rule '{id}': operations execute/delegate are not a filesystem server's to enforce; skipped"
            ));
        }
        if !r.enabled {
            notes.push(format!("rule '{id}': disabled; skipped"));
            continue;
        }
        if effect == Effect::None {
            continue;
        }
        rules.push(Rule {
            id: id.to_owned(),
            source: name.to_owned(),
            pattern: r.pattern.clone(),
            matcher,
            effect,
            default: false,
        });
    }
    Ok((rules, notes))
}

/// Compiles one rules-file pattern. Absolute patterns (`/a/b`) are
/// anchored at each root; `exact` and `prefix` compare whole components.
fn matcher(method: Method, pattern: &str) -> Result<Matcher, String> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(format!(
            "pattern of {} bytes, the limit is {MAX_PATTERN_BYTES}",
            pattern.len()
        ));
    }
    let path = || -> Result<String, String> {
        let p: Vec<&str> = pattern
            .split('/')
            .filter(|s| !s.is_empty() && *s != ".")
            .collect();
        if p.is_empty() || p.contains(&"..") {
            return Err(format!(
                "pattern '{pattern}' must name a path inside the root (no '..')"
            ));
        }
        Ok(p.join("/"))
    };
    Ok(match method {
        Method::Glob => {
            check_glob("", pattern, true)
                .map_err(|e| e.trim_start_matches("rule '': ").to_owned())?;
            Matcher::Glob(pattern.to_owned())
        }
        Method::Exact => Matcher::Exact(path()?),
        Method::Prefix => Matcher::Prefix(path()?),
        Method::Contains => {
            if pattern.is_empty() {
                return Err("empty pattern".to_owned());
            }
            Matcher::Contains(pattern.to_owned())
        }
        Method::Regex => {
            let r = regex_automata::meta::Regex::builder()
                .syntax(
                    regex_automata::util::syntax::Config::new().case_insensitive(super::FOLD_CASE),
                )
                .configure(
                    regex_automata::meta::Regex::config()
                        .nfa_size_limit(Some(MAX_REGEX_COMPILED_BYTES))
                        .onepass_size_limit(Some(MAX_REGEX_COMPILED_BYTES))
                        .dfa_size_limit(Some(MAX_REGEX_COMPILED_BYTES)),
                )
                .build(pattern)
                .map_err(|e| format!("bad regex '{pattern}': {e}"))?;
            if super::lint::regex_never_matches(pattern, super::FOLD_CASE) {
                return Err(format!(
                    "regex '{pattern}' can never match: a path is matched with a leading '/' \
                     ('/secrets/key.txt'), so anchor it as '^/secrets'"
                ));
            }
            Matcher::Regex(Box::new(r))
        }
    })
}

/// The rule for a `--read-only-dir` at `rel` beneath one root ("" when the
/// directory is the root or contains it).
pub fn read_only_dir(given: &str, rel: &str) -> Rule {
    Rule {
        id: "--read-only-dir".to_owned(),
        source: format!("--read-only-dir {given}"),
        pattern: if rel.is_empty() {
            "/".to_owned()
        } else {
            format!("/{rel}")
        },
        matcher: if rel.is_empty() {
            Matcher::All
        } else {
            Matcher::Exact(rel.to_owned())
        },
        effect: Effect::ReadOnly,
        default: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(json: &str) -> Result<Vec<Rule>, String> {
        parse_file("r.json", json.as_bytes()).map(|(r, _)| r)
    }

    #[test]
    fn rules_file_maps_operations_and_fails_closed() {
        let r = file(
            r#"{"rules":[
              {"id":"env","enabled":true,"pattern":".env","match":"glob","operations":["read"],"reason":"secrets"},
              {"id":"lock","pattern":"/Cargo.lock","match":"exact","operations":["write","delete"]},
              {"id":"off","enabled":false,"pattern":"x","match":"glob","operations":["read"]},
              {"id":"exec","pattern":"x","match":"glob","operations":["execute"]}
            ]}"#,
        )
        .unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].effect, Effect::Hidden);
        assert_eq!(r[1].effect, Effect::ReadOnly);
        for bad in [
            r#"{"rules":[{"id":"a","pattern":"x","match":"glob","operations":["read"],"extra":1}]}"#,
            r#"{"rules":[{"id":"a","pattern":"x","match":"fuzzy","operations":["read"]}]}"#,
            r#"{"rules":[{"id":"a","pattern":"x","match":"glob","operations":["chmod"]}]}"#,
            r#"{"rules":[{"id":"a","pattern":"(","match":"regex","operations":["read"]}]}"#,
            r#"{"rules":[{"id":"a","pattern":"{{{{a}}}}","match":"glob","operations":["read"]}]}"#,
            r#"{"rules":[{"id":"a","pattern":"../x","match":"prefix","operations":["read"]}]}"#,
            r#"{"rules":[{"id":"a","pattern":"x","match":"glob","operations":[]}]}"#,
            r#"{"rules":[{"id":"a","pattern":"x","match":"glob","operations":["read"]},{"id":"a","pattern":"y","match":"glob","operations":["read"]}]}"#,
            r#"{"rules":{}}"#,
            r#"not json"#,
        ] {
            assert!(file(bad).is_err(), "{bad}");
        }
        let e = file(
            r#"{"rules":[{"id":"bad-re","pattern":"(","match":"regex","operations":["read"]}]}"#,
        )
        .unwrap_err();
        assert!(e.contains("bad-re"), "{e}");
    }
}
