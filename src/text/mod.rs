//! Pure text code: no I/O, no handles, no MCP.
//!
//! Owns: `edit_file`'s exact matching ([`edit`]), the unified diff
//! ([`diff`]), glob patterns ([`glob`]), JSON string escaping ([`json`]),
//! the small text utilities the reference's output formats need ([`fmt`]),
//! the reply budget ([`budget`]), line ranges ([`lines`]), the reply of a
//! content search ([`matches`](mod@matches)) and the pretty JSON of a
//! directory tree ([`tree`]). The fuzz targets call this
//! layer directly. Its reply texts are pinned in-process in `tests.rs`.
//! May touch: nothing.

pub mod budget;
pub mod diff;
pub mod edit;
pub mod fmt;
pub mod glob;
pub mod json;
pub mod lines;
pub mod matches;
pub mod tree;

#[cfg(test)]
mod tests;
