//! Files as MCP resources, as the reference 2.3.0 offers them: one resource
//! template, `file://{+path}`, no listing (`resources/list` is empty, so the
//! server never enumerates the disk), and `resources/read` of a `file://`
//! URI.
//!
//! Owns: the template, the URI's path, the reply's shape (text when the
//! file's type is textual and its bytes are UTF-8 without NUL, else a base64
//! blob; 2.3.0's MIME table) and the refusals. A read is a call like
//! `read_media_file`'s: it waits for pending client roots, reserves its reply
//! budget, runs on a filesystem worker against one snapshot of the roots,
//! resolved for reading by the one resolver, and reads with the same bounded
//! reader; the audit log records it. A path that is missing, hidden by a path
//! rule or outside every root (a symlink out included) is answered with one
//! error, `-32602 Resource not found: <uri>`, so that no answer tells the
//! three apart. Resources are offered only while `read_text_file` and
//! `read_media_file` are both enabled: a resource read must not reach what
//! the operator's selectors took away.
//! May touch: the filesystem only through the scope and [`crate::fs::file`].

use std::sync::Arc;

use base64::Engine as _;
use rmcp::ErrorData as McpError;
use rmcp::model::{ReadResourceResult, ResourceContents, ResourceTemplate};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::Server;
use crate::audit::CallRecord;
use crate::error::{Error, ErrorKind};
use crate::fs::file;
use crate::fs::scope::Intent;
use crate::mcp::flow::{CallBudget, Reservation};
use crate::mcp::rpc_error;
use crate::reply_budget::Plan;
use crate::text::fmt::file_uri_path;
use crate::tools::{list_directory, read_media_file, read_text_file};

/// The URI template every file resource matches (RFC 6570 reserved
/// expansion), as in the reference 2.3.0.
pub(super) const TEMPLATE: &str = "file://{+path}";

/// The template's description: the reference 2.3.0's, word for word.
fn description() -> String {
    format!(
        "A file inside the allowed directories, by its absolute file:// URI (for example file:///home/user/project/README.md). Text files are returned as text, other files as a base64 blob with their MIME type. Directories are not resources; use the {} tool to find files.",
        list_directory::TOOL.name
    )
}

/// What `resources/read` is called in the audit log.
const AUDIT_NAME: &str = "resources/read";

/// The one resource template.
pub(super) fn template() -> ResourceTemplate {
    ResourceTemplate::new(TEMPLATE, "file")
        .with_title("File")
        .with_description(description())
}

/// Whether resources are offered under `enabled` (the selectors): only
/// while both tools whose reads a resource read stands in for are.
pub(super) fn offered(enabled: impl Fn(&str) -> bool) -> bool {
    enabled(read_text_file::TOOL.name) && enabled(read_media_file::TOOL.name)
}

/// The reference 2.3.0's MIME types by lowercase extension (with its dot).
fn known_mime(ext: &str) -> Option<&'static str> {
    Some(match ext {
        ".txt" => "text/plain",
        ".md" => "text/markdown",
        ".csv" => "text/csv",
        ".html" | ".htm" => "text/html",
        ".css" => "text/css",
        ".js" | ".mjs" => "text/javascript",
        ".ts" => "text/typescript",
        ".json" => "application/json",
        ".xml" => "application/xml",
        ".yaml" | ".yml" => "application/yaml",
        ".svg" => "image/svg+xml",
        ".png" => "image/png",
        ".jpg" | ".jpeg" => "image/jpeg",
        ".gif" => "image/gif",
        ".webp" => "image/webp",
        ".bmp" => "image/bmp",
        ".ico" => "image/x-icon",
        ".mp3" => "audio/mpeg",
        ".wav" => "audio/wav",
        ".ogg" => "audio/ogg",
        ".flac" => "audio/flac",
        ".mp4" => "video/mp4",
        ".pdf" => "application/pdf",
        ".zip" => "application/zip",
        ".gz" => "application/gzip",
        _ => return None,
    })
}

/// Node's `path.extname` of a file name, lowercased: from its last dot,
/// none for a name whose only dot leads it (`.env`).
fn extension(name: &str) -> String {
    match name.rfind('.') {
        Some(i) if i > 0 && !name.bytes().all(|b| b == b'.') => {
            name.get(i..).unwrap_or("").to_ascii_lowercase()
        }
        _ => String::new(),
    }
}

/// The contents of one file resource named `name` (its last component):
/// text when its type is textual, or unknown and its bytes are UTF-8 with
/// no NUL; a base64 blob with its MIME type otherwise.
pub(super) fn contents(uri: &str, name: &str, bytes: Vec<u8>) -> ResourceContents {
    let known = known_mime(&extension(name));
    let textual = known.is_none_or(|m| {
        m.starts_with("text/")
            || matches!(
                m,
                "application/json" | "application/xml" | "application/yaml" | "image/svg+xml"
            )
    });
    let bytes = if textual && !bytes.contains(&0) {
        match String::from_utf8(bytes) {
            Ok(text) => {
                return ResourceContents::TextResourceContents {
                    uri: uri.to_owned(),
                    mime_type: Some(known.unwrap_or("text/plain").to_owned()),
                    text,
                    meta: None,
                };
            }
            Err(e) => e.into_bytes(),
        }
    } else {
        bytes
    };
    ResourceContents::BlobResourceContents {
        uri: uri.to_owned(),
        mime_type: Some(known.unwrap_or("application/octet-stream").to_owned()),
        blob: base64::engine::general_purpose::STANDARD.encode(&bytes),
        meta: None,
    }
}

/// The path a `file://` URI names (percent-decoded; a query or fragment is
/// not part of it), and the URI the reply names it by (`localhost`
/// dropped). A URI of another scheme names no file resource.
fn parse(uri: &str) -> Result<(String, String), McpError> {
    let lower = uri.get(..7).map(str::to_ascii_lowercase);
    if lower.as_deref() != Some("file://") {
        return Err(rpc_error::resource_not_found(uri));
    }
    let rest = uri.get(7..).unwrap_or("");
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let rest = match rest.get(..9) {
        Some(host) if host.eq_ignore_ascii_case("localhost") => rest.get(9..).unwrap_or(""),
        _ => rest,
    };
    if !rest.starts_with('/') {
        return Err(rpc_error::invalid_file_uri(
            uri,
            "its host must be \"localhost\" or empty",
        ));
    }
    let shown = format!("file://{rest}");
    let path = file_uri_path(&shown).ok_or_else(|| {
        rpc_error::invalid_file_uri(uri, "it is not a percent-encoded UTF-8 path")
    })?;
    Ok((path, shown))
}

/// The JSON-RPC error of a refused read of `uri`: a missing, hidden or
/// outside path (and a dangling or looping symlink) all get the one
/// not-found error; a directory is not a resource; a failure of tuls
/// itself is an internal error; any other refusal keeps its text.
pub(super) fn refusal(uri: &str, e: &Error) -> McpError {
    match e {
        Error::OutsideRoots { .. }
        | Error::DanglingSymlink { .. }
        | Error::ParentMissing { .. } => rpc_error::resource_not_found(uri),
        Error::Os { code, .. } if matches!(*code, "ENOENT" | "ENOTDIR" | "ELOOP") => {
            rpc_error::resource_not_found(uri)
        }
        Error::Os { code: "EISDIR", .. } => rpc_error::resource_is_directory(uri),
        e if e.kind() == ErrorKind::Internal => rpc_error::resource_failed(&e.to_string()),
        e => rpc_error::resource_refused(&e.to_string()),
    }
}

impl Server {
    /// Whether this server offers resources (see [`offered`]).
    pub(super) fn serves_resources(&self) -> bool {
        offered(|t| self.inner.policy.is_enabled(t))
    }

    /// `resources/read` of `uri`: waits, bounded, for pending client roots,
    /// reserves the reply budget of a media read, and reads on a worker.
    pub(super) async fn read_file_resource(
        &self,
        uri: &str,
        cancel: CancellationToken,
    ) -> Result<ReadResourceResult, McpError> {
        if !self.serves_resources() {
            return Err(rpc_error::method_not_found("resources/read"));
        }
        let (path, shown) = parse(uri)?;
        self.inner
            .roots
            .wait_ready()
            .await
            .map_err(|e| refusal(uri, &e))?;
        let plan = Plan::media(&self.inner.limits);
        let reserved = self.inner.flow.reserve_with(None, plan.upfront).await;
        let server = self.clone();
        let given = uri.to_owned();
        let read = move || server.read_on_worker(&given, &path, &shown, plan, reserved, cancel);
        match self.inner.workers.run(read).await {
            Ok(r) => r,
            Err(_) => {
                tracing::error!("a resource read panicked; the request failed, the server goes on");
                Err(rpc_error::resource_failed("the read failed inside tuls"))
            }
        }
    }

    /// On a worker: resolves and reads the file as `read_media_file` does,
    /// records the read in the audit log, and shapes the reply. The reply
    /// budget is held until the result is handed to rmcp.
    fn read_on_worker(
        &self,
        uri: &str,
        path: &str,
        shown: &str,
        plan: Plan,
        reserved: Option<Reservation>,
        cancel: CancellationToken,
    ) -> Result<ReadResourceResult, McpError> {
        let limits = self.inner.limits;
        let budget = Arc::new(CallBudget::new(
            self.inner.flow.clone(),
            plan,
            reserved,
            limits.max_read_bytes,
            cancel.clone(),
        ));
        let (ctx, note) = self.ctx(Intent::Read, cancel, None, budget);
        let read = ctx.scope.resolve(path).and_then(|t| {
            let bytes = file::read_all(&ctx.io, &t, limits.max_read_bytes)?;
            Ok((t.segs.last().cloned().unwrap_or_default(), bytes))
        });
        if let Some(audit) = self.inner.audit.as_deref() {
            let mut note = note.map(|n| n.take()).unwrap_or_default();
            let given = [path.to_owned()];
            let paths = given
                .iter()
                .zip(note.canonical(&given))
                .map(|(g, canonical)| json!({"given": g, "canonical": canonical}))
                .collect();
            audit.record(CallRecord {
                tool: AUDIT_NAME,
                paths,
                outcome: if read.is_ok() { "ok" } else { "error" },
                error: read.as_ref().err().map(Error::name),
                mutation: false,
                note,
            });
        }
        let (name, bytes) = read.map_err(|e| refusal(uri, &e))?;
        Ok(ReadResourceResult::new(vec![contents(shown, &name, bytes)]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_is_nodes_extname() {
        assert_eq!(extension("a.TXT"), ".txt");
        assert_eq!(extension(".env"), "");
        assert_eq!(extension("noext"), "");
        assert_eq!(extension("a.tar.gz"), ".gz");
        assert_eq!(extension(".."), "");
    }

    #[test]
    fn text_or_blob_as_in_the_reference() {
        let text = |c: ResourceContents| matches!(c, ResourceContents::TextResourceContents { .. });
        assert!(text(contents("u", "a.txt", b"hi".to_vec())));
        assert!(text(contents("u", "noext", b"hi".to_vec())));
        assert!(text(contents("u", "x.json", b"{}".to_vec())));
        assert!(!text(contents("u", "a.txt", vec![0xe9])));
        assert!(!text(contents("u", "a.txt", b"a\0b".to_vec())));
        assert!(!text(contents("u", "a.png", b"hi".to_vec())));
    }

    #[test]
    fn uris() {
        let p = |u: &str| parse(u).map_err(|e| e.code.0);
        assert_eq!(
            p("file:///r/a%20b.txt?x#y"),
            Ok(("/r/a b.txt".into(), "file:///r/a%20b.txt".into()))
        );
        assert_eq!(
            p("file://localhost/r/a"),
            Ok(("/r/a".into(), "file:///r/a".into()))
        );
        assert_eq!(p("file://other/r/a"), Err(-32602));
        assert_eq!(p("http://x/y"), Err(-32602));
        assert_eq!(p("file:///r/%ff"), Err(-32602));
    }
}
