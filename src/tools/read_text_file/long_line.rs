//! A line longer than one reply: the cursor a cut reply gives to go on
//! inside it, and the reply to that cursor (the next piece of the line).
//!
//! Every reply that shows only the start of a line says how to read the
//! rest: the same call with `cursor` returns the next piece, up to the
//! reply budget or the line's end, and the piece that ends the line says
//! which call gives the lines after it. Joined, the pieces are the line's
//! bytes (as a read decodes them). The cursor is a
//! [`LineCursor`]: a byte offset, sealed and bound to the tool, path and
//! other arguments, as the walks' cursors are (docs/paging.md).
//! Touches: scope, file.

use crate::error::Result;
use crate::fs::cursor::{Binding, LineCursor};
use crate::fs::file;
use crate::fs::scope::Target;
use crate::fs::version::Version;
use crate::text::budget::{ReplyBudget, append_notice};

use super::super::Ctx;

/// Which lines the call reads, as its arguments say.
#[derive(Debug, Clone, Copy)]
pub(super) enum Mode {
    /// The whole file.
    Whole,
    /// `head`: the first `n` lines.
    Head(u64),
    /// `tail`: the last lines.
    Tail,
    /// `offset` and `limit`.
    Range {
        /// The first line.
        first: u64,
        /// How many, `None` to the end.
        count: Option<u64>,
    },
}

impl Mode {
    /// The call that gives the lines after line `line` (`after`: for
    /// `tail`, how many follow), or `None` when the call asked for none.
    pub(super) fn next_lines(self, line: u64, after: u64) -> Option<String> {
        let next = line.saturating_add(1);
        match self {
            Mode::Whole | Mode::Range { count: None, .. } => Some(format!("offset: {next}")),
            Mode::Range {
                first,
                count: Some(c),
            } => {
                let end = first.saturating_add(c).saturating_sub(1);
                (line < end).then(|| format!("offset: {next} and limit: {}", end - line))
            }
            Mode::Head(n) => (line < n)
                .then(|| format!("offset: {next} and limit: {} instead of head", n - line)),
            Mode::Tail => (after > 0).then(|| format!("tail: {after}")),
        }
    }
}

/// `for more of it call again with the same arguments and cursor: "..."`,
/// for a piece of a line that starts at byte `at` of which `skip`
/// characters are shown.
pub(super) fn more_of(bind: &Binding, c: LineCursor) -> Result<String> {
    Ok(format!(
        "for more of it call again with the same arguments and cursor: \"{}\"",
        c.encode(bind)?
    ))
}

/// How a notice names the line.
fn named(line: u64) -> String {
    if line == 0 {
        "that line".to_owned()
    } else {
        format!("line {line}")
    }
}

/// The reply to `cursor`: the next piece of its line, with the notice that
/// says how to go on.
pub(super) fn continue_line(
    ctx: &Ctx,
    t: &Target,
    c: LineCursor,
    mode: Mode,
    bind: &Binding,
) -> Result<(String, Option<Version>)> {
    let budget = ReplyBudget::new(ctx.limits.max_reply_chars);
    let limit = ctx.limits.max_read_bytes;
    let take = budget
        .room()
        .min(usize::try_from(limit).unwrap_or(usize::MAX));
    let skip = usize::try_from(c.skip).unwrap_or(usize::MAX);
    let (rest, version) = file::read_rest(&ctx.io, t, (c.at, skip), take, limit)?;
    let mut text = rest.text;
    let what = named(c.line);
    let next = mode.next_lines(c.line, c.after);
    if !rest.ends_line {
        let more = more_of(
            bind,
            LineCursor {
                at: rest.at,
                skip: rest.chars as u64,
                ..c
            },
        )?;
        let after = next
            .map(|n| format!("; for the lines after it call again without cursor, with {n}"))
            .unwrap_or_default();
        let notice = format!(
            "{}: {} more characters of {what} shown; {more}{after}]",
            budget.cut_words(),
            rest.chars
        );
        append_notice(&mut text, &notice);
        return Ok((text, version));
    }
    match next.filter(|_| rest.more) {
        Some(n) => append_notice(
            &mut text,
            &format!(
                "[{what} ends here; for the lines after it call again without cursor, with {n}]"
            ),
        ),
        // `head` returns its last line without its newline.
        None if matches!(mode, Mode::Head(_)) && text.ends_with('\n') => {
            text.pop();
        }
        None => {}
    }
    Ok((text, version))
}
