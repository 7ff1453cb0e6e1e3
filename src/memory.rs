//! Reply memory: asking for more of the session's reply budget once a call
//! learns it will hold more.
//!
//! Owns: the hook between the file reader and the call that runs it. A
//! call reserves a small share of the reply budget before it starts
//! ([`crate::mcp::flow`]); a read of a file may hold several times the
//! file's size while its reply is built, which is known only once the file
//! is open. So the MCP edge installs the call's [`Grant`] on the worker
//! thread that runs it ([`with_grant`]), and the file reader calls
//! [`file_opened`] with each file's size before reading it, which waits
//! until that much of the budget is free (and again before it holds more
//! of a file than its size at open: a file may grow while it is read). Where no grant is installed (the
//! fuzz targets, unit tests, walk threads) it does nothing.
//! May touch: nothing.

use std::cell::RefCell;
use std::sync::Arc;

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
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<dyn Grant>>> = const { RefCell::new(None) };
}

/// Runs `f` with `grant` installed on this thread.
pub fn with_grant<R>(grant: Arc<dyn Grant>, f: impl FnOnce() -> R) -> R {
    struct Reset(Option<Arc<dyn Grant>>);
    impl Drop for Reset {
        fn drop(&mut self) {
            let previous = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = previous);
        }
    }
    let previous = CURRENT.with(|c| c.borrow_mut().replace(grant));
    let _reset = Reset(previous);
    f()
}

/// See [`Grant::file_opened`]; nothing when no grant is installed.
pub fn file_opened(bytes: u64) -> Result<()> {
    let grant = CURRENT.with(|c| c.borrow().clone());
    match grant {
        Some(g) => g.file_opened(bytes),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    struct Count(Mutex<u64>);
    impl Grant for Count {
        fn file_opened(&self, bytes: u64) -> Result<()> {
            *crate::sync::lock(&self.0) += bytes;
            Ok(())
        }
    }

    #[test]
    fn only_the_installed_grant_sees_reads_and_only_while_installed() {
        let g = Arc::new(Count(Mutex::new(0)));
        file_opened(5).ok();
        with_grant(g.clone(), || {
            file_opened(7).ok();
            // Another thread has none.
            std::thread::spawn(|| file_opened(100).ok()).join().ok();
        });
        file_opened(9).ok();
        assert_eq!(*crate::sync::lock(&g.0), 7);
        // Reset after a panic too.
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            with_grant(g.clone(), || panic!("boom"))
        }));
        assert!(caught.is_err());
        file_opened(11).ok();
        assert_eq!(*crate::sync::lock(&g.0), 7);
    }
}
