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
