//! `directory_tree`: a bounded recursive JSON tree that never descends
//! through a symlink and shows one as `"type": "symlink"`. Touches: scope,
//! walk, glob.

use rmcp::schemars::{self, JsonSchema};
use serde::{Deserialize, Serialize};

use super::list_directory::open_dir;
use super::{Ctx, Output};
use crate::error::{Error, Result};
use crate::glob::{ExcludeStyle, Excludes};
use crate::walk::{self, Entry, Kind, Visit, Visitor, WalkLimits};

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

/// One node of the tree, serialized in the reference's key order.
#[derive(Debug, Serialize)]
pub struct Node {
    name: String,
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    children: Option<Vec<Node>>,
}

struct TreeBuilder<'a> {
    excludes: &'a Excludes,
    /// Open directories, innermost last; the bottom is the tree's top level.
    stack: Vec<Vec<Node>>,
}

impl Visitor for TreeBuilder<'_> {
    fn entry(
        &mut self,
        _parent: &cap_std::fs::Dir,
        rel: &str,
        entry: &Entry,
        _depth: usize,
    ) -> Visit {
        if self.excludes.is_match(rel) {
            return Visit::Prune;
        }
        let kind = match entry.kind {
            Kind::Dir => "directory",
            Kind::Symlink => "symlink",
            Kind::File | Kind::Other => "file",
        };
        let node = Node {
            name: entry.name.clone(),
            kind,
            children: None,
        };
        if entry.kind == Kind::Dir {
            self.stack.push(Vec::new());
        }
        // A file goes straight into its parent; a directory is pushed to
        // its parent when it is left.
        if entry.kind != Kind::Dir {
            if let Some(top) = self.stack.last_mut() {
                top.push(node);
            }
        } else if let Some(pending) = self.stack.last_mut() {
            // Remember the directory's own node as the first element of a
            // marker list; replaced in `leave`.
            pending.push(node);
        }
        Visit::Continue
    }

    fn leave(&mut self, _rel: &str) {
        let Some(mut level) = self.stack.pop() else {
            return;
        };
        if level.is_empty() {
            return;
        }
        let mut dir = level.remove(0);
        dir.children = Some(level);
        if let Some(parent) = self.stack.last_mut() {
            parent.push(dir);
        }
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
    let mut b = TreeBuilder {
        excludes: &excludes,
        stack: vec![Vec::new()],
    };
    let limits = WalkLimits {
        max_entries: ctx.limits.max_walk_entries,
        max_depth: ctx.limits.max_walk_depth,
        cancel: ctx.cancel.clone(),
    };
    let truncated = walk::walk(&dir, &limits, &mut b)?;
    let top = b.stack.into_iter().next().unwrap_or_default();
    let mut text = serde_json::to_string_pretty(&top)
        .map_err(|e| Error::Invalid(format!("cannot render tree: {e}")))?;
    if let Some(t) = truncated {
        text.push_str("\n\n");
        text.push_str(&walk::truncation_note(t));
    }
    Ok(Output::Text(text))
}
