//! `tuls journal show DIR --session ID`: what a session changed, file by
//! file, for an operator to review before a revert.
//!
//! Owns: each change's op and path with a unified diff ([`unified_diff`],
//! the one `edit_file` previews with) from the pre-image kept in the
//! journal's object store (empty for a created file; for an append, the
//! file's first `sizeBefore` bytes) to the file as it is now. The journal
//! records only the after-version's hash, not its bytes, so the diff is to
//! the current file, and a note says when that is no longer what the change
//! left. Binary, missing, too large or evicted content gets a note instead.
//! It flags writes to control files (paths the built-in read-only set
//! protects) and the session's refused attempts. Diffs are bounded
//! ([`SHOW_DIFF_LINES`]). Everything shown to a person goes through
//! [`for_terminal`] once; `--json` holds the same, its strings exact.
//! May touch: the journal directory and the roots it names (read only,
//! reached as a revert reaches them: no link followed, no protected or
//! hidden path opened).

use std::io::Read as _;
use std::path::Path;
use std::process::ExitCode;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, OpenOptions};
use serde_json::{Value, json};

use super::list::{Session, fail, find_session, read};
use super::record::{Change, Loc, Op};
use super::undo::Roots;
use crate::fs::version::Version;
use crate::limits::{SHOW_DIFF_LINES, SHOW_DIFF_MAX_BYTES};
use crate::rules::{Effect, Rules};
use crate::text::diff::unified_diff;
use crate::text::fmt::for_terminal;

/// The built-in protections, to flag writes to control files.
fn default_rules() -> Option<Rules> {
    let built = crate::rules::config::build(&crate::rules::config::Spec::default()).ok()?;
    Rules::new(built.rules).ok()
}

/// Whether the built-in read-only set protects `path` (beneath a root).
fn control(rules: Option<&Rules>, path: &str) -> bool {
    rules.is_some_and(|r| r.effect(path, None) == Effect::ReadOnly)
}

/// Reads a file's bytes, up to the bound (`Err`: why not).
fn read_bounded(dir: &Dir, leaf: &str) -> Result<Vec<u8>, String> {
    let mut opts = OpenOptions::new();
    opts.read(true).follow(FollowSymlinks::No);
    let f = dir.open_with(leaf, &opts).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "the file no longer exists".to_owned(),
        _ => format!("the file cannot be read now: {e}"),
    })?;
    if !f.metadata().map_err(|e| e.to_string())?.is_file() {
        return Err("it is no longer a regular file".to_owned());
    }
    let mut out = Vec::new();
    f.take(SHOW_DIFF_MAX_BYTES + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("the file cannot be read now: {e}"))?;
    if out.len() as u64 > SHOW_DIFF_MAX_BYTES {
        return Err(format!(
            "the file is over {SHOW_DIFF_MAX_BYTES} bytes: not diffed"
        ));
    }
    Ok(out)
}

fn text(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes)
        .ok()
        .filter(|s| !s.contains('\0'))
}

/// One change as shown: its diff lines (bounded), how many more, notes.
struct Shown {
    diff: Vec<String>,
    more: usize,
    notes: Vec<String>,
}

fn diff_lines(name: &str, old: &str, new: &str, out: &mut Shown) {
    let patch = unified_diff(name, old, new);
    let lines: Vec<&str> = patch
        .lines()
        .skip_while(|l| !l.starts_with("@@"))
        .filter(|l| !l.starts_with("```") && !l.is_empty())
        .collect();
    if lines.is_empty() {
        out.notes.push("no difference".to_owned());
    }
    out.more = lines.len().saturating_sub(SHOW_DIFF_LINES);
    out.diff = lines
        .into_iter()
        .take(SHOW_DIFF_LINES)
        .map(str::to_owned)
        .collect();
}

fn show_change(c: &Change, roots: &mut Roots, objects: Option<&Dir>, evicted: bool) -> Shown {
    let mut out = Shown {
        diff: Vec::new(),
        more: 0,
        notes: Vec::new(),
    };
    if matches!(c.op, Op::Move | Op::Mkdir) {
        return out;
    }
    let now = roots
        .place(&c.at)
        .and_then(|(dir, leaf)| read_bounded(&dir, &leaf));
    let now = match now {
        Ok(b) => b,
        Err(why) => {
            out.notes.push(format!("no diff: {why}"));
            return out;
        }
    };
    if let Some(after) = &c.after
        && Version::of(&now).as_str() != after
    {
        out.notes.push(
            "the file changed after this change: the diff is to the file as it is now".to_owned(),
        );
    }
    let old: Vec<u8> = match c.op {
        Op::Create => Vec::new(),
        Op::Append => {
            let n = c.size_before.unwrap_or(0);
            now.get(..usize::try_from(n).unwrap_or(usize::MAX))
                .unwrap_or(&now)
                .to_vec()
        }
        _ => {
            let pre = match (&c.object, objects, evicted) {
                (_, _, true) => Err("its pre-image was evicted".to_owned()),
                (None, _, _) => Err(format!(
                    "no pre-image was kept{}",
                    c.not_kept
                        .as_ref()
                        .map(|w| format!(" ({w})"))
                        .unwrap_or_default()
                )),
                (Some(_), None, _) => Err("the journal has no object store".to_owned()),
                (Some(o), Some(d), false) => {
                    read_bounded(d, o).map_err(|e| format!("its pre-image cannot be read ({e})"))
                }
            };
            match pre {
                Ok(b) => b,
                Err(why) => {
                    out.notes.push(format!("no diff: {why}"));
                    return out;
                }
            }
        }
    };
    match (text(&old), text(&now)) {
        (Some(o), Some(n)) => diff_lines(&c.at.shown(), o, n, &mut out),
        _ => out.notes.push(format!(
            "binary content ({} bytes before, {} now): no diff",
            old.len(),
            now.len()
        )),
    }
    out
}

/// The path beneath one of the session's roots that a refused attempt's
/// given path names, for the control-file check.
fn beneath<'a>(roots: &[String], given: &'a str) -> &'a str {
    roots
        .iter()
        .find_map(|r| {
            given
                .strip_prefix(r.trim_end_matches('/'))
                .and_then(|p| p.strip_prefix('/'))
        })
        .unwrap_or(given)
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Replace => "replace",
        Op::Create => "create",
        Op::Append => "append",
        Op::Move => "move",
        Op::Mkdir => "mkdir",
    }
}

/// `tuls journal show DIR --session ID [--json]`.
pub fn show(path: &Path, session: &str, as_json: bool) -> ExitCode {
    let j = match read(path) {
        Ok(j) => j,
        Err(e) => return fail(&e),
    };
    let (id, s): (&String, &Session) = match find_session(&j.sessions, session) {
        Ok(found) => found,
        Err(e) => return fail(&e),
    };
    let rules = default_rules();
    let mut roots = Roots::new(&s.roots, s.rules.as_ref());
    let objects = cap_fs_ext::DirExt::open_dir_nofollow(&j.dir, "objects").ok();
    let mut changes = Vec::new();
    for c in &s.changes {
        let evicted = c.object.as_ref().is_some_and(|o| j.evicted.contains(o));
        let shown = show_change(c, &mut roots, objects.as_ref(), evicted);
        let ctl = control(rules.as_ref(), &c.at.path)
            || c.from
                .as_ref()
                .is_some_and(|f| control(rules.as_ref(), &f.path));
        changes.push(json!({
            "seq": c.seq,
            "time": c.time,
            "op": op_name(c.op),
            "path": c.at.shown(),
            "from": c.from.as_ref().map(Loc::shown),
            "controlFile": ctl,
            "reverted": s.reverted.contains(&c.seq),
            "diff": shown.diff,
            "moreDiffLines": shown.more,
            "notes": shown.notes,
        }));
    }
    let refused: Vec<Value> = s
        .refused
        .iter()
        .map(|(time, at, why, tool)| {
            let rel = if at.root.is_empty() {
                beneath(&s.roots, &at.path)
            } else {
                at.path.as_str()
            };
            json!({
                "time": time,
                "path": at.shown(),
                "tool": tool,
                "why": why,
                "controlFile": control(rules.as_ref(), rel),
            })
        })
        .collect();
    if as_json {
        let out = json!({
            "session": id,
            "started": s.started.as_ref().map(|s| &s.0),
            "changes": changes,
            "refused": refused,
        });
        crate::out!(
            "{}",
            crate::text::fmt::json_for_terminal(&out).unwrap_or_default()
        );
        return ExitCode::SUCCESS;
    }
    let str_of = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    crate::out!(
        "session {}  {} change(s), {} refused",
        for_terminal(id),
        changes.len(),
        refused.len()
    );
    for c in &changes {
        let mut head = format!("{} {}", str_of(&c["op"]), str_of(&c["path"]));
        if let Some(from) = c["from"].as_str() {
            head = format!("{} {from} -> {}", str_of(&c["op"]), str_of(&c["path"]));
        }
        let mut flags = Vec::new();
        if c["controlFile"] == json!(true) {
            flags.push("FLAG: control file");
        }
        if c["reverted"] == json!(true) {
            flags.push("reverted");
        }
        let flags = if flags.is_empty() {
            String::new()
        } else {
            format!("  [{}]", flags.join("; "))
        };
        crate::out!("#{} {}{flags}", c["seq"], for_terminal(&head));
        for n in c["notes"].as_array().into_iter().flatten() {
            crate::out!("    ({})", for_terminal(&str_of(n)));
        }
        for l in c["diff"].as_array().into_iter().flatten() {
            crate::out!("    {}", for_terminal(&str_of(l)));
        }
        if let Some(n) = c["moreDiffLines"].as_u64().filter(|n| *n > 0) {
            crate::out!("    [... {n} more lines]");
        }
    }
    for r in &refused {
        let ctl = if r["controlFile"] == json!(true) {
            "; control file"
        } else {
            ""
        };
        crate::out!(
            "refused {} {}  [FLAG: refused attempt{ctl}]",
            for_terminal(r["tool"].as_str().unwrap_or("write")),
            for_terminal(&str_of(&r["path"]))
        );
        crate::out!("    ({})", for_terminal(&str_of(&r["why"])));
    }
    ExitCode::SUCCESS
}
