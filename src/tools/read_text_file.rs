//! `read_text_file`: a bounded UTF-8 read of one file, or its first or last
//! lines. Touches: scope, file.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use super::{Capability, Ctx, Hints, Output, OutputKind, Tool, params, schema};
use crate::error::{Error, Result};
use crate::fs::file;

/// The tool description.
pub const DESCRIPTION: &str = "Read the complete contents of a file from the file system as text. Invalid UTF-8 bytes are shown as U+FFFD. Use this tool when you need to examine the contents of a single file. Use the 'head' parameter to read only the first N lines of a file, or the 'tail' parameter to read only the last N lines of a file. Operates on the file as text regardless of extension. Only works within allowed directories; files above the read limit must be read with head or tail.";

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Read,
    title: "Read Text File",
    description: DESCRIPTION,
    hints: Hints::READ_ONLY,
    input: schema::<Params>,
    output: OutputKind::Text,
    run: |ctx, args| run(ctx, params(NAME, args)?),
};

const NAME: &str = "read_text_file";

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The file to read.
    pub path: String,
    /// If provided, returns only the last N lines of the file
    #[serde(default)]
    #[schemars(with = "f64")]
    pub tail: Option<f64>,
    /// If provided, returns only the first N lines of the file
    #[serde(default)]
    #[schemars(with = "f64")]
    pub head: Option<f64>,
}

/// Reads the file, whole or by head/tail. A `head` or `tail` of 0 means
/// "not given", as in the reference.
pub fn run(ctx: &Ctx, p: Params) -> Result<Output> {
    let head = p.head.filter(|n| *n != 0.0);
    let tail = p.tail.filter(|n| *n != 0.0);
    let t = ctx.scope.resolve(&p.path)?;
    let limit = ctx.limits.max_read_bytes;
    let text = match (head, tail) {
        (Some(_), Some(_)) => {
            return Err(Error::HeadAndTail);
        }
        (Some(n), None) => file::read_head(&t, n, limit)?,
        (None, Some(n)) => file::read_tail(&t, n, limit)?,
        (None, None) => {
            let bytes = file::read_all(&t, limit)?;
            match String::from_utf8(bytes) {
                Ok(s) => s,
                Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            }
        }
    };
    Ok(Output::Text(text))
}
