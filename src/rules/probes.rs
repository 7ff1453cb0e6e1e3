//! The paths a move of a directory is checked on: every tail of every
//! pattern, wildcards made literal, so that what a move decides comes from
//! the rules, not from what exists beneath it.
//! May touch: nothing (no I/O).

use super::{Matcher, Relation, Rules};

impl Rules {
    /// Paths, relative to any directory, on which the rules may tell two
    /// places apart: every tail of every pattern's components, wildcards
    /// made literal (`docs/*/private` gives `docs/x/private`, `x/private`
    /// and `private`). A move of a directory is checked on them, so that
    /// what it decides comes from the rules, not from what exists beneath
    /// it. Regex rules give none (a move also checks what exists).
    pub fn probes(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut add = |p: &str| {
            let comps: Vec<String> = p
                .trim_start_matches('!')
                .split('/')
                .filter(|c| !c.is_empty() && *c != "**")
                .map(literal)
                .collect();
            for k in 0..comps.len() {
                let tail = comps[k..].join("/");
                if !out.contains(&tail) {
                    out.push(tail);
                }
            }
        };
        for r in &self.rules {
            match &r.matcher {
                Matcher::Glob(p)
                | Matcher::Exact(p)
                | Matcher::Prefix(p)
                | Matcher::Contains(p) => {
                    add(p);
                }
                Matcher::Regex(_) | Matcher::All => {}
            }
        }
        for (other, rel) in &self.others {
            if let Relation::Inner(at) = rel {
                add(at);
            }
            for p in other.probes() {
                add(&p);
                if let Relation::Inner(at) = rel {
                    add(&format!("{at}/{p}"));
                }
            }
        }
        out
    }
}

/// A pattern component with its wildcards made literal: `*` and `?` are
/// `x`, a class its first member, braces their first choice, an escape the
/// character escaped.
fn literal(c: &str) -> String {
    let mut out = String::with_capacity(c.len());
    let mut chars = c.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '*' | '?' => {
                if !out.ends_with('x') || ch == '?' {
                    out.push('x');
                }
            }
            '\\' => out.extend(chars.next()),
            '[' => {
                let mut first = None;
                for m in chars.by_ref() {
                    if m == ']' && first.is_some() {
                        break;
                    }
                    if first.is_none() && m != '!' && m != '^' {
                        first = Some(m);
                    }
                }
                out.extend(first);
            }
            '{' => {
                let mut took = true;
                for m in chars.by_ref() {
                    match m {
                        '}' => break,
                        ',' => took = false,
                        m if took => out.push(m),
                        _ => {}
                    }
                }
            }
            ch => out.push(ch),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::rule;
    use super::super::{Effect, Rules};

    /// The probes a directory move is checked on: every tail of every
    /// pattern, wildcards made literal.
    #[test]
    fn probes_are_the_tails_of_the_patterns() {
        let r = Rules::new(vec![
            rule("/docs/*/private", Effect::Hidden),
            rule("**/se[cd]rets/{a,b}.txt", Effect::Hidden),
            rule("*.pem", Effect::Hidden),
        ])
        .unwrap();
        let p = r.probes();
        for want in [
            "docs/x/private",
            "x/private",
            "private",
            "secrets/a.txt",
            "a.txt",
            "x.pem",
        ] {
            assert!(p.iter().any(|q| q == want), "{want} not in {p:?}");
        }
        // What the probes tell apart: `docs/x/private` is hidden, `docs2/...` not.
        assert_eq!(r.effect("docs/x/private", None), Effect::Hidden);
        assert_eq!(r.effect("docs2/x/private", None), Effect::None);
    }
}
