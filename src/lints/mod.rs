//! Architecture lints: tests that read the crate's own source and keep its
//! design true where the compiler cannot.
//!
//! - [`tools`]: no tool reaches into a root's handle or makes filesystem
//!   system calls itself, and a tool is whole in its own file.
//! - [`globals`]: every `static` is listed with the reason it is not a fact
//!   of one call.
//!
//! Clippy's `disallowed-methods` (clippy.toml) is the third: no ambient
//! filesystem access outside `src/fs/roots.rs`.

mod globals;
pub(crate) mod tools;
