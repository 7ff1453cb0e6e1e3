//! The path rules of a session, as the journal keeps them: the operator's
//! rule flags and rules file, written in the session's `start` record, so
//! that `tuls journal revert` builds the very rules the tools had.
//!
//! Owns: the record of the operator's rule spec (`--hide`,
//! `--read-only-path`, `--allow-path`, `--no-default-protection`, the rules
//! file's name and contents, each `--read-only-dir` with its resolved
//! path), and turning it back into [`crate::rules::config::Spec`]. A
//! session recorded before the rules were kept gets the built-in
//! protections (`RuleSpec::default()`), never none.
//! May touch: nothing (no I/O).

use serde::{Deserialize, Serialize};

use crate::rules::config::Spec;

/// The operator's rule spec of a session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleSpec {
    /// `--hide` patterns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hide: Vec<String>,
    /// `--read-only-path` patterns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_only: Vec<String>,
    /// `--allow-path` patterns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// `--no-default-protection`.
    #[serde(default)]
    pub no_default: bool,
    /// The rules file: its name and its contents when the session began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<(String, String)>,
    /// Each `--read-only-dir`: as given, and resolved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_only_dirs: Vec<(String, String)>,
}

impl RuleSpec {
    /// The spec of the flags (`dirs`: each `--read-only-dir` as given and
    /// resolved).
    pub fn of(spec: &Spec, dirs: &[(String, String)]) -> RuleSpec {
        RuleSpec {
            hide: spec.hide.clone(),
            read_only: spec.read_only.clone(),
            allow: spec.allow.clone(),
            no_default: spec.no_default,
            file: spec
                .file
                .as_ref()
                .map(|(n, b)| (n.clone(), String::from_utf8_lossy(b).into_owned())),
            read_only_dirs: dirs.to_vec(),
        }
    }

    /// The spec to build the rules from.
    pub fn spec(&self) -> Spec {
        Spec {
            hide: self.hide.clone(),
            read_only: self.read_only.clone(),
            allow: self.allow.clone(),
            no_default: self.no_default,
            file: self
                .file
                .as_ref()
                .map(|(n, t)| (n.clone(), t.clone().into_bytes())),
        }
    }
}
