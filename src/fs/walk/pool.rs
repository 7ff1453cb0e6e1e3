//! The walk threads: a small rayon pool, one thread per CPU, with big
//! stacks, shared by every walk and by the content search's file search.
//!
//! Owns: the pool and its size ([`set_walk_threads`], [`walk_threads`]).
//! May touch: nothing (it starts threads).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Stack of each walk thread. The walk recurses once per directory level,
/// plus rayon's join frames (more of them on machines with more cores), so
/// its stack grows with `--max-depth`: a debug build used about 5 KiB a
/// level, and the 2 MiB default overflowed, aborting the server, at about
/// 400 levels (release: about 1500). Only the pages touched become resident.
const WALK_STACK_BYTES: usize = 64 << 20;

/// How many walk threads to start; 0 until [`set_walk_threads`] is called.
static WALK_THREADS: AtomicUsize = AtomicUsize::new(0);

/// Sets the number of walk threads, before the first walk. Startup calls it
/// with the CPU count it computed before Landlock: asked later, the standard
/// library reads `/proc/self/cgroup` and `/sys/fs/cgroup`, host paths that
/// tuls does not touch after startup.
pub fn set_walk_threads(n: usize) {
    WALK_THREADS.store(n, Ordering::Relaxed);
}

/// The CPU count given to [`set_walk_threads`] (2 when it was not called).
pub fn walk_threads() -> usize {
    match WALK_THREADS.load(Ordering::Relaxed) {
        0 => 2,
        n => n,
    }
}

/// The walk threads: one per CPU (as set by [`set_walk_threads`]; rayon's
/// default when unset, as in unit tests), with big stacks. The content
/// search uses them too.
pub(super) fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(WALK_THREADS.load(Ordering::Relaxed))
            .thread_name(|i| format!("tuls-walk-{i}"))
            .stack_size(WALK_STACK_BYTES)
            .build()
            .map_err(|e| tracing::warn!(error = %e, "cannot start the walk threads"))
            .ok()
    })
    .as_ref()
}
