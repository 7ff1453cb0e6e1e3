//! `list_directory`: one directory's entries, `[DIR]`, `[FILE]` or `[LINK]`,
//! never following a symlink. Touches: scope, walk.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use super::{Capability, Ctx, Hints, Notes, Output, OutputKind, Plan, Tool, params, schema};
use crate::error::Result;
use crate::fs::walk::{self, Kind};
use crate::text::budget::append_notice;
use crate::text::fmt::printable;
use crate::text::fmt::{list_truncated_line, push_line};

/// How a cut listing can be narrowed.
pub const NARROW: &str = "list a subdirectory";

/// The tool description.
pub const DESCRIPTION: &str =
    "List the entries of a directory, each marked [FILE], [DIR] or [LINK].";

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Read,
    title: "List Directory",
    description: DESCRIPTION,
    hints: Hints::READ_ONLY,
    input: schema::<Params>,
    paths: &["path"],
    output: OutputKind::Text,
    plan: Plan::listing,
    notes: Notes::NONE,
    run: |ctx, args| run(ctx, params(NAME, args)?),
};

const NAME: &str = "list_directory";

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The directory to list.
    pub path: String,
    /// Entries to skip; a cut reply gives the next offset.
    #[serde(default)]
    #[schemars(with = "i64", range(min = 0))]
    pub offset: Option<i64>,
}

/// The line prefix for an entry kind.
pub fn prefix(kind: Kind) -> &'static str {
    match kind {
        Kind::Dir => "[DIR]",
        Kind::Symlink => "[LINK]",
        Kind::File | Kind::Other => "[FILE]",
    }
}

/// Lists the directory in byte order of names.
pub fn run(ctx: &Ctx, p: Params) -> Result<Output> {
    let offset = super::skip_arg(p.offset)?;
    let t = ctx.scope.resolve(&p.path)?;
    let (entries, truncated) = walk::read_entries(&t, false, ctx.limits.max_list_entries)?;
    let mut lines: Vec<String> = entries
        .iter()
        .map(|e| format!("{} {}", prefix(e.kind), printable(&e.name)))
        .collect();
    drop(entries);
    let budget = ctx.reply_budget();
    let cap_line = truncated.then(|| list_truncated_line(ctx.limits.max_list_entries));
    if offset == 0 {
        let mut whole = lines.join("\n");
        if let Some(line) = &cap_line {
            push_line(&mut whole, line);
        }
        if budget.fits_text(&whole) {
            return Ok(Output::Text(whole));
        }
    }
    let extra = cap_line.as_ref().map_or(0, |l| l.len() + 1);
    let (mut text, notice, end) = budget.page_text(&lines, "\n", offset, extra, "entries", NARROW);
    lines.clear();
    if let (true, Some(line)) = (end, &cap_line) {
        push_line(&mut text, line);
    }
    if let Some(n) = notice {
        append_notice(&mut text, &n);
    }
    Ok(Output::Text(text))
}
