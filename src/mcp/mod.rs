//! The MCP edge: everything that knows about JSON-RPC and MCP.
//!
//! Owns: stdio framing ([`lines`]); the one reader and the one reply
//! writer ([`stdio`], with the writer's queue item in [`out`]); the one
//! request path of tool calls and the one table of requests in flight
//! ([`call`]), with the session's lifecycle it answers calls by
//! ([`session`]); the rmcp server handler for the other requests and the
//! run of one call ([`server`]); the mapping of tool results and errors to
//! MCP replies ([`reply`]) and the JSON-RPC errors tuls composes itself
//! ([`rpc_error`]); client roots ([`roots`]); reply back-pressure
//! ([`flow`]); the filesystem workers ([`workers`]); and what the
//! 2026-07-28 era adds to rmcp's shaping ([`era`]).
//!
//! Imports go one way, with no circle: `stdio` → `call` → `session`,
//! `server`, `out`; `server` → `roots`, `workers`, `flow`, `reply`, `era`;
//! `out` → `flow` → `workers`.
//! May touch: stdin and stdout; the filesystem only through [`crate::tools`]
//! and the root handles of [`crate::fs`].

pub mod call;
pub mod era;
pub mod flow;
pub mod lines;
pub mod out;
pub mod reply;
pub mod roots;
pub mod rpc_error;
pub mod server;
pub mod session;
pub mod stdio;
pub mod workers;
