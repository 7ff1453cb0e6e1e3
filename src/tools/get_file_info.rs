//! `get_file_info`: metadata of one path, following in-root symlinks as the
//! reference does. Times are printed in UTC; a regular file's version (the
//! hash of its content) goes in `structuredContent`. Touches: scope, file.

use std::time::{SystemTime, UNIX_EPOCH};

use cap_std::fs::MetadataExt;
use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use super::{Capability, Ctx, Hints, Notes, Output, OutputKind, Plan, Tool, params, schema};
use crate::error::Result;
use crate::fs::file;

/// The tool description.
pub const DESCRIPTION: &str = "Get the metadata of a file or directory: size, creation, modification and access times, permissions and type.";

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Read,
    title: "Get File Info",
    description: DESCRIPTION,
    hints: Hints::READ_ONLY,
    input: schema::<Params>,
    paths: &["path"],
    output: OutputKind::Versioned,
    plan: Plan::small,
    notes: Notes::NONE,
    run: |ctx, args| run(ctx, params(NAME, args)?),
};

const NAME: &str = "get_file_info";

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The file or directory.
    pub path: String,
}

/// Formats a time like JavaScript's `Date#toString()` in UTC.
pub fn js_date(t: std::io::Result<SystemTime>) -> String {
    let secs = t
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let dt = chrono::DateTime::from_timestamp(secs, 0).unwrap_or_default();
    dt.format("%a %b %d %Y %H:%M:%S GMT+0000 (Coordinated Universal Time)")
        .to_string()
}

/// Stats the path.
pub fn run(ctx: &Ctx, p: Params) -> Result<Output> {
    let t = ctx.scope.resolve(&p.path)?;
    let md = t.metadata("stat")?;
    let text = format!(
        "size: {}\ncreated: {}\nmodified: {}\naccessed: {}\nisDirectory: {}\nisFile: {}\npermissions: {:03o}",
        md.len(),
        js_date(md.created().map(|t| t.into_std())),
        js_date(md.modified().map(|t| t.into_std())),
        js_date(md.accessed().map(|t| t.into_std())),
        md.is_dir(),
        md.is_file(),
        md.mode() & 0o777,
    );
    // A regular file within the read limit has a version (the reference's
    // text is kept: the version goes in `structuredContent`, and in the
    // text only where every write must name one, `--require-if-match`).
    let version = if md.is_file() {
        // One it cannot read (no read permission) just has none.
        file::version(&t, ctx.limits.max_read_bytes).ok().flatten()
    } else {
        None
    };
    let mut text = text;
    if ctx.limits.require_if_match
        && let Some(v) = &version
    {
        text.push_str(&format!("\nversion: {v}"));
    }
    Ok(Output::Text(text).with_version(version.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_format() {
        let t = UNIX_EPOCH + std::time::Duration::from_secs(1_796_014_062);
        assert_eq!(
            js_date(Ok(t)),
            "Mon Nov 30 2026 04:47:42 GMT+0000 (Coordinated Universal Time)"
        );
    }
}
