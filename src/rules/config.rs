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
        position: None,
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

/// The shape a rules file must have, for messages.
const SHAPE: &str =
    r#"{"rules": [{"id": ..., "pattern": ..., "match": ..., "operations": [...]}, ...]}"#;

/// What a JSON value is, in words.
fn what(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "an object",
    }
}

/// The rules of a rules file's bytes, each as JSON, or why the file does
/// not have the shape [`SHAPE`].
fn file_rules(bytes: &[u8]) -> Result<Vec<serde_json::Value>, String> {
    let top: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| format!("not JSON ({e}); a rules file is JSON: {SHAPE}"))?;
    let mut top = match top {
        serde_json::Value::Object(o) => o,
        serde_json::Value::Array(_) => {
            return Err(format!(
                "the file is a list of rules; they go in an object's \"rules\" field: {SHAPE}"
            ));
        }
        other => {
            return Err(format!(
                "the file is {}; a rules file is an object: {SHAPE}",
                what(&other)
            ));
        }
    };
    if let Some(k) = top.keys().find(|k| *k != "rules") {
        return Err(format!(
            "unknown top-level field '{k}' (a rules file has only \"rules\"): {SHAPE}"
        ));
    }
    match top.remove("rules") {
        Some(serde_json::Value::Array(rules)) => Ok(rules),
        Some(other) => Err(format!(
            "\"rules\" is {}; it must be a list of rules: {SHAPE}",
            what(&other)
        )),
        None => Err(format!("no \"rules\" field: {SHAPE}")),
    }
}

/// One rule of the file from its JSON, or why not, naming the field
/// where one field is at fault.
fn file_rule(v: serde_json::Value) -> Result<FileRule, (Option<&'static str>, String)> {
    if !v.is_object() {
        return Err((None, format!("a rule is an object, not {}", what(&v))));
    }
    FileRule::deserialize(&v).map_err(|e| {
        // serde names a missing or unknown field itself; a bad value is
        // traced to its field by reading each field alone.
        let field = [
            ("id", field_ok::<String>(&v, "id")),
            ("enabled", field_ok::<bool>(&v, "enabled")),
            ("type", field_ok::<Option<String>>(&v, "type")),
            ("pattern", field_ok::<String>(&v, "pattern")),
            ("match", field_ok::<Method>(&v, "match")),
            ("operations", field_ok::<Vec<Operation>>(&v, "operations")),
            ("reason", field_ok::<Option<String>>(&v, "reason")),
        ]
        .into_iter()
        .find_map(|(name, ok)| (!ok).then_some(name));
        (field, e.to_string())
    })
}

/// Whether `v`'s field `name`, when present, reads as a `T`.
fn field_ok<T: serde::de::DeserializeOwned>(v: &serde_json::Value, name: &str) -> bool {
    v.get(name)
        .is_none_or(|f| T::deserialize(f.clone()).is_ok())
}

/// Parses and validates a rules file's bytes; `name` is its path, for
/// messages and `--print-config`. An error names the rule by its place in
/// the file (from 1), its id and the field at fault.
pub fn parse_file(name: &str, bytes: &[u8]) -> Result<(Vec<Rule>, Vec<String>), String> {
    let file =
        file_rules(bytes).map_err(|e| format!("rules file '{name}': {e} (nothing was loaded)"))?;
    let mut rules = Vec::new();
    let mut notes = Vec::new();
    let mut ids: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (i, v) in file.into_iter().enumerate() {
        let n = i + 1;
        let id_of = v.get("id").and_then(|id| id.as_str()).map(str::to_owned);
        let r = file_rule(v).map_err(|(field, why)| {
            let who = match (&id_of, field) {
                (Some(id), Some(f)) => format!("rule #{n} (id '{id}'), field '{f}'"),
                (Some(id), None) => format!("rule #{n} (id '{id}')"),
                (None, Some(f)) => format!("rule #{n} (no id), field '{f}'"),
                (None, None) if why.starts_with("a rule is") => format!("rule #{n}"),
                (None, None) => format!("rule #{n} (no id)"),
            };
            format!("rules file '{name}': {who}: {why}")
        })?;
        let id = r.id.as_str();
        let at = |field: &str, why: String| {
            format!("rules file '{name}': rule #{n} (id '{id}'), field '{field}': {why}")
        };
        if id.trim().is_empty() {
            return Err(format!(
                "rules file '{name}': rule #{n}, field 'id': the id is empty"
            ));
        }
        if let Some(first) = ids.insert(id.to_owned(), n) {
            return Err(at(
                "id",
                format!("the id is used twice (also by rule #{first})"),
            ));
        }
        if let Some(reason) = &r.reason
            && reason.len() > MAX_PATTERN_BYTES
        {
            return Err(at("reason", "longer than the pattern limit".to_owned()));
        }
        let label = format!("rules file '{name}': rule #{n} (id '{id}')");
        match r.kind.as_deref() {
            None | Some("path") => {}
            Some("command") => {
                notes.push(format!("{label}: a command rule; skipped (not a path)"));
                continue;
            }
            Some(other) => {
                return Err(at(
                    "type",
                    format!("unknown type '{other}' (path or command)"),
                ));
            }
        }
        if r.operations.is_empty() {
            return Err(at("operations", "no operations".to_owned()));
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
        let matcher = matcher(r.method, &r.pattern).map_err(|e| at("pattern", e))?;
        if r.operations
            .iter()
            .any(|o| matches!(o, Operation::Execute | Operation::Delegate))
        {
            notes.push(format!(
                "{label}: operations execute/delegate are not a filesystem server's to enforce; skipped"
            ));
        }
        if !r.enabled {
            notes.push(format!("{label}: disabled; skipped"));
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
            position: Some(n),
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
            if pattern.contains("//") {
                return Err(format!(
                    "'{pattern}' can never match: a path is matched in its canonical form, \
                     which has no '//'"
                ));
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
                .map_err(|e| regex_error(pattern, &e))?;
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

/// Why a regex did not compile, in one line: the parser's own words
/// (`unclosed group`), or the size bound it passes (never the library's
/// "error parsing pattern 0").
fn regex_error(pattern: &str, e: &regex_automata::meta::BuildError) -> String {
    if let Some(syntax) = e.syntax_error() {
        let text = syntax.to_string();
        let why = text
            .lines()
            .find_map(|l| l.strip_prefix("error: "))
            .unwrap_or(text.as_str());
        return format!("bad regex '{pattern}': {why}");
    }
    if e.size_limit().is_some() {
        return format!(
            "regex '{pattern}' compiles to more than {MAX_REGEX_COMPILED_BYTES} bytes; \
             use a shorter pattern (fewer alternatives or smaller repetitions)"
        );
    }
    format!("bad regex '{pattern}': {e}")
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
        position: None,
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
