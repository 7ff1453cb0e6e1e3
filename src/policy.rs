//! Capability selectors: which tools an operator enables.
//!
//! Owns: parsing `--allow`/`--deny` selectors and computing the enabled tool
//! set from the tool table ([`crate::tools::TOOLS`]). `--deny` always wins;
//! with no `--allow`, every tool starts enabled.
//! May touch: nothing (no I/O).

use std::collections::BTreeSet;

pub use crate::tools::Capability;
use crate::tools::TOOLS;

/// A parsed selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// `filesystem`: every tool.
    All,
    /// `filesystem.read` or `filesystem.write`.
    Capability(Capability),
    /// `filesystem/<tool>`.
    Tool(&'static str),
}

/// A selector or configuration the operator must fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The selector is empty, malformed, or names a capability or tool tuls
    /// does not have.
    #[error("invalid selector '{given}' for {flag}: {reason}\nvalid selectors:\n  {}", valid_selectors().join("\n  "))]
    Invalid {
        /// `--allow` or `--deny`.
        flag: &'static str,
        /// The selector as given.
        given: String,
        /// What is wrong with it, so the operator can fix it at a glance.
        reason: String,
    },
    /// Nothing would be enabled.
    #[error(
        "no tool is enabled: the --allow/--deny selectors leave nothing for the agent to call (allowed: {allowed}, denied: {denied})"
    )]
    NothingEnabled {
        /// The allow selectors.
        allowed: String,
        /// The deny selectors.
        denied: String,
    },
}

/// Every valid selector, for messages and `--help`.
pub fn valid_selectors() -> Vec<String> {
    let mut v = vec![
        "filesystem".to_owned(),
        "filesystem.read".to_owned(),
        "filesystem.write".to_owned(),
    ];
    v.extend(TOOLS.iter().map(|t| format!("filesystem/{}", t.name)));
    v
}

/// Parses one selector. Exact spelling only: no trimming, no case folding
/// (a near miss is refused, with a reason, rather than guessed at).
pub fn parse(flag: &'static str, s: &str) -> Result<Selector, PolicyError> {
    match s {
        "filesystem" => return Ok(Selector::All),
        "filesystem.read" => return Ok(Selector::Capability(Capability::Read)),
        "filesystem.write" => return Ok(Selector::Capability(Capability::Write)),
        _ => {}
    }
    if let Some(tool) = s.strip_prefix("filesystem/")
        && let Some(t) = crate::tools::find(tool)
    {
        return Ok(Selector::Tool(t.name));
    }
    Err(PolicyError::Invalid {
        flag,
        given: s.to_owned(),
        reason: why_invalid(flag, s),
    })
}

/// Says what is wrong with a selector [`parse`] refused, with a suggestion
/// when one valid selector is close to it.
fn why_invalid(flag: &str, s: &str) -> String {
    if s.is_empty() {
        return "the selector is empty".to_owned();
    }
    if s.contains(',') {
        let parts: Vec<&str> = s.split(',').filter(|p| !p.is_empty()).collect();
        let repeated: Vec<String> = parts.iter().map(|p| format!("{flag} {p}")).collect();
        return format!(
            "one selector per flag: repeat {flag} for each ({})",
            repeated.join(" ")
        );
    }
    let reason = why_invalid_shape(s);
    match suggestion(s) {
        Some(near) if !reason.contains("did you mean") => {
            format!("{reason}; did you mean '{near}'?")
        }
        _ => reason,
    }
}

/// The valid selector a mistyped one most likely meant: a bare capability
/// or tool name (`read`, `move_file`), or one within a small edit distance.
fn suggestion(s: &str) -> Option<String> {
    let valid = valid_selectors();
    for prefixed in [format!("filesystem.{s}"), format!("filesystem/{s}")] {
        if valid.contains(&prefixed) {
            return Some(prefixed);
        }
    }
    let (best, distance) = valid
        .iter()
        .map(|v| (v, strsim::damerau_levenshtein(s, v)))
        .min_by_key(|(_, d)| *d)?;
    if distance <= 3 {
        return Some(best.clone());
    }
    // A wrong prefix with the right name (`fs.read`, `fs/move_file`).
    let name = |x: &str| x.rsplit(['/', '.']).next().unwrap_or("").to_owned();
    let wanted = name(s);
    let mut same = valid
        .iter()
        .filter(|v| !wanted.is_empty() && name(v) == wanted);
    match (same.next(), same.next()) {
        (Some(only), None) => Some(only.clone()),
        _ => None,
    }
}

/// What is wrong with the shape of a refused selector.
fn why_invalid_shape(s: &str) -> String {
    if s.trim() != s {
        return "it has leading or trailing whitespace (selectors are matched exactly)".to_owned();
    }
    let lower = s.to_lowercase();
    if lower != s && parse("", &lower).is_ok() {
        return format!("selectors are lowercase; did you mean '{lower}'?");
    }
    if let Some(cap) = s.strip_prefix("filesystem.") {
        return match cap {
            "" => "no capability after 'filesystem.'".to_owned(),
            "*" => "'filesystem.*' is not a selector; 'filesystem' selects every tool".to_owned(),
            _ => format!("unknown capability '{cap}' (capabilities: read, write)"),
        };
    }
    if let Some(tool) = s.strip_prefix("filesystem/") {
        return match tool {
            "" => "no tool name after 'filesystem/'".to_owned(),
            _ => format!("unknown tool '{tool}'"),
        };
    }
    "malformed: a selector is 'filesystem', 'filesystem.<capability>' or 'filesystem/<tool>'"
        .to_owned()
}

fn selects(sel: &Selector, tool: &str, cap: Capability) -> bool {
    match sel {
        Selector::All => true,
        Selector::Capability(c) => *c == cap,
        Selector::Tool(t) => *t == tool,
    }
}

/// The set of enabled tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    enabled: BTreeSet<&'static str>,
}

impl Policy {
    /// Computes the enabled tools from `--allow` and `--deny` selectors.
    pub fn from_selectors(allow: &[String], deny: &[String]) -> Result<Self, PolicyError> {
        let allow_sel = allow
            .iter()
            .map(|s| parse("--allow", s))
            .collect::<Result<Vec<_>, _>>()?;
        let deny_sel = deny
            .iter()
            .map(|s| parse("--deny", s))
            .collect::<Result<Vec<_>, _>>()?;
        let enabled: BTreeSet<&'static str> = TOOLS
            .iter()
            .filter(|t| {
                allow_sel.is_empty() || allow_sel.iter().any(|s| selects(s, t.name, t.capability))
            })
            .filter(|t| !deny_sel.iter().any(|s| selects(s, t.name, t.capability)))
            .map(|t| t.name)
            .collect();
        if enabled.is_empty() {
            return Err(PolicyError::NothingEnabled {
                allowed: if allow.is_empty() {
                    "(all)".to_owned()
                } else {
                    allow.join(" ")
                },
                denied: deny.join(" "),
            });
        }
        Ok(Self { enabled })
    }

    /// Whether `tool` is enabled.
    pub fn is_enabled(&self, tool: &str) -> bool {
        self.enabled.contains(tool)
    }

    /// Enabled tools in `tools/list` order.
    pub fn enabled_tools(&self) -> Vec<&'static str> {
        TOOLS
            .iter()
            .map(|t| t.name)
            .filter(|t| self.enabled.contains(t))
            .collect()
    }

    /// Whether any write tool is enabled (Landlock then grants write access).
    pub fn any_write(&self) -> bool {
        TOOLS
            .iter()
            .any(|t| t.capability == Capability::Write && self.enabled.contains(t.name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(allow: &[&str], deny: &[&str]) -> Result<Policy, PolicyError> {
        let a: Vec<String> = allow.iter().map(|s| s.to_string()).collect();
        let d: Vec<String> = deny.iter().map(|s| s.to_string()).collect();
        Policy::from_selectors(&a, &d)
    }

    #[test]
    fn default_is_everything() {
        assert_eq!(p(&[], &[]).unwrap().enabled_tools().len(), TOOLS.len());
    }

    #[test]
    fn review_only() {
        let pol = p(&["filesystem.read"], &[]).unwrap();
        let reads = TOOLS
            .iter()
            .filter(|t| t.capability == Capability::Read)
            .count();
        assert_eq!(pol.enabled_tools().len(), reads);
        assert!(!pol.any_write());
        assert!(!pol.is_enabled("write_file"));
    }

    #[test]
    fn write_without_moves() {
        let pol = p(
            &["filesystem.read", "filesystem.write"],
            &["filesystem/move_file"],
        )
        .unwrap();
        assert_eq!(pol.enabled_tools().len(), TOOLS.len() - 1);
        assert!(!pol.is_enabled("move_file"));
        assert!(pol.is_enabled("edit_file"));
    }

    #[test]
    fn deny_beats_allow() {
        let pol = p(
            &["filesystem/write_file", "filesystem/read_text_file"],
            &["filesystem/write_file"],
        )
        .unwrap();
        assert_eq!(pol.enabled_tools(), vec!["read_text_file"]);
    }

    #[test]
    fn bad_selectors() {
        for bad in [
            "",
            "filesystem.",
            "filesystem/",
            "filesystem/nope",
            "Filesystem.read",
            " filesystem.read",
            "filesystem.exec",
            "fs.read",
            "filesystem/read_files",
        ] {
            let e = p(&[bad], &[]).unwrap_err();
            assert!(
                e.to_string()
                    .contains("\nvalid selectors:\n  filesystem\n  filesystem.read\n"),
                "{bad}: {e}"
            );
            assert!(p(&[], &[bad]).is_err());
        }
        for (bad, reason) in [
            ("", "empty"),
            (" filesystem.read", "whitespace"),
            ("filesystem.read\n", "whitespace"),
            ("FILESYSTEM.read", "did you mean 'filesystem.read'"),
            (
                "Filesystem/Move_File",
                "did you mean 'filesystem/move_file'",
            ),
            ("filesystem.", "no capability"),
            ("filesystem.*", "'filesystem' selects every tool"),
            ("filesystem.exec", "unknown capability 'exec'"),
            ("filesystem/", "no tool name"),
            ("filesystem/nope", "unknown tool 'nope'"),
            ("fs.read", "malformed"),
            ("fs.read", "did you mean 'filesystem.read'"),
            ("filesystem.raed", "did you mean 'filesystem.read'"),
            (
                "filesystem/mvoe_file",
                "did you mean 'filesystem/move_file'",
            ),
            ("read", "did you mean 'filesystem.read'"),
            ("move_file", "did you mean 'filesystem/move_file'"),
            (
                "filesystem.read,filesystem.write",
                "repeat --deny for each (--deny filesystem.read --deny filesystem.write)",
            ),
        ] {
            let e = p(&[], &[bad]).unwrap_err().to_string();
            assert!(e.contains(reason), "{bad:?}: {e}");
            assert!(e.contains("for --deny"), "{bad:?}: {e}");
        }
        assert!(matches!(
            p(&[], &["filesystem"]),
            Err(PolicyError::NothingEnabled { .. })
        ));
        assert!(matches!(
            p(&["filesystem.read"], &["filesystem.read"]),
            Err(PolicyError::NothingEnabled { .. })
        ));
    }
}
