//! `write_file`: create or replace a file's whole content, atomically.
//! Touches: scope, atomic.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use super::{Capability, Ctx, Hints, Notes, Output, OutputKind, Plan, Tool, params, schema};
use crate::error::Result;
use crate::fs::atomic;
use crate::fs::ifmatch::Condition;

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
    paths: &["path"],
    output: OutputKind::Versioned,
    plan: Plan::small,
    notes: Notes::NONE,
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
    /// Refuse unless the file is at this version (a read's `version`).
    #[serde(default)]
    #[schemars(with = "String")]
    pub if_match: Option<String>,
}

/// Writes the file through the one writer; `structuredContent` gives the
/// version written.
pub fn run(ctx: &Ctx, p: Params) -> Result<Output> {
    let t = ctx.scope.resolve(&p.path)?;
    let cond = Condition {
        if_match: p.if_match.as_deref(),
        require: ctx.limits.require_if_match,
        limit: ctx.limits.max_read_bytes,
        op: "write",
        tool: NAME,
        readers: super::version_readers(),
    };
    let version = atomic::write_if(&t, p.content.as_bytes(), &cond, &ctx.io.recorder)?;
    Ok(Output::Text(format!("Successfully wrote to {}", p.path)).with_version(Some(&version)))
}
