//! `search_files`: glob search by relative path, never descending through a
//! symlink; bounded. Touches: scope, the walk engine ([`crate::fs::walk`]), glob.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use super::{
    Bound, Capability, Ctx, Hints, Notes, Output, OutputKind, PageEnd, Plan, Tool, params, schema,
};
use crate::error::Result;
use crate::fs::cursor::{Binding, Cursor, FLAG_AFTER, FLAG_DEPTH_CUT, token_room};
use crate::fs::scope::Target;
use crate::fs::walk::paged::{self, Flow, Visit};
use crate::fs::walk::tree::{self, Item, ParVisitor, TextBudget};
use crate::fs::walk::{Bounds, Entry, Kind, Stop};
use crate::limits::MAX_WALK_TEXT_BYTES;
use crate::text::budget::{ReplyBudget, append_notice, chars};
use crate::text::fmt::Truncation;
use crate::text::fmt::printable;
use crate::text::glob::{ExcludeStyle, Excludes, Pattern};

/// How a cut search can be narrowed.
const NARROW: &str = "a deeper path, a narrower pattern, or excludePatterns";

/// The tool description.
pub const DESCRIPTION: &str = "Recursively find files and directories whose path relative to 'path' matches a glob: '*.ext' matches in 'path' itself, '**/*.ext' at any depth. Returns full paths.";

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Read,
    title: "Search Files",
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

const NAME: &str = "search_files";

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    /// The directory to search under.
    pub path: String,
    /// Glob pattern matched against paths relative to `path`.
    pub pattern: String,
    /// Globs of relative paths to skip (and not descend into).
    #[serde(default)]
    pub exclude_patterns: Vec<String>,
    /// Matches to skip (prefer cursor).
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

struct Search<'a> {
    pattern: &'a Pattern,
    excludes: &'a Excludes,
    /// What each printed match starts with: the client's `path` as given
    /// (see [`client_prefix`]).
    prefix: &'a str,
    /// The search directory: a symlink found is resolved from its root
    /// ([`Target::entry_in_root`]).
    start: &'a Target,
    /// Bytes of the matches; past [`MAX_WALK_TEXT_BYTES`] the walk stops (a
    /// match is a whole path, so depth multiplies its size).
    budget: TextBudget,
}

impl Search<'_> {
    /// The printed match, when the entry at `rel` matches.
    fn hit(&self, rel: &str, entry: &Entry) -> Option<String> {
        // As in the reference, a symlink is reported only when it resolves
        // inside the root; outside and dangling are both skipped, so nothing
        // is learned about the outside.
        let hit = self.pattern.is_match(rel)
            && (entry.kind != Kind::Symlink || self.start.entry_in_root(rel));
        hit.then(|| printable(&format!("{}{rel}", self.prefix)).into_owned())
    }
}

impl ParVisitor for Search<'_> {
    /// The display path, when the entry matches.
    type Value = Option<String>;

    fn visit(&self, rel: &str, entry: &Entry, _depth: usize) -> Option<Option<String>> {
        if self.excludes.is_match(rel) {
            return None;
        }
        if self.full() {
            return Some(None);
        }
        let Some(line) = self.hit(rel, entry) else {
            return Some(None);
        };
        if !self.budget.take(line.len() + 1) {
            return Some(None);
        }
        Some(Some(line))
    }

    fn full(&self) -> bool {
        self.budget.is_full()
    }
}

/// Collects a page of matches in walk order until one does not fit `room`.
struct Pages<'a> {
    search: &'a Search<'a>,
    room: usize,
    used: usize,
    lines: Vec<String>,
    /// The first match was longer than `room` on its own.
    alone_too_long: bool,
}

impl Visit for Pages<'_> {
    fn wants_rel(&self) -> bool {
        true
    }

    fn visit(&mut self, rel: &str, _raw: &[u8], entry: &Entry, _depth: usize) -> Flow {
        if self.search.excludes.is_match(rel) {
            return Flow::Skip;
        }
        let Some(line) = self.search.hit(rel, entry) else {
            return Flow::Go;
        };
        let cost = chars(&line) + usize::from(!self.lines.is_empty());
        if self.used.saturating_add(cost) > self.room {
            self.alone_too_long = self.lines.is_empty();
            return Flow::Stop;
        }
        self.used += cost;
        self.lines.push(line);
        Flow::Go
    }
}

/// One page of matches, from the call's cursor (or the top), ending with
/// the notice that gives the next page's cursor.
fn page(
    search: &Search<'_>,
    dir: &crate::fs::scope::Start,
    limits: &Bounds,
    budget: ReplyBudget,
    from: Option<Cursor>,
    bind: &Binding,
) -> Result<String> {
    let token_max = token_room(budget.max().unwrap_or(0));
    let room = match budget.max() {
        Some(_) => budget.room().saturating_sub(token_max),
        None => MAX_WALK_TEXT_BYTES,
    };
    let mut v = Pages {
        search,
        room,
        used: 0,
        lines: Vec::new(),
        alone_too_long: false,
    };
    let at = from
        .as_ref()
        .map(|f| (f.rel.as_slice(), f.flags & FLAG_AFTER != 0));
    let paged = paged::walk(dir, at, limits, &mut v)?;
    let mut flags = from.as_ref().map_or(0, |f| f.flags & FLAG_DEPTH_CUT);
    if paged.depth_cut {
        flags |= FLAG_DEPTH_CUT;
    }
    let Some(next) = paged.next else {
        let mut text = match v.lines.is_empty() {
            true => "No matches found".to_owned(),
            false => v.lines.join("\n"),
        };
        if flags & FLAG_DEPTH_CUT != 0 {
            text.push_str(&crate::text::fmt::truncation_note(Truncation::Depth(
                limits.depth(),
            )));
        }
        return Ok(text);
    };
    let mut text = v.lines.join("\n");
    let cursor = Cursor {
        rel: next,
        skip: 0,
        flags,
    };
    let end = match paged.halt {
        _ if v.alone_too_long => PageEnd::TooLongAlone,
        Some(Stop::Entries(max)) => PageEnd::Halted(max),
        Some(_) => PageEnd::Full,
        None => PageEnd::Full,
    };
    let words = ("matches", "match", NARROW);
    let notice = super::walk_cut_notice(budget, words, cursor, end, bind)?;
    append_notice(&mut text, &notice);
    Ok(text)
}

fn flatten(items: Vec<Item<Option<String>>>, out: &mut Vec<String>) {
    for item in items {
        if let Some(path) = item.value {
            out.push(path);
        }
        if let Some(children) = item.children {
            flatten(children, out);
        }
    }
}

/// The start of every printed match: the client's `path` exactly as given
/// (as `edit_file` names its file), with its trailing slashes replaced by one
/// `/`. A symlinked root keeps the spelling the client used, `sub/../sub`
/// stays as written, and a relative `path` gives relative matches; each
/// printed path, sent back, names the match. An empty `path` (the first
/// root) gives bare relative matches.
pub(super) fn client_prefix(given: &str) -> String {
    if given.is_empty() {
        return String::new();
    }
    format!("{}/", given.trim_end_matches('/'))
}

/// Runs the search.
pub fn run(ctx: &Ctx, mut p: Params) -> Result<Output> {
    let cursor = p.cursor.take();
    if cursor.is_some() && p.offset.is_some() {
        return Err(super::cursor_and_offset());
    }
    let offset = super::skip_arg(p.offset)?;
    let pattern = Pattern::new(&p.pattern, ctx.limits.max_pattern_bytes)?;
    let excludes = Excludes::new(
        &p.exclude_patterns,
        ExcludeStyle::Literal,
        ctx.limits.max_pattern_bytes,
        ctx.limits.max_exclude_patterns,
    )?;
    // Resolve once: the walk and the printed paths use the same root.
    let t = ctx.scope.resolve(&p.path)?;
    let dir = t.walk_start("scandir")?;
    let prefix = client_prefix(&t.given);
    let limits = ctx.walk_limits();
    let visitor = Search {
        pattern: &pattern,
        excludes: &excludes,
        prefix: &prefix,
        start: &t,
        budget: TextBudget::new(MAX_WALK_TEXT_BYTES),
    };
    let budget = ctx.reply_budget();
    if p.offset.is_none() && (cursor.is_some() || budget.max().is_some()) {
        // Pages: the walk stops once a page is full.
        let bind = super::cursor_binding(NAME, &t, &p);
        let from = cursor.map(|c| Cursor::decode(&c, &bind)).transpose()?;
        return page(&visitor, &dir, &limits, budget, from, &bind).map(Output::Text);
    }
    let (items, truncated) = tree::collect(&dir, &limits, &visitor)?;
    let mut found = Vec::new();
    flatten(items, &mut found);
    let note = truncated
        .and_then(Stop::truncation)
        .map(crate::text::fmt::truncation_note);
    if offset == 0 {
        let mut text = if found.is_empty() {
            "No matches found".to_owned()
        } else {
            found.join("\n")
        };
        if let Some(n) = &note {
            text.push_str(n);
        }
        if budget.fits_text(&text) {
            return Ok(Output::Text(text));
        }
    }
    let extra = note.as_ref().map_or(0, String::len);
    let (mut text, notice, end) = budget.page_text(&found, "\n", offset, extra, "matches", NARROW);
    drop(found);
    if let (true, Some(n)) = (end, &note) {
        text.push_str(n);
    }
    if let Some(n) = notice {
        append_notice(&mut text, &n);
    }
    Ok(Output::Text(text))
}

#[cfg(test)]
mod tests {
    use super::client_prefix;

    #[test]
    fn matches_keep_the_clients_spelling() {
        assert_eq!(client_prefix("/x/link/sub"), "/x/link/sub/");
        assert_eq!(client_prefix("/x/root/sub/../sub//"), "/x/root/sub/../sub/");
        assert_eq!(client_prefix("."), "./");
        assert_eq!(client_prefix("sub/"), "sub/");
        assert_eq!(client_prefix("/"), "/");
        assert_eq!(client_prefix(""), "");
    }
}
