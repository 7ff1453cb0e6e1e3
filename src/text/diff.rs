//! Unified-diff rendering for edit previews. This module owns reproducing,
//! byte for byte, the diff the reference Node server
//! (`@modelcontextprotocol/server-filesystem`) returns from `edit_file`:
//! jsdiff's `createTwoFilesPatch(path, path, old, new, "original", "modified")`
//! with 4 lines of context, inside a markdown `diff` code fence. The line
//! alignment is a step-for-step port of jsdiff's Myers variant (its tie-breaks
//! decide which of several equally short diffs is printed); past a work budget
//! it falls back to the `similar` crate. Pure string processing: no I/O.

use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use similar::{Algorithm, DiffTag};

/// Lines of context around each change, and jsdiff's default.
const CONTEXT: usize = 4;
const UNDERLINE: &str = "===================================================================";
/// Follows a last line that lacks its newline.
const NO_EOL: &str = "\n\\ No newline at end of file\n";
/// Diagonal steps plus matched lines the exact jsdiff alignment may spend
/// (bounds CPU on huge rewrites) before falling back to `similar`.
/// About 0.2 s of release-build CPU; reached by full rewrites of ~2000 lines.
const WORK_BUDGET: usize = 10_000_000;
const FALLBACK_DEADLINE: Duration = Duration::from_secs(1);

/// Renders the reference server's fenced unified diff of `old` -> `new`.
///
/// The result is `<fence>diff\n<patch><fence>\n\n`, where `<patch>` is the
/// jsdiff patch text (always ending in `\n`) and `<fence>` is three backticks,
/// or one more than the longest backtick run inside the patch.
pub fn unified_diff(display_path: &str, old: &str, new: &str) -> String {
    let patch = format_patch(display_path, old, new, WORK_BUDGET);
    let longest_run = patch.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest_run.saturating_add(1).max(3));
    format!("{fence}diff\n{patch}{fence}\n\n")
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Equal,
    Removed,
    Added,
}

/// A patch line: prefix (' ', '-' or '+') and the line with its newline.
type Line<'t> = (char, &'t str);
/// A hunk before formatting: first old/new line numbers and its lines.
type Hunk<'t> = (usize, usize, Vec<Line<'t>>);

/// Line alignment as jsdiff change objects: runs of (kind, line count).
fn align<'t>(old: &[&'t str], new: &[&'t str], budget: usize) -> Vec<(Kind, usize)> {
    // Intern lines so the diff compares integers.
    let mut ids: HashMap<&'t str, u32> = HashMap::new();
    let mut intern = |lines: &[&'t str]| -> Vec<u32> {
        let mut id = |line| {
            let next = u32::try_from(ids.len()).unwrap_or(u32::MAX);
            *ids.entry(line).or_insert(next)
        };
        lines.iter().map(|line| id(*line)).collect()
    };
    let (old, new) = (intern(old), intern(new));
    jsdiff_runs(&old, &new, budget).unwrap_or_else(|| similar_runs(&old, &new))
}

/// A jsdiff change-object node; paths share their history through `prev`.
struct Node {
    kind: Kind,
    count: usize,
    prev: Option<Rc<Node>>,
}

fn node(kind: Kind, count: usize, prev: Option<Rc<Node>>) -> Option<Rc<Node>> {
    Some(Rc::new(Node { kind, count, prev }))
}

impl Drop for Node {
    // Unlink iteratively so dropping a long history cannot overflow the stack.
    fn drop(&mut self) {
        let mut next = self.prev.take();
        while let Some(rc) = next {
            next = Rc::try_unwrap(rc)
                .ok()
                .and_then(|mut node| node.prev.take());
        }
    }
}

/// A furthest-reaching path on one diagonal (`diagonal = old_pos - new_pos`;
/// positions are of the last consumed token, -1 before the first).
#[derive(Clone)]
struct Path {
    old_pos: isize,
    last: Option<Rc<Node>>,
}

impl Path {
    /// jsdiff `addToPath`: one more removed/added token, merged into a run.
    fn extend(&self, kind: Kind, old_inc: isize) -> Path {
        let last = match &self.last {
            Some(n) if n.kind == kind => node(kind, n.count + 1, n.prev.clone()),
            _ => node(kind, 1, self.last.clone()),
        };
        let old_pos = self.old_pos + old_inc;
        Path { old_pos, last }
    }

    /// jsdiff `extractCommon`: follow the snake; returns the new position.
    fn slide(&mut self, old: &[u32], new: &[u32], diagonal: isize, work: &mut usize) -> isize {
        let at = |v: &[u32], i: isize| usize::try_from(i).ok().and_then(|i| v.get(i)).copied();
        let (mut new_pos, mut count) = (self.old_pos - diagonal, 0usize);
        while let (Some(a), Some(b)) = (at(old, self.old_pos + 1), at(new, new_pos + 1)) {
            if a != b {
                break;
            }
            (self.old_pos, new_pos, count) = (self.old_pos + 1, new_pos + 1, count + 1);
        }
        *work = work.saturating_add(count);
        if count > 0 {
            self.last = node(Kind::Equal, count, self.last.take());
        }
        new_pos
    }

    fn runs(&self) -> Vec<(Kind, usize)> {
        let mut runs = Vec::new();
        let mut node = self.last.as_deref();
        while let Some(n) = node {
            runs.push((n.kind, n.count));
            node = n.prev.as_deref();
        }
        runs.reverse();
        runs
    }
}

fn cell(best: &mut [Option<Path>], offset: isize, d: isize) -> Option<&mut Option<Path>> {
    usize::try_from(d.checked_add(offset)?)
        .ok()
        .and_then(|i| best.get_mut(i))
}

/// jsdiff's `Diff.diff` (forward Myers with its tie-breaking and diagonal
/// pruning), step for step. `None` once `budget` work is spent.
fn jsdiff_runs(old: &[u32], new: &[u32], budget: usize) -> Option<Vec<(Kind, usize)>> {
    let old_len = isize::try_from(old.len()).ok()?;
    let new_len = isize::try_from(new.len()).ok()?;
    let mut work = 0usize;
    let mut first = Path {
        old_pos: -1,
        last: None,
    };
    let new_pos = first.slide(old, new, 0, &mut work);
    if first.old_pos + 1 >= old_len && new_pos + 1 >= new_len {
        return Some(first.runs());
    }
    // best[d + offset] is jsdiff's `bestPath[d]`.
    let offset = new_len.checked_add(1)?;
    let mut best = vec![None; old.len().checked_add(new.len())?.checked_add(3)?];
    *cell(&mut best, offset, 0)? = Some(first);
    let (mut min_d, mut max_d) = (isize::MIN, isize::MAX);
    for edit_len in 1..=old_len.checked_add(new_len)? {
        let mut d = min_d.max(-edit_len);
        while d <= max_d.min(edit_len) {
            work = work.saturating_add(1);
            if work > budget {
                return None;
            }
            // jsdiff clears bestPath[d - 1] once read; bestPath[d + 1] stays.
            let remove = cell(&mut best, offset, d - 1).and_then(Option::take);
            let add = cell(&mut best, offset, d + 1).and_then(|p| p.clone());
            let remove = remove.filter(|p| p.old_pos + 1 < old_len);
            let add = add.filter(|p| (0..new_len).contains(&(p.old_pos - d)));
            let next = match (remove, add) {
                (Some(r), Some(a)) if r.old_pos < a.old_pos => Some(a.extend(Kind::Added, 0)),
                (Some(r), _) => Some(r.extend(Kind::Removed, 1)),
                (None, a) => a.map(|a| a.extend(Kind::Added, 0)),
            };
            let next = next.map(|mut path| {
                let new_pos = path.slide(old, new, d, &mut work);
                if path.old_pos + 1 >= old_len {
                    max_d = max_d.min(d - 1);
                }
                if new_pos + 1 >= new_len {
                    min_d = min_d.max(d + 1);
                }
                (path, new_pos)
            });
            match next {
                Some((path, new_pos)) if path.old_pos + 1 >= old_len && new_pos + 1 >= new_len => {
                    return Some(path.runs());
                }
                // Diagonals outside the table never hold a path: skip those.
                next => {
                    if let Some(slot) = cell(&mut best, offset, d) {
                        *slot = next.map(|(path, _)| path);
                    }
                }
            }
            d += 2;
        }
    }
    None
}

/// Fallback alignment from `similar` (Myers with a deadline) for inputs whose
/// edit distance exceeds the budget: a valid diff, not jsdiff's exact one.
fn similar_runs(old: &[u32], new: &[u32]) -> Vec<(Kind, usize)> {
    let deadline = Instant::now().checked_add(FALLBACK_DEADLINE);
    let ops = similar::capture_diff_slices_deadline(Algorithm::Myers, old, new, deadline);
    let runs = ops.iter().flat_map(|op| match op.as_tag_tuple() {
        (DiffTag::Equal, old, _) => [(Kind::Equal, old.len()), (Kind::Added, 0)],
        (_, old, new) => [(Kind::Removed, old.len()), (Kind::Added, new.len())],
    });
    runs.filter(|&(_, n)| n > 0).collect()
}

/// `lines[at..at + n]`, each paired with `tag`.
fn tagged<'t>(tag: char, lines: &[&'t str], at: usize, n: usize) -> impl Iterator<Item = Line<'t>> {
    let part = lines.get(at..at.saturating_add(n)).unwrap_or_default();
    part.iter().map(move |line| (tag, *line))
}

/// jsdiff's `structuredPatch` hunk building, step for step.
fn build_hunks<'t>(old: &[&'t str], new: &[&'t str], runs: &[(Kind, usize)]) -> Vec<Hunk<'t>> {
    let mut hunks = Vec::new();
    let mut open: Option<Hunk<'t>> = None;
    // 0-based cursors into `old` / `new` (jsdiff's oldLine - 1, newLine - 1).
    let (mut old_at, mut new_at, mut prev_equal) = (0usize, 0usize, 0usize);
    // jsdiff appends an empty equal component; index `runs.len()` is it.
    for i in 0..=runs.len() {
        let (kind, count) = runs.get(i).copied().unwrap_or((Kind::Equal, 0));
        if kind != Kind::Equal {
            let (_, _, lines) = open.get_or_insert_with(|| {
                // Context: the tail of the preceding equal run, if any.
                let n = prev_equal.min(CONTEXT);
                let (old_from, new_from) = (old_at.saturating_sub(n), new_at.saturating_sub(n));
                let context = tagged(' ', old, old_from, n).collect();
                (old_from + 1, new_from + 1, context)
            });
            let (prefix, source, at) = if kind == Kind::Added {
                ('+', new, &mut new_at)
            } else {
                ('-', old, &mut old_at)
            };
            lines.extend(tagged(prefix, source, *at, count));
            *at += count;
            continue;
        }
        if let Some((old_start, new_start, mut lines)) = open.take() {
            // Short gaps join the hunk unless this is the last real run
            // (jsdiff: `i < diff.length - 2`, sentinel counted).
            let join = count <= CONTEXT * 2 && i + 1 < runs.len();
            let take = if join { count } else { count.min(CONTEXT) };
            lines.extend(tagged(' ', old, old_at, take));
            if join {
                open = Some((old_start, new_start, lines));
            } else {
                hunks.push((old_start, new_start, lines));
            }
        }
        (old_at, new_at, prev_equal) = (old_at + count, new_at + count, count);
    }
    hunks
}

/// jsdiff's `createTwoFilesPatch` + `formatPatch` text, ending in `\n`.
fn format_patch(path: &str, old: &str, new: &str, budget: usize) -> String {
    // jsdiff's line tokens: each line keeps its `\n` (a `\r` before it stays
    // part of the line), the last may lack one, and "" has no lines.
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let mut out =
        format!("Index: {path}\n{UNDERLINE}\n--- {path}\toriginal\n+++ {path}\tmodified\n");
    let runs = align(&old_lines, &new_lines, budget);
    for (old_start, new_start, lines) in build_hunks(&old_lines, &new_lines, &runs) {
        let old_count = lines.iter().filter(|(p, _)| *p != '+').count();
        let new_count = lines.iter().filter(|(p, _)| *p != '-').count();
        // Unified-diff quirk: an empty range starts one line earlier.
        let old_start = old_start.saturating_sub(usize::from(old_count == 0));
        let new_start = new_start.saturating_sub(usize::from(new_count == 0));
        out.push_str(&format!(
            "@@ -{old_start},{old_count} +{new_start},{new_count} @@\n"
        ));
        for (prefix, line) in lines {
            out.push(prefix);
            out.push_str(line);
            if !line.ends_with('\n') {
                out.push_str(NO_EOL);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "Index: p\n===================================================================\n--- p\toriginal\n+++ p\tmodified\n";

    /// `path|old|new|hunks`: the first five are outputs of the reference
    /// server; the rest were printed by jsdiff 8.0.4's `createTwoFilesPatch`
    /// with `{context: 4}`, which is what the reference server calls.
    const CASES: [&str; 15] = [
        "/b/allowed/py.py|def f():\n    if x:\n        return 1\n    return 2\n|def f():\n    if y:\n      return 10\n    return 2\n|@@ -1,4 +1,4 @@\n def f():\n-    if x:\n-        return 1\n+    if y:\n+      return 10\n     return 2\n",
        "/b/allowed/dup.txt|x = 1\ny = 2\nx = 1\n|x = 9\ny = 2\nx = 1\n|@@ -1,3 +1,3 @@\n-x = 1\n+x = 9\n y = 2\n x = 1\n",
        "/b/allowed/noeol.txt|x\ny\nz|x\ny\nz|",
        "/b/allowed/noeol.txt|x\ny\nz|x\n$& $1 $$\nz|@@ -1,3 +1,3 @@\n x\n-y\n+$& $1 $$\n z\n\\ No newline at end of file\n",
        "p|a\nb\nc\n|A\nB\nc\n|@@ -1,3 +1,3 @@\n-a\n-b\n+A\n+B\n c\n",
        "p|a|a\n|@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+a\n",
        "p|a\n|a|@@ -1,1 +1,1 @@\n-a\n+a\n\\ No newline at end of file\n",
        "p|a\nb\n||@@ -1,2 +0,0 @@\n-a\n-b\n",
        "p||x\ny|@@ -0,0 +1,2 @@\n+x\n+y\n\\ No newline at end of file\n",
        "p|||",
        "p|a\nb|a\nc\n|@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n",
        "p|a\r\nb\r\nc\r\n|a\r\nB\r\nc\r\n|@@ -1,3 +1,3 @@\n a\r\n-b\r\n+B\r\n c\r\n",
        "p|a\rb\nc\n|a\rB\nc\n|@@ -1,2 +1,2 @@\n-a\rb\n+a\rB\n c\n",
        "p|}\nc\nx\na\na\nc\n|}\nc\nx\n}\na\nc\n|@@ -1,6 +1,6 @@\n }\n c\n x\n+}\n a\n-a\n c\n",
        "p|a\nb\nc\n|c\nb\na\n|@@ -1,3 +1,3 @@\n-a\n-b\n c\n+b\n+a\n",
    ];

    #[test]
    fn matches_reference_server_and_jsdiff() {
        for case in CASES {
            let mut parts = case.split('|');
            let (Some(p), Some(old), Some(new), Some(hunks)) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                panic!("malformed case {case:?}");
            };
            let head = format!("Index: {p}\n{UNDERLINE}\n--- {p}\toriginal\n+++ {p}\tmodified\n");
            let expected = format!("```diff\n{head}{hunks}```\n\n");
            assert_eq!(unified_diff(p, old, new), expected, "{old:?} -> {new:?}");
        }
    }

    /// Diff of lines `l1..=ln` against the same with `upper` lines as `L<i>`.
    fn numbered_diff(n: usize, upper: &[usize]) -> String {
        let line = |i: usize, up: bool| format!("{}{i}\n", if up { 'L' } else { 'l' });
        let old: String = (1..=n).map(|i| line(i, false)).collect();
        let new: String = (1..=n).map(|i| line(i, upper.contains(&i))).collect();
        format_patch("p", &old, &new, WORK_BUDGET)
    }

    #[test]
    fn hunks_split_and_merge_like_jsdiff() {
        let far = "@@ -1,6 +1,6 @@\n l1\n-l2\n+L2\n l3\n l4\n l5\n l6\n@@ -14,7 +14,7 @@\n l14\n l15\n l16\n l17\n-l18\n+L18\n l19\n l20\n";
        assert_eq!(numbered_diff(20, &[2, 18]), format!("{HEADER}{far}"));
        // A gap of 8 unchanged lines joins the hunks; 9 splits them.
        let joined = numbered_diff(20, &[2, 11]);
        assert!(joined.contains("\n@@ -1,15 +1,15 @@\n") && joined.matches("@@ -").count() == 1);
        let split = numbered_diff(20, &[2, 12]);
        assert!(
            split.contains("\n@@ -1,6 +1,6 @@\n") && split.contains("\n@@ -8,9 +8,9 @@\n l8\n")
        );
        let tail = "@@ -8,5 +8,5 @@\n l8\n l9\n l10\n l11\n-l12\n+L12\n";
        assert_eq!(numbered_diff(12, &[12]), format!("{HEADER}{tail}"));
    }

    #[test]
    fn fence_outgrows_backtick_runs_in_the_patch() {
        let three = unified_diff("p", "x\n```\ny\n", "x\n```\nz\n");
        let hunk = "@@ -1,3 +1,3 @@\n x\n ```\n-y\n+z\n";
        assert_eq!(three, format!("````diff\n{HEADER}{hunk}````\n\n"));
        let four = unified_diff("p", "q\n", "q\n````\n");
        let hunk = "@@ -1,1 +1,2 @@\n q\n+````\n";
        assert_eq!(four, format!("`````diff\n{HEADER}{hunk}`````\n\n"));
        assert!(unified_diff("p", "``", "`` x").starts_with("```diff\n"));
    }

    #[test]
    fn over_budget_falls_back_to_a_valid_similar_diff() {
        let (old, new) = ("1\n2\n3\n", "a\nb\nc\n");
        assert!(jsdiff_runs(&[1, 2, 3], &[4, 5, 6], 2).is_none());
        let all = "@@ -1,3 +1,3 @@\n-1\n-2\n-3\n+a\n+b\n+c\n";
        assert_eq!(format_patch("p", old, new, 2), format!("{HEADER}{all}"));
        let (old, new) = ("a\nb\nc\nd\ne\n", "a\nB\nc\nd\nE\n");
        let (exact, fallback) = (
            format_patch("p", old, new, 99),
            format_patch("p", old, new, 0),
        );
        assert_eq!(exact, fallback);
    }
}
