//! `write_file`: create or replace a file's whole content, atomically.
//! Touches: scope, atomic.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use super::{Capability, Ctx, Hints, Output, OutputKind, Tool, params, schema};
use crate::error::Result;
use crate::fs::atomic;
use crate::fs::ifmatch::Condition;

/// The tool description.
pub const DESCRIPTION: &str = "Create a new file or completely overwrite an existing file with new content. Use with caution as it will overwrite existing files without warning. The content is written verbatim as UTF-8 to a temporary file in the same directory and renamed into place, so the file holds either the old or the new content, never a mix; the file's permission bits are kept. The parent directory must exist. A symbolic link is followed to its target inside the allowed directories (the link stays a link). Read-only files (no write permission bits) are refused. Only works within allowed directories.";

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Write,
    title: "Write File",
    description: DESCRIPTION,
    hints: Hints::write(true, true),
    input: schema::<Params>,
    output: OutputKind::Versioned,
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
    /// Write only if the file is still at this version (from a read's or get_file_info's `version`); otherwise nothing is written and the reply gives the current version.
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
    };
    let version = atomic::write_if(&t, p.content.as_bytes(), &cond)?;
    Ok(Output::Text(format!("Successfully wrote to {}", p.path)).with_version(Some(&version)))
}
