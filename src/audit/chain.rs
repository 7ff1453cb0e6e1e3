//! The audit log's hash chain, and `tuls audit verify FILE`.
//!
//! Owns: the canonical form of a record (sorted-key JSON, no whitespace:
//! RFC 8785 for what the log holds, whose numbers are all integers), the
//! link (`prev`: the BLAKE3 of the previous line's canonical form, 64 hex
//! digits; the first record of a file has [`GENESIS`]), picking the chain
//! up from an existing log's last line at startup, and checking a whole log.
//! A record changed, removed or inserted anywhere before the last makes the
//! next record's `prev` disagree, and `verify` names that record.
//!
//! What it does not do: the chain has no key, so whoever can write the
//! file can rewrite all of it, and cutting records off its end leaves a
//! chain that verifies. Ship the lines elsewhere as they are written
//! (`--audit-fd` to a collector) where that matters.
//! May touch: at startup, the log's descriptor (read only); `verify`, the
//! file the operator names (read only).

use std::path::Path;
use std::process::ExitCode;

use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use serde_json::Value;

use crate::text::fmt::for_terminal;

/// The `prev` of the first record of a file.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The most bytes read back from the end of a log to find its last line.
const MAX_LAST_LINE: u64 = 64 << 20;

/// The chain as far as it was written: the hash the next record carries.
#[derive(Debug)]
pub struct Chain {
    prev: String,
    /// The log ends in a torn line: the next record starts a line first.
    torn: bool,
}

impl Chain {
    /// A chain for a new (empty) log, or a stream that cannot be read back.
    pub fn new() -> Chain {
        Chain {
            prev: GENESIS.to_owned(),
            torn: false,
        }
    }

    /// The chain of the log `fd` (opened for reading): it goes on from the
    /// log's last line. A log that cannot be read back starts a new chain
    /// (which `verify` then shows broken there).
    pub fn resume(fd: &impl AsFd) -> Chain {
        match last_line(fd) {
            Ok(Some((line, torn))) => Chain {
                prev: line_hash(&line),
                torn,
            },
            Ok(None) => Chain::new(),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the audit log back; its chain starts again here");
                Chain::new()
            }
        }
    }

    /// The line for `record` (with `prev` set, canonical, newline-ended)
    /// and the hash the record after it carries: pass it to
    /// [`Chain::advance`] once the line is written.
    pub fn link(&self, record: &Value) -> (String, String) {
        let mut rec = record.clone();
        if let Some(obj) = rec.as_object_mut() {
            obj.insert("prev".to_owned(), Value::String(self.prev.clone()));
        }
        let body = canonical(&rec);
        let next = hash(body.as_bytes());
        let mut line = String::with_capacity(body.len() + 2);
        if self.torn {
            line.push('\n');
        }
        line.push_str(&body);
        line.push('\n');
        (line, next)
    }

    /// The line made by [`Chain::link`] was written.
    pub fn advance(&mut self, next: String) {
        self.prev = next;
        self.torn = false;
    }
}

impl Default for Chain {
    fn default() -> Self {
        Chain::new()
    }
}

/// The canonical form of a JSON value: object keys sorted (by UTF-16 code
/// units, as RFC 8785), no whitespace, strings escaped as `serde_json`
/// does (only `"`, `\` and controls; the same as RFC 8785).
pub fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*k).clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(*k) {
                    write_canonical(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// BLAKE3 of `bytes`, 64 hex digits.
pub fn hash(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// The hash a record after `line` carries: of its canonical form, or of
/// its bytes when it does not parse (a torn line; `verify` reports it).
pub fn line_hash(line: &[u8]) -> String {
    match serde_json::from_slice::<Value>(line) {
        Ok(v) => hash(canonical(&v).as_bytes()),
        Err(_) => hash(line),
    }
}

/// The last line of the file `fd` (without its newline), and whether the
/// file ends without one (torn); `None` for an empty file.
fn last_line(fd: &impl AsFd) -> std::io::Result<Option<(Vec<u8>, bool)>> {
    let size = rustix::fs::fstat(fd)?.st_size;
    let size = u64::try_from(size).unwrap_or(0);
    if size == 0 {
        return Ok(None);
    }
    let mut tail: Vec<u8> = Vec::new();
    let mut end = size;
    let mut chunk = 64 * 1024u64;
    loop {
        let start = end.saturating_sub(chunk);
        let mut buf = vec![0u8; usize::try_from(end - start).unwrap_or(0)];
        let mut got = 0;
        while got < buf.len() {
            let n = rustix::io::pread(fd, &mut buf[got..], start + got as u64)?;
            if n == 0 {
                break;
            }
            got += n;
        }
        buf.truncate(got);
        buf.extend_from_slice(&tail);
        tail = buf;
        let torn = tail.last() != Some(&b'\n');
        let body = if torn {
            &tail[..]
        } else {
            &tail[..tail.len() - 1]
        };
        if let Some(i) = body.iter().rposition(|b| *b == b'\n') {
            return Ok(Some((body[i + 1..].to_vec(), torn)));
        }
        if start == 0 {
            return Ok(Some((body.to_vec(), torn)));
        }
        if size - start > MAX_LAST_LINE {
            return Err(std::io::Error::other("its last line is too long"));
        }
        end = start;
        chunk = chunk.saturating_mul(2);
    }
}

/// What `verify` found.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every record chains to the one before: how many, and the hash the
    /// next would carry.
    Intact(u64, String),
    /// The first record that does not: its line number and why.
    Broken(u64, String),
}

/// Checks the chain of a whole log (its bytes).
pub fn verify_bytes(bytes: &[u8]) -> Verdict {
    let mut prev = GENESIS.to_owned();
    let mut n = 0u64;
    let mut lines = bytes.split(|b| *b == b'\n').peekable();
    while let Some(line) = lines.next() {
        if line.is_empty() && lines.peek().is_none() {
            break; // the newline that ends the file
        }
        n += 1;
        let Ok(Value::Object(rec)) = serde_json::from_slice::<Value>(line) else {
            return Verdict::Broken(n, "it is not a JSON record (torn, or changed)".to_owned());
        };
        let what = describe(&rec);
        match rec.get("prev").and_then(Value::as_str) {
            None => {
                return Verdict::Broken(n, format!("{what} has no prev (not chained)"));
            }
            Some(p) if p != prev => {
                let why = if n == 1 {
                    format!(
                        "{what} is the first line but does not chain to the start ({GENESIS}): records before it were removed"
                    )
                } else {
                    format!(
                        "{what} does not chain to line {}: its prev is {p}, that line hashes to {prev}; a record before it was changed, removed or inserted",
                        n - 1
                    )
                };
                return Verdict::Broken(n, why);
            }
            Some(_) => {}
        }
        prev = hash(canonical(&Value::Object(rec)).as_bytes());
    }
    Verdict::Intact(n, prev)
}

/// A record, as `verify` names it: its session and seq (or event).
fn describe(rec: &serde_json::Map<String, Value>) -> String {
    let field = |k: &str| {
        rec.get(k)
            .map(|v| v.as_str().map_or(v.to_string(), str::to_owned))
    };
    match (field("session"), field("seq"), field("event")) {
        (Some(s), Some(q), _) => format!("the record of session {s} seq {q}"),
        (Some(s), None, Some(e)) => format!("the {e} record of session {s}"),
        _ => "the record".to_owned(),
    }
}

/// `tuls audit verify FILE`: exit 0 when intact, 1 when broken (naming the
/// first record that does not chain), 2 when the file cannot be read.
///
/// # Ambient Authority
///
/// Opens the path the operator names (read only, never following a final
/// symlink); no server runs in this process.
pub fn verify(path: &Path) -> ExitCode {
    let shown = path.display().to_string();
    let bytes = match read_all(path) {
        Ok(b) => b,
        Err(e) => {
            crate::say!(
                "tuls: error: cannot read '{}': {}",
                for_terminal(&shown),
                for_terminal(&e.to_string())
            );
            return ExitCode::from(2);
        }
    };
    match verify_bytes(&bytes) {
        Verdict::Intact(n, last) => {
            crate::out!(
                "{}: {n} record(s), the chain is intact (last hash {last})",
                for_terminal(&shown)
            );
            ExitCode::SUCCESS
        }
        Verdict::Broken(n, why) => {
            crate::out!(
                "{}: broken at line {n}: {}",
                for_terminal(&shown),
                for_terminal(&why)
            );
            ExitCode::from(1)
        }
    }
}

fn read_all(path: &Path) -> std::io::Result<Vec<u8>> {
    let fd: OwnedFd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    )?;
    let st = rustix::fs::fstat(&fd)?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match rustix::io::read(&fd, &mut buf[..]) {
            Ok(0) => return Ok(out),
            Ok(n) => out.extend_from_slice(buf.get(..n).unwrap_or_default()),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vectors in docs/versions-audit-undo.md ("Test vectors"): each
    /// line there, chained from the start, and the hash after it.
    #[test]
    fn the_documented_vectors_hold() {
        let doc = include_str!("../../docs/versions-audit-undo.md");
        let start = doc.find("<!-- chain vectors -->").expect("vector block");
        let block = &doc[start..];
        let mut lines = Vec::new();
        let mut hashes = Vec::new();
        for l in block.lines().skip(1) {
            if l.starts_with("<!-- end chain vectors -->") {
                break;
            }
            if let Some(h) = l.strip_prefix("hash: ") {
                hashes.push(h.trim().to_owned());
            } else if l.starts_with('{') {
                lines.push(l.to_owned());
            }
        }
        assert_eq!(lines.len(), 3, "{block}");
        assert_eq!(hashes.len(), 3);
        // Each documented line is what the writer makes, chained.
        let mut chain = Chain::new();
        for (line, want) in lines.iter().zip(&hashes) {
            let mut v: Value = serde_json::from_str(line).expect("json");
            v.as_object_mut().expect("object").remove("prev");
            let (made, next) = chain.link(&v);
            assert_eq!(made.trim_end(), line);
            assert_eq!(&next, want);
            assert_eq!(line_hash(line.as_bytes()), *want);
            chain.advance(next);
        }
        let all = lines.join("\n") + "\n";
        assert_eq!(
            verify_bytes(all.as_bytes()),
            Verdict::Intact(3, hashes[2].clone())
        );
        // A change to the middle record breaks the chain at the third.
        let forged = all.replacen("\"seq\":1", "\"seq\":7", 1);
        assert!(matches!(
            verify_bytes(forged.as_bytes()),
            Verdict::Broken(3, _)
        ));
        // Removing the first breaks it at the (new) first.
        let cut = lines[1..].join("\n") + "\n";
        assert!(matches!(
            verify_bytes(cut.as_bytes()),
            Verdict::Broken(1, _)
        ));
    }

    #[test]
    fn canonical_sorts_keys_at_every_level_and_has_no_whitespace() {
        let v: Value = serde_json::from_str(
            r#"{"b": 1, "a": {"z": [1, {"y": null, "x": "\u001b"}], "é": true}}"#,
        )
        .expect("json");
        assert_eq!(
            canonical(&v),
            r#"{"a":{"z":[1,{"x":"\u001b","y":null}],"é":true},"b":1}"#
        );
    }

    #[test]
    fn a_torn_last_line_is_picked_up_on_a_new_line() {
        let chain = Chain {
            prev: line_hash(b"{\"tor"),
            torn: true,
        };
        let (line, _) = chain.link(&serde_json::json!({"event": "start"}));
        assert!(line.starts_with('\n'));
    }
}
