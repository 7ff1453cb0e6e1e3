//! The facts of one call that the filesystem core is handed: its share of
//! the reply budget, its change recorder, and the server's spare read
//! buffer.
//!
//! Owns: [`Io`], and the spare buffer of large whole-file reads
//! ([`Spare`]), which the server makes once and hands to every call's
//! `Io`. The call path builds one `Io` per call (the MCP edge, in the
//! tool's [`crate::tools::Ctx`]); every file reader takes it as a
//! parameter, so a reader cannot leave the reply budget out, and the
//! writers tell its recorder what they change. Nothing of it is global: two
//! calls never see each other's facts, whichever thread runs them.
//! May touch: nothing.

use std::sync::Arc;

use crate::fs::record::Recorders;
use crate::reply_budget::{Grant, Unbudgeted};

/// What one call's reads and writes report to, and reuse.
pub struct Io {
    /// The call's share of the reply budget: asked before a read holds a
    /// file's bytes ([`Grant::file_opened`]).
    pub grant: Arc<dyn Grant>,
    /// Who records what the call resolves, reads and changes: the undo
    /// journal and the call's audit note, when they are on
    /// ([`crate::fs::record`]).
    pub recorder: Recorders,
    /// The server's spare buffer for large whole-file reads, refilled by
    /// the stdout writer with written replies.
    pub spare: Arc<Spare>,
}

impl Io {
    /// The facts of a read outside any call's budget, recording nothing,
    /// with a spare buffer of its own (unit tests, the fuzz targets).
    pub fn unbudgeted() -> Io {
        Io {
            grant: Arc::new(Unbudgeted),
            recorder: Recorders::NONE,
            spare: Arc::default(),
        }
    }
}

impl std::fmt::Debug for Io {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Io")
            .field("recorder", &self.recorder)
            .finish_non_exhaustive()
    }
}

/// Whole-file reads at least this big reuse the spare buffer
/// ([`Spare::give_back`]); smaller ones allocate their own.
const REUSE_MIN_BYTES: usize = 1 << 20;

/// A spare buffer is kept only up to this capacity.
const REUSE_MAX_BYTES: usize = 32 << 20;

/// One large read buffer kept for the next whole-file read, so a run of
/// large reads does not fault fresh pages in for every one of them. The
/// server makes one at startup; the calls' readers take it (through their
/// [`Io`]) and the stdout writer gives written replies' buffers back.
#[derive(Debug, Default)]
pub struct Spare(std::sync::Mutex<Vec<u8>>);

impl Spare {
    /// A buffer with room for `size` bytes and one more: the spare one when
    /// it is large enough and `size` is large, else a new one.
    pub(super) fn buffer(&self, size: usize) -> Vec<u8> {
        let want = size.saturating_add(1);
        if size >= REUSE_MIN_BYTES {
            let mut spare = crate::sync::lock(&self.0);
            if spare.capacity() >= want {
                return std::mem::take(&mut *spare);
            }
        }
        Vec::with_capacity(want)
    }

    /// Hands a large buffer that is no longer needed (a written reply's
    /// text) back for the next whole-file read. Kept only if it is between
    /// `REUSE_MIN_BYTES` and `REUSE_MAX_BYTES` and larger than the one kept.
    pub fn give_back(&self, mut buf: Vec<u8>) {
        if !(REUSE_MIN_BYTES..=REUSE_MAX_BYTES).contains(&buf.capacity()) {
            return;
        }
        buf.clear();
        let mut spare = crate::sync::lock(&self.0);
        if buf.capacity() > spare.capacity() {
            *spare = buf;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server's spare buffer serves the next large read once a large
    /// buffer is given back, and only one read at a time.
    #[test]
    fn a_buffer_given_back_serves_the_next_large_read() {
        let spare = Spare::default();
        spare.give_back(Vec::with_capacity(REUSE_MIN_BYTES / 2));
        assert_eq!(
            spare.buffer(REUSE_MIN_BYTES).capacity(),
            REUSE_MIN_BYTES + 1
        );
        spare.give_back(Vec::with_capacity(4 << 20));
        assert!(
            spare.buffer(100).capacity() < REUSE_MIN_BYTES,
            "small reads allocate"
        );
        let taken = spare.buffer(REUSE_MIN_BYTES);
        assert!(taken.capacity() >= 4 << 20, "the spare one");
        assert_eq!(
            spare.buffer(REUSE_MIN_BYTES).capacity(),
            REUSE_MIN_BYTES + 1
        );
        spare.give_back(taken);
        assert!(
            spare.buffer(2 << 20).capacity() >= 4 << 20,
            "given back again"
        );
    }
}
