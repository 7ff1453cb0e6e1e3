//! `directory_tree`: a bounded recursive JSON tree that never descends
//! through a symlink and shows one as `"type": "symlink"`. Touches: scope,
//! tree, glob.

use rmcp::schemars::{self, JsonSchema};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Serialize, Serializer};

use super::list_directory::open_dir;
use super::{Ctx, Output};
use crate::error::{Error, Result};
use crate::glob::{ExcludeStyle, Excludes};
use crate::tree::{self, Item, ParVisitor};
use crate::walk::{self, Entry, Kind, WalkLimits};

/// The tool description.
pub const DESCRIPTION: &str = "Get a recursive tree view of files and directories as a JSON structure. Each entry includes 'name', 'type' (file/directory/symlink), and 'children' for directories. Files and symlinks have no children array, while directories always have a children array (which may be empty). Symbolic links are never followed. The output is formatted with 2-space indentation for readability. Very large trees are cut at the entry and depth limits, and the cut is noted after the JSON. Only works within allowed directories.";

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

struct Exclude<'a>(&'a Excludes);

impl ParVisitor for Exclude<'_> {
    type Value = ();
    fn visit(
        &self,
        _parent: &cap_std::fs::Dir,
        rel: &str,
        _entry: &Entry,
        _depth: usize,
    ) -> Option<()> {
        (!self.0.is_match(rel)).then_some(())
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
    let dir = open_dir(ctx, &p.path)?;
    let limits = WalkLimits {
        max_entries: ctx.limits.max_walk_entries,
        max_depth: ctx.limits.max_walk_depth,
        cancel: ctx.cancel.clone(),
    };
    let (items, truncated) = tree::collect(&dir, &limits, &Exclude(&excludes))?;
    // Size the text exactly first: a doubling Vec would briefly hold up to
    // three times a large tree's text while it grows.
    let mut counter = Counter(0);
    let render = |e: serde_json::Error| Error::Invalid(format!("cannot render tree: {e}"));
    serde_json::to_writer_pretty(&mut counter, &Nodes(&items)).map_err(render)?;
    let mut buf = Vec::with_capacity(counter.0 + 256);
    serde_json::to_writer_pretty(&mut buf, &Nodes(&items)).map_err(render)?;
    let mut text =
        String::from_utf8(buf).map_err(|e| Error::Invalid(format!("cannot render tree: {e}")))?;
    drop(items);
    if let Some(t) = truncated {
        text.push_str("\n\n");
        text.push_str(&walk::truncation_note(t));
    }
    Ok(Output::Text(text))
}
