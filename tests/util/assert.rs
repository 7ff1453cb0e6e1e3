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

/// The reason tuls adds to an escape refusal when the path went through a
/// symbolic link that is absolute or leads outside its root.
pub const THROUGH_LINK: &str = ". It goes through a symbolic link that is absolute or leads outside its allowed directory; tuls follows only relative links that stay inside. Use a path inside an allowed directory instead";

/// The exact refusal of an escape through `p`, as given, with `roots` the
/// server's roots (the first is where a relative path resolves): the
/// reference's text; and, when `p` as written stays inside a root (no `..`
/// above it), the escape went through a symbolic link, which it says.
pub fn escape_denial(p: &str, roots: &[String]) -> String {
    let comps = |s: &str| -> Vec<String> {
        s.split('/')
            .filter(|c| !c.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let given = comps(p);
    let rest = if p.starts_with('/') {
        roots
            .iter()
            .map(|r| comps(r))
            .filter(|r| r.len() <= given.len() && given[..r.len()] == r[..])
            .max_by_key(Vec::len)
            .map(|r| given[r.len()..].to_vec())
    } else {
        Some(given)
    };
    let inside = rest.is_some_and(|rest| {
        let mut depth = 0usize;
        rest.iter().all(|c| match c.as_str() {
            "." => true,
            ".." => depth.checked_sub(1).map(|d| depth = d).is_some(),
            _ => {
                depth += 1;
                true
            }
        })
    });
    let reason = if inside { THROUGH_LINK } else { "" };
    format!("Access denied - path outside allowed directories: {p}{reason}")
}
