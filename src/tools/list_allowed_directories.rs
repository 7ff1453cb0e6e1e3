//! `list_allowed_directories`: the roots in force. Touches: scope.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use super::{Capability, Ctx, Hints, Notes, Output, OutputKind, Plan, Tool, params, schema};
use crate::error::Result;

/// The tool description.
pub const DESCRIPTION: &str = "List the directories this server may access (everything beneath them is accessible too). Use it to learn which paths are available before using other tools.";

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Read,
    title: "List Allowed Directories",
    description: DESCRIPTION,
    hints: Hints::READ_ONLY,
    input: schema::<Params>,
    paths: &[],
    output: OutputKind::Text,
    plan: Plan::small,
    notes: Notes::NONE,
    run: |ctx, args| run(ctx, params(NAME, args)?),
};

const NAME: &str = "list_allowed_directories";

/// No parameters; unknown ones are refused.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {}

/// Lists each root's spellings; when the client's roots left none in force,
/// says so and why, on the header line.
pub fn run(ctx: &Ctx, _p: Params) -> Result<Output> {
    if let Some(why) = ctx.scope.why_none() {
        return Ok(Output::Text(format!(
            "Allowed directories: none in this session: {why}"
        )));
    }
    let mut text = String::from("Allowed directories:\n");
    let roots = ctx.scope.roots();
    let spellings: Vec<_> = roots
        .iter()
        .flat_map(|r| r.spellings())
        .map(crate::text::fmt::printable)
        .collect();
    text.push_str(&spellings.join("\n"));
    // Path rules: say that protections are in force and which paths are
    // read-only; never name what is hidden.
    let (mut ro, mut exempt) = (Vec::new(), Vec::new());
    let mut any = false;
    for r in roots.iter() {
        any |= !r.rules.is_empty();
        let (a, b) = r.rules.read_only_patterns();
        for p in a {
            if !ro.contains(&p) {
                ro.push(p);
            }
        }
        for p in b {
            if !exempt.contains(&p) {
                exempt.push(p);
            }
        }
    }
    if any {
        text.push_str("\n\nPath rules are in force.");
        if !ro.is_empty() {
            text.push_str(" Read-only (.gitignore patterns, relative to each directory): ");
            text.push_str(&crate::text::fmt::printable(&ro.join(", ")));
        }
        if !exempt.is_empty() {
            let exempt: Vec<&str> = exempt.iter().map(|p| p.trim_start_matches("**/")).collect();
            text.push_str(" (except ");
            text.push_str(&crate::text::fmt::printable(&exempt.join(", ")));
            text.push(')');
        }
    }
    Ok(Output::Text(text))
}
