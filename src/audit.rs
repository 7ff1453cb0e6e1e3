//! The audit log (`--audit PATH`, `--audit-fd N`): one JSON line per tool
//! call, in a file the agent cannot reach.
//!
//! Owns: opening the log at startup (before Landlock, `O_APPEND`), refusing
//! one that lies inside a root (by device and inode of each directory from
//! the log's own up to `/`, never by string), the session's random id and
//! the client's name and version, the record of each call and the rule
//! that a change is acknowledged only once its record is written and
//! synced. A record holds the tool, each path argument (the arguments the
//! tool's table entry names as paths) as given and as the canonical path
//! the call resolved it to, the outcome (`ok`, or `error` with the error's
//! name, [`crate::error::Error::name`]), bytes read and written, and for a
//! change each file changed (its canonical path) with its versions before
//! and after; never a file's content or an edit's text. If a record cannot
//! be written, later changes are refused (reads go on) and the reply says
//! why.
//!
//! The call's facts (paths resolved, bytes, versions) are noted in the
//! call's own [`Noting`], a change recorder
//! ([`crate::fs::record::Recorder`]) the call path puts in the call's
//! recorder ([`crate::fs::io::Io`]), which the resolver, the readers and
//! the writers tell. The audit log sits above the filesystem core: it
//! implements the core's recorder and uses the core's roots, versions and
//! syncs; the core never names it.
//! May touch: the log descriptor, and at startup (ambient authority, before
//! Landlock) the log's path and the directories above it.

pub mod chain;

use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rustix::fs::{Mode, OFlags};
use serde_json::{Value, json};

use crate::error::Result;
use crate::fs::record::{Changed, Op, Place, Recorder};
use crate::fs::roots::Root;
use crate::fs::version::Version;

/// Where the log goes, as the operator named it.
#[derive(Debug, Clone)]
pub enum Target<'a> {
    /// `--audit PATH`: created if missing (mode 0600), appended to.
    Path(&'a Path),
    /// `--audit-fd N`: a descriptor the supervisor handed over.
    Fd(u32),
}

/// An open audit log.
#[derive(Debug)]
pub struct Audit {
    fd: Mutex<OwnedFd>,
    session: String,
    client: Mutex<Value>,
    seq: AtomicU64,
    /// Why the log cannot be written, once a write failed.
    broken: Mutex<Option<String>>,
    failed: AtomicBool,
    /// The hash chain (issue 32 item 6, [`chain`]): locked under `fd`.
    chain: Mutex<chain::Chain>,
}

/// Opens the log and checks that it lies outside every root; a startup
/// error (exit 2) otherwise.
///
/// # Ambient Authority
///
/// Opens the operator's path (never following a final symlink) and the
/// directories above it, once, before Landlock.
pub fn open(target: &Target<'_>, roots: &[Root]) -> Result<Audit, String> {
    let (fd, path) = match target {
        Target::Path(p) => {
            // Checked before it is created, so nothing lands in a root.
            outside_roots(p, roots, "audit log")?;
            let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE | OFlags::CLOEXEC;
            let fd = rustix::fs::open(*p, flags | OFlags::NOFOLLOW, Mode::from_raw_mode(0o600))
                .map_err(|e| match e {
                    rustix::io::Errno::LOOP => format!(
                        "audit log '{}' is a symbolic link; name the file itself",
                        p.display()
                    ),
                    e => format!("cannot open audit log '{}': {e}", p.display()),
                })?;
            (fd, p.to_path_buf())
        }
        Target::Fd(n) => {
            // Reopened through /proc (the library has no unsafe code to
            // adopt a raw descriptor); its path is what the check walks.
            let proc = format!("/proc/self/fd/{n}");
            let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::CLOEXEC;
            let fd = rustix::fs::open(proc.as_str(), flags, Mode::empty())
                .map_err(|e| format!("cannot use --audit-fd {n}: {e}"))?;
            let link = rustix::fs::readlink(proc.as_str(), Vec::new())
                .map_err(|e| format!("cannot use --audit-fd {n}: {e}"))?;
            let link = std::path::PathBuf::from(
                <std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(
                    link.into_bytes(),
                ),
            );
            (fd, link)
        }
    };
    let st = rustix::fs::fstat(&fd).map_err(|e| format!("cannot stat the audit log: {e}"))?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory {
        return Err("the audit log is a directory".to_owned());
    }
    if matches!(target, Target::Fd(_))
        && rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile
    {
        outside_roots(&path, roots, "audit log")?;
    }
    // The chain goes on from the log's last line (a regular file, read
    // back through a descriptor of its own; a pipe starts a new chain).
    let chain = match target {
        _ if rustix::fs::FileType::from_raw_mode(st.st_mode)
            != rustix::fs::FileType::RegularFile =>
        {
            chain::Chain::new()
        }
        Target::Path(p) => reopen(p, OFlags::NOFOLLOW),
        // The /proc link is followed: it is the descriptor's own file.
        Target::Fd(n) => reopen(Path::new(&format!("/proc/self/fd/{n}")), OFlags::empty()),
    };
    let mut id = [0u8; 16];
    getrandom::fill(&mut id).map_err(|e| format!("no randomness for the session id: {e}"))?;
    let audit = Audit {
        fd: Mutex::new(fd),
        session: id.iter().map(|b| format!("{b:02x}")).collect(),
        client: Mutex::new(Value::Null),
        seq: AtomicU64::new(0),
        broken: Mutex::new(None),
        failed: AtomicBool::new(false),
        chain: Mutex::new(chain),
    };
    // The first line says the session started; a log that cannot take it
    // refuses every change from the start.
    audit.write(
        &json!({"time": now(), "session": audit.session, "event": "start", "pid": std::process::id()}),
        true,
    );
    Ok(audit)
}

/// The chain of the log at `path`, read back (at startup, before Landlock).
fn reopen(path: &Path, follow: OFlags) -> chain::Chain {
    let flags = OFlags::RDONLY | follow | OFlags::NONBLOCK | OFlags::CLOEXEC;
    match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => chain::Chain::resume(&fd),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the audit log back; its chain starts again here");
            chain::Chain::new()
        }
    }
}

/// Refuses `path` (a file to be created or opened) if it, or any directory
/// above it, is a root: compared by device and inode, climbing with `..`
/// from the real directory (symlinks in the path are followed by the
/// kernel, so a link into a root is found too).
pub fn outside_roots(path: &Path, roots: &[Root], what: &str) -> Result<(), String> {
    let ids: Vec<(u64, u64)> = roots
        .iter()
        .filter_map(|r| r.dir.dir_metadata().ok())
        .map(|m| {
            use cap_std::fs::MetadataExt;
            (m.dev(), m.ino())
        })
        .collect();
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    #[cfg(target_os = "linux")]
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    #[cfg(not(target_os = "linux"))]
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let dir = rustix::fs::open(parent, flags, Mode::empty())
        .map_err(|e| format!("cannot open the directory of the {what}: {e}"))?;
    if ancestry(dir, what)?.iter().any(|id| ids.contains(id)) {
        return Err(format!(
            "the {what} '{}' lies inside an allowed directory, where the agent could change it; put it outside every DIR",
            path.display()
        ));
    }
    Ok(())
}

/// The device and inode of the directory `dir` and of each directory above
/// it, up to `/` (climbing with `..`, so the real directories, whatever
/// symlinks led to `dir`).
pub fn ancestry(dir: OwnedFd, what: &str) -> Result<Vec<(u64, u64)>, String> {
    #[cfg(target_os = "linux")]
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    #[cfg(not(target_os = "linux"))]
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut dir = dir;
    let mut out = Vec::new();
    for _ in 0..4096 {
        let st = rustix::fs::fstat(&dir).map_err(|e| format!("cannot stat: {e}"))?;
        let id = crate::fs::sys::dev_ino(&st);
        out.push(id);
        let up = rustix::fs::openat(&dir, "..", flags, Mode::empty())
            .map_err(|e| format!("cannot open a directory above the {what}: {e}"))?;
        let ust = rustix::fs::fstat(&up).map_err(|e| format!("cannot stat: {e}"))?;
        if crate::fs::sys::dev_ino(&ust) == id {
            return Ok(out); // `/`
        }
        dir = up;
    }
    Err(format!("the {what}'s directory is nested too deeply"))
}

/// The time now, RFC 3339 in UTC with milliseconds.
fn now() -> String {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = i64::try_from(d.as_secs()).unwrap_or(0);
    chrono::DateTime::from_timestamp(secs, d.subsec_nanos())
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

impl Audit {
    /// The session's random id.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// Records the client's name and version (from `initialize`).
    pub fn set_client(&self, name: &str, version: &str) {
        *crate::sync::lock(&self.client) = json!({"name": name, "version": version});
    }

    /// Why changes are refused, when the log cannot be written.
    pub fn refusal(&self) -> Option<String> {
        if !self.failed.load(Ordering::Acquire) {
            return None;
        }
        crate::sync::lock(&self.broken).clone()
    }

    /// Writes one line (one `write`, appended); `sync` makes it durable
    /// before returning. A failure marks the log broken.
    fn write(&self, record: &Value, sync: bool) -> bool {
        let fd = crate::sync::lock(&self.fd);
        // Chained to the line before (canonical JSON with `prev`).
        let mut chain = crate::sync::lock(&self.chain);
        let (line, next) = chain.link(record);
        let mut rest = line.as_bytes();
        let mut result = Ok(());
        while !rest.is_empty() {
            match rustix::io::write(&*fd, rest) {
                Ok(0) => {
                    result = Err(rustix::io::Errno::NOSPC);
                    break;
                }
                Ok(n) => rest = rest.get(n..).unwrap_or_default(),
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if result.is_ok() && sync {
            result = match crate::fs::sys::datasync(&*fd) {
                // A pipe or a character device cannot be synced; what was
                // written is with the reader.
                Err(rustix::io::Errno::INVAL | rustix::io::Errno::ROFS) => Ok(()),
                other => other,
            };
        }
        if result.is_ok() {
            chain.advance(next);
        }
        drop(chain);
        drop(fd);
        match result {
            Ok(()) => true,
            Err(e) => {
                let why = format!("the audit log cannot be written ({e})");
                tracing::error!("{why}; changes are refused from now on");
                *crate::sync::lock(&self.broken) = Some(why);
                self.failed.store(true, Ordering::Release);
                false
            }
        }
    }

    /// Records one call; returns whether the record was written (and, for
    /// a change, synced).
    pub fn record(&self, call: CallRecord<'_>) -> bool {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let client = crate::sync::lock(&self.client).clone();
        let mut rec = json!({
            "time": now(),
            "session": self.session,
            "seq": seq,
            "client": client,
            "tool": call.tool,
            "paths": call.paths,
            "outcome": call.outcome,
        });
        if let Some(obj) = rec.as_object_mut() {
            if let Some(name) = call.error {
                obj.insert("error".to_owned(), json!(name));
            }
            if call.note.bytes_read > 0 {
                obj.insert("bytesRead".to_owned(), json!(call.note.bytes_read));
            }
            if call.mutation {
                obj.insert("bytesWritten".to_owned(), json!(call.note.bytes_written));
                let changes: Vec<Value> = call
                    .note
                    .changes
                    .iter()
                    .map(|c| {
                        json!({
                            "path": c.path,
                            "before": c.before.as_ref().map(Version::as_str),
                            "after": c.after.as_ref().map(Version::as_str),
                        })
                    })
                    .collect();
                obj.insert("changes".to_owned(), json!(changes));
            }
        }
        self.write(&rec, call.mutation)
    }
}

/// One call, for its record.
#[derive(Debug)]
pub struct CallRecord<'a> {
    /// The tool.
    pub tool: &'a str,
    /// Each path argument: `{"given": …, "canonical": …}` (canonical: the
    /// root's path and the canonical path beneath it, as the call resolved
    /// it; `null` when it did not resolve).
    pub paths: Vec<Value>,
    /// `ok` or `error`.
    pub outcome: &'static str,
    /// The error's name ([`crate::error::Error::name`]), for an error.
    pub error: Option<&'static str>,
    /// Whether the tool changes files.
    pub mutation: bool,
    /// What the resolver, the readers and the writers noted.
    pub note: Note,
}

/// What a call resolved, read and changed, as noted.
#[derive(Debug, Default)]
pub struct Note {
    /// Each path resolved, in order: as given, and its canonical path.
    pub resolved: Vec<(String, String)>,
    /// Bytes read from files.
    pub bytes_read: u64,
    /// Bytes written to files.
    pub bytes_written: u64,
    /// Each file changed: its canonical path, and its versions before
    /// (`None`: it did not exist, or is over the read limit) and after
    /// (`None`: removed or moved away).
    pub changes: Vec<Touched>,
}

/// One file changed, as the record shows it.
#[derive(Debug, Clone)]
pub struct Touched {
    /// Its canonical path.
    pub path: String,
    /// The version before the change.
    pub before: Option<Version>,
    /// The version after it.
    pub after: Option<Version>,
}

impl Note {
    /// The canonical path noted for each of `given` (the call's path
    /// arguments, in order): each takes the first unused path resolved
    /// from the same spelling; `None` for one never resolved.
    pub fn canonical(&mut self, given: &[String]) -> Vec<Option<String>> {
        given
            .iter()
            .map(|g| {
                let at = self.resolved.iter().position(|(r, _)| r == g)?;
                Some(self.resolved.remove(at).1)
            })
            .collect()
    }
}

/// What a call resolves, reads and changes, noted as it goes: the audit
/// log's change recorder, one per call of an audited session.
#[derive(Debug, Default)]
pub struct Noting(Mutex<Note>);

impl Noting {
    /// What was noted so far (taken: the record is made once).
    pub fn take(&self) -> Note {
        std::mem::take(&mut *crate::sync::lock(&self.0))
    }
}

impl Recorder for Noting {
    fn before(&self) -> bool {
        true
    }

    fn paths(&self) -> bool {
        true
    }

    fn resolved(&self, place: &Place) {
        let mut n = crate::sync::lock(&self.0);
        n.resolved.push((place.given.clone(), place.shown.clone()));
    }

    fn read(&self, bytes: u64) {
        let mut n = crate::sync::lock(&self.0);
        n.bytes_read = n.bytes_read.saturating_add(bytes);
    }

    fn changed(&self, c: &Changed<'_>) -> Result<()> {
        let mut n = crate::sync::lock(&self.0);
        n.bytes_written = n.bytes_written.saturating_add(c.bytes);
        let to = Touched {
            path: c.at.shown.clone(),
            before: c.before.clone(),
            after: c.after.clone(),
        };
        match &c.op {
            // Moved away from one place, to another.
            Op::Move { from, .. } => n.changes.extend([
                Touched {
                    path: from.shown.clone(),
                    after: None,
                    ..to.clone()
                },
                Touched { before: None, ..to },
            ]),
            // A directory made: the call's record names the path asked
            // for, and the undo journal records each directory made.
            Op::Mkdir => {}
            _ => n.changes.push(to),
        }
        Ok(())
    }
}
