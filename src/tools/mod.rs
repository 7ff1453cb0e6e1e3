//! The tools: one table, and one thin adapter per tool between the MCP edge
//! and the filesystem core.
//!
//! Owns: [`TOOLS`], where each tool is declared once (name, capability,
//! title, description, annotations, input and output schema, its path
//! arguments, handler, reply plan, instruction notes); `tools/list`, the selectors, `--print-config`,
//! dispatch, the help text and the tools' part of the `initialize`
//! instructions ([`notes::instructions`]) all derive from it. [`dispatch`]
//! deserializes a call's arguments strictly (unknown fields are refused)
//! and runs the tool. Each tool lives in its own file with its `Params`, its
//! `run` and its `TOOL` entry.
//! May touch: what the tools touch, through [`Ctx`]: the roots snapshot of
//! the call, the call's facts (its reply budget, change recorder and the
//! server's spare buffer, [`crate::fs::io::Io`], passed to each reader and
//! writer; the server's walk threads, passed to each walk in its bounds),
//! and the core in [`crate::fs`].

use rmcp::schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::fs::scope::Snapshot;
use crate::limits::Limits;
pub use crate::progress::Progress;
pub use crate::reply_budget::Plan;
pub use notes::{Bound, Notes};

pub mod append_file;
pub mod copy_file;
pub mod create_directory;
pub mod directory_tree;
pub mod edit_file;
pub mod get_file_info;
pub mod list_allowed_directories;
pub mod list_directory;
pub mod list_directory_with_sizes;
pub mod move_file;
pub mod notes;
pub mod read_file;
pub mod read_media_file;
pub mod read_multiple_files;
pub mod read_text_file;
pub mod schema;
pub mod search_file_contents;
pub mod search_files;
pub mod write_file;

/// Every tool, in `tools/list` order.
pub const TOOLS: &[Tool] = &[
    read_file::TOOL,
    read_text_file::TOOL,
    read_media_file::TOOL,
    read_multiple_files::TOOL,
    write_file::TOOL,
    append_file::TOOL,
    edit_file::TOOL,
    create_directory::TOOL,
    list_directory::TOOL,
    list_directory_with_sizes::TOOL,
    directory_tree::TOOL,
    move_file::TOOL,
    copy_file::TOOL,
    search_files::TOOL,
    search_file_contents::TOOL,
    get_file_info::TOOL,
    list_allowed_directories::TOOL,
];

/// The tool named `name`, if tuls has one.
pub fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

/// Which tools give a file's version, and how: part of the refusal of a
/// change without `ifMatch` under `--require-if-match`, which the write
/// tools pass to the writer (each tool's name stays in its own file).
pub fn version_readers() -> &'static str {
    static TEXT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        let info = get_file_info::TOOL.name;
        format!(
            "{}, {} and {} give its version in structuredContent; {info} gives it in its text as well, so call {info} before reading",
            read_text_file::TOOL.name,
            read_multiple_files::TOOL.name,
            read_media_file::TOOL.name,
        )
    });
    &TEXT
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
#[derive(Debug, Clone, Copy)]
pub enum OutputKind {
    /// One text block.
    Text,
    /// One media block (image, audio or embedded resource).
    Media,
    /// One text block, and `structuredContent` of its own: the result as
    /// data, with this output schema.
    Structured(fn() -> Value),
    /// One text block; `structuredContent` adds the file's `version` when
    /// there is one (whole-file reads, `get_file_info`, writes).
    Versioned,
    /// One media block; `structuredContent` adds the file's `version`.
    VersionedMedia,
    /// One text block; `structuredContent` adds `versions`, one per file
    /// shown whole (`read_multiple_files`).
    Versions,
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
    /// The description: what a model needs to choose the tool and fill its
    /// arguments (the limits are said once, in the `instructions`).
    pub description: &'static str,
    /// The annotations.
    pub hints: Hints,
    /// The input schema.
    pub input: fn() -> Value,
    /// The arguments that name paths (each a string, or an array of
    /// strings), in order: what the audit record lists as the call's paths.
    pub paths: &'static [&'static str],
    /// What its result is.
    pub output: OutputKind,
    /// How much reply memory a call may hold, by the limits in force: the
    /// reply budget reserves it before the call runs (every tool has one;
    /// a reply that outgrows it is counted at what it reserved).
    pub plan: fn(&Limits) -> Plan,
    /// What it adds to the `initialize` instructions when it is enabled
    /// (see [`notes`]).
    pub notes: Notes,
    /// The handler. Blocking: call it off the async runtime.
    pub run: fn(&Ctx, Value) -> Result<Output>,
}

/// What a tool call works with: everything a call knows is here, none of
/// it in a global.
#[derive(Debug)]
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
    /// The call's reply budget, change recorder and the server's spare
    /// read buffer: given to every file reader and writer the call uses.
    pub io: crate::fs::io::Io,
    /// The server's walk threads: given to every walk in its bounds.
    pub walk: crate::fs::walk::WalkPool,
}

impl Ctx {
    /// The bounds of one walk (a content search adds its deadline).
    pub fn walk_limits(&self) -> crate::fs::walk::Bounds {
        crate::fs::walk::Bounds {
            max_entries: self.limits.max_walk_entries,
            max_depth: self.limits.max_walk_depth,
            cancel: self.cancel.clone(),
            progress: self.progress.clone(),
            deadline: None,
            pool: self.walk.clone(),
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
    /// One text block, and `structuredContent` is `data` (an object that
    /// each tool's output schema describes).
    Structured {
        /// The text block.
        text: String,
        /// The rest of `structuredContent`.
        data: Value,
    },
    /// A text or media result whose `structuredContent` mirrors its block
    /// (as for [`Output::Text`] and [`Output::Media`]) with these fields
    /// added (small ones: a `version`). The block is written once.
    WithData(Box<Output>, serde_json::Map<String, Value>),
}

impl Output {
    /// This result with `"version": v` added to its `structuredContent`
    /// (nothing added when there is no version).
    pub fn with_version(self, v: Option<&crate::fs::version::Version>) -> Output {
        let Some(v) = v else { return self };
        let mut data = serde_json::Map::new();
        data.insert("version".to_owned(), json!(v.as_str()));
        Output::WithData(Box::new(self), data)
    }
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

/// The error for a call that gives both `cursor` and `offset`.
fn cursor_and_offset() -> Error {
    Error::InvalidCursor {
        reason: "give cursor or offset, not both",
    }
}

/// What a cursor of `tool` is bound to: the root and start directory `t`
/// resolved to, and every other argument (`args` without its cursor).
fn cursor_binding(
    tool: &str,
    t: &crate::fs::scope::Target,
    args: &impl std::fmt::Debug,
) -> crate::fs::cursor::Binding {
    crate::fs::cursor::Binding::new(tool, &t.root.display, &t.root_rel(), &format!("{args:?}"))
}

/// How a cut page of a walk ends.
#[derive(Debug, Clone, Copy)]
enum PageEnd {
    /// The page is full; more follow.
    Full,
    /// The walk stopped at the entry cap of one call (`--max-entries`).
    Halted(usize),
    /// The next item does not fit a page on its own: the cursor skips it.
    TooLongAlone,
}

/// The notice that ends a cut page of a walk whose next page starts at
/// `next` (`unit`: `entries` or `matches`; `item`: `entry` or `match`).
fn walk_cut_notice(
    budget: crate::text::budget::ReplyBudget,
    (unit, item, narrow): (&str, &str, &str),
    next: crate::fs::cursor::Cursor,
    end: PageEnd,
    bind: &crate::fs::cursor::Binding,
) -> Result<String> {
    use crate::fs::cursor::{Cursor, FLAG_AFTER, token_room};
    use crate::text::budget::ReplyBudget;
    if !next.fits(token_room(budget.max().unwrap_or(0))) {
        return Ok(budget.too_deep_notice(unit, narrow));
    }
    Ok(match end {
        PageEnd::Full => budget.cursor_notice(unit, &next.encode(bind)?, narrow),
        PageEnd::Halted(max) => ReplyBudget::halt_notice(max, &next.encode(bind)?, narrow),
        PageEnd::TooLongAlone => {
            let after = Cursor {
                flags: next.flags | FLAG_AFTER,
                ..next
            };
            budget.skip_notice(item, &after.encode(bind)?, narrow)
        }
    })
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
    if let Value::Object(root) = &mut v {
        // The dialect is MCP's default (2020-12); the type's name and doc
        // comment say nothing to the model.
        for key in ["$schema", "title", "description"] {
            root.remove(key);
        }
        inline_defs(root);
        // As in the reference: the tool's description says what its path
        // arguments name.
        if let Some(Value::Object(props)) = root.get_mut("properties") {
            for name in ["path", "source", "destination"] {
                if let Some(Value::Object(p)) = props.get_mut(name) {
                    p.remove("description");
                }
            }
        }
    }
    lean(&mut v);
    schema::make_portable(&mut v);
    v
}

/// Puts each `$defs` entry in place of the `$ref`s of the properties that
/// name it (a property's own description wins), and drops `$defs` when
/// nothing refers to it any more. tuls's `$defs` are small enums used once.
fn inline_defs(root: &mut serde_json::Map<String, Value>) {
    let Some(Value::Object(defs)) = root.get("$defs").cloned() else {
        return;
    };
    if let Some(Value::Object(props)) = root.get_mut("properties") {
        for prop in props.values_mut() {
            let Value::Object(p) = prop else { continue };
            let target = p.get("$ref").and_then(Value::as_str).and_then(|r| {
                r.strip_prefix("#/$defs/")
                    .and_then(|name| defs.get(name))
                    .cloned()
            });
            if let Some(Value::Object(def)) = target {
                p.remove("$ref");
                for (k, v) in def {
                    p.entry(k).or_insert(v);
                }
            }
        }
    }
    let refers = root
        .iter()
        .any(|(k, v)| k != "$defs" && v.to_string().contains("\"$ref\""));
    if !refers {
        root.remove("$defs");
    }
}

/// Drops what a schema says that constrains nothing and tells the model
/// nothing, so every agent does not pay for it in context on every turn:
/// `"default": null` (an optional argument is optional), `format`
/// (`int64`, `double`: schemars's Rust types, not JSON Schema's), and the
/// per-value descriptions of a string enum (written as `enum`). Types,
/// enums, bounds, `required` and `additionalProperties` stay.
fn lean(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if map.get("default").is_some_and(Value::is_null) {
                map.remove("default");
            }
            // A string: a property named `format` would be an object.
            if map.get("format").is_some_and(Value::is_string) {
                map.remove("format");
            }
            // A string enum written as `oneOf` of described `const`s is
            // the same constraint as `enum`, in a fraction of the bytes.
            let consts: Option<Vec<Value>> =
                map.get("oneOf").and_then(Value::as_array).and_then(|alts| {
                    alts.iter()
                        .map(|a| a.get("const").filter(|c| c.is_string()).cloned())
                        .collect()
                });
            if let Some(consts) = consts {
                map.remove("oneOf");
                map.insert("type".into(), json!("string"));
                map.insert("enum".into(), Value::Array(consts));
            }
            map.values_mut().for_each(lean);
        }
        Value::Array(items) => items.iter_mut().for_each(lean),
        _ => {}
    }
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

/// The schema of a version token.
fn version_schema() -> Value {
    json!({
        "type": "string",
        "description": "Opaque token of the file's whole content; pass it as ifMatch to a write"
    })
}

/// `schema` with one more optional property.
fn with_property(mut schema: Value, name: &str, property: Value) -> Value {
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert(name.to_owned(), property);
    }
    schema
}

/// The `tools/list` entry of a tool, as JSON.
pub fn tool_json(tool: &Tool) -> Value {
    // The title is said once, on the tool; idempotentHint and
    // destructiveHint mean something only for a tool that writes (as in
    // the reference, a read tool carries neither).
    let mut annotations = json!({
        "readOnlyHint": tool.hints.read_only,
        "openWorldHint": false,
    });
    if !tool.hints.read_only {
        annotations["idempotentHint"] = json!(tool.hints.idempotent);
        annotations["destructiveHint"] = json!(tool.hints.destructive);
    }
    let output = match tool.output {
        OutputKind::Text => text_output_schema(),
        OutputKind::Media => media_output_schema(),
        OutputKind::Structured(schema) => schema(),
        OutputKind::Versioned => with_property(text_output_schema(), "version", version_schema()),
        OutputKind::VersionedMedia => {
            with_property(media_output_schema(), "version", version_schema())
        }
        OutputKind::Versions => with_property(
            text_output_schema(),
            "versions",
            json!({"type": "array", "description": "Each file shown whole, with its version", "items": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "version": version_schema()},
                "required": ["path", "version"],
                "additionalProperties": false
            }}),
        ),
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
    fn every_tool_plans_its_reply_memory() {
        for l in [
            Limits::default(),
            Limits {
                max_reply_chars: 0,
                ..Limits::default()
            },
        ] {
            for t in TOOLS {
                let p = (t.plan)(&l);
                assert!(p.upfront > 0 && p.most >= p.upfront, "{}: {p:?}", t.name);
            }
        }
    }

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

    /// Each argument a tool's entry names as a path (for the audit record)
    /// is one of its arguments: a string, or an array of strings.
    #[test]
    fn every_path_argument_is_a_string_argument_of_its_tool() {
        for t in TOOLS {
            let schema = (t.input)();
            for name in t.paths {
                let p = &schema["properties"][*name];
                let ok = p["type"] == "string"
                    || (p["type"] == "array" && p["items"]["type"] == "string");
                assert!(ok, "{}: {name} is not a path argument: {p}", t.name);
            }
        }
    }
}
