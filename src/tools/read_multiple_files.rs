//! `read_multiple_files`: a bounded batch of whole-file reads, each failure
//! reported inline. Touches: scope, file.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use super::{Capability, Ctx, Hints, Output, OutputKind, Tool, params, schema};
use crate::error::{Error, Result};
use crate::fs::file;

/// The tool description.
pub const DESCRIPTION: &str = "Read the contents of multiple files simultaneously. This is more efficient than reading files one by one when you need to analyze or compare multiple files. Each file's content is returned with its path as a reference. Failed reads for individual files won't stop the entire operation. Only works within allowed directories.";

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Read,
    title: "Read Multiple Files",
    description: DESCRIPTION,
    hints: Hints::READ_ONLY,
    input: schema::<Params>,
    output: OutputKind::Text,
    run: |ctx, args| run(ctx, params(NAME, args)?),
};

const NAME: &str = "read_multiple_files";

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Array of file paths to read. Each path must be a string pointing to a valid file within allowed directories.
    #[schemars(length(min = 1))]
    pub paths: Vec<String>,
}

/// Reads each path in order; `path:\ncontent\n` or `path: Error - message`,
/// joined by `\n---\n`.
pub fn run(ctx: &Ctx, p: Params) -> Result<Output> {
    if p.paths.is_empty() {
        return Err(Error::EmptyList {
            tool: NAME,
            field: "paths",
        });
    }
    let max = ctx.limits.max_paths_per_batch;
    if p.paths.len() > max {
        return Err(Error::TooManyPaths {
            given: p.paths.len(),
            limit: max,
        });
    }
    let mut budget = ctx.limits.max_batch_bytes;
    // One output string, appended to in place: each file's bytes are held
    // once, then copied once into it.
    let mut out = String::new();
    for (i, path) in p.paths.iter().enumerate() {
        if ctx.cancel.is_cancelled() {
            return Err(Error::Cancelled);
        }
        if i > 0 {
            out.push_str("\n---\n");
        }
        let limit = ctx.limits.max_read_bytes.min(budget);
        let read = ctx
            .scope
            .resolve(path)
            .and_then(|t| file::read_all(&t, limit));
        match read {
            Ok(bytes) => {
                budget = budget.saturating_sub(bytes.len() as u64);
                out.push_str(path);
                out.push_str(":\n");
                out.push_str(&String::from_utf8_lossy(&bytes));
                out.push('\n');
            }
            Err(e) => {
                out.push_str(path);
                out.push_str(": Error - ");
                out.push_str(&e.to_string());
            }
        }
    }
    Ok(Output::Text(out))
}
