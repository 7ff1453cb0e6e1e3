//! `append_file`: add content at the end of a file, keeping the file
//! itself (a file with other hard links is replaced, so they keep their
//! bytes). Touches: scope, append.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use super::{Bound, Capability, Ctx, Hints, Notes, Output, OutputKind, Plan, Tool, params, schema};
use crate::error::Result;
use crate::fs::append;
use crate::fs::ifmatch::Condition;

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Write,
    title: "Append File",
    description: "Append content to a file exactly as given (no newline added), creating it if missing; keeps its permissions and identity.",
    hints: Hints::write(false, false),
    input: schema::<Params>,
    paths: &["path"],
    output: OutputKind::Text,
    plan: Plan::append,
    notes: Notes {
        advice: None,
        bound: Some(Bound::Own(|_| {
            format!(
                "One append_file adds at most {} bytes.",
                crate::limits::MAX_APPEND_BYTES
            )
        })),
    },
    run: |ctx, args| run(ctx, params(NAME, args)?),
};

const NAME: &str = "append_file";

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    /// The file to append to.
    pub path: String,
    /// The content to add at the end.
    pub content: String,
    /// Refuse unless the file is at this version.
    #[serde(default)]
    #[schemars(with = "String")]
    pub if_match: Option<String>,
}

/// Appends through the core.
pub fn run(ctx: &Ctx, p: Params) -> Result<Output> {
    let t = ctx.scope.resolve(&p.path)?;
    let cond = Condition {
        if_match: p.if_match.as_deref(),
        // An append replaces no content: --require-if-match leaves it be.
        require: false,
        limit: ctx.limits.max_read_bytes,
        op: "append to",
        tool: NAME,
        readers: super::version_readers(),
    };
    append::append(&t, p.content.as_bytes(), &cond, &ctx.io)?;
    Ok(Output::Text(format!("Successfully appended to {}", p.path)))
}
