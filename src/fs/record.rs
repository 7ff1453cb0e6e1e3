//! The change recorder: what the writers tell about a change, and to whom.
//!
//! Owns: the [`Recorder`] trait, which the writers and readers call (when
//! a path is resolved, bytes are read, an old file is about to go, a change
//! is in place), what they tell it ([`Place`], [`Changed`], [`Kept`]), and
//! [`Recorders`], the one recorder each call's [`crate::fs::io::Io`] holds:
//! the recorders of that call, in order. The core defines the trait and
//! calls it; the layers above implement it (the undo journal keeps
//! pre-images and records changes, the audit note notes what a call read
//! and changed), so `fs` names neither of them.
//! May touch: nothing (no I/O of its own; the recorders do theirs).

use std::sync::Arc;

use cap_std::fs::Dir;

use crate::error::{Error, Result};
use crate::fs::version::Version;

/// What the core tells about a call's paths, reads and changes. Every
/// method has a default that records nothing, so a recorder implements
/// what it records.
pub trait Recorder: Send + Sync + std::fmt::Debug {
    /// Whether changes are recorded at all: a writer learns the version a
    /// change leaves only then.
    fn records(&self) -> bool {
        true
    }

    /// Whether it wants the version a change replaced, hashed by the writer
    /// (when no recorder keeps the old file, whose keeping hashes it).
    fn before(&self) -> bool {
        false
    }

    /// Whether it keeps what a change replaces ([`Recorder::keep_swapped`],
    /// [`Recorder::keep_copy`]) and makes a change durable with its record,
    /// syncing the changed file's directory ([`Changed::dir`]) itself.
    fn keeps(&self) -> bool {
        false
    }

    /// Whether it wants the canonical place of each path the call resolves
    /// ([`Recorder::resolved`]): the resolver then walks every path, a
    /// read's too, so the place is the one the walk found.
    fn paths(&self) -> bool {
        false
    }

    /// Keeps the old file `tmp` in `parent` (swapped out by the writer, of
    /// version `known` when the writer checked it) and removes it there; on
    /// an error it is left for the writer to swap back, and the change is
    /// not made. `at` is the file being replaced: a keeper may hold its
    /// first old content of a session apart (the undo journal pins it, and
    /// refuses the change when it does not fit).
    fn keep_swapped(
        &self,
        _parent: &Dir,
        _tmp: &str,
        _known: Option<&Version>,
        _at: &Place,
    ) -> Result<Kept> {
        Err(keeps_nothing())
    }

    /// Keeps a copy of the file `leaf` in `parent`, before it is replaced
    /// by a plain rename; `at` as for [`Recorder::keep_swapped`].
    fn keep_copy(&self, _parent: &Dir, _leaf: &str, _at: &Place) -> Result<Kept> {
        Err(keeps_nothing())
    }

    /// A client path was resolved to `place`.
    fn resolved(&self, _place: &Place) {}

    /// `bytes` were read from a file.
    fn read(&self, _bytes: u64) {}

    /// A change is in place. An error: it was made but is not recorded.
    fn changed(&self, _change: &Changed<'_>) -> Result<()> {
        Ok(())
    }
}

/// The device and inode of the entry `leaf` in `parent`, not followed
/// ([`Changed::id`]); `None` when it cannot be read.
pub fn id_in(parent: &Dir, leaf: &str) -> Option<(u64, u64)> {
    rustix::fs::statat(parent, leaf, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
        .ok()
        .map(|st| crate::fs::sys::dev_ino(&st))
}

fn keeps_nothing() -> Error {
    Error::Internal("asked to keep an old file of a recorder that keeps none".to_owned())
}

/// Where a resolved path, or a changed file, is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The operator's `DIR` it lies under, as made absolute at startup.
    pub origin: String,
    /// Its canonical path beneath `origin` (`""` for the root itself).
    pub beneath: String,
    /// Its canonical absolute spelling: the path of the root it was
    /// resolved in (as tuls shows it) and the canonical path beneath it.
    pub shown: String,
    /// The path as the client gave it.
    pub given: String,
}

/// What a change did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// An existing file's content replaced ([`Changed::kept`] says what
    /// was kept of it).
    Replace,
    /// A file made where none was.
    Create,
    /// Bytes added at the end of an existing file of this size.
    Append {
        /// The file's size before.
        size_before: u64,
    },
    /// A file or directory renamed from `from` to [`Changed::at`]
    /// ([`Changed::id`]: what moved).
    Move {
        /// Where it was.
        from: Place,
    },
    /// A directory made where none was (`create_directory`, each missing
    /// one; [`Changed::id`]: the directory made).
    Mkdir,
}

/// A change in place, as the writer tells it.
#[derive(Debug, Clone)]
pub struct Changed<'a> {
    /// What it did.
    pub op: Op,
    /// The file changed (a move's new place).
    pub at: Place,
    /// The version it replaced (`None`: none, unknown or over the read
    /// limit); a move's: the version of what moved.
    pub before: Option<Version>,
    /// The version it left (`None`: unknown, a directory, or over the read
    /// limit); a move's: the version of what moved.
    pub after: Option<Version>,
    /// The device and inode of what the change left at [`Changed::at`]
    /// (the file written, the directory made, what moved), when known: the
    /// undo journal undoes a change only while that is still there.
    pub id: Option<(u64, u64)>,
    /// Bytes written.
    pub bytes: u64,
    /// What a keeper kept of the old file ([`Op::Replace`]).
    pub kept: Option<Kept>,
    /// The changed file's directory, whose sync a keeper issues with its
    /// record (the writer syncs it itself when no recorder keeps).
    pub dir: Option<&'a Dir>,
}

/// What a keeper kept of an old file.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Kept {
    /// The object's name, when it was kept.
    pub object: Option<String>,
    /// Why it was not.
    pub not_kept: Option<String>,
    /// The version of the old content.
    pub before: Option<Version>,
    /// Objects evicted to make room, oldest first.
    pub evicted: Vec<String>,
}

/// The recorders of one call, told in order: the one recorder in its
/// [`crate::fs::io::Io`]. Empty, it records nothing
/// ([`Recorders::NONE`]).
#[derive(Debug, Clone, Default)]
pub struct Recorders(Vec<Arc<dyn Recorder>>);

impl Recorders {
    /// No recorder: nothing is recorded (no audit log and no journal; the
    /// journal's own revert; tests).
    pub const NONE: Recorders = Recorders(Vec::new());

    /// These recorders, told in this order (a change stops at the first
    /// that fails to record it).
    pub fn new(list: Vec<Arc<dyn Recorder>>) -> Recorders {
        Recorders(list)
    }

    /// The first recorder that keeps old files.
    fn keeper(&self) -> Result<&Arc<dyn Recorder>> {
        self.0.iter().find(|r| r.keeps()).ok_or_else(keeps_nothing)
    }
}

impl Recorder for Recorders {
    fn records(&self) -> bool {
        self.0.iter().any(|r| r.records())
    }

    fn before(&self) -> bool {
        self.0.iter().any(|r| r.before())
    }

    fn keeps(&self) -> bool {
        self.0.iter().any(|r| r.keeps())
    }

    fn paths(&self) -> bool {
        self.0.iter().any(|r| r.paths())
    }

    fn keep_swapped(
        &self,
        parent: &Dir,
        tmp: &str,
        known: Option<&Version>,
        at: &Place,
    ) -> Result<Kept> {
        self.keeper()?.keep_swapped(parent, tmp, known, at)
    }

    fn keep_copy(&self, parent: &Dir, leaf: &str, at: &Place) -> Result<Kept> {
        self.keeper()?.keep_copy(parent, leaf, at)
    }

    fn resolved(&self, place: &Place) {
        for r in self.0.iter().filter(|r| r.paths()) {
            r.resolved(place);
        }
    }

    fn read(&self, bytes: u64) {
        for r in &self.0 {
            r.read(bytes);
        }
    }

    fn changed(&self, change: &Changed<'_>) -> Result<()> {
        self.0.iter().try_for_each(|r| r.changed(change))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Debug, Default)]
    struct Log {
        keeps: bool,
        fails: bool,
        seen: Mutex<Vec<String>>,
    }

    impl Recorder for Log {
        fn keeps(&self) -> bool {
            self.keeps
        }
        fn keep_copy(&self, _parent: &Dir, leaf: &str, _at: &Place) -> Result<Kept> {
            crate::sync::lock(&self.seen).push(format!("kept {leaf}"));
            Ok(Kept::default())
        }
        fn changed(&self, c: &Changed<'_>) -> Result<()> {
            crate::sync::lock(&self.seen).push(format!("changed {}", c.at.given));
            if self.fails {
                return Err(Error::Internal("full".to_owned()));
            }
            Ok(())
        }
    }

    /// Recorders are told in order, a change stops at the first that
    /// fails, and an old file goes to the one that keeps.
    #[test]
    fn recorders_are_told_in_order_and_the_keeper_keeps() {
        let keeper = Arc::new(Log {
            keeps: true,
            ..Log::default()
        });
        let failing = Arc::new(Log {
            fails: true,
            ..Log::default()
        });
        let after = Arc::new(Log::default());
        let all = Recorders::new(vec![failing.clone(), keeper.clone(), after.clone()]);
        assert!(all.records() && all.keeps() && !all.before() && !all.paths());
        assert!(!Recorders::NONE.records() && !Recorders::NONE.keeps());
        let place = Place {
            origin: "/r".to_owned(),
            beneath: "f".to_owned(),
            shown: "/r/f".to_owned(),
            given: "f".to_owned(),
        };
        let change = Changed {
            op: Op::Create,
            at: place.clone(),
            before: None,
            after: None,
            id: None,
            bytes: 1,
            kept: None,
            dir: None,
        };
        assert!(all.changed(&change).is_err());
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = crate::fs::roots::open(tmp.path()).expect("open root");
        let dir = &*root.dir;
        all.keep_copy(dir, "f", &place).expect("kept");
        assert_eq!(*crate::sync::lock(&failing.seen), ["changed f"]);
        assert_eq!(*crate::sync::lock(&keeper.seen), ["kept f"]);
        assert!(crate::sync::lock(&after.seen).is_empty());
        assert!(Recorders::NONE.keep_copy(dir, "f", &place).is_err());
    }
}
