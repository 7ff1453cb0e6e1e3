//! JSON-RPC error replies: the one place their codes and texts are
//! composed.
//!
//! Owns: every `error` object tuls itself puts in a JSON-RPC reply (a line
//! that is no message, a request refused before it runs, a call to a tool
//! that is not enabled, a `_meta` that lacks what the 2026-07-28 lifecycle
//! needs, an unknown method). A tool's own failure is not one of them: it
//! is an `isError` result ([`super::reply`]). rmcp composes the errors of
//! the requests it answers itself (`initialize`, `tools/list`, `ping`).
//! May touch: nothing.

use rmcp::model::{ErrorCode, ErrorData, ProtocolVersion};

/// Server error (JSON-RPC's implementation-defined range): every call slot
/// is held by calls waiting for the client's roots answer.
pub(crate) const SERVER_BUSY: ErrorCode = ErrorCode(-32000);

/// `-32600`: a line longer than `--max-request-bytes` (`max`), discarded.
pub(crate) fn oversized(max: usize) -> ErrorData {
    ErrorData::new(
        ErrorCode::INVALID_REQUEST,
        format!(
            "Request too large: the line exceeds {max} bytes (--max-request-bytes); it was discarded"
        ),
        None,
    )
}

/// `-32600`: a line of `len` bytes whose parse would take `cost` bytes,
/// more than the whole reply budget of `budget` bytes.
pub(crate) fn too_costly(len: usize, cost: u64, budget: u64) -> ErrorData {
    ErrorData::new(
        ErrorCode::INVALID_REQUEST,
        format!(
            "Request too costly to parse: its {len} bytes would take about {} MiB of memory, more than the {} MiB reply budget (--max-pending-reply-bytes); send fewer JSON values in one request",
            cost >> 20,
            budget >> 20
        ),
        None,
    )
}

/// `-32600`: a numeric id that could not be echoed as written.
pub(crate) fn unechoable_id() -> ErrorData {
    ErrorData::new(
        ErrorCode::INVALID_REQUEST,
        "Invalid Request: a numeric id must be an integer written plainly (no fraction, exponent, leading zero or -0), so that the reply can carry it as sent",
        None,
    )
}

/// `-32600`: a request whose id a request still in flight holds (JSON-RPC
/// and MCP: an id is not reused while its request runs). The request in
/// flight goes on and gets its own answer.
pub(crate) fn id_in_use() -> ErrorData {
    ErrorData::new(
        ErrorCode::INVALID_REQUEST,
        "Invalid Request: this id is already in use by a request in flight (it was not run; the earlier request goes on). Give each request its own id",
        None,
    )
}

/// `-32600`: an `initialize` after the first.
pub(crate) fn second_initialize() -> ErrorData {
    ErrorData::new(
        ErrorCode::INVALID_REQUEST,
        "Invalid Request: this session is already initialized; a second initialize is refused (the session keeps the protocol version it negotiated). Start a new session to negotiate again",
        None,
    )
}

/// [`SERVER_BUSY`]: all `slots` call slots wait for the client's roots.
pub(crate) fn busy(slots: usize) -> ErrorData {
    ErrorData::new(
        SERVER_BUSY,
        format!(
            "Server busy: all {slots} call slots are held by calls waiting for the client's roots/list answer; this request was not run. Send it again once roots/list is answered"
        ),
        None,
    )
}

/// `-32600`: valid JSON nested past serde_json's depth limit.
pub(crate) fn too_deep() -> ErrorData {
    ErrorData::new(
        ErrorCode::INVALID_REQUEST,
        "Invalid Request: the message nests deeper than 128 levels",
        None,
    )
}

/// `-32700`: a line that is not JSON (`e` says where).
pub(crate) fn parse_error(e: &serde_json::Error) -> ErrorData {
    ErrorData::new(
        ErrorCode::PARSE_ERROR,
        format!("Parse error: the line is not valid JSON ({e})"),
        None,
    )
}

/// `-32600`: JSON that is no JSON-RPC 2.0 message tuls reads.
pub(crate) fn not_a_message() -> ErrorData {
    ErrorData::new(
        ErrorCode::INVALID_REQUEST,
        "Invalid Request: the line is JSON but not a JSON-RPC 2.0 message that this server accepts",
        None,
    )
}

/// `-32602`, rmcp's text: a request whose `_meta` lacks the `missing`
/// fields its lifecycle needs.
pub(crate) fn missing_meta(missing: &[&str]) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "request _meta is missing or has malformed required fields: {}",
            missing.join(", ")
        ),
        None,
    )
}

/// `-32602`, rmcp's text: a call to a tool that is not enabled (exactly
/// the refusal of an unknown tool).
pub(crate) fn unknown_tool(name: &str) -> ErrorData {
    ErrorData::invalid_params(format!("Tool {name} not found"), None)
}

/// `-32601`: a method tuls does not serve.
pub(crate) fn method_not_found(method: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("Method not found: {method}"),
        None,
    )
}

/// rmcp's refusal of a request in a protocol version tuls does not speak
/// (`supported` lists those it does).
pub(crate) fn unsupported_version(v: ProtocolVersion, supported: &[ProtocolVersion]) -> ErrorData {
    ErrorData::unsupported_protocol_version(v, supported)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::lints::tools::{offending, rust_files};

    /// No other file in `src/` builds a JSON-RPC error object: a new
    /// refusal gets its constructor here, beside the others.
    #[test]
    fn json_rpc_errors_are_composed_only_here() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let mut found = Vec::new();
        for file in files.iter().filter(|f| !f.ends_with("mcp/rpc_error.rs")) {
            #[allow(clippy::disallowed_methods)] // the crate's own source
            let text = std::fs::read_to_string(file).expect("a source file");
            for what in ["ErrorData::", "McpError::", "ErrorCode("] {
                for line in offending(&text, what) {
                    found.push(format!("{}:{line}: {what}", file.display()));
                }
            }
        }
        assert!(
            found.is_empty(),
            "JSON-RPC errors composed outside src/mcp/rpc_error.rs:\n{}",
            found.join("\n")
        );
    }
}
