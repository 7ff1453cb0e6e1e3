//! Tool results and errors as MCP replies: the one mapping.
//!
//! Owns: turning a tool's [`Output`] or [`Error`] into a `CallToolResult`.
//! A successful result is built without `structuredContent` (or with only
//! the small fields it adds, such as a `version`): the writer in
//! [`super::stdio`] writes `{"content": <text>}` (a text block) or
//! `{"content": [<block>]}` (a media block), with those fields, from the
//! one content block itself, so a large reply is never held twice. In-process callers (the
//! fuzz targets) add it with [`with_structured_content`].
//! Every failed call is logged here, once, with its [`ErrorKind`]: `warn`
//! for [`ErrorKind::Internal`] (the operator should look), `debug` for the
//! rest (the client's doing, answered in the reply); a read-only refusal
//! also at `info`, naming its rule.
//! May touch: the log (no other I/O).

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;

use crate::error::{Error, ErrorKind};
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
        Ok(Output::WithData(out, data)) => {
            let mut r = tool_result(Ok(*out));
            if mirrors(&r) && !data.is_empty() {
                r.structured_content = Some(serde_json::Value::Object(data));
            }
            r
        }
        Err(e) => {
            let text = e.to_string();
            // The operator's log names the rule of a read-only refusal (a
            // hidden path's is logged where it resolves: src/fs/scope.rs).
            if let Error::Protected {
                path,
                rule: Some(why),
            } = &e
            {
                why.log(path);
            }
            log_failure(e.kind(), &text);
            CallToolResult::error(vec![ContentBlock::text(text)])
        }
    }
}

/// Logs a failed call's kind and text (the text names only client paths).
fn log_failure(kind: ErrorKind, text: &str) {
    match kind {
        ErrorKind::Internal => tracing::warn!(kind = %kind, "tool call failed: {text}"),
        _ => tracing::debug!(kind = %kind, "tool call failed: {text}"),
    }
}

/// The fields a mirrored result may add beside its block's `content`.
const EXTRA_FIELDS: [&str; 2] = ["version", "versions"];

/// Whether the writer adds `structuredContent` to `r` from its one content
/// block: a successful result with one block and no `structuredContent` of
/// its own, or only fields to add beside the block's (`version`, `versions`; a
/// search's own data, with other keys, is not mirrored).
pub fn mirrors(r: &CallToolResult) -> bool {
    r.is_error != Some(true)
        && r.content.len() == 1
        && r.structured_content.as_ref().is_none_or(|v| {
            v.as_object()
                .is_some_and(|o| o.keys().all(|k| EXTRA_FIELDS.contains(&k.as_str())))
        })
}

/// The fields a mirrored result adds beside its block's `content`.
pub fn extra_fields(r: &CallToolResult) -> Option<&serde_json::Map<String, serde_json::Value>> {
    r.structured_content.as_ref().and_then(|v| v.as_object())
}

/// `r` with the `structuredContent` the writer would write, for callers
/// that use a result in process rather than through [`super::stdio`].
pub fn with_structured_content(mut r: CallToolResult) -> CallToolResult {
    if mirrors(&r)
        && let Some(block) = r.content.first()
    {
        let mut out = extra_fields(&r).cloned().unwrap_or_default();
        out.insert(
            "content".to_owned(),
            match block.as_text() {
                Some(t) => json!(t.text),
                None => json!([block]),
            },
        );
        r.structured_content = Some(serde_json::Value::Object(out));
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
        let v = crate::fs::version::Version::of(b"x");
        let r = tool_result(Ok(Output::Text("t".into()).with_version(Some(&v))));
        assert!(mirrors(&r));
        assert_eq!(
            with_structured_content(r).structured_content,
            Some(json!({"content": "t", "version": v.as_str()}))
        );
    }
}
