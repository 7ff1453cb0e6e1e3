//! `read_multiple_files`: a bounded batch of whole-file reads, each failure
//! reported inline. Touches: scope, file.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use super::{Ctx, Output};
use crate::error::{Error, Result};
use crate::file;

/// The tool description.
pub const DESCRIPTION: &str = "Read the contents of multiple files simultaneously. This is more efficient than reading files one by one when you need to analyze or compare multiple files. Each file's content is returned with its path as a reference. Failed reads for individual files won't stop the entire operation. Only works within allowed directories.";

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
        return Err(Error::Invalid(
            "Invalid arguments for tool read_multiple_files: paths must hold at least 1 item"
                .to_owned(),
        ));
    }
    let max = ctx.limits.max_paths_per_batch;
    if p.paths.len() > max {
        return Err(Error::Limit(format!(
            "Too many paths: {} given, the limit is {max} per call",
            p.paths.len()
        )));
    }
    let mut budget = ctx.limits.max_batch_bytes;
    // One output string, appended to in place: each file's bytes are held
    // once, then copied once into it.
    let mut out = String::new();
    for (i, path) in p.paths.iter().enumerate() {
        if ctx.cancel.is_cancelled() {
            return Err(Error::Invalid("The request was cancelled".to_owned()));
        }
        if i > 0 {
            out.push_str("\n---\n");
        }
        let limit = ctx.limits.max_read_bytes.min(budget);
        let read = ctx
            .scope
            .resolve(path)
            .and_then(|t| file::read_all(&t.root.dir, &t.rel(), path, limit));
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
