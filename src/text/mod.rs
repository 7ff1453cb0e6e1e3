//! Pure text code: no I/O, no handles, no MCP.
//!
//! Owns: `edit_file`'s exact matching ([`edit`]), the unified diff
//! ([`diff`]), glob patterns ([`glob`]), JSON string escaping ([`json`]),
//! and the small text utilities the
//! reference's output formats need ([`fmt`]). The fuzz targets call this
//! layer directly.
//! May touch: nothing.

pub mod diff;
pub mod edit;
pub mod fmt;
pub mod glob;
pub mod json;
