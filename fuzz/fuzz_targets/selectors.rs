//! selectors: arbitrary `--allow`/`--deny` lists against `Policy::from_selectors`.
//!
//! Input: parts separated by the byte `0xff` (never valid UTF-8, so never
//! inside a selector). A part starting with `-` is a deny selector (the rest
//! of the part), with `+` an allow selector (the rest), anything else an allow
//! selector (the whole part). Parts are decoded as lossy UTF-8.
//!
//! Oracle: nothing panics, and the result matches a model written here
//! independently of `src/policy.rs`: exact spellings only; any unknown
//! selector is an error; with no allow every tool starts enabled; deny
//! always wins (a tool any deny selector names is never enabled); an empty
//! result is an error.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tuls::policy::Policy;

use tuls_fuzz::TOOLS;

/// The tools a selector names, or `None` if it is not a valid selector.
fn names(sel: &str) -> Option<Vec<&'static str>> {
    let pick = |f: &dyn Fn(bool) -> bool| {
        TOOLS
            .iter()
            .filter(|(_, w)| f(*w))
            .map(|(t, _)| *t)
            .collect()
    };
    match sel {
        "filesystem" => Some(pick(&|_| true)),
        "filesystem.read" => Some(pick(&|w| !w)),
        "filesystem.write" => Some(pick(&|w| w)),
        _ => {
            let tool = sel.strip_prefix("filesystem/")?;
            TOOLS
                .iter()
                .find(|(t, _)| *t == tool)
                .map(|(t, _)| vec![*t])
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut allow = Vec::new();
    let mut deny = Vec::new();
    for part in data.split(|&b| b == 0xff).filter(|p| !p.is_empty()) {
        let s = String::from_utf8_lossy(part);
        if let Some(d) = s.strip_prefix('-') {
            deny.push(d.to_owned());
        } else if let Some(a) = s.strip_prefix('+') {
            allow.push(a.to_owned());
        } else {
            allow.push(s.into_owned());
        }
    }
    let got = Policy::from_selectors(&allow, &deny);

    let allowed: Option<Vec<Vec<&str>>> = allow.iter().map(|s| names(s)).collect();
    let denied: Option<Vec<Vec<&str>>> = deny.iter().map(|s| names(s)).collect();
    let (Some(allowed), Some(denied)) = (allowed, denied) else {
        assert!(
            got.is_err(),
            "an invalid selector was accepted: allow {allow:?} deny {deny:?}"
        );
        return;
    };
    let denied: Vec<&str> = denied.concat();
    let allowed: Vec<&str> = allowed.concat();
    let expect: Vec<&str> = TOOLS
        .iter()
        .map(|(t, _)| *t)
        .filter(|t| allow.is_empty() || allowed.contains(t))
        .filter(|t| !denied.contains(t))
        .collect();
    match got {
        Err(e) => assert!(
            expect.is_empty(),
            "valid selectors refused ({e}): allow {allow:?} deny {deny:?}"
        ),
        Ok(policy) => {
            for t in &denied {
                assert!(
                    !policy.is_enabled(t),
                    "DENIED TOOL ENABLED: {t}; allow {allow:?} deny {deny:?}"
                );
            }
            assert_eq!(
                policy.enabled_tools(),
                expect,
                "allow {allow:?} deny {deny:?}"
            );
            for (t, _) in TOOLS {
                assert_eq!(policy.is_enabled(t), expect.contains(&t));
            }
            assert_eq!(
                policy.any_write(),
                TOOLS.iter().any(|(t, w)| *w && expect.contains(t))
            );
        }
    }
});
