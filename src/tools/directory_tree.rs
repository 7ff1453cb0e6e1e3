//! `directory_tree`: a bounded recursive JSON tree that never descends
//! through a symlink and shows one as `"type": "symlink"`. Touches: scope,
//! the walk engine ([`crate::fs::walk`]), glob.
//!
//! Owns: the tool's entry and arguments, and [`run`]: the whole tree
//! rendered as it is walked, or a tree that outgrows the reply cut into
//! pages. How a tree renders as pretty JSON is in `render`; a page of a
//! cut tree, and the paged walk, are in `page`.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use super::{Bound, Capability, Ctx, Hints, Notes, Output, OutputKind, Plan, Tool, params, schema};
use crate::error::{Error, Result};
use crate::fs::walk::Stop;
use crate::fs::walk::tree::{self, TextBudget};
use crate::limits::MAX_WALK_TEXT_BYTES;
use crate::text::budget::{Page, ReplyBudget, append_notice, chars};
use crate::text::fmt::Truncation;
use crate::text::glob::{ExcludeStyle, Excludes};

mod page;
mod render;
use page::{flatten, page_nodes};
use render::{Count, Exclude, pretty_string, render_items};

/// The tool description.
pub const DESCRIPTION: &str = "Get a recursive tree of files and directories as indented JSON. Each entry has 'name', 'type' (file/directory/symlink) and, for a directory, 'children' (possibly empty). Symbolic links are not followed.";

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Read,
    title: "Directory Tree",
    description: DESCRIPTION,
    hints: Hints::READ_ONLY,
    input: schema::<Params>,
    paths: &["path"],
    output: OutputKind::Text,
    plan: Plan::walk_tree,
    notes: Notes {
        advice: None,
        bound: Some(Bound::Walk),
    },
    run: |ctx, args| run(ctx, params(NAME, args)?),
};

const NAME: &str = "directory_tree";

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    /// The directory at the top of the tree.
    pub path: String,
    /// Globs of relative paths to leave out (one without `*` matches a name at any depth).
    #[serde(default)]
    pub exclude_patterns: Vec<String>,
    /// Levels to descend (1: only the entries of path).
    #[serde(default)]
    #[schemars(with = "i64", range(min = 1))]
    pub max_depth: Option<i64>,
    /// Entries to skip, in pre-order (prefer cursor).
    #[serde(default)]
    #[schemars(with = "i64", range(min = 0))]
    pub offset: Option<i64>,
    // Where to go on: the cursor a cut reply gave. No doc comment, so no
    // description in tools/list: the cut reply's notice says how to use it.
    #[serde(default)]
    #[schemars(with = "String")]
    #[expect(
        missing_docs,
        reason = "a doc comment would become its description in tools/list"
    )]
    pub cursor: Option<String>,
}

/// How a cut tree can be narrowed.
const NARROW: &str = "a deeper path, excludePatterns or maxDepth (\"more\": true marks a directory whose children go on)";

/// Builds the tree.
pub fn run(ctx: &Ctx, mut p: Params) -> Result<Output> {
    let cursor = p.cursor.take();
    if cursor.is_some() && p.offset.is_some() {
        return Err(super::cursor_and_offset());
    }
    let offset = super::skip_arg(p.offset)?;
    let max_depth = match p.max_depth {
        None => None,
        Some(d) if d >= 1 => Some(usize::try_from(d).unwrap_or(usize::MAX)),
        Some(d) => {
            return Err(Error::BelowMinimum {
                arg: "maxDepth",
                value: d,
                min: 1,
            });
        }
    };
    let excludes = Excludes::new(
        &p.exclude_patterns,
        ExcludeStyle::BareNameAnywhere,
        ctx.limits.max_pattern_bytes,
        ctx.limits.max_exclude_patterns,
    )?;
    let t = ctx.scope.resolve(&p.path)?;
    let dir = t.walk_start("scandir")?;
    let mut limits = ctx.walk_limits();
    let asked_depth = max_depth.filter(|d| *d <= limits.max_depth);
    if let Some(d) = asked_depth {
        limits.max_depth = d;
    }
    let visitor = Exclude {
        excludes: &excludes,
        budget: TextBudget::new(MAX_WALK_TEXT_BYTES),
    };
    let note_of = |truncated: Option<Stop>| {
        truncated.and_then(Stop::truncation).map(|t| match (t, asked_depth) {
            (Truncation::Depth(d), Some(asked)) if d == asked => format!(
                "\n\n[directories at depth {d} were not descended (maxDepth: {d}); their children arrays are empty]"
            ),
            (t, _) => crate::text::fmt::truncation_note(t),
        })
    };
    let budget = ctx.reply_budget();
    if p.offset.is_none() && (cursor.is_some() || budget.max().is_some()) {
        // Pages: the walk stops once a page is full.
        let bind = super::cursor_binding(NAME, &t, &p);
        let from = cursor
            .map(|c| crate::fs::cursor::Cursor::decode(&c, &bind))
            .transpose()?;
        let depth = limits.depth();
        let call = page::PageCall {
            start: &dir,
            limits: &limits,
            excludes: &excludes,
            budget,
            from,
            bind: &bind,
            depth_note: note_of(Some(Stop::Depth(depth))).unwrap_or_default(),
        };
        return page::run(&call).map(Output::Text);
    }
    if offset == 0 && budget.max().is_none() {
        // The whole tree, rendered as it is walked.
        let (rendered, truncated) = tree::fold(&dir, &limits, &visitor)?;
        let note = note_of(truncated);
        return Ok(Output::Text(rendered.join(note.as_deref().unwrap_or(""))));
    }
    let (items, truncated) = tree::collect(&dir, &limits, &visitor)?;
    let note = note_of(truncated);
    let render = |e: serde_json::Error| Error::Internal(format!("cannot render tree: {e}"));
    if offset == 0 {
        // Size the text first (a doubling buffer would briefly hold up to
        // three times a large tree's text while it grows): the exact size
        // decides whether the whole tree may fit.
        let mut size = Count(0);
        render_items(&mut size, &items, 1);
        if budget
            .max()
            .is_none_or(|max| size.0 <= max.saturating_mul(4))
        {
            let mut text = String::with_capacity(size.0 + 256);
            render_items(&mut text, &items, 1);
            if let Some(n) = &note {
                text.push_str(n);
            }
            if budget.fits_text(&text) {
                drop(items);
                return Ok(Output::Text(text));
            }
        }
    }
    let mut flat = Vec::new();
    flatten(&items, 1, None, &mut flat);
    let room = budget
        .room()
        .saturating_sub(note.as_ref().map_or(0, |n| chars(n)));
    let total = flat.len();
    let start = offset.min(total);
    let page_of = |k: usize| -> Result<String> {
        pretty_string(&page_nodes(&flat, start, start + k)).map_err(render)
    };
    if start >= total {
        let mut text = page_of(0)?;
        if offset > 0 {
            append_notice(
                &mut text,
                &ReplyBudget::past_end_notice("entries", offset, total),
            );
        }
        return Ok(Output::Text(text));
    }
    let fits = |k: usize| -> Result<Option<String>> {
        let text = page_of(k)?;
        Ok((chars(&text) <= room).then_some(text))
    };
    // The largest page that fits, by bisection (a page's text grows with
    // its entries, give or take the "more" marks).
    let mut best = fits(1)?.map(|t| (1, t));
    if best.is_some() {
        let (mut lo, mut hi) = (1usize, (total - start).min(room / MIN_NODE_CHARS + 1));
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            match fits(mid)? {
                Some(t) => {
                    lo = mid;
                    best = Some((mid, t));
                }
                None => hi = mid - 1,
            }
        }
    }
    let (k, mut text) = best.unwrap_or((0, String::new()));
    let page = Page {
        text: String::new(),
        start,
        end: start + k,
        total,
    };
    if page.is_cut() {
        append_notice(&mut text, &budget.page_notice("entries", &page, NARROW));
    } else if let Some(n) = &note {
        text.push_str(n);
    }
    Ok(Output::Text(text))
}

/// The fewest characters one more node adds to a pretty page (a file with
/// an empty name at depth 1, with its separator).
const MIN_NODE_CHARS: usize = 40;
