//! Progress reports of long calls, throttled.
//!
//! Owns: [`Progress`], the sink a call reports to. It knows nothing of MCP:
//! the edge gives it a closure that sends `notifications/progress`.
//! May touch: nothing (no I/O).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A progress sink: called with the number of items (files, entries) done
/// so far. It throttles itself: nothing is sent in the first
/// [`Progress::QUIET`], then at most one report per [`Progress::EVERY`],
/// and only a value larger than the last one sent.
/// The edge ([`crate::mcp::call`]) turns reports into
/// `notifications/progress`; the tools and the walks see only this.
#[derive(Clone)]
pub struct Progress {
    send: Arc<dyn Fn(u64) + Send + Sync>,
    started: Instant,
    quiet: Duration,
    every: Duration,
    /// Milliseconds after `started` of the last report sent (0: none yet).
    last_ms: Arc<AtomicU64>,
    /// The last value sent: a report must grow (MCP: progress increases).
    last_done: Arc<AtomicU64>,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress").finish_non_exhaustive()
    }
}

impl Progress {
    /// How long a call runs before its first progress report.
    pub const QUIET: Duration = Duration::from_secs(1);
    /// The least time between two reports.
    pub const EVERY: Duration = Duration::from_millis(250);

    /// A sink that hands each report that passes the throttle to `send`.
    pub fn new(send: impl Fn(u64) + Send + Sync + 'static) -> Self {
        Self {
            send: Arc::new(send),
            started: Instant::now(),
            quiet: debug_now().unwrap_or(Self::QUIET),
            every: debug_now().unwrap_or(Self::EVERY),
            last_ms: Arc::new(AtomicU64::new(0)),
            last_done: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Reports `done` items, if the throttle lets it through now. Cheap
    /// enough to call once per item.
    pub fn report(&self, done: u64) {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let quiet = self.quiet.as_millis() as u64;
        let every = self.every.as_millis() as u64;
        if now < quiet || done <= self.last_done.load(Ordering::Relaxed) {
            return;
        }
        let last = self.last_ms.load(Ordering::Relaxed);
        if last != 0 && now < last.saturating_add(every.max(1)) {
            return;
        }
        // One thread wins each slot.
        if self
            .last_ms
            .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
            && self.last_done.fetch_max(done, Ordering::Relaxed) < done
        {
            (self.send)(done);
        }
    }
}

/// Debug builds only: `TULS_DEBUG_PROGRESS_NOW=1` reports from the start
/// and without a pause, so the tests can see progress on a small tree.
/// Release builds compile this to `None`.
fn debug_now() -> Option<Duration> {
    #[cfg(debug_assertions)]
    if std::env::var_os("TULS_DEBUG_PROGRESS_NOW").is_some() {
        return Some(Duration::ZERO);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_at_first_then_throttled() {
        let sent = Arc::new(AtomicU64::new(0));
        let s = sent.clone();
        let mut p = Progress::new(move |_| {
            s.fetch_add(1, Ordering::Relaxed);
        });
        p.quiet = Duration::from_secs(1);
        p.every = Duration::from_millis(250);
        for i in 0..1000 {
            p.report(i);
        }
        assert_eq!(
            sent.load(Ordering::Relaxed),
            0,
            "nothing in the first second"
        );
        p.started = Instant::now()
            .checked_sub(Duration::from_secs(2))
            .expect("uptime");
        for i in 1..1000 {
            p.report(i);
        }
        assert_eq!(sent.load(Ordering::Relaxed), 1, "one report per slot");
        // The first report of the slot (1) went out; a later slot never
        // sends a value that is not larger.
        p.last_ms.store(1, Ordering::Relaxed);
        p.report(1);
        assert_eq!(sent.load(Ordering::Relaxed), 1, "never a value not larger");
        p.report(7);
        assert_eq!(sent.load(Ordering::Relaxed), 2);
    }
}
