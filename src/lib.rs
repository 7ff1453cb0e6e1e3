//! tuls: a hardened MCP filesystem server.
//!
//! Each allowed root is opened once, at startup, as a `cap_std::fs::Dir`;
//! afterwards every operation goes through those handles, and the kernel's
//! resolve-beneath lookup enforces the scope. See README.md and SECURITY.md.

pub mod atomic;
pub mod cli;
pub mod diff;
pub mod edit;
pub mod error;
pub mod file;
pub mod glob;
pub mod limits;
pub mod malloc;
pub mod policy;
pub mod roots;
pub mod run;
pub mod sandbox;
pub mod scope;
pub mod server;
pub mod tools;
pub mod transport;
pub mod tree;
pub mod walk;
