//! `tuls journal list DIR`: reading the undo journal back and showing its
//! sessions, their changes and the changes refused for want of room.
//!
//! Owns: reading the log (a torn last line is skipped and counted), the
//! sessions in the order they began, and finding the session `--session`
//! names (its id or a unique prefix). Everything shown to a person goes
//! through [`for_terminal`] as it is printed, once; `--json` keeps the
//! strings exact ([`crate::text::fmt::json_for_terminal`]).
//! May touch: the journal directory (read only).

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::process::ExitCode;

use cap_std::fs::Dir;
use serde_json::json;

use super::record::{self, Change, Loc, Op, Record};
use crate::text::fmt::for_terminal;

/// One session as the journal holds it.
#[derive(Debug, Default)]
pub(super) struct Session {
    pub(super) started: Option<(String, u32)>,
    pub(super) changes: Vec<Change>,
    pub(super) reverted: HashSet<u64>,
    /// Changes refused (the journal had no room, or the path rules
    /// protect the path): when, where, why, and the tool the rules refused.
    pub(super) refused: Vec<(String, Loc, String, Option<String>)>,
    /// The operator's roots and rule spec (`None`: not recorded, the
    /// built-in protections apply).
    pub(super) roots: Vec<String>,
    pub(super) rules: Option<super::rules::RuleSpec>,
}

/// The journal read back.
pub(super) struct Read {
    pub(super) dir: Dir,
    pub(super) sessions: BTreeMap<String, Session>,
    pub(super) order: Vec<String>,
    pub(super) evicted: HashSet<String>,
    pub(super) skipped: usize,
}

pub(super) fn read(path: &Path) -> Result<Read, String> {
    let dir = crate::fs::roots::open_operator_dir(path, false)?;
    let bytes = dir
        .read(super::LOG)
        .map_err(|e| format!("cannot read '{}/{}': {e}", path.display(), super::LOG))?;
    let (records, skipped) = record::parse(&bytes);
    let mut sessions: BTreeMap<String, Session> = BTreeMap::new();
    let mut order = Vec::new();
    let mut evicted = HashSet::new();
    for r in records {
        match r {
            Record::Start {
                session,
                time,
                pid,
                roots,
                rules,
            } => {
                if !sessions.contains_key(&session) {
                    order.push(session.clone());
                }
                let s = sessions.entry(session).or_default();
                s.started = Some((time, pid));
                s.roots = roots;
                s.rules = rules;
            }
            Record::Change(c) => {
                if !sessions.contains_key(&c.session) {
                    order.push(c.session.clone());
                }
                sessions
                    .entry(c.session.clone())
                    .or_default()
                    .changes
                    .push(*c);
            }
            Record::Evicted { objects, .. } => evicted.extend(objects),
            Record::Refused {
                time,
                session,
                at,
                why,
                tool,
            } => {
                if !sessions.contains_key(&session) {
                    order.push(session.clone());
                }
                sessions
                    .entry(session)
                    .or_default()
                    .refused
                    .push((time, at, why, tool));
            }
            Record::Reverted { session, seqs, .. } => {
                sessions.entry(session).or_default().reverted.extend(seqs);
            }
        }
    }
    Ok(Read {
        dir,
        sessions,
        order,
        evicted,
        skipped,
    })
}

/// `tuls journal list DIR [--json]`.
pub fn list(path: &Path, as_json: bool) -> ExitCode {
    let j = match read(path) {
        Ok(j) => j,
        Err(e) => return fail(&e),
    };
    let gone = |c: &Change| c.object.as_ref().is_some_and(|o| j.evicted.contains(o));
    if as_json {
        let sessions: Vec<_> = j
            .order
            .iter()
            .filter_map(|id| j.sessions.get(id).map(|s| (id, s)))
            .map(|(id, s)| {
                let changes: Vec<_> = s
                    .changes
                    .iter()
                    .map(|c| {
                        let mut v = serde_json::to_value(c).unwrap_or_default();
                        v["evicted"] = json!(gone(c));
                        v["reverted"] = json!(s.reverted.contains(&c.seq));
                        v
                    })
                    .collect();
                let refused: Vec<_> = s
                    .refused
                    .iter()
                    .map(|(time, at, why, tool)| json!({"time": time, "at": at, "why": why, "tool": tool}))
                    .collect();
                json!({
                    "session": id,
                    "started": s.started.as_ref().map(|s| &s.0),
                    "pid": s.started.as_ref().map(|s| s.1),
                    "changes": changes,
                    "refused": refused,
                })
            })
            .collect();
        let out = json!({"sessions": sessions, "skippedLines": j.skipped});
        crate::out!(
            "{}",
            crate::text::fmt::json_for_terminal(&out).unwrap_or_default()
        );
        return ExitCode::SUCCESS;
    }
    if j.order.is_empty() {
        crate::out!("no sessions in the journal");
    }
    for id in &j.order {
        let Some(s) = j.sessions.get(id) else {
            continue;
        };
        let (time, pid) = s
            .started
            .as_ref()
            .map_or(("?".to_owned(), 0), |(t, p)| (t.clone(), *p));
        crate::out!(
            "session {}  started {}  pid {pid}  {} change(s)",
            for_terminal(id),
            for_terminal(&time),
            s.changes.len()
        );
        for c in &s.changes {
            let what = match c.op {
                Op::Replace => format!("replace {}", c.at.shown()),
                Op::Create => format!("create  {}", c.at.shown()),
                Op::Append => format!("append  {}", c.at.shown()),
                Op::Mkdir => format!("mkdir   {}", c.at.shown()),
                Op::Move => format!(
                    "move    {} -> {}",
                    c.from.as_ref().map(Loc::shown).unwrap_or_default(),
                    c.at.shown()
                ),
            };
            let mut notes = Vec::new();
            if gone(c) {
                notes.push("pre-image evicted".to_owned());
            }
            if let Some(why) = &c.not_kept {
                notes.push(format!("pre-image not kept: {why}"));
            }
            if s.reverted.contains(&c.seq) {
                notes.push("reverted".to_owned());
            }
            let notes = if notes.is_empty() {
                String::new()
            } else {
                format!("  [{}]", notes.join("; "))
            };
            crate::out!(
                "  {:>4}  {}  {}",
                c.seq,
                for_terminal(&c.time),
                for_terminal(&format!("{what}{notes}"))
            );
        }
        for (time, at, why, _) in &s.refused {
            crate::out!(
                "  refused  {}  {}",
                for_terminal(time),
                for_terminal(&format!("{} (not changed: {why})", at.shown()))
            );
        }
    }
    if j.skipped > 0 {
        crate::out!(
            "({} line(s) that do not parse were skipped: a torn last line of a process killed while writing it)",
            j.skipped
        );
    }
    ExitCode::SUCCESS
}

/// A usage error (exit 2), its message escaped.
pub(super) fn fail(e: &str) -> ExitCode {
    crate::say!("tuls: error: {}", for_terminal(e));
    ExitCode::from(2)
}

/// The most candidates an ambiguous `--session` error lists.
const AMBIGUOUS_SHOWN: usize = 10;

/// The session `given` names: the one whose id it is, else the only one
/// whose id starts with it. An empty `given`, one that names none, and a
/// prefix of several (listed in the message) are errors.
pub(super) fn find_session<'j>(
    sessions: &'j BTreeMap<String, Session>,
    given: &str,
) -> Result<(&'j String, &'j Session), String> {
    if let Some(found) = sessions.get_key_value(given) {
        return Ok(found);
    }
    let mut matching = sessions
        .iter()
        .filter(|(id, _)| !given.is_empty() && id.starts_with(given));
    match (matching.next(), matching.next()) {
        (Some(found), None) => Ok(found),
        (None, _) => Err(format!(
            "no session '{given}' in the journal (`tuls journal list` shows them; --session takes an id or a unique prefix of one)"
        )),
        (Some(a), Some(b)) => {
            let ids: Vec<&str> = [a, b]
                .into_iter()
                .chain(matching)
                .map(|(id, _)| id.as_str())
                .collect();
            let more = match ids.len().saturating_sub(AMBIGUOUS_SHOWN) {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            Err(format!(
                "--session '{given}' is ambiguous: it begins {} sessions' ids ({}{more}); give more of the id",
                ids.len(),
                ids.get(..AMBIGUOUS_SHOWN).unwrap_or(&ids).join(", ")
            ))
        }
    }
}
