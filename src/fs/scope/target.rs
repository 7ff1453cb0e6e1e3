//! A resolved client path ([`Target`]): a root and the components beneath
//! it, and what may be done through it (open a directory, stat, check a
//! write against the path rules, start a walk, split off the leaf); and the
//! check that a handle is still reached from its root.
//! May touch: the root handles, to open directories beneath them
//! ([`Target::open_dir`], the one way to open a directory a client names).

use std::sync::Arc;

use cap_fs_ext::DirExt;
use cap_std::fs::Dir;

use crate::error::{Error, Result};
use crate::fs::resolve::Resolved;
use crate::fs::roots::Root;
use crate::rules::{Effect, Hide};

/// A resolved client path: a root and the components beneath it, and
/// the one [`Resolved`] the resolver made of them.
///
/// A target resolved by the walk backend (every write, and every read where
/// rules may hide a path) acts through the handles the walk produced
/// ([`Target::dir`], [`Target::open_dir`]) with the rules' verdict in force
/// ([`Target::check_write`]). A target of the kernel backend (a read in a
/// root whose rules hide nothing) acts through the root handle and the
/// kernel's beneath resolution, and never reaches a write
/// ([`Target::walked_for_write`]).
#[derive(Debug, Clone)]
pub struct Target {
    /// The root the path lies under.
    pub root: Arc<Root>,
    /// Components beneath the root (may contain `.` and non-climbing `..`),
    /// as the client spelled them: for display, not for opening.
    pub segs: Vec<String>,
    /// Whether the client's path ended in `/`.
    pub trailing_slash: bool,
    /// The path exactly as the client gave it, for messages.
    pub given: String,
    /// What the resolver made of it.
    pub(super) resolved: Resolved,
}

impl Target {
    /// The path beneath [`Target::dir`], for cap-std calls.
    pub fn rel(&self) -> String {
        let segs = &self.resolved.rel;
        if segs.is_empty() {
            return ".".to_owned();
        }
        let mut s = segs.join("/");
        if self.trailing_slash {
            s.push('/');
        }
        s
    }

    /// The path beneath the root's own handle: the canonical one from the
    /// walk, else the client's components.
    pub fn root_rel(&self) -> String {
        match self.walked() {
            Some(w) if w.local.is_empty() => ".".to_owned(),
            Some(w) => w.local.clone(),
            None => self.rel(),
        }
    }

    /// The handle [`Target::rel`] is beneath: the root's, or the directory
    /// the walk opened. A path the rules hide, or one the walk could not go
    /// through, is the error a missing path would be (each caller words it
    /// with its own operation, so every tool answers as for a missing
    /// path).
    pub fn dir(&self) -> std::io::Result<&Dir> {
        match self.resolved.void_error() {
            Some(e) => Err(e),
            None => Ok(&self.resolved.base),
        }
    }

    /// Words `e`, a failure of `op` on this target, as [`Error::io`] does;
    /// a missing name on a target the kernel resolves is looked at again by
    /// the walk, which tells a missing parent (a directory on the way does
    /// not exist) from a missing final name. Only a refusal pays for that
    /// walk; the kernel backend serves roots whose rules hide nothing.
    pub fn io_error(&self, op: &'static str, e: &std::io::Error) -> Error {
        if e.kind() == std::io::ErrorKind::NotFound
            && self.walked().is_none()
            && let Ok(w) = crate::fs::resolve::resolve(
                self.root.beneath(),
                &self.segs,
                crate::fs::resolve::Final::Follow,
                &self.given,
                crate::fs::resolve::Backend::Walk,
            )
            && let Some(missing) = w.void_error()
        {
            return Error::io(op, &self.given, &missing);
        }
        Error::io(op, &self.given, e)
    }

    /// Opens `parent` (the parent half of [`Target::parent_and_leaf`])
    /// beneath [`Target::dir`]: the directory an "act on the parent, name
    /// the leaf" operation works in. A path the rules hide, or one the walk
    /// could not go through, is the error a missing path would be.
    pub fn open_parent(&self, parent: &str) -> std::io::Result<Dir> {
        self.dir().and_then(|b| b.open_dir(parent))
    }

    /// Opens the directory this target names beneath its root (following
    /// in-root symlinks). `op` names the operation in an error (`scandir`,
    /// `open`).
    pub fn open_dir(&self, op: &'static str) -> Result<Dir> {
        let io = |e: std::io::Error| self.io_error(op, &e);
        let Some(w) = self.walked() else {
            return self.resolved.base.open_dir(self.rel()).map_err(io);
        };
        let base = self.dir().map_err(io)?;
        if let Some(held) = &w.held {
            return held.try_clone().map_err(io);
        }
        // The walk found no directory there: whatever is there now is
        // opened without following a link (one swapped in since the walk
        // would lead where the rules were not checked).
        base.open_dir_nofollow(self.leaf_name(w).map_err(io)?)
            .map_err(io)
    }

    /// The final name of a walked target that is not a directory, without
    /// a trailing slash (which would make the kernel follow a link). With
    /// the slash, the error the kernel gives for a non-directory.
    fn leaf_name<'a>(&self, w: &'a Resolved) -> std::io::Result<&'a str> {
        let name = w.rel.first().map_or(".", String::as_str);
        if self.trailing_slash {
            let errno = if w.missing {
                rustix::io::Errno::NOENT
            } else {
                rustix::io::Errno::NOTDIR
            };
            return Err(errno.into());
        }
        Ok(name)
    }

    /// The metadata of what this target names, following a final in-root
    /// symlink (`op` names the operation in an error).
    pub fn metadata(&self, op: &'static str) -> Result<cap_std::fs::Metadata> {
        let io = |e: std::io::Error| self.io_error(op, &e);
        match self.walked() {
            None => self.resolved.base.metadata(self.rel()).map_err(io),
            Some(w) => {
                let dir = self.dir().map_err(io)?;
                match &w.held {
                    Some(held) => held.dir_metadata().map_err(io),
                    // The walk resolved a final link already.
                    None => dir
                        .symlink_metadata(self.leaf_name(w).map_err(io)?)
                        .map_err(io),
                }
            }
        }
    }

    /// Refuses a write (`op` names it in the error) to a path the rules
    /// make read-only, or hide, or that the walk could not reach.
    pub fn check_write(&self, op: &'static str) -> Result<()> {
        let w = self.walked_for_write()?;
        if let Some(e) = w.void_error() {
            return Err(Error::io(op, &self.given, &e));
        }
        match w.effect {
            Effect::None => Ok(()),
            Effect::Hidden => Err(Error::io(op, &self.given, &rustix::io::Errno::NOENT.into())),
            Effect::ReadOnly => Err(self.protected()),
        }
    }

    /// The refusal of a change to this path, which the rules make
    /// read-only, naming the rule (never one that hides it).
    pub fn protected(&self) -> Error {
        let rule = match self.resolved.effect {
            Effect::ReadOnly => self.why().filter(|w| w.effect == Effect::ReadOnly),
            _ => None,
        };
        Error::Protected {
            path: self.given.clone(),
            rule: rule.map(Box::new),
        }
    }

    /// The rule that gives this path its effect (for a refusal: the
    /// operator's log names it), or `None` when no rule applies.
    pub fn why(&self) -> Option<crate::rules::Why> {
        let r = &self.resolved;
        let at = r.decided.as_deref()?;
        let kind = (!r.missing).then_some(r.is_dir);
        self.root.rules.why(at, kind)
    }

    /// What the resolver made of this path, whichever backend made it.
    pub fn resolved(&self) -> &Resolved {
        &self.resolved
    }

    /// The walk's result, when the walk backend resolved this path.
    pub fn walked(&self) -> Option<&Resolved> {
        (!self.resolved.kernel_follows()).then_some(&self.resolved)
    }

    /// The walk's result for a write: every writer asks for it this way. A
    /// target the walk did not resolve (a read's, [`crate::fs::scope::Intent::Read`])
    /// is refused with an internal error: the rules were never matched on
    /// it, and a final symlink would be followed by the kernel.
    pub fn walked_for_write(&self) -> Result<&Resolved> {
        self.walked().ok_or_else(|| {
            Error::Internal(format!(
                "'{}' was resolved for reading only: it was not walked for a write",
                self.given
            ))
        })
    }

    /// Opens the directory this target names as the start of a walk, with
    /// the rules the walk must check each entry against (when some rule may
    /// hide one): the only way a walk starts.
    pub fn walk_start(&self, op: &'static str) -> Result<Start> {
        let dir = self.open_dir(op)?;
        let hide = self
            .walked()
            .and_then(|w| Hide::new(&self.root.rules, self.root.rule_path(&w.local)));
        Ok(Start { dir, hide })
    }

    /// The canonical path of this target's parent beneath the root handle,
    /// for [`crate::fs::roots::still_reached`] (walked targets only).
    pub fn parent_local(&self) -> Option<String> {
        let w = self.walked()?;
        let end = w.parent_end?;
        Some(match w.local.get(..end) {
            Some("") | None => ".".to_owned(),
            Some(p) => p.to_owned(),
        })
    }

    /// Whether the entry `rel` beneath this target (a path a walk from it
    /// found) leads, following symlinks, to something inside the root. It
    /// is resolved from the root's own handle, so a link that climbs above
    /// this target but stays inside the root counts; one that leads outside,
    /// nowhere or to a hidden path does not, and all read the same.
    pub fn entry_in_root(&self, rel: &str) -> bool {
        let start = self.root_rel();
        let path = format!("{}/{rel}", start.trim_end_matches('/'));
        if !self.root.rules.hides_any() {
            return self.root.dir.metadata(path).is_ok();
        }
        // Where a rule may hide the target, the walk decides: a link to a
        // hidden path is dangling, as a link to a missing one.
        let segs: Vec<String> = path.split('/').map(str::to_owned).collect();
        crate::fs::resolve::resolve(
            self.root.beneath(),
            &segs,
            crate::fs::resolve::Final::Follow,
            &path,
            crate::fs::resolve::Backend::Walk,
        )
        .is_ok_and(|r| r.void.is_none() && !r.missing)
    }

    /// An absolute spelling under the root's display path, for output.
    pub fn display(&self) -> String {
        join_display(&self.root.display, &self.segs)
    }

    /// Splits into the parent's relative path and a final name that is a
    /// plain entry name (not empty, `.` or `..`), for "act on the parent,
    /// name the leaf" operations.
    pub fn parent_and_leaf(&self) -> Result<(String, String)> {
        if let Some(w) = self.walked() {
            // The lexical checks first, for the same messages.
            self.lexical_parent_and_leaf()?;
            return match w.rel.split_last() {
                Some((leaf, parent)) if !parent.is_empty() => Ok((parent.join("/"), leaf.clone())),
                Some((leaf, _)) => Ok((".".to_owned(), leaf.clone())),
                None => Err(Error::InvalidPath {
                    path: self.given.clone(),
                    reason: "names an allowed directory itself",
                }),
            };
        }
        self.lexical_parent_and_leaf()
    }

    fn lexical_parent_and_leaf(&self) -> Result<(String, String)> {
        let Some((leaf, parent)) = self.segs.split_last() else {
            return Err(Error::InvalidPath {
                path: self.given.clone(),
                reason: "names an allowed directory itself",
            });
        };
        if leaf == "." || leaf == ".." {
            return Err(Error::InvalidPath {
                path: self.given.clone(),
                reason: "the final component must be a name, not '.' or '..'",
            });
        }
        let parent = if parent.is_empty() {
            ".".to_owned()
        } else {
            parent.join("/")
        };
        Ok((parent, leaf.clone()))
    }
}

/// The directory a walk starts from, and what it must leave out.
#[derive(Debug)]
pub struct Start {
    /// The directory.
    pub dir: Dir,
    /// Path rules each entry is checked against, when some may hide one.
    pub hide: Option<Hide>,
}

/// Joins components under a display root.
pub fn join_display(root: &str, segs: &[String]) -> String {
    let mut s = root.to_owned();
    for seg in segs {
        if seg == "." {
            continue;
        }
        if !s.ends_with('/') {
            s.push('/');
        }
        s.push_str(seg);
    }
    s
}
