//! The capability core: everything that touches the filesystem.
//!
//! Owns: the allowed roots ([`roots`], the one ambient-authority site), the
//! one resolver from a client path to a [`scope::Target`] ([`scope`]
//! picks the root, [`resolve`] resolves beneath it, with the path rules),
//! opening and reading regular files ([`file`](mod@file)), with the facts
//! of the call a read or write is for ([`io`]: reply budget, change
//! recorder, spare buffer), the change recorder the writers tell what they
//! change ([`record`]: a trait the undo journal and the audit log
//! implement, so the core imports neither), the one walk
//! engine, which lists directories and walks trees without following
//! symlinks for every tool that walks, a content search with its ignore
//! files included ([`walk`]), the one
//! writer ([`atomic`], with appending in [`append`] and copying in
//! [`copy`], bytes and holes moved by [`sparse`]), renaming ([`rename`](mod@rename)) and making directories
//! ([`mkdir`]) beside it, version tokens ([`version`]) and the conditional-change check
//! ([`ifmatch`]), Landlock ([`sandbox`]), and the platform split
//! ([`sys`]: Linux and the portable, macOS backend).
//! May touch: the root `Dir` handles, and nothing by an ambient path after
//! startup. Knows nothing of MCP or JSON.

pub mod append;
pub mod atomic;
pub mod copy;
pub mod cursor;
pub mod file;
pub mod gitdirs;
pub mod ifmatch;
pub mod io;
pub mod mkdir;
pub mod record;
pub mod rename;
pub mod resolve;
pub mod roots;
pub mod sandbox;
pub mod scope;
pub mod sparse;
pub mod sys;
pub mod version;
pub mod walk;
