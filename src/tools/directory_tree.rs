//! `directory_tree`: a bounded recursive JSON tree that never descends
//! through a symlink and shows one as `"type": "symlink"`. Touches: scope,
//! tree, glob.

use rmcp::schemars::{self, JsonSchema};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Serialize, Serializer};

use super::{Capability, Ctx, Hints, Output, OutputKind, Tool, params, schema};
use crate::error::{Error, Result};
use crate::fs::tree::{self, Item, ParVisitor, TextBudget};
use crate::fs::walk::{Entry, Kind};
use crate::limits::MAX_WALK_TEXT_BYTES;
use crate::text::fmt::SafeJsonFormatter;
use crate::text::glob::{ExcludeStyle, Excludes};

/// The tool description.
pub const DESCRIPTION: &str = "Get a recursive tree view of files and directories as a JSON structure. Each entry includes 'name', 'type' (file/directory/symlink), and 'children' for directories. Files and symlinks have no children array, while directories always have a children array (which may be empty). Symbolic links are never followed. The output is formatted with 2-space indentation for readability. Very large trees are cut at the entry and depth limits, and the cut is noted after the JSON. Only works within allowed directories.";

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Read,
    title: "Directory Tree",
    description: DESCRIPTION,
    hints: Hints::READ_ONLY,
    input: schema::<Params>,
    output: OutputKind::Text,
    run: |ctx, args| run(ctx, params(NAME, args)?),
};

const NAME: &str = "directory_tree";

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    /// The directory at the top of the tree.
    pub path: String,
    /// Glob patterns of relative paths to leave out (a pattern without `*` matches that name at any depth).
    #[serde(default)]
    pub exclude_patterns: Vec<String>,
}

struct Exclude<'a> {
    excludes: &'a Excludes,
    /// An upper bound on the rendered bytes; past [`MAX_WALK_TEXT_BYTES`]
    /// the walk stops (indentation grows with the depth, so the entry cap
    /// alone does not bound the text).
    budget: TextBudget,
}

/// An upper bound on the bytes `entry` adds to the pretty JSON at `depth`
/// (its object sits at indentation level 2 * depth - 1, two spaces each).
fn node_bytes(entry: &Entry, depth: usize) -> usize {
    let name: usize = entry
        .name
        .chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if c.is_control() => 6,
            c => c.len_utf8(),
        })
        .sum();
    let per_level = if entry.kind == Kind::Dir { 24 } else { 16 };
    name + per_level * depth + 64
}

impl ParVisitor for Exclude<'_> {
    type Value = ();
    fn visit(&self, rel: &str, entry: &Entry, depth: usize) -> Option<()> {
        if self.excludes.is_match(rel) || self.full() {
            return None;
        }
        self.budget.take(node_bytes(entry, depth)).then_some(())
    }

    fn full(&self) -> bool {
        self.budget.is_full()
    }
}

/// Serializes walk items as the reference's `{name, type, children}` nodes,
/// straight from the walk's result.
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
        let kind = match item.entry.kind {
            Kind::Dir => "directory",
            Kind::Symlink => "symlink",
            Kind::File | Kind::Other => "file",
        };
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("name", &item.entry.name)?;
        map.serialize_entry("type", kind)?;
        if item.entry.kind == Kind::Dir {
            map.serialize_entry("children", &Nodes(item.children.as_deref().unwrap_or(&[])))?;
        }
        map.end()
    }
}

/// Counts the bytes written to it.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Builds the tree.
pub fn run(ctx: &Ctx, p: Params) -> Result<Output> {
    let excludes = Excludes::new(
        &p.exclude_patterns,
        ExcludeStyle::BareNameAnywhere,
        ctx.limits.max_pattern_bytes,
        ctx.limits.max_exclude_patterns,
    )?;
    let dir = ctx.scope.resolve(&p.path)?.open_dir("scandir")?;
    let limits = ctx.walk_limits();
    let visitor = Exclude {
        excludes: &excludes,
        budget: TextBudget::new(MAX_WALK_TEXT_BYTES),
    };
    let (items, truncated) = tree::collect(&dir, &limits, &visitor)?;
    // Size the text exactly first: a doubling Vec would briefly hold up to
    // three times a large tree's text while it grows.
    let mut counter = Counter(0);
    let render = |e: serde_json::Error| Error::Internal(format!("cannot render tree: {e}"));
    // Names stay exact JSON strings; every control character in them is a
    // JSON escape (SafeJsonFormatter adds DEL and C1 to serde_json's C0).
    let to = |w: &mut dyn std::io::Write| {
        let mut ser = serde_json::Serializer::with_formatter(w, SafeJsonFormatter::pretty());
        Nodes(&items).serialize(&mut ser).map_err(render)
    };
    to(&mut counter)?;
    let mut buf = Vec::with_capacity(counter.0 + 256);
    to(&mut buf)?;
    let mut text =
        String::from_utf8(buf).map_err(|e| Error::Internal(format!("cannot render tree: {e}")))?;
    drop(items);
    if let Some(t) = truncated {
        text.push_str(&crate::text::fmt::truncation_note(t));
    }
    Ok(Output::Text(text))
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn node_bytes_bound_the_rendered_text() {
        let names = ["a", "é\"q\\", "ctl\u{1}\n\t", "x".repeat(255).leak()];
        let mut level: Vec<Item<()>> = Vec::new();
        for depth in 0..40 {
            let mut next: Vec<Item<()>> = names
                .iter()
                .map(|n| {
                    node(
                        n,
                        if depth % 2 == 0 {
                            Kind::File
                        } else {
                            Kind::Symlink
                        },
                        None,
                    )
                })
                .collect();
            next.push(node("empty", Kind::Dir, Some(Vec::new())));
            next.push(node(names[depth % names.len()], Kind::Dir, Some(level)));
            level = next;
        }
        for items in [&level[..], &level[..1], &level[level.len() - 1..]] {
            let text = serde_json::to_string_pretty(&Nodes(items)).unwrap();
            assert!(
                text.len() <= bound(items, 1),
                "{} > {}",
                text.len(),
                bound(items, 1)
            );
        }
    }
}
