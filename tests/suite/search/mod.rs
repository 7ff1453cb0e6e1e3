//! The search tools: `search_files` against the reference, and
//! `search_file_contents` against `rg` (modes, ignore rules, streaming,
//! memory and reply bounds).

mod bounds;
mod contents;
mod files;
mod hidden_ignores;
mod stream;
