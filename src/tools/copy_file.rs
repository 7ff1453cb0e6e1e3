//! `copy_file`: copy one regular file to a new name, never overwriting.
//! Touches: scope, copy.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use super::{Capability, Ctx, Hints, Notes, Output, OutputKind, Plan, Tool, params, schema};
use crate::error::Result;
use crate::fs::copy;
use crate::fs::ifmatch::Condition;

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Write,
    title: "Copy File",
    description: "Copy a regular file to a new path, keeping its mode and mtime; fails if the destination exists.",
    hints: Hints::write(false, false),
    input: schema::<Params>,
    paths: &["source", "destination"],
    output: OutputKind::Text,
    plan: Plan::small,
    notes: Notes::NONE,
    run: |ctx, args| run(ctx, params(NAME, args)?),
};

const NAME: &str = "copy_file";

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    /// The file to copy.
    pub source: String,
    /// The new file's path, which must not exist yet.
    pub destination: String,
    /// Refuse unless the source is at this version.
    #[serde(default)]
    #[schemars(with = "String")]
    pub if_match: Option<String>,
}

/// Copies through the core.
pub fn run(ctx: &Ctx, p: Params) -> Result<Output> {
    let s = ctx.scope.resolve(&p.source)?;
    // The destination is a name to create: a final symlink there is kept
    // as the link (it exists), never followed.
    let d = ctx.scope.resolve_link(&p.destination)?;
    let cond = Condition {
        if_match: p.if_match.as_deref(),
        // A copy replaces nothing: its destination must not exist.
        require: false,
        limit: ctx.limits.max_read_bytes,
        op: "copy",
        tool: NAME,
        readers: super::version_readers(),
    };
    let max = ctx.limits.max_copy_bytes;
    copy::copy(&s, &d, &cond, max, &ctx.cancel, &ctx.io.recorder)?;
    Ok(Output::Text(format!(
        "Successfully copied {} to {}",
        p.source, p.destination
    )))
}
