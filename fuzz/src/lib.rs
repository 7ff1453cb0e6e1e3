//! Shared pieces of the tuls fuzz targets.
//!
//! - [`fixture`]: the escape fixture, a temp tree with symlinks that lead
//!   out, an outside canary beside it, and the oracles that check nothing
//!   outside was read, created, changed or removed.
//! - [`alphabet`]: decoders that turn fuzzer bytes into path strings and glob
//!   patterns built from tokens (`..`, fixture names, root spellings, NUL,
//!   long names, unicode).
//!
//! Everything here is test scaffolding: it uses ambient authority (std::fs)
//! on purpose, and only inside its own temp directory.

pub mod alphabet;
pub mod fixture;

/// Every tool, in `tools/list` order, and whether it writes, from the
/// issues' tables: the targets' own list, an oracle independent of tuls's
/// tool table.
pub const TOOLS: [(&str, bool); 17] = [
    ("read_file", false),
    ("read_text_file", false),
    ("read_media_file", false),
    ("read_multiple_files", false),
    ("write_file", true),
    ("append_file", true),
    ("edit_file", true),
    ("create_directory", true),
    ("list_directory", false),
    ("list_directory_with_sizes", false),
    ("directory_tree", false),
    ("move_file", true),
    ("copy_file", true),
    ("search_files", false),
    ("search_file_contents", false),
    ("get_file_info", false),
    ("list_allowed_directories", false),
];

/// The tools a `tool_calls` header picks by number (1 is the first): the
/// fourteen tools of the first table, in its order, so the seeds keep
/// their meaning. The tools added later (`read_file`, `append_file`,
/// `copy_file`) are reached through JSON-RPC lines.
pub const CALL_TOOLS: [&str; 14] = [
    "read_text_file",
    "read_media_file",
    "read_multiple_files",
    "write_file",
    "edit_file",
    "create_directory",
    "list_directory",
    "list_directory_with_sizes",
    "directory_tree",
    "move_file",
    "search_files",
    "search_file_contents",
    "get_file_info",
    "list_allowed_directories",
];

/// Whether `TULS_FUZZ_TRACE` is set: the targets then print each decoded
/// input and its outcome to stderr (for reading seeds and crashes, not for
/// fuzzing).
pub fn trace() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("TULS_FUZZ_TRACE").is_some())
}
