//! `read_media_file`: one bounded file as a base64 image, audio or embedded
//! resource block, typed by extension as in the reference. Touches: scope, file.

use base64::Engine as _;
use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;
use serde_json::json;

use super::{Capability, Ctx, Hints, Notes, Output, OutputKind, Plan, Tool, params, schema};
use crate::error::Result;
use crate::fs::file;
use crate::fs::version::Version;
use crate::text::fmt::file_uri;

/// The tool description.
pub const DESCRIPTION: &str = "Read a file as a base64-encoded content block with its MIME type: image and audio files as image/audio content, any other file as an embedded resource.";

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Read,
    title: "Read Media File",
    description: DESCRIPTION,
    hints: Hints::READ_ONLY,
    input: schema::<Params>,
    paths: &["path"],
    output: OutputKind::VersionedMedia,
    plan: Plan::media,
    notes: Notes::NONE,
    run: |ctx, args| run(ctx, params(NAME, args)?),
};

const NAME: &str = "read_media_file";

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The file to read.
    pub path: String,
}

/// The reference's extension table: (MIME type, block type).
fn mime_for(name: &str) -> (&'static str, &'static str) {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "png" => ("image/png", "image"),
        "jpg" | "jpeg" => ("image/jpeg", "image"),
        "gif" => ("image/gif", "image"),
        "webp" => ("image/webp", "image"),
        "bmp" => ("image/bmp", "image"),
        "svg" => ("image/svg+xml", "image"),
        "mp3" => ("audio/mpeg", "audio"),
        "wav" => ("audio/wav", "audio"),
        "ogg" => ("audio/ogg", "audio"),
        "flac" => ("audio/flac", "audio"),
        _ => ("application/octet-stream", "resource"),
    }
}

/// The path a resource block's `file://` URI names: the client's path as
/// given when it is absolute; a relative one (which resolved against the
/// first root in force) is put after that root's path, the one place a root's
/// own path enters this reply.
fn uri_path(t: &crate::fs::scope::Target) -> String {
    if t.given.starts_with('/') {
        t.given.clone()
    } else {
        format!("{}/{}", t.root.display.trim_end_matches('/'), t.given)
    }
}

/// Reads the file and builds the block.
pub fn run(ctx: &Ctx, p: Params) -> Result<Output> {
    let t = ctx.scope.resolve(&p.path)?;
    let bytes = file::read_all(&ctx.io, &t, ctx.limits.max_read_bytes)?;
    let version = Version::of(&bytes);
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    let leaf = t.segs.last().map(String::as_str).unwrap_or("");
    let (mime, kind) = mime_for(leaf);
    let block = if kind == "resource" {
        json!({"type": "resource", "resource": {"uri": file_uri(&uri_path(&t)), "mimeType": mime, "blob": data}})
    } else {
        json!({"type": kind, "data": data, "mimeType": mime})
    };
    Ok(Output::Media(block).with_version(Some(&version)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mime_table() {
        assert_eq!(mime_for("UPPER.PNG"), ("image/png", "image"));
        assert_eq!(mime_for("a.mp3"), ("audio/mpeg", "audio"));
        assert_eq!(mime_for("doc.pdf").1, "resource");
        assert_eq!(mime_for("noext").1, "resource");
    }
}
