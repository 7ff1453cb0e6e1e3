//! Locks that shrug off poisoning: the one place that decides what a
//! poisoned lock means; and [`block_on`], for a plain thread that must wait
//! on a future.
//!
//! A panic inside a tool is caught and becomes an error result for that
//! call only (see [`crate::mcp::server`]); the data these locks guard (the
//! roots in force, the roots-request state) is replaced whole, never left
//! half-written, so a lock poisoned by such a panic is still sound to use.
//! May touch: nothing.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `m`, ignoring poison.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Read-locks `l`, ignoring poison.
pub fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

/// Write-locks `l`, ignoring poison.
pub fn write<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}

/// Wakes the thread that waits in [`block_on`].
struct Unpark(std::thread::Thread);

impl std::task::Wake for Unpark {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs `f` to completion on this thread, parking it while `f` is pending
/// (for a worker thread waiting on a semaphore; `f` must not need a tokio
/// driver, such as a timer).
pub fn block_on<F: Future>(f: F) -> F::Output {
    let waker = std::task::Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let std::task::Poll::Ready(out) = f.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_on_waits_for_a_wake_from_another_thread() {
        let sem = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
        let s = sem.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            s.add_permits(3);
        });
        let got = block_on(sem.acquire_many(3)).map(|p| p.num_permits());
        assert_eq!(got.ok(), Some(3));
        t.join().ok();
    }
}
