//! The MCP protocol as clients see it: `tools/list` and its schemas,
//! structured content, both protocol eras on one connection, and the
//! reference server's own published expectations.

mod dropin;
mod eras;
mod mcp;
mod schemas;
mod tools_list;
