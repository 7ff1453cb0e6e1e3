//! How `directory_tree` renders a walk: each directory on the walk thread
//! that reads it (the walk's fold), as the pretty JSON that
//! [`crate::text::tree`] writes, with an upper bound on the bytes of each
//! node so that the walk stops before the text outgrows its bound.
//! May touch: nothing (it renders what the walk found).

use crate::fs::walk::tree::{Item, ParFold, ParVisitor, TextBudget};
use crate::fs::walk::{Entry, Kind};
use crate::text::glob::Excludes;
pub(super) use crate::text::tree::{Count, Rendered, Sink, close_node, pretty_string};
use crate::text::tree::{close_array, is_plain};

pub(super) struct Exclude<'a> {
    pub(super) excludes: &'a Excludes,
    /// An upper bound on the rendered bytes; past [`crate::limits::MAX_WALK_TEXT_BYTES`]
    /// the walk stops (indentation grows with the depth, so the entry cap
    /// alone does not bound the text).
    pub(super) budget: TextBudget,
}

/// An upper bound on the bytes `entry` adds to the pretty JSON at `depth`
/// (its object sits at indentation level 2 * depth - 1, two spaces each).
pub(super) fn node_bytes(entry: &Entry, depth: usize) -> usize {
    let name: usize = if is_plain(&entry.name) {
        entry.name.len()
    } else {
        entry
            .name
            .chars()
            .map(|c| match c {
                '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
                c if c.is_control() => 6,
                c => c.len_utf8(),
            })
            .sum()
    };
    let per_level = if entry.kind == Kind::Dir { 24 } else { 16 };
    name + per_level * depth + 64
}

impl ParVisitor for Exclude<'_> {
    type Value = ();
    fn visit(&self, rel: &str, entry: &Entry, depth: usize) -> Option<()> {
        if (!self.excludes.is_empty() && self.excludes.is_match(rel)) || self.full() {
            return None;
        }
        self.budget.take(node_bytes(entry, depth)).then_some(())
    }

    fn full(&self) -> bool {
        self.budget.is_full()
    }

    fn wants_rel(&self) -> bool {
        !self.excludes.is_empty()
    }
}

/// Renders each directory as its pretty JSON array of nodes on the walk
/// thread that reads it, leaving a slot for each subdirectory's array.
impl ParFold for Exclude<'_> {
    type Out = Rendered;
    fn begin(&self, depth: usize, entries: usize, name_bytes: usize) -> Rendered {
        Rendered::new(name_bytes + entries * (16 * depth + 48) + 2)
    }

    fn add(&self, out: &mut Rendered, entry: &Entry, (): (), depth: usize) -> usize {
        out.add(
            &entry.name,
            kind_name(entry.kind),
            entry.kind == Kind::Dir,
            depth,
        )
    }

    fn end(&self, out: &mut Rendered, depth: usize) {
        out.end(depth);
    }

    fn fill(&self, out: &mut Rendered, slot: usize, sub: Rendered) {
        out.fill(slot, sub);
    }
}

/// Everything of `entry`'s node (at `depth`, the first of its array or
/// not) before its children's array, or before its end if it has none
/// ([`crate::text::tree::open_node`]).
pub(super) fn open_node(out: &mut impl Sink, entry: &Entry, depth: usize, first: bool) {
    crate::text::tree::open_node(
        out,
        &entry.name,
        kind_name(entry.kind),
        entry.kind == Kind::Dir,
        depth,
        first,
    );
}

/// Renders walk items (at `depth`) as the reference's pretty JSON array of
/// `{name, type, children}` nodes.
pub(super) fn render_items(out: &mut impl Sink, items: &[Item<()>], depth: usize) {
    if items.is_empty() {
        out.put("[]");
        return;
    }
    out.put("[");
    for (i, item) in items.iter().enumerate() {
        open_node(out, &item.entry, depth, i == 0);
        if item.entry.kind == Kind::Dir {
            render_items(out, item.children.as_deref().unwrap_or(&[]), depth + 1);
        }
        close_node(out, depth);
    }
    close_array(out, depth);
}

pub(super) fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Dir => "directory",
        Kind::Symlink => "symlink",
        Kind::File | Kind::Other => "file",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::glob::ExcludeStyle;
    use serde::Serialize;
    use serde::Serializer;
    use serde::ser::{SerializeMap, SerializeSeq};

    /// The reference rendering: the nodes through serde_json's pretty
    /// printer (with [`SafeJsonFormatter`]), as tuls rendered them before
    /// the direct renderer.
    struct Nodes<'a>(&'a [Item<()>]);

    impl Serialize for Nodes<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
            let mut seq = s.serialize_seq(Some(self.0.len()))?;
            for item in self.0 {
                seq.serialize_element(&Node(item))?;
            }
            seq.end()
        }
    }

    struct Node<'a>(&'a Item<()>);

    impl Serialize for Node<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
            let item = self.0;
            let mut map = s.serialize_map(None)?;
            map.serialize_entry("name", &item.entry.name)?;
            map.serialize_entry("type", kind_name(item.entry.kind))?;
            if item.entry.kind == Kind::Dir {
                map.serialize_entry("children", &Nodes(item.children.as_deref().unwrap_or(&[])))?;
            }
            map.end()
        }
    }

    fn node(name: &str, kind: Kind, children: Option<Vec<Item<()>>>) -> Item<()> {
        Item {
            entry: Entry {
                name: name.to_owned(),
                raw: None,
                kind,
                size: None,
            },
            value: (),
            children,
        }
    }

    fn bound(items: &[Item<()>], depth: usize) -> usize {
        items
            .iter()
            .map(|i| {
                node_bytes(&i.entry, depth)
                    + i.children.as_deref().map_or(0, |c| bound(c, depth + 1))
            })
            .sum()
    }

    /// A deep tree of every kind of entry, with names that need escaping.
    fn sample() -> Vec<Item<()>> {
        let names = [
            "a",
            "é\"q\\",
            "ctl\u{1}\n\t\u{8}\u{c}\r",
            "del\u{7f}c1\u{80}\u{9b}\u{9f}nbsp\u{a0}日本🎉",
            "x".repeat(255).leak(),
        ];
        let mut level: Vec<Item<()>> = Vec::new();
        for depth in 0..40 {
            let kind = [Kind::File, Kind::Symlink, Kind::Other][depth % 3];
            let mut next: Vec<Item<()>> = names.iter().map(|n| node(n, kind, None)).collect();
            next.push(node("empty", Kind::Dir, Some(Vec::new())));
            next.push(node("not-read", Kind::Dir, None));
            next.push(node(names[depth % names.len()], Kind::Dir, Some(level)));
            level = next;
        }
        level
    }

    fn direct(items: &[Item<()>]) -> String {
        let mut out = String::new();
        render_items(&mut out, items, 1);
        out
    }

    /// The fold rendering of `items`, as the walk makes it (a directory
    /// with children is descended into; an empty one sometimes is not).
    fn folded(v: &Exclude<'_>, items: &[Item<()>], depth: usize) -> Rendered {
        let names = items.iter().map(|i| i.entry.name.len()).sum();
        let mut out = v.begin(depth, items.len(), names);
        let mut subs = Vec::new();
        for i in items {
            let slot = v.add(&mut out, &i.entry, (), depth);
            if let Some(c) = i.children.as_deref()
                && (!c.is_empty() || depth.is_multiple_of(2))
            {
                subs.push((slot, folded(v, c, depth + 1)));
            }
        }
        v.end(&mut out, depth);
        for (slot, sub) in subs {
            v.fill(&mut out, slot, sub);
        }
        out
    }

    #[test]
    fn direct_rendering_is_serde_json_pretty_byte_for_byte() {
        let tree = sample();
        let excludes = Excludes::new(&[], ExcludeStyle::BareNameAnywhere, 1024, 8).unwrap();
        let v = Exclude {
            excludes: &excludes,
            budget: TextBudget::new(usize::MAX),
        };
        for items in [&tree[..], &tree[..1], &tree[tree.len() - 1..], &[]] {
            let expected = pretty_string(&Nodes(items)).unwrap();
            assert_eq!(direct(items), expected);
            let mut count = Count(0);
            render_items(&mut count, items, 1);
            assert_eq!(count.0, expected.len());
            let rendered = folded(&v, items, 1);
            assert_eq!(rendered.len(), expected.len());
            assert_eq!(rendered.join("\n\n[note]"), format!("{expected}\n\n[note]"));
        }
    }

    #[test]
    fn every_character_below_u0100_is_rendered_as_serde_json_does() {
        let items: Vec<Item<()>> = (0u32..0x100)
            .filter_map(char::from_u32)
            .map(|c| node(&format!("{c}x{c}"), Kind::File, None))
            .collect();
        assert_eq!(direct(&items), pretty_string(&Nodes(&items)).unwrap());
    }

    #[test]
    fn node_bytes_bound_the_rendered_text() {
        let level = sample();
        for items in [&level[..], &level[..1], &level[level.len() - 1..]] {
            let text = direct(items);
            assert!(
                text.len() <= bound(items, 1),
                "{} > {}",
                text.len(),
                bound(items, 1)
            );
        }
    }
}
