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

/// Every tool and whether it writes, from the issues' tables: the targets'
/// own list, an oracle independent of tuls's tool table.
pub const TOOLS: [(&str, bool); 14] = [
    ("read_text_file", false),
    ("read_media_file", false),
    ("read_multiple_files", false),
    ("write_file", true),
    ("edit_file", true),
    ("create_directory", true),
    ("list_directory", false),
    ("list_directory_with_sizes", false),
    ("directory_tree", false),
    ("move_file", true),
    ("search_files", false),
    ("search_file_contents", false),
    ("get_file_info", false),
    ("list_allowed_directories", false),
];

/// Whether `TULS_FUZZ_TRACE` is set: the targets then print each decoded
/// input and its outcome to stderr (for reading seeds and crashes, not for
/// fuzzing).
pub fn trace() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("TULS_FUZZ_TRACE").is_some())
}
