//! Assertions on tool replies, shared by every suite: what a reply must say, to
//! the byte, and the shape it must have.

use serde_json::json;

use super::reply::Reply;

/// A successful result with exactly this text, in one text block, whose
/// `structuredContent` mirrors it (`{"content": text}`).
#[track_caller]
pub fn assert_text(reply: &Reply, expected: &str) {
    reply.assert_ok();
    assert_eq!(
        reply.text, expected,
        "reply text\n--- got ---\n{}\n--- expected ---\n{expected}\n--- raw ---\n{}",
        reply.text, reply.raw
    );
    assert_eq!(reply.content().len(), 1, "one content block: {}", reply.raw);
    assert_eq!(
        reply.structured,
        Some(json!({ "content": expected })),
        "structuredContent must mirror the text: {}",
        reply.raw
    );
}

/// An `isError` result with exactly this text and no `structuredContent`.
#[track_caller]
pub fn assert_err(reply: &Reply, expected: &str) {
    reply.assert_error();
    assert_eq!(reply.text, expected, "error text; raw: {}", reply.raw);
    assert!(
        reply.structured.is_none(),
        "an error carries no structuredContent: {}",
        reply.raw
    );
}
