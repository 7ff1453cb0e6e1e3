//! `list_directory_with_sizes`: entries with `lstat` sizes, sorted by name
//! or size, and a summary. A symlink is shown as `[LINK]` with no size: its
//! target is never stat'ed. Touches: scope, walk.

use std::cmp::Ordering;

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use super::list_directory::{NARROW, prefix};
use super::{Capability, Ctx, Hints, Notes, Output, OutputKind, Plan, Tool, params, schema};
use crate::error::Result;
use crate::fs::walk::{self, Kind};
use crate::text::budget::append_notice;
use crate::text::fmt::{list_truncated_line, printable, push_line};

/// The tool description.
pub const DESCRIPTION: &str = "List the entries of a directory with their sizes, each marked [FILE], [DIR] or [LINK], then the totals.";

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Read,
    title: "List Directory with Sizes",
    description: DESCRIPTION,
    hints: Hints::READ_ONLY,
    input: schema::<Params>,
    paths: &["path"],
    output: OutputKind::Text,
    plan: Plan::listing,
    notes: Notes::NONE,
    run: |ctx, args| run(ctx, params(NAME, args)?),
};

const NAME: &str = "list_directory_with_sizes";

/// Sort order.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SortBy {
    /// By name, in a locale-independent approximation of ICU root collation.
    #[default]
    Name,
    /// By size, largest first.
    Size,
}

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    /// The directory to list.
    pub path: String,
    /// Sort entries by name or size
    #[serde(default)]
    pub sort_by: SortBy,
    /// Entries to skip, in sorted order; a cut reply gives the next offset.
    #[serde(default)]
    #[schemars(with = "i64", range(min = 0))]
    pub offset: Option<i64>,
}

/// Formats a byte count as the reference does (`1.50 MB`).
pub fn format_size(bytes: u64) -> String {
    if bytes == 0 {
        return "0 B".to_owned();
    }
    let units = ["B", "KB", "MB", "GB", "TB"];
    let mut i = 0usize;
    while i + 1 < units.len() && bytes >= 1024u64.pow(i as u32 + 1) {
        i += 1;
    }
    if i == 0 {
        return format!("{bytes} B");
    }
    // JavaScript's toFixed(2) rounds an exact tie up (1152 B is "1.13 KB");
    // Rust's `{:.2}` rounds it to even. bytes / 1024^i is exact, so integer
    // hundredths with ties up reproduce toFixed exactly.
    let den = 1u128 << (10 * i);
    let num = u128::from(bytes) * 100;
    let hundredths = num / den + u128::from(2 * (num % den) >= den);
    format!(
        "{}.{:02} {}",
        hundredths / 100,
        hundredths % 100,
        units.get(i).copied().unwrap_or("TB")
    )
}

const PUNCT: &str = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";

fn fold(c: char) -> (u8, u32, u32, u8) {
    // (class, primary, secondary, tertiary)
    if c.is_whitespace() {
        return (0, c as u32, 0, 0);
    }
    if let Some(i) = PUNCT.find(c) {
        return (1, i as u32, 0, 0);
    }
    if c.is_ascii_digit() {
        return (3, c as u32, 0, 0);
    }
    let lower = c.to_lowercase().next().unwrap_or(c);
    let tertiary = u8::from(c != lower);
    let (base, accent) = match lower {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' => ('a', lower as u32),
        'ç' => ('c', lower as u32),
        'è' | 'é' | 'ê' | 'ë' => ('e', lower as u32),
        'ì' | 'í' | 'î' | 'ï' => ('i', lower as u32),
        'ñ' => ('n', lower as u32),
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' => ('o', lower as u32),
        'ù' | 'ú' | 'û' | 'ü' => ('u', lower as u32),
        'ý' | 'ÿ' => ('y', lower as u32),
        other => (other, 0),
    };
    if base.is_alphabetic() {
        (4, base as u32, accent, tertiary)
    } else {
        (5, base as u32, 0, tertiary)
    }
}

/// A deterministic, locale-independent approximation of ICU root collation
/// (`localeCompare`): punctuation before digits before letters, letters
/// case- and accent-insensitive first, then accents, then lowercase first,
/// then bytes.
pub fn collate(a: &str, b: &str) -> Ordering {
    let ka: Vec<_> = a.chars().map(fold).collect();
    let kb: Vec<_> = b.chars().map(fold).collect();
    let primary = |k: &[(u8, u32, u32, u8)]| k.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>();
    primary(&ka)
        .cmp(&primary(&kb))
        .then_with(|| ka.iter().map(|x| x.2).cmp(kb.iter().map(|x| x.2)))
        .then_with(|| ka.iter().map(|x| x.3).cmp(kb.iter().map(|x| x.3)))
        .then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// Lists with sizes and the summary lines.
pub fn run(ctx: &Ctx, p: Params) -> Result<Output> {
    let offset = super::skip_arg(p.offset)?;
    let t = ctx.scope.resolve(&p.path)?;
    let (mut entries, truncated) = walk::read_entries(&t, true, ctx.limits.max_list_entries)?;
    match p.sort_by {
        SortBy::Name => entries.sort_by(|a, b| collate(&a.name, &b.name)),
        SortBy::Size => entries.sort_by_key(|e| std::cmp::Reverse(e.size.unwrap_or(0))),
    }
    let mut lines = Vec::with_capacity(entries.len() + 3);
    let (mut files, mut dirs, mut total) = (0u64, 0u64, 0u64);
    for e in &entries {
        match e.kind {
            Kind::Dir => {
                dirs += 1;
                lines.push(format!("[DIR] {:<30} ", printable(&e.name)));
            }
            Kind::Symlink => {
                files += 1;
                lines.push(format!("{} {:<30} ", prefix(e.kind), printable(&e.name)));
            }
            Kind::File | Kind::Other => {
                files += 1;
                let size = e.size.unwrap_or(0);
                total += size;
                lines.push(format!(
                    "[FILE] {:<30} {:>10}",
                    printable(&e.name),
                    format_size(size)
                ));
            }
        }
    }
    drop(entries);
    // The totals always cover the whole directory.
    let summary = format!(
        "Total: {files} files, {dirs} directories\nCombined size: {}",
        format_size(total)
    );
    let cap_line = truncated.then(|| list_truncated_line(ctx.limits.max_list_entries));
    let budget = ctx.reply_budget();
    if offset == 0 {
        let mut whole = lines.join("\n");
        if let Some(line) = &cap_line {
            push_line(&mut whole, line);
        }
        if !lines.is_empty() || cap_line.is_some() {
            whole.push('\n');
        }
        whole.push('\n');
        whole.push_str(&summary);
        if budget.fits_text(&whole) {
            return Ok(Output::Text(whole));
        }
    }
    let extra = summary.len() + 2 + cap_line.as_ref().map_or(0, |l| l.len() + 1);
    let (mut text, notice, end) = budget.page_text(&lines, "\n", offset, extra, "entries", NARROW);
    lines.clear();
    if let (true, Some(line)) = (end, &cap_line) {
        push_line(&mut text, line);
    }
    if !text.is_empty() {
        text.push('\n');
    }
    text.push('\n');
    text.push_str(&summary);
    if let Some(n) = notice {
        append_notice(&mut text, &n);
    }
    Ok(Output::Text(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_format_like_the_reference() {
        assert_eq!(format_size(0), "0 B");
        assert_eq!(format_size(1023), "1023 B");
        assert_eq!(format_size(1024), "1.00 KB");
        assert_eq!(format_size(1048575), "1024.00 KB");
        assert_eq!(format_size(1572864), "1.50 MB");
        assert_eq!(format_size(8397), "8.20 KB");
        assert_eq!(format_size(1152), "1.13 KB");
        assert_eq!(format_size(1664), "1.63 KB");
    }

    #[test]
    fn collation_matches_observed_reference_order() {
        let mut v = vec!["zeta", "Mid", "é", "beta", "alpha", "9", "10", "_u"];
        v.sort_by(|a, b| collate(a, b));
        assert_eq!(v, ["_u", "10", "9", "alpha", "beta", "é", "Mid", "zeta"]);
        let mut w = vec![
            "utf8.txt",
            "UPPER.PNG",
            "sub",
            ".git",
            ".env",
            "a",
            "bad.bin",
        ];
        w.sort_by(|a, b| collate(a, b));
        assert_eq!(
            w,
            [
                ".env",
                ".git",
                "a",
                "bad.bin",
                "sub",
                "UPPER.PNG",
                "utf8.txt"
            ]
        );
    }
}
