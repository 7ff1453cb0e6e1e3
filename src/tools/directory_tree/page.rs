//! `directory_tree`'s pages: a cut tree shown as the entries of one page
//! inside their ancestors, and the paged walk that makes a page without
//! walking the rest of the tree (see [`crate::fs::walk::paged`]).

use serde::Serialize;

use super::super::{PageEnd, walk_cut_notice};
use super::NARROW;
use super::render::{Sink, close_node, kind_name, open_node, pretty_string};
use crate::error::{Error, Result};
use crate::fs::cursor::{Binding, Cursor, FLAG_AFTER, FLAG_DEPTH_CUT, token_room};
use crate::fs::scope::Start;
use crate::fs::walk::paged::{self, Flow, Visit};
use crate::fs::walk::tree::Item;
use crate::fs::walk::{Bounds, Entry, Kind, Stop};
use crate::limits::MAX_WALK_TEXT_BYTES;
use crate::text::budget::{ReplyBudget, append_notice, chars};
use crate::text::glob::Excludes;

/// One walk entry in pre-order, with its depth and its parent's index.
pub(super) struct Flat<'a> {
    pub(super) entry: &'a Entry,
    pub(super) depth: usize,
    pub(super) parent: Option<usize>,
}

pub(super) fn flatten<'a>(
    items: &'a [Item<()>],
    depth: usize,
    parent: Option<usize>,
    out: &mut Vec<Flat<'a>>,
) {
    for item in items {
        let me = out.len();
        out.push(Flat {
            entry: &item.entry,
            depth,
            parent,
        });
        if let Some(children) = &item.children {
            flatten(children, depth + 1, Some(me), out);
        }
    }
}

/// A node of a page: the reference's shape, plus `continued` (this
/// directory was listed on an earlier page; here are more of its children)
/// and `more` (its children go on on the next page).
#[derive(Serialize)]
pub(super) struct PageNode<'a> {
    name: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    continued: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    more: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    children: Option<Vec<PageNode<'a>>>,
}

/// `i` and its ancestors, outermost first.
fn chain(flat: &[Flat<'_>], mut i: Option<usize>) -> Vec<usize> {
    let mut out = Vec::new();
    while let Some(j) = i {
        out.push(j);
        i = flat.get(j).and_then(|f| f.parent);
    }
    out.reverse();
    out
}

/// The tree of entries `start..end`, inside their ancestors.
pub(super) fn page_nodes<'a>(flat: &[Flat<'a>], start: usize, end: usize) -> Vec<PageNode<'a>> {
    let ancestors = chain(flat, flat.get(start).and_then(|f| f.parent));
    let open_after = if end < flat.len() {
        chain(flat, flat.get(end).and_then(|f| f.parent))
    } else {
        Vec::new()
    };
    let mut roots: Vec<PageNode<'a>> = Vec::new();
    let mut stack: Vec<(usize, PageNode<'a>)> = Vec::new();
    let close = |stack: &mut Vec<(usize, PageNode<'a>)>, roots: &mut Vec<PageNode<'a>>| {
        if let Some((_, node)) = stack.pop() {
            match stack.last_mut().and_then(|(_, p)| p.children.as_mut()) {
                Some(children) => children.push(node),
                None => roots.push(node),
            }
        }
    };
    let shown = ancestors.iter().copied().chain(start..end.min(flat.len()));
    for i in shown {
        let Some(f) = flat.get(i) else { continue };
        while stack.last().is_some_and(|(d, _)| *d >= f.depth) {
            close(&mut stack, &mut roots);
        }
        let node = PageNode {
            name: &f.entry.name,
            kind: kind_name(f.entry.kind),
            continued: i < start,
            more: open_after.binary_search(&i).is_ok(),
            children: (f.entry.kind == Kind::Dir).then(Vec::new),
        };
        stack.push((f.depth, node));
    }
    while !stack.is_empty() {
        close(&mut stack, &mut roots);
    }
    roots
}

/// Counts the characters put to it (names are counted by characters, so a
/// node's count is what the reply budget counts).
struct Chars(usize);

impl Sink for Chars {
    fn put(&mut self, s: &str) {
        self.0 += chars(s);
    }
}

/// The characters of `entry`'s node at `depth` in a page, without its
/// children and the brackets around its array: what each entry adds at
/// least.
fn node_chars(entry: &Entry, depth: usize) -> usize {
    let mut n = Chars(0);
    open_node(&mut n, entry, depth, false);
    close_node(&mut n, depth);
    n.0
}

/// One entry the walk gave.
struct Got {
    entry: Entry,
    depth: usize,
    rel: Vec<u8>,
}

/// Collects a page's entries until their nodes alone fill `room`.
struct Collect<'a> {
    excludes: &'a Excludes,
    room: usize,
    used: usize,
    got: Vec<Got>,
    /// The entry the walk stopped at (the next page's first).
    peek: Option<Got>,
}

impl Visit for Collect<'_> {
    fn wants_rel(&self) -> bool {
        !self.excludes.is_empty()
    }

    fn visit(&mut self, rel: &str, raw: &[u8], entry: &Entry, depth: usize) -> Flow {
        if !self.excludes.is_empty() && self.excludes.is_match(rel) {
            return Flow::Skip;
        }
        let got = Got {
            entry: entry.clone(),
            depth,
            rel: raw.to_vec(),
        };
        let cost = node_chars(entry, depth);
        if self.used.saturating_add(cost) > self.room && !self.got.is_empty() {
            self.peek = Some(got);
            return Flow::Stop;
        }
        self.used = self.used.saturating_add(cost);
        self.got.push(got);
        Flow::Go
    }
}

/// Adds `entry` at `depth` to `flat`, its parent the last directory added
/// one level up (`at_depth`: the last entry added at each depth).
fn push_flat<'a>(
    flat: &mut Vec<Flat<'a>>,
    at_depth: &mut Vec<usize>,
    entry: &'a Entry,
    depth: usize,
) {
    at_depth.truncate(depth.saturating_sub(1));
    // Shallower than its depth only on a tree that changed between pages.
    let parent = (at_depth.len() + 1 == depth)
        .then(|| at_depth.last().copied())
        .flatten()
        .filter(|&p| p != usize::MAX);
    at_depth.resize(depth.saturating_sub(1), usize::MAX);
    at_depth.push(flat.len());
    flat.push(Flat {
        entry,
        depth,
        parent,
    });
}

/// What a paged call needs besides the walk.
pub(super) struct PageCall<'a> {
    pub(super) start: &'a Start,
    pub(super) limits: &'a Bounds,
    pub(super) excludes: &'a Excludes,
    pub(super) budget: ReplyBudget,
    pub(super) from: Option<Cursor>,
    pub(super) bind: &'a Binding,
    /// The note for directories not descended at the depth cap.
    pub(super) depth_note: String,
}

/// One page of the tree, from the call's cursor (or the top), ending with
/// the notice that gives the next page's cursor.
pub(super) fn run(c: &PageCall<'_>) -> Result<String> {
    let token_max = token_room(c.budget.max().unwrap_or(0));
    let room = match c.budget.max() {
        Some(_) => c.budget.room().saturating_sub(token_max),
        None => MAX_WALK_TEXT_BYTES,
    };
    let mut v = Collect {
        excludes: c.excludes,
        room,
        used: 0,
        got: Vec::new(),
        peek: None,
    };
    let from = c
        .from
        .as_ref()
        .map(|f| (f.rel.as_slice(), f.flags & FLAG_AFTER != 0));
    let paged = paged::walk(c.start, from, c.limits, &mut v)?;
    let mut flags = c.from.as_ref().map_or(0, |f| f.flags & FLAG_DEPTH_CUT);
    if paged.depth_cut {
        flags |= FLAG_DEPTH_CUT;
    }
    // The page's entries after their ancestors from earlier pages (and
    // the next page's first entry, which says which directories go on).
    let chain: Vec<Entry> = paged
        .resumed_in
        .iter()
        .map(|n| Entry::from_bytes(n, Kind::Dir))
        .collect();
    let mut flat: Vec<Flat<'_>> = Vec::with_capacity(chain.len() + v.got.len() + 1);
    let mut at_depth: Vec<usize> = Vec::new();
    for (i, e) in chain.iter().enumerate() {
        push_flat(&mut flat, &mut at_depth, e, i + 1);
    }
    let first = flat.len();
    // A walk stopped by the entry cap has no next entry of its own: the
    // position stands in for it (only its depth matters, for the marks).
    let halted_at = match (&v.peek, &paged.next) {
        (None, Some(next)) => {
            let depth = next.split(|&b| b == b'/').count();
            let name = next.rsplit(|&b| b == b'/').next().unwrap_or_default();
            Some(Got {
                entry: Entry::from_bytes(name, Kind::File),
                depth,
                rel: next.clone(),
            })
        }
        _ => None,
    };
    for g in v
        .got
        .iter()
        .chain(v.peek.as_ref())
        .chain(halted_at.as_ref())
    {
        push_flat(&mut flat, &mut at_depth, &g.entry, g.depth);
    }
    let render = |e: serde_json::Error| Error::Internal(format!("cannot render tree: {e}"));
    let page_of = |k: usize| -> Result<String> {
        pretty_string(&page_nodes(&flat, first, first + k)).map_err(render)
    };
    let n = v.got.len();
    let fits = |k: usize| -> Result<Option<String>> {
        let text = page_of(k)?;
        Ok((chars(&text) <= room).then_some(text))
    };
    if paged.next.is_none()
        && let Some(mut text) = fits(n)?
    {
        // The walk reached the end, and the rest fits.
        if flags & FLAG_DEPTH_CUT != 0 {
            text.push_str(&c.depth_note);
        }
        return Ok(text);
    }
    // The largest page that fits, by bisection (its text grows with its
    // entries, give or take the ancestors and the "more" marks).
    let mut best = match n {
        0 => None,
        _ => fits(1)?.map(|t| (1, t)),
    };
    if best.is_some() {
        let (mut lo, mut hi) = (1usize, n);
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
    // The next page's first entry: the first not shown.
    let rel = match v.got.get(k) {
        Some(g) => g.rel.clone(),
        None => paged.next.clone().unwrap_or_default(),
    };
    let cursor = Cursor {
        rel,
        skip: 0,
        flags,
    };
    let end = match (k, paged.halt) {
        (0, _) if n > 0 => PageEnd::TooLongAlone,
        (_, Some(Stop::Entries(max))) if k == n => PageEnd::Halted(max),
        _ => PageEnd::Full,
    };
    let words = ("entries", "entry", NARROW);
    let notice = walk_cut_notice(c.budget, words, cursor, end, c.bind)?;
    append_notice(&mut text, &notice);
    Ok(text)
}
