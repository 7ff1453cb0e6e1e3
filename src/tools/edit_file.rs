//! `edit_file`: exact, fail-closed text replacements, previewed as the
//! reference's unified diff and written through the one writer.
//! Touches: scope, atomic, file, edit, diff.
//!
//! The file is located like a write (an in-root final symlink is followed,
//! the link stays a link), read bounded, and refused unless valid UTF-8, so
//! no byte is ever rewritten lossily. Edits apply in order, each `oldText`
//! must occur exactly once, and nothing is normalized; any failing edit fails
//! the whole call and writes nothing. The write refuses to land if the file
//! changed after it was read (checked again after the exchange, by content),
//! and with `ifMatch` unless what was read is that version.

use rmcp::schemars::{self, JsonSchema};
use rustix::io::Errno;
use serde::Deserialize;

use super::{Capability, Ctx, Hints, Notes, Output, OutputKind, Plan, Tool, params, schema};
use crate::error::{Error, OsPaths, Result};
use crate::fs::atomic::{Dest, Guard};
use crate::fs::ifmatch::Condition;
use crate::fs::version::Version;
use crate::text::budget::{ReplyBudget, append_notice, whole_lines};
use crate::text::{diff, edit};

/// The tool description.
pub const DESCRIPTION: &str = "Make line-based edits to a text file. Each edit replaces exact text with new content; each oldText must match exactly once, byte for byte, or nothing is written. Returns a git-style diff of the changes.";

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Write,
    title: "Edit File",
    description: DESCRIPTION,
    hints: Hints::write(false, true),
    input: schema::<Params>,
    paths: &["path"],
    output: OutputKind::Versioned,
    plan: Plan::edit,
    notes: Notes::NONE,
    run: |ctx, args| run(ctx, params(NAME, args)?),
};

const NAME: &str = "edit_file";

/// One replacement.
// Inlined in the schema (no `$defs`/`$ref`), as the reference advertises it
// and as simpler clients need it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(inline)]
pub struct EditOperation {
    /// Text to search for - must match exactly
    pub old_text: String,
    /// Text to replace with
    pub new_text: String,
}

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    /// The file to edit.
    pub path: String,
    /// Applied in order.
    pub edits: Vec<EditOperation>,
    /// Preview changes using git-style diff format
    #[serde(default)]
    pub dry_run: bool,
    /// Refuse unless the file is at this version (a read's `version`).
    #[serde(default)]
    #[schemars(with = "String")]
    pub if_match: Option<String>,
}

/// Applies the edits (unless `dryRun`) and returns the diff.
pub fn run(ctx: &Ctx, p: Params) -> Result<Output> {
    if p.edits.len() > ctx.limits.max_edits {
        return Err(Error::TooManyEdits {
            given: p.edits.len(),
            limit: ctx.limits.max_edits,
        });
    }
    let t = ctx.scope.resolve(&p.path)?;
    let dest = Dest::locate(&t)?;
    let cond = Condition {
        if_match: p.if_match.as_deref(),
        require: ctx.limits.require_if_match && !p.dry_run,
        limit: ctx.limits.max_read_bytes,
        op: "edit",
        tool: NAME,
        readers: super::version_readers(),
    };
    if !dest.exists() {
        return Err(Error::os(Errno::NOENT, "open", OsPaths::one(&p.path)));
    }
    cond.require_for_existing(&p.path, true)?;
    // The read the edits apply to, the check and the write are one step
    // for writers through tuls.
    let _lock = dest.lock();
    let bytes = dest.read_all(&ctx.io, ctx.limits.max_read_bytes)?;
    let version = Version::of(&bytes);
    cond.compare(&p.path, &version)?;
    let old = String::from_utf8(bytes).map_err(|e| Error::NotUtf8 {
        tool: NAME,
        path: p.path.clone(),
        offset: e.utf8_error().valid_up_to(),
    })?;
    let edits: Vec<edit::Edit<'_>> = p
        .edits
        .iter()
        .map(|e| edit::Edit {
            old_text: &e.old_text,
            new_text: &e.new_text,
        })
        .collect();
    let new = edit::apply_edits(&old, &edits).map_err(|reason| Error::EditFailed {
        path: p.path.clone(),
        reason: reason.into(),
    })?;
    let diff = diff::unified_diff(&p.path, &old, &new);
    let mut after = version;
    if !p.dry_run && new != old {
        let guard = Guard::Content {
            version: after,
            limit: ctx.limits.max_read_bytes,
            named: p.if_match.is_some(),
        };
        after = dest.replace(new.as_bytes(), guard, &ctx.io.recorder)?;
    }
    let text = cut_diff(&ctx.reply_budget(), diff, p.dry_run);
    Ok(Output::Text(text).with_version(Some(&after)))
}

/// A diff cut to the reply budget at a whole line, its fence closed, with
/// a notice saying whether the edits were written and how to see the file.
fn cut_diff(budget: &ReplyBudget, diff: String, dry_run: bool) -> String {
    if budget.fits_text(&diff) {
        return diff;
    }
    let fence: String = diff.chars().take_while(|c| *c == '`').collect();
    let total = diff.lines().count();
    let (kept, n) = whole_lines(&diff, budget.room().saturating_sub(fence.len() + 1));
    let mut out = kept.to_owned();
    out.push_str(&fence);
    out.push('\n');
    let done = if dry_run {
        "nothing was written (dryRun)"
    } else {
        "the edits were written"
    };
    let notice = format!(
        "{}: the diff is cut after {n} of its {total} lines; {done}; see the file with {} offset and limit]",
        budget.cut_words(),
        super::read_text_file::TOOL.name
    );
    append_notice(&mut out, &notice);
    out
}
