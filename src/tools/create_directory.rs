//! `create_directory`: `mkdir -p` through the core ([`crate::fs::mkdir`]),
//! which makes each missing component beneath the root. Touches: scope,
//! mkdir.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use super::{Capability, Ctx, Hints, Notes, Output, OutputKind, Plan, Tool, params, schema};
use crate::error::Result;
use crate::fs::mkdir;

/// The tool description.
pub const DESCRIPTION: &str =
    "Create a directory, with any missing parents. Succeeds silently if it already exists.";

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Write,
    title: "Create Directory",
    description: DESCRIPTION,
    hints: Hints::write(true, false),
    input: schema::<Params>,
    paths: &["path"],
    output: OutputKind::Text,
    plan: Plan::small,
    notes: Notes::NONE,
    run: |ctx, args| run(ctx, params(NAME, args)?),
};

const NAME: &str = "create_directory";

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    /// The directory to create, with any missing parents.
    pub path: String,
}

/// Creates the directory and its missing parents through the core.
pub fn run(ctx: &Ctx, p: Params) -> Result<Output> {
    let t = ctx.scope.resolve(&p.path)?;
    mkdir::create_dir_all(&t, &ctx.io.recorder)?;
    Ok(Output::Text(format!(
        "Successfully created directory {}",
        p.path
    )))
}
