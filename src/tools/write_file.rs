//! `write_file`: create or replace a file's whole content, atomically.
//! Touches: scope, atomic.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use super::{Capability, Ctx, Hints, Output, OutputKind, Plan, Tool, params, schema};
use crate::error::Result;
use crate::fs::atomic;

/// The tool description.
pub const DESCRIPTION: &str = "Create a new file or completely overwrite an existing file with new content. Use with caution: it overwrites without warning. The file is replaced atomically and keeps its permissions.";

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Write,
    title: "Write File",
    description: DESCRIPTION,
    hints: Hints::write(true, true),
    input: schema::<Params>,
    output: OutputKind::Text,
    plan: Plan::small,
    run: |ctx, args| run(ctx, params(NAME, args)?),
};

const NAME: &str = "write_file";

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    /// The file to create or overwrite.
    pub path: String,
    /// The complete new content.
    pub content: String,
}

/// Writes the file through the one writer.
pub fn run(ctx: &Ctx, p: Params) -> Result<Output> {
    let t = ctx.scope.resolve(&p.path)?;
    atomic::write(&t, p.content.as_bytes())?;
    Ok(Output::Text(format!("Successfully wrote to {}", p.path)))
}
