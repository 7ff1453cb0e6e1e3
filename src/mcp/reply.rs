//! Tool results and errors as MCP replies: the one mapping.
//!
//! Owns: turning a tool's [`Output`] or [`Error`] into a `CallToolResult`.
//! A successful result is built without `structuredContent`: the writer in
//! [`super::stdio`] writes `{"content": <text>}` (a text block) or
//! `{"content": [<block>]}` (a media block) from the one content block
//! itself, so a large reply is never held twice. In-process callers (the
//! fuzz targets) add it with [`with_structured_content`].
//! May touch: nothing (no I/O).

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;

use crate::error::Error;
use crate::tools::Output;

/// The reply to one tool call.
pub fn tool_result(result: Result<Output, Error>) -> CallToolResult {
    match result {
        Ok(Output::Text(text)) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Ok(Output::Media(v)) => match serde_json::from_value::<ContentBlock>(v) {
            Ok(block) => CallToolResult::success(vec![block]),
            Err(e) => tool_result(Err(Error::Internal(format!(
                "cannot build media block: {e}"
            )))),
        },
        Ok(Output::Structured { text, data }) => {
            let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
            r.structured_content = Some(data);
            r
        }
        Err(e) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
    }
}

/// Whether the writer adds `structuredContent` to `r`: a successful result
/// with one content block and none of its own.
pub fn mirrors(r: &CallToolResult) -> bool {
    r.is_error != Some(true) && r.structured_content.is_none() && r.content.len() == 1
}

/// `r` with the `structuredContent` the writer would write, for callers
/// that use a result in process rather than through [`super::stdio`].
pub fn with_structured_content(mut r: CallToolResult) -> CallToolResult {
    if mirrors(&r)
        && let Some(block) = r.content.first()
    {
        r.structured_content = Some(match block.as_text() {
            Some(t) => json!({ "content": t.text }),
            None => json!({ "content": [block] }),
        });
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_have_no_structured_content() {
        let r = tool_result(Err(Error::Cancelled));
        assert_eq!(r.is_error, Some(true));
        assert!(!mirrors(&r));
        assert_eq!(with_structured_content(r.clone()), r);
    }

    #[test]
    fn structured_results_carry_their_own_data() {
        let r = tool_result(Ok(Output::Structured {
            text: "t".into(),
            data: json!({"matches": []}),
        }));
        assert!(!mirrors(&r));
        assert_eq!(r.structured_content, Some(json!({"matches": []})));
        assert_eq!(with_structured_content(r.clone()), r);
    }

    #[test]
    fn text_and_media_mirror_their_block() {
        let r = with_structured_content(tool_result(Ok(Output::Text("a\"b".into()))));
        assert_eq!(r.structured_content, Some(json!({"content": "a\"b"})));
        let img = json!({"type": "image", "data": "aGk=", "mimeType": "image/png"});
        let r = with_structured_content(tool_result(Ok(Output::Media(img.clone()))));
        assert_eq!(r.structured_content, Some(json!({"content": [img]})));
    }
}
