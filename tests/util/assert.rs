//! Assertions on tool replies, shared by every suite: what a reply must say, to
//! the byte, and the shape it must have.

use serde_json::json;

use super::reply::Reply;

/// A successful result with exactly this text, in one text block, whose
/// `structuredContent` mirrors it (`{"content": text}`, and the file's
/// version where the tool gives one).
#[track_caller]
pub fn assert_text(reply: &Reply, expected: &str) {
    reply.assert_ok();
    assert_eq!(
        reply.text, expected,
        "reply text\n--- got ---\n{}\n--- expected ---\n{expected}\n--- raw ---\n{}",
        reply.text, reply.raw
    );
    assert_eq!(reply.content().len(), 1, "one content block: {}", reply.raw);
    assert_mirrors(reply, json!(expected));
}

/// `structuredContent` is `{"content": content}`, plus at most the version
/// fields a read or write adds (`version`, a `b3:` token; `versions`, a
/// list).
#[track_caller]
pub fn assert_mirrors(reply: &Reply, content: serde_json::Value) {
    let mut s = reply.structured.clone().unwrap_or_default();
    if let Some(obj) = s.as_object_mut() {
        if let Some(v) = obj.remove("version") {
            assert!(
                v.as_str().is_some_and(|v| v.starts_with("b3:")),
                "a version is a b3: token: {}",
                reply.raw
            );
        }
        if let Some(v) = obj.remove("versions") {
            assert!(v.is_array(), "versions is a list: {}", reply.raw);
        }
    }
    assert_eq!(
        s,
        json!({ "content": content }),
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

/// A reply text of at most `max` characters (the reply budget).
#[track_caller]
pub fn assert_within(text: &str, max: usize) {
    let n = text.chars().count();
    assert!(n <= max, "reply of {n} characters over the {max} budget");
}
