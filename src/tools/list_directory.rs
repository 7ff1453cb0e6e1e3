//! `list_directory`: one directory's entries, `[DIR]`, `[FILE]` or `[LINK]`,
//! never following a symlink. Touches: scope, walk.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use super::{Capability, Ctx, Hints, Output, OutputKind, Tool, params, schema};
use crate::error::Result;
use crate::fs::walk::{self, Kind};
use crate::text::fmt::printable;

/// The tool description.
pub const DESCRIPTION: &str = "Get a detailed listing of all files and directories in a specified path. Results clearly distinguish between files, directories and symbolic links with [FILE], [DIR] and [LINK] prefixes. This tool is essential for understanding directory structure and finding specific files within a directory. Only works within allowed directories.";

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Read,
    title: "List Directory",
    description: DESCRIPTION,
    hints: Hints::READ_ONLY,
    input: schema::<Params>,
    output: OutputKind::Text,
    run: |ctx, args| run(ctx, params(NAME, args)?),
};

const NAME: &str = "list_directory";

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The directory to list.
    pub path: String,
}

/// The line prefix for an entry kind.
pub fn prefix(kind: Kind) -> &'static str {
    match kind {
        Kind::Dir => "[DIR]",
        Kind::Symlink => "[LINK]",
        Kind::File | Kind::Other => "[FILE]",
    }
}

/// Lists the directory in byte order of names.
pub fn run(ctx: &Ctx, p: Params) -> Result<Output> {
    let t = ctx.scope.resolve(&p.path)?;
    let (entries, truncated) = walk::read_entries(&t, false, ctx.limits.max_list_entries)?;
    let mut lines: Vec<String> = entries
        .iter()
        .map(|e| format!("{} {}", prefix(e.kind), printable(&e.name)))
        .collect();
    if truncated {
        lines.push(crate::text::fmt::list_truncated_line(
            ctx.limits.max_list_entries,
        ));
    }
    Ok(Output::Text(lines.join("\n")))
}
