//! `tuls journal revert DIR --session ID`: undoing a session's changes,
//! newest first.
//!
//! Owns: which changes a revert undoes and in what order, and what it
//! records. Each change is undone only if what is at its place is what the
//! change left (its version, and the device and inode of what it left),
//! so an edit made after the session is never clobbered and another file
//! that took the place is never removed; `--force` first lists the files
//! that changed since, then undoes anyway. The undo of one change is in
//! `journal/undo.rs`.
//!
//! A change that cannot be undone stops the older changes that depend on
//! it: every older change to the same path, or to a path beneath it or
//! above it (a file in a directory made, a directory moved), is left
//! alone and named ("not undone: it depends on #N"), so a revert never
//! undoes half of a chain and destroys what the other half protected.
//!
//! A replace whose pre-image is gone (evicted past `--journal-max-bytes`,
//! or not kept for want of room) is not refused at once: the next older
//! change to the same file in this revert (a replace whose pre-image is
//! there, or the create) undoes both, expecting what the newer change left.
//! The session's first pre-image of every file is pinned ([`super::store`]),
//! so a whole-session revert always reaches the user's own bytes.
//!
//! Everything shown to a person goes through [`for_terminal`] once.
//! May touch: the journal directory and the roots it names, opened once.

use std::collections::HashMap;
use std::path::Path;
use std::process::ExitCode;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, OpenOptions};

use super::list::{fail, find_session, read};
use super::record::{self, Change, Loc, Op, Record};
use super::undo::{Expect, Now, Roots, as_left, describe, now_at, undo};
use crate::fs::version::Version;
use crate::text::fmt::for_terminal;

pub use super::list::list;

/// Newer changes whose pre-image is gone, waiting for an older change to
/// the same file that undoes them too.
struct Deferred {
    /// What the newest of them left.
    want: Expect,
    seqs: Vec<u64>,
}

/// The state of one revert: what it undid, what it could not, and what it
/// left where.
struct Plan<'a> {
    done: Vec<u64>,
    refused: usize,
    /// Places of the changes not undone, with the change: older changes
    /// touching them (or beneath or above them) are not undone either.
    blocked: Vec<(&'a Loc, u64)>,
    pending: HashMap<Loc, Deferred>,
    /// The device and inode the revert itself left at a place (a file
    /// written back, a file moved back), expected there by older changes.
    ids: HashMap<Loc, (u64, u64)>,
}

/// Whether one of `a` and `b` is the other or lies beneath it.
fn overlaps(a: &Loc, b: &Loc) -> bool {
    if a.root != b.root {
        return false;
    }
    let beneath = |x: &str, y: &str| {
        x == y
            || (x.len() > y.len() && x.starts_with(y) && x.as_bytes().get(y.len()) == Some(&b'/'))
    };
    beneath(&a.path, &b.path) || beneath(&b.path, &a.path)
}

/// The places a change touches: where it left something, and a move's
/// old place.
fn places(c: &Change) -> impl Iterator<Item = &Loc> {
    std::iter::once(&c.at).chain(c.from.as_ref())
}

impl<'a> Plan<'a> {
    fn refuse(&mut self, seq: u64, at: &Loc, why: &str) {
        self.refused += 1;
        crate::out!(
            "refused #{seq} {}: {}",
            for_terminal(&at.shown()),
            for_terminal(why)
        );
    }

    /// Refuses the changes waiting at `at` (none older restores them).
    fn refuse_pending(&mut self, at: &'a Loc, why: &str) {
        if let Some(d) = self.pending.remove(at) {
            for seq in d.seqs {
                self.refuse(seq, at, why);
                self.blocked.push((at, seq));
            }
        }
    }

    /// The later change not undone that `c` depends on.
    fn blocker(&self, c: &Change) -> Option<(&'a Loc, u64)> {
        places(c).find_map(|p| self.blocked.iter().find(|(b, _)| overlaps(p, b)).copied())
    }
}

/// The pre-image of a replace, when it is there: `Ok(None)` when it is gone
/// (evicted, never kept, unreadable), an error when it is there but not the
/// content it is named by.
fn pre_image(c: &Change, objects: Option<&Dir>, evicted: bool) -> Result<Option<Vec<u8>>, String> {
    let (Some(o), Some(dir), false) = (&c.object, objects, evicted) else {
        return Ok(None);
    };
    let Ok(bytes) = dir.read(o) else {
        return Ok(None);
    };
    // Content-addressed: the bytes must still be the version named.
    if format!("b3:{o}") != Version::of(&bytes).as_str() {
        return Err("its pre-image no longer has the content it is named by".to_owned());
    }
    Ok(Some(bytes))
}

/// Why a replace's pre-image is gone, for the refusal.
fn gone_why(c: &Change, evicted: bool) -> String {
    match (&c.object, evicted) {
        (Some(_), true) => "its pre-image was evicted (--journal-max-bytes)".to_owned(),
        (Some(o), false) => format!("its pre-image {o} cannot be read"),
        (None, _) => format!(
            "no pre-image was kept: {}",
            c.not_kept.as_deref().unwrap_or("unknown")
        ),
    }
}

/// `tuls journal revert DIR --session ID [--to SEQ] [--force]`.
pub fn revert(path: &Path, session: &str, to: u64, force: bool) -> ExitCode {
    let j = match read(path) {
        Ok(j) => j,
        Err(e) => return fail(&e),
    };
    let (session, s) = match find_session(&j.sessions, session) {
        Ok(found) => found,
        Err(e) => return fail(&e),
    };
    let mut todo: Vec<&Change> = s
        .changes
        .iter()
        .filter(|c| c.seq > to && !s.reverted.contains(&c.seq))
        .collect();
    todo.sort_by_key(|c| std::cmp::Reverse(c.seq));
    if todo.is_empty() {
        crate::out!("nothing to revert in session {}", for_terminal(session));
        return ExitCode::SUCCESS;
    }
    crate::out!("reverting session {}", for_terminal(session));
    let mut roots = Roots::new(&s.roots, s.rules.as_ref());
    if force {
        overwritten(&todo, &mut roots);
    }
    let objects = cap_fs_ext::DirExt::open_dir_nofollow(&j.dir, "objects").ok();
    let mut plan = Plan {
        done: Vec::new(),
        refused: 0,
        blocked: Vec::new(),
        pending: HashMap::new(),
        ids: HashMap::new(),
    };
    for c in todo {
        if let Some((at, seq)) = plan.blocker(c) {
            // What waits here cannot be restored by this change either.
            plan.refuse_pending(&c.at, "its pre-image was evicted and the older change that would restore it was not undone");
            let why = format!(
                "not undone: it depends on #{seq} ({}), which was not undone",
                at.shown()
            );
            plan.refuse(c.seq, &c.at, &why);
            plan.blocked.extend(places(c).map(|p| (p, c.seq)));
            continue;
        }
        let evicted = c.object.as_ref().is_some_and(|o| j.evicted.contains(o));
        let object = match c.op {
            Op::Replace => match pre_image(c, objects.as_ref(), evicted) {
                Ok(o) => o,
                Err(why) => {
                    plan.refuse_pending(&c.at, &why);
                    plan.refuse(c.seq, &c.at, &why);
                    plan.blocked.extend(places(c).map(|p| (p, c.seq)));
                    continue;
                }
            },
            _ => None,
        };
        let deferred = plan.pending.remove(&c.at);
        // A move away from a file waiting for an older restore: it cannot be
        // undone first.
        if let Some(from) = &c.from
            && plan.pending.contains_key(from)
        {
            plan.refuse_pending(from, &gone_why(c, evicted));
        }
        let mut want = deferred
            .as_ref()
            .map_or_else(|| Expect::of(c), |d| d.want.clone());
        if let Some(id) = plan.ids.get(&c.at) {
            want.id = Some(*id);
        }
        if c.op == Op::Replace && object.is_none() {
            let mut seqs = deferred.map(|d| d.seqs).unwrap_or_default();
            seqs.push(c.seq);
            let why = gone_why(c, evicted);
            crate::out!(
                "deferred #{} {}: {why}; an older change to it restores it",
                c.seq,
                for_terminal(&c.at.shown())
            );
            plan.pending.insert(c.at.clone(), Deferred { want, seqs });
            continue;
        }
        let with = deferred.map(|d| d.seqs).unwrap_or_default();
        if !with.is_empty() && !matches!(c.op, Op::Replace | Op::Create) {
            let why = "its pre-image was evicted, and the older change to it cannot restore it";
            for seq in &with {
                plan.refuse(*seq, &c.at, why);
                plan.blocked.push((&c.at, *seq));
            }
            let why = format!(
                "not undone: it depends on #{}, which was not undone",
                with[0]
            );
            plan.refuse(c.seq, &c.at, &why);
            plan.blocked.extend(places(c).map(|p| (p, c.seq)));
            continue;
        }
        match undo(c, &mut roots, object, &want, force) {
            Ok(d) => {
                crate::out!("{}", for_terminal(&d.what));
                plan.done.push(c.seq);
                plan.done.extend(&with);
                let moved = plan.ids.remove(&c.at);
                match (c.op, &c.from) {
                    (Op::Move, Some(from)) => {
                        if let Some(id) = moved {
                            plan.ids.insert(from.clone(), id);
                        }
                    }
                    _ => {
                        if let Some(id) = d.left {
                            plan.ids.insert(c.at.clone(), id);
                        }
                    }
                }
            }
            Err(why) => {
                for seq in &with {
                    plan.refuse(*seq, &c.at, &format!("not undone with #{}: {why}", c.seq));
                    plan.blocked.push((&c.at, *seq));
                }
                plan.refuse(c.seq, &c.at, &why);
                plan.blocked.extend(places(c).map(|p| (p, c.seq)));
            }
        }
    }
    let left: Vec<(Loc, Deferred)> = plan.pending.drain().collect();
    for (at, d) in left {
        for seq in d.seqs {
            plan.refuse(
                seq,
                &at,
                "its pre-image is gone and no older change in this revert restores the file",
            );
        }
    }
    record_reverted(&j.dir, session, &plan.done);
    crate::out!(
        "{} change(s) undone, {} refused",
        plan.done.len(),
        plan.refused
    );
    if plan.refused > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `--force`: lists what the newest change to each place left against what
/// is there now, before anything is overwritten.
fn overwritten(todo: &[&Change], roots: &mut Roots) {
    let mut seen = std::collections::HashSet::new();
    let mut over = Vec::new();
    for c in todo {
        if !seen.insert(c.at.clone()) {
            continue;
        }
        if let Ok((dir, leaf)) = roots.place(&c.at) {
            let now = now_at(&dir, &leaf);
            if !as_left(&Expect::of(c), &now) && now != Now::Missing {
                over.push(format!("{} ({})", c.at.shown(), describe(&now)));
            }
        }
    }
    if !over.is_empty() {
        crate::out!("--force: these changed after the session and will be overwritten:");
        for o in &over {
            crate::out!("  {}", for_terminal(o));
        }
    }
}

/// Appends the `reverted` record, so a second revert has nothing to do.
fn record_reverted(dir: &Dir, session: &str, done: &[u64]) {
    if done.is_empty() {
        return;
    }
    let mut seqs = done.to_vec();
    seqs.sort_unstable();
    let rec = Record::Reverted {
        time: record::now(),
        session: session.to_owned(),
        seqs,
    };
    let mut line = serde_json::to_string(&rec).unwrap_or_default();
    line.push('\n');
    let mut opts = OpenOptions::new();
    opts.append(true).follow(FollowSymlinks::No);
    let written = dir
        .open_with(super::LOG, &opts)
        .map_err(|e| e.to_string())
        .and_then(|f| {
            super::write_all(&f, line.as_bytes())
                .and_then(|()| crate::fs::sys::datasync(&f))
                .map_err(|e| e.to_string())
        });
    if let Err(e) = written {
        crate::say!(
            "tuls: warning: the revert is not recorded in the journal: {}",
            for_terminal(&e)
        );
    }
}
