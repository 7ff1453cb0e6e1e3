//! The wire shape of one message: a successful tool result gets its
//! `structuredContent` written from its one content block
//! ([`crate::mcp::reply::mirrors`]), so the text is held once.
//!
//! Owns: the serde shapes of a mirrored reply, and [`write_framed`], which
//! both the writer and `splice` (for the frame around a large text) use.
//! May touch: the writer it is given.

use rmcp::RoleServer;
use rmcp::model::{CallToolResult, JsonRpcMessage, RequestId, ServerResult};
use rmcp::service::TxJsonRpcMessage;
use serde::Serialize;

use crate::mcp::reply::mirrors;

#[derive(Serialize)]
struct Envelope<'a, R> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    result: R,
}

#[derive(Serialize)]
struct Mirrored<'a> {
    #[serde(flatten)]
    result: &'a CallToolResult,
    #[serde(rename = "structuredContent")]
    structured: Mirror<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Mirror<'a> {
    Text {
        content: &'a str,
        #[serde(flatten)]
        extra: Extra<'a>,
    },
    Block {
        content: [&'a rmcp::model::ContentBlock; 1],
        #[serde(flatten)]
        extra: Extra<'a>,
    },
}

/// The fields a mirrored result adds beside `content` (a `version`), taken
/// out of the result so that it is not written twice.
pub(super) type Extra<'a> = Option<&'a serde_json::Map<String, serde_json::Value>>;

/// Serializes one message through serde; a successful tool result gets its
/// `structuredContent` written from its one content block.
pub(super) fn write_framed<W: std::io::Write>(
    out: &mut W,
    item: &TxJsonRpcMessage<RoleServer>,
    extra: Extra<'_>,
) -> std::io::Result<()> {
    if let JsonRpcMessage::Response(resp) = item
        && let ServerResult::CallToolResult(r) = &resp.result
        && mirrors(r)
        && let Some(block) = r.content.first()
    {
        let structured = match block.as_text() {
            Some(t) => Mirror::Text {
                content: &t.text,
                extra,
            },
            None => Mirror::Block {
                content: [block],
                extra,
            },
        };
        let env = Envelope {
            jsonrpc: "2.0",
            id: &resp.id,
            result: Mirrored {
                result: r,
                structured,
            },
        };
        return serde_json::to_writer(out, &env).map_err(std::io::Error::other);
    }
    serde_json::to_writer(out, item).map_err(std::io::Error::other)
}
