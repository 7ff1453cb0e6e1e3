//! `read_multiple_files`: a bounded batch of whole-file reads, each failure
//! reported inline. Touches: scope, file.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;
use serde_json::json;

use super::{Bound, Capability, Ctx, Hints, Notes, Output, OutputKind, Plan, Tool, params, schema};
use crate::error::{Error, Result};
use crate::fs::file;
use crate::fs::version::Version;
use crate::text::budget::{ReplyBudget, append_notice, chars, cut_chars, whole_lines};

/// The tool description.
pub const DESCRIPTION: &str = "Read several files in one call, more efficient than one by one when you need to analyze or compare them. Each file's content is returned with its path; a file that cannot be read does not stop the others.";

/// The tool's entry in [`super::TOOLS`].
pub const TOOL: Tool = Tool {
    name: NAME,
    capability: Capability::Read,
    title: "Read Multiple Files",
    description: DESCRIPTION,
    hints: Hints::READ_ONLY,
    input: schema::<Params>,
    paths: &["paths"],
    output: OutputKind::Versions,
    plan: Plan::batch,
    notes: Notes {
        advice: None,
        bound: Some(Bound::Read),
    },
    run: |ctx, args| run(ctx, params(NAME, args)?),
};

const NAME: &str = "read_multiple_files";

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Array of file paths to read. Each path must be a string pointing to a valid file within allowed directories.
    #[schemars(length(min = 1))]
    pub paths: Vec<String>,
}

/// Reads each path in order; `path:\ncontent\n` or `path: Error - message`,
/// joined by `\n---\n`.
pub fn run(ctx: &Ctx, p: Params) -> Result<Output> {
    if p.paths.is_empty() {
        return Err(Error::EmptyList {
            tool: NAME,
            field: "paths",
        });
    }
    let max = ctx.limits.max_paths_per_batch;
    if p.paths.len() > max {
        return Err(Error::TooManyPaths {
            given: p.paths.len(),
            limit: max,
        });
    }
    let mut budget = ctx.limits.max_batch_bytes;
    let reply = ctx.reply_budget();
    // One output string, appended to in place: each file's bytes are held
    // once, then copied once into it. `ends` holds, for each file, where its
    // section ends (bytes, characters), to cut at a whole file.
    let mut out = String::new();
    let mut out_chars = 0usize;
    let mut ends: Vec<(usize, usize)> = Vec::new();
    // The version of each file read, by its place in the batch.
    let mut versions: Vec<Option<Version>> = Vec::new();
    for (i, path) in p.paths.iter().enumerate() {
        if ctx.cancel.is_cancelled() {
            return Err(Error::Cancelled);
        }
        if !reply.fits(out_chars) {
            // Past the reply budget: the reply is cut; read no more.
            break;
        }
        let before = out.len();
        if i > 0 {
            out.push_str("\n---\n");
        }
        let limit = ctx.limits.max_read_bytes.min(budget);
        let read = ctx
            .scope
            .resolve(path)
            .and_then(|t| file::read_all(&ctx.io, &t, limit))
            .map_err(|e| {
                e.too_large_hint(concat!(
                    "; read it in parts with ",
                    super::read_text_file::name!(),
                    " and offset: 1 (and limit: N for N lines); each cut reply says how to go on"
                ))
            });
        match read {
            Ok(bytes) => {
                budget = budget.saturating_sub(bytes.len() as u64);
                versions.push(Some(Version::of(&bytes)));
                out.push_str(path);
                out.push_str(":\n");
                out.push_str(&String::from_utf8_lossy(&bytes));
                out.push('\n');
            }
            Err(e) => {
                versions.push(None);
                out.push_str(path);
                out.push_str(": Error - ");
                out.push_str(&e.to_string());
            }
        }
        if reply.max().is_some() {
            out_chars += chars(out.get(before..).unwrap_or_default());
        }
        ends.push((out.len(), out_chars));
    }
    if reply.fits(out_chars) {
        return Ok(with_versions(Output::Text(out), &p.paths, &versions));
    }
    // The files the cut reply shows: the whole ones, or the first, cut.
    let room = reply.room();
    let shown = ends.iter().take_while(|(_, c)| *c <= room).count().max(1);
    let text = cut(&reply, out, &ends, &p.paths);
    Ok(with_versions(
        Output::Text(text),
        &p.paths,
        versions.get(..shown).unwrap_or_default(),
    ))
}

/// `out` with `"versions"`: the path and version of each file read (in
/// the batch's order; a file that failed has none).
fn with_versions(out: Output, paths: &[String], versions: &[Option<Version>]) -> Output {
    let list: Vec<serde_json::Value> = paths
        .iter()
        .zip(versions)
        .filter_map(|(p, v)| {
            v.as_ref()
                .map(|v| json!({"path": p, "version": v.as_str()}))
        })
        .collect();
    if list.is_empty() {
        return out;
    }
    let mut data = serde_json::Map::new();
    data.insert("versions".to_owned(), serde_json::Value::Array(list));
    Output::WithData(Box::new(out), data)
}

/// A batch reply cut to the budget: the whole files that fit, or when not
/// even the first does, the first file's whole lines that fit.
fn cut(reply: &ReplyBudget, mut out: String, ends: &[(usize, usize)], paths: &[String]) -> String {
    let room = reply.room();
    let n = paths.len();
    let whole = ends.iter().take_while(|(_, c)| *c <= room).count();
    if let Some(&(len, _)) = whole.checked_sub(1).and_then(|i| ends.get(i)) {
        out.truncate(len);
        let notice = format!(
            "{}: files 1-{whole} of {n} shown; for the others call again with the same paths from number {} on (a long file reads in parts with {} offset and limit)]",
            reply.cut_words(),
            whole + 1,
            super::read_text_file::TOOL.name
        );
        append_notice(&mut out, &notice);
        return out;
    }
    // Not even the first file fits: its first whole lines.
    let header_len = paths.first().map_or(0, |p| p.len() + 2);
    let header_chars = paths.first().map_or(0, |p| chars(p) + 2);
    let first_end = ends.first().map_or(out.len(), |e| e.0);
    let content = out.get(header_len..first_end).unwrap_or_default();
    let is_text = out.get(..header_len).is_some_and(|h| h.ends_with(":\n"));
    let (kept, lines) = if is_text {
        whole_lines(content, room.saturating_sub(header_chars))
    } else {
        ("", 0)
    };
    let mut text = if lines > 0 {
        format!("{}{kept}", out.get(..header_len).unwrap_or_default())
    } else {
        cut_chars(&out, room).to_owned()
    };
    let notice = if lines > 0 {
        format!(
            "{}: file 1 of {n} is cut after its line {lines} (continue it with {}, offset: {}); for the others call again with the same paths from number 2 on]",
            reply.cut_words(),
            super::read_text_file::TOOL.name,
            lines + 1
        )
    } else {
        format!(
            "{}: file 1 of {n} is cut (read it with {}, offset and limit); for the others call again with the same paths from number 2 on]",
            reply.cut_words(),
            super::read_text_file::TOOL.name
        )
    };
    append_notice(&mut text, &notice);
    text
}
