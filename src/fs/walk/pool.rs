//! The walk threads: a small rayon pool, one thread per CPU, with big
//! stacks, shared by every walk and by the content search's file search.
//!
//! Owns: [`WalkPool`], made once by the server at startup with the CPU
//! count startup computed, and handed to each walk in its [`super::Bounds`];
//! its threads start with the first walk.
//! May touch: nothing (it starts threads).

use std::sync::{Arc, OnceLock};

/// Stack of each walk thread. The walk recurses once per directory level,
/// plus rayon's join frames (more of them on machines with more cores), so
/// its stack grows with `--max-depth`: a debug build used about 5 KiB a
/// level, and the 2 MiB default overflowed, aborting the server, at about
/// 400 levels (release: about 1500). Only the pages touched become resident.
const WALK_STACK_BYTES: usize = 64 << 20;

/// The walk threads of one server: cloned into each walk's bounds (one
/// pool, shared), started on first use.
#[derive(Clone)]
pub struct WalkPool(Arc<Lazy>);

struct Lazy {
    threads: usize,
    pool: OnceLock<Option<rayon::ThreadPool>>,
}

impl WalkPool {
    /// A pool of `threads` walk threads (0: rayon's default, as in unit
    /// tests), not started yet. Startup gives the CPU count it computed
    /// before Landlock: asked later, the standard library reads
    /// `/proc/self/cgroup` and `/sys/fs/cgroup`, host paths that tuls does
    /// not touch after startup.
    pub fn new(threads: usize) -> WalkPool {
        WalkPool(Arc::new(Lazy {
            threads,
            pool: OnceLock::new(),
        }))
    }

    /// The CPU count the pool was made with (2 when it was 0).
    pub fn threads(&self) -> usize {
        match self.0.threads {
            0 => 2,
            n => n,
        }
    }

    /// The walk threads, started on first use; `None` when they could not
    /// be started.
    pub(super) fn get(&self) -> Option<&rayon::ThreadPool> {
        self.0
            .pool
            .get_or_init(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(self.0.threads)
                    .thread_name(|i| format!("tuls-walk-{i}"))
                    .stack_size(WALK_STACK_BYTES)
                    .build()
                    .map_err(|e| tracing::warn!(error = %e, "cannot start the walk threads"))
                    .ok()
            })
            .as_ref()
    }
}

impl std::fmt::Debug for WalkPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WalkPool")
            .field("threads", &self.0.threads)
            .field("started", &self.0.pool.get().is_some())
            .finish()
    }
}
