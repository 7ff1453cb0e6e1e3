//! The MCP edge: everything that knows about JSON-RPC and MCP.
//!
//! Owns: the rmcp server handler ([`server`]), stdio framing ([`framing`]),
//! the one reader and the one reply writer ([`stdio`]), the mapping of tool results and errors to MCP
//! replies ([`reply`]), client roots ([`roots`]), reply back-pressure
//! ([`flow`]), the filesystem workers ([`workers`]), and the direct path of
//! tool calls around rmcp's per-request machinery ([`direct`]), and what
//! the 2026-07-28 era adds to rmcp's shaping ([`era`]).
//! May touch: stdin and stdout; the filesystem only through [`crate::tools`]
//! and the root handles of [`crate::fs`].

pub mod direct;
pub mod era;
pub mod flow;
pub mod framing;
pub mod reply;
pub mod roots;
pub mod server;
pub mod stdio;
pub mod workers;
