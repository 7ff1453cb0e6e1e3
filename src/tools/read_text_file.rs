//! `read_text_file`: a bounded UTF-8 read of one file, or its first or last
//! lines. Touches: scope, file.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;

use super::{Bound, Capability, Ctx, Hints, Notes, Output, OutputKind, Plan, Tool, params, schema};
use crate::error::{Error, Result};
use crate::fs::cursor::{Binding, LineCursor};
use crate::fs::file;
use crate::fs::version::Version;
use crate::limits::MAX_LINE_SCAN_BYTES;
use crate::text::budget::{ReplyBudget, append_notice, chars, cut_chars, whole_lines};
use crate::text::lines;

mod long_line;

use long_line::{Mode, more_of};

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
    // Where to go on inside a line too long for one reply: the cursor a cut
    // reply gave. No doc comment, so no description in tools/list: the cut
    // reply's notice says how to use it.
    #[serde(default)]
    #[schemars(with = "String")]
    #[expect(
        missing_docs,
        reason = "a doc comment would become its description in tools/list"
    )]
    pub cursor: Option<String>,
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
    // A cursor is bound to every other argument, as given.
    let bind = super::cursor_binding(
        NAME,
        &t,
        &(p.head, p.tail, p.offset, p.limit, p.line_numbers),
    );
    let mode = match (head, tail) {
        (Some(_), Some(_)) => return Err(Error::HeadAndTail),
        (Some(n), None) => Mode::Head(n.ceil().min(u64::MAX as f64) as u64),
        (None, Some(_)) => Mode::Tail,
        (None, None) if ranged => Mode::Range { first, count },
        (None, None) => Mode::Whole,
    };
    if let Some(token) = &p.cursor {
        let c = LineCursor::decode(token, &bind)?;
        let (text, version) = long_line::continue_line(ctx, &t, c, mode, &bind)?;
        return Ok(Output::Text(text).with_version(version.as_ref()));
    }
    let (text, version) = match (head, tail) {
        (Some(_), Some(_)) => {
            return Err(Error::HeadAndTail);
        }
        (Some(n), None) => {
            let (text, version) = file::read_head(&ctx.io, &t, n, limit)?;
            let asked = n.ceil().min(u64::MAX as f64) as u64;
            (cut_head(&budget, text, asked, &bind)?, version)
        }
        (None, Some(n)) => {
            let (text, version) = file::read_tail(&ctx.io, &t, n, limit)?;
            (cut_tail(&budget, text, &bind)?, version)
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
            let ((mut text, end, first_at), version) = file::read_range(
                &ctx.io,
                &t,
                range,
                caps,
                MAX_LINE_SCAN_BYTES,
                &ctx.cancel,
                limit,
            )?;
            let more = |shown: usize| {
                more_of(
                    &bind,
                    LineCursor {
                        at: first_at.unwrap_or(0),
                        skip: shown as u64,
                        line: first,
                        after: 0,
                    },
                )
            };
            if let Some(notice) = range_notice(&budget, limit, range, end, more)? {
                append_notice(&mut text, &notice);
            }
            (text, version)
        }
        (None, None) => {
            let bytes = file::read_all(&ctx.io, &t, limit).map_err(|e| {
                e.too_large_hint(
                    "; call again with offset: 1 (and limit: N for N lines) to read it in parts, whatever its lines, or with head or tail for its first or last lines; each cut reply says how to go on",
                )
            })?;
            let version = Version::of(&bytes);
            let text = match String::from_utf8(bytes) {
                Ok(s) => s,
                Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            };
            (cut_whole(&budget, text, &bind)?, Some(version))
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

/// The notice that ends a range read, if it needs one; `more` words the
/// call that gives more of a line of which `shown` characters are shown.
fn range_notice(
    budget: &ReplyBudget,
    read_limit: u64,
    range: lines::Range,
    end: lines::End,
    more: impl FnOnce(usize) -> Result<String>,
) -> Result<Option<String>> {
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
    Ok(match end {
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
            let more = more(shown)?;
            Some(format!(
                "{}: line {line} alone is longer than that, only its first {shown} characters are shown; {more}; the next line is offset: {next}{rest}]",
                words(cap)
            ))
        }
    })
}

/// The start of a first line that alone outgrows the budget, with the
/// notice that says so, how to read the rest of it, and where the next
/// line starts.
fn first_line_cut(budget: &ReplyBudget, text: &str, room: usize, bind: &Binding) -> Result<String> {
    let mut out = cut_chars(text, room).to_owned();
    let shown = chars(&out);
    let more = more_of(
        bind,
        LineCursor {
            at: 0,
            skip: shown as u64,
            line: 1,
            after: 0,
        },
    )?;
    let notice = format!(
        "{}: line 1 alone is longer than that, only its first {shown} characters are shown; {more}; the next line is offset: 2]",
        budget.cut_words(),
    );
    append_notice(&mut out, &notice);
    Ok(out)
}

/// A whole-file read cut to the budget at a line end.
fn cut_whole(budget: &ReplyBudget, text: String, bind: &Binding) -> Result<String> {
    if budget.fits_text(&text) {
        return Ok(text);
    }
    let room = budget.room();
    let (kept, n) = whole_lines(&text, room);
    if n == 0 {
        return first_line_cut(budget, &text, room, bind);
    }
    let mut out = kept.to_owned();
    let notice = format!(
        "{}: lines 1-{n} shown; to continue, call again with offset: {}]",
        budget.cut_words(),
        n + 1
    );
    append_notice(&mut out, &notice);
    Ok(out)
}

/// The first lines of a `head` that fit, and how to read the others.
fn cut_head(budget: &ReplyBudget, text: String, asked: u64, bind: &Binding) -> Result<String> {
    if budget.fits_text(&text) {
        return Ok(text);
    }
    let room = budget.room();
    let (kept, n) = whole_lines(&text, room);
    if n == 0 {
        return first_line_cut(budget, &text, room, bind);
    }
    let mut out = kept.strip_suffix('\n').unwrap_or(kept).to_owned();
    let notice = format!(
        "{}: lines 1-{n} of the {asked} asked for shown; to continue, call again with offset: {} and limit: {} instead of head]",
        budget.cut_words(),
        n + 1,
        asked.saturating_sub(n as u64)
    );
    append_notice(&mut out, &notice);
    Ok(out)
}

/// The first lines of a `tail` that fit, and the `tail` that gives the
/// others (the last lines not shown); `start` is the byte where the tail
/// starts in the file.
fn cut_tail(budget: &ReplyBudget, (text, start): (String, u64), bind: &Binding) -> Result<String> {
    if budget.fits_text(&text) {
        return Ok(text);
    }
    let room = budget.room();
    let parts = text.matches('\n').count() + 1;
    let (kept, n) = whole_lines(&text, room);
    if n == 0 {
        let mut out = cut_chars(&text, room).to_owned();
        let shown = chars(&out);
        let more = more_of(
            bind,
            LineCursor {
                at: start,
                skip: shown as u64,
                line: 0,
                after: (parts - 1) as u64,
            },
        )?;
        let after = if parts > 1 {
            format!("; the lines after it are tail: {}", parts - 1)
        } else {
            String::new()
        };
        let notice = format!(
            "{}: the first of the last {parts} lines alone is longer than that, only its first {shown} characters are shown; {more}{after}]",
            budget.cut_words(),
        );
        append_notice(&mut out, &notice);
        return Ok(out);
    }
    let mut out = kept.strip_suffix('\n').unwrap_or(kept).to_owned();
    let notice = format!(
        "{}: the first {n} of the last {parts} lines shown; to continue, call again with tail: {}]",
        budget.cut_words(),
        parts - n
    );
    append_notice(&mut out, &notice);
    Ok(out)
}
