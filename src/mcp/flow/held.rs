//! What a built tool result holds on the heap: its text and data once,
//! and a `structuredContent` of its own as a `serde_json::Value` tree.
//! May touch: nothing (no I/O).

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// What a reply holds besides its text and data (the envelope, names).
pub(super) const ENVELOPE: u64 = 1024;

/// The bytes a built tool result holds: its text and data, once (the
/// writer streams a mirrored `structuredContent` from the same text), and
/// a `structuredContent` of its own as it sits on the heap
/// ([`value_heap_bytes`]).
pub fn held_bytes(r: &CallToolResult) -> u64 {
    let mut n = ENVELOPE;
    for block in &r.content {
        let len = match block {
            ContentBlock::Text(t) => t.text.capacity(),
            ContentBlock::Image(i) => i.data.capacity(),
            ContentBlock::Audio(a) => a.data.capacity(),
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { text, .. } => text.capacity(),
                ResourceContents::BlobResourceContents { blob, .. } => blob.capacity(),
                #[allow(unreachable_patterns)]
                _ => 0,
            },
            _ => 0,
        };
        n = n.saturating_add(len as u64);
    }
    if let Some(v) = &r.structured_content {
        n = n.saturating_add(value_heap_bytes(v));
    }
    n
}

/// An allocation of `bytes` as glibc's malloc holds it: an 8-byte header,
/// rounded up to 16, at least 32.
fn alloc_bytes(bytes: usize) -> u64 {
    if bytes == 0 {
        return 0;
    }
    ((bytes + 8).div_ceil(16) * 16).max(32) as u64
}

/// The heap a `serde_json::Value` holds beyond its own 32 bytes: a string
/// its allocation; an array its buffer of values and what they hold; an
/// object (a `BTreeMap`) a node of eleven slots per five entries (the
/// least a B-tree node holds), its keys and its values. An upper bound of
/// what the tree costs, so that a reply's `structuredContent` is counted as
/// it is held, not as the few bytes its text makes on the wire (a search
/// reply held about 75 times its text before this was counted).
pub fn value_heap_bytes(v: &serde_json::Value) -> u64 {
    use serde_json::Value;
    /// One B-tree node of `String` keys and `Value`s: eleven of each, plus
    /// the edges of an internal node.
    const NODE: usize = 11 * 24 + 11 * 32 + 16 + 12 * 8;
    match v {
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
        Value::String(s) => alloc_bytes(s.capacity()),
        Value::Array(a) => a.iter().fold(alloc_bytes(a.capacity() * 32), |n, x| {
            n.saturating_add(value_heap_bytes(x))
        }),
        Value::Object(m) => {
            let nodes = m.len().div_ceil(5).max(1);
            m.iter()
                .fold(alloc_bytes(NODE) * nodes as u64, |n, (k, x)| {
                    n.saturating_add(alloc_bytes(k.capacity()))
                        .saturating_add(value_heap_bytes(x))
                })
        }
    }
}
