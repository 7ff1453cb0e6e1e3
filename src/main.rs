//! The `tuls` binary: the library does the work; this file adds the one
//! audited `unsafe` module, the allocator tuning in [`malloc`], which the
//! library (`#![forbid(unsafe_code)]`) cannot hold.

mod malloc;

/// Also the `tuls-mcp` binary's `main` (python/tuls-mcp.rs), for the wheel.
pub fn main() -> std::process::ExitCode {
    // First, while the process has one thread.
    malloc::tune();
    tuls::run::main(tuls::run::Hooks {
        after_large_reply: malloc::release_free_memory,
    })
}
