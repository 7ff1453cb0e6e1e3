//! The facts of one call that the filesystem core is handed: its share of
//! the reply budget, its audit note, and the server's spare read buffer.
//!
//! Owns: [`Io`]. The call path builds one per call (the MCP edge, in the
//! tool's [`crate::tools::Ctx`]); every file reader takes it as a
//! parameter, so a reader cannot leave the reply budget out, and the writer
//! takes its audit note. Nothing of it is global: two calls never see each
//! other's facts, whichever thread runs them.
//! May touch: nothing.

use std::sync::Arc;

use crate::audit::Noting;
use crate::fs::file::Spare;
use crate::memory::{Grant, Unbudgeted};

/// What one call's reads and writes report to, and reuse.
pub struct Io {
    /// The call's share of the reply budget: asked before a read holds a
    /// file's bytes ([`Grant::file_opened`]).
    pub grant: Arc<dyn Grant>,
    /// What the call read and changed, for its audit record.
    pub note: Noting,
    /// The server's spare buffer for large whole-file reads, refilled by
    /// the stdout writer with written replies.
    pub spare: Arc<Spare>,
}

impl Io {
    /// The facts of a read outside any call's budget, noting nothing, with
    /// a spare buffer of its own (unit tests, the fuzz targets).
    pub fn unbudgeted() -> Io {
        Io {
            grant: Arc::new(Unbudgeted),
            note: Noting::OFF,
            spare: Arc::default(),
        }
    }
}

impl std::fmt::Debug for Io {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Io")
            .field("note", &self.note)
            .finish_non_exhaustive()
    }
}
