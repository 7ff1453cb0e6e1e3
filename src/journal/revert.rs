//! `tuls journal list DIR` and `tuls journal revert DIR --session ID`: the
//! operator's side of the undo journal.
//!
//! Owns: reading the journal back (a torn last line is skipped), showing
//! sessions and their changes, and undoing a session's changes newest
//! first. Each change is undone only if what is there now is what the
//! journal recorded after the change (its version, or for a directory moved
//! its device and inode), so an edit made after the session is never
//! clobbered; `--force` first lists the files that changed since, then
//! undoes anyway. A replaced file gets its pre-image back through the one
//! writer ([`crate::fs::atomic::Dest`], which checks the file again after
//! swapping it out); a created file is removed; an append is cut back to
//! the old size; a move is renamed back, never over anything.
//!
//! Everything shown to a person (names, paths, session ids, messages that
//! name them) goes through [`for_terminal`] as it is printed, once: a name
//! the agent chose cannot forge a line or send the terminal an escape.
//! `--json` keeps the strings exact ([`crate::text::fmt::json_for_terminal`]).
//! `--session` takes the id or a unique prefix of it.
//!
//! The roots the journal names are opened as capabilities
//! ([`crate::fs::roots::open`]) and every change goes through those handles
//! by paths beneath them, as in the server; the journal's own path rules
//! are not applied (the operator undoes what the agent was allowed to do).
//! May touch: the journal directory and the roots it names, opened once.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, MetadataExt, OpenOptions, OpenOptionsExt};
use rustix::fs::RenameFlags;
use serde_json::json;

use super::record::{self, Change, Loc, Op, Record};
use crate::fs::atomic::{Dest, Guard};
use crate::fs::resolve::Final;
use crate::fs::roots::Root;
use crate::fs::scope::{Target, resolve_in, walk};
use crate::fs::version::Version;
use crate::limits::{MAX_PATH_BYTES, MAX_READ_BYTES};
use crate::text::fmt::for_terminal;

/// One session as the journal holds it.
#[derive(Debug, Default)]
struct Session {
    started: Option<(String, u32)>,
    changes: Vec<Change>,
    reverted: HashSet<u64>,
}

/// The journal read back.
struct Read {
    dir: Dir,
    sessions: BTreeMap<String, Session>,
    order: Vec<String>,
    evicted: HashSet<String>,
    skipped: usize,
}

fn read(path: &Path) -> Result<Read, String> {
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
            Record::Start { session, time, pid } => {
                if !sessions.contains_key(&session) {
                    order.push(session.clone());
                }
                sessions.entry(session).or_default().started = Some((time, pid));
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
                json!({
                    "session": id,
                    "started": s.started.as_ref().map(|s| &s.0),
                    "pid": s.started.as_ref().map(|s| s.1),
                    "changes": changes,
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
fn fail(e: &str) -> ExitCode {
    crate::say!("tuls: error: {}", for_terminal(e));
    ExitCode::from(2)
}

/// The most candidates an ambiguous `--session` error lists.
const AMBIGUOUS_SHOWN: usize = 10;

/// The session `given` names: the one whose id it is, else the only one
/// whose id starts with it. An empty `given`, one that names none, and a
/// prefix of several (listed in the message) are errors.
fn find_session<'j>(
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

/// The roots the journal names, opened as capabilities (once each).
struct Roots {
    open: HashMap<String, Result<Arc<Root>, String>>,
}

impl Roots {
    fn get(&mut self, root: &str) -> Result<Arc<Root>, String> {
        self.open
            .entry(root.to_owned())
            .or_insert_with(|| {
                crate::fs::roots::open(Path::new(root))
                    .map(Arc::new)
                    .map_err(|e| e.to_string())
            })
            .clone()
    }

    /// The target `loc` names, resolved by the walk backend as a tool's
    /// write is (a final symlink is not followed).
    fn target(&mut self, loc: &Loc) -> Result<Target, String> {
        let root = self.get(&loc.root)?;
        let mut t = resolve_in(&[root], &loc.shown(), MAX_PATH_BYTES).map_err(|e| e.to_string())?;
        walk(&mut t, Final::Link).map_err(|e| e.to_string())?;
        Ok(t)
    }

    /// The directory `loc` is in (the walk's handle), and its name there.
    fn place(&mut self, loc: &Loc) -> Result<(Dir, String), String> {
        let t = self.target(loc)?;
        let (parent, leaf) = t.parent_and_leaf().map_err(|e| e.to_string())?;
        let dir = t.open_parent(&parent).map_err(|e| format!("{e}"))?;
        Ok((dir, leaf))
    }
}

/// What is at a place now, to compare with what the journal recorded.
#[derive(Debug, PartialEq, Eq)]
enum Now {
    Missing,
    File(Option<Version>, (u64, u64)),
    Other((u64, u64)),
}

fn now_at(dir: &Dir, leaf: &str) -> Now {
    let Ok(md) = dir.symlink_metadata(leaf) else {
        return Now::Missing;
    };
    let id = (md.dev(), md.ino());
    if !md.is_file() {
        return Now::Other(id);
    }
    let v = crate::fs::file::version_in(dir, leaf, leaf, MAX_READ_BYTES)
        .ok()
        .and_then(|(v, _)| v);
    Now::File(v, id)
}

/// Whether what is at the change's place now is what the change left.
fn as_left(c: &Change, now: &Now) -> bool {
    match (now, &c.after, c.id) {
        (Now::File(Some(v), _), Some(after), _) => v.as_str() == after,
        (Now::File(_, id) | Now::Other(id), None, Some(want)) => *id == want,
        _ => false,
    }
}

fn describe(now: &Now) -> String {
    match now {
        Now::Missing => "it no longer exists".to_owned(),
        Now::File(Some(v), _) => format!("its version is now {v}"),
        Now::File(None, _) => "it has no version now (too large, or changing)".to_owned(),
        Now::Other(_) => "it is no longer the same".to_owned(),
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
    let mut roots = Roots {
        open: HashMap::new(),
    };
    if force {
        // What the newest change to each place left, against what is there.
        let mut seen = HashSet::new();
        let mut over = Vec::new();
        for c in &todo {
            if !seen.insert(c.at.clone()) {
                continue;
            }
            if let Ok((dir, leaf)) = roots.place(&c.at) {
                let now = now_at(&dir, &leaf);
                if !as_left(c, &now) && now != Now::Missing {
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
    let objects = cap_fs_ext::DirExt::open_dir_nofollow(&j.dir, "objects").ok();
    let mut done = Vec::new();
    let mut refused = 0usize;
    for c in todo {
        let gone = c.object.as_ref().is_some_and(|o| j.evicted.contains(o));
        match undo(c, &mut roots, objects.as_ref(), gone, force) {
            Ok(what) => {
                crate::out!("{}", for_terminal(&what));
                done.push(c.seq);
            }
            Err(why) => {
                refused += 1;
                crate::out!(
                    "refused #{} {}: {}",
                    c.seq,
                    for_terminal(&c.at.shown()),
                    for_terminal(&why)
                );
            }
        }
    }
    if !done.is_empty() {
        let rec = Record::Reverted {
            time: record::now(),
            session: session.clone(),
            seqs: done.clone(),
        };
        let mut line = serde_json::to_string(&rec).unwrap_or_default();
        line.push('\n');
        let mut opts = OpenOptions::new();
        opts.append(true).follow(FollowSymlinks::No);
        let written = j
            .dir
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
    crate::out!("{} change(s) undone, {refused} refused", done.len());
    if refused > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Undoes one change; says what it did, or why not.
fn undo(
    c: &Change,
    roots: &mut Roots,
    objects: Option<&Dir>,
    gone: bool,
    force: bool,
) -> Result<String, String> {
    let (dir, leaf) = roots.place(&c.at)?;
    let now = now_at(&dir, &leaf);
    let left = as_left(c, &now);
    let changed = || {
        format!(
            "it was changed after the session ({}; the journal recorded {}); --force overwrites it",
            describe(&now),
            c.after.as_deref().unwrap_or("no version")
        )
    };
    match c.op {
        Op::Replace => {
            let object = match (&c.object, objects) {
                (Some(o), Some(dir)) if !gone => dir
                    .read(o)
                    .map_err(|e| format!("its pre-image {o} cannot be read ({e})"))?,
                (Some(_), _) => {
                    return Err("its pre-image was evicted (--journal-max-bytes)".to_owned());
                }
                (None, _) => {
                    return Err(format!(
                        "no pre-image was kept: {}",
                        c.not_kept.as_deref().unwrap_or("unknown")
                    ));
                }
            };
            // Content-addressed: the bytes must still be the version named.
            if c.object.as_ref().map(|o| format!("b3:{o}")).as_deref()
                != Some(Version::of(&object).as_str())
            {
                return Err("its pre-image no longer has the content it is named by".to_owned());
            }
            if !left && !force {
                return Err(changed());
            }
            let t = roots.target(&c.at)?;
            let dest = Dest::locate(&t).map_err(|e| e.to_string())?;
            let guard = match (&now, force) {
                (Now::File(Some(v), _), false) => Guard::Content {
                    version: v.clone(),
                    limit: MAX_READ_BYTES,
                    named: false,
                },
                _ => Guard::None,
            };
            dest.replace(&object, guard, &crate::fs::record::Recorders::NONE)
                .map_err(|e| e.to_string())?;
            Ok(format!("restored {}", c.at.shown()))
        }
        Op::Create => {
            if now == Now::Missing {
                return Ok(format!("already gone: {}", c.at.shown()));
            }
            if !left && !force {
                return Err(changed());
            }
            dir.remove_file(&leaf).map_err(|e| e.to_string())?;
            Ok(format!("removed {}", c.at.shown()))
        }
        Op::Append => {
            if !left && !force {
                return Err(changed());
            }
            let size = c.size_before.unwrap_or(0);
            let mut opts = OpenOptions::new();
            opts.write(true)
                .follow(FollowSymlinks::No)
                .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
            let f = dir.open_with(&leaf, &opts).map_err(|e| e.to_string())?;
            if !f.metadata().is_ok_and(|m| m.is_file()) {
                return Err("it is no longer a regular file".to_owned());
            }
            f.set_len(size).map_err(|e| e.to_string())?;
            f.sync_all().map_err(|e| e.to_string())?;
            Ok(format!("cut {} back to {size} bytes", c.at.shown()))
        }
        Op::Move => {
            let Some(from) = &c.from else {
                return Err("the record names no old path".to_owned());
            };
            if now == Now::Missing {
                return Err("it is no longer there".to_owned());
            }
            if !left && !force {
                return Err(changed());
            }
            let (fdir, fleaf) = roots.place(from)?;
            rustix::fs::renameat_with(
                &dir,
                leaf.as_str(),
                &fdir,
                fleaf.as_str(),
                RenameFlags::NOREPLACE,
            )
            .map_err(|e| match e {
                rustix::io::Errno::EXIST => {
                    format!("its old path {} is taken", from.shown())
                }
                e => e.to_string(),
            })?;
            Ok(format!("moved {} back to {}", c.at.shown(), from.shown()))
        }
    }
}
