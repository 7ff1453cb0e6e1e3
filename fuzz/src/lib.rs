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

/// Whether `TULS_FUZZ_TRACE` is set: the targets then print each decoded
/// input and its outcome to stderr (for reading seeds and crashes, not for
/// fuzzing).
pub fn trace() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("TULS_FUZZ_TRACE").is_some())
}
