//! The tools: one table, and one thin adapter per tool between the MCP edge
//! and the filesystem core.
//!
//! Owns: [`TOOLS`], where each tool is declared once (name, capability,
//! title, description, annotations, input and output schema, handler);
//! `tools/list`, the selectors, `--print-config`, dispatch and the help text
//! all derive from it. [`dispatch`] deserializes a call's arguments strictly
//! (unknown fields are refused) and runs the tool. Each tool lives in its
//! own file with its `Params`, its `run` and its `TOOL` entry.
//! May touch: what the tools touch, through [`Ctx`]: the roots snapshot of
//! the call, and the core in [`crate::fs`].

use rmcp::schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::fs::scope::Snapshot;
use crate::limits::Limits;
pub use crate::progress::Progress;

pub mod create_directory;
pub mod directory_tree;
pub mod edit_file;
pub mod get_file_info;
pub mod list_allowed_directories;
pub mod list_directory;
pub mod list_directory_with_sizes;
pub mod move_file;
pub mod read_media_file;
pub mod read_multiple_files;
pub mod read_text_file;
pub mod schema;
pub mod search_file_contents;
pub mod search_files;
pub mod write_file;

/// Every tool, in `tools/list` order.
pub const TOOLS: &[Tool] = &[
    read_text_file::TOOL,
    read_media_file::TOOL,
    read_multiple_files::TOOL,
    write_file::TOOL,
    edit_file::TOOL,
    create_directory::TOOL,
    list_directory::TOOL,
    list_directory_with_sizes::TOOL,
    directory_tree::TOOL,
    move_file::TOOL,
    search_files::TOOL,
    search_file_contents::TOOL,
    get_file_info::TOOL,
    list_allowed_directories::TOOL,
];

/// The tool named `name`, if tuls has one.
pub fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

/// A tool's capability, which the selectors name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Capability {
    /// `filesystem.read`
    Read,
    /// `filesystem.write`
    Write,
}

/// The MCP annotations of a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hints {
    /// `readOnlyHint`.
    pub read_only: bool,
    /// `idempotentHint`.
    pub idempotent: bool,
    /// `destructiveHint` (only written for tools that are not read-only).
    pub destructive: bool,
}

impl Hints {
    /// A read tool.
    pub const READ_ONLY: Hints = Hints {
        read_only: true,
        idempotent: true,
        destructive: false,
    };

    /// A write tool.
    pub const fn write(idempotent: bool, destructive: bool) -> Hints {
        Hints {
            read_only: false,
            idempotent,
            destructive,
        }
    }
}

/// What a tool's successful result is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputKind {
    /// One text block.
    Text,
    /// One media block (image, audio or embedded resource).
    Media,
    /// One text block, and `structuredContent` with the same result as
    /// data (`search_file_contents`).
    Search,
}

/// One tool, declared once.
#[derive(Debug)]
pub struct Tool {
    /// The tool name.
    pub name: &'static str,
    /// Its capability.
    pub capability: Capability,
    /// The human title.
    pub title: &'static str,
    /// The description, as the reference words it (adjusted where tuls differs).
    pub description: &'static str,
    /// The annotations.
    pub hints: Hints,
    /// The input schema.
    pub input: fn() -> Value,
    /// What its result is.
    pub output: OutputKind,
    /// The handler. Blocking: call it off the async runtime.
    pub run: fn(&Ctx, Value) -> Result<Output>,
}

/// What a tool call works with.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// The roots in force when the call started; the call resolves every
    /// path against this one snapshot.
    pub scope: Snapshot,
    /// The limits in force.
    pub limits: Limits,
    /// Cancelled when the client cancels the request.
    pub cancel: CancellationToken,
    /// Where a long walk or search reports how far it got, when the client
    /// asked for progress (its request carried a `progressToken`).
    pub progress: Option<Progress>,
}

impl Ctx {
    /// The bounds of one walk (`directory_tree`, `search_files`).
    pub fn walk_limits(&self) -> crate::fs::walk::WalkLimits {
        crate::fs::walk::WalkLimits {
            max_entries: self.limits.max_walk_entries,
            max_depth: self.limits.max_walk_depth,
            cancel: self.cancel.clone(),
            progress: self.progress.clone(),
        }
    }
}

/// A tool's successful result.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// One text block; `structuredContent` is `{"content": text}`.
    Text(String),
    /// One media content block (image, audio or embedded resource);
    /// `structuredContent` is `{"content": [block]}`.
    Media(Value),
    /// One text block, and `structuredContent` is `data` (an object) with
    /// `"content": text` added.
    Structured {
        /// The text block.
        text: String,
        /// The rest of `structuredContent`.
        data: Value,
    },
}

/// An `offset` argument of a listing, tree or search: how many entries or
/// matches to skip (the one paging scheme of every tool whose reply is a
/// list; a cut reply's notice gives the next value). Refused below 0.
pub fn skip_arg(offset: Option<i64>) -> Result<usize> {
    match offset {
        None => Ok(0),
        Some(v) if v >= 0 => Ok(usize::try_from(v).unwrap_or(usize::MAX)),
        Some(v) => Err(Error::BelowMinimum {
            arg: "offset",
            value: v,
            min: 0,
        }),
    }
}

impl Ctx {
    /// The reply budget of this call (`--max-reply-chars`).
    pub fn reply_budget(&self) -> crate::text::budget::ReplyBudget {
        crate::text::budget::ReplyBudget::new(self.limits.max_reply_chars)
    }
}

/// Deserializes `args` into `T`, refusing unknown fields.
fn params<T: DeserializeOwned>(tool: &'static str, args: Value) -> Result<T> {
    serde_json::from_value(args).map_err(|e| Error::InvalidArguments {
        tool,
        detail: e.to_string(),
    })
}

/// Runs `tool` with `args`. Blocking: call it off the async runtime.
/// The caller has already checked that the tool is enabled.
pub fn dispatch(ctx: &Ctx, tool: &Tool, args: Value) -> Result<Output> {
    debug_panic_hook(tool.name);
    (tool.run)(ctx, args)
}

/// Debug builds only: `TULS_DEBUG_PANIC_TOOL=<tool>` makes that tool panic,
/// so the tests can prove a panic becomes an `isError` result for that one
/// call. Release builds compile this to nothing.
fn debug_panic_hook(name: &str) {
    #[cfg(debug_assertions)]
    if std::env::var_os("TULS_DEBUG_PANIC_TOOL").is_some_and(|t| t == name) {
        panic!("TULS_DEBUG_PANIC_TOOL: deliberate panic in {name}");
    }
    #[cfg(not(debug_assertions))]
    let _ = name;
}

/// A tool's input schema, as derived from its arguments' type and made
/// portable ([`schema::make_portable`]).
fn schema<T: JsonSchema + 'static>() -> Value {
    let s = rmcp::handler::server::common::schema_for_type::<T>();
    let mut v = Value::Object((*s).clone());
    schema::make_portable(&mut v);
    v
}

fn text_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"content": {"type": "string"}},
        "required": ["content"],
        "additionalProperties": false
    })
}

fn media_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"content": {"type": "array", "items": {"anyOf": [
            {"type": "object", "properties": {"type": {"type": "string", "enum": ["image", "audio"]}, "data": {"type": "string"}, "mimeType": {"type": "string"}}, "required": ["type", "data", "mimeType"], "additionalProperties": false},
            {"type": "object", "properties": {"type": {"type": "string", "const": "resource"}, "resource": {"type": "object", "properties": {"uri": {"type": "string"}, "mimeType": {"type": "string"}, "blob": {"type": "string"}}, "required": ["uri", "blob"], "additionalProperties": false}}, "required": ["type", "resource"], "additionalProperties": false}
        ]}}},
        "required": ["content"],
        "additionalProperties": false
    })
}

/// The `tools/list` entry of a tool, as JSON.
pub fn tool_json(tool: &Tool) -> Value {
    let mut annotations = json!({
        "title": tool.title,
        "readOnlyHint": tool.hints.read_only,
        "idempotentHint": tool.hints.idempotent,
        "openWorldHint": false,
    });
    if !tool.hints.read_only {
        annotations["destructiveHint"] = json!(tool.hints.destructive);
    }
    let output = match tool.output {
        OutputKind::Text => text_output_schema(),
        OutputKind::Media => media_output_schema(),
        OutputKind::Search => search_file_contents::output_schema(),
    };
    json!({
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": (tool.input)(),
        "outputSchema": output,
        "annotations": annotations,
    })
}

/// The `tools/list` entries of the enabled tools, as rmcp's type. A tool
/// whose entry does not fit rmcp's `Tool` is an error, never left out.
pub fn list(enabled: impl Fn(&str) -> bool) -> Result<Vec<rmcp::model::Tool>, String> {
    TOOLS
        .iter()
        .filter(|t| enabled(t.name))
        .map(|t| {
            serde_json::from_value(tool_json(t))
                .map_err(|e| format!("tool {} cannot be listed: {e}", t.name))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_is_listed_and_named_once() {
        let all = list(|_| true).expect("every tool lists");
        assert_eq!(all.len(), TOOLS.len());
        let mut names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TOOLS.len());
        for t in TOOLS {
            assert_eq!(find(t.name).map(|f| f.name), Some(t.name));
        }
    }
}
