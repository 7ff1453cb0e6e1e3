//! `read_text_file`: a bounded UTF-8 read of one file, or its first or last
//! lines. Touches: scope, file.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use super::{Bound, Capability, Ctx, Hints, Notes, Output, OutputKind, Plan, Tool, params, schema};
use crate::error::{Error, Result};
use crate::fs::file;
use crate::fs::version::Version;
use crate::limits::MAX_LINE_SCAN_BYTES;
use crate::text::budget::{ReplyBudget, append_notice, chars, cut_chars, whole_lines};
use crate::text::lines;

/// The tool description.
pub const DESCRIPTION: &str = "Read a file as text, whatever its extension (invalid UTF-8 is shown as U+FFFD). 'head' or 'tail' read only the first or last N lines; 'offset' and 'limit' read any range of lines.";

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Read,
    title: "Read Text File",
    description: DESCRIPTION,
    hints: Hints::READ_ONLY,
    input: schema::<Params>,
    paths: &["path"],
    output: OutputKind::Versioned,
    plan: Plan::text_read,
    notes: Notes {
        advice: Some((
            1,
            "to read part of a file, read_text_file with offset and limit (lineNumbers: true numbers the lines) beats reading it whole",
        )),
        bound: Some(Bound::Read),
    },
    run: |ctx, args| run(ctx, params(NAME, args)?),
};

/// The tool's name as a literal, for texts built at compile time
/// (`concat!`): `read_file`'s description names this tool.
macro_rules! name {
    () => {
        "read_text_file"
    };
}
pub(super) use name;

const NAME: &str = name!();

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    /// The file to read.
    pub path: String,
    /// If provided, returns only the last N lines of the file
    #[serde(default)]
    #[schemars(with = "f64")]
    pub tail: Option<f64>,
    /// If provided, returns only the first N lines of the file
    #[serde(default)]
    #[schemars(with = "f64")]
    pub head: Option<f64>,
    /// First line to read, 1-based (not with head or tail).
    #[serde(default)]
    #[schemars(with = "i64", range(min = 1))]
    pub offset: Option<i64>,
    /// Lines to read from offset.
    #[serde(default)]
    #[schemars(with = "i64", range(min = 1))]
    pub limit: Option<i64>,
    /// Number the lines as `cat -n` does.
    #[serde(default)]
    #[schemars(with = "bool")]
    pub line_numbers: Option<bool>,
}

/// Reads the file, whole, by head/tail, or by a line range. A `head` or
/// `tail` of 0 means "not given", as in the reference.
pub fn run(ctx: &Ctx, p: Params) -> Result<Output> {
    let head = p.head.filter(|n| *n != 0.0);
    let tail = p.tail.filter(|n| *n != 0.0);
    let numbers = p.line_numbers.unwrap_or(false);
    let ranged = p.offset.is_some() || p.limit.is_some() || numbers;
    if ranged && (head.is_some() || tail.is_some()) {
        return Err(Error::RangeAndHeadTail);
    }
    let first = at_least_one("offset", p.offset)?.unwrap_or(1);
    let count = at_least_one("limit", p.limit)?;
    let t = ctx.scope.resolve(&p.path)?;
    let limit = ctx.limits.max_read_bytes;
    let budget = ReplyBudget::new(ctx.limits.max_reply_chars);
    let (text, version) = match (head, tail) {
        (Some(_), Some(_)) => {
            return Err(Error::HeadAndTail);
        }
        (Some(n), None) => {
            let (text, version) = file::read_head(&ctx.io, &t, n, limit)?;
            let asked = n.ceil().min(u64::MAX as f64) as u64;
            (cut_head(&budget, text, asked), version)
        }
        (None, Some(n)) => {
            let (text, version) = file::read_tail(&ctx.io, &t, n, limit)?;
            (cut_tail(&budget, text), version)
        }
        (None, None) if ranged => {
            let range = lines::Range {
                first,
                count,
                numbers,
            };
            let caps = lines::Caps {
                whole_chars: budget.max().unwrap_or(usize::MAX),
                cut_chars: budget.room(),
                bytes: usize::try_from(limit).unwrap_or(usize::MAX),
            };
            let ((mut text, end), version) = file::read_range(
                &ctx.io,
                &t,
                range,
                caps,
                MAX_LINE_SCAN_BYTES,
                &ctx.cancel,
                limit,
            )?;
            if let Some(notice) = range_notice(&budget, limit, range, end) {
                append_notice(&mut text, &notice);
            }
            (text, version)
        }
        (None, None) => {
            let bytes = file::read_all(&ctx.io, &t, limit)?;
            let version = Version::of(&bytes);
            let text = match String::from_utf8(bytes) {
                Ok(s) => s,
                Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            };
            (cut_whole(&budget, text), Some(version))
        }
    };
    // The version goes in `structuredContent` only: the text is the
    // file's, as the reference returns it.
    Ok(Output::Text(text).with_version(version.as_ref()))
}

/// `value`, refused below 1.
fn at_least_one(arg: &'static str, value: Option<i64>) -> Result<Option<u64>> {
    match value {
        None => Ok(None),
        Some(v) if v >= 1 => Ok(Some(v.unsigned_abs())),
        Some(v) => Err(Error::BelowMinimum {
            arg,
            value: v,
            min: 1,
        }),
    }
}

/// The notice that ends a range read, if it needs one.
fn range_notice(
    budget: &ReplyBudget,
    read_limit: u64,
    range: lines::Range,
    end: lines::End,
) -> Option<String> {
    let words = |cap| match cap {
        lines::Cap::Chars => budget.cut_words(),
        lines::Cap::Bytes => {
            format!("[reply cut at the {read_limit}-byte read limit (--max-read-bytes)")
        }
    };
    // The rest of a range given a limit keeps the limit's end.
    let and_limit = |next: u64| {
        range
            .count
            .map(|c| (range.first + c).saturating_sub(next))
            .filter(|rest| *rest > 0)
            .map(|rest| format!(" and limit: {rest}"))
            .unwrap_or_default()
    };
    match end {
        lines::End::Complete => None,
        lines::End::PastEof { lines } => Some(format!(
            "[offset {} is past the end of the file: it has {lines} lines]",
            range.first
        )),
        lines::End::Cut { cap, next } => Some(format!(
            "{}: lines {}-{} shown; to continue, call again with offset: {next}{}]",
            words(cap),
            range.first,
            next - 1,
            and_limit(next)
        )),
        lines::End::LongLine { cap, line, shown } => {
            let next = line + 1;
            let rest = and_limit(next);
            Some(format!(
                "{}: line {line} alone is longer than that, only its first {shown} characters are shown; the next line is offset: {next}{rest}]",
                words(cap)
            ))
        }
    }
}

/// The start of a first line that alone outgrows the budget, with the
/// notice that says so and where the next line starts.
fn first_line_cut(budget: &ReplyBudget, text: &str, room: usize) -> String {
    let mut out = cut_chars(text, room).to_owned();
    let notice = format!(
        "{}: line 1 alone is longer than that, only its first {} characters are shown; the next line is offset: 2]",
        budget.cut_words(),
        chars(&out)
    );
    append_notice(&mut out, &notice);
    out
}

/// A whole-file read cut to the budget at a line end.
fn cut_whole(budget: &ReplyBudget, text: String) -> String {
    if budget.fits_text(&text) {
        return text;
    }
    let room = budget.room();
    let (kept, n) = whole_lines(&text, room);
    if n == 0 {
        return first_line_cut(budget, &text, room);
    }
    let mut out = kept.to_owned();
    let notice = format!(
        "{}: lines 1-{n} shown; to continue, call again with offset: {}]",
        budget.cut_words(),
        n + 1
    );
    append_notice(&mut out, &notice);
    out
}

/// The first lines of a `head` that fit, and how to read the others.
fn cut_head(budget: &ReplyBudget, text: String, asked: u64) -> String {
    if budget.fits_text(&text) {
        return text;
    }
    let room = budget.room();
    let (kept, n) = whole_lines(&text, room);
    if n == 0 {
        return first_line_cut(budget, &text, room);
    }
    let mut out = kept.strip_suffix('\n').unwrap_or(kept).to_owned();
    let notice = format!(
        "{}: lines 1-{n} of the {asked} asked for shown; to continue, call again with offset: {} and limit: {} instead of head]",
        budget.cut_words(),
        n + 1,
        asked.saturating_sub(n as u64)
    );
    append_notice(&mut out, &notice);
    out
}

/// The first lines of a `tail` that fit, and the `tail` that gives the
/// others (the last lines not shown).
fn cut_tail(budget: &ReplyBudget, text: String) -> String {
    if budget.fits_text(&text) {
        return text;
    }
    let room = budget.room();
    let parts = text.matches('\n').count() + 1;
    let (kept, n) = whole_lines(&text, room);
    if n == 0 {
        let mut out = cut_chars(&text, room).to_owned();
        let notice = format!(
            "{}: the first of the last {parts} lines alone is longer than that, only its first {} characters are shown; the lines after it are tail: {}]",
            budget.cut_words(),
            chars(&out),
            parts - 1
        );
        append_notice(&mut out, &notice);
        return out;
    }
    let mut out = kept.strip_suffix('\n').unwrap_or(kept).to_owned();
    let notice = format!(
        "{}: the first {n} of the last {parts} lines shown; to continue, call again with tail: {}]",
        budget.cut_words(),
        parts - n
    );
    append_notice(&mut out, &notice);
    out
}
