//! The thirteen tools: their metadata for `tools/list`, and one dispatch.
//!
//! Owns: the tool table (names, titles, descriptions, annotations, input and
//! output schemas) and [`dispatch`], which deserializes a call's arguments
//! strictly (unknown fields are refused) and runs the tool. Each tool lives
//! in its own file with its `Params` and a `run` function.
//! May touch: what the tools touch, through [`Ctx`].

use std::sync::Arc;

use rmcp::schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::limits::Limits;
use crate::scope::Scope;

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
pub mod search_files;
pub mod write_file;

/// What a tool call works with.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// The roots in force.
    pub scope: Arc<Scope>,
    /// The limits in force.
    pub limits: Limits,
    /// Cancelled when the client cancels the request.
    pub cancel: CancellationToken,
}

impl Ctx {
    /// The bounds of one walk (`directory_tree`, `search_files`).
    pub fn walk_limits(&self) -> crate::walk::WalkLimits {
        crate::walk::WalkLimits {
            max_entries: self.limits.max_walk_entries,
            max_depth: self.limits.max_walk_depth,
            cancel: self.cancel.clone(),
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
}

/// Deserializes `args` into `T`, refusing unknown fields.
fn params<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T> {
    serde_json::from_value(args).map_err(|e| {
        Error::Invalid(format!(
            "MCP error -32602: Input validation error: Invalid arguments for tool {tool}: {e}"
        ))
    })
}

/// Runs the tool `name` with `args`. Blocking: call it off the async runtime.
/// The caller has already checked that `name` is enabled.
pub fn dispatch(ctx: &Ctx, name: &str, args: Value) -> Result<Output> {
    debug_panic_hook(name);
    match name {
        "read_text_file" => read_text_file::run(ctx, params(name, args)?),
        "read_media_file" => read_media_file::run(ctx, params(name, args)?),
        "read_multiple_files" => read_multiple_files::run(ctx, params(name, args)?),
        "write_file" => write_file::run(ctx, params(name, args)?),
        "edit_file" => edit_file::run(ctx, params(name, args)?),
        "create_directory" => create_directory::run(ctx, params(name, args)?),
        "list_directory" => list_directory::run(ctx, params(name, args)?),
        "list_directory_with_sizes" => list_directory_with_sizes::run(ctx, params(name, args)?),
        "directory_tree" => directory_tree::run(ctx, params(name, args)?),
        "move_file" => move_file::run(ctx, params(name, args)?),
        "search_files" => search_files::run(ctx, params(name, args)?),
        "get_file_info" => get_file_info::run(ctx, params(name, args)?),
        "list_allowed_directories" => list_allowed_directories::run(ctx, params(name, args)?),
        _ => Err(Error::Invalid(format!("Tool {name} not found"))),
    }
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

/// Static metadata of one tool.
pub struct Spec {
    /// The tool name.
    pub name: &'static str,
    /// The human title.
    pub title: &'static str,
    /// The description, as the reference words it (adjusted where tuls differs).
    pub description: &'static str,
    /// readOnlyHint, idempotentHint, destructiveHint.
    pub hints: (bool, bool, bool),
    /// The input schema.
    pub input: fn() -> Value,
    /// Whether the output is a media block rather than text.
    pub media: bool,
}

fn schema<T: JsonSchema + 'static>() -> Value {
    let s = rmcp::handler::server::common::schema_for_type::<T>();
    Value::Object((*s).clone())
}

/// The metadata of every tool, in `tools/list` order.
pub const SPECS: &[Spec] = &[
    Spec {
        name: "read_text_file",
        title: "Read Text File",
        description: read_text_file::DESCRIPTION,
        hints: (true, true, false),
        input: schema::<read_text_file::Params>,
        media: false,
    },
    Spec {
        name: "read_media_file",
        title: "Read Media File",
        description: read_media_file::DESCRIPTION,
        hints: (true, true, false),
        input: schema::<read_media_file::Params>,
        media: true,
    },
    Spec {
        name: "read_multiple_files",
        title: "Read Multiple Files",
        description: read_multiple_files::DESCRIPTION,
        hints: (true, true, false),
        input: schema::<read_multiple_files::Params>,
        media: false,
    },
    Spec {
        name: "write_file",
        title: "Write File",
        description: write_file::DESCRIPTION,
        hints: (false, true, true),
        input: schema::<write_file::Params>,
        media: false,
    },
    Spec {
        name: "edit_file",
        title: "Edit File",
        description: edit_file::DESCRIPTION,
        hints: (false, false, true),
        input: schema::<edit_file::Params>,
        media: false,
    },
    Spec {
        name: "create_directory",
        title: "Create Directory",
        description: create_directory::DESCRIPTION,
        hints: (false, true, false),
        input: schema::<create_directory::Params>,
        media: false,
    },
    Spec {
        name: "list_directory",
        title: "List Directory",
        description: list_directory::DESCRIPTION,
        hints: (true, true, false),
        input: schema::<list_directory::Params>,
        media: false,
    },
    Spec {
        name: "list_directory_with_sizes",
        title: "List Directory with Sizes",
        description: list_directory_with_sizes::DESCRIPTION,
        hints: (true, true, false),
        input: schema::<list_directory_with_sizes::Params>,
        media: false,
    },
    Spec {
        name: "directory_tree",
        title: "Directory Tree",
        description: directory_tree::DESCRIPTION,
        hints: (true, true, false),
        input: schema::<directory_tree::Params>,
        media: false,
    },
    Spec {
        name: "move_file",
        title: "Move File",
        description: move_file::DESCRIPTION,
        hints: (false, false, true),
        input: schema::<move_file::Params>,
        media: false,
    },
    Spec {
        name: "search_files",
        title: "Search Files",
        description: search_files::DESCRIPTION,
        hints: (true, true, false),
        input: schema::<search_files::Params>,
        media: false,
    },
    Spec {
        name: "get_file_info",
        title: "Get File Info",
        description: get_file_info::DESCRIPTION,
        hints: (true, true, false),
        input: schema::<get_file_info::Params>,
        media: false,
    },
    Spec {
        name: "list_allowed_directories",
        title: "List Allowed Directories",
        description: list_allowed_directories::DESCRIPTION,
        hints: (true, true, false),
        input: schema::<list_allowed_directories::Params>,
        media: false,
    },
];

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
pub fn tool_json(spec: &Spec) -> Value {
    let (read_only, idempotent, destructive) = spec.hints;
    let mut annotations = json!({
        "title": spec.title,
        "readOnlyHint": read_only,
        "idempotentHint": idempotent,
        "openWorldHint": false,
    });
    if !read_only {
        annotations["destructiveHint"] = json!(destructive);
    }
    json!({
        "name": spec.name,
        "title": spec.title,
        "description": spec.description,
        "inputSchema": (spec.input)(),
        "outputSchema": if spec.media { media_output_schema() } else { text_output_schema() },
        "annotations": annotations,
    })
}
