//! `read_media_file`: one bounded file as a base64 image, audio or embedded
//! resource block, typed by extension as in the reference. Touches: scope, file.

use base64::Engine as _;
use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;
use serde_json::json;

use super::{Ctx, Output};
use crate::error::Result;
use crate::file;

/// The tool description.
pub const DESCRIPTION: &str = "Read a file and return it as a base64-encoded content block with its MIME type. Image and audio files are returned as image/audio content; any other file type is returned as an embedded resource. Only works within allowed directories.";

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

/// Percent-encodes a path for a `file://` URI as Node's `pathToFileURL` does.
fn file_uri(path: &str) -> String {
    let mut out = String::from("file://");
    for b in path.bytes() {
        match b {
            b'A'..=b'Z'
            | b'a'..=b'z'
            | b'0'..=b'9'
            | b'/'
            | b'-'
            | b'.'
            | b'_'
            | b'~'
            | b'!'
            | b'$'
            | b'&'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b'+'
            | b','
            | b';'
            | b'='
            | b':'
            | b'@' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Reads the file and builds the block.
pub fn run(ctx: &Ctx, p: Params) -> Result<Output> {
    let t = ctx.scope.resolve(&p.path)?;
    let bytes = file::read_all(&t.root.dir, &t.rel(), &p.path, ctx.limits.max_read_bytes)?;
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    let leaf = t.segs.last().map(String::as_str).unwrap_or("");
    let (mime, kind) = mime_for(leaf);
    let block = if kind == "resource" {
        json!({"type": "resource", "resource": {"uri": file_uri(&t.display()), "mimeType": mime, "blob": data}})
    } else {
        json!({"type": kind, "data": data, "mimeType": mime})
    };
    Ok(Output::Media(block))
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

    #[test]
    fn uri_encoding() {
        assert_eq!(file_uri("/b/with space.txt"), "file:///b/with%20space.txt");
        assert_eq!(file_uri("/b/é#?%"), "file:///b/%C3%A9%23%3F%25");
    }
}
