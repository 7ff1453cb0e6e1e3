//! glibc allocator tuning: the one module with `unsafe` code.
//!
//! Owns: one `mallopt(3)` call made once, at startup, before any thread
//! exists, and `malloc_trim(3)` after a large reply has been written.
//! rustix wraps neither, so these are direct libc calls.
//!
//! Why: glibc gives each thread that allocates its own arena (up to 8 per
//! core) and raises its mmap threshold after a large block is freed, so a
//! 20 MiB reply buffer freed on one blocking-pool thread stays resident in
//! that thread's arena, and the next large reply on another thread adds to
//! it. With one arena, freed memory is reused by whichever thread allocates
//! next: over the benchmark suite (examples/mcpbench.rs) peak RSS fell
//! from 123 MiB to 49 MiB, near the largest single reply. (Also fixing the
//! mmap threshold gave the same peak for more CPU, so it is not done.)
//!
//! After a large reply (a 100k-entry tree, a 20 MiB file) is written and
//! freed, `malloc_trim(0)` hands the free pages back to the kernel, so the
//! next request starts from a small heap instead of stacking on the last
//! one's leftovers.
//!
//! # Safety audit
//!
//! `mallopt` takes two integers and only changes allocator parameters; it
//! reads and writes no caller memory. glibc documents it as MT-Unsafe
//! ("init"), which is why it runs before the runtime starts any thread.
//! `malloc_trim` takes one integer, touches only the allocator's own free
//! lists (under its locks; glibc documents it MT-Safe) and returns whether
//! memory was released. Both return values are ignored: failure leaves
//! glibc's defaults, which are correct, only larger. On musl this module
//! only installs mimalloc as the global allocator; elsewhere it compiles
//! to nothing.

/// musl's own malloc is slow under threads (the static musl build ran the
/// benchmark 1.4-4x slower than glibc): the static musl builds use
/// mimalloc, a musl-only dependency in Cargo.toml.
#[cfg(target_env = "musl")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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

/// Returns free heap pages to the kernel. Call after freeing something big.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn release_free_memory() {
    #[allow(unsafe_code)]
    // SAFETY: see the module's safety audit: an integer argument, and glibc
    // synchronizes the allocator's state itself.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Returns free heap pages to the kernel (nothing to do off glibc).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn release_free_memory() {}
