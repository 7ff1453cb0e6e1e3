//! Filesystem worker threads: where tool calls run, off the async runtime.
//!
//! Owns: one queue of jobs and the threads that take from it. A call is
//! pushed and its result comes back over a oneshot channel; a worker that
//! finishes a job takes the next queued one without sleeping, so a burst
//! of pipelined calls costs no wake-up per call (tokio's `spawn_blocking`
//! starts a new thread whenever none is idle, up to its maximum, which
//! under a burst on a small machine meant dozens of threads fighting for
//! the cores). There are `base` workers (the CPU count); one more is
//! started, up to [`MAX_BLOCKING_THREADS`], only when the oldest queued
//! job has waited `STALL` with every worker busy (a call blocked on a
//! slow filesystem then does not hold up the others for long). A push
//! looks at the queue, and so does one watcher thread while jobs wait
//! with no worker idle, since no further call may come to look (a client
//! that waits for its read before it sends anything else). Workers beyond
//! `base` end after `IDLE_EXIT` without work.
//!
//! A job that waits for the reply budget on its worker says so
//! ([`blocking`]): while it waits, it does not count as a worker, and one
//! more is started if jobs are queued. Queued jobs hold the budget their
//! calls reserved before they were queued, so without this, workers all
//! waiting for budget that only the queued jobs behind them would release
//! stopped the session for good (finding F5: four pipelined reads of a
//! 40 MiB file and twenty small calls, 16 MiB budget). Blocked workers are
//! at most the calls in flight, so the threads stay bounded.
//! May touch: nothing itself (the jobs do the filesystem work).

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::limits::MAX_BLOCKING_THREADS;
use crate::sync::lock;

/// How long the oldest queued job may wait with every worker busy before
/// one more worker is started.
const STALL: Duration = Duration::from_millis(20);

/// How long a worker beyond the base count waits for work before ending.
const IDLE_EXIT: Duration = Duration::from_secs(10);

type Job = Box<dyn FnOnce() + Send>;

/// A pool of filesystem worker threads fed by one queue.
pub struct Workers {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    ready: Condvar,
    /// Wakes the watcher: a job was queued with no worker idle.
    queued: Condvar,
    base: usize,
    max: usize,
}

#[derive(Default)]
struct State {
    queue: VecDeque<(Instant, Job)>,
    /// Workers waiting for a job.
    idle: usize,
    /// Workers alive.
    threads: usize,
    /// Workers inside [`blocking`] (waiting for budget, not working).
    blocked: usize,
    /// Workers started so far (for their names).
    started: usize,
    /// Whether the watcher thread runs (started at the first wait).
    watched: bool,
}

impl Workers {
    /// A pool of `base` workers (at least one), growing to
    /// [`MAX_BLOCKING_THREADS`] when calls stall. No thread starts before
    /// the first job.
    pub fn new(base: usize) -> Self {
        let base = base.clamp(1, MAX_BLOCKING_THREADS);
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                ready: Condvar::new(),
                queued: Condvar::new(),
                base,
                max: MAX_BLOCKING_THREADS.max(base) + crate::limits::MAX_CALLS_IN_FLIGHT,
            }),
        }
    }

    /// Queues `f` for a worker now; the future gives its result, or `Err`
    /// with the panic when `f` panicked, or when no worker could run it.
    /// Dropping the future does not stop `f` (it sees the call's
    /// cancellation token instead).
    pub fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> impl Future<Output = std::thread::Result<T>> + Send + 'static {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = tx.send(std::panic::catch_unwind(AssertUnwindSafe(f)));
        });
        self.push(job);
        async move {
            match rx.await {
                Ok(r) => r,
                // The job was dropped unrun (no worker could be started).
                Err(_) => Err(Box::new("no worker thread") as Box<dyn std::any::Any + Send>),
            }
        }
    }

    /// Queues `f` for a worker now, with nothing to wait on: `f` hands its
    /// result on itself. A panic in `f` is caught and logged (the worker
    /// goes on); `f` should catch its own to answer its call.
    pub fn spawn(&self, f: impl FnOnce() + Send + 'static) {
        self.push(Box::new(f));
    }

    fn push(&self, job: Job) {
        let sh = &self.shared;
        let now = Instant::now();
        let mut st = lock(&sh.state);
        st.queue.push_back((now, job));
        if st.idle > 0 {
            drop(st);
            sh.ready.notify_one();
            return;
        }
        let stalled = st
            .queue
            .front()
            .is_some_and(|(at, _)| now.duration_since(*at) >= STALL);
        let working = st.threads - st.blocked;
        if working < sh.base || (stalled && working < MAX_BLOCKING_THREADS.max(sh.base)) {
            start(sh, st);
            return;
        }
        // Every worker is busy: the watcher starts one if this job is
        // still queued after `STALL`.
        if !st.watched {
            st.watched = true;
            let shared = sh.clone();
            let spawned = std::thread::Builder::new()
                .name("tuls-watch".to_owned())
                .spawn(move || watch(&shared));
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "cannot start the worker watcher");
                st.watched = false;
            }
        }
        drop(st);
        sh.queued.notify_one();
    }
}

/// The watcher: while jobs are queued, starts one more worker whenever the
/// oldest has waited `STALL` with no worker idle; sleeps while the queue
/// is empty. It ends with the process.
fn watch(sh: &Arc<Shared>) {
    let mut st = lock(&sh.state);
    loop {
        let waited = st.queue.front().map(|(at, _)| at.elapsed());
        let pause = match waited {
            None => {
                st = sh
                    .queued
                    .wait(st)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                continue;
            }
            Some(waited) if waited < STALL => STALL - waited,
            Some(_) => {
                let working = st.threads - st.blocked;
                if st.idle == 0 && working < MAX_BLOCKING_THREADS.max(sh.base) {
                    start(sh, st);
                    st = lock(&sh.state);
                }
                // The new worker takes the oldest job; look again after
                // it has had as long as any job gets.
                STALL
            }
        };
        st = sh
            .queued
            .wait_timeout(st, pause)
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .0;
    }
}

/// Starts one more worker (`st` is the locked state).
fn start(sh: &Arc<Shared>, mut st: std::sync::MutexGuard<'_, State>) {
    if st.threads >= sh.max {
        return;
    }
    st.threads += 1;
    st.started += 1;
    let n = st.started;
    drop(st);
    let shared = sh.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("tuls-fs-{n}"))
        .spawn(move || work(&shared));
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start a worker thread");
        let mut st = lock(&sh.state);
        st.threads -= 1;
        if st.threads == st.blocked {
            // Nobody would ever run them: drop them, which fails
            // their calls.
            st.queue.clear();
        }
    }
}

thread_local! {
    /// The pool of the worker this thread is, if it is one.
    static POOL: std::cell::RefCell<Option<Arc<Shared>>> = const { std::cell::RefCell::new(None) };
}

/// Runs `wait` (a wait for the reply budget) as a worker that does not
/// count while it waits: if jobs are queued and fewer than `base` workers
/// are left working, one more is started first. On a thread that is no
/// worker it just runs `wait`.
pub fn blocking<R>(wait: impl FnOnce() -> R) -> R {
    let Some(sh) = POOL.with(|p| p.borrow().clone()) else {
        return wait();
    };
    {
        let mut st = lock(&sh.state);
        st.blocked += 1;
        if !st.queue.is_empty() && st.idle == 0 && st.threads - st.blocked < sh.base {
            start(&sh, st);
        }
    }
    struct Unblock<'a>(&'a Shared);
    impl Drop for Unblock<'_> {
        fn drop(&mut self) {
            lock(&self.0.state).blocked -= 1;
        }
    }
    let _unblock = Unblock(&sh);
    wait()
}

fn work(sh: &Arc<Shared>) {
    POOL.with(|p| *p.borrow_mut() = Some(sh.clone()));
    let mut st = lock(&sh.state);
    loop {
        if let Some((_, job)) = st.queue.pop_front() {
            drop(st);
            // The job catches its own panic; this keeps the worker alive
            // should dropping its result panic too.
            if std::panic::catch_unwind(AssertUnwindSafe(job)).is_err() {
                tracing::error!("a job panicked on a worker thread; the worker goes on");
            }
            st = lock(&sh.state);
            continue;
        }
        st.idle += 1;
        let (next, timeout) = sh
            .ready
            .wait_timeout(st, IDLE_EXIT)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        st = next;
        st.idle -= 1;
        if timeout.timed_out() && st.queue.is_empty() && st.threads - st.blocked > sh.base {
            st.threads -= 1;
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_jobs_and_catches_panics() {
        let w = Workers::new(2);
        assert_eq!(w.run(|| 40 + 2).await.ok(), Some(42));
        assert!(w.run(|| -> u8 { panic!("boom") }).await.is_err());
        // Still serving after the panic, and many at once.
        let all: Vec<_> = (0..200).map(|i| w.run(move || i * 2)).collect();
        let mut got = Vec::new();
        for r in all {
            got.push(r.await.unwrap_or(-1));
        }
        assert_eq!(got, (0..200).map(|i| i * 2).collect::<Vec<_>>());
        // More only if a job waited `STALL` (a loaded machine): bounded.
        assert!(lock(&w.shared.state).threads <= MAX_BLOCKING_THREADS);
    }

    #[tokio::test]
    async fn a_stalled_queue_gets_another_worker() {
        let w = Workers::new(1);
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        // The one worker blocks until told.
        let blocked = tokio::spawn(w.run(move || rx.recv().is_ok()));
        tokio::time::sleep(Duration::from_millis(10)).await;
        // Queued behind the blocked job.
        let mut first = Box::pin(w.run(|| 1));
        assert!(
            tokio::time::timeout(Duration::from_millis(5), &mut first)
                .await
                .is_err()
        );
        // A push once the queue has stalled starts a second worker, which
        // runs both.
        tokio::time::sleep(STALL).await;
        assert_eq!(w.run(|| 2).await.ok(), Some(2));
        assert_eq!(first.await.ok(), Some(1));
        assert_eq!(lock(&w.shared.state).threads, 2);
        tx.send(()).ok();
        assert_eq!(blocked.await.ok().and_then(|r| r.ok()), Some(true));
    }

    /// The client sends nothing more while it waits: the watcher, not a
    /// later push, starts the worker.
    #[tokio::test]
    async fn a_stalled_queue_gets_another_worker_with_no_further_call() {
        let w = Workers::new(1);
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let blocked = tokio::spawn(w.run(move || rx.recv().is_ok()));
        tokio::time::sleep(Duration::from_millis(10)).await;
        let queued = w.run(|| 1);
        assert_eq!(
            tokio::time::timeout(Duration::from_secs(30), queued)
                .await
                .ok()
                .and_then(Result::ok),
            Some(1),
            "the queued job ran while the first worker stayed blocked"
        );
        assert_eq!(lock(&w.shared.state).threads, 2);
        tx.send(()).ok();
        assert_eq!(blocked.await.ok().and_then(|r| r.ok()), Some(true));
    }
}
