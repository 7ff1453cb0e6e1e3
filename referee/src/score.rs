//! The scorecard: one count per class under `summary` (JSON), and the same
//! as a markdown table with one line per vector that did not pass.

use serde_json::{Value, json};

use crate::corpus::Outcome;

pub const ESCAPE_CLASSES: [&str; 8] = [
    "content_read",
    "write_outside",
    "metadata_leak",
    "existence_oracle",
    // write-then-execute: a real program ran the agent's code; a protected
    // file's bytes changed.
    "executed",
    "control_written",
    // secrets: a hidden file's content in a reply; replies differ from the
    // twin tree without the hidden objects.
    "secret_read",
    "hidden_differs",
];

pub struct Card<'a> {
    pub server: &'a [String],
    pub corpus_version: &'a str,
    /// The policy mapping the run used (`--policy`).
    pub policy: &'a str,
    pub outcomes: &'a [Outcome],
    /// Vectors whose failure is known and reported (`--known-failures`):
    /// counted in the card, not in the exit status.
    pub known: &'a [String],
}

impl Card<'_> {
    fn count(&self, f: impl Fn(&Outcome) -> bool) -> usize {
        self.outcomes.iter().filter(|o| f(o)).count()
    }

    fn is_known(&self, o: &Outcome) -> bool {
        self.known.contains(&o.id)
    }

    /// Vectors with an escape, known failures left out.
    pub fn escapes(&self) -> usize {
        self.count(|o| !o.escapes.is_empty() && !self.is_known(o))
    }

    /// Vectors with a hang, crash or wrong result (`--strict`), known
    /// failures left out.
    pub fn strict_failures(&self) -> usize {
        self.count(|o| {
            !self.is_known(o)
                && (o.hang || o.crash || o.refused_should_succeed > 0 || o.wrong_result > 0)
        })
    }

    pub fn summary(&self) -> Value {
        let mut s = serde_json::Map::new();
        for c in ESCAPE_CLASSES {
            s.insert(
                c.into(),
                json!(self.count(|o| o.escapes.iter().any(|e| e == c))),
            );
        }
        s.insert("escapes".into(), json!(self.escapes()));
        s.insert("hangs".into(), json!(self.count(|o| o.hang)));
        s.insert("crashes".into(), json!(self.count(|o| o.crash)));
        let sum = |f: fn(&Outcome) -> usize| self.outcomes.iter().map(f).sum::<usize>();
        s.insert(
            "refused_should_succeed".into(),
            json!(sum(|o| o.refused_should_succeed)),
        );
        s.insert("wrong_result".into(), json!(sum(|o| o.wrong_result)));
        s.insert("not_refused".into(), json!(sum(|o| o.not_refused)));
        s.insert("skipped".into(), json!(self.count(|o| o.skipped.is_some())));
        s.insert(
            "no_policy".into(),
            json!(self.count(|o| o.no_policy.is_some())),
        );
        s.insert(
            "known_failures".into(),
            json!(self.count(|o| self.is_known(o) && !passed(o))),
        );
        s.insert(
            "harness_errors".into(),
            json!(self.count(|o| o.harness_error.is_some())),
        );
        s.insert("vectors".into(), json!(self.outcomes.len()));
        s.insert("passed".into(), json!(self.count(passed)));
        Value::Object(s)
    }

    pub fn json(&self) -> Value {
        let vectors: Vec<Value> = self
            .outcomes
            .iter()
            .map(|o| {
                json!({
                    "id": o.id, "class": o.class, "pack": o.pack, "verdict": verdict(o),
                    "no_policy": o.no_policy,
                    "escapes": o.escapes, "hang": o.hang, "crash": o.crash,
                    "refused_should_succeed": o.refused_should_succeed,
                    "wrong_result": o.wrong_result, "not_refused": o.not_refused,
                    "skipped": o.skipped, "harness_error": o.harness_error, "notes": o.notes,
                    "millis": o.millis,
                })
            })
            .collect();
        json!({
            "referee": env!("CARGO_PKG_VERSION"),
            "corpus": self.corpus_version,
            "server": self.server,
            "policy": self.policy,
            "summary": self.summary(),
            "vectors": vectors,
        })
    }

    pub fn markdown(&self) -> String {
        let s = self.summary();
        let mut m = String::new();
        m.push_str(&format!(
            "## Referee scorecard\n\nserver: `{}`  \npolicy mapping: {}  \ncorpus: escape/{}, {} vectors\n\n",
            self.server.join(" "),
            self.policy,
            self.corpus_version,
            self.outcomes.len()
        ));
        m.push_str("| class | count |\n|---|---|\n");
        for k in [
            "content_read",
            "write_outside",
            "metadata_leak",
            "existence_oracle",
            "executed",
            "control_written",
            "secret_read",
            "hidden_differs",
            "hangs",
            "crashes",
            "refused_should_succeed",
            "wrong_result",
            "not_refused",
            "no_policy",
            "known_failures",
            "skipped",
            "harness_errors",
            "passed",
        ] {
            m.push_str(&format!("| {k} | {} |\n", s[k]));
        }
        let bad: Vec<&Outcome> = self.outcomes.iter().filter(|o| !passed(o)).collect();
        if !bad.is_empty() {
            m.push_str("\n| vector | pack | verdict | notes |\n|---|---|---|---|\n");
            for o in bad {
                let notes: String = o.notes.join("; ").chars().take(200).collect();
                m.push_str(&format!(
                    "| {}{} | {} | {} | {} |\n",
                    o.id,
                    if self.is_known(o) { " (known)" } else { "" },
                    o.pack,
                    verdict(o),
                    notes.replace('|', "\\|").replace('\n', " ")
                ));
            }
        }
        m
    }
}

/// No escape, hang, crash, wrong result or refusal to report, and the
/// vector ran under its policy.
pub fn passed(o: &Outcome) -> bool {
    o.escapes.is_empty()
        && !o.hang
        && !o.crash
        && o.refused_should_succeed == 0
        && o.wrong_result == 0
        && o.not_refused == 0
        && o.skipped.is_none()
        && o.harness_error.is_none()
        && o.no_policy.is_none()
}

pub fn verdict(o: &Outcome) -> String {
    let mut v: Vec<String> = o.escapes.iter().map(|e| format!("ESCAPE:{e}")).collect();
    if o.hang {
        v.push("hang".into());
    }
    if o.crash {
        v.push("crash".into());
    }
    if o.refused_should_succeed > 0 {
        v.push("refused_should_succeed".into());
    }
    if o.wrong_result > 0 {
        v.push("wrong_result".into());
    }
    if o.not_refused > 0 {
        v.push("not_refused".into());
    }
    if let Some(p) = &o.no_policy {
        v.push(format!("no policy available ({p})"));
    }
    if let Some(s) = &o.skipped {
        v.push(format!("skipped ({s})"));
    }
    if let Some(e) = &o.harness_error {
        v.push(format!("harness error ({e})"));
    }
    if v.is_empty() {
        "pass".into()
    } else {
        v.join(", ")
    }
}
