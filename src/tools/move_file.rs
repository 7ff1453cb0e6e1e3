//! `move_file`: rename without ever replacing, in one syscall. Touches:
//! scope, rename.
//!
//! The move is [`crate::fs::rename`]'s: both parents opened beneath their
//! roots, `renameat2(RENAME_NOREPLACE)` on the two handles, so an existing
//! destination is never overwritten. A symlink source moves the link
//! itself, not its target (the reference moves the target). With `ifMatch`
//! the source must be a regular file at that version.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use super::{Capability, Ctx, Hints, Notes, Output, OutputKind, Plan, Tool, params, schema};
use crate::error::Result;
use crate::fs::ifmatch::Condition;
use crate::fs::rename;

/// The tool description.
pub const DESCRIPTION: &str = "Move or rename a file or directory, within a directory or across directories. Fails if the destination exists.";

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Write,
    title: "Move File",
    description: DESCRIPTION,
    hints: Hints::write(false, true),
    input: schema::<Params>,
    paths: &["source", "destination"],
    output: OutputKind::Text,
    plan: Plan::small,
    notes: Notes::NONE,
    run: |ctx, args| run(ctx, params(NAME, args)?),
};

const NAME: &str = "move_file";

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    /// The file or directory to move.
    pub source: String,
    /// Its new path, which must not exist yet.
    pub destination: String,
    /// Refuse unless the source is at this version (a read's `version`).
    #[serde(default)]
    #[schemars(with = "String")]
    pub if_match: Option<String>,
}

/// Renames `source` to `destination` through the core, refusing to replace
/// anything.
pub fn run(ctx: &Ctx, p: Params) -> Result<Output> {
    // Links are moved, not their targets: a final symlink stays the link.
    let s = ctx.scope.resolve_link(&p.source)?;
    let d = ctx.scope.resolve_link(&p.destination)?;
    let cond = Condition {
        if_match: p.if_match.as_deref(),
        require: false, // a move replaces no content
        limit: ctx.limits.max_read_bytes,
        op: "move",
        tool: NAME,
        readers: super::version_readers(),
    };
    rename::rename(&s, &d, &cond, ctx.limits.max_walk_entries, &ctx.io.recorder)?;
    Ok(Output::Text(format!(
        "Successfully moved {} to {}",
        p.source, p.destination
    )))
}
