//! The scorecard: one count per class under `summary` (JSON), and the same
//! as a markdown table with one line per vector that did not pass.

use serde_json::{Value, json};

use crate::corpus::Outcome;

pub const ESCAPE_CLASSES: [&str; 4] = [
    "content_read",
    "write_outside",
    "metadata_leak",
    "existence_oracle",
];

pub struct Card<'a> {
    pub server: &'a [String],
    pub corpus_version: &'a str,
    pub outcomes: &'a [Outcome],
}

impl Card<'_> {
    fn count(&self, f: impl Fn(&Outcome) -> bool) -> usize {
        self.outcomes.iter().filter(|o| f(o)).count()
    }

    pub fn escapes(&self) -> usize {
        self.count(|o| !o.escapes.is_empty())
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
                    "id": o.id, "class": o.class, "verdict": verdict(o),
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
            "summary": self.summary(),
            "vectors": vectors,
        })
    }

    pub fn markdown(&self) -> String {
        let s = self.summary();
        let mut m = String::new();
        m.push_str(&format!(
            "## Referee scorecard\n\nserver: `{}`  \ncorpus: escape/{}, {} vectors\n\n",
            self.server.join(" "),
            self.corpus_version,
            self.outcomes.len()
        ));
        m.push_str("| class | count |\n|---|---|\n");
        for k in [
            "content_read",
            "write_outside",
            "metadata_leak",
            "existence_oracle",
            "hangs",
            "crashes",
            "refused_should_succeed",
            "wrong_result",
            "not_refused",
            "skipped",
            "harness_errors",
            "passed",
        ] {
            m.push_str(&format!("| {k} | {} |\n", s[k]));
        }
        let bad: Vec<&Outcome> = self.outcomes.iter().filter(|o| !passed(o)).collect();
        if !bad.is_empty() {
            m.push_str("\n| vector | class | verdict | notes |\n|---|---|---|---|\n");
            for o in bad {
                let notes: String = o.notes.join("; ").chars().take(200).collect();
                m.push_str(&format!(
                    "| {} | {} | {} | {} |\n",
                    o.id,
                    o.class,
                    verdict(o),
                    notes.replace('|', "\\|").replace('\n', " ")
                ));
            }
        }
        m
    }
}

fn passed(o: &Outcome) -> bool {
    o.escapes.is_empty()
        && !o.hang
        && !o.crash
        && o.refused_should_succeed == 0
        && o.wrong_result == 0
        && o.not_refused == 0
        && o.skipped.is_none()
        && o.harness_error.is_none()
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
