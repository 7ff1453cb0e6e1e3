//! glibc allocator tuning: the one module with `unsafe` code.
//!
//! Owns: one `mallopt(3)` call made once, at startup, before any thread
//! exists. rustix has no wrapper for `mallopt`, so this is a direct libc
//! call.
//!
//! Why: glibc gives each thread that allocates its own arena (up to 8 per
//! core) and raises its mmap threshold after a large block is freed, so a
//! 20 MiB reply buffer freed on one blocking-pool thread stays resident in
//! that thread's arena, and the next large reply on another thread adds to
//! it. With one arena, freed memory is reused by whichever thread allocates
//! next: over the benchmark suite (shared/bench/mcpbench.py) peak RSS fell
//! from 123 MiB to 49 MiB, near the largest single reply. (Also fixing the
//! mmap threshold gave the same peak for more CPU, so it is not done.)
//!
//! # Safety audit
//!
//! `mallopt` takes two integers and only changes allocator parameters; it
//! reads and writes no caller memory. glibc documents it as MT-Unsafe
//! ("init"), which is why it runs before the runtime starts any thread.
//! Its return value (1 on success, 0 on error) is ignored: failure leaves
//! glibc's defaults, which are correct, only larger. On a non-glibc libc
//! this module compiles to nothing.

/// Tunes the allocator. Call once, first thing in `main`, while the process
/// has one thread.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn tune() {
    #[allow(unsafe_code)]
    // SAFETY: see the module's safety audit: integer arguments only, called
    // before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Tunes the allocator (nothing to do off glibc).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn tune() {}
