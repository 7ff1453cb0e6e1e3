//! The undo journal's records: one JSON object per line of `journal.jsonl`.
//!
//! Owns: what a record holds and reading the log back (for `tuls journal
//! list` and `revert`). A line that does not parse (the torn last line of
//! a process killed while writing it) is skipped, so a journal left by a
//! `kill -9` still reads.
//! May touch: nothing (no I/O; the caller hands in the log's bytes).

use serde::{Deserialize, Serialize};

/// Where a changed file is: the operator's `DIR` (absolute, as given at
/// startup) and the path beneath it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Loc {
    /// The operator's `DIR`.
    pub root: String,
    /// The path beneath it (`/`-separated, never empty).
    pub path: String,
}

impl Loc {
    /// The path as one absolute spelling, for messages (a refused
    /// attempt that never resolved has no root: its path as given).
    pub fn shown(&self) -> String {
        if self.root.is_empty() {
            return self.path.clone();
        }
        format!("{}/{}", self.root.trim_end_matches('/'), self.path)
    }
}

/// What a change did, and so how it is undone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Op {
    /// An existing file's content replaced (`write_file`, `edit_file`):
    /// undone by putting the pre-image back.
    Replace,
    /// A new file made (`write_file`, `append_file`, `copy_file`): undone
    /// by removing it.
    Create,
    /// Bytes added at the end of an existing file: undone by cutting it
    /// back to its old size.
    Append,
    /// A file or directory renamed (`move_file`): undone by renaming it
    /// back, never over anything.
    Move,
    /// A directory made (`create_directory`, each missing one): undone by
    /// removing it if it is the same directory (device and inode) and empty.
    Mkdir,
}

/// One change.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// The session (process) that made it.
    pub session: String,
    /// Its number in the session, from 1.
    pub seq: u64,
    /// When (UTC).
    pub time: String,
    /// What it did.
    pub op: Op,
    /// The file changed (for a move: where it went).
    pub at: Loc,
    /// A move's old place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Loc>,
    /// The version before (replace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    /// The pre-image kept (replace): an object name in `objects/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// Why no pre-image was kept (replace), when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_kept: Option<String>,
    /// The size before (append).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_before: Option<u64>,
    /// The version after: what the file must still be for the change to be
    /// undone without `--force` (none for a directory or a file over the
    /// read limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// The device and inode of what the change left at `at` (the file
    /// written, the directory made, what was moved): a change is undone
    /// only if that is still there, with its version where it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<(u64, u64)>,
}

/// One line of the log.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Record {
    /// A session's first change is preceded by this.
    Start {
        /// The session's random id.
        session: String,
        /// When (UTC).
        time: String,
        /// The server's process id.
        pid: u32,
        /// The operator's roots (for nested roots, whose rules see each
        /// other), as the changes name them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        roots: Vec<String>,
        /// The operator's path rules, which the revert applies too (none
        /// recorded: the built-in protections).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rules: Option<super::rules::RuleSpec>,
    },
    /// A change.
    Change(Box<Change>),
    /// Pre-images removed to stay under `--journal-max-bytes`, oldest
    /// first: the changes that name them can no longer be undone.
    Evicted {
        /// When (UTC).
        time: String,
        /// The object names removed.
        objects: Vec<String>,
    },
    /// A change refused (nothing was changed): because the journal could
    /// not keep the file's first pre-image, or because the path rules
    /// protect the path (then `tool` names the call, and `at` has no root:
    /// its path is as the client gave it). Shown by `tuls journal list`
    /// and `show`.
    Refused {
        /// When (UTC).
        time: String,
        /// The session that asked for it.
        session: String,
        /// The file it would have changed.
        at: Loc,
        /// Why.
        why: String,
        /// The tool refused by the path rules.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
    },
    /// Changes undone by `tuls journal revert`.
    Reverted {
        /// When (UTC).
        time: String,
        /// The session.
        session: String,
        /// The changes undone.
        seqs: Vec<u64>,
    },
}

/// The records of a log, in order; lines that do not parse are skipped
/// (and counted).
pub fn parse(bytes: &[u8]) -> (Vec<Record>, usize) {
    let mut out = Vec::new();
    let mut skipped = 0;
    for line in bytes.split(|b| *b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Record>(line) {
            Ok(r) => out.push(r),
            Err(_) => skipped += 1,
        }
    }
    (out, skipped)
}

/// The pre-images never evicted: in every session, the first one kept of
/// each file (by [`Loc`]), unless that change was reverted.
pub fn pinned(records: &[Record]) -> std::collections::HashSet<String> {
    use std::collections::{HashMap, HashSet};
    let mut reverted: HashMap<&str, HashSet<u64>> = HashMap::new();
    for r in records {
        if let Record::Reverted { session, seqs, .. } = r {
            reverted.entry(session).or_default().extend(seqs);
        }
    }
    let mut seen: HashSet<(&str, &Loc)> = HashSet::new();
    let mut out = HashSet::new();
    for r in records {
        let Record::Change(c) = r else { continue };
        let Some(object) = &c.object else { continue };
        if !seen.insert((c.session.as_str(), &c.at)) {
            continue;
        }
        let undone = reverted
            .get(c.session.as_str())
            .is_some_and(|s| s.contains(&c.seq));
        if !undone {
            out.insert(object.clone());
        }
    }
    out
}

/// The time now, RFC 3339 in UTC with milliseconds.
pub fn now() -> String {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = i64::try_from(d.as_secs()).unwrap_or(0);
    chrono::DateTime::from_timestamp(secs, d.subsec_nanos())
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_last_line_is_skipped() {
        let a = r#"{"type":"start","session":"s","time":"t","pid":1}"#;
        let b = r#"{"type":"change","session":"s","seq":1,"time":"t","op":"create","at":{"root":"/r","path":"f"},"after":"b3:00"}"#;
        let bytes = format!("{a}\n{b}\n{}", &b[..30]);
        let (recs, skipped) = parse(bytes.as_bytes());
        assert_eq!(recs.len(), 2);
        assert_eq!(skipped, 1);
        assert!(matches!(&recs[1], Record::Change(c) if c.op == Op::Create && c.at.path == "f"));
    }
}
