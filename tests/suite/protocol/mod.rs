//! The MCP protocol as clients see it: `tools/list` and its schemas,
//! structured content, both protocol eras on one connection, the one path
//! every tool call takes (`one_path`), and the
//! reference server's own published expectations, and files as resources.

mod dropin;
mod eras;
mod mcp;
mod one_path;
mod resources;
mod schemas;
mod tools_list;
