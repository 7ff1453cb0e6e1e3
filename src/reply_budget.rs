//! Reply memory: asking for more of the session's reply budget once a call
//! learns it will hold more.
//!
//! Owns: the hook between the file reader and the call that runs it. A
//! call reserves a small share of the reply budget before it starts
//! ([`crate::mcp::flow`]); a read of a file may hold several times the
//! file's size while its reply is built, which is known only once the file
//! is open. So the MCP edge gives the call its [`Grant`], which travels in
//! the call's facts ([`crate::fs::io::Io`], in the tool's
//! [`crate::tools::Ctx`]); every file reader takes those facts as a
//! parameter and calls [`Grant::file_opened`] with each file's size before
//! reading it, which waits until that much of the budget is free (and
//! again before it holds more of a file than its size at open: a file may
//! grow while it is read). A read outside any call (unit tests, the fuzz
//! targets) is given [`Unbudgeted`], which never waits.
//! May touch: nothing.

use crate::error::Result;
use crate::limits::{Limits, MAX_WALK_TEXT_BYTES};

/// What a call reserves before its tool runs and, for a tool that reads
/// whole files, how much more each file it opens may make it hold. Every
/// tool has one, in its entry of the tool table ([`crate::tools::Tool`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Reserved before the tool runs.
    pub upfront: u64,
    /// Bytes held per byte of a file opened (at most the read limit of
    /// the file counts); 0 for tools whose reply is not made of files.
    pub per_file_byte: u64,
    /// The most the call can hold by the limits in force: what it grows to
    /// at most.
    pub most: u64,
}

/// What a call that builds no large reply reserves.
pub const SMALL_REPLY: u64 = 64 * 1024;

impl Plan {
    /// A reply whose size is known up front: all of it reserved at once.
    pub const fn fixed(most: u64) -> Plan {
        Plan {
            upfront: most,
            per_file_byte: 0,
            most,
        }
    }

    /// A reply made of one file read whole: a small share up front, grown
    /// by `per_file_byte` per byte of the file once it is open.
    pub const fn files(per_file_byte: u64, most: u64) -> Plan {
        Plan {
            upfront: SMALL_REPLY,
            per_file_byte,
            most,
        }
    }

    /// A short reply (a confirmation, an error, a file's metadata).
    pub fn small(_: &Limits) -> Plan {
        Plan::fixed(SMALL_REPLY)
    }

    /// `append_file`: a confirmation; a file with other hard links is
    /// read whole and held again with the bytes appended (the request's
    /// bytes are counted with the request).
    pub fn append(l: &Limits) -> Plan {
        Plan::files(2, l.max_read_bytes.saturating_mul(2))
    }

    /// `read_text_file`: the bytes read, plus their text (lossy decoding of
    /// invalid UTF-8 takes up to three bytes per byte).
    pub fn text_read(l: &Limits) -> Plan {
        Plan::files(4, l.max_read_bytes.saturating_mul(4))
    }

    /// `read_media_file`: the bytes read, plus base64 (4 per 3).
    pub fn media(l: &Limits) -> Plan {
        Plan::files(3, l.max_read_bytes.saturating_mul(3))
    }

    /// `read_multiple_files`: the text of the batch (lossy, up to three
    /// bytes per byte), plus the bytes of the file being read; all of it
    /// up front. A batch holds the text of the files it read while it opens
    /// the next, so growing its share file by file would mean waiting for
    /// more while holding text the budget no longer counts (a wait must hold
    /// nothing, or two calls could deadlock).
    pub fn batch(l: &Limits) -> Plan {
        Plan::fixed(
            l.max_batch_bytes
                .saturating_mul(3)
                .saturating_add(l.max_read_bytes),
        )
    }

    /// `edit_file`: the old text, the new text and the diff; all of it up
    /// front: the new text comes from the request, not the file, so growing
    /// the share by the file's size would not cover it (a tiny file edited
    /// with a large newText makes a large diff).
    pub fn edit(l: &Limits) -> Plan {
        Plan::fixed(l.max_read_bytes.saturating_mul(3))
    }

    /// A walk's reply: the text, plus the walk's entries and the tree built
    /// from them.
    pub fn walk_tree(_: &Limits) -> Plan {
        Plan::fixed((MAX_WALK_TEXT_BYTES as u64).saturating_mul(3))
    }

    /// A listing of one directory: its entries and their text.
    pub fn listing(_: &Limits) -> Plan {
        Plan::fixed((MAX_WALK_TEXT_BYTES as u64).saturating_mul(2))
    }
}

/// The reply budget one call holds.
pub trait Grant: Send + Sync {
    /// The call is about to read a file of `bytes` bytes: returns once its
    /// share of the budget covers what that read may hold (waiting while
    /// other replies are written), or fails when the call is cancelled.
    fn file_opened(&self, bytes: u64) -> Result<()>;

    /// The call is about to build up to `bytes` of reply text as it reads,
    /// which can outgrow the file it comes from (numbered lines: a file of
    /// empty lines makes eight bytes of text per byte, twice what the
    /// read's share of four per byte covers): returns once its share covers
    /// them, waiting like [`Grant::file_opened`]. Called before the text is
    /// held wherever it can be: a wait gives back the call's share, and what
    /// the call holds meanwhile is not counted.
    fn will_hold(&self, bytes: u64) -> Result<()>;
}

/// The grant of a read made outside any call's reply budget (unit tests,
/// the fuzz targets): it never waits.
#[derive(Debug, Clone, Copy)]
pub struct Unbudgeted;

impl Grant for Unbudgeted {
    fn file_opened(&self, _: u64) -> Result<()> {
        Ok(())
    }

    fn will_hold(&self, _: u64) -> Result<()> {
        Ok(())
    }
}
