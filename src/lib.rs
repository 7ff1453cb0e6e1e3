//! tuls: a hardened MCP filesystem server.
//!
//! Each allowed root is opened once, at startup, as a `cap_std::fs::Dir`;
//! afterwards every operation goes through those handles. The one resolver
//! ([`fs::resolve`]) has two backends with one result: the kernel's
//! resolve-beneath lookup (`openat2`, through cap-std) for a read in a root
//! whose rules hide nothing, and tuls's component walk beneath the root
//! handle (each directory opened `O_NOFOLLOW`, each symlink read by tuls,
//! the path rules matched on every name) for every write and every other
//! read. Landlock is the second wall. See README.md and SECURITY.md.
//!
//! Three layers, outside in:
//! - [`mcp`]: the edge. JSON-RPC framing on stdio, the one tool-call path, the rmcp handler, the
//!   mapping of results and errors to replies, and client roots.
//! - [`tools`]: the tool table and one thin adapter per tool.
//! - [`fs`]: the capability core. Roots (the one ambient-authority site),
//!   the one resolver, opening, reading, walking, the one writer, Landlock.
//!
//! Beside them: [`text`] (pure code: edit matching, the diff, globs,
//! formatting), [`error`] (the one error type), [`policy`] (selectors),
//! [`limits`] (every bound), [`progress`] (throttled progress reports),
//! [`cli`] and [`run`] (startup), [`log`] (the one log format).
//!
//! Above [`fs`], beside [`tools`]: [`audit`] (the audit log) and
//! [`journal`] (the undo journal). Each implements the core's change
//! recorder ([`fs::record::Recorder`]) and uses the core's roots, versions
//! and syncs; the core imports neither, and the edge ([`mcp`]) puts them in
//! each call's recorder ([`fs::io::Io`]).
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]
// Stderr and stdout may be closed: `eprintln!` and `println!` panic there.
// Lines go through `say!` and `out!` (src/log.rs).
#![deny(clippy::print_stderr, clippy::print_stdout)]

#[cfg(windows)]
compile_error!(
    "tuls does not support Windows: its confinement rests on POSIX directory handles \
     (openat-style resolution beneath a root, O_NOFOLLOW, renameat2/renameatx_np), which \
     Windows does not offer in the same form; build on Linux or macOS"
);

pub mod audit;
pub mod cli;
pub mod error;
pub mod fs;
pub mod journal;
pub mod limits;
#[cfg(test)]
mod lints;
pub mod log;
pub mod mcp;
pub mod policy;
pub mod progress;
pub mod reply_budget;
pub mod rules;
pub mod run;
pub mod sync;
pub mod text;
pub mod tools;
